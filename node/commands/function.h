/* node/commands/function.h: FUNCTION libraries and FCALL on a shard's own Lua
 * state (function.c; docs/scripting.md "Functions"). These act on the
 * calling shard only: cmd_function.c parses, replies, and applies the
 * changes on the node's other shards. */
#pragma once
#include "node/types/obj.h"
#include "proto/resp.h"

#include <stdbool.h>
#include <stddef.h>

struct conn;
struct shard;

enum fn_policy { FN_APPEND, FN_REPLACE, FN_FLUSH };

/* FUNCTION LOAD [REPLACE]: 0 with the library's name, or -1 with Redis's error. */
int fn_load(struct conn *c, const char *code, size_t len, bool replace, char *name, size_t cap,
            char *err, size_t errsz);
/* FUNCTION DELETE: false when there is no such library. */
bool fn_delete(struct conn *c, struct rv_str name);
void fn_flush(struct conn *c);
/* FUNCTION LIST [LIBRARYNAME pat] [WITHCODE] and FUNCTION STATS: replied. */
void fn_list(struct conn *c, const struct rv_str *pat, bool withcode);
void fn_stats(struct conn *c);
/* FUNCTION DUMP: replied (our own payload, with a version and a checksum). */
void fn_dump(struct conn *c);
/* FUNCTION RESTORE: all or nothing; 0, or -1 with Redis's error. */
int fn_restore(struct conn *c, struct rv_str payload, enum fn_policy policy, char *err,
               size_t errsz);
/* FCALL / FCALL_RO (ro) with argv as the client sent it. */
void fn_call(struct conn *c, int argc, struct rv_str *argv, bool ro);
/* A checkpoint's first record: the commands that rebuild the shard's
 * libraries (none when it has none). */
void fn_emit_state(struct shard *s, obj_emit_fn *fn, void *arg);
/* A replica's full sync: the command that makes its libraries the same as
 * the shard's (FUNCTION RESTORE <payload> FLUSH, also when there are none). */
void fn_emit_sync(struct shard *s, obj_emit_fn *fn, void *arg);
