/* node/obj.h: operations every non-string value type provides, so generic
 * commands (TYPE, OBJECT ENCODING, MEMORY USAGE, COPY, SCAN TYPE) and the
 * keyspace (freeing) handle all types through one table. A type module
 * (t_list.c, t_hash.c, ...) defines its `const struct obj_ops obj_<type>_ops`. */
#pragma once
#include "node/ks.h"

#include <stddef.h>

/* Rebuild commands: emit() calls fn once per command that, run in order on a
 * missing key, recreates the value exactly (elements, scores, field deadlines;
 * not the key's own deadline, which the caller adds). Long values are split
 * into commands of at most OBJ_EMIT_BATCH elements. Used by checkpoints, DUMP
 * and full resync; argv views are valid only during the call. */
#define OBJ_EMIT_BATCH 64
typedef void obj_emit_fn(void *arg, int argc, const struct rv_str *argv);

struct obj_ops {
    const char *type_name;                      /* TYPE reply, e.g. "list" */
    const char *(*encoding)(const void *v);     /* OBJECT ENCODING, e.g. "listpack" */
    size_t (*mem)(const void *v);               /* bytes owned by the value (MEMORY USAGE) */
    void *(*dup)(const void *v);                /* deep copy (COPY); caller owns the result */
    ks_free_fn *free;                           /* passed to ks_set_ptr */
    void (*emit)(const struct ks_entry *e, obj_emit_fn *fn, void *arg);
};

/* The ops of type t; NULL for strings and for types not built in. */
const struct obj_ops *obj_ops_of(enum ks_type t);
/* TYPE's name for t ("string", "list", ...). */
const char *obj_type_name(enum ks_type t);
