/* node/commands/t_set.c: the set type. See t_set.h for the encodings.
 *
 * A set is a 16-byte struct sobj the keyspace points to; it never moves while
 * the key exists, so growing or converting its storage only changes the
 * pointer inside. Multi-key operations (SINTER, SUNION, SDIFF and their STORE
 * forms) build the result as a new set, then reply with it or store it, so a
 * destination that is also a source is read before it is replaced. */
#include "node/commands/t_set.h"

#include "base/glob.h"
#include "base/mem.h"
#include "node/core/conn.h"
#include "node/keyspace/dict.h"
#include "node/types/intset.h"
#include "node/keyspace/ks.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/commands/t_hash.h"

#include <stdlib.h>
#include <string.h>

enum { SENC_IS = 0, SENC_PK = 1, SENC_HT = 2 };

/* What the keyspace points to for the intset and hashtable encodings (a
 * listpack set is stored inline in its entry: the hpk bytes). */
struct sbig {
    uint32_t enc;
    union {
        struct intset *is;
        struct dict *d;   /* DICT_KEYONLY */
    };
};

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

typedef void svisit_fn(void *arg, struct rv_str m);

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

/* Every member (integers formatted); fn must not modify s. */
static void
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
            r.e = ks_set_inl(ks, key.p, key.len, KS_SET, r.p, hpk_bytes(r.p), ks_entry_expire(s->pk.e));
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
                s->pk.e = ks_set_ptr(ks, key.p, key.len, KS_SET, b, sbig_free, ks_entry_expire(s->pk.e));
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

/* A uniformly chosen member of a non-empty set (view valid until s changes). */
static struct rv_str
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
};

/* --------------------------------------------------------------- commands */

static void
set_lim(struct conn *c, struct sobj_lim *lim)
{
    const struct cfg *cfg = shard_cfg(c->shard);
    lim->max_intset = cfg->set_max_intset_entries > 0 ? (size_t)cfg->set_max_intset_entries : 0;
    lim->max_pk_entries = cfg->set_max_listpack_entries > 0 ? (size_t)cfg->set_max_listpack_entries : 0;
    lim->max_pk_value = cfg->set_max_listpack_value > 0 ? (size_t)cfg->set_max_listpack_value : 0;
}

/* Lookup; read lookups count hits/misses. NULL when missing or of another
 * type; in the latter case *err is set and WRONGTYPE replied. */
static struct sobj *
set_lookup(struct conn *c, struct rv_str key, bool read, bool *err, struct sobj *s)
{
    struct ks_entry *e = ks_lookup(conn_ks(c), key.p, key.len, conn_now_ms(c));

    *err = false;
    if (read) {
        struct shard_stats *st = shard_stats(c->shard);
        if (e != NULL) {
            st->keyspace_hits++;
        } else {
            st->keyspace_misses++;
        }
    }
    if (e == NULL) {
        return NULL;
    }
    if (ks_entry_type(e) != KS_SET) {
        reply_err(c, RV_ERR_WRONGTYPE);
        *err = true;
        return NULL;
    }
    sobj_bind(s, conn_ks(c), e);
    return s;
}

static void
set_drop_if_empty(struct conn *c, struct sobj *s, struct rv_str key)
{
    if (sobj_len(s) == 0) {
        ks_delete(conn_ks(c), key.p, key.len);
    }
}

CMD_HANDLER(sadd)
{
    struct sobj_lim lim;
    struct sobj sb, *s;
    bool err;
    int64_t n = 0;

    set_lim(c, &lim);
    if ((s = set_lookup(c, argv[1], false, &err, &sb)) == NULL) {
        if (err) {
            return;
        }
        /* Built standalone, then stored (inline when it is a listpack). */
        s = sobj_create(argv[2].p, argv[2].len, (size_t)(argc - 2), &lim);
        for (int i = 2; i < argc; i++) {
            n += sobj_add(s, argv[i].p, argv[i].len, &lim);
        }
        sobj_store(s, conn_ks(c), argv[1].p, argv[1].len);
        reply_int(c, n);
        return;
    }
    for (int i = 2; i < argc; i++) {
        n += sobj_add(s, argv[i].p, argv[i].len, &lim);
    }
    reply_int(c, n);
}

CMD_HANDLER(srem)
{
    struct sobj sb, *s;
    bool err;
    int64_t n = 0;

    if ((s = set_lookup(c, argv[1], false, &err, &sb)) == NULL) {
        if (!err) {
            reply_int(c, 0);
        }
        return;
    }
    for (int i = 2; i < argc; i++) {
        n += sobj_rem(s, argv[i].p, argv[i].len);
        if (sobj_len(s) == 0) {
            break;
        }
    }
    set_drop_if_empty(c, s, argv[1]);
    reply_int(c, n);
}

static void
out_member(void *arg, struct rv_str m)
{
    reply_bulk(arg, m.p, m.len);
}

CMD_HANDLER(smembers)
{
    struct sobj sb, *s;
    bool err;

    (void)argc;
    if ((s = set_lookup(c, argv[1], true, &err, &sb)) == NULL) {
        if (!err) {
            reply_set(c, 0);
        }
        return;
    }
    reply_set(c, sobj_len(s));
    sobj_foreach(s, out_member, c);
}

CMD_HANDLER(sismember)
{
    struct sobj sb, *s;
    bool err;

    (void)argc;
    if ((s = set_lookup(c, argv[1], true, &err, &sb)) == NULL && err) {
        return;
    }
    reply_int(c, s != NULL && sobj_has(s, argv[2].p, argv[2].len));
}

CMD_HANDLER(smismember)
{
    struct sobj sb, *s;
    bool err;

    if ((s = set_lookup(c, argv[1], true, &err, &sb)) == NULL && err) {
        return;
    }
    reply_array(c, (size_t)(argc - 2));
    for (int i = 2; i < argc; i++) {
        reply_int(c, s != NULL && sobj_has(s, argv[i].p, argv[i].len));
    }
}

CMD_HANDLER(scard)
{
    struct sobj sb, *s;
    bool err;

    (void)argc;
    if ((s = set_lookup(c, argv[1], true, &err, &sb)) == NULL && err) {
        return;
    }
    reply_int(c, s != NULL ? (int64_t)sobj_len(s) : 0);
}

CMD_HANDLER(spop)
{
    struct sobj sb, *s;
    char scratch[HPK_SCRATCH];
    struct rv_str m;
    uint64_t rs;
    int64_t count = 1;
    size_t n;
    bool err;

    if (argc > 3) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    if (argc == 3) {
        if (!cmd_arg_int(argv[2], &count) || count < 0) {
            reply_errf(c, "ERR value is out of range, must be positive");
            return;
        }
    }
    if ((s = set_lookup(c, argv[1], false, &err, &sb)) == NULL) {
        if (!err) {
            if (argc == 3) {
                reply_set(c, 0);
            } else {
                reply_null(c);
            }
        }
        return;
    }
    rs = hash_rng_seed(c);
    if (argc == 2) {
        m = sobj_random(s, &rs, scratch);
        reply_bulk(c, m.p, m.len);
        sobj_rem(s, m.p, m.len);
        set_drop_if_empty(c, s, argv[1]);
        return;
    }
    n = (size_t)count < sobj_len(s) ? (size_t)count : sobj_len(s);
    reply_set(c, n);
    if (n == sobj_len(s)) {
        sobj_foreach(s, out_member, c);
        ks_delete(conn_ks(c), argv[1].p, argv[1].len);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        m = sobj_random(s, &rs, scratch);
        reply_bulk(c, m.p, m.len);
        sobj_rem(s, m.p, m.len);
    }
}

struct mlist {
    struct rv_str *v;
    size_t n;
    char (*scratch)[HPK_SCRATCH];   /* integer members' text */
};

static void
mlist_add(void *arg, struct rv_str m)
{
    struct mlist *l = arg;
    if (l->scratch != NULL && m.len < HPK_SCRATCH) {
        memcpy(l->scratch[l->n], m.p, m.len);
        m.p = l->scratch[l->n];
    }
    l->v[l->n++] = m;
}

/* All members as views; small encodings copy into per-member buffers. */
static void
mlist_fill(const struct sobj *s, struct mlist *l)
{
    size_t n = sobj_len(s);
    l->v = rv_malloc((n ? n : 1) * sizeof(*l->v));
    l->n = 0;
    /* Small encodings format integers into one reused buffer: copy those. */
    l->scratch = s->enc != SENC_HT ? rv_malloc((n ? n : 1) * sizeof(*l->scratch)) : NULL;
    sobj_foreach(s, mlist_add, l);
}

static void
mlist_free(struct mlist *l)
{
    rv_free(l->v);
    rv_free(l->scratch);
}

CMD_HANDLER(srandmember)
{
    struct sobj sb, *s;
    char scratch[HPK_SCRATCH];
    struct rv_str m;
    uint64_t rs;
    int64_t count = 0;
    size_t n, size;
    bool err;

    if (argc > 3) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    if (argc == 3) {
        if (!cmd_arg_int(argv[2], &count)) {
            reply_err(c, RV_ERR_NOTINT);
            return;
        }
        if (count == INT64_MIN) {
            reply_errf(c, "ERR value is out of range, value must between -9223372036854775807 and "
                          "9223372036854775807");
            return;
        }
    }
    if ((s = set_lookup(c, argv[1], true, &err, &sb)) == NULL) {
        if (!err) {
            if (argc == 3) {
                reply_array(c, 0);
            } else {
                reply_null(c);
            }
        }
        return;
    }
    rs = hash_rng_seed(c);
    if (argc == 2) {
        m = sobj_random(s, &rs, scratch);
        reply_bulk(c, m.p, m.len);
        return;
    }
    size = sobj_len(s);
    if (count < 0) {
        n = (size_t)(-count);
        reply_array(c, n);
        for (size_t i = 0; i < n; i++) {
            m = sobj_random(s, &rs, scratch);
            reply_bulk(c, m.p, m.len);
        }
        return;
    }
    n = (size_t)count < size ? (size_t)count : size;
    reply_array(c, n);
    if (n == size) {
        sobj_foreach(s, out_member, c);
    } else if (s->enc == SENC_HT && n * 3 <= size) {
        /* Few of many: random picks, duplicates filtered by key. */
        struct dict *seen = dict_create_kind(DICT_KEYONLY);
        size_t got = 0;
        while (got < n) {
            bool created;
            m = sobj_random(s, &rs, scratch);
            dict_add(seen, m.p, m.len, &created);
            if (created) {
                reply_bulk(c, m.p, m.len);
                got++;
            }
        }
        dict_destroy(seen, NULL);
    } else {
        struct mlist l;
        mlist_fill(s, &l);
        for (size_t i = 0; i < n; i++) {
            size_t j = i + hash_rng_below(&rs, l.n - i);
            struct rv_str t = l.v[i];
            l.v[i] = l.v[j];
            l.v[j] = t;
            reply_bulk(c, l.v[i].p, l.v[i].len);
        }
        mlist_free(&l);
    }
}

CMD_HANDLER(smove)
{
    struct sobj_lim lim;
    struct sobj srcb, dstb, *src, *dst;
    bool err;

    (void)argc;
    src = set_lookup(c, argv[1], false, &err, &srcb);
    if (err) {
        return;
    }
    if (src == NULL) {
        reply_int(c, 0);
        return;
    }
    if ((dst = set_lookup(c, argv[2], false, &err, &dstb)) == NULL && err) {
        return;
    }
    if (argv[1].len == argv[2].len && memcmp(argv[1].p, argv[2].p, argv[1].len) == 0) {
        reply_int(c, sobj_has(src, argv[3].p, argv[3].len));
        return;
    }
    if (!sobj_rem(src, argv[3].p, argv[3].len)) {
        reply_int(c, 0);
        return;
    }
    set_drop_if_empty(c, src, argv[1]);
    set_lim(c, &lim);
    if (dst == NULL) {
        dst = sobj_create(argv[3].p, argv[3].len, 1, &lim);
        sobj_add(dst, argv[3].p, argv[3].len, &lim);
        sobj_store(dst, conn_ks(c), argv[2].p, argv[2].len);
    } else {
        sobj_add(dst, argv[3].p, argv[3].len, &lim);
    }
    reply_int(c, 1);
}

/* ------------------------------------------------------- multi-key algebra */

enum set_op { SOP_INTER, SOP_UNION, SOP_DIFF };

/* Looks up keys[0..n) as sets into out (NULL for missing ones). false when a
 * key holds another type (WRONGTYPE replied). */
static bool
set_gather(struct conn *c, struct rv_str *keys, int n, bool read, struct sobj **out,
           struct sobj *bufs)
{
    for (int i = 0; i < n; i++) {
        bool err;
        out[i] = set_lookup(c, keys[i], read, &err, &bufs[i]);
        if (err) {
            return false;
        }
    }
    return true;
}

static int
by_size(const void *a, const void *b)
{
    size_t x = sobj_len(*(struct sobj *const *)a), y = sobj_len(*(struct sobj *const *)b);
    return x < y ? -1 : x > y;
}

struct algebra {
    struct sobj **sets;   /* others to test against */
    int nsets;
    enum set_op op;
    struct sobj *res;
    const struct sobj_lim *lim;
    size_t limit;         /* SINTERCARD: stop counting here (0 = no limit) */
    size_t count;
    bool count_only;
};

static void
algebra_visit(void *arg, struct rv_str m)
{
    struct algebra *a = arg;
    if (a->count_only && a->limit != 0 && a->count >= a->limit) {
        return;
    }
    if (a->op == SOP_INTER) {
        for (int i = 0; i < a->nsets; i++) {
            if (!sobj_has(a->sets[i], m.p, m.len)) {
                return;
            }
        }
    } else if (a->op == SOP_DIFF) {
        for (int i = 0; i < a->nsets; i++) {
            if (a->sets[i] != NULL && sobj_has(a->sets[i], m.p, m.len)) {
                return;
            }
        }
    }
    if (a->count_only) {
        a->count++;
        return;
    }
    if (a->res == NULL) {
        a->res = sobj_create(m.p, m.len, 1, a->lim);
    }
    sobj_add(a->res, m.p, m.len, a->lim);
}

/* The result of op over sets[0..n) (NULL entries are missing keys), as a new
 * set or NULL when empty; with count_only, the cardinality in a->count. */
static void
algebra_run(struct sobj **sets, int n, struct algebra *a)
{
    if (a->op == SOP_INTER) {
        for (int i = 0; i < n; i++) {
            if (sets[i] == NULL) {
                return;   /* a missing key is an empty set */
            }
        }
        qsort(sets, (size_t)n, sizeof(*sets), by_size);
        a->sets = sets + 1;
        a->nsets = n - 1;
        sobj_foreach(sets[0], algebra_visit, a);
    } else if (a->op == SOP_UNION) {
        a->nsets = 0;
        for (int i = 0; i < n; i++) {
            if (sets[i] != NULL) {
                sobj_foreach(sets[i], algebra_visit, a);
            }
        }
    } else if (sets[0] != NULL) {
        a->sets = sets + 1;
        a->nsets = n - 1;
        sobj_foreach(sets[0], algebra_visit, a);
    }
}

static void
algebra_cmd(struct conn *c, struct rv_str *keys, int n, struct rv_str *dstkey, enum set_op op)
{
    struct sobj_lim lim;
    struct sobj *stack[16], **sets = n <= 16 ? stack : rv_malloc((size_t)n * sizeof(*sets));
    struct sobj bstack[16], *bufs = n <= 16 ? bstack : rv_malloc((size_t)n * sizeof(*bufs));
    struct algebra a = { .op = op, .lim = &lim };

    set_lim(c, &lim);
    if (!set_gather(c, keys, n, dstkey == NULL, sets, bufs)) {
        goto out;
    }
    algebra_run(sets, n, &a);
    if (dstkey != NULL) {
        size_t card = a.res != NULL ? sobj_len(a.res) : 0;
        if (a.res != NULL) {
            sobj_store(a.res, conn_ks(c), dstkey->p, dstkey->len);
        } else {
            ks_delete(conn_ks(c), dstkey->p, dstkey->len);
        }
        reply_int(c, (int64_t)card);
    } else if (a.res == NULL) {
        reply_set(c, 0);
    } else {
        reply_set(c, sobj_len(a.res));
        sobj_foreach(a.res, out_member, c);
        sobj_free(a.res);
    }
out:
    if (sets != stack) {
        rv_free(sets);
        rv_free(bufs);
    }
}

CMD_HANDLER(sinter)
{
    algebra_cmd(c, argv + 1, argc - 1, NULL, SOP_INTER);
}

CMD_HANDLER(sunion)
{
    algebra_cmd(c, argv + 1, argc - 1, NULL, SOP_UNION);
}

CMD_HANDLER(sdiff)
{
    algebra_cmd(c, argv + 1, argc - 1, NULL, SOP_DIFF);
}

CMD_HANDLER(sinterstore)
{
    algebra_cmd(c, argv + 2, argc - 2, &argv[1], SOP_INTER);
}

CMD_HANDLER(sunionstore)
{
    algebra_cmd(c, argv + 2, argc - 2, &argv[1], SOP_UNION);
}

CMD_HANDLER(sdiffstore)
{
    algebra_cmd(c, argv + 2, argc - 2, &argv[1], SOP_DIFF);
}

int
set_getkeys_numkeys(int argc, struct rv_str *argv, int *out, int max)
{
    int64_t nk;
    int n = 0;
    if (argc < 3 || !cmd_arg_int(argv[1], &nk) || nk < 1 || nk > argc - 2) {
        return 0;
    }
    for (int64_t i = 0; i < nk && n < max; i++) {
        out[n++] = 2 + (int)i;
    }
    return n;
}

CMD_HANDLER(sintercard)
{
    struct sobj_lim lim;
    struct sobj *stack[16], **sets, bstack[16], *bufs;
    struct algebra a = { .op = SOP_INTER, .lim = &lim, .count_only = true };
    int64_t nk, limit = 0;

    if (!cmd_arg_int(argv[1], &nk) || nk < 1) {
        reply_errf(c, "ERR numkeys should be greater than 0");
        return;
    }
    if (nk > argc - 2) {
        reply_errf(c, "ERR Number of keys can't be greater than number of args");
        return;
    }
    for (int i = 2 + (int)nk; i < argc; i += 2) {
        if (i + 1 < argc && cmd_arg_is(argv[i], "limit")) {
            if (!cmd_arg_int(argv[i + 1], &limit) || limit < 0) {
                reply_errf(c, "ERR LIMIT can't be negative");
                return;
            }
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
    }
    set_lim(c, &lim);
    sets = nk <= 16 ? stack : rv_malloc((size_t)nk * sizeof(*sets));
    bufs = nk <= 16 ? bstack : rv_malloc((size_t)nk * sizeof(*bufs));
    if (set_gather(c, argv + 2, (int)nk, true, sets, bufs)) {
        a.limit = (size_t)limit;
        algebra_run(sets, (int)nk, &a);
        reply_int(c, (int64_t)a.count);
    }
    if (sets != stack) {
        rv_free(sets);
        rv_free(bufs);
    }
}

/* ------------------------------------------------------------------ SSCAN */

struct sscan_ctx {
    struct conn *c;
    const char *pat;
    size_t plen;
    struct rv_str *v;
    size_t n, cap;
};

static void
sscan_collect(void *arg, struct dict_entry *e)
{
    struct sscan_ctx *s = arg;
    struct rv_str k = dict_key(e);
    if (s->pat != NULL && !glob_match(s->pat, s->plen, k.p, k.len, false)) {
        return;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->v = rv_realloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = k;
}

struct sscan_small {
    struct conn *c;
    const char *pat;
    size_t plen;
    size_t n;
};

static void
sscan_small_visit(void *arg, struct rv_str m)
{
    struct sscan_small *s = arg;
    if (s->pat != NULL && !glob_match(s->pat, s->plen, m.p, m.len, false)) {
        return;
    }
    reply_bulk(s->c, m.p, m.len);
    s->n++;
}

CMD_HANDLER(sscan)
{
    struct sscan_ctx s = { .c = c };
    struct sobj sb, *set;
    uint64_t cursor, next;
    int64_t count = 10;
    bool err;

    if (!cmd_arg_cursor(argv[2], &cursor)) {
        reply_errf(c, "ERR invalid cursor");
        return;
    }
    if ((set = set_lookup(c, argv[1], true, &err, &sb)) == NULL) {
        if (!err) {
            reply_array(c, 2);
            reply_bulk(c, "0", 1);
            reply_array(c, 0);
        }
        return;
    }
    struct scan_opts o;
    if (!cmd_parse_scan_opts(c, argc, argv, 3, 0, &o)) {
        return;
    }
    s.pat = o.match.p;
    s.plen = o.match.len;
    count = o.count;
    if (set->enc != SENC_HT) {
        /* Small encodings are returned whole in one call, cursor 0 (as Redis). */
        struct sscan_small sm = { c, s.pat, s.plen, 0 };
        size_t hd;
        reply_array(c, 2);
        reply_bulk(c, "0", 1);
        hd = reply_defer(c);
        sobj_foreach(set, sscan_small_visit, &sm);
        reply_defer_array(c, hd, sm.n);
        return;
    }
    next = dict_scan(set->b->d, cursor, (size_t)count, sscan_collect, &s);
    reply_array(c, 2);
    reply_bulk_u64(c, next);
    reply_array(c, s.n);
    for (size_t i = 0; i < s.n; i++) {
        reply_bulk(c, s.v[i].p, s.v[i].len);
    }
    rv_free(s.v);
}
