/* node/commands/t_coord.c: coordination commands (INCRBY ... MAX, SEMAPHORE, LEASE,
 * ONCE, LIMIT). Each runs on one shard's thread, so every command is atomic;
 * a refused request writes nothing. Deadlines are absolute unix ms taken from
 * the connection's clock (c->env->now_ms). The semaphore object is
 * node/types/coord.c. */
#include "node/commands/t_coord.h"

#include "base/rand.h"
#include "node/core/conn.h"
#include "node/keyspace/ks.h"
#include "node/core/lookup.h"
#include "node/core/reply.h"

#include <string.h>

/* ---------------------------------------------------------------- helpers */

/* A relative time in ms (> 0) as an absolute deadline, as SET PX checks it. */
static bool
arg_deadline(struct conn *c, struct rv_str a, const char *cmd, int64_t *out)
{
    int64_t ms;

    if (!cmd_arg_int(a, &ms)) {
        reply_err(c, RV_ERR_NOTINT);
        return false;
    }
    if (ms <= 0 || __builtin_add_overflow(c->env->now_ms, ms, out)) {
        reply_errf(c, "ERR invalid expire time in '%s' command", cmd);
        return false;
    }
    return true;
}

/* A positive count (limit, max). */
static bool
arg_positive(struct conn *c, struct rv_str a, const char *what, const char *cmd, int64_t *out)
{
    if (!cmd_arg_int(a, out)) {
        reply_err(c, RV_ERR_NOTINT);
        return false;
    }
    if (*out <= 0) {
        reply_errf(c, "ERR invalid %s in '%s' command", what, cmd);
        return false;
    }
    return true;
}

/* The integer value of a string entry; replies the error when it has none. */
static bool
entry_int(struct conn *c, const struct ks_entry *e, int64_t *out)
{
    char scratch[24];

    if (ks_entry_type(e) != KS_STRING) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return false;
    }
    if (ks_str_is_int(e)) {
        *out = ks_str_int(e);
        return true;
    }
    if (!cmd_arg_int(ks_str_get(e, scratch), out)) {
        reply_err(c, RV_ERR_NOTINT);
        return false;
    }
    return true;
}

/* ---------------------------------------------------------- INCRBY ... MAX */

void
coord_incrby_max(struct conn *c, int argc, struct rv_str *argv)
{
    struct ks_entry *e;
    int64_t by, limit, cur = 0, v;

    if (!cmd_arg_int(argv[2], &by)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    if (argc != 5 || !cmd_arg_is(argv[3], "max") || !cmd_arg_int(argv[4], &limit)) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    e = lookup_write(c, argv[1]);
    if (e != NULL && !entry_int(c, e, &cur)) {
        return;
    }
    if (__builtin_add_overflow(cur, by, &v)) {
        reply_err(c, RV_ERR_OVERFLOW);
        return;
    }
    if (v > limit) {
        reply_null(c);
        return;
    }
    if (e == NULL) {
        ks_set_int(c->env->ks, argv[1].p, argv[1].len, v, KS_NO_EXPIRE, false);
    } else {
        ks_str_set_int(c->env->ks, e, v); /* keeps the TTL */
    }
    reply_int(c, v);
}

/* -------------------------------------------------------------- SEMAPHORE */

static void
reply_token(struct conn *c, uint64_t tok)
{
    char buf[COORD_TOKEN_MAX];
    reply_bulk(c, buf, coord_token_fmt(tok, buf));
}

/* The semaphore at key, NULL when absent; *bad when the reply (WRONGTYPE) was sent. */
static struct coord_sem *
sem_lookup(struct conn *c, struct rv_str key, struct ks_entry **ep, bool *bad)
{
    struct ks_entry *e = lookup_write(c, key);

    *ep = e;
    *bad = false;
    if (e == NULL) {
        return NULL;
    }
    if (ks_entry_type(e) != KS_COORD) {
        reply_err(c, RV_ERR_WRONGTYPE);
        *bad = true;
        return NULL;
    }
    return ks_entry_ptr(e);
}

static void
sem_acquire(struct conn *c, struct rv_str key, int64_t limit, int64_t dl)
{
    struct ks *ks = c->env->ks;
    int64_t now = c->env->now_ms;
    struct ks_entry *e;
    struct coord_sem *s, *t;
    uint64_t tok;
    bool bad;

    s = sem_lookup(c, key, &e, &bad);
    if (bad) {
        return;
    }
    if (s == NULL) {
        s = coord_sem_create(1, rand_u64());
        tok = coord_sem_add(s, dl);
        ks_set_ptr(ks, key.p, key.len, KS_COORD, s, coord_sem_free, dl);
        reply_token(c, tok);
        return;
    }
    if ((int64_t)coord_sem_live(s, now) >= limit) {
        reply_null(c); /* full: nothing written */
        return;
    }
    coord_sem_prune(s, now);
    if (coord_sem_len(s) < coord_sem_cap(s)) {
        tok = coord_sem_add(s, dl);
        ks_set_expire(ks, e, coord_sem_max_deadline(s));
    } else {
        t = coord_sem_dup_cap(s, coord_sem_len(s) + 1);
        tok = coord_sem_add(t, dl);
        ks_set_ptr(ks, key.p, key.len, KS_COORD, t, coord_sem_free, coord_sem_max_deadline(t));
    }
    reply_token(c, tok);
}

/* RELEASE (dl == KS_NO_EXPIRE) or RENEW (dl = the holder's new deadline). */
static void
sem_update(struct conn *c, struct rv_str key, struct rv_str token, int64_t dl)
{
    int64_t now = c->env->now_ms;
    struct ks_entry *e;
    struct coord_sem *s;
    uint64_t tok;
    int64_t i;
    bool bad;

    s = sem_lookup(c, key, &e, &bad);
    if (bad) {
        return;
    }
    if (s == NULL || !coord_token_parse(token.p, token.len, &tok) ||
        (i = coord_sem_find(s, tok, now)) < 0) {
        reply_int(c, 0);
        return;
    }
    if (dl == KS_NO_EXPIRE) {
        coord_sem_remove(s, (uint32_t)i);
    } else {
        coord_sem_set_deadline(s, (uint32_t)i, dl);
    }
    if (coord_sem_prune(s, now) == 0) {
        ks_delete(c->env->ks, key.p, key.len);
    } else {
        ks_set_expire(c->env->ks, e, coord_sem_max_deadline(s));
    }
    reply_int(c, 1);
}

/* SEMAPHORE key RESTORE next [token deadline_ms ...] (internal: DUMP/RESTORE,
 * checkpoints): adds the holders exactly as given, creating the key when
 * missing, and sets the next token to issue. The key's TTL becomes the latest
 * holder deadline, as after any SEMAPHORE write. */
static void
sem_restore(struct conn *c, int argc, struct rv_str *argv)
{
    struct ks *ks = c->env->ks;
    struct coord_sem *s, *t;
    struct ks_entry *e;
    uint64_t next, tok;
    uint32_t add = (uint32_t)(argc - 4) / 2;
    bool bad;

    if ((argc - 4) % 2 != 0 || !coord_token_parse(argv[3].p, argv[3].len, &next)) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    for (int i = 4; i < argc; i += 2) {
        int64_t dl;
        if (!coord_token_parse(argv[i].p, argv[i].len, &tok) || !cmd_arg_int(argv[i + 1], &dl)) {
            reply_err(c, RV_ERR_SYNTAX);
            return;
        }
    }
    s = sem_lookup(c, argv[1], &e, &bad);
    if (bad) {
        return;
    }
    t = s == NULL ? coord_sem_create(add, next) : coord_sem_dup_cap(s, coord_sem_len(s) + add);
    coord_sem_set_next(t, next);
    for (int i = 4; i < argc; i += 2) {
        int64_t dl;
        coord_token_parse(argv[i].p, argv[i].len, &tok);
        cmd_arg_int(argv[i + 1], &dl);
        coord_sem_restore(t, tok, dl);
    }
    ks_set_ptr(ks, argv[1].p, argv[1].len, KS_COORD, t, coord_sem_free, coord_sem_max_deadline(t));
    reply_ok(c);
}

/* SEMAPHORE key limit ttl_ms | key RELEASE token | key RENEW token ttl_ms | key COUNT */
CMD_HANDLER(semaphore)
{
    struct coord_sem *s;
    struct ks_entry *e;
    int64_t limit, dl;
    bool bad;

    if (argc >= 4 && cmd_arg_is(argv[2], "restore")) {
        sem_restore(c, argc, argv);
    } else if (argc == 3 && cmd_arg_is(argv[2], "count")) {
        s = sem_lookup(c, argv[1], &e, &bad);
        if (!bad) {
            reply_int(c, s ? coord_sem_live(s, c->env->now_ms) : 0);
        }
    } else if (argc == 4 && cmd_arg_is(argv[2], "release")) {
        sem_update(c, argv[1], argv[3], KS_NO_EXPIRE);
    } else if (argc == 5 && cmd_arg_is(argv[2], "renew")) {
        if (arg_deadline(c, argv[4], "semaphore", &dl)) {
            sem_update(c, argv[1], argv[3], dl);
        }
    } else if (argc == 4 && cmd_arg_int(argv[2], &limit)) {
        if (limit <= 0) {
            reply_errf(c, "ERR invalid limit in 'semaphore' command");
        } else if (arg_deadline(c, argv[3], "semaphore", &dl)) {
            sem_acquire(c, argv[1], limit, dl);
        }
    } else {
        reply_err(c, RV_ERR_SYNTAX);
    }
}

/* ------------------------------------------------------------------ LEASE */

/* true when e is a string whose bytes are h. */
static bool
str_equals(const struct ks_entry *e, struct rv_str h)
{
    char scratch[24];
    struct rv_str v = ks_str_get(e, scratch);
    return v.len == h.len && memcmp(v.p, h.p, h.len) == 0;
}

/* LEASE key holder [PX ms] | LEASE key RELEASE holder */
CMD_HANDLER(lease)
{
    struct ks *ks = c->env->ks;
    struct rv_str key = argv[1];
    struct ks_entry *e;
    int64_t dl = KS_NO_EXPIRE;
    bool release = false;

    if (argc == 4 && cmd_arg_is(argv[2], "release")) {
        release = true;
    } else if (argc == 5 && cmd_arg_is(argv[3], "px")) {
        if (!arg_deadline(c, argv[4], "lease", &dl)) {
            return;
        }
    } else if (argc != 3) {
        reply_err(c, RV_ERR_SYNTAX);
        return;
    }
    e = lookup_write(c, key);
    if (e != NULL && ks_entry_type(e) != KS_STRING) {
        reply_err(c, RV_ERR_WRONGTYPE);
        return;
    }
    if (release) {
        bool mine = e != NULL && str_equals(e, argv[3]);
        if (mine) {
            ks_delete(ks, key.p, key.len);
        }
        reply_int(c, mine);
        return;
    }
    if (e == NULL) {
        ks_set_str(ks, key.p, key.len, argv[2].p, argv[2].len, dl, false);
    } else if (!str_equals(e, argv[2])) {
        reply_int(c, 0); /* held by another: nothing written */
        return;
    } else if (ks_entry_expire(e) != dl) {
        ks_set_expire(ks, e, dl); /* renew: the deadline this call asks for */
    }
    reply_int(c, 1);
}

/* ------------------------------------------------------------------- ONCE */

/* ONCE key ttl_ms */
CMD_HANDLER(once)
{
    struct ks_entry *e;
    int64_t dl;

    (void)argc;
    if (!arg_deadline(c, argv[2], "once", &dl)) {
        return;
    }
    e = lookup_write(c, argv[1]);
    if (e != NULL) {
        if (ks_entry_type(e) != KS_STRING) {
            reply_err(c, RV_ERR_WRONGTYPE);
        } else {
            reply_int(c, 0);
        }
        return;
    }
    ks_set_int(c->env->ks, argv[1].p, argv[1].len, 1, dl, false);
    reply_int(c, 1);
}

/* ------------------------------------------------------------------ LIMIT */

static void
reply_limit(struct conn *c, int64_t ok, int64_t remaining, int64_t reset_ms)
{
    reply_array(c, 3);
    reply_int(c, ok);
    reply_int(c, remaining);
    reply_int(c, reset_ms);
}

/* LIMIT key max window_ms: fixed window; the count lives in an int string
 * whose deadline is the end of the window. */
CMD_HANDLER(limit)
{
    struct ks *ks = c->env->ks;
    int64_t now = c->env->now_ms;
    struct ks_entry *e;
    int64_t max, dl, n, edl;

    (void)argc;
    if (!arg_positive(c, argv[2], "max", "limit", &max) ||
        !arg_deadline(c, argv[3], "limit", &dl)) {
        return;
    }
    e = lookup_write(c, argv[1]);
    if (e == NULL) {
        ks_set_int(ks, argv[1].p, argv[1].len, 1, dl, false);
        reply_limit(c, 1, max - 1, dl - now);
        return;
    }
    if (!entry_int(c, e, &n)) {
        return;
    }
    edl = ks_entry_expire(e);
    if (n >= max) {
        reply_limit(c, 0, 0, edl == KS_NO_EXPIRE ? -1 : edl - now);
        return;
    }
    ks_str_set_int(ks, e, n + 1); /* keeps the deadline; e may move */
    if (edl == KS_NO_EXPIRE) {    /* a count without a window: start one */
        e = ks_peek(ks, argv[1].p, argv[1].len);
        ks_set_expire(ks, e, dl);
        edl = dl;
    }
    if (__builtin_sub_overflow(max - 1, n, &max)) {
        max = INT64_MAX; /* a very negative count */
    }
    reply_limit(c, 1, max, edl - now);
}
