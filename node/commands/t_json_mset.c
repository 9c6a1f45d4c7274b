/* node/commands/t_json_mset.c: JSON.MSET, with RedisJSON 2.x's replies,
 * errors and events (t_json.c has the commands it shares JSON.SET's rules
 * with; t_json_int.h the helpers). Every triple is checked on its document
 * before any changes, so MSET applies all or nothing; a key named by several
 * triples is changed as RedisJSON's json_mset changes it (see mset_item). */
#include "node/commands/t_json.h"

#include "base/mem.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/ksnotify.h"
#include "node/keyspace/ks.h"
#include "node/types/json.h"
#include "node/types/json_path.h"
#include "node/commands/t_json_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mset_key {
    struct rv_str key;
    int i;
};

static int
cmp_mset_key(const void *a, const void *b)
{
    const struct mset_key *x = a, *y = b;
    size_t n = x->key.len < y->key.len ? x->key.len : y->key.len;
    int d = memcmp(x->key.p, y->key.p, n);
    if (d == 0 && x->key.len != y->key.len) {
        d = x->key.len < y->key.len ? -1 : 1;
    }
    return d != 0 ? d : x->i - y->i;
}

/* One step of a concrete path: a member name, or an array index. */
struct jstep {
    const char *k; /* into the document as it was (mset_item.orig) */
    size_t kl, idx;
    bool is_idx;
};

/* A place a triple of a key named again changes, found on the document as
 * it was before the command: the node to set, or (add) the object to add
 * the triple's member to; `steps` its concrete path, resolved again in the
 * document as the earlier triples left it. */
struct mset_tgt {
    struct json *node;
    int item;
    size_t nsteps;
    struct jstep *steps;
};

/* One triple of JSON.MSET. A key named by one triple is checked on its
 * document (set_check) and changed in place afterwards. A key named by
 * several is changed as RedisJSON 2.x's json_mset changes it: every triple's
 * targets are found on the document as it was before the command (a new key
 * takes root triples only), then the triples apply in order, on a copy, by
 * concrete path: a set where the path still leads somewhere, an add where
 * the parent is still an object without that member. */
struct mset_item {
    struct jpath *jp;
    struct json *v;
    int first;     /* the first triple naming the same key */
    bool multi;    /* (first triple) the key is named again */
    bool add;      /* (multi) targets are parents to add member k to */
    const char *k; /* (add) into jp */
    size_t kl;
    bool changed;      /* (multi) the triple changed its key */
    struct json *orig; /* (first triple of a multi key) the document before */
    struct json *otmp; /* (first, packed) orig decoded: freed at the end */
};

struct mset_loc {
    const struct json *node;
    size_t tgt;
};

static int
cmp_loc(const void *a, const void *b)
{
    const struct mset_loc *x = a, *y = b;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* Fills the steps of the targets at locs (sorted by node) in one walk of
 * the document: O(its nodes), whatever the number of triples. */
static void
locate(const struct json *n, struct jstep *stack, size_t depth, const struct mset_loc *locs,
       size_t nl, struct mset_tgt *tg, size_t *found)
{
    size_t lo = 0, hi = nl;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (locs[mid].node < n) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    for (; lo < nl && locs[lo].node == n; lo++, (*found)++) {
        struct mset_tgt *t = &tg[locs[lo].tgt];
        t->nsteps = depth;
        t->steps = rv_malloc((depth ? depth : 1) * sizeof(*t->steps));
        memcpy(t->steps, stack, depth * sizeof(*stack));
    }
    enum json_type ty = json_type(n);
    for (size_t i = 0; *found < nl && (ty == JSON_ARR || ty == JSON_OBJ) && i < json_len(n); i++) {
        struct jstep *s = &stack[depth];
        s->is_idx = ty == JSON_ARR;
        s->idx = i;
        s->k = s->is_idx ? NULL : json_obj_key(n, i, &s->kl);
        locate(s->is_idx ? json_arr_at(n, i) : json_obj_val(n, i), stack, depth + 1, locs, nl, tg,
               found);
    }
}

/* The node at steps in w, or NULL. As RedisJSON's path update: a step is
 * looked up by name in an object (an index as its decimal text) and by
 * index in an array (a name only when it is a plain decimal). */
static struct json *
resolve(struct json *w, const struct jstep *s, size_t n)
{
    for (size_t i = 0; w != NULL && i < n; i++) {
        char num[24];
        if (json_type(w) == JSON_OBJ) {
            size_t kl = s[i].kl;
            const char *k = s[i].k;
            if (s[i].is_idx) {
                kl = (size_t)snprintf(num, sizeof(num), "%zu", s[i].idx);
                k = num;
            }
            w = json_obj_get(w, k, kl);
        } else if (json_type(w) == JSON_ARR) {
            size_t idx = s[i].idx;
            bool ok = s[i].is_idx || (s[i].kl > 0 && s[i].kl < 20);
            for (size_t j = 0; !s[i].is_idx && ok && j < s[i].kl; j++) {
                ok = s[i].k[j] >= '0' && s[i].k[j] <= '9';
                idx = (j == 0 ? 0 : idx * 10) + (size_t)(s[i].k[j] - '0');
            }
            w = ok && idx < json_len(w) ? json_arr_at(w, idx) : NULL;
        } else {
            w = NULL;
        }
    }
    return w;
}

/* Checks triple i (its key's type, its path, where it goes on the key's
 * document (tjson_set_plan), its value, then the nesting limit) in RedisJSON 2.x's order;
 * a multi key's targets go to tg. false: replied. */
static bool
mset_check(struct conn *c, struct rv_str *argv, struct mset_item *t, int i, struct mset_tgt **tg,
           size_t *ntg, size_t *cap)
{
    struct rv_str key = argv[1 + 3 * i], path = argv[2 + 3 * i];
    struct mset_item *it = &t[i], *f = &t[it->first];
    bool err, root = tjson_root_text(path);
    struct ks_entry *e = tjson_entry(c, key, true, &err);
    struct json *tmp = NULL, *doc = NULL;
    if (err) {
        return false;
    }
    /* the key as it was: a triple below the root needs it to exist before
     * the command, even when an earlier triple creates it */
    if (!root && e == NULL) {
        reply_errf(c, TJSON_ERR_ROOT);
        return false;
    }
    if (!root && (it->jp = tjson_path(c, path)) == NULL) {
        return false;
    }
    if (root) {
        return (it->v = tjson_value(c, argv[3 + 3 * i])) != NULL;
    }
    /* as RedisJSON's json_mset: where the triple goes (find_paths, on the
     * document as it was before the command) before its value is parsed */
    if (f->multi) {
        doc = f->orig != NULL ? f->orig : (f->orig = tjson_doc_of(c, e, &f->otmp, &err));
    } else {
        doc = tjson_doc_of(c, e, &tmp, &err);
    }
    struct jmatches m = { 0 };
    int plan = doc == NULL ? -1 : tjson_set_plan(c, doc, it->jp, false, false, &m, &it->k, &it->kl);
    bool ok = plan >= 0 && (it->v = tjson_value(c, argv[3 + 3 * i])) != NULL;
    int vd = ok ? tjson_depth(it->v) : 0;
    for (size_t j = 0; ok && plan == TJSON_SET_REPLACE && j < m.n; j++) {
        if (m.v[j].depth + vd > JSON_MAX_DEPTH) {
            reply_errf(c, TJSON_ERR_DEPTH);
            ok = false;
        }
    }
    it->add = plan == TJSON_SET_ADD;
    for (size_t j = 0; ok && f->multi && plan > 0 && j < m.n; j++) {
        if (it->add &&
            (json_type(m.v[j].v) != JSON_OBJ || m.v[j].depth + 1 + vd > JSON_MAX_DEPTH)) {
            continue; /* as tjson_set_at: only an object takes the member, within the limit */
        }
        if (*ntg == *cap) {
            *cap = *cap ? 2 * *cap : 8;
            *tg = rv_realloc(*tg, *cap * sizeof(**tg));
        }
        (*tg)[(*ntg)++] = (struct mset_tgt){ m.v[j].v, i, 0, NULL };
    }
    jmatches_free(&m);
    json_destroy(tmp);
    return ok;
}

/* Applies the triples of the multi key whose first triple is f, in order,
 * to a copy of its document; returns the result (NULL: nothing changed). */
static struct json *
mset_apply(struct mset_item *t, int n, int f, struct mset_tgt *tg, size_t ntg)
{
    struct mset_loc *locs = rv_malloc((ntg ? ntg : 1) * sizeof(*locs));
    size_t nl = 0, found = 0;
    for (size_t j = 0; j < ntg; j++) {
        if (t[tg[j].item].first == f) {
            locs[nl++] = (struct mset_loc){ tg[j].node, j };
        }
    }
    if (nl > 0) {
        struct jstep stack[JSON_MAX_DEPTH + 1];
        qsort(locs, nl, sizeof(*locs), cmp_loc);
        locate(t[f].orig, stack, 0, locs, nl, tg, &found);
    }
    rv_free(locs);
    struct json *w = t[f].orig ? json_dup(t[f].orig) : NULL;
    bool any = false;
    size_t j = 0;
    for (int i = f; i < n; i++) {
        if (t[i].first != f) {
            continue;
        }
        if (t[i].jp == NULL) { /* the root: the document so far is replaced */
            json_destroy(w);
            w = t[i].v;
            t[i].v = NULL;
            t[i].changed = true;
        }
        for (; j < ntg && tg[j].item <= i; j++) {
            struct json *at = tg[j].item == i ? resolve(w, tg[j].steps, tg[j].nsteps) : NULL;
            if (at != NULL && !t[i].add) {
                json_assign_take(at, json_dup(t[i].v));
                t[i].changed = true;
            } else if (at != NULL && json_type(at) == JSON_OBJ &&
                       json_obj_find(at, t[i].k, t[i].kl) < 0) {
                json_obj_set_take(at, t[i].k, t[i].kl, json_dup(t[i].v));
                t[i].changed = true;
            }
        }
        any |= t[i].changed;
    }
    if (!any) {
        json_destroy(w);
        w = NULL;
    }
    return w;
}

CMD_HANDLER(json_mset)
{
    if ((argc - 1) % 3 != 0) {
        reply_err_arity(c, "json.mset");
        return;
    }
    int n = (argc - 1) / 3;
    struct mset_item *t = rv_calloc((size_t)n, sizeof(*t));
    struct mset_key *ks = rv_malloc((size_t)n * sizeof(*ks));
    struct mset_tgt *tg = NULL;
    size_t ntg = 0, cap = 0;
    bool ok = true, err;
    for (int i = 0; i < n; i++) {
        ks[i] = (struct mset_key){ argv[1 + 3 * i], i };
    }
    qsort(ks, (size_t)n, sizeof(*ks), cmp_mset_key);
    for (int i = 0; i < n; i++) {
        bool same = i > 0 && cmp_mset_key(&(struct mset_key){ ks[i].key, 0 },
                                          &(struct mset_key){ ks[i - 1].key, 0 }) == 0;
        t[ks[i].i].first = same ? t[ks[i - 1].i].first : ks[i].i;
        t[t[ks[i].i].first].multi |= same;
    }
    rv_free(ks);
    /* check everything first, changing nothing: MSET applies all or nothing */
    for (int i = 0; i < n && ok; i++) {
        ok = mset_check(c, argv, t, i, &tg, &ntg, &cap);
    }
    for (int i = 0; i < n && ok; i++) {
        struct rv_str key = argv[1 + 3 * i];
        struct ks_entry *e = tjson_entry(c, key, true, &err);
        int64_t dl = e ? ks_entry_expire(e) : KS_NO_EXPIRE;
        struct json *doc, *tmp;
        /* events: one per triple that changed its key, in the triples'
         * order, as RedisJSON's json_mset publishes them */
        bool changed = true;
        if (t[i].multi) {
            struct json *w = mset_apply(t, n, i, tg, ntg);
            if (w != NULL) {
                tjson_store(c, key, w, dl); /* frees orig (a tree): last use */
                t[i].orig = NULL;
            }
            changed = t[i].changed;
        } else if (t[t[i].first].multi) {
            changed = t[i].changed; /* stored with its key's first triple */
        } else if (e == NULL || t[i].jp == NULL) {
            tjson_store(c, key, t[i].v, dl);
            t[i].v = NULL;
        } else if ((doc = tjson_doc_w(c, key, &tmp, &dl, &err)) != NULL) {
            /* checked: tjson_set_at cannot fail here */
            changed = tjson_set_at(c, doc, t[i].jp, t[i].v, false, false) == 1;
            t[i].v = NULL;
            tjson_doc_w_done(c, key, tmp, dl, changed);
        }
        if (changed) {
            ksn_event(c->env, KSN_MODULE, "json.mset", key);
        }
    }
    for (int i = 0; i < n; i++) {
        jpath_destroy(t[i].jp);
        json_destroy(t[i].v);
        json_destroy(t[i].otmp);
    }
    for (size_t j = 0; j < ntg; j++) {
        rv_free(tg[j].steps);
    }
    rv_free(tg);
    rv_free(t);
    if (ok) {
        reply_ok(c);
    }
}
