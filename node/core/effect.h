/* node/core/effect.h: what a write did, as its handler reports it, for the log
 * (the WAL and the replicas; node/persist reads it after the call).
 *
 * A write is logged as its arguments unless its handler says otherwise: that
 * it changed nothing (EXPIRE on a missing key, SPOP of an empty set), that it
 * went on waiting (a blocking command, node/features/block.c), or the command
 * that redoes exactly what it did when its arguments do not say it (SPOP: the
 * members it took; INCRBYFLOAT: the value it stored; a served blocking pop: the
 * plain pop it became). The dispatcher resets the report before each call. */
#pragma once
#include "proto/resp.h"

#include <stdint.h>

struct conn;

enum effect {
    EFFECT_ARGS = 0, /* logged as its arguments (persist makes relative times absolute) */
    EFFECT_NONE,     /* nothing changed: nothing to log */
    EFFECT_WAITING,  /* a blocking command that went on waiting: nothing ran yet */
    EFFECT_REDO,     /* logged as the command built with effect_redo/effect_arg */
};

void effect_none(struct conn *c);
void effect_waiting(struct conn *c);
/* Start the command that redoes this write: "name key"; effect_arg* append. */
void effect_redo(struct conn *c, const char *name, struct rv_str key);
/* Arguments are copied: the handler may free what it took once it returns. */
void effect_arg(struct conn *c, const char *p, size_t n);
void effect_arg_i64(struct conn *c, int64_t v);

/* The redo command (valid until the next effect_redo on c or effect_free). */
const struct rv_str *effect_argv(struct conn *c, int *argc);
/* Frees what the redo command holds (when the connection goes). */
void effect_free(struct conn *c);
