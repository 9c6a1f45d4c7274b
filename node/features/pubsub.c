/* node/features/pubsub.c */
#include "node/features/pubsub.h"

#include "cluster/slot.h"
#include "base/glob.h"
#include "base/mem.h"
#include "node/core/conn.h"
#include "node/keyspace/dict.h"
#include "node/core/node.h"
#include "node/core/shard.h"

#include <string.h>

/* Connections subscribed to one channel (dict value). */
struct subs {
    struct conn **v;
    size_t n, cap;
};

struct pattern_sub {
    char *pat;
    size_t len;
    struct conn *c;
};

/* Per shard. */
struct pubsub {
    struct dict *channels;  /* channel -> struct subs * */
    struct dict *schannels; /* shard channel -> struct subs * */
    struct pattern_sub *pats;
    size_t npats, cappats;
};

/* Per connection. */
struct pubsub_conn {
    struct dict *channels;  /* key-only */
    struct dict *schannels; /* key-only */
    struct rv_str *pats;    /* owned copies */
    size_t npats, cappats;
};

/* A message for subscribers on another shard: channel and payload inline. */
struct ps_msg {
    struct shard_msg base;
    size_t chlen, len;
    char data[];
};

static struct pubsub *
shard_ps(struct shard *s)
{
    struct pubsub **pp = &shard_env(s)->pubsub;
    if (*pp == NULL) {
        *pp = rv_calloc(1, sizeof(**pp));
        (*pp)->channels = dict_create();
        (*pp)->schannels = dict_create();
    }
    return *pp;
}

static struct pubsub_conn *
conn_ps(struct conn *c)
{
    if (c->ps == NULL) {
        c->ps = rv_calloc(1, sizeof(*c->ps));
        c->ps->channels = dict_create_kind(DICT_KEYONLY);
        c->ps->schannels = dict_create_kind(DICT_KEYONLY);
    }
    return c->ps;
}

static size_t
conn_total(const struct conn *c)
{
    return c->ps ? dict_size(c->ps->channels) + c->ps->npats : 0;
}

void
pubsub_counts(const struct conn *c, size_t *sub, size_t *psub, size_t *ssub)
{
    *sub = c->ps ? dict_size(c->ps->channels) : 0;
    *psub = c->ps ? c->ps->npats : 0;
    *ssub = c->ps ? dict_size(c->ps->schannels) : 0;
}

struct each_ctx {
    pubsub_visit_fn *fn;
    void *arg;
    bool ok;
};

static void
each_entry(void *arg, struct dict_entry *e)
{
    struct each_ctx *x = arg;
    x->ok = x->fn(x->arg, dict_key(e), false) && x->ok;
}

bool
pubsub_each(struct conn *c, pubsub_visit_fn *fn, void *arg)
{
    struct each_ctx x = { fn, arg, true };
    if (c->ps == NULL) {
        return true;
    }
    if (c->ps->channels) {
        dict_foreach(c->ps->channels, each_entry, &x);
    }
    if (c->ps->schannels) {
        dict_foreach(c->ps->schannels, each_entry, &x);
    }
    for (size_t i = 0; i < c->ps->npats; i++) {
        x.ok = fn(arg, c->ps->pats[i], true) && x.ok;
    }
    return x.ok;
}

static void
update_mode(struct conn *c)
{
    if (c->ps && (conn_total(c) + dict_size(c->ps->schannels)) > 0) {
        c->flags |= CONN_PUBSUB;
    } else {
        c->flags &= ~CONN_PUBSUB;
    }
}

static bool
subs_add(struct dict *tab, const char *ch, size_t len, struct conn *c)
{
    bool created;
    struct dict_entry *e = dict_add(tab, ch, len, &created);
    struct subs *s = created ? rv_calloc(1, sizeof(*s)) : dict_val_ptr(e);
    if (created) {
        dict_set_val_ptr(e, s);
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4;
        s->v = rv_realloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = c;
    return true;
}

static void
subs_remove(struct dict *tab, const char *ch, size_t len, struct conn *c)
{
    struct dict_entry *e = dict_find(tab, ch, len);
    if (e == NULL) {
        return;
    }
    struct subs *s = dict_val_ptr(e);
    for (size_t i = 0; i < s->n; i++) {
        if (s->v[i] == c) {
            s->v[i] = s->v[--s->n];
            break;
        }
    }
    if (s->n == 0) {
        dict_delete(tab, ch, len, NULL);
        rv_free(s->v);
        rv_free(s);
    }
}

static struct dict *
conn_tab(struct pubsub_conn *cp, enum pubsub_kind kind)
{
    return kind == PUBSUB_SHARD ? cp->schannels : cp->channels;
}

static struct dict *
shard_tab(struct pubsub *ps, enum pubsub_kind kind)
{
    return kind == PUBSUB_SHARD ? ps->schannels : ps->channels;
}

size_t
pubsub_count(const struct conn *c, enum pubsub_kind kind)
{
    if (kind == PUBSUB_SHARD) {
        return c->ps ? dict_size(c->ps->schannels) : 0;
    }
    return conn_total(c);
}

size_t
pubsub_subscribe(struct conn *c, enum pubsub_kind kind, struct rv_str ch)
{
    struct pubsub *ps = shard_ps(c->shard);
    struct pubsub_conn *cp = conn_ps(c);
    bool created;
    dict_add(conn_tab(cp, kind), ch.p, ch.len, &created);
    if (created) {
        subs_add(shard_tab(ps, kind), ch.p, ch.len, c);
        shard_pubsub_count_add(c->shard, 1);
    }
    update_mode(c);
    return pubsub_count(c, kind);
}

struct collect {
    struct rv_str *v;
    size_t n;
};

static void
collect_key(void *arg, struct dict_entry *e)
{
    struct collect *x = arg;
    struct rv_str k = dict_key(e);
    x->v[x->n++] = (struct rv_str){ rv_strndup(k.p, k.len), k.len };
}

static void
unsubscribe_one(struct conn *c, const char *ch, size_t len, enum pubsub_kind kind)
{
    struct pubsub *ps = shard_ps(c->shard);
    struct pubsub_conn *cp = conn_ps(c);
    if (dict_delete(conn_tab(cp, kind), ch, len, NULL)) {
        subs_remove(shard_tab(ps, kind), ch, len, c);
        shard_pubsub_count_add(c->shard, -1);
    }
}

size_t
pubsub_unsubscribe(struct conn *c, enum pubsub_kind kind, struct rv_str ch)
{
    unsubscribe_one(c, ch.p, ch.len, kind);
    update_mode(c);
    return pubsub_count(c, kind);
}

size_t
pubsub_unsubscribe_all(struct conn *c, enum pubsub_kind kind, pubsub_unsub_fn *fn, void *arg)
{
    struct dict *mine = conn_tab(conn_ps(c), kind);
    size_t n = dict_size(mine);
    if (n > 0) {
        struct collect x = { rv_malloc(n * sizeof(struct rv_str)), 0 };
        dict_foreach(mine, collect_key, &x);
        for (size_t i = 0; i < x.n; i++) {
            unsubscribe_one(c, x.v[i].p, x.v[i].len, kind);
            if (fn) {
                fn(arg, x.v[i], pubsub_count(c, kind));
            }
            rv_free((void *)x.v[i].p);
        }
        rv_free(x.v);
    }
    update_mode(c);
    return n;
}

static void
punsubscribe_one(struct conn *c, const char *pat, size_t len)
{
    struct pubsub *ps = shard_ps(c->shard);
    struct pubsub_conn *cp = conn_ps(c);
    for (size_t i = 0; i < cp->npats; i++) {
        if (cp->pats[i].len == len && memcmp(cp->pats[i].p, pat, len) == 0) {
            rv_free((void *)cp->pats[i].p);
            cp->pats[i] = cp->pats[--cp->npats];
            for (size_t j = 0; j < ps->npats; j++) {
                if (ps->pats[j].c == c && ps->pats[j].len == len &&
                    memcmp(ps->pats[j].pat, pat, len) == 0) {
                    rv_free(ps->pats[j].pat);
                    ps->pats[j] = ps->pats[--ps->npats];
                    break;
                }
            }
            shard_pubsub_count_add(c->shard, -1);
            break;
        }
    }
}

void
pubsub_release(struct conn *c)
{
    if (c->ps == NULL) {
        return;
    }
    pubsub_unsubscribe_all(c, PUBSUB_CHANNEL, NULL, NULL);
    pubsub_unsubscribe_all(c, PUBSUB_SHARD, NULL, NULL);
    while (c->ps->npats) {
        struct rv_str p = c->ps->pats[0];
        char *copy = rv_strndup(p.p, p.len);
        punsubscribe_one(c, copy, p.len);
        rv_free(copy);
    }
    dict_destroy(c->ps->channels, NULL);
    dict_destroy(c->ps->schannels, NULL);
    rv_free(c->ps->pats);
    rv_free(c->ps);
    c->ps = NULL;
    c->flags &= ~CONN_PUBSUB;
}

static void
free_subs(void *p)
{
    struct subs *s = p;
    rv_free(s->v);
    rv_free(s);
}

void
pubsub_shard_destroy(struct shard *s)
{
    struct pubsub **pp = &shard_env(s)->pubsub;
    if (*pp == NULL) {
        return;
    }
    dict_destroy((*pp)->channels, free_subs);
    dict_destroy((*pp)->schannels, free_subs);
    for (size_t i = 0; i < (*pp)->npats; i++) {
        rv_free((*pp)->pats[i].pat);
    }
    rv_free((*pp)->pats);
    rv_free(*pp);
    *pp = NULL;
}

/* A subscriber whose unread output passes the pub/sub limits is dropped, so a
 * slow reader cannot make the shard's memory grow without bound. */
static void
check_output_limit(struct conn *c)
{
    const struct cfg *cfg = c->env->cfg;
    size_t pending = c->wbuf.len - c->wbuf.off;
    int64_t hard = cfg->net.obl_hard[CFG_OBL_PUBSUB], soft = cfg->net.obl_soft[CFG_OBL_PUBSUB];
    bool over = false;
    if (hard > 0 && pending > (size_t)hard) {
        over = true;
    } else if (soft > 0 && pending > (size_t)soft) {
        int64_t now = c->env->now_ms;
        if (c->obl_soft_since == 0) {
            c->obl_soft_since = now;
        } else if (now - c->obl_soft_since >= cfg->net.obl_secs[CFG_OBL_PUBSUB] * 1000) {
            over = true;
        }
    } else {
        c->obl_soft_since = 0;
    }
    if (over && !(c->flags & CONN_CLOSE_ASAP)) {
        c->flags |= CONN_CLOSE_ASAP;
        c->env->stats.client_output_limit_disconnections++;
    }
}

static void
deliver_to(struct conn *c, const char *kind, const char *pat, size_t plen, const char *ch,
           size_t chlen, const char *msg, size_t len)
{
    if (c->flags & (CONN_CLOSE_ASAP | CONN_CLOSE_AFTER_REPLY)) {
        return;
    }
    resp_w_push(&c->wbuf, c->proto, pat ? 4 : 3);
    resp_w_bulk_cstr(&c->wbuf, kind);
    if (pat) {
        resp_w_bulk(&c->wbuf, pat, plen);
    }
    resp_w_bulk(&c->wbuf, ch, chlen);
    resp_w_bulk(&c->wbuf, msg, len);
    check_output_limit(c);
    shard_want_write(c->shard, c);
}

/* Deliver on this shard; returns the number of receivers. */
static size_t
deliver_local(struct shard *s, enum pubsub_kind kind, const char *ch, size_t chlen, const char *msg,
              size_t len)
{
    struct pubsub *ps = shard_env(s)->pubsub;
    size_t n = 0;
    if (ps == NULL) {
        return 0;
    }
    struct dict_entry *e = dict_find(kind == PUBSUB_SHARD ? ps->schannels : ps->channels, ch,
                                     chlen);
    if (e) {
        struct subs *sb = dict_val_ptr(e);
        for (size_t i = 0; i < sb->n; i++) {
            deliver_to(sb->v[i], kind == PUBSUB_SHARD ? "smessage" : "message", NULL, 0, ch, chlen,
                       msg, len);
        }
        n += sb->n;
    }
    if (kind == PUBSUB_CHANNEL) {
        for (size_t i = 0; i < ps->npats; i++) {
            struct pattern_sub *p = &ps->pats[i];
            if (glob_match(p->pat, p->len, ch, chlen, false)) {
                deliver_to(p->c, "pmessage", p->pat, p->len, ch, chlen, msg, len);
                n++;
            }
        }
    }
    return n;
}

static void
run_remote(struct shard *s, struct shard_msg *m)
{
    struct ps_msg *pm = (struct ps_msg *)m;
    deliver_local(s, PUBSUB_CHANNEL, pm->data, pm->chlen, pm->data + pm->chlen, pm->len);
    rv_free(pm);
}

size_t
pubsub_publish(struct shard *me, struct rv_str ch, struct rv_str msg)
{
    struct node *n = shard_env(me)->node;
    size_t got = deliver_local(me, PUBSUB_CHANNEL, ch.p, ch.len, msg.p, msg.len);
    for (unsigned i = 0; i < n->nshards; i++) {
        struct shard *to = n->shards[i];
        /* (NULL: not created yet; a keyspace event of WAL recovery at start-up) */
        if (to == NULL || to == me || shard_pubsub_count(to) == 0) {
            continue;
        }
        struct ps_msg *m = rv_malloc(sizeof(*m) + ch.len + msg.len);
        m->base.run = run_remote;
        m->chlen = ch.len;
        m->len = msg.len;
        memcpy(m->data, ch.p, ch.len);
        memcpy(m->data + ch.len, msg.p, msg.len);
        shard_post(to, &m->base);
    }
    return got;
}

size_t
pubsub_spublish(struct shard *s, struct rv_str ch, struct rv_str msg)
{
    return deliver_local(s, PUBSUB_SHARD, ch.p, ch.len, msg.p, msg.len);
}

size_t
pubsub_psubscribe(struct conn *c, struct rv_str pat)
{
    struct pubsub *ps = shard_ps(c->shard);
    struct pubsub_conn *cp = conn_ps(c);
    bool have = false;
    for (size_t j = 0; j < cp->npats && !have; j++) {
        have = cp->pats[j].len == pat.len && memcmp(cp->pats[j].p, pat.p, pat.len) == 0;
    }
    if (!have) {
        if (cp->npats == cp->cappats) {
            cp->cappats = cp->cappats ? cp->cappats * 2 : 4;
            cp->pats = rv_realloc(cp->pats, cp->cappats * sizeof(*cp->pats));
        }
        cp->pats[cp->npats++] = (struct rv_str){ rv_strndup(pat.p, pat.len), pat.len };
        if (ps->npats == ps->cappats) {
            ps->cappats = ps->cappats ? ps->cappats * 2 : 4;
            ps->pats = rv_realloc(ps->pats, ps->cappats * sizeof(*ps->pats));
        }
        ps->pats[ps->npats++] = (struct pattern_sub){ rv_strndup(pat.p, pat.len), pat.len, c };
        shard_pubsub_count_add(c->shard, 1);
    }
    update_mode(c);
    return conn_total(c);
}

size_t
pubsub_punsubscribe(struct conn *c, struct rv_str pat)
{
    punsubscribe_one(c, pat.p, pat.len);
    update_mode(c);
    return conn_total(c);
}

size_t
pubsub_punsubscribe_all(struct conn *c, pubsub_unsub_fn *fn, void *arg)
{
    struct pubsub_conn *cp = conn_ps(c);
    size_t n = 0;
    while (cp->npats) {
        struct rv_str p = cp->pats[cp->npats - 1];
        char *copy = rv_strndup(p.p, p.len);
        punsubscribe_one(c, copy, p.len);
        if (fn) {
            fn(arg, (struct rv_str){ copy, p.len }, conn_total(c));
        }
        rv_free(copy);
        n++;
    }
    update_mode(c);
    return n;
}

/* ---- introspection (this shard, as a cluster node answers) ---- */

struct name_visit {
    pubsub_name_fn *fn;
    void *arg;
};

static void
visit_channel(void *arg, struct dict_entry *e)
{
    struct name_visit *x = arg;
    x->fn(x->arg, dict_key(e));
}

void
pubsub_channels(struct shard *s, enum pubsub_kind kind, pubsub_name_fn *fn, void *arg)
{
    struct name_visit x = { fn, arg };
    dict_foreach(shard_tab(shard_ps(s), kind), visit_channel, &x);
}

size_t
pubsub_numsub(struct shard *s, enum pubsub_kind kind, struct rv_str ch)
{
    struct dict_entry *e = dict_find(shard_tab(shard_ps(s), kind), ch.p, ch.len);
    return e ? ((struct subs *)dict_val_ptr(e))->n : 0;
}

size_t
pubsub_numpat(struct shard *s)
{
    struct pubsub *ps = shard_ps(s);
    /* Redis counts distinct patterns. */
    size_t n = 0;
    for (size_t i = 0; i < ps->npats; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++) {
            seen = ps->pats[j].len == ps->pats[i].len &&
                   memcmp(ps->pats[j].pat, ps->pats[i].pat, ps->pats[i].len) == 0;
        }
        n += !seen;
    }
    return n;
}
