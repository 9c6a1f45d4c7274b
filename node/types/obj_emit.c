/* node/types/obj_emit.c: the rebuild-command emitter (obj.h), apart from the
 * type table so that decoders (rdb.c) use it without every type. */
#include "node/types/obj.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
