/* tests/fuzz/fuzz_json.c: libFuzzer target for the JSON parser, serializer and
 * paths (node/types/json_text.c, json.c, json_path.c) and the packed form
 * (json_pack.c).
 *
 * Input layout: byte 0 = how many of the following bytes are a path (0..255),
 * then the path, then the document text. Checks:
 *  - a document that parses serialises to text that parses back to an equal
 *    tree and serialises to the same bytes (compact and indented);
 *  - its packed form (when within the limit) decodes to an equal tree and
 *    writes the same text straight from the bytes; the input's bytes, read
 *    as packed bytes, decode or fail without fault;
 *  - a failed parse leaves an error message and no tree;
 *  - a path that compiles evaluates without fault and every match is a node of
 *    the document at a depth no deeper than JSON_MAX_DEPTH + 1; a JSON.DEL-style
 *    removal of the matches (deepest first) leaves a valid document. */
#include "node/types/json.h"
#include "node/types/json_pack.h"
#include "node/types/json_path.h"

#include "base/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_json: check failed at line %d: %s\n", __LINE__, #cond);          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static int
by_depth(const void *a, const void *b)
{
    const struct jmatch *x = a, *y = b;
    if (x->depth != y->depth) {
        return y->depth - x->depth;
    }
    return x->v < y->v ? -1 : x->v > y->v;
}

static void
remove_all(struct jmatches *m)
{
    if (m->n > 1) {
        qsort(m->v, m->n, sizeof(*m->v), by_depth);
    }
    for (size_t i = 0; i < m->n; i++) {
        struct json *p = m->v[i].parent, *v = m->v[i].v;
        if (p == NULL || (i > 0 && m->v[i - 1].v == v)) {
            continue;
        }
        for (size_t k = 0; k < json_len(p); k++) {
            bool arr = json_type(p) == JSON_ARR;
            if ((arr ? json_arr_at(p, k) : json_obj_val(p, k)) == v) {
                json_destroy(arr ? json_arr_take(p, k) : json_obj_take(p, k));
                break;
            }
        }
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    size_t plen = data[0] < size - 1 ? data[0] : size - 1;
    const char *path = (const char *)data + 1, *doc = path + plen;
    size_t dlen = size - 1 - plen;
    char err[300];

    struct json *j = json_parse(doc, dlen, err, sizeof(err));
    if (j == NULL) {
        FZ_CHECK(err[0] != '\0');
    } else {
        struct buf a, b;
        buf_init(&a);
        buf_init(&b);
        json_write(&a, j, NULL);
        struct json *k = json_parse(a.data, a.len, err, sizeof(err));
        FZ_CHECK(k != NULL);
        FZ_CHECK(json_equal(j, k));
        json_write(&b, k, NULL);
        FZ_CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
        struct json_fmt f = { "  ", "\n", " ", 2, 1, 1 };
        buf_reset(&b);
        json_write(&b, k, &f);
        struct json *l = json_parse(b.data, b.len, err, sizeof(err));
        FZ_CHECK(l != NULL && json_equal(j, l));
        json_destroy(k);
        json_destroy(l);
        buf_reset(&b);
        if (jpk_encode(j, JPK_MAX_BYTES, &b)) {
            FZ_CHECK(b.len <= JPK_MAX_BYTES);
            struct json *p = jpk_decode((const uint8_t *)b.data, b.len);
            FZ_CHECK(p != NULL && json_equal(j, p));
            json_destroy(p);
            struct buf t;
            buf_init(&t);
            FZ_CHECK(jpk_write(&t, (const uint8_t *)b.data, b.len));
            FZ_CHECK(t.len == a.len && memcmp(t.data, a.data, a.len) == 0);
            buf_deinit(&t);
        }
        buf_deinit(&a);
        buf_deinit(&b);
    }

    struct json *raw = jpk_decode((const uint8_t *)doc, dlen); /* untrusted bytes */
    struct buf rb;
    buf_init(&rb);
    FZ_CHECK(jpk_write(&rb, (const uint8_t *)doc, dlen) == (raw != NULL));
    buf_deinit(&rb);
    json_destroy(raw);

    struct jpath *jp = jpath_parse(path, plen, err, sizeof(err));
    if (jp != NULL && j != NULL) {
        struct jmatches m = { 0 };
        jpath_eval(jp, j, &m);
        for (size_t i = 0; i < m.n; i++) {
            FZ_CHECK(m.v[i].depth <= JSON_MAX_DEPTH + 1);
            FZ_CHECK((m.v[i].parent == NULL) == (m.v[i].depth == 0));
        }
        remove_all(&m);
        jmatches_free(&m);
        struct buf c;
        buf_init(&c);
        json_write(&c, j, NULL);
        struct json *n = json_parse(c.data, c.len, err, sizeof(err));
        FZ_CHECK(n != NULL);
        json_destroy(n);
        buf_deinit(&c);
    }
    jpath_destroy(jp);
    json_destroy(j);
    return 0;
}
