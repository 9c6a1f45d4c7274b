/* node/types/json_obj.c: the obj_ops of JSON documents (node/types/obj.h):
 * TYPE "ReJSON-RL", MEMORY USAGE, COPY, and the rebuild command checkpoints,
 * DUMP and full resyncs use: one JSON.SET key $ <compact text>. A small
 * document is packed inline in its entry (json_pack.h), a larger one a tree. */
#include "node/types/json.h"
#include "node/types/json_pack.h"

#include "node/types/obj.h"

static const char *
json_encoding_op(const struct ks_entry *e)
{
    (void)e;
    return "raw";
}

/* Bytes outside the entry: none for a packed document. */
static size_t
json_mem_op(const struct ks_entry *e)
{
    return ks_entry_inl(e) ? 0 : json_mem(ks_entry_ptr(e));
}

static void *
json_dup_op(const struct ks_entry *e)
{
    return json_dup(ks_entry_ptr(e));
}

void
json_free(void *doc)
{
    json_destroy(doc);
}

static void
json_emit_op(const struct ks_entry *e, obj_emit_fn *fn, void *arg)
{
    struct buf b;
    buf_init(&b);
    if (ks_entry_inl(e)) {
        size_t n;
        const uint8_t *p = ks_inl_val(e, &n);
        if (!jpk_write(&b, p, n)) {
            buf_append(&b, "null", 4); /* never from jpk_encode's bytes */
        }
    } else {
        json_write(&b, ks_entry_ptr(e), NULL);
    }
    struct rv_str argv[4] = { { "JSON.SET", 8 }, ks_entry_key(e), { "$", 1 }, { b.data, b.len } };
    fn(arg, 4, argv);
    buf_deinit(&b);
}

const struct obj_ops obj_json_ops = {
    .type_name = "ReJSON-RL",
    .encoding = json_encoding_op,
    .mem = json_mem_op,
    .dup = json_dup_op,
    .free = json_free,
    .emit = json_emit_op,
};
