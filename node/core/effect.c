/* node/core/effect.c: the redo command a handler builds (effect.h). Its bytes
 * are copied into one buffer per connection, kept between commands: only
 * the writes whose arguments do not say what they did build one (SPOP,
 * INCRBYFLOAT, EXPIRE, DEL of some missing keys, the served multi-key pops). */
#include "node/core/effect.h"

#include "base/buf.h"
#include "base/mem.h"
#include "node/core/conn.h"
#include "proto/resp.h"


struct effect_redo {
    struct buf bytes; /* the arguments, back to back */
    size_t *len;      /* each argument's length */
    struct rv_str *argv;
    int argc, cap, vcap;
};

void
effect_none(struct conn *c)
{
    c->effect = EFFECT_NONE;
}

void
effect_waiting(struct conn *c)
{
    c->effect = EFFECT_WAITING;
}

void
effect_redo(struct conn *c, const char *name, struct rv_str key)
{
    if (c->redo == NULL) {
        c->redo = rv_calloc(1, sizeof(*c->redo));
        buf_init(&c->redo->bytes);
    }
    c->effect = EFFECT_REDO;
    c->redo->argc = 0;
    buf_reset(&c->redo->bytes);
    effect_arg(c, name, strlen(name));
    effect_arg(c, key.p, key.len);
}

void
effect_arg(struct conn *c, const char *p, size_t n)
{
    struct effect_redo *r = c->redo;
    if (r->argc == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 8;
        r->len = rv_realloc(r->len, (size_t)r->cap * sizeof(*r->len));
    }
    r->len[r->argc++] = n;
    buf_append(&r->bytes, p, n);
}

void
effect_arg_i64(struct conn *c, int64_t v)
{
    char num[24];
    effect_arg(c, num, resp_ll2str(num, v));
}

const struct rv_str *
effect_argv(struct conn *c, int *argc)
{
    struct effect_redo *r = c->redo;
    /* views are made here, once the bytes have stopped moving */
    if (r->vcap < r->cap) {
        r->vcap = r->cap;
        r->argv = rv_realloc(r->argv, (size_t)r->vcap * sizeof(*r->argv));
    }
    const char *p = r->bytes.data;
    for (int i = 0; i < r->argc; i++) {
        r->argv[i] = (struct rv_str){ p, r->len[i] };
        p += r->len[i];
    }
    *argc = r->argc;
    return r->argv;
}

void
effect_free(struct conn *c)
{
    struct effect_redo *r = c->redo;
    if (r == NULL) {
        return;
    }
    buf_deinit(&r->bytes);
    rv_free(r->len);
    rv_free(r->argv);
    rv_free(r);
    c->redo = NULL;
}
