/* node/obj.h: operations every non-string value type provides, so generic
 * commands (TYPE, OBJECT ENCODING, MEMORY USAGE, COPY, SCAN TYPE) and the
 * keyspace (freeing) handle all types through one table. A type module
 * (t_list.c, t_hash.c, ...) defines its `const struct obj_ops obj_<type>_ops`. */
#pragma once
#include "node/ks.h"

#include <stddef.h>

struct obj_ops {
    const char *type_name;                      /* TYPE reply, e.g. "list" */
    const char *(*encoding)(const void *v);     /* OBJECT ENCODING, e.g. "listpack" */
    size_t (*mem)(const void *v);               /* bytes owned by the value (MEMORY USAGE) */
    void *(*dup)(const void *v);                /* deep copy (COPY); caller owns the result */
    ks_free_fn *free;                           /* passed to ks_set_ptr */
};

/* The ops of type t; NULL for strings and for types not built in. */
const struct obj_ops *obj_ops_of(enum ks_type t);
/* TYPE's name for t ("string", "list", ...). */
const char *obj_type_name(enum ks_type t);
