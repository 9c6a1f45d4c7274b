/* node/types/json.c: the JSON node tree (node/types/json.h). Parsing and
 * serialising are node/types/json_text.c. */
#include "node/types/json.h"

#include "base/mem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jmember {
    struct json *v;
    uint32_t klen;
    char *k;
};

struct json {
    uint8_t type;
    bool b;
    uint32_t n, cap; /* string bytes, array elements or members; capacity */
    union {
        int64_t i;
        double d;
        char *s;
        struct json **a;
        struct jmember *m;
    } u;
    uint32_t *idx; /* objects above JSON_OBJ_INDEX_MIN: open addressing, member + 1 */
    uint32_t icap; /* slots, a power of two */
};

/* ------------------------------------------------------------- nodes */

static struct json *
node(enum json_type t)
{
    struct json *j = rv_calloc(1, sizeof(*j));
    j->type = (uint8_t)t;
    return j;
}

struct json *
json_new_null(void)
{
    return node(JSON_NULL);
}

struct json *
json_new_bool(bool b)
{
    struct json *j = node(JSON_BOOL);
    j->b = b;
    return j;
}

struct json *
json_new_int(int64_t v)
{
    struct json *j = node(JSON_INT);
    j->u.i = v;
    return j;
}

struct json *
json_new_uint(uint64_t v)
{
    struct json *j = node(JSON_INT);
    j->u.i = (int64_t)v;
    j->b = true;
    return j;
}

struct json *
json_new_double(double v)
{
    struct json *j = node(JSON_DOUBLE);
    j->u.d = v;
    return j;
}

struct json *
json_new_str(const char *p, size_t n)
{
    struct json *j = node(JSON_STR);
    j->n = j->cap = (uint32_t)n;
    j->u.s = rv_malloc(n ? n : 1);
    memcpy(j->u.s, p, n);
    return j;
}

struct json *
json_new_arr(void)
{
    return node(JSON_ARR);
}

struct json *
json_new_obj(void)
{
    return node(JSON_OBJ);
}

/* Frees what j holds, not the node itself. */
static void
release(struct json *j)
{
    switch ((enum json_type)j->type) {
    case JSON_STR: rv_free(j->u.s); break;
    case JSON_ARR:
        for (uint32_t i = 0; i < j->n; i++) {
            json_destroy(j->u.a[i]);
        }
        rv_free(j->u.a);
        break;
    case JSON_OBJ:
        for (uint32_t i = 0; i < j->n; i++) {
            json_destroy(j->u.m[i].v);
            rv_free(j->u.m[i].k);
        }
        rv_free(j->u.m);
        rv_free(j->idx);
        break;
    default: break;
    }
    memset(j, 0, sizeof(*j));
}

void
json_destroy(struct json *j)
{
    if (j != NULL) {
        release(j);
        rv_free(j);
    }
}

void
json_assign_take(struct json *dst, struct json *src)
{
    release(dst);
    *dst = *src;
    rv_free(src);
}

struct json *
json_dup(const struct json *j)
{
    struct json *d;
    switch ((enum json_type)j->type) {
    case JSON_STR: return json_new_str(j->u.s, j->n);
    case JSON_ARR:
        d = json_new_arr();
        for (uint32_t i = 0; i < j->n; i++) {
            json_arr_insert_take(d, i, json_dup(j->u.a[i]));
        }
        return d;
    case JSON_OBJ:
        d = json_new_obj();
        for (uint32_t i = 0; i < j->n; i++) {
            json_obj_set_take(d, j->u.m[i].k, j->u.m[i].klen, json_dup(j->u.m[i].v));
        }
        return d;
    default:
        d = node((enum json_type)j->type);
        *d = *j;
        return d;
    }
}

/* ----------------------------------------------------------- reading */

enum json_type
json_type(const struct json *j)
{
    return (enum json_type)j->type;
}

bool
json_bool(const struct json *j)
{
    return j->b;
}

int64_t
json_int(const struct json *j)
{
    return j->u.i;
}

bool
json_int_unsigned(const struct json *j)
{
    return j->type == JSON_INT && j->b;
}

uint64_t
json_uint(const struct json *j)
{
    return (uint64_t)j->u.i;
}

double
json_double(const struct json *j)
{
    return j->u.d;
}

double
json_num(const struct json *j)
{
    if (j->type == JSON_INT) {
        return j->b ? (double)(uint64_t)j->u.i : (double)j->u.i;
    }
    return j->u.d;
}

const char *
json_str(const struct json *j, size_t *len)
{
    *len = j->n;
    return j->u.s;
}

size_t
json_len(const struct json *j)
{
    return j->n;
}

struct json *
json_arr_at(const struct json *j, size_t i)
{
    return j->u.a[i];
}

const char *
json_obj_key(const struct json *j, size_t i, size_t *klen)
{
    *klen = j->u.m[i].klen;
    return j->u.m[i].k;
}

struct json *
json_obj_val(const struct json *j, size_t i)
{
    return j->u.m[i].v;
}

static uint64_t
khash(const char *k, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ (uint8_t)k[i]) * 1099511628211ull;
    }
    return h ^ (h >> 29);
}

static bool
key_is(const struct jmember *m, const char *k, size_t n)
{
    return m->klen == n && memcmp(m->k, k, n) == 0;
}

ptrdiff_t
json_obj_find(const struct json *j, const char *k, size_t klen)
{
    if (j->idx == NULL) {
        for (uint32_t i = 0; i < j->n; i++) {
            if (key_is(&j->u.m[i], k, klen)) {
                return i;
            }
        }
        return -1;
    }
    uint32_t mask = j->icap - 1;
    for (uint64_t s = khash(k, klen) & mask;; s = (s + 1) & mask) {
        uint32_t v = j->idx[s];
        if (v == 0) {
            return -1;
        }
        if (key_is(&j->u.m[v - 1], k, klen)) {
            return v - 1;
        }
    }
}

struct json *
json_obj_get(const struct json *j, const char *k, size_t klen)
{
    ptrdiff_t i = json_obj_find(j, k, klen);
    return i < 0 ? NULL : j->u.m[i].v;
}

bool
json_equal(const struct json *a, const struct json *b)
{
    bool an = a->type == JSON_INT || a->type == JSON_DOUBLE;
    bool bn = b->type == JSON_INT || b->type == JSON_DOUBLE;
    if (an && bn) {
        if (a->type == JSON_INT && b->type == JSON_INT) {
            return a->u.i == b->u.i && a->b == b->b;
        }
        return json_num(a) == json_num(b);
    }
    if (a->type != b->type) {
        return false;
    }
    switch ((enum json_type)a->type) {
    case JSON_NULL: return true;
    case JSON_BOOL: return a->b == b->b;
    case JSON_STR: return a->n == b->n && memcmp(a->u.s, b->u.s, a->n) == 0;
    case JSON_ARR:
        if (a->n != b->n) {
            return false;
        }
        for (uint32_t i = 0; i < a->n; i++) {
            if (!json_equal(a->u.a[i], b->u.a[i])) {
                return false;
            }
        }
        return true;
    case JSON_OBJ:
        if (a->n != b->n) {
            return false;
        }
        for (uint32_t i = 0; i < a->n; i++) {
            struct json *o = json_obj_get(b, a->u.m[i].k, a->u.m[i].klen);
            if (o == NULL || !json_equal(a->u.m[i].v, o)) {
                return false;
            }
        }
        return true;
    default: return false;
    }
}

size_t
json_mem(const struct json *j)
{
    size_t n = rv_usable_size(j);
    switch ((enum json_type)j->type) {
    case JSON_STR: n += rv_usable_size(j->u.s); break;
    case JSON_ARR:
        if (j->u.a) {
            n += rv_usable_size(j->u.a);
        }
        for (uint32_t i = 0; i < j->n; i++) {
            n += json_mem(j->u.a[i]);
        }
        break;
    case JSON_OBJ:
        if (j->u.m) {
            n += rv_usable_size(j->u.m);
        }
        if (j->idx) {
            n += rv_usable_size(j->idx);
        }
        for (uint32_t i = 0; i < j->n; i++) {
            n += json_mem(j->u.m[i].v) + rv_usable_size(j->u.m[i].k);
        }
        break;
    default: break;
    }
    return n;
}

const char *
json_type_name(const struct json *j)
{
    static const char *const names[] = { "null",   "boolean", "integer", "number",
                                         "string", "array",   "object" };
    return names[j->type];
}

/* ----------------------------------------------------------- changes */

void
json_set_bool(struct json *j, bool b)
{
    release(j);
    j->type = JSON_BOOL;
    j->b = b;
}

void
json_set_int(struct json *j, int64_t v)
{
    release(j);
    j->type = JSON_INT;
    j->u.i = v;
}

void
json_set_double(struct json *j, double v)
{
    release(j);
    j->type = JSON_DOUBLE;
    j->u.d = v;
}

static uint32_t
grow_cap(uint32_t cap, size_t need)
{
    size_t c = cap ? cap : 4;
    while (c < need) {
        c = c < 4096 ? c * 2 : c + c / 2;
    }
    return c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
}

void
json_str_append(struct json *j, const char *p, size_t n)
{
    if ((size_t)j->n + n > j->cap) {
        j->cap = grow_cap(j->cap, (size_t)j->n + n);
        j->u.s = rv_realloc(j->u.s, j->cap);
    }
    memcpy(j->u.s + j->n, p, n);
    j->n += (uint32_t)n;
}

void
json_arr_insert_take(struct json *a, size_t i, struct json *v)
{
    if (a->n == a->cap) {
        a->cap = grow_cap(a->cap, (size_t)a->n + 1);
        a->u.a = rv_realloc(a->u.a, a->cap * sizeof(*a->u.a));
    }
    memmove(a->u.a + i + 1, a->u.a + i, (a->n - i) * sizeof(*a->u.a));
    a->u.a[i] = v;
    a->n++;
}

void
json_arr_insert_many_take(struct json *a, size_t i, struct json *const *v, size_t k)
{
    if ((size_t)a->n + k > a->cap) {
        a->cap = grow_cap(a->cap, (size_t)a->n + k);
        a->u.a = rv_realloc(a->u.a, a->cap * sizeof(*a->u.a));
    }
    memmove(a->u.a + i + k, a->u.a + i, (a->n - i) * sizeof(*a->u.a));
    memcpy(a->u.a + i, v, k * sizeof(*v));
    a->n += (uint32_t)k;
}

struct json *
json_arr_take(struct json *a, size_t i)
{
    struct json *v = a->u.a[i];
    memmove(a->u.a + i, a->u.a + i + 1, (a->n - i - 1) * sizeof(*a->u.a));
    a->n--;
    return v;
}

void
json_arr_trim(struct json *a, size_t start, size_t stop)
{
    if (start > stop || start >= a->n) {
        for (uint32_t i = 0; i < a->n; i++) {
            json_destroy(a->u.a[i]);
        }
        a->n = 0;
        return;
    }
    if (stop >= a->n) {
        stop = a->n - 1;
    }
    for (size_t i = 0; i < a->n; i++) {
        if (i < start || i > stop) {
            json_destroy(a->u.a[i]);
        }
    }
    memmove(a->u.a, a->u.a + start, (stop - start + 1) * sizeof(*a->u.a));
    a->n = (uint32_t)(stop - start + 1);
}

static void
idx_put(struct json *o, uint32_t member)
{
    uint32_t mask = o->icap - 1;
    const struct jmember *m = &o->u.m[member];
    uint64_t s = khash(m->k, m->klen) & mask;
    while (o->idx[s] != 0) {
        s = (s + 1) & mask;
    }
    o->idx[s] = member + 1;
}

/* Rebuilds the index for o's members (sized for at most 50% load). */
static void
idx_rebuild(struct json *o)
{
    rv_free(o->idx);
    o->idx = NULL;
    o->icap = 0;
    if (o->n <= JSON_OBJ_INDEX_MIN) {
        return;
    }
    uint32_t cap = 64;
    while (cap < 2 * (size_t)o->cap) {
        cap *= 2;
    }
    o->icap = cap;
    o->idx = rv_calloc(cap, sizeof(*o->idx));
    for (uint32_t i = 0; i < o->n; i++) {
        idx_put(o, i);
    }
}

void
json_obj_set_take(struct json *o, const char *k, size_t klen, struct json *v)
{
    ptrdiff_t at = json_obj_find(o, k, klen);
    if (at >= 0) {
        json_assign_take(o->u.m[at].v, v);
        return;
    }
    bool regrow = false;
    if (o->n == o->cap) {
        o->cap = grow_cap(o->cap, (size_t)o->n + 1);
        o->u.m = rv_realloc(o->u.m, o->cap * sizeof(*o->u.m));
        regrow = true;
    }
    struct jmember *m = &o->u.m[o->n];
    m->v = v;
    m->klen = (uint32_t)klen;
    m->k = rv_malloc(klen ? klen : 1);
    memcpy(m->k, k, klen);
    o->n++;
    if (o->idx != NULL && !regrow) {
        idx_put(o, o->n - 1);
    } else if (o->n > JSON_OBJ_INDEX_MIN) {
        idx_rebuild(o);
    }
}

struct json *
json_obj_take(struct json *o, size_t i)
{
    struct json *v = o->u.m[i].v;
    rv_free(o->u.m[i].k);
    memmove(o->u.m + i, o->u.m + i + 1, (o->n - i - 1) * sizeof(*o->u.m));
    o->n--;
    if (o->idx != NULL) {
        /* member indexes after i moved down: an O(members) rebuild */
        idx_rebuild(o);
    }
    return v;
}

size_t
json_remove_children(struct json *p, json_drop_fn *drop, void *arg)
{
    size_t w = 0, n = p->n;
    if (p->type == JSON_ARR) {
        for (size_t r = 0; r < n; r++) {
            if (drop(p->u.a[r], arg)) {
                json_destroy(p->u.a[r]);
            } else {
                p->u.a[w++] = p->u.a[r];
            }
        }
    } else if (p->type == JSON_OBJ) {
        for (size_t r = 0; r < n; r++) {
            if (drop(p->u.m[r].v, arg)) {
                json_destroy(p->u.m[r].v);
                rv_free(p->u.m[r].k);
            } else {
                p->u.m[w++] = p->u.m[r];
            }
        }
    } else {
        return 0;
    }
    p->n = (uint32_t)w;
    if (p->type == JSON_OBJ && w != n) {
        idx_rebuild(p);
    }
    return n - w;
}

bool
json_clear(struct json *j)
{
    switch ((enum json_type)j->type) {
    case JSON_ARR:
    case JSON_OBJ: {
        uint8_t t = j->type;
        release(j);
        j->type = t;
        return true;
    }
    case JSON_INT:
    case JSON_DOUBLE: json_set_int(j, 0); return true;
    default: return false;
    }
}

/* ---------------------------------------------------------- numbers */

size_t
json_fmt_int(int64_t v, char *out)
{
    char tmp[24];
    size_t n = 0, o = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0) {
        out[o++] = '-';
    }
    while (n > 0) {
        out[o++] = tmp[--n];
    }
    out[o] = '\0';
    return o;
}

size_t
json_fmt_double(double v, char *out)
{
    char tmp[40];
    if (!isfinite(v)) {
        return (size_t)sprintf(out, "%s", isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf");
    }
    if (v == 0) {
        return (size_t)sprintf(out, signbit(v) ? "-0.0" : "0.0");
    }
    /* shortest digits that parse back to v, as ryu */
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, v);
        if (strtod(tmp, NULL) == v) {
            break;
        }
    }
    char digits[20];
    size_t nd = 0, o = 0;
    const char *p = tmp;
    if (*p == '-') {
        out[o++] = '-';
        p++;
    }
    for (; *p != 'e'; p++) {
        if (*p != '.') {
            digits[nd++] = *p;
        }
    }
    while (nd > 1 && digits[nd - 1] == '0') {
        nd--;
    }
    int e = atoi(p + 1);
    int kk = e + 1; /* position of the decimal point after the first digit */
    if (kk > 0 && kk <= 16 && (int)nd <= kk) {
        memcpy(out + o, digits, nd);
        o += nd;
        for (int i = (int)nd; i < kk; i++) {
            out[o++] = '0';
        }
        memcpy(out + o, ".0", 2);
        o += 2;
    } else if (kk > 0 && kk <= 16) {
        memcpy(out + o, digits, (size_t)kk);
        o += (size_t)kk;
        out[o++] = '.';
        memcpy(out + o, digits + kk, nd - (size_t)kk);
        o += nd - (size_t)kk;
    } else if (kk > -5 && kk <= 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = 0; i < -kk; i++) {
            out[o++] = '0';
        }
        memcpy(out + o, digits, nd);
        o += nd;
    } else {
        out[o++] = digits[0];
        if (nd > 1) {
            out[o++] = '.';
            memcpy(out + o, digits + 1, nd - 1);
            o += nd - 1;
        }
        o += (size_t)sprintf(out + o, "e%d", kk - 1);
    }
    out[o] = '\0';
    return o;
}
