/* tests/bench/json_parse.c: our JSON parser against yajl's callback API, both
 * building the same node tree (node/types/json.h), on three inputs: the seed
 * report's 87-byte object, a 1 MiB bulk string and a ~1 MiB mix of objects,
 * arrays, numbers and short strings. docs/json.md records the figures.
 *
 * Not part of the build (yajl is not a dependency); from the repository root:
 *   cc -O2 -std=c11 -D_GNU_SOURCE -I. tests/bench/json_parse.c node/types/json.c \
 *      node/types/json_text.c base/buf.c base/mem.c -ljemalloc -lyajl -lm -o /tmp/json_parse
 *   /tmp/json_parse */
#include "base/buf.h"
#include "base/mem.h"
#include "node/types/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yajl/yajl_parse.h>

struct yb {
    struct json *stack[JSON_MAX_DEPTH + 2];
    int depth;
    struct json *root;
    char *key;
    size_t klen;
};

static void
add(struct yb *b, struct json *v)
{
    if (b->depth == 0) {
        b->root = v;
        return;
    }
    struct json *top = b->stack[b->depth - 1];
    if (json_type(top) == JSON_ARR) {
        json_arr_insert_take(top, json_len(top), v);
    } else {
        json_obj_set_take(top, b->key, b->klen, v);
        rv_free(b->key);
        b->key = NULL;
    }
}

static int
y_null(void *ctx)
{
    add(ctx, json_new_null());
    return 1;
}

static int
y_bool(void *ctx, int v)
{
    add(ctx, json_new_bool(v));
    return 1;
}

static int
y_number(void *ctx, const char *s, size_t n)
{
    char t[64];
    if (n >= sizeof(t)) {
        return 0;
    }
    memcpy(t, s, n);
    t[n] = '\0';
    bool isint = strpbrk(t, ".eE") == NULL;
    add(ctx, isint ? json_new_int(strtoll(t, NULL, 10)) : json_new_double(strtod(t, NULL)));
    return 1;
}

static int
y_string(void *ctx, const unsigned char *s, size_t n)
{
    add(ctx, json_new_str((const char *)s, n));
    return 1;
}

static int
y_key(void *ctx, const unsigned char *s, size_t n)
{
    struct yb *b = ctx;
    b->key = rv_strndup((const char *)s, n);
    b->klen = n;
    return 1;
}

static int
y_open(struct yb *b, struct json *c)
{
    if (b->depth > JSON_MAX_DEPTH) {
        json_destroy(c);
        return 0;
    }
    add(b, c);
    b->stack[b->depth++] = c;
    return 1;
}

static int
y_start_map(void *ctx)
{
    return y_open(ctx, json_new_obj());
}

static int
y_start_arr(void *ctx)
{
    return y_open(ctx, json_new_arr());
}

static int
y_end(void *ctx)
{
    ((struct yb *)ctx)->depth--;
    return 1;
}

static const yajl_callbacks cbs = { y_null,      y_bool, NULL,  NULL,        y_number, y_string,
                                    y_start_map, y_key,  y_end, y_start_arr, y_end };

static struct json *
yajl_build(const char *p, size_t n)
{
    struct yb b = { .depth = 0 };
    yajl_handle h = yajl_alloc(&cbs, NULL, &b);
    bool ok = yajl_parse(h, (const unsigned char *)p, n) == yajl_status_ok &&
              yajl_complete_parse(h) == yajl_status_ok;
    yajl_free(h);
    if (!ok) {
        json_destroy(b.root);
        return NULL;
    }
    return b.root;
}

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
run(const char *name, const char *doc, size_t n, int iters)
{
    char err[200];
    double best[2] = { 1e9, 1e9 };
    for (int round = 0; round < 5; round++) {
        for (int which = 0; which < 2; which++) {
            double t0 = now();
            for (int i = 0; i < iters; i++) {
                struct json *j = which == 0 ? json_parse(doc, n, err, sizeof(err))
                                            : yajl_build(doc, n);
                if (j == NULL) {
                    fprintf(stderr, "%s: parse failed (%d)\n", name, which);
                    exit(1);
                }
                json_destroy(j);
            }
            double dt = (now() - t0) / iters;
            best[which] = dt < best[which] ? dt : best[which];
        }
    }
    printf("%-8s %9zu B  ours %9.3f us (%7.1f MB/s)  yajl %9.3f us (%7.1f MB/s)  yajl/ours %.2f\n",
           name, n, best[0] * 1e6, n / best[0] / 1e6, best[1] * 1e6, n / best[1] / 1e6,
           best[1] / best[0]);
}

int
main(void)
{
    static const char small[] =
        "{\"name\":\"user-000001\",\"active\":true,\"score\":42,\"meta\":{\"value\":\"abcdefghij\",\"n\":7}}";
    struct buf b;
    buf_init(&b);
    buf_appendf(&b, "{\"meta\":{\"value\":\"x\"},\"bulk\":\"");
    for (int i = 0; i < (1 << 20); i++) {
        buf_putc(&b, (char)('a' + i % 26));
    }
    buf_appendf(&b, "\"}");
    struct buf m;
    buf_init(&m);
    buf_putc(&m, '[');
    for (int i = 0; m.len < (1 << 20); i++) {
        buf_appendf(&m,
                    "%s{\"id\":%d,\"name\":\"item %d\",\"price\":%d.%02d,\"tags\":[\"a\",\"b\"],"
                    "\"ok\":%s,\"none\":null}",
                    i ? "," : "", i, i, i % 1000, i % 100, i % 2 ? "true" : "false");
    }
    buf_putc(&m, ']');
    run("87-byte", small, strlen(small), 200000);
    run("bulk", b.data, b.len, 200);
    run("mixed", m.data, m.len, 20);
    buf_deinit(&b);
    buf_deinit(&m);
    return 0;
}
