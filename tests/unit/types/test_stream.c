/* tests/unit/types/test_stream.c: the stream object against a simple model
 * (a sorted array of live entries), with random appends, deletes, ranges
 * and trims. */
#include "node/types/stream.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXF 3

struct ment {
    struct sid id;
    size_t nf;
    char f[MAXF][8];
    char v[MAXF][400];
};

struct model {
    struct ment *e;
    size_t n, cap;
};

static uint64_t rng = 88172645463325252ull;

static uint64_t
rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void
model_add(struct model *m, struct ment *x)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 64;
        m->e = realloc(m->e, m->cap * sizeof(*m->e));
    }
    m->e[m->n++] = *x;
}

struct cmp_ctx {
    const struct ment *want;
    size_t i;
};

static void
check_fv(void *arg, struct rv_str f, struct rv_str v)
{
    struct cmp_ctx *x = arg;
    cr_assert_lt(x->i, x->want->nf);
    cr_assert_eq(f.len, strlen(x->want->f[x->i]));
    cr_assert(memcmp(f.p, x->want->f[x->i], f.len) == 0);
    cr_assert_eq(v.len, strlen(x->want->v[x->i]));
    cr_assert(memcmp(v.p, x->want->v[x->i], v.len) == 0);
    x->i++;
}

/* The stream's entries in [a, b] match the model's, in either direction. */
static void
check_range(const struct stream *s, const struct model *m, struct sid a, struct sid b, bool rev)
{
    struct stream_it it;
    size_t lo = 0, hi;
    while (lo < m->n && sid_cmp(m->e[lo].id, a) < 0) {
        lo++;
    }
    hi = lo;
    while (hi < m->n && sid_cmp(m->e[hi].id, b) <= 0) {
        hi++;
    }
    stream_it_init(&it, s, a, b, rev);
    for (size_t k = 0; k < hi - lo; k++) {
        const struct ment *w = &m->e[rev ? hi - 1 - k : lo + k];
        cr_assert(stream_it_next(&it), "missing entry %zu of %zu", k, hi - lo);
        cr_assert_eq(sid_cmp(it.id, w->id), 0, "id %llu-%llu want %llu-%llu",
                     (unsigned long long)it.id.ms, (unsigned long long)it.id.seq,
                     (unsigned long long)w->id.ms, (unsigned long long)w->id.seq);
        cr_assert_eq(it.nf, w->nf);
        struct cmp_ctx x = { w, 0 };
        stream_it_fields(&it, check_fv, &x);
        cr_assert_eq(x.i, w->nf);
    }
    cr_assert(!stream_it_next(&it), "extra entry");
}

static struct sid
random_id_near(const struct model *m, struct sid last)
{
    if (m->n > 0 && rnd() % 2) {
        struct sid id = m->e[rnd() % m->n].id;
        if (rnd() % 3 == 0) {
            id.seq += rnd() % 3;
        }
        return id;
    }
    return (struct sid){ rnd() % (last.ms + 2), rnd() % 4 };
}

static void
random_entry(struct ment *x, struct sid id)
{
    static const char *const names[] = { "f", "g", "name", "x" };
    x->id = id;
    x->nf = 1 + rnd() % MAXF;
    bool same = rnd() % 4 != 0;
    for (size_t i = 0; i < x->nf; i++) {
        snprintf(x->f[i], sizeof(x->f[i]), "%s", same ? names[i] : names[rnd() % 4]);
        size_t len = rnd() % 8 == 0 ? rnd() % 399 : rnd() % 6;
        for (size_t k = 0; k < len; k++) {
            x->v[i][k] = (char)('a' + rnd() % 26);
        }
        x->v[i][len] = '\0';
    }
}

static void
append(struct stream *s, struct model *m, struct sid id)
{
    struct ment x;
    struct rv_str fv[2 * MAXF];
    random_entry(&x, id);
    for (size_t i = 0; i < x.nf; i++) {
        fv[2 * i] = (struct rv_str){ x.f[i], strlen(x.f[i]) };
        fv[2 * i + 1] = (struct rv_str){ x.v[i], strlen(x.v[i]) };
    }
    stream_append(s, id, x.nf, fv);
    model_add(m, &x);
}

Test(stream, random_ops_against_model)
{
    struct stream *s = stream_create();
    struct model m = { 0 };
    struct sid last = { 1, 0 };
    const struct sid lo = { 0, 0 }, hi = { UINT64_MAX, UINT64_MAX };

    for (int step = 0; step < 20000; step++) {
        unsigned op = (unsigned)(rnd() % 100);
        if (op < 55) {
            last.ms += rnd() % 3;
            last.seq = rnd() % 2 ? last.seq + 1 : 0;
            if (sid_cmp(last, stream_last_id(s)) <= 0) {
                last = stream_last_id(s);
                last.seq++;
            }
            append(s, &m, last);
        } else if (op < 75) {
            struct sid id = random_id_near(&m, last);
            size_t k = 0;
            while (k < m.n && sid_cmp(m.e[k].id, id) < 0) {
                k++;
            }
            bool present = k < m.n && sid_cmp(m.e[k].id, id) == 0;
            cr_assert_eq(stream_delete(s, id), present);
            if (present) {
                memmove(&m.e[k], &m.e[k + 1], (m.n - k - 1) * sizeof(*m.e));
                m.n--;
            }
        } else if (op < 95) {
            struct sid a = random_id_near(&m, last), b = random_id_near(&m, last);
            if (sid_cmp(a, b) > 0) {
                struct sid t = a;
                a = b;
                b = t;
            }
            check_range(s, &m, a, b, rnd() % 2);
        } else {
            bool approx = rnd() % 2;
            uint64_t before = stream_len(s), removed;
            if (rnd() % 2) {
                uint64_t maxlen = m.n ? rnd() % (m.n + 1) : 0;
                removed = stream_trim_maxlen(s, maxlen, approx, approx ? rnd() % 300 : 0);
                cr_assert(approx ? stream_len(s) >= maxlen || before <= maxlen
                                 : stream_len(s) == (before < maxlen ? before : maxlen));
            } else {
                struct sid minid = random_id_near(&m, last);
                removed = stream_trim_minid(s, minid, approx, 0);
                if (!approx) {
                    cr_assert(stream_len(s) == 0 || sid_cmp(stream_first_id(s), minid) >= 0);
                }
            }
            cr_assert_eq(before - removed, stream_len(s));
            /* trims remove a prefix */
            size_t drop = m.n - (size_t)stream_len(s);
            memmove(m.e, m.e + drop, (m.n - drop) * sizeof(*m.e));
            m.n -= drop;
        }
        cr_assert_eq(stream_len(s), m.n);
        if (step % 500 == 0) {
            check_range(s, &m, lo, hi, false);
            check_range(s, &m, lo, hi, true);
            struct stream *d = stream_dup(s);
            check_range(d, &m, lo, hi, false);
            stream_free(d);
        }
    }
    check_range(s, &m, lo, hi, false);
    stream_free(s);
    free(m.e);
}

Test(stream, ids_and_metadata)
{
    char b[STREAM_ID_MAX];
    struct sid id = { UINT64_MAX, UINT64_MAX };
    cr_assert_eq(sid_fmt(id, b), 41);
    cr_assert(!sid_incr(&id));
    id = (struct sid){ 3, UINT64_MAX };
    cr_assert(sid_incr(&id) && id.ms == 4 && id.seq == 0);
    cr_assert(sid_decr(&id) && id.ms == 3 && id.seq == UINT64_MAX);
    id = (struct sid){ 0, 0 };
    cr_assert(!sid_decr(&id));

    struct stream *s = stream_create();
    struct rv_str fv[2] = { { "f", 1 }, { "v", 1 } };
    for (uint64_t i = 1; i <= 250; i++) {
        stream_append(s, (struct sid){ i, 0 }, 1, fv);
    }
    cr_assert_eq(stream_nodes(s), 3); /* 100 entries a node */
    cr_assert_eq(stream_entries_added(s), 250);
    cr_assert(stream_delete(s, (struct sid){ 7, 0 }));
    cr_assert(!stream_delete(s, (struct sid){ 7, 0 }));
    cr_assert_eq(stream_max_deleted(s).ms, 7);
    cr_assert_eq(stream_last_id(s).ms, 250);
    cr_assert_eq(stream_first_id(s).ms, 1);
    /* approximate: whole nodes only; the first node has 99 live entries */
    cr_assert_eq(stream_trim_maxlen(s, 200, true, 0), 0);
    cr_assert_eq(stream_trim_maxlen(s, 150, true, 0), 99);
    cr_assert_eq(stream_trim_maxlen(s, 10, true, 50), 0); /* LIMIT below a node */
    cr_assert_eq(stream_trim_maxlen(s, 10, false, 0), 140);
    cr_assert_eq(stream_first_id(s).ms, 241);
    cr_assert_eq(stream_trim_minid(s, (struct sid){ 245, 0 }, false, 0), 4);
    cr_assert_eq(stream_len(s), 6);
    /* small entries stay small: about 6 bytes each here */
    struct stream *big = stream_create();
    for (uint64_t i = 1; i <= 10000; i++) {
        stream_append(big, (struct sid){ 1700000000000 + i / 3, i % 3 }, 1, fv);
    }
    cr_assert_lt(stream_mem(big), 10000 * 10);
    stream_free(big);
    stream_free(s);
}
