/* node/features/tracking.c: CLIENT TRACKING's tables and invalidation messages. */
#include "node/features/tracking.h"

#include "base/buf.h"
#include "base/mem.h"
#include "base/rand.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "node/core/node.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/keyspace/dict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRK_ON (1u << 8)
#define TRK_BROKEN (1u << 9)   /* the redirect target was found gone */
#define TRK_CACHING (1u << 10) /* CLIENT CACHING for the next command */

/* c->trk: a tracking client, or a redirect target (flags without TRK_ON). */
struct trk_conn {
    unsigned flags; /* enum trk_opt | TRK_* */
    uint64_t redirect;
    char **prefix; /* BCAST prefixes (owned), lengths in plen */
    size_t *plen, nprefix;
    struct buf held; /* invalidations held while c runs EXEC or a script */
    bool target;     /* in the shard's target table */
};

/* A BCAST registration: client id on shard `shard` (every shard holds the
 * whole node's registrations). */
struct trk_reg {
    unsigned shard;
    uint64_t id;
};

/* The registrations of one prefix (a value of trk_shard.pfx). */
struct trk_regs {
    size_t n, cap;
    struct trk_reg r[];
};

/* How many distinct prefixes have length len. */
struct trk_len {
    size_t len, count;
};

struct trk_ids {
    size_t n, cap;
    uint64_t id[];
};

struct trk_shard {
    struct dict *keys;    /* key -> struct trk_ids * */
    struct dict *clients; /* id -> struct conn *: this shard's tracking clients */
    struct dict *targets; /* id -> struct conn *: redirect targets on this shard */
    /* BCAST: prefix -> struct trk_regs *, and the distinct prefix lengths in
     * ascending order: a key is matched with one lookup per length no longer
     * than it, however many prefixes there are */
    struct dict *pfx;
    struct trk_len *lens;
    size_t nlens, nbc; /* nbc: registrations */
    size_t items;
};

_Thread_local struct conn *tracking_running;

/* ---------------------------------------------------------------- state */

static struct trk_shard *
tshard(struct shard_env *env)
{
    if (env->tracking == NULL) {
        struct trk_shard *t = rv_calloc(1, sizeof(*t));
        t->keys = dict_create();
        t->clients = dict_create();
        t->targets = dict_create();
        t->pfx = dict_create();
        env->tracking = t;
    }
    return env->tracking;
}

static void
free_ids(void *p)
{
    rv_free(p);
}

static void
tshard_free(struct shard_env *env)
{
    struct trk_shard *t = env->tracking;
    dict_destroy(t->keys, free_ids);
    dict_destroy(t->clients, NULL);
    dict_destroy(t->targets, NULL);
    dict_destroy(t->pfx, free_ids); /* (a struct trk_regs is one allocation too) */
    rv_free(t->lens);
    rv_free(t);
    env->tracking = NULL;
}

/* Drop the shard's state once nothing needs it (the dispatcher's test is then false again). */
static void
tshard_maybe_free(struct shard_env *env)
{
    struct trk_shard *t = env->tracking;
    if (t != NULL && !dict_size(t->clients) && !dict_size(t->targets) && !t->nbc) {
        tshard_free(env);
    }
}

void
tracking_shard_destroy(struct shard *s)
{
    if (shard_env(s)->tracking != NULL) {
        tshard_free(shard_env(s));
    }
}

static struct trk_conn *
tconn(struct conn *c)
{
    if (c->trk == NULL) {
        c->trk = rv_calloc(1, sizeof(*c->trk));
        buf_init(&c->trk->held);
    }
    return c->trk;
}

static struct conn *
id_get(struct dict *d, uint64_t id)
{
    struct dict_entry *e = dict_find(d, (const char *)&id, sizeof(id));
    return e ? dict_val_ptr(e) : NULL;
}

static void
id_put(struct dict *d, uint64_t id, struct conn *c)
{
    bool created;
    dict_set_val_ptr(dict_add(d, (const char *)&id, sizeof(id), &created), c);
}

static unsigned
shard_of_id(const struct node *n, uint64_t id)
{
    return (unsigned)((id - 1) % n->nshards); /* ids of shard i are i+1, i+1+N, ... */
}

/* A connection of this shard by id, registered as a redirect target. */
static struct conn *
target_find(struct shard *s, uint64_t id)
{
    struct shard_env *env = shard_env(s);
    struct conn *t = env->tracking ? id_get(env->tracking->targets, id) : NULL;
    if (t != NULL) {
        return t;
    }
    for (struct conn *o = shard_conn_first(s); o; o = o->next) {
        if (o->id == id && !(o->flags & (CONN_REPLAY | CONN_CLOSE_ASAP))) {
            id_put(tshard(env)->targets, id, o);
            tconn(o)->target = true;
            return o;
        }
    }
    return NULL;
}

/* ---------------------------------------------------------------- messages */

/* Keys (or the null of a flush, n == SIZE_MAX) as sent to conn t on behalf of
 * a client speaking proto; held while t runs EXEC or a script, so a push never
 * lands inside a reply. */
static void
write_invalidation(struct conn *t, bool redirected, int proto, const struct rv_str *keys, size_t n)
{
    bool held = t->trk != NULL && (t == tracking_running || (t->flags & CONN_IN_EXEC));
    struct buf *b = held ? &t->trk->held : &t->wbuf;
    if (t->flags & (CONN_CLOSE_ASAP | CONN_CLOSE_AFTER_REPLY)) {
        return;
    }
    if (t->proto >= 3) {
        resp_w_push(b, 3, 2);
        resp_w_bulk(b, "invalidate", 10);
    } else if (redirected && (t->flags & CONN_PUBSUB)) {
        resp_w_array(b, 3);
        resp_w_bulk(b, "message", 7);
        resp_w_bulk(b, "__redis__:invalidate", 20);
    } else {
        return; /* RESP2 without a subscribed target: nowhere to say it */
    }
    if (n == SIZE_MAX) {
        resp_w_null(b, proto);
    } else {
        resp_w_array(b, n);
        for (size_t i = 0; i < n; i++) {
            resp_w_bulk(b, keys[i].p, keys[i].len);
        }
    }
    if (!held) {
        shard_want_write(t->shard, t);
    }
}

static void
write_broken(struct conn *c)
{
    c->trk->flags |= TRK_BROKEN;
    if (c->proto >= 3) {
        bool held = c == tracking_running || (c->flags & CONN_IN_EXEC);
        struct buf *b = held ? &c->trk->held : &c->wbuf;
        resp_w_push(b, 3, 2);
        resp_w_bulk(b, "tracking-redir-broken", 21);
        resp_w_int(b, (int64_t)c->trk->redirect);
        shard_want_write(c->shard, c);
    }
}

enum trk_msg_kind { M_DELIVER, M_BROKEN, M_BC_ADD, M_BC_DEL, M_BC_NOTE };

/* Between shards: strings are packed in data as (u32 length, bytes). */
struct trk_msg {
    struct shard_msg base;
    enum trk_msg_kind kind;
    uint64_t to;    /* DELIVER: the target; BROKEN, BC_NOTE: the client */
    uint64_t from;  /* DELIVER, BC_*: the tracking client */
    unsigned shard; /* DELIVER, BC_*: the tracking client's shard */
    int proto;      /* DELIVER: the tracking client's */
    size_t n;       /* strings; SIZE_MAX: a flush's null */
    size_t len;
    char data[];
};

static void trk_msg_run(struct shard *s, struct shard_msg *m);

static void
post(struct shard *to, enum trk_msg_kind kind, uint64_t dest, uint64_t from, unsigned shard,
     int proto, const struct rv_str *v, size_t n)
{
    size_t len = 0;
    for (size_t i = 0; n != SIZE_MAX && i < n; i++) {
        len += 4 + v[i].len;
    }
    struct trk_msg *m = rv_malloc(sizeof(*m) + len);
    *m = (struct trk_msg){
        .kind = kind, .to = dest, .from = from, .shard = shard, .proto = proto, .n = n, .len = len
    };
    m->base.run = trk_msg_run;
    char *w = m->data;
    for (size_t i = 0; n != SIZE_MAX && i < n; i++) {
        uint32_t l = (uint32_t)v[i].len;
        memcpy(w, &l, 4);
        memcpy(w + 4, v[i].p, v[i].len);
        w += 4 + v[i].len;
    }
    shard_post(to, &m->base);
}

/* The strings of m as views (caller frees the array). */
static struct rv_str *
unpack(const struct trk_msg *m)
{
    size_t n = m->n == SIZE_MAX ? 0 : m->n;
    struct rv_str *v = rv_malloc((n ? n : 1) * sizeof(*v));
    const char *r = m->data;
    for (size_t i = 0; i < n; i++) {
        uint32_t l;
        memcpy(&l, r, 4);
        v[i] = (struct rv_str){ r + 4, l };
        r += 4 + l;
    }
    return v;
}

/* Tell tracking client c (of this shard) that keys changed. */
static void
notify(struct conn *c, const struct rv_str *keys, size_t n)
{
    struct trk_conn *tc = c->trk;
    if (tc->redirect == 0) {
        write_invalidation(c, false, c->proto, keys, n);
        return;
    }
    struct node *nd = c->env->node;
    unsigned home = shard_of_id(nd, tc->redirect);
    if (nd->shards[home] != c->shard) {
        post(nd->shards[home], M_DELIVER, tc->redirect, c->id, c->env->id, c->proto, keys, n);
        return;
    }
    struct conn *t = target_find(c->shard, tc->redirect);
    if (t == NULL) {
        write_broken(c);
    } else {
        write_invalidation(t, true, c->proto, keys, n);
    }
}

/* A prefix of length len appeared (added) or went. */
static void
len_count(struct trk_shard *t, size_t len, bool added)
{
    size_t i = 0;
    while (i < t->nlens && t->lens[i].len < len) {
        i++;
    }
    if (i < t->nlens && t->lens[i].len == len) {
        if (added) {
            t->lens[i].count++;
        } else if (--t->lens[i].count == 0) {
            memmove(&t->lens[i], &t->lens[i + 1], (t->nlens - i - 1) * sizeof(*t->lens));
            t->nlens--;
        }
        return;
    }
    if (!added) {
        return; /* (not there: nothing to count down) */
    }
    t->lens = rv_realloc(t->lens, (t->nlens + 1) * sizeof(*t->lens));
    memmove(&t->lens[i + 1], &t->lens[i], (t->nlens - i) * sizeof(*t->lens));
    t->lens[i] = (struct trk_len){ len, 1 };
    t->nlens++;
}

static void
bcast_add(struct trk_shard *t, unsigned shard, uint64_t id, struct rv_str p)
{
    bool created;
    struct dict_entry *e = dict_add(t->pfx, p.p, p.len, &created);
    struct trk_regs *r = created ? NULL : dict_val_ptr(e);
    if (created) {
        len_count(t, p.len, true);
    }
    if (r == NULL || r->n == r->cap) {
        size_t cap = r ? r->cap * 2 : 2;
        r = rv_realloc(r, sizeof(*r) + cap * sizeof(r->r[0]));
        r->n = created ? 0 : r->n;
        r->cap = cap;
        dict_set_val_ptr(e, r);
    }
    r->r[r->n++] = (struct trk_reg){ shard, id };
    t->nbc++;
}

/* Client id of shard `shard` no longer watches prefixes p[0..n). */
static void
bcast_del(struct trk_shard *t, unsigned shard, uint64_t id, const struct rv_str *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct dict_entry *e = dict_find(t->pfx, p[i].p, p[i].len);
        struct trk_regs *r = e ? dict_val_ptr(e) : NULL;
        for (size_t j = 0; r && j < r->n; j++) {
            if (r->r[j].shard == shard && r->r[j].id == id) {
                r->r[j] = r->r[--r->n];
                t->nbc--;
                break;
            }
        }
        if (r != NULL && r->n == 0) {
            rv_free(r);
            dict_delete(t->pfx, p[i].p, p[i].len, NULL);
            len_count(t, p[i].len, false);
        }
    }
}

static void
trk_msg_run(struct shard *s, struct shard_msg *base)
{
    struct trk_msg *m = (struct trk_msg *)base;
    struct shard_env *env = shard_env(s);
    struct rv_str *v = unpack(m);
    struct node *nd = env->node;
    switch (m->kind) {
    case M_DELIVER: {
        struct conn *t = target_find(s, m->to);
        if (t != NULL) {
            write_invalidation(t, true, m->proto, v, m->n);
        } else if (m->shard < nd->nshards) {
            post(nd->shards[m->shard], M_BROKEN, m->from, 0, 0, 0, NULL, 0);
        }
        break;
    }
    case M_BROKEN:
    case M_BC_NOTE: {
        struct conn *c = env->tracking ? id_get(env->tracking->clients, m->to) : NULL;
        if (c != NULL && m->kind == M_BROKEN) {
            write_broken(c);
        } else if (c != NULL && (c->trk->flags & TRK_BCAST)) {
            notify(c, v, m->n);
        }
        break;
    }
    case M_BC_ADD:
        for (size_t i = 0; i < m->n; i++) {
            bcast_add(tshard(env), m->shard, m->from, v[i]);
        }
        break;
    case M_BC_DEL:
        if (env->tracking != NULL) {
            bcast_del(env->tracking, m->shard, m->from, v, m->n);
        }
        break;
    }
    rv_free(v);
    rv_free(m);
    tshard_maybe_free(env);
}

/* ---------------------------------------------------------------- the keys */

static void
remember(struct trk_shard *t, struct rv_str key, uint64_t id)
{
    bool created;
    struct dict_entry *e = dict_add(t->keys, key.p, key.len, &created);
    struct trk_ids *ids = created ? NULL : dict_val_ptr(e);
    for (size_t i = 0; ids && i < ids->n; i++) {
        if (ids->id[i] == id) {
            return;
        }
    }
    if (ids == NULL || ids->n == ids->cap) {
        size_t cap = ids ? ids->cap * 2 : 2;
        ids = rv_realloc(ids, sizeof(*ids) + cap * sizeof(uint64_t));
        ids->cap = cap;
        ids->n = created ? 0 : ids->n;
        dict_set_val_ptr(e, ids);
    }
    ids->id[ids->n++] = id;
    t->items++;
}

/* key changed on shard s, written by client writer (0: expiry, eviction):
 * the clients that read it (default mode). */
static void
invalidate(struct shard *s, struct rv_str key, uint64_t writer)
{
    struct shard_env *env = shard_env(s);
    struct trk_shard *t = env->tracking;
    uint64_t val;
    if (dict_size(t->keys) != 0 && dict_delete(t->keys, key.p, key.len, &val)) {
        struct trk_ids *ids = (struct trk_ids *)(uintptr_t)val;
        t->items -= ids->n;
        for (size_t i = 0; i < ids->n; i++) {
            struct conn *c = id_get(t->clients, ids->id[i]);
            if (c != NULL && !(c->trk->flags & TRK_BCAST) &&
                !((c->trk->flags & TRK_NOLOOP) && c->id == writer)) {
                notify(c, &key, 1);
            }
        }
        rv_free(ids);
    }
}

/* Send registration r the keys m[0..k) that fall under its prefix. */
static void
announce_to(struct shard_env *env, struct trk_reg r, const struct rv_str *m, size_t k,
            uint64_t writer)
{
    if (r.shard != env->id) {
        post(env->node->shards[r.shard], M_BC_NOTE, r.id, 0, 0, 0, m, k);
        return;
    }
    struct conn *c = id_get(env->tracking->clients, r.id);
    if (c != NULL && !((c->trk->flags & TRK_NOLOOP) && c->id == writer)) {
        notify(c, m, k);
    }
}

/* A key matched a registration of the prefix whose registrations are p. */
struct trk_match {
    struct trk_reg r;
    const struct trk_regs *p;
    size_t key;
};

static int
reg_cmp(const void *a, const void *b)
{
    const struct trk_reg *x = a, *y = b;
    if (x->shard != y->shard) {
        return x->shard < y->shard ? -1 : 1;
    }
    return x->id < y->id ? -1 : x->id > y->id;
}

/* By registration and prefix, then by key (the order the command named them). */
static int
match_cmp(const void *a, const void *b)
{
    const struct trk_match *x = a, *y = b;
    int d = reg_cmp(&x->r, &y->r);
    if (d != 0) {
        return d;
    }
    if (x->p != y->p) {
        return (uintptr_t)x->p < (uintptr_t)y->p ? -1 : 1;
    }
    return x->key < y->key ? -1 : x->key > y->key;
}

/* keys[0..n) changed: each BCAST client is sent, for each of its prefixes
 * that some of them start with, those keys in one message (Redis groups a
 * client's keys by prefix too, per event-loop turn rather than per command). A key is looked
 * up once per distinct prefix length; a client's prefixes never overlap, so
 * each (client, key) matches once. */
static void
announce(struct shard *s, const struct rv_str *keys, size_t n, uint64_t writer)
{
    struct shard_env *env = shard_env(s);
    struct trk_shard *t = env->tracking;
    struct trk_match *mt = NULL;
    size_t nm = 0, capm = 0;
    for (size_t j = 0; j < n && t->nbc > 0; j++) {
        for (size_t l = 0; l < t->nlens && t->lens[l].len <= keys[j].len; l++) {
            struct dict_entry *e = dict_find(t->pfx, keys[j].p, t->lens[l].len);
            const struct trk_regs *r = e ? dict_val_ptr(e) : NULL;
            for (size_t i = 0; r && i < r->n; i++) {
                if (n == 1) { /* (the common case: nothing to group) */
                    announce_to(env, r->r[i], &keys[j], 1, writer);
                    continue;
                }
                if (nm == capm) {
                    capm = capm ? capm * 2 : 16;
                    mt = rv_realloc(mt, capm * sizeof(*mt));
                }
                mt[nm++] = (struct trk_match){ r->r[i], r, j };
            }
        }
    }
    if (nm == 0) {
        return;
    }
    qsort(mt, nm, sizeof(*mt), match_cmp);
    struct rv_str *m = rv_malloc(nm * sizeof(*m));
    for (size_t i = 0; i < nm;) {
        size_t k = 0, g = i;
        for (; i < nm && !reg_cmp(&mt[i].r, &mt[g].r) && mt[i].p == mt[g].p; i++) {
            m[k++] = keys[mt[i].key];
        }
        announce_to(env, mt[g].r, m, k, writer);
    }
    rv_free(m);
    rv_free(mt);
}

struct flush_ctx {
    struct shard_env *env;
    struct trk_reg *r;
    size_t n, cap;
};

static void
collect_other_shards(void *arg, struct dict_entry *e)
{
    struct flush_ctx *x = arg;
    const struct trk_regs *r = dict_val_ptr(e);
    for (size_t i = 0; i < r->n; i++) {
        if (r->r[i].shard == x->env->id) {
            continue; /* (this shard's clients are told directly) */
        }
        if (x->n == x->cap) {
            x->cap = x->cap ? x->cap * 2 : 16;
            x->r = rv_realloc(x->r, x->cap * sizeof(*x->r));
        }
        x->r[x->n++] = r->r[i];
    }
}

/* FLUSHDB/FLUSHALL: every tracking client of the shard is told to drop
 * everything (a null), and the table is forgotten, as Redis does. A flush
 * empties only this shard (each is a cluster node of its own), so the
 * default-mode clients of other shards keep their keys (they read only
 * their own shard's); but the BCAST clients of every shard hear this
 * shard's writes, so each of them is told too, once. */
static void
invalidate_all(struct shard *s)
{
    struct shard_env *env = shard_env(s);
    struct trk_shard *t = env->tracking;
    dict_destroy(t->keys, free_ids);
    t->keys = dict_create();
    t->items = 0;
    for (struct conn *c = shard_conn_first(s); c; c = c->next) {
        if (c->trk != NULL && (c->trk->flags & TRK_ON)) {
            notify(c, NULL, SIZE_MAX);
        }
    }
    struct flush_ctx x = { env, NULL, 0, 0 };
    dict_foreach(t->pfx, collect_other_shards, &x);
    if (x.n > 1) {
        qsort(x.r, x.n, sizeof(*x.r), reg_cmp); /* (a client of several prefixes: once) */
    }
    for (size_t i = 0; i < x.n; i++) {
        if (i == 0 || x.r[i].shard != x.r[i - 1].shard || x.r[i].id != x.r[i - 1].id) {
            post(env->node->shards[x.r[i].shard], M_BC_NOTE, x.r[i].id, 0, 0, 0, NULL, SIZE_MAX);
        }
    }
    rv_free(x.r);
}

static bool
remembers(const struct trk_conn *tc)
{
    unsigned f = tc->flags;
    if (!(f & TRK_ON) || (f & TRK_BCAST)) {
        return false;
    }
    if (f & TRK_OPTIN) {
        return (f & TRK_CACHING) != 0;
    }
    if (f & TRK_OPTOUT) {
        return (f & TRK_CACHING) == 0;
    }
    return true;
}

/* tracking-table-max-keys: forget random keys, each with its invalidation,
 * until the table is back under the limit (checked after each command, so a
 * CONFIG SET that lowers it applies at once). */
static void
trim(struct shard *s)
{
    struct trk_shard *t = shard_env(s)->tracking;
    int64_t max = shard_env(s)->cfg->mem.tracking_table_max_keys;
    static _Thread_local uint64_t x;
    char stack[256];
    if (x == 0) {
        x = rand_u64() | 1;
    }
    while (max > 0 && dict_size(t->keys) > (size_t)max) {
        x ^= x << 13; /* xorshift: a cheap spread for dict_random */
        x ^= x >> 7;
        x ^= x << 17;
        struct rv_str k = dict_key(dict_random(t->keys, x));
        char *copy = k.len <= sizeof(stack) ? stack : rv_malloc(k.len);
        memcpy(copy, k.p, k.len); /* (the entry goes inside invalidate) */
        invalidate(s, (struct rv_str){ copy, k.len }, 0);
        if (copy != stack) {
            rv_free(copy);
        }
    }
}

void
tracking_after_call(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv,
                    bool wrote)
{
    struct trk_shard *tk = c->env->tracking;
    int64_t max = c->env->cfg->mem.tracking_table_max_keys;
    if (rv_unlikely(max > 0 && dict_size(tk->keys) > (size_t)max)) {
        trim(c->shard); /* (a CONFIG SET lowered it) */
    }
    bool read = (cmd->flags & CMD_READONLY) && c->trk != NULL && remembers(c->trk);
    if (!wrote && !read) {
        return;
    }
    if (read && (strcmp(cmd->name, "eval_ro") == 0 || strcmp(cmd->name, "evalsha_ro") == 0 ||
                 strcmp(cmd->name, "fcall_ro") == 0)) {
        return; /* a script's own commands are tracked, not its declared keys (as Redis) */
    }
    int stack[64];
    int *keys = argc <= 64 ? stack : rv_malloc((size_t)argc * sizeof(int));
    int n = cmd_get_keys(cmd, argc, argv, keys, argc);
    if (wrote) {
        n = cmd_written_keys(cmd, keys, n);
    }
    struct trk_shard *t = c->env->tracking;
    if (wrote && n == 0 &&
        (strcmp(cmd->name, "flushdb") == 0 || strcmp(cmd->name, "flushall") == 0)) {
        invalidate_all(c->shard);
    }
    for (int i = 0; i < n; i++) {
        if (wrote) {
            invalidate(c->shard, argv[keys[i]], c->id);
        } else {
            remember(t, argv[keys[i]], c->id);
        }
    }
    if (!wrote && max > 0 && dict_size(t->keys) > (size_t)max) {
        trim(c->shard);
    }
    if (wrote && n > 0 && t->nbc > 0) {
        struct rv_str kstack[64];
        struct rv_str *kv = n <= 64 ? kstack : rv_malloc((size_t)n * sizeof(*kv));
        for (int i = 0; i < n; i++) {
            kv[i] = argv[keys[i]];
        }
        announce(c->shard, kv, (size_t)n, c->id);
        if (kv != kstack) {
            rv_free(kv);
        }
    }
    if (keys != stack) {
        rv_free(keys);
    }
}

void
tracking_after_top(struct conn *c)
{
    struct trk_conn *tc = c->trk;
    if (tc->held.len > tc->held.off && !(c->flags & CONN_IN_EXEC)) {
        buf_append(&c->wbuf, tc->held.data + tc->held.off, tc->held.len - tc->held.off);
        tc->held.off = tc->held.len = 0;
        shard_want_write(c->shard, c);
    }
    /* CLIENT CACHING lasts until a command other than CLIENT's ran (a whole
     * transaction counting as one), as Redis */
    const struct cmd_spec *last = c->last_cmd;
    if ((tc->flags & TRK_CACHING) && !(c->flags & CONN_MULTI) &&
        !(last && last->parent && strcmp(last->parent->name, "client") == 0)) {
        tc->flags &= ~TRK_CACHING;
    }
}

void
tracking_key_written(struct conn *c, struct rv_str key)
{
    if (c->env->tracking != NULL) {
        invalidate(c->shard, key, c->id);
        announce(c->shard, &key, 1, c->id);
    }
}

void
tracking_key_gone(struct shard *s, struct rv_str key)
{
    if (shard_env(s)->tracking != NULL) {
        invalidate(s, key, 0);
        announce(s, &key, 1, 0);
    }
}

/* ---------------------------------------------------------------- commands */

static bool
overlap(const char *a, size_t alen, const char *b, size_t blen)
{
    return memcmp(a, b, alen < blen ? alen : blen) == 0;
}

static bool
check_prefixes(const struct trk_conn *tc, const struct rv_str *p, size_t n, char *err, size_t errsz)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; tc && j < tc->nprefix; j++) {
            if (overlap(tc->prefix[j], tc->plen[j], p[i].p, p[i].len)) {
                snprintf(err, errsz,
                         "Prefix '%.*s' overlaps with an existing prefix '%.*s'. Prefixes for a "
                         "single client must not overlap.",
                         (int)p[i].len, p[i].p, (int)tc->plen[j], tc->prefix[j]);
                return false;
            }
        }
        for (size_t j = i + 1; j < n; j++) {
            if (overlap(p[i].p, p[i].len, p[j].p, p[j].len)) {
                snprintf(err, errsz,
                         "Prefix '%.*s' overlaps with another provided prefix '%.*s'. Prefixes "
                         "for a single client must not overlap.",
                         (int)p[i].len, p[i].p, (int)p[j].len, p[j].p);
                return false;
            }
        }
    }
    return true;
}

/* Announce c's new prefixes to every shard (this one directly). */
static void
add_prefixes(struct conn *c, const struct rv_str *p, size_t n)
{
    struct trk_conn *tc = c->trk;
    struct node *nd = c->env->node;
    tc->prefix = rv_realloc(tc->prefix, (tc->nprefix + n) * sizeof(char *));
    tc->plen = rv_realloc(tc->plen, (tc->nprefix + n) * sizeof(size_t));
    for (size_t i = 0; i < n; i++) {
        tc->prefix[tc->nprefix] = rv_strndup(p[i].p, p[i].len);
        tc->plen[tc->nprefix++] = p[i].len;
        bcast_add(tshard(c->env), c->env->id, c->id, p[i]);
    }
    for (unsigned i = 0; i < nd->nshards; i++) {
        if (nd->shards[i] != c->shard) {
            post(nd->shards[i], M_BC_ADD, 0, c->id, c->env->id, 0, p, n);
        }
    }
}

static void
drop_prefixes(struct conn *c)
{
    struct trk_conn *tc = c->trk;
    struct node *nd = c->env->node;
    if (tc->nprefix == 0) {
        return;
    }
    struct rv_str *p = rv_malloc(tc->nprefix * sizeof(*p));
    for (size_t i = 0; i < tc->nprefix; i++) {
        p[i] = (struct rv_str){ tc->prefix[i], tc->plen[i] };
    }
    if (c->env->tracking != NULL) {
        bcast_del(c->env->tracking, c->env->id, c->id, p, tc->nprefix);
    }
    for (unsigned i = 0; i < nd->nshards; i++) {
        if (nd->shards[i] != c->shard) {
            post(nd->shards[i], M_BC_DEL, 0, c->id, c->env->id, 0, p, tc->nprefix);
        }
    }
    rv_free(p);
    for (size_t i = 0; i < tc->nprefix; i++) {
        rv_free(tc->prefix[i]);
    }
    rv_free(tc->prefix);
    rv_free(tc->plen);
    tc->prefix = NULL;
    tc->plen = NULL;
    tc->nprefix = 0;
}

bool
tracking_target_known(struct conn *c, uint64_t id)
{
    const struct node *nd = c->env->node;
    if (id == 0) {
        return false;
    }
    if (nd->shards[shard_of_id(nd, id)] != c->shard) {
        return true; /* another shard's: checked when a message goes there */
    }
    return target_find(c->shard, id) != NULL;
}

bool
tracking_on(struct conn *c, unsigned opts, uint64_t redirect, const struct rv_str *prefixes,
            size_t nprefix, char *err, size_t errsz)
{
    const struct trk_conn *cur = c->trk && (c->trk->flags & TRK_ON) ? c->trk : NULL;
    unsigned was = cur ? cur->flags : 0;
    if (!(opts & TRK_BCAST) && nprefix) {
        snprintf(err, errsz, "PREFIX option requires BCAST mode to be enabled");
    } else if (cur && ((was ^ opts) & TRK_BCAST)) {
        snprintf(err, errsz,
                 "You can't switch BCAST mode on/off before disabling tracking for this client, "
                 "and then re-enabling it with a different mode.");
    } else if ((opts & TRK_BCAST) && (opts & (TRK_OPTIN | TRK_OPTOUT))) {
        snprintf(err, errsz, "OPTIN and OPTOUT are not compatible with BCAST");
    } else if ((opts & TRK_OPTIN) && (opts & TRK_OPTOUT)) {
        snprintf(err, errsz, "You can't specify both OPTIN mode and OPTOUT mode");
    } else if (((opts & TRK_OPTIN) && (was & TRK_OPTOUT)) ||
               ((opts & TRK_OPTOUT) && (was & TRK_OPTIN))) {
        snprintf(err, errsz,
                 "You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, "
                 "and then re-enabling it with a different mode.");
    } else if ((opts & TRK_BCAST) && !check_prefixes(cur, prefixes, nprefix, err, errsz)) {
        /* (err written) */
    } else {
        struct trk_conn *tc = tconn(c);
        struct trk_shard *t = tshard(c->env);
        tc->flags = (tc->flags & TRK_CACHING) | TRK_ON | opts;
        tc->redirect = redirect;
        id_put(t->clients, c->id, c);
        if (opts & TRK_BCAST) {
            struct rv_str all = { "", 0 };
            bool have_all = false;
            for (size_t i = 0; i < tc->nprefix; i++) {
                have_all |= tc->plen[i] == 0;
            }
            if (nprefix) {
                add_prefixes(c, prefixes, nprefix);
            } else if (!have_all) {
                add_prefixes(c, &all, 1); /* BCAST alone: every key */
            }
        }
        return true;
    }
    return false;
}

void
tracking_off(struct conn *c)
{
    struct trk_conn *tc = c->trk;
    if (tc == NULL || !(tc->flags & TRK_ON)) {
        return;
    }
    drop_prefixes(c);
    tc->flags = 0;
    tc->redirect = 0;
    if (c->env->tracking != NULL) {
        uint64_t id = c->id;
        dict_delete(c->env->tracking->clients, (const char *)&id, sizeof(id), NULL);
    }
    tshard_maybe_free(c->env);
}

void
tracking_release(struct conn *c)
{
    if (c->trk == NULL) {
        return;
    }
    tracking_off(c);
    if (c->trk->target && c->env->tracking != NULL) {
        uint64_t id = c->id;
        dict_delete(c->env->tracking->targets, (const char *)&id, sizeof(id), NULL);
        tshard_maybe_free(c->env);
    }
    buf_deinit(&c->trk->held);
    rv_free(c->trk);
    c->trk = NULL;
}

bool
tracking_caching(struct conn *c, bool yes, char *err, size_t errsz)
{
    struct trk_conn *tc = c->trk;
    if (tc == NULL || !(tc->flags & TRK_ON)) {
        snprintf(err, errsz,
                 "CLIENT CACHING can be called only when the client is in tracking mode with "
                 "OPTIN or OPTOUT mode enabled");
        return false;
    }
    if (yes && !(tc->flags & TRK_OPTIN)) {
        snprintf(err, errsz,
                 "CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.");
        return false;
    }
    if (!yes && !(tc->flags & TRK_OPTOUT)) {
        snprintf(err, errsz,
                 "CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.");
        return false;
    }
    tc->flags |= TRK_CACHING;
    return true;
}

void
tracking_reply_info(struct conn *c)
{
    const struct trk_conn *tc = c->trk && (c->trk->flags & TRK_ON) ? c->trk : NULL;
    const char *names[8];
    size_t n = 0;
    unsigned f = tc ? tc->flags : 0;
    names[n++] = tc ? "on" : "off";
    if (f & TRK_BCAST) {
        names[n++] = "bcast";
    }
    if (f & TRK_OPTIN) {
        names[n++] = "optin";
        if (f & TRK_CACHING) {
            names[n++] = "caching-yes";
        }
    }
    if (f & TRK_OPTOUT) {
        names[n++] = "optout";
        if (f & TRK_CACHING) {
            names[n++] = "caching-no";
        }
    }
    if (f & TRK_NOLOOP) {
        names[n++] = "noloop";
    }
    if (f & TRK_BROKEN) {
        names[n++] = "broken_redirect";
    }
    reply_map(c, 3);
    reply_bulk_cstr(c, "flags");
    reply_set(c, n);
    for (size_t i = 0; i < n; i++) {
        reply_bulk_cstr(c, names[i]);
    }
    reply_bulk_cstr(c, "redirect");
    reply_int(c, tracking_redirect(c));
    reply_bulk_cstr(c, "prefixes");
    reply_array(c, tc ? tc->nprefix : 0);
    for (size_t i = 0; tc && i < tc->nprefix; i++) {
        reply_bulk(c, tc->prefix[i], tc->plen[i]);
    }
}

int64_t
tracking_redirect(const struct conn *c)
{
    return c->trk && (c->trk->flags & TRK_ON) ? (int64_t)c->trk->redirect : -1;
}

size_t
tracking_letters(const struct conn *c, char *out)
{
    size_t n = 0;
    if (c->trk && (c->trk->flags & TRK_ON)) {
        out[n++] = 't';
        if (c->trk->flags & TRK_BROKEN) {
            out[n++] = 'R';
        }
        if (c->trk->flags & TRK_BCAST) {
            out[n++] = 'B';
        }
    }
    return n;
}

/* ---------------------------------------------------------------- INFO */

size_t
tracking_clients(const struct shard *s)
{
    const struct trk_shard *t = shard_env(s)->tracking;
    return t ? dict_size(t->clients) : 0;
}

void
tracking_totals(const struct shard *s, size_t *keys, size_t *items, size_t *prefixes)
{
    const struct trk_shard *t = shard_env(s)->tracking;
    *keys = t ? dict_size(t->keys) : 0;
    *items = t ? t->items : 0;
    *prefixes = t ? dict_size(t->pfx) : 0; /* distinct prefixes, as Redis counts them */
}
