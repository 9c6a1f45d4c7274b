/* node/features/acl.c: the node's ACL users: snapshots shared by the shards, loading
 * and saving them, connections and their users, the dispatcher's permission check and
 * the ACL LOG. One user's rules and checks are acl_user.c. See acl.h for the design. */
#include "node/features/acl_int.h"

#include "base/buf.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "node/features/clientinfo.h"
#include "node/features/pubsub.h"
#include "node/core/reply.h"
#include "node/core/shard.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>

struct acl_snap {
    struct acl_user **users; /* sorted by name */
    size_t n;
    int refs;           /* the publisher's + one per shard that points into it */
    bool auth_required; /* default user off or with passwords */
};

atomic_uint_fast64_t acl_gen = 1;

static pthread_mutex_t acl_mu = PTHREAD_MUTEX_INITIALIZER;
static struct acl_snap *acl_cur; /* guarded by acl_mu */

/* ---------------------------------------------------------------- snapshots */

static struct acl_snap *
snap_new(size_t cap)
{
    struct acl_snap *s = rv_calloc(1, sizeof(*s));
    s->users = rv_calloc(cap ? cap : 1, sizeof(*s->users));
    return s;
}

static void
snap_free(struct acl_snap *s)
{
    for (size_t i = 0; i < s->n; i++) {
        acl_user_free(s->users[i]);
    }
    rv_free(s->users);
    rv_free(s);
}

static struct acl_snap *
snap_dup(const struct acl_snap *src, size_t extra)
{
    struct acl_snap *s = snap_new(src->n + extra);
    for (size_t i = 0; i < src->n; i++) {
        s->users[i] = acl_user_dup(src->users[i]);
    }
    s->n = src->n;
    return s;
}

static struct acl_user *
snap_find(const struct acl_snap *s, const char *name, size_t len, size_t *pos)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const char *un = s->users[mid]->name;
        size_t ul = strlen(un);
        int c = memcmp(un, name, ul < len ? ul : len);
        if (c == 0) {
            c = ul < len ? -1 : ul > len ? 1 : 0;
        }
        if (c == 0) {
            if (pos) {
                *pos = mid;
            }
            return s->users[mid];
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (pos) {
        *pos = lo;
    }
    return NULL;
}

static void
snap_insert(struct acl_snap *s, struct acl_user *u, size_t pos)
{
    memmove(&s->users[pos + 1], &s->users[pos], (s->n - pos) * sizeof(*s->users));
    s->users[pos] = u;
    s->n++;
}

static void
snap_finish(struct acl_snap *s)
{
    for (size_t i = 0; i < s->n; i++) {
        acl_user_update_fast(s->users[i]);
    }
    const struct acl_user *d = snap_find(s, "default", 7, NULL);
    s->auth_required = !(d->flags & U_ON) || !(d->flags & U_NOPASS);
}

/* Caller holds acl_mu. */
static void
snap_unref_locked(struct acl_snap *s)
{
    if (s && --s->refs == 0) {
        snap_free(s);
    }
}

/* Caller holds acl_mu; takes ownership of next. */
static void
publish_locked(struct acl_snap *next)
{
    snap_finish(next);
    next->refs = 1;
    struct acl_snap *old = acl_cur;
    acl_cur = next;
    atomic_fetch_add_explicit(&acl_gen, 1, memory_order_release);
    snap_unref_locked(old);
}

static struct acl_snap *
snap_acquire(uint64_t *gen)
{
    pthread_mutex_lock(&acl_mu);
    struct acl_snap *s = acl_cur;
    s->refs++;
    *gen = atomic_load_explicit(&acl_gen, memory_order_relaxed);
    pthread_mutex_unlock(&acl_mu);
    return s;
}

void
acl_shard_release(struct acl_snap *snap)
{
    if (snap == NULL) {
        return;
    }
    pthread_mutex_lock(&acl_mu);
    snap_unref_locked(snap);
    pthread_mutex_unlock(&acl_mu);
}

enum decl_rc { DECL_OK = 0, DECL_DUP, DECL_RULE };

/* One declaration "rules..." for user name (config `user` line or ACL file
 * line): a user may be declared once; "default" starts over from scratch (as
 * Redis). On DECL_RULE, bad and badlen name the rule, why the reason. */
static enum decl_rc
declare_user(struct acl_snap *s, const char *name, size_t nlen, const char *p, bool *default_seen,
             const char **bad, size_t *badlen, const char **why)
{
    size_t pos;
    struct acl_user *u = snap_find(s, name, nlen, &pos);
    bool is_default = nlen == 7 && memcmp(name, "default", 7) == 0;
    if (u != NULL && (!is_default || *default_seen)) {
        return DECL_DUP;
    }
    if (u == NULL) {
        u = acl_user_new(name, nlen);
        snap_insert(s, u, pos);
    } else {
        *default_seen = true;
        acl_user_free(u);
        u = s->users[pos] = acl_user_new(name, nlen);
    }
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r') {
            p++;
        }
        if (!*p) {
            return DECL_OK;
        }
        const char *r = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\r') {
            p++;
        }
        *why = acl_user_apply(u, r, (size_t)(p - r));
        if (*why) {
            *bad = r;
            *badlen = (size_t)(p - r);
            return DECL_RULE;
        }
    }
}

/* Lines of `text` (config `user` values "name rules...", or an ACL file's
 * "user name rules..." when path != NULL) into s. Errors as Redis words them. */
static int
load_lines(struct acl_snap *s, const char *text, const char *path, char *err, size_t errsz)
{
    bool default_seen = false;
    int lineno = 0;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[8192];
        lineno++;
        if (len >= sizeof(line)) {
            snprintf(err, errsz, "%s:%d: line too long", path ? path : "user", lineno);
            return -1;
        }
        memcpy(line, p, len);
        line[len] = '\0';
        p += len + (nl ? 1 : 0);
        char *q = line;
        while (*q == ' ' || *q == '\t' || *q == '\r') {
            q++;
        }
        if (*q == '\0') {
            continue;
        }
        if (path) {
            if (strncmp(q, "user", 4) != 0 || (q[4] != ' ' && q[4] != '\t')) {
                snprintf(err, errsz,
                         "%s:%d should start with user keyword followed by the username", path,
                         lineno);
                return -1;
            }
            q += 4;
            while (*q == ' ' || *q == '\t') {
                q++;
            }
        }
        const char *name = q;
        while (*q && *q != ' ' && *q != '\t' && *q != '\r') {
            q++;
        }
        size_t nlen = (size_t)(q - name);
        if (nlen == 0) {
            snprintf(err, errsz,
                     path ? "%s:%d should start with user keyword followed by the username"
                          : "%s:%d: 'user' needs a user name",
                     path ? path : "user", lineno);
            return -1;
        }
        const char *bad = NULL, *why = NULL;
        size_t badlen = 0;
        switch (declare_user(s, name, nlen, q, &default_seen, &bad, &badlen, &why)) {
        case DECL_OK: break;
        case DECL_DUP:
            if (path) {
                snprintf(err, errsz, "WARNING: Duplicate user '%.*s' found on line %d", (int)nlen,
                         name, lineno);
            } else {
                snprintf(err, errsz,
                         "Error in user declaration '%.*s': Duplicate user found. A user "
                         "can only be defined once in config files",
                         (int)nlen, name);
            }
            return -1;
        case DECL_RULE:
            if (path) {
                snprintf(err, errsz, "%s:%d: Error in applying operation '%.*s': %s", path, lineno,
                         (int)badlen, bad, why);
            } else {
                snprintf(err, errsz, "user '%.*s': rule '%.*s': %s", (int)nlen, name, (int)badlen,
                         bad, why);
            }
            return -1;
        }
    }
    return 0;
}

/* The ACL file's users on top of `def` (a copy of the current default user,
 * kept unless the file declares "default"); NULL with err on failure. */
static struct acl_snap *
load_file(const char *path, const struct acl_user *def, char *err, size_t errsz)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errsz, "Error loading ACLs, opening file '%s': %s", path, strerror(errno));
        return NULL;
    }
    struct buf text;
    buf_init(&text);
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        buf_append(&text, chunk, n);
    }
    fclose(f);
    buf_putc(&text, '\0');
    struct acl_snap *s = snap_new(8);
    s->users[s->n++] = acl_user_dup(def);
    int rc = load_lines(s, text.data, path, err, errsz);
    buf_deinit(&text);
    if (rc != 0) {
        size_t l = strlen(err);
        snprintf(err + l, errsz - l,
                 ". WARNING: ACL errors detected, no change to the previously "
                 "active ACL rules was performed");
        snap_free(s);
        return NULL;
    }
    return s;
}

static char acl_path[4096]; /* aclfile, "" = none; set once by acl_init */

int
acl_init(const char *requirepass, const char *user_lines, const char *aclfile, char *err,
         size_t errsz)
{
    struct acl_user *d = acl_user_new("default", 7);
    acl_user_apply(d, "on", 2);
    acl_user_apply(d, "~*", 2);
    acl_user_apply(d, "&*", 2);
    acl_user_apply(d, "+@all", 5);
    acl_user_set_password(d, requirepass ? requirepass : "");
    struct acl_snap *s;
    if (aclfile && aclfile[0]) {
        if (user_lines && user_lines[0]) {
            snprintf(err, errsz,
                     "users are defined both with 'user' lines and in 'aclfile': define "
                     "them in one place only");
            acl_user_free(d);
            return -1;
        }
        snprintf(acl_path, sizeof(acl_path), "%s", aclfile);
        s = load_file(aclfile, d, err, errsz);
        acl_user_free(d);
        if (s == NULL) {
            return -1;
        }
    } else {
        s = snap_new(8);
        s->users[s->n++] = d;
        if (load_lines(s, user_lines ? user_lines : "", NULL, err, errsz) != 0) {
            snap_free(s);
            return -1;
        }
    }
    pthread_mutex_lock(&acl_mu);
    publish_locked(s);
    pthread_mutex_unlock(&acl_mu);
    return 0;
}

void
acl_shutdown(void)
{
    pthread_mutex_lock(&acl_mu);
    snap_unref_locked(acl_cur);
    acl_cur = NULL;
    pthread_mutex_unlock(&acl_mu);
}

void
acl_set_requirepass(const char *pass)
{
    pthread_mutex_lock(&acl_mu);
    struct acl_snap *next = snap_dup(acl_cur, 0);
    acl_user_set_password(snap_find(next, "default", 7, NULL), pass);
    publish_locked(next);
    pthread_mutex_unlock(&acl_mu);
}

bool
acl_default_nopass(void)
{
    pthread_mutex_lock(&acl_mu);
    bool r = (snap_find(acl_cur, "default", 7, NULL)->flags & U_NOPASS) != 0;
    pthread_mutex_unlock(&acl_mu);
    return r;
}

bool
acl_default_open(struct shard *s)
{
    if (acl_gen_now() != shard_env(s)->acl_gen) {
        acl_shard_refresh(s);
    }
    const struct acl_user *d = snap_find(shard_env(s)->acl, "default", 7, NULL);
    return (d->flags & U_NOPASS) && (d->flags & U_ON);
}

/* ---------------------------------------------------------------- connections */

static void
conn_acl_update(struct conn *c, const struct acl_snap *snap)
{
    bool need_auth = !c->authed && snap->auth_required;
    c->acl_slow = need_auth || !c->user->fast;
    c->parser.lim.authed = !need_auth;
}

static bool
sub_still_allowed(void *arg, struct rv_str name, bool pattern)
{
    return acl_user_chan_ok(arg, name.p, name.len, pattern);
}

void
acl_shard_refresh(struct shard *s)
{
    struct acl_snap **cur = &shard_env(s)->acl;
    uint64_t *seen = &shard_env(s)->acl_gen;
    uint64_t gen;
    struct acl_snap *next = snap_acquire(&gen);
    if (next == *cur) {
        acl_shard_release(next);
        *seen = gen;
        return;
    }
    for (struct conn *c = shard_conn_first(s); c; c = c->next) {
        const struct acl_user *old = c->user;
        struct acl_user *u = snap_find(next, old->name, strlen(old->name), NULL);
        if (u == NULL) {
            /* Redis closes the clients of a deleted user (a user turned off
             * keeps its open connections, as in Redis: only new logins fail). */
            c->user = snap_find(next, "default", 7, NULL);
            c->authed = false;
            conn_acl_update(c, next);
            if (!(c->flags & CONN_CLOSE_ASAP)) {
                c->flags |= CONN_CLOSE_ASAP;
                shard_want_write(s, c);
            }
            continue;
        }
        c->user = u;
        conn_acl_update(c, next);
        /* As Redis: a subscriber whose user lost one of its channels is closed. */
        if ((c->flags & CONN_PUBSUB) && !(u->flags & U_ALLCHANNELS) &&
            !pubsub_each(c, sub_still_allowed, u) && !(c->flags & CONN_CLOSE_ASAP)) {
            c->flags |= CONN_CLOSE_ASAP;
            shard_want_write(s, c);
        }
    }
    struct acl_snap *old = *cur;
    *cur = next;
    *seen = gen;
    acl_shard_release(old);
}

void
acl_conn_init(struct conn *c)
{
    struct shard *s = c->shard;
    if (rv_unlikely(acl_gen_now() != shard_env(s)->acl_gen)) {
        acl_shard_refresh(s);
    }
    const struct acl_snap *snap = shard_env(s)->acl;
    c->user = snap_find(snap, "default", 7, NULL);
    c->authed = !snap->auth_required;
    conn_acl_update(c, snap);
}

void
acl_conn_reset(struct conn *c)
{
    acl_conn_init(c);
}

bool
acl_user_exists(struct rv_str name)
{
    pthread_mutex_lock(&acl_mu);
    bool r = snap_find(acl_cur, name.p, name.len, NULL) != NULL;
    pthread_mutex_unlock(&acl_mu);
    return r;
}

const char *
acl_user_name(const struct acl_user *u)
{
    return u ? u->name : "default";
}

/* ---------------------------------------------------------------- ACL LOG */

#define ACL_LOG_MAX 128

struct acl_log_entry {
    uint64_t id;
    int64_t count;
    const char *reason; /* static */
    char context[16];
    char *object;
    char *username;
    char *client_info;
    int64_t created_ms, updated_ms;
};

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static struct acl_log_entry log_ring[ACL_LOG_MAX]; /* newest first, log_n valid */
static size_t log_n;
static uint64_t log_next_id;

static void
log_entry_free(struct acl_log_entry *e)
{
    rv_free(e->object);
    rv_free(e->username);
    rv_free(e->client_info);
}

/* INFO stats acl_access_denied_{auth,cmd,key,channel}, node-wide. */
static atomic_ulong denied[4];

void
acl_denied_counts(uint64_t out[4])
{
    for (int i = 0; i < 4; i++) {
        out[i] = atomic_load_explicit(&denied[i], memory_order_relaxed);
    }
}

static void
acl_log_add(struct conn *c, const char *reason, const char *obj, size_t objlen, const char *user,
            size_t ulen)
{
    int kind = reason[0] == 'a'                       ? 0
               : reason[0] == 'c' && reason[1] == 'o' ? 1
               : reason[0] == 'k'                     ? 2
                                                      : 3;
    atomic_fetch_add_explicit(&denied[kind], 1, memory_order_relaxed);
    struct buf ci;
    buf_init(&ci);
    clientinfo_line(c, c, &ci);
    if (ci.len && ci.data[ci.len - 1] == '\n') {
        ci.len--;
    }
    const char *ctx = (c->flags & CONN_IN_SCRIPT)                ? "lua"
                      : (c->flags & (CONN_MULTI | CONN_IN_EXEC)) ? "multi"
                                                                 : "toplevel";
    int64_t now = clock_unix_ms();
    pthread_mutex_lock(&log_mu);
    for (size_t i = 0; i < log_n; i++) {
        struct acl_log_entry *e = &log_ring[i];
        if (e->reason == reason && strcmp(e->context, ctx) == 0 && strlen(e->object) == objlen &&
            memcmp(e->object, obj, objlen) == 0 && strlen(e->username) == ulen &&
            memcmp(e->username, user, ulen) == 0 && now - e->updated_ms < 60000) {
            e->count++;
            e->updated_ms = now;
            rv_free(e->client_info);
            e->client_info = rv_strndup(ci.data ? ci.data : "", ci.len);
            struct acl_log_entry tmp = *e; /* move to the front */
            memmove(&log_ring[1], &log_ring[0], i * sizeof(log_ring[0]));
            log_ring[0] = tmp;
            pthread_mutex_unlock(&log_mu);
            buf_deinit(&ci);
            return;
        }
    }
    if (log_n == ACL_LOG_MAX) {
        log_entry_free(&log_ring[--log_n]);
    }
    memmove(&log_ring[1], &log_ring[0], log_n * sizeof(log_ring[0]));
    struct acl_log_entry *e = &log_ring[0];
    memset(e, 0, sizeof(*e));
    e->id = log_next_id++;
    e->count = 1;
    e->reason = reason;
    snprintf(e->context, sizeof(e->context), "%s", ctx);
    e->object = rv_strndup(obj, objlen);
    e->username = rv_strndup(user, ulen);
    e->client_info = rv_strndup(ci.data ? ci.data : "", ci.len);
    e->created_ms = e->updated_ms = now;
    log_n++;
    pthread_mutex_unlock(&log_mu);
    buf_deinit(&ci);
}

void
acl_log_reset(void)
{
    pthread_mutex_lock(&log_mu);
    for (size_t i = 0; i < log_n; i++) {
        log_entry_free(&log_ring[i]);
    }
    log_n = 0;
    pthread_mutex_unlock(&log_mu);
}

struct acl_log_view *
acl_log_copy(int64_t count, size_t *nout)
{
    pthread_mutex_lock(&log_mu);
    size_t n = count < 0 || (uint64_t)count > log_n ? log_n : (size_t)count;
    struct acl_log_view *v = rv_calloc(n ? n : 1, sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        const struct acl_log_entry *e = &log_ring[i];
        v[i] = (struct acl_log_view){
            .id = e->id,
            .count = e->count,
            .reason = e->reason,
            .context = rv_strndup(e->context, strlen(e->context)),
            .object = rv_strndup(e->object, strlen(e->object)),
            .username = rv_strndup(e->username, strlen(e->username)),
            .client_info = rv_strndup(e->client_info, strlen(e->client_info)),
            .created_ms = e->created_ms,
            .updated_ms = e->updated_ms,
        };
    }
    pthread_mutex_unlock(&log_mu);
    *nout = n;
    return v;
}

void
acl_log_free(struct acl_log_view *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        rv_free((char *)v[i].context);
        rv_free((char *)v[i].object);
        rv_free((char *)v[i].username);
        rv_free((char *)v[i].client_info);
    }
    rv_free(v);
}

/* ---------------------------------------------------------------- checks */

/* The refusal: Redis 7.2's texts; inside EXEC (rules changed after queueing) with Redis's preamble. */
static void
reply_noperm(struct conn *c, const char *reason)
{
    if (c->flags & CONN_IN_EXEC) {
        reply_errf(
            c,
            "NOPERM ACLs rules changed between the moment the transaction was accumulated "
            "and the EXEC call. This command is no longer allowed for the following reason: %s",
            reason);
    } else {
        reply_errf(c, "NOPERM %s", reason);
    }
}

bool
acl_allow(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv)
{
    if (!c->authed && (c->env->acl)->auth_required) {
        if (cmd->flags & CMD_NOAUTH) {
            return true;
        }
        reply_err(c, RV_ERR_NOAUTH);
        return false;
    }
    const struct acl_user *u = c->user;
    int bad = 0;
    char full[96], why[256];
    switch (acl_user_check(u, cmd, argc, argv, &bad)) {
    case ACL_OK: return true;
    case ACL_DENY_CMD:
        cmd_fullname(cmd, full, sizeof(full));
        snprintf(why, sizeof(why), "User %s has no permissions to run the '%s' command", u->name,
                 full);
        reply_noperm(c, why);
        acl_log_add(c, "command", full, strlen(full), u->name, strlen(u->name));
        return false;
    case ACL_DENY_KEY:
        reply_noperm(c, "No permissions to access a key");
        acl_log_add(c, "key", argv[bad].p, argv[bad].len, u->name, strlen(u->name));
        return false;
    case ACL_DENY_CHAN:
        reply_noperm(c, "No permissions to access a channel");
        acl_log_add(c, "channel", argv[bad].p, argv[bad].len, u->name, strlen(u->name));
        return false;
    }
    return false;
}

bool
acl_auth(struct conn *c, const struct rv_str *user, struct rv_str pass)
{
    struct shard *s = c->shard;
    if (acl_gen_now() != shard_env(s)->acl_gen) {
        acl_shard_refresh(s);
    }
    const struct acl_snap *snap = shard_env(s)->acl;
    const char *name = user ? user->p : "default";
    size_t nlen = user ? user->len : 7;
    const struct acl_user *u = snap_find(snap, name, nlen, NULL);
    bool ok = u && (u->flags & U_ON) && acl_user_pass_ok(u, pass);
    if (!ok) {
        acl_log_add(c, "auth", "AUTH", 4, name, nlen);
        return false;
    }
    c->user = u;
    c->authed = true;
    conn_acl_update(c, snap);
    return true;
}

/* ---------------------------------------------------------------- for the ACL command */

static bool
valid_username(struct rv_str n)
{
    for (size_t i = 0; i < n.len; i++) {
        if (n.p[i] == ' ' || n.p[i] == '\0') {
            return false;
        }
    }
    return n.len > 0;
}

/* After a change published from shard s: adopt it here at once, so the
 * reply and the rest of this read batch see it; other shards adopt it at
 * their next read batch (and are woken to close clients of removed users). */
static void
adopt_everywhere(struct shard *s)
{
    acl_shard_refresh(s);
    struct node *n = shard_env(s)->node;
    shard_wake_all(n, s);
}

int
acl_setuser(struct shard *s, struct rv_str name, int nrules, const struct rv_str *rules, char *err,
            size_t errsz)
{
    if (!valid_username(name)) {
        snprintf(err, errsz, "ERR Usernames can't contain spaces or null characters");
        return -1;
    }
    pthread_mutex_lock(&acl_mu);
    struct acl_snap *next = snap_dup(acl_cur, 1);
    size_t pos;
    struct acl_user *u = snap_find(next, name.p, name.len, &pos);
    if (u == NULL) {
        u = acl_user_new(name.p, name.len);
        snap_insert(next, u, pos);
    }
    for (int i = 0; i < nrules; i++) {
        const char *why = acl_user_apply(u, rules[i].p, rules[i].len);
        if (why) {
            snprintf(err, errsz, "ERR Error in ACL SETUSER modifier '%.*s': %s",
                     (int)(rules[i].len > 128 ? 128 : rules[i].len), rules[i].p, why);
            pthread_mutex_unlock(&acl_mu);
            snap_free(next);
            return -1;
        }
    }
    publish_locked(next);
    pthread_mutex_unlock(&acl_mu);
    adopt_everywhere(s);
    return 0;
}

int
acl_deluser(struct shard *s, int n, const struct rv_str *names, char *err, size_t errsz)
{
    for (int i = 0; i < n; i++) {
        if (names[i].len == 7 && memcmp(names[i].p, "default", 7) == 0) {
            snprintf(err, errsz, "ERR The 'default' user cannot be removed");
            return -1;
        }
    }
    pthread_mutex_lock(&acl_mu);
    struct acl_snap *next = snap_dup(acl_cur, 0);
    int gone = 0;
    for (int i = 0; i < n; i++) {
        size_t pos;
        struct acl_user *u = snap_find(next, names[i].p, names[i].len, &pos);
        if (u) {
            acl_user_free(u);
            memmove(&next->users[pos], &next->users[pos + 1],
                    (next->n - pos - 1) * sizeof(*next->users));
            next->n--;
            gone++;
        }
    }
    if (gone == 0) {
        pthread_mutex_unlock(&acl_mu);
        snap_free(next);
        return 0;
    }
    publish_locked(next);
    pthread_mutex_unlock(&acl_mu);
    adopt_everywhere(s);
    return gone;
}

/* ---- reading the users (ACL LIST, USERS, GETUSER) ---- */

struct acl_snap *
acl_snap_get(void)
{
    uint64_t gen;
    return snap_acquire(&gen);
}

void
acl_snap_put(struct acl_snap *s)
{
    acl_shard_release(s);
}

size_t
acl_snap_count(const struct acl_snap *s)
{
    return s->n;
}

const struct acl_user *
acl_snap_user(const struct acl_snap *s, size_t i)
{
    return s->users[i];
}

const struct acl_user *
acl_snap_find(const struct acl_snap *s, struct rv_str name)
{
    return snap_find(s, name.p, name.len, NULL);
}

static const char no_aclfile[] =
    "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via "
    "the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration "
    "file set) in order to store users in the Redis configuration.";

int
acl_load(struct shard *s, char *err, size_t errsz)
{
    if (acl_path[0] == '\0') {
        snprintf(err, errsz, "%s", no_aclfile);
        return -1;
    }
    char why[1024];
    pthread_mutex_lock(&acl_mu);
    struct acl_snap *next = load_file(acl_path, snap_find(acl_cur, "default", 7, NULL), why,
                                      sizeof(why));
    if (next == NULL) {
        pthread_mutex_unlock(&acl_mu);
        snprintf(err, errsz, "ERR %s", why);
        return -1;
    }
    publish_locked(next);
    pthread_mutex_unlock(&acl_mu);
    adopt_everywhere(s);
    return 0;
}

int
acl_save(char *err, size_t errsz)
{
    if (acl_path[0] == '\0') {
        snprintf(err, errsz, "%s", no_aclfile);
        return -1;
    }
    struct buf b;
    buf_init(&b);
    pthread_mutex_lock(&acl_mu);
    for (size_t i = 0; i < acl_cur->n; i++) {
        acl_user_describe(acl_cur->users[i], &b);
        buf_putc(&b, '\n');
    }
    pthread_mutex_unlock(&acl_mu);
    /* write a temporary file, sync it, rename it over the old one */
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp-%d", acl_path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = fd >= 0;
    for (size_t off = 0; ok && off < b.len;) {
        ssize_t w = write(fd, b.data + off, b.len - off);
        if (w <= 0) {
            ok = false;
            break;
        }
        off += (size_t)w;
    }
    ok = ok && fsync(fd) == 0;
    if (fd >= 0) {
        ok = close(fd) == 0 && ok;
    }
    ok = ok && rename(tmp, acl_path) == 0;
    buf_deinit(&b);
    if (!ok) {
        log_warn("ACL SAVE: cannot write '%s': %s", acl_path, strerror(errno));
        unlink(tmp);
        snprintf(err, errsz,
                 "ERR There was an error trying to save the ACLs. Please check the server "
                 "logs for more information");
        return -1;
    }
    return 0;
}

bool
acl_dryrun(struct rv_str user, const struct cmd_spec *cmd, int argc, struct rv_str *argv, char *why,
           size_t whysz, bool *nouser)
{
    pthread_mutex_lock(&acl_mu);
    const struct acl_user *u = snap_find(acl_cur, user.p, user.len, NULL);
    *nouser = u == NULL;
    bool ok = false;
    if (u) {
        int bad = 0;
        char full[96];
        switch (acl_user_check(u, cmd, argc, argv, &bad)) {
        case ACL_OK: ok = true; break;
        case ACL_DENY_CMD:
            cmd_fullname(cmd, full, sizeof(full));
            snprintf(why, whysz, "User %s has no permissions to run the '%s' command", u->name,
                     full);
            break;
        case ACL_DENY_KEY:
            snprintf(why, whysz, "User %s has no permissions to access the '%.*s' key", u->name,
                     (int)(argv[bad].len > 128 ? 128 : argv[bad].len), argv[bad].p);
            break;
        case ACL_DENY_CHAN:
            snprintf(why, whysz, "User %s has no permissions to access the '%.*s' channel", u->name,
                     (int)(argv[bad].len > 128 ? 128 : argv[bad].len), argv[bad].p);
            break;
        }
    }
    pthread_mutex_unlock(&acl_mu);
    return ok;
}
