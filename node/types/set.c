/* node/types/set.c: the set object (struct sobj) and its obj_ops. See set.h
 * for the encodings; the commands are in node/commands/t_set.c. */
#include "node/types/set.h"

#include "base/mem.h"
#include "node/keyspace/dict.h"
#include "node/keyspace/ks.h"
#include "node/types/hash.h"
#include "node/types/intset.h"

#include <stdlib.h>
#include <string.h>

static void
sbig_free(void *v)
{
    struct sbig *b = v;
    if (b == NULL) {
        return;
    }
    if (b->enc == SENC_IS) {
        intset_destroy(b->is);
    } else {
        dict_destroy(b->d, NULL);
    }
    rv_free(b);
}

static struct sbig *
sbig_create(uint32_t enc)
{
    struct sbig *b = rv_malloc(sizeof(*b));
    b->enc = enc;
    if (enc == SENC_IS) {
        b->is = intset_create();
    } else {
        b->d = dict_create_kind(DICT_KEYONLY);
    }
    return b;
}

void
sobj_bind(struct sobj *s, struct ks *ks, struct ks_entry *e)
{
    if (ks_entry_inl(e)) {
        size_t n;
        s->enc = SENC_PK;
        s->pk = (struct hpk_ref){ (struct hpk *)(void *)ks_inl_val(e, &n), ks, e };
        s->b = NULL;
    } else {
        s->b = ks_entry_ptr(e);
        s->enc = s->b->enc;
        s->pk = (struct hpk_ref){ NULL, ks, e };
    }
}

void
sobj_store(struct sobj *s, struct ks *ks, const char *key, size_t klen)
{
    if (s->enc == SENC_PK) {
        ks_set_inl(ks, key, klen, KS_SET, s->pk.p, hpk_bytes(s->pk.p), KS_NO_EXPIRE);
        hpk_free(s->pk.p);
    } else {
        ks_set_ptr(ks, key, klen, KS_SET, s->b, sbig_free, KS_NO_EXPIRE);
    }
    rv_free(s);
}

static inline bool
as_int(const char *m, size_t n, int64_t *v)
{
    return n <= 20 && ks_str_parse_int(m, n, v);
}

struct sobj *
sobj_create(const char *m, size_t n, size_t hint, const struct sobj_lim *lim)
{
    struct sobj *s = rv_malloc(sizeof(*s));
    int64_t v;
    s->pk = (struct hpk_ref){ NULL, NULL, NULL };
    s->b = NULL;
    if (as_int(m, n, &v) && hint <= lim->max_intset) {
        s->enc = SENC_IS;
        s->b = sbig_create(SENC_IS);
    } else if (hint <= lim->max_pk_entries) {
        s->enc = SENC_PK;
        s->pk.p = hpk_create();
    } else {
        s->enc = SENC_HT;
        s->b = sbig_create(SENC_HT);
        dict_reserve(s->b->d, hint);
    }
    return s;
}

void
sobj_free(struct sobj *s)
{
    if (s == NULL) {
        return;
    }
    if (s->enc == SENC_PK) {
        hpk_free(s->pk.p);
    } else {
        sbig_free(s->b);
    }
    rv_free(s);
}

size_t
sobj_len(const struct sobj *s)
{
    switch (s->enc) {
    case SENC_IS: return intset_len(s->b->is);
    case SENC_PK: return hpk_count(s->pk.p);
    default: return dict_size(s->b->d);
    }
}

const char *
sobj_encoding(const struct sobj *s)
{
    switch (s->enc) {
    case SENC_IS: return "intset";
    case SENC_PK: return "listpack";
    default: return "hashtable";
    }
}

struct svisit_dict {
    svisit_fn *fn;
    void *arg;
};

static void
svisit_entry(void *arg, struct dict_entry *e)
{
    struct svisit_dict *a = arg;
    a->fn(a->arg, dict_key(e));
}

void
sobj_foreach(const struct sobj *s, svisit_fn *fn, void *arg)
{
    char buf[HPK_SCRATCH];
    struct rv_str m;
    if (s->enc == SENC_IS) {
        for (size_t i = 0; i < intset_len(s->b->is); i++) {
            m.len = resp_ll2str(buf, intset_get(s->b->is, i));
            m.p = buf;
            fn(arg, m);
        }
    } else if (s->enc == SENC_PK) {
        size_t off = 0;
        while (off < hpk_end(s->pk.p)) {
            off = hpk_get(s->pk.p, off, buf, &m);
            fn(arg, m);
        }
    } else {
        struct svisit_dict a = { fn, arg };
        dict_foreach(s->b->d, svisit_entry, &a);
    }
}

static void
conv_add_pk(void *arg, struct rv_str m)
{
    hpk_append(arg, m.p, m.len);
}

/* The key s is bound to (a view into its entry). */
static struct rv_str
sobj_key(const struct sobj *s)
{
    return ks_entry_key(s->pk.e);
}

static void
conv_add_ht(void *arg, struct rv_str m)
{
    dict_add(arg, m.p, m.len, NULL);
}

/* Intset to listpack or hashtable, listpack to hashtable. A bound set is
 * re-stored: inline for the listpack, a pointer for the hashtable. */
static void
sobj_convert(struct sobj *s, int enc)
{
    struct ks *ks = s->pk.ks;
    if (enc == SENC_PK) {
        struct hpk_ref r = { hpk_create(), NULL, NULL };
        sobj_foreach(s, conv_add_pk, &r);
        if (ks != NULL) {
            struct rv_str key = sobj_key(s);
            /* Replacing the entry frees the intset. */
            r.e = ks_set_inl(ks, key.p, key.len, KS_SET, r.p, hpk_bytes(r.p),
                             ks_entry_expire(s->pk.e));
            hpk_free(r.p);
            r.p = (struct hpk *)(void *)ks_inl_val(r.e, &(size_t){ 0 });
            r.ks = ks;
        } else {
            sbig_free(s->b);
        }
        s->pk = r;
        s->b = NULL;
    } else {
        struct dict *d = dict_create_kind(DICT_KEYONLY);
        dict_reserve(d, sobj_len(s) + 1);
        sobj_foreach(s, conv_add_ht, d);
        if (s->enc == SENC_IS) {
            intset_destroy(s->b->is);
            s->b->enc = SENC_HT;
            s->b->d = d;
        } else {
            struct sbig *b = rv_malloc(sizeof(*b));
            b->enc = SENC_HT;
            b->d = d;
            if (ks != NULL) {
                struct rv_str key = sobj_key(s);
                s->pk.e = ks_set_ptr(ks, key.p, key.len, KS_SET, b, sbig_free,
                                     ks_entry_expire(s->pk.e));
            } else {
                hpk_free(s->pk.p);
            }
            s->pk.p = NULL;
            s->b = b;
        }
    }
    s->enc = (uint32_t)enc;
}

bool
sobj_add(struct sobj *s, const char *m, size_t n, const struct sobj_lim *lim)
{
    int64_t v;
    bool created;

    if (s->enc == SENC_IS) {
        if (as_int(m, n, &v)) {
            if (!intset_add(&s->b->is, v)) {
                return false;
            }
            if (intset_len(s->b->is) > lim->max_intset) {
                sobj_convert(s, SENC_HT);
            }
            return true;
        }
        if (intset_len(s->b->is) < lim->max_pk_entries && n <= lim->max_pk_value &&
            intset_max_strlen(s->b->is) <= lim->max_pk_value) {
            sobj_convert(s, SENC_PK);
        } else {
            sobj_convert(s, SENC_HT);
        }
    }
    if (s->enc == SENC_PK) {
        if (hpk_find(s->pk.p, m, n, 1) != HPK_NONE) {
            return false;
        }
        if (hpk_count(s->pk.p) < lim->max_pk_entries && n <= lim->max_pk_value &&
            hpk_end(s->pk.p) + n <= HPK_SAFE_BYTES) {
            hpk_append(&s->pk, m, n);
            return true;
        }
        sobj_convert(s, SENC_HT);
    }
    dict_add(s->b->d, m, n, &created);
    return created;
}

bool
sobj_has(const struct sobj *s, const char *m, size_t n)
{
    int64_t v;
    switch (s->enc) {
    case SENC_IS: return as_int(m, n, &v) && intset_find(s->b->is, v);
    case SENC_PK: return hpk_find(s->pk.p, m, n, 1) != HPK_NONE;
    default: return dict_find(s->b->d, m, n) != NULL;
    }
}

bool
sobj_rem(struct sobj *s, const char *m, size_t n)
{
    int64_t v;
    size_t off;
    switch (s->enc) {
    case SENC_IS: return as_int(m, n, &v) && intset_remove(&s->b->is, v);
    case SENC_PK:
        if ((off = hpk_find(s->pk.p, m, n, 1)) == HPK_NONE) {
            return false;
        }
        hpk_delete(&s->pk, off, 1);
        return true;
    default: return dict_delete(s->b->d, m, n, NULL);
    }
}

struct rv_str
sobj_random(const struct sobj *s, uint64_t *rs, char scratch[HPK_SCRATCH])
{
    struct rv_str m;
    if (s->enc == SENC_IS) {
        size_t k = hash_rng_below(rs, intset_len(s->b->is));
        m.len = resp_ll2str(scratch, intset_get(s->b->is, k));
        m.p = scratch;
    } else if (s->enc == SENC_PK) {
        size_t k = hash_rng_below(rs, hpk_count(s->pk.p)), off = 0;
        for (size_t i = 0; i < k; i++) {
            off = hpk_next(s->pk.p, off);
        }
        hpk_get(s->pk.p, off, scratch, &m);
    } else {
        m = dict_key(dict_random(s->b->d, hash_rng_next(rs)));
    }
    return m;
}

size_t
sobj_mem(const struct sobj *s)
{
    switch (s->enc) {
    case SENC_IS: return sizeof(*s->b) + intset_bytes(s->b->is);
    case SENC_PK: return s->pk.e != NULL ? 0 : sizeof(*s) + hpk_bytes(s->pk.p);
    default: return sizeof(*s->b) + dict_mem(s->b->d);
    }
}

static const char *
set_encoding_op(const struct ks_entry *e)
{
    struct sobj s;
    sobj_bind(&s, NULL, (struct ks_entry *)(uintptr_t)e);
    return sobj_encoding(&s);
}

/* Bytes outside the entry: none for the inline listpack. */
static size_t
set_mem_op(const struct ks_entry *e)
{
    struct sobj s;
    sobj_bind(&s, NULL, (struct ks_entry *)(uintptr_t)e);
    return s.enc == SENC_PK ? 0 : sobj_mem(&s);
}

static size_t
set_effort_op(const struct ks_entry *e)
{
    const struct sbig *b = ks_entry_ptr(e);
    return b->enc == SENC_IS ? 1 : dict_size(b->d);
}

static void *
set_dup_op(const struct ks_entry *e)
{
    const struct sbig *b = ks_entry_ptr(e);
    struct sbig *c = rv_malloc(sizeof(*c));
    c->enc = b->enc;
    if (b->enc == SENC_IS) {
        c->is = intset_dup(b->is);
    } else {
        c->d = dict_dup(b->d);
    }
    return c;
}

static void
semit_member(void *arg, struct dict_entry *e)
{
    struct obj_emitter *b = arg;
    obj_emit_arg(b, dict_key(e));
    obj_emit_elem(b);
}

/* SADD key m1 .. mN. */
static void
sobj_emit(const struct ks_entry *e, obj_emit_fn *fn, void *arg)
{
    struct sobj set, *s = &set;
    struct obj_emitter b;

    sobj_bind(s, NULL, (struct ks_entry *)(uintptr_t)e);
    obj_emit_init(&b, fn, arg, "SADD", ks_entry_key(e));
    if (s->enc == SENC_IS) {
        for (size_t i = 0; i < intset_len(s->b->is); i++) {
            obj_emit_int(&b, intset_get(s->b->is, i));
            obj_emit_elem(&b);
        }
    } else if (s->enc == SENC_PK) {
        size_t off = 0;
        while (off < hpk_end(s->pk.p)) {
            struct rv_str m;
            off = hpk_get(s->pk.p, off, obj_emit_scratch(&b), &m);
            obj_emit_arg(&b, m);
            obj_emit_elem(&b);
        }
    } else {
        dict_foreach(s->b->d, semit_member, &b);
    }
    obj_emit_flush(&b);
}

const struct obj_ops obj_set_ops = {
    .type_name = "set",
    .encoding = set_encoding_op,
    .mem = set_mem_op,
    .dup = set_dup_op,
    .free = sbig_free,
    .emit = sobj_emit,
    .effort = set_effort_op,
};
