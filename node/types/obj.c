/* node/types/obj.c: the type table. */
#include "node/types/obj.h"

#include "node/types/coord.h"
#include "node/types/hash.h"
#include "node/types/list.h"
#include "node/types/set.h"
#include "node/types/stream.h"
#include "node/types/zset_enc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct obj_ops *
obj_ops_of(enum ks_type t)
{
    switch (t) {
    case KS_LIST: return &obj_list_ops;
    case KS_SET: return &obj_set_ops;
    case KS_ZSET: return &obj_zset_ops;
    case KS_HASH: return &obj_hash_ops;
    case KS_COORD: return &obj_coord_ops;
    case KS_STREAM: return &obj_stream_ops;
    case KS_STRING: break;
    }
    return NULL;
}

const char *
obj_type_name(enum ks_type t)
{
    switch (t) {
    case KS_STRING: return "string";
    case KS_LIST: return "list";
    case KS_SET: return "set";
    case KS_ZSET: return "zset";
    case KS_HASH: return "hash";
    case KS_STREAM: return "stream";
    case KS_COORD: return "coord";
    }
    return "none";
}

/* ---------------------------------------------------------------- emitters */

void
obj_emit_init(struct obj_emitter *b, obj_emit_fn *fn, void *arg, const char *name,
              struct rv_str key)
{
    b->fn = fn;
    b->arg = arg;
    b->argv[0] = (struct rv_str){ name, strlen(name) };
    b->argv[1] = key;
    b->head = b->argc = 2;
    b->nel = 0;
    b->bytes = 0;
}

void
obj_emit_head(struct obj_emitter *b, struct rv_str s)
{
    b->argv[b->argc++] = s;
    b->head = b->argc;
}

char *
obj_emit_scratch(struct obj_emitter *b)
{
    return b->scratch[b->argc];
}

void
obj_emit_arg(struct obj_emitter *b, struct rv_str s)
{
    b->argv[b->argc++] = s;
    b->bytes += s.len;
}

void
obj_emit_int(struct obj_emitter *b, int64_t v)
{
    char *p = obj_emit_scratch(b);
    int n = snprintf(p, OBJ_EMIT_SCRATCH, "%lld", (long long)v);
    obj_emit_arg(b, (struct rv_str){ p, (size_t)n });
}

void
obj_emit_double(struct obj_emitter *b, double v)
{
    char *p = obj_emit_scratch(b);
    int n;
    if (isinf(v)) {
        n = snprintf(p, OBJ_EMIT_SCRATCH, "%s", v > 0 ? "inf" : "-inf");
    } else {
        /* %.15g is exact for every double with at most 15 significant digits
         * and drops trailing zeros; 17 digits always round-trip. */
        for (int prec = 15;; prec++) {
            n = snprintf(p, OBJ_EMIT_SCRATCH, "%.*g", prec, v);
            if (prec == 17 || strtod(p, NULL) == v) {
                break;
            }
        }
    }
    obj_emit_arg(b, (struct rv_str){ p, (size_t)n });
}

void
obj_emit_flush(struct obj_emitter *b)
{
    if (b->nel > 0) {
        b->fn(b->arg, b->argc, b->argv);
    }
    b->argc = b->head;
    b->nel = 0;
    b->bytes = 0;
}

void
obj_emit_elem(struct obj_emitter *b)
{
    if (++b->nel == OBJ_EMIT_BATCH || b->bytes >= OBJ_EMIT_BYTES) {
        obj_emit_flush(b);
    }
}
