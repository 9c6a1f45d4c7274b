/* node/types/obj.h: operations every non-string value type provides, so generic
 * commands (TYPE, OBJECT ENCODING, MEMORY USAGE, COPY, SCAN TYPE) and the
 * keyspace (freeing) handle all types through one table. A type module of
 * this folder (list.c, hash.c, ...) defines its `const struct obj_ops obj_<type>_ops`. */
#pragma once
#include "node/keyspace/ks.h"

#include <stddef.h>
#include <stdint.h>

/* Rebuild commands: emit() calls fn once per command that, run in order on a
 * missing key, recreates the value exactly (elements, scores, field deadlines;
 * not the key's own deadline, which the caller adds). Long values are split
 * into commands of at most OBJ_EMIT_BATCH elements or about OBJ_EMIT_BYTES of
 * arguments. Used by checkpoints, DUMP and full resync; argv views are valid
 * only during the call. */
#define OBJ_EMIT_BATCH 64
#define OBJ_EMIT_BYTES (1u << 20)
typedef void obj_emit_fn(void *arg, int argc, const struct rv_str *argv);

/* Small collections may be stored inline in their entry (ks_entry_inl):
 * ks_copy copies those, and dup is only called for pointer values. */
struct obj_ops {
    const char *type_name;                             /* TYPE reply, e.g. "list" */
    const char *(*encoding)(const struct ks_entry *e); /* OBJECT ENCODING, e.g. "listpack" */
    size_t (*mem)(const struct ks_entry *e); /* bytes owned outside the entry (MEMORY USAGE) */
    void *(*dup)(
        const struct ks_entry *e); /* deep copy of a pointer value (COPY); caller owns it */
    ks_free_fn *free;              /* frees what dup returns (passed to ks_set_ptr) */
    /* Allocations freeing a pointer value makes (Redis's lazyfree "free
     * effort": elements of a hash table, tree nodes, list nodes); NULL: 1. */
    size_t (*effort)(const struct ks_entry *e);
    void (*emit)(const struct ks_entry *e, obj_emit_fn *fn, void *arg);
};

/* A command under construction for an emitter (on the caller's stack, about
 * 6 KiB): argv[0] is the command name and argv[1] the key, then optional
 * leading arguments repeated in every command, then elements of one or more
 * arguments each. obj_emit_elem() ends an element and sends the command once
 * it holds OBJ_EMIT_BATCH elements; obj_emit_flush() sends what is left. An
 * argument's bytes must stay valid until its command is sent: use
 * obj_emit_scratch() for formatted ones. */
#define OBJ_EMIT_SCRATCH 32
#define OBJ_EMIT_MAXARGS (4 + 2 * OBJ_EMIT_BATCH)
struct obj_emitter {
    obj_emit_fn *fn;
    void *arg;
    int head; /* arguments repeated in every command */
    int argc;
    int nel;      /* elements in the pending command */
    size_t bytes; /* their arguments' bytes */
    struct rv_str argv[OBJ_EMIT_MAXARGS];
    char scratch[OBJ_EMIT_MAXARGS][OBJ_EMIT_SCRATCH];
};
/* Starts commands "name key" (no element sent until the first obj_emit_elem). */
void obj_emit_init(struct obj_emitter *b, obj_emit_fn *fn, void *arg, const char *name,
                   struct rv_str key);
/* Appends an argument to the leading part (before any element). */
void obj_emit_head(struct obj_emitter *b, struct rv_str s);
/* Appends an argument; obj_emit_scratch is the buffer for the next one. */
void obj_emit_arg(struct obj_emitter *b, struct rv_str s);
char *obj_emit_scratch(struct obj_emitter *b);
void obj_emit_int(struct obj_emitter *b, int64_t v);
/* A score as the shortest decimal that parses back to the same double ("inf", "-inf"). */
void obj_emit_double(struct obj_emitter *b, double v);
void obj_emit_elem(struct obj_emitter *b);
void obj_emit_flush(struct obj_emitter *b);

/* The ops of type t; NULL for strings and for types not built in. */
const struct obj_ops *obj_ops_of(enum ks_type t);
/* TYPE's name for t ("string", "list", ...). */
const char *obj_type_name(enum ks_type t);
