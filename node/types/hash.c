/* node/types/hash.c: the hash object (struct hobj), its obj_ops, field
 * deadlines and the index of keys with timed fields. See hash.h for the
 * encodings; the commands are in node/commands/t_hash.c.
 *
 * A hashtable hash is a small struct hht the keyspace points to; it never
 * moves while the key exists, so converting or growing only changes what is
 * inside. A listpack hash lives inline in its entry (hpk.h). */
#include "node/types/hash.h"

#include "base/clock.h"
#include "base/mem.h"
#include "node/keyspace/dict.h"
#include "node/keyspace/ks.h"

#include <string.h>

static void
hht_free(void *v)
{
    struct hht *t = v;
    if (t == NULL) {
        return;
    }
    dict_destroy(t->d, NULL);
    if (t->ttl != NULL) {
        dict_destroy(t->ttl, NULL);
    }
    rv_free(t);
}

struct hobj *
hobj_create(void)
{
    struct hobj *h = rv_malloc(sizeof(*h));
    h->enc = HENC_PK;
    h->pk = (struct hpk_ref){ hpk_create(), NULL, NULL };
    h->ht = NULL;
    return h;
}

void
hobj_free(struct hobj *h)
{
    if (h == NULL) {
        return;
    }
    if (h->enc == HENC_PK) {
        hpk_free(h->pk.p);
    } else {
        hht_free(h->ht);
    }
    rv_free(h);
}

void
hobj_bind(struct hobj *h, struct ks *ks, struct ks_entry *e)
{
    if (ks_entry_inl(e)) {
        size_t n;
        h->enc = HENC_PK;
        h->pk = (struct hpk_ref){ (struct hpk *)(void *)ks_inl_val(e, &n), ks, e };
        h->ht = NULL;
    } else {
        h->enc = HENC_HT;
        h->pk = (struct hpk_ref){ NULL, NULL, NULL };
        h->ht = ks_entry_ptr(e);
    }
}

void
hobj_store(struct hobj *h, struct ks *ks, const char *key, size_t klen)
{
    if (h->enc == HENC_PK) {
        ks_set_inl(ks, key, klen, KS_HASH, h->pk.p, hpk_bytes(h->pk.p), KS_NO_EXPIRE);
        hpk_free(h->pk.p);
    } else {
        ks_set_ptr(ks, key, klen, KS_HASH, h->ht, hht_free, KS_NO_EXPIRE);
    }
    rv_free(h);
}

size_t
hobj_len(const struct hobj *h)
{
    return h->enc == HENC_PK ? hpk_count(h->pk.p) / 2 : dict_size(h->ht->d);
}

const char *
hobj_encoding(const struct hobj *h)
{
    return h->enc == HENC_PK ? "listpack" : "hashtable";
}

bool
hobj_ttl_clear(struct hobj *h, const char *f, size_t fl)
{
    struct hht *t = h->ht;
    bool had = dict_delete(t->ttl, f, fl, NULL);
    if (dict_size(t->ttl) == 0) {
        dict_destroy(t->ttl, NULL);
        t->ttl = NULL;
    }
    return had;
}

void
hobj_convert(struct hobj *h)
{
    struct hpk *pk = h->pk.p;
    struct hht *t = rv_malloc(sizeof(*t));
    char fs[HPK_SCRATCH], vs[HPK_SCRATCH];
    size_t off = 0;

    t->d = dict_create_kind(DICT_BYTES);
    t->ttl = NULL;
    dict_reserve(t->d, hpk_count(pk) / 2 + 1);
    while (off < hpk_end(pk)) {
        struct rv_str f, v;
        off = hpk_get(pk, off, fs, &f);
        off = hpk_get(pk, off, vs, &v);
        dict_put_bytes(t->d, f.p, f.len, v.p, v.len, NULL);
    }
    if (h->pk.ks != NULL) {
        struct rv_str key = ks_entry_key(h->pk.e);
        ks_set_ptr(h->pk.ks, key.p, key.len, KS_HASH, t, hht_free, ks_entry_expire(h->pk.e));
    } else {
        hpk_free(pk);
    }
    h->enc = HENC_HT;
    h->pk = (struct hpk_ref){ NULL, NULL, NULL };
    h->ht = t;
}

int
hobj_set(struct hobj *h, const char *f, size_t fl, const char *v, size_t vl,
         const struct hobj_lim *lim)
{
    bool created;
    if (h->enc == HENC_PK) {
        size_t off;
        if (fl > lim->max_value || vl > lim->max_value ||
            hpk_end(h->pk.p) + fl + vl > HPK_SAFE_BYTES) {
            hobj_convert(h);
        } else if ((off = hpk_find(h->pk.p, f, fl, 2)) != HPK_NONE) {
            hpk_replace(&h->pk, hpk_next(h->pk.p, off), v, vl);
            return 0;
        } else if (hpk_count(h->pk.p) / 2 + 1 > lim->max_entries) {
            hobj_convert(h);
        } else {
            hpk_append(&h->pk, f, fl);
            hpk_append(&h->pk, v, vl);
            return 1;
        }
    }
    dict_put_bytes(h->ht->d, f, fl, v, vl, &created);
    if (!created && h->ht->ttl != NULL) {
        hobj_ttl_clear(h, f, fl); /* overwriting a field drops its TTL */
    }
    return created ? 1 : 0;
}

bool
hobj_get(const struct hobj *h, const char *f, size_t fl, char scratch[HPK_SCRATCH],
         struct rv_str *out)
{
    if (h->enc == HENC_PK) {
        size_t off = hpk_find(h->pk.p, f, fl, 2);
        if (off == HPK_NONE) {
            return false;
        }
        hpk_get(h->pk.p, hpk_next(h->pk.p, off), scratch, out);
        return true;
    } else {
        struct dict_entry *e = dict_find(h->ht->d, f, fl);
        if (e == NULL) {
            return false;
        }
        *out = dict_val_bytes(e);
        return true;
    }
}

bool
hobj_del(struct hobj *h, const char *f, size_t fl)
{
    if (h->enc == HENC_PK) {
        size_t off = hpk_find(h->pk.p, f, fl, 2);
        if (off == HPK_NONE) {
            return false;
        }
        hpk_delete(&h->pk, off, 2);
        return true;
    }
    if (!dict_delete(h->ht->d, f, fl, NULL)) {
        return false;
    }
    if (h->ht->ttl != NULL) {
        hobj_ttl_clear(h, f, fl);
    }
    return true;
}

struct hvisit_dict {
    hvisit_fn *fn;
    void *arg;
};

static void
hvisit_entry(void *arg, struct dict_entry *e)
{
    struct hvisit_dict *a = arg;
    a->fn(a->arg, dict_key(e), dict_val_bytes(e));
}

void
hobj_foreach(struct hobj *h, hvisit_fn *fn, void *arg)
{
    if (h->enc == HENC_PK) {
        char fs[HPK_SCRATCH], vs[HPK_SCRATCH];
        size_t off = 0;
        while (off < hpk_end(h->pk.p)) {
            struct rv_str f, v;
            off = hpk_get(h->pk.p, off, fs, &f);
            off = hpk_get(h->pk.p, off, vs, &v);
            fn(arg, f, v);
        }
    } else {
        struct hvisit_dict a = { fn, arg };
        dict_foreach(h->ht->d, hvisit_entry, &a);
    }
}

size_t
hobj_mem(const struct hobj *h)
{
    if (h->enc == HENC_PK) {
        return h->pk.e != NULL ? 0 : sizeof(*h) + hpk_bytes(h->pk.p);
    }
    return sizeof(*h->ht) + dict_mem(h->ht->d) + (h->ht->ttl != NULL ? dict_mem(h->ht->ttl) : 0);
}

static const char *
hash_encoding_op(const struct ks_entry *e)
{
    return ks_entry_inl(e) ? "listpack" : "hashtable";
}

/* Bytes outside the entry: none for the inline listpack. */
static size_t
hash_mem_op(const struct ks_entry *e)
{
    struct hobj h;
    if (ks_entry_inl(e)) {
        return 0;
    }
    hobj_bind(&h, NULL, (struct ks_entry *)(uintptr_t)e);
    return hobj_mem(&h);
}

static size_t
hash_effort_op(const struct ks_entry *e)
{
    const struct hht *t = ks_entry_ptr(e);
    return dict_size(t->d) + (t->ttl != NULL ? dict_size(t->ttl) : 0);
}

static void *
hash_dup_op(const struct ks_entry *e)
{
    const struct hht *t = ks_entry_ptr(e);
    struct hht *c = rv_malloc(sizeof(*c));
    c->d = dict_dup(t->d);
    c->ttl = t->ttl != NULL ? dict_dup(t->ttl) : NULL;
    return c;
}

struct hemit {
    obj_emit_fn *fn;
    void *arg;
    struct rv_str key;
};

static void
hemit_pair(void *arg, struct dict_entry *e)
{
    struct obj_emitter *b = arg;
    obj_emit_arg(b, dict_key(e));
    obj_emit_arg(b, dict_val_bytes(e));
    obj_emit_elem(b);
}

static void
hemit_ttl(void *arg, struct dict_entry *e)
{
    struct hemit *x = arg;
    char ms[24];
    struct rv_str av[6] = {
        { "HPEXPIREAT", 10 }, x->key,     { ms, resp_ll2str(ms, (int64_t)dict_val(e)) },
        { "FIELDS", 6 },      { "1", 1 }, dict_key(e),
    };
    x->fn(x->arg, 6, av);
}

/* HSET key f v ..., then HPEXPIREAT key <unix-ms> FIELDS 1 f per timed field. */
static void
hash_emit_op(const struct ks_entry *e, obj_emit_fn *fn, void *arg)
{
    struct hobj h;
    struct hemit x = { fn, arg, ks_entry_key(e) };
    struct obj_emitter b;

    hobj_bind(&h, NULL, (struct ks_entry *)(uintptr_t)e);
    obj_emit_init(&b, fn, arg, "HSET", x.key);
    if (h.enc == HENC_PK) {
        size_t off = 0;
        while (off < hpk_end(h.pk.p)) {
            struct rv_str f, v;
            off = hpk_get(h.pk.p, off, obj_emit_scratch(&b), &f);
            obj_emit_arg(&b, f);
            off = hpk_get(h.pk.p, off, obj_emit_scratch(&b), &v);
            obj_emit_arg(&b, v);
            obj_emit_elem(&b);
        }
    } else {
        dict_foreach(h.ht->d, hemit_pair, &b);
    }
    obj_emit_flush(&b);
    if (hobj_ttl(&h) != NULL) {
        dict_foreach(h.ht->ttl, hemit_ttl, &x);
    }
}

const struct obj_ops obj_hash_ops = {
    .type_name = "hash",
    .encoding = hash_encoding_op,
    .mem = hash_mem_op,
    .dup = hash_dup_op,
    .free = hht_free,
    .emit = hash_emit_op,
    .effort = hash_effort_op,
};

/* ------------------------------------------------ field expiration (7.4) */

/* hobj_reap collects the due names first: deletes move dict entries. */
struct reap_acc {
    int64_t now;
    struct rv_str *v;
    size_t n, cap;
};

static void
reap_collect(void *arg, struct dict_entry *e)
{
    struct reap_acc *a = arg;
    if ((int64_t)dict_val(e) <= a->now) {
        if (a->n == a->cap) {
            a->cap = a->cap ? a->cap * 2 : 8;
            a->v = rv_realloc(a->v, a->cap * sizeof(*a->v));
        }
        struct rv_str k = dict_key(e);
        char *copy = rv_malloc(k.len + 1);
        memcpy(copy, k.p, k.len);
        a->v[a->n].p = copy;
        a->v[a->n++].len = k.len;
    }
}

size_t
hobj_reap(struct hobj *h, int64_t now)
{
    struct reap_acc a = { now, NULL, 0, 0 };
    size_t i;

    if (hobj_ttl(h) == NULL) {
        return 0;
    }
    dict_foreach(h->ht->ttl, reap_collect, &a);
    for (i = 0; i < a.n; i++) { /* names are copies: the deletes move entries */
        dict_delete(h->ht->d, a.v[i].p, a.v[i].len, NULL);
        if (h->ht->ttl != NULL) {
            hobj_ttl_clear(h, a.v[i].p, a.v[i].len);
        }
        rv_free((void *)a.v[i].p);
    }
    rv_free(a.v);
    return a.n;
}

void
hobj_set_deadline(struct hobj *h, const char *f, size_t fl, int64_t when)
{
    if (h->enc == HENC_PK) {
        hobj_convert(h);
    }
    if (h->ht->ttl == NULL) {
        h->ht->ttl = dict_create_kind(DICT_U64);
    }
    dict_set_val(dict_add(h->ht->ttl, f, fl, NULL), (uint64_t)when);
}

int64_t
hobj_field_deadline(struct hobj *h, const char *f, size_t fl)
{
    struct dict_entry *e;
    if (hobj_ttl(h) == NULL || (e = dict_find(h->ht->ttl, f, fl)) == NULL) {
        return -1;
    }
    return (int64_t)dict_val(e);
}

/* The shard's registry of hash keys that have timed fields, for the active
 * sweep. Entries go stale harmlessly: the sweep drops an entry whose key is
 * gone, is no longer a hash, or has no timed field left. */
struct hash_ttl_index {
    struct dict *keys; /* key-only: key names */
    uint64_t cursor;   /* where the sweep goes on */
};

void
hash_ttl_index_destroy(struct hash_ttl_index *x)
{
    if (x == NULL) {
        return;
    }
    dict_destroy(x->keys, NULL);
    rv_free(x);
}

void
hash_ttl_index_add(struct hash_ttl_index **xp, struct rv_str key)
{
    if (*xp == NULL) {
        *xp = rv_calloc(1, sizeof(**xp));
        (*xp)->keys = dict_create_kind(DICT_KEYONLY);
    }
    dict_add((*xp)->keys, key.p, key.len, NULL);
}

bool
hash_reap_key(struct ks *ks, struct rv_str key, struct hobj *h, int64_t now, size_t *reaped)
{
    *reaped = hobj_ttl(h) == NULL ? 0 : hobj_reap(h, now);
    if (*reaped == 0) {
        return false;
    }
    if (hobj_len(h) == 0) {
        ks_delete(ks, key.p, key.len);
        return true;
    }
    return false;
}

struct hfe_batch {
    struct rv_str v[32];
    size_t n;
};

static void
hfe_collect(void *arg, struct dict_entry *e)
{
    struct hfe_batch *b = arg;
    if (b->n < sizeof(b->v) / sizeof(b->v[0])) {
        b->v[b->n++] = dict_key(e);
    }
}

void
hash_ttl_index_sweep(struct hash_ttl_index *x, struct ks *ks, int64_t now, uint64_t budget_us,
                     hash_reaped_fn *fn, void *arg)
{
    uint64_t start = clock_mono_us();
    size_t rounds = 0;

    if (x == NULL || dict_size(x->keys) == 0 || budget_us == 0) {
        return;
    }
    do {
        struct hfe_batch b = { .n = 0 };
        char *names[32];
        size_t lens[32], i;

        x->cursor = dict_scan(x->keys, x->cursor, 4, hfe_collect, &b);
        for (i = 0; i < b.n; i++) { /* copy: deletes below move the entries */
            lens[i] = b.v[i].len;
            names[i] = rv_malloc(lens[i]);
            memcpy(names[i], b.v[i].p, lens[i]);
        }
        for (i = 0; i < b.n; i++) {
            struct rv_str key = { names[i], lens[i] };
            struct ks_entry *e = ks_lookup(ks, key.p, key.len, now);
            bool keep = false;
            if (e != NULL && ks_entry_type(e) == KS_HASH) {
                struct hobj h;
                size_t reaped;
                hobj_bind(&h, ks, e);
                bool gone = hash_reap_key(ks, key, &h, now, &reaped);
                keep = !gone && hobj_ttl(&h) != NULL;
                if (reaped > 0 && fn != NULL) {
                    fn(arg, key, gone);
                }
            }
            if (!keep) {
                dict_delete(x->keys, names[i], lens[i], NULL);
            }
            rv_free(names[i]);
        }
        rounds++;
    } while (x->cursor != 0 && clock_mono_us() - start < budget_us && rounds < 256);
}

/* ------------------------------------------------------- random draws */

uint64_t
hash_rng_next(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

size_t
hash_rng_below(uint64_t *x, size_t n)
{
    return (size_t)(((unsigned __int128)hash_rng_next(x) * n) >> 64);
}
