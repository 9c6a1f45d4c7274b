/* node/features/acl.c: ACL users, snapshots shared by the shards, the permission
 * check and the ACL LOG. See acl.h for the design. */
#include "node/features/acl.h"

#include "base/buf.h"
#include "base/clock.h"
#include "base/glob.h"
#include "base/log.h"
#include "base/mem.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "node/features/clientinfo.h"
#include "node/features/pubsub.h"
#include "node/core/reply.h"
#include "node/core/shard.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>

#define ACL_HASH_LEN 32
#define ACL_LOG_MAX 128

enum { ACL_PERM_R = 1, ACL_PERM_W = 2 };
enum {
    U_ON = 1u << 0,
    U_NOPASS = 1u << 1,
    U_ALLKEYS = 1u << 2,
    U_ALLCHANNELS = 1u << 3,
    U_SANITIZE = 1u << 4,      /* shown as Redis shows it; payloads are always validated */
    U_SKIP_SANITIZE = 1u << 5,
};

struct acl_keypat {
    char *pat;
    size_t len;
    uint8_t perm;              /* ACL_PERM_R | ACL_PERM_W */
};

struct acl_user {
    char *name;
    uint32_t flags;
    bool fast;                 /* on + every command, key and channel: no checks */
    int npass;
    uint8_t (*pass)[ACL_HASH_LEN];
    int nkeys;
    struct acl_keypat *keys;
    int nchans;
    char **chans;
    uint64_t *cmds;            /* bitmap by cmd_spec.id */
    char *cmdrules;            /* "+@all -debug", as ACL LIST shows them */
};

struct acl_snap {
    struct acl_user **users;   /* sorted by name */
    size_t n;
    int refs;                  /* the publisher's + one per shard that points into it */
    bool auth_required;        /* default user off or with passwords */
};

atomic_uint_fast64_t acl_gen = 1;

static pthread_mutex_t acl_mu = PTHREAD_MUTEX_INITIALIZER;
static struct acl_snap *acl_cur;      /* guarded by acl_mu */

static size_t
bitmap_words(void)
{
    return (cmd_id_count() + 63) / 64;
}

/* ---------------------------------------------------------------- categories */

static const char *const cat_names[] = {
    "keyspace", "read", "write", "string", "connection", "server", "slow", "fast",
    "admin", "dangerous", "pubsub", "transaction", "list", "hash", "set", "sortedset",
    "bitmap", "hyperloglog", "geo", "blocking", "scripting", "stream",
};

const char *
acl_cat_name(unsigned bit)
{
    return bit < sizeof(cat_names) / sizeof(cat_names[0]) ? cat_names[bit] : "";
}

unsigned
acl_cat_count(void)
{
    return (unsigned)(sizeof(cat_names) / sizeof(cat_names[0]));
}

static int
cat_find(const char *p, size_t n)
{
    for (unsigned i = 0; i < acl_cat_count(); i++) {
        if (strlen(cat_names[i]) == n && strncasecmp(cat_names[i], p, n) == 0) {
            return (int)i;
        }
    }
    return -1;
}

static uint32_t
cmd_cats(const struct cmd_spec *s)
{
    return s->cats | ((s->flags & CMD_DANGEROUS) ? CAT_DANGEROUS : 0);
}

/* ---------------------------------------------------------------- users */

static void
user_free(struct acl_user *u)
{
    if (u == NULL) {
        return;
    }
    for (int i = 0; i < u->nkeys; i++) {
        rv_free(u->keys[i].pat);
    }
    for (int i = 0; i < u->nchans; i++) {
        rv_free(u->chans[i]);
    }
    rv_free(u->keys);
    rv_free(u->chans);
    rv_free(u->pass);
    rv_free(u->cmds);
    rv_free(u->cmdrules);
    rv_free(u->name);
    rv_free(u);
}

/* A new user: off, no passwords, no keys, no channels, no commands (Redis's defaults). */
static struct acl_user *
user_new(const char *name, size_t len)
{
    struct acl_user *u = rv_calloc(1, sizeof(*u));
    u->name = rv_strndup(name, len);
    u->cmds = rv_calloc(bitmap_words(), sizeof(uint64_t));
    u->cmdrules = rv_strndup("-@all", 5);
    return u;
}

static struct acl_user *
user_dup(const struct acl_user *src)
{
    struct acl_user *u = rv_calloc(1, sizeof(*u));
    *u = *src;
    u->name = rv_strndup(src->name, strlen(src->name));
    u->cmdrules = rv_strndup(src->cmdrules, strlen(src->cmdrules));
    u->cmds = rv_malloc(bitmap_words() * sizeof(uint64_t));
    memcpy(u->cmds, src->cmds, bitmap_words() * sizeof(uint64_t));
    u->pass = src->npass ? rv_malloc((size_t)src->npass * ACL_HASH_LEN) : NULL;
    if (src->npass) {
        memcpy(u->pass, src->pass, (size_t)src->npass * ACL_HASH_LEN);
    }
    u->keys = src->nkeys ? rv_malloc((size_t)src->nkeys * sizeof(*u->keys)) : NULL;
    for (int i = 0; i < src->nkeys; i++) {
        u->keys[i] = src->keys[i];
        u->keys[i].pat = rv_strndup(src->keys[i].pat, src->keys[i].len);
    }
    u->chans = src->nchans ? rv_malloc((size_t)src->nchans * sizeof(char *)) : NULL;
    for (int i = 0; i < src->nchans; i++) {
        u->chans[i] = rv_strndup(src->chans[i], strlen(src->chans[i]));
    }
    return u;
}

static bool
bit_get(const uint64_t *bm, uint32_t id)
{
    return (bm[id >> 6] >> (id & 63)) & 1;
}

static void
bit_put(uint64_t *bm, uint32_t id, bool on)
{
    if (on) {
        bm[id >> 6] |= 1ull << (id & 63);
    } else {
        bm[id >> 6] &= ~(1ull << (id & 63));
    }
}

static void
user_update_fast(struct acl_user *u)
{
    bool all = true;
    for (uint32_t id = 0; id < cmd_id_count() && all; id++) {
        all = bit_get(u->cmds, id);
    }
    u->fast = (u->flags & U_ON) && (u->flags & U_ALLKEYS) && (u->flags & U_ALLCHANNELS) && all;
}

static void
sha256(const void *p, size_t n, uint8_t out[ACL_HASH_LEN])
{
    unsigned int len = ACL_HASH_LEN;
    EVP_Digest(p, n, out, &len, EVP_sha256(), NULL);
}

static bool
parse_hex_hash(const char *p, size_t n, uint8_t out[ACL_HASH_LEN])
{
    if (n != 2 * ACL_HASH_LEN) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) {
            return false;
        }
    }
    for (size_t i = 0; i < ACL_HASH_LEN; i++) {
        unsigned hi = (unsigned)(p[2 * i] <= '9' ? p[2 * i] - '0' : p[2 * i] - 'a' + 10);
        unsigned lo = (unsigned)(p[2 * i + 1] <= '9' ? p[2 * i + 1] - '0' : p[2 * i + 1] - 'a' + 10);
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

static void
pass_add(struct acl_user *u, const uint8_t h[ACL_HASH_LEN])
{
    for (int i = 0; i < u->npass; i++) {
        if (memcmp(u->pass[i], h, ACL_HASH_LEN) == 0) {
            return;
        }
    }
    u->pass = rv_realloc(u->pass, (size_t)(u->npass + 1) * ACL_HASH_LEN);
    memcpy(u->pass[u->npass++], h, ACL_HASH_LEN);
    u->flags &= ~U_NOPASS;
}

static bool
pass_del(struct acl_user *u, const uint8_t h[ACL_HASH_LEN])
{
    for (int i = 0; i < u->npass; i++) {
        if (memcmp(u->pass[i], h, ACL_HASH_LEN) == 0) {
            memmove(u->pass[i], u->pass[i + 1], (size_t)(u->npass - i - 1) * ACL_HASH_LEN);
            u->npass--;
            return true;
        }
    }
    return false;
}

static void
keys_reset(struct acl_user *u)
{
    for (int i = 0; i < u->nkeys; i++) {
        rv_free(u->keys[i].pat);
    }
    rv_free(u->keys);
    u->keys = NULL;
    u->nkeys = 0;
    u->flags &= ~U_ALLKEYS;
}

static void
chans_reset(struct acl_user *u)
{
    for (int i = 0; i < u->nchans; i++) {
        rv_free(u->chans[i]);
    }
    rv_free(u->chans);
    u->chans = NULL;
    u->nchans = 0;
    u->flags &= ~U_ALLCHANNELS;
}

static void
rules_set(struct acl_user *u, const char *text)
{
    rv_free(u->cmdrules);
    u->cmdrules = rv_strndup(text, strlen(text));
}

static void
rules_append(struct acl_user *u, const char *p, size_t n)
{
    size_t old = strlen(u->cmdrules);
    char *t = rv_malloc(old + 1 + n + 1);
    memcpy(t, u->cmdrules, old);
    t[old] = ' ';
    memcpy(t + old + 1, p, n);
    t[old + 1 + n] = '\0';
    rv_free(u->cmdrules);
    u->cmdrules = t;
}

static void
cmds_all(struct acl_user *u, bool on)
{
    memset(u->cmds, on ? 0xff : 0, bitmap_words() * sizeof(uint64_t));
}

/* A command by its original (table) name: "get" or "config|get". */
static const struct cmd_spec *
cmd_by_name(const char *p, size_t n, const struct cmd_spec **parent_out)
{
    const char *bar = memchr(p, '|', n);
    size_t pn = bar ? (size_t)(bar - p) : n;
    for (size_t i = 0; i < cmd_count(); i++) {
        const struct cmd_spec *s = cmd_at(i);
        if (strlen(s->name) != pn || strncasecmp(s->name, p, pn) != 0) {
            continue;
        }
        *parent_out = s;
        if (bar == NULL) {
            return s;
        }
        const char *sp = bar + 1;
        size_t sn = n - pn - 1;
        for (const struct cmd_spec *sub = s->subs; sub && sub->name; sub++) {
            if (strlen(sub->name) == sn && strncasecmp(sub->name, sp, sn) == 0) {
                return sub;
            }
        }
        return NULL;
    }
    return NULL;
}

static void
cmd_put_tree(struct acl_user *u, const struct cmd_spec *s, bool on)
{
    bit_put(u->cmds, s->id, on);
    for (const struct cmd_spec *sub = s->subs; sub && sub->name; sub++) {
        bit_put(u->cmds, sub->id, on);
    }
}

/* One rule; NULL or Redis's reason. */
static const char *
user_apply(struct acl_user *u, const char *r, size_t n)
{
#define IS(lit) (n == sizeof(lit) - 1 && strncasecmp(r, lit, n) == 0)
    uint8_t h[ACL_HASH_LEN];
    if (IS("on")) {
        u->flags |= U_ON;
    } else if (IS("off")) {
        u->flags &= ~U_ON;
    } else if (IS("sanitize-payload")) {
        u->flags = (u->flags & ~U_SKIP_SANITIZE) | U_SANITIZE;
    } else if (IS("skip-sanitize-payload")) {
        u->flags = (u->flags & ~U_SANITIZE) | U_SKIP_SANITIZE;
    } else if (IS("nopass")) {
        u->flags |= U_NOPASS;
        rv_free(u->pass);
        u->pass = NULL;
        u->npass = 0;
    } else if (IS("resetpass")) {
        u->flags &= ~U_NOPASS;
        rv_free(u->pass);
        u->pass = NULL;
        u->npass = 0;
    } else if (n >= 1 && r[0] == '>') {
        sha256(r + 1, n - 1, h);
        pass_add(u, h);
    } else if (n >= 1 && r[0] == '<') {
        sha256(r + 1, n - 1, h);
        if (!pass_del(u, h)) {
            return "The password you are trying to remove from the user does not exist";
        }
    } else if (n >= 1 && (r[0] == '#' || r[0] == '!')) {
        if (!parse_hex_hash(r + 1, n - 1, h)) {
            return "The password hash must be exactly 64 characters and contain only lowercase "
                   "hexadecimal characters";
        }
        if (r[0] == '#') {
            pass_add(u, h);
        } else if (!pass_del(u, h)) {
            return "The password you are trying to remove from the user does not exist";
        }
    } else if (IS("allkeys") || IS("~*")) {
        keys_reset(u);
        u->flags |= U_ALLKEYS;
    } else if (IS("resetkeys")) {
        keys_reset(u);
    } else if ((n >= 1 && r[0] == '~') || (n >= 1 && r[0] == '%')) {
        uint8_t perm = ACL_PERM_R | ACL_PERM_W;
        size_t at = 1;
        if (r[0] == '%') {
            perm = 0;
            for (; at < n && r[at] != '~'; at++) {
                if (r[at] == 'R' || r[at] == 'r') {
                    perm |= ACL_PERM_R;
                } else if (r[at] == 'W' || r[at] == 'w') {
                    perm |= ACL_PERM_W;
                } else {
                    return "Syntax error";
                }
            }
            if (at == n || perm == 0) {
                return "Syntax error";
            }
            at++;
        }
        if (u->flags & U_ALLKEYS) {
            return "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and "
                   "does not have any effect. Try 'resetkeys' to start with an empty list of patterns";
        }
        const char *pat = r + at;
        size_t plen = n - at;
        if (perm == (ACL_PERM_R | ACL_PERM_W) && plen == 1 && pat[0] == '*') {
            keys_reset(u);
            u->flags |= U_ALLKEYS;
            return NULL;
        }
        for (int i = 0; i < u->nkeys; i++) {
            if (u->keys[i].len == plen && memcmp(u->keys[i].pat, pat, plen) == 0) {
                u->keys[i].perm |= perm;
                return NULL;
            }
        }
        u->keys = rv_realloc(u->keys, (size_t)(u->nkeys + 1) * sizeof(*u->keys));
        u->keys[u->nkeys++] = (struct acl_keypat){ rv_strndup(pat, plen), plen, perm };
    } else if (IS("allchannels") || IS("&*")) {
        chans_reset(u);
        u->flags |= U_ALLCHANNELS;
    } else if (IS("resetchannels")) {
        chans_reset(u);
    } else if (n >= 1 && r[0] == '&') {
        if (u->flags & U_ALLCHANNELS) {
            return "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid "
                   "and does not have any effect. Try 'resetchannels' to start with an empty list "
                   "of channels";
        }
        for (int i = 0; i < u->nchans; i++) {
            if (strlen(u->chans[i]) == n - 1 && memcmp(u->chans[i], r + 1, n - 1) == 0) {
                return NULL;
            }
        }
        u->chans = rv_realloc(u->chans, (size_t)(u->nchans + 1) * sizeof(char *));
        u->chans[u->nchans++] = rv_strndup(r + 1, n - 1);
    } else if (IS("allcommands") || IS("+@all")) {
        cmds_all(u, true);
        rules_set(u, "+@all");
    } else if (IS("nocommands") || IS("-@all")) {
        cmds_all(u, false);
        rules_set(u, "-@all");
    } else if (n >= 2 && (r[0] == '+' || r[0] == '-') && r[1] == '@') {
        int cat = cat_find(r + 2, n - 2);
        if (cat < 0) {
            return "Unknown command or category name in ACL";
        }
        bool on = r[0] == '+';
        for (uint32_t id = 0; id < cmd_id_count(); id++) {
            if ((cmd_cats(cmd_by_id(id)) >> cat) & 1) {
                bit_put(u->cmds, id, on);
            }
        }
        rules_append(u, r, n);
    } else if (n >= 2 && (r[0] == '+' || r[0] == '-')) {
        const struct cmd_spec *parent = NULL;
        const struct cmd_spec *s = cmd_by_name(r + 1, n - 1, &parent);
        if (s == NULL) {
            return "Unknown command or category name in ACL";
        }
        bool on = r[0] == '+';
        if (s == parent) {
            cmd_put_tree(u, s, on);
        } else {
            bit_put(u->cmds, s->id, on);
        }
        rules_append(u, r, n);
    } else if (IS("reset")) {
        user_apply(u, "resetpass", 9);
        user_apply(u, "resetkeys", 9);
        user_apply(u, "resetchannels", 13);
        user_apply(u, "off", 3);
        user_apply(u, "-@all", 5);
        user_apply(u, "sanitize-payload", 16);
    } else {
        return "Syntax error";
    }
    return NULL;
#undef IS
}

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
        user_free(s->users[i]);
    }
    rv_free(s->users);
    rv_free(s);
}

static struct acl_snap *
snap_dup(const struct acl_snap *src, size_t extra)
{
    struct acl_snap *s = snap_new(src->n + extra);
    for (size_t i = 0; i < src->n; i++) {
        s->users[i] = user_dup(src->users[i]);
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
        user_update_fast(s->users[i]);
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

static void
default_from_pass(struct acl_user *d, const char *pass)
{
    user_apply(d, "resetpass", 9);
    if (pass[0] == '\0') {
        user_apply(d, "nopass", 6);
    } else {
        uint8_t h[ACL_HASH_LEN];
        sha256(pass, strlen(pass), h);
        pass_add(d, h);
    }
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
        u = user_new(name, nlen);
        snap_insert(s, u, pos);
    } else {
        *default_seen = true;
        user_free(u);
        u = s->users[pos] = user_new(name, nlen);
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
        *why = user_apply(u, r, (size_t)(p - r));
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
                snprintf(err, errsz, "%s:%d should start with user keyword followed by the username",
                         path, lineno);
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
            snprintf(err, errsz, path ? "%s:%d should start with user keyword followed by the username"
                                      : "%s:%d: 'user' needs a user name",
                     path ? path : "user", lineno);
            return -1;
        }
        const char *bad = NULL, *why = NULL;
        size_t badlen = 0;
        switch (declare_user(s, name, nlen, q, &default_seen, &bad, &badlen, &why)) {
        case DECL_OK:
            break;
        case DECL_DUP:
            if (path) {
                snprintf(err, errsz, "WARNING: Duplicate user '%.*s' found on line %d", (int)nlen, name,
                         lineno);
            } else {
                snprintf(err, errsz, "Error in user declaration '%.*s': Duplicate user found. A user "
                                     "can only be defined once in config files", (int)nlen, name);
            }
            return -1;
        case DECL_RULE:
            if (path) {
                snprintf(err, errsz, "%s:%d: Error in applying operation '%.*s': %s", path, lineno,
                         (int)badlen, bad, why);
            } else {
                snprintf(err, errsz, "user '%.*s': rule '%.*s': %s", (int)nlen, name, (int)badlen, bad,
                         why);
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
    s->users[s->n++] = user_dup(def);
    int rc = load_lines(s, text.data, path, err, errsz);
    buf_deinit(&text);
    if (rc != 0) {
        size_t l = strlen(err);
        snprintf(err + l, errsz - l, ". WARNING: ACL errors detected, no change to the previously "
                                     "active ACL rules was performed");
        snap_free(s);
        return NULL;
    }
    return s;
}

static char acl_path[4096];   /* aclfile, "" = none; set once by acl_init */

int
acl_init(const char *requirepass, const char *user_lines, const char *aclfile, char *err,
         size_t errsz)
{
    struct acl_user *d = user_new("default", 7);
    user_apply(d, "on", 2);
    user_apply(d, "~*", 2);
    user_apply(d, "&*", 2);
    user_apply(d, "+@all", 5);
    default_from_pass(d, requirepass ? requirepass : "");
    struct acl_snap *s;
    if (aclfile && aclfile[0]) {
        if (user_lines && user_lines[0]) {
            snprintf(err, errsz, "users are defined both with 'user' lines and in 'aclfile': define "
                                 "them in one place only");
            user_free(d);
            return -1;
        }
        snprintf(acl_path, sizeof(acl_path), "%s", aclfile);
        s = load_file(aclfile, d, err, errsz);
        user_free(d);
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
    default_from_pass(snap_find(next, "default", 7, NULL), pass);
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
    if (acl_gen_now() != *shard_acl_gen(s)) {
        acl_shard_refresh(s);
    }
    const struct acl_user *d = snap_find(*shard_acl(s), "default", 7, NULL);
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

static bool chan_ok(const struct acl_user *u, const char *ch, size_t len, bool literal);

static bool
sub_still_allowed(void *arg, struct rv_str name, bool pattern)
{
    return chan_ok(arg, name.p, name.len, pattern);
}

void
acl_shard_refresh(struct shard *s)
{
    struct acl_snap **cur = shard_acl(s);
    uint64_t *seen = shard_acl_gen(s);
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
    if (rv_unlikely(acl_gen_now() != *shard_acl_gen(s))) {
        acl_shard_refresh(s);
    }
    const struct acl_snap *snap = *shard_acl(s);
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

struct acl_log_entry {
    uint64_t id;
    int64_t count;
    const char *reason;         /* static */
    char context[16];
    char *object;
    char *username;
    char *client_info;
    int64_t created_ms, updated_ms;
};

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static struct acl_log_entry log_ring[ACL_LOG_MAX];   /* newest first, log_n valid */
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
    int kind = reason[0] == 'a' ? 0 : reason[0] == 'c' && reason[1] == 'o' ? 1 : reason[0] == 'k' ? 2 : 3;
    atomic_fetch_add_explicit(&denied[kind], 1, memory_order_relaxed);
    struct buf ci;
    buf_init(&ci);
    clientinfo_line(c, c, &ci);
    if (ci.len && ci.data[ci.len - 1] == '\n') {
        ci.len--;
    }
    const char *ctx = (c->flags & (CONN_MULTI | CONN_IN_EXEC)) ? "multi" : "toplevel";
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
            struct acl_log_entry tmp = *e;         /* move to the front */
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

void
acl_reply_log(struct conn *c, int64_t count)
{
    pthread_mutex_lock(&log_mu);
    size_t n = count < 0 || (uint64_t)count > log_n ? log_n : (size_t)count;
    int64_t now = clock_unix_ms();
    reply_array(c, n);
    for (size_t i = 0; i < n; i++) {
        const struct acl_log_entry *e = &log_ring[i];
        reply_map(c, 10);
        reply_bulk_cstr(c, "count");
        reply_int(c, e->count);
        reply_bulk_cstr(c, "reason");
        reply_bulk_cstr(c, e->reason);
        reply_bulk_cstr(c, "context");
        reply_bulk_cstr(c, e->context);
        reply_bulk_cstr(c, "object");
        reply_bulk_cstr(c, e->object);
        reply_bulk_cstr(c, "username");
        reply_bulk_cstr(c, e->username);
        reply_bulk_cstr(c, "age-seconds");
        reply_double(c, (double)(now - e->created_ms) / 1000.0);
        reply_bulk_cstr(c, "client-info");
        reply_bulk_cstr(c, e->client_info);
        reply_bulk_cstr(c, "entry-id");
        reply_int(c, (int64_t)e->id);
        reply_bulk_cstr(c, "timestamp-created");
        reply_int(c, e->created_ms);
        reply_bulk_cstr(c, "timestamp-last-updated");
        reply_int(c, e->updated_ms);
    }
    pthread_mutex_unlock(&log_mu);
}

/* ---------------------------------------------------------------- checks */

static bool
key_ok(const struct acl_user *u, const char *k, size_t klen, uint8_t need)
{
    uint8_t have = 0;
    for (int i = 0; i < u->nkeys && (have & need) != need; i++) {
        if (glob_match(u->keys[i].pat, u->keys[i].len, k, klen, false)) {
            have |= u->keys[i].perm;
        }
    }
    return (have & need) == need;
}

static bool
chan_ok(const struct acl_user *u, const char *ch, size_t len, bool literal)
{
    for (int i = 0; i < u->nchans; i++) {
        const char *p = u->chans[i];
        size_t pl = strlen(p);
        if (literal ? (pl == len && memcmp(p, ch, len) == 0) : glob_match(p, pl, ch, len, false)) {
            return true;
        }
    }
    return false;
}

/* Which arguments of cmd name channels: 0 none, else first index; *all =
 * every argument from there (SUBSCRIBE) or only that one (PUBLISH). */
static int
chan_args(const struct cmd_spec *cmd, bool *all, bool *literal)
{
    if (cmd->parent || !(cmd->flags & CMD_PUBSUB)) {
        return 0;
    }
    *literal = false;
    if (strcmp(cmd->name, "publish") == 0 || strcmp(cmd->name, "spublish") == 0) {
        *all = false;
        return 1;
    }
    if (strcmp(cmd->name, "subscribe") == 0 || strcmp(cmd->name, "ssubscribe") == 0) {
        *all = true;
        return 1;
    }
    if (strcmp(cmd->name, "psubscribe") == 0) {
        *all = true;
        *literal = true;
        return 1;
    }
    return 0;
}

enum acl_deny { ACL_OK = 0, ACL_DENY_CMD, ACL_DENY_KEY, ACL_DENY_CHAN };

static enum acl_deny
user_check(const struct acl_user *u, const struct cmd_spec *cmd, int argc, struct rv_str *argv,
           int *bad)
{
    if (u->fast || (cmd->flags & CMD_NOAUTH)) {
        return ACL_OK;
    }
    if (!bit_get(u->cmds, cmd->id)) {
        return ACL_DENY_CMD;
    }
    if (!(u->flags & U_ALLKEYS) && (cmd->first > 0 || cmd->getkeys)) {
        int keys[256];
        int nk = cmd_get_keys(cmd, argc, argv, keys, 256);
        uint8_t need = (cmd->flags & CMD_WRITE) ? ACL_PERM_W : ACL_PERM_R;
        for (int i = 0; i < nk; i++) {
            if (!key_ok(u, argv[keys[i]].p, argv[keys[i]].len, need)) {
                *bad = keys[i];
                return ACL_DENY_KEY;
            }
        }
    }
    bool all, literal;
    int from;
    if (!(u->flags & U_ALLCHANNELS) && (from = chan_args(cmd, &all, &literal)) > 0) {
        for (int i = from; i < argc && (all || i == from); i++) {
            if (!chan_ok(u, argv[i].p, argv[i].len, literal)) {
                *bad = i;
                return ACL_DENY_CHAN;
            }
        }
    }
    return ACL_OK;
}

/* The refusal: Redis 7.2's texts; inside EXEC (rules changed after queueing) with Redis's preamble. */
static void
reply_noperm(struct conn *c, const char *reason)
{
    if (c->flags & CONN_IN_EXEC) {
        reply_errf(c, "NOPERM ACLs rules changed between the moment the transaction was accumulated "
                      "and the EXEC call. This command is no longer allowed for the following reason: %s",
                   reason);
    } else {
        reply_errf(c, "NOPERM %s", reason);
    }
}

bool
acl_allow(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv)
{
    if (!c->authed && (*shard_acl(c->shard))->auth_required) {
        if (cmd->flags & CMD_NOAUTH) {
            return true;
        }
        reply_err(c, RV_ERR_NOAUTH);
        return false;
    }
    const struct acl_user *u = c->user;
    int bad = 0;
    char full[96], why[256];
    switch (user_check(u, cmd, argc, argv, &bad)) {
    case ACL_OK:
        return true;
    case ACL_DENY_CMD:
        cmd_fullname(cmd, full, sizeof(full));
        snprintf(why, sizeof(why), "User %s has no permissions to run the '%s' command", u->name, full);
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
    if (acl_gen_now() != *shard_acl_gen(s)) {
        acl_shard_refresh(s);
    }
    const struct acl_snap *snap = *shard_acl(s);
    const char *name = user ? user->p : "default";
    size_t nlen = user ? user->len : 7;
    const struct acl_user *u = snap_find(snap, name, nlen, NULL);
    bool ok = false;
    if (u && (u->flags & U_ON)) {
        if (u->flags & U_NOPASS) {
            ok = true;
        } else {
            uint8_t h[ACL_HASH_LEN];
            sha256(pass.p, pass.len, h);
            for (int i = 0; i < u->npass; i++) {
                ok |= CRYPTO_memcmp(u->pass[i], h, ACL_HASH_LEN) == 0;
            }
        }
    }
    if (!ok) {
        acl_log_add(c, "auth", "AUTH", 4, name, nlen);
        return false;
    }
    c->user = u;
    c->authed = true;
    conn_acl_update(c, snap);
    return true;
}

/* ---------------------------------------------------------------- ACL commands */

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
    struct node *n = shard_node(s);
    shard_wake_all(n, s);
}

int
acl_setuser(struct shard *s, struct rv_str name, int nrules, const struct rv_str *rules,
            char *err, size_t errsz)
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
        u = user_new(name.p, name.len);
        snap_insert(next, u, pos);
    }
    for (int i = 0; i < nrules; i++) {
        const char *why = user_apply(u, rules[i].p, rules[i].len);
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
            user_free(u);
            memmove(&next->users[pos], &next->users[pos + 1], (next->n - pos - 1) * sizeof(*next->users));
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

static void
hex(const uint8_t *h, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < ACL_HASH_LEN; i++) {
        out[2 * i] = digits[h[i] >> 4];
        out[2 * i + 1] = digits[h[i] & 15];
    }
    out[2 * ACL_HASH_LEN] = '\0';
}

static void
describe_keys(const struct acl_user *u, struct buf *b)
{
    if (u->flags & U_ALLKEYS) {
        buf_append(b, "~*", 2);
        return;
    }
    for (int i = 0; i < u->nkeys; i++) {
        if (i) {
            buf_putc(b, ' ');
        }
        const struct acl_keypat *k = &u->keys[i];
        if (k->perm == ACL_PERM_R) {
            buf_append(b, "%R", 2);
        } else if (k->perm == ACL_PERM_W) {
            buf_append(b, "%W", 2);
        }
        buf_putc(b, '~');
        buf_append(b, k->pat, k->len);
    }
}

static void
describe_chans(const struct acl_user *u, struct buf *b, bool list)
{
    if (u->flags & U_ALLCHANNELS) {
        buf_append(b, "&*", 2);
        return;
    }
    if (list) {
        buf_append(b, "resetchannels", 13);
    }
    for (int i = 0; i < u->nchans; i++) {
        if (i || list) {
            buf_putc(b, ' ');
        }
        buf_putc(b, '&');
        buf_append(b, u->chans[i], strlen(u->chans[i]));
    }
}

/* "user <name> on #<hash> ~keys resetchannels &chans <commands>", as ACL LIST writes it. */
static void
describe_user(const struct acl_user *u, struct buf *b)
{
    buf_append(b, "user ", 5);
    buf_append(b, u->name, strlen(u->name));
    buf_append(b, (u->flags & U_ON) ? " on" : " off", (u->flags & U_ON) ? 3 : 4);
    if (u->flags & U_NOPASS) {
        buf_append(b, " nopass", 7);
    }
    if (u->flags & (U_SANITIZE | U_SKIP_SANITIZE)) {
        buf_append(b, (u->flags & U_SANITIZE) ? " sanitize-payload" : " skip-sanitize-payload",
                   (u->flags & U_SANITIZE) ? 17 : 22);
    }
    for (int j = 0; j < u->npass; j++) {
        char h[2 * ACL_HASH_LEN + 1];
        hex(u->pass[j], h);
        buf_append(b, " #", 2);
        buf_append(b, h, 2 * ACL_HASH_LEN);
    }
    if ((u->flags & U_ALLKEYS) || u->nkeys) {
        buf_putc(b, ' ');
        describe_keys(u, b);
    }
    buf_putc(b, ' ');
    describe_chans(u, b, true);
    buf_putc(b, ' ');
    buf_append(b, u->cmdrules, strlen(u->cmdrules));
}

void
acl_reply_list(struct conn *c)
{
    pthread_mutex_lock(&acl_mu);
    const struct acl_snap *s = acl_cur;
    reply_array(c, s->n);
    struct buf b;
    buf_init(&b);
    for (size_t i = 0; i < s->n; i++) {
        buf_reset(&b);
        describe_user(s->users[i], &b);
        reply_bulk(c, b.data, b.len);
    }
    buf_deinit(&b);
    pthread_mutex_unlock(&acl_mu);
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
    struct acl_snap *next = load_file(acl_path, snap_find(acl_cur, "default", 7, NULL), why, sizeof(why));
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
        describe_user(acl_cur->users[i], &b);
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
        snprintf(err, errsz, "ERR There was an error trying to save the ACLs. Please check the server "
                             "logs for more information");
        return -1;
    }
    return 0;
}

void
acl_reply_users(struct conn *c)
{
    pthread_mutex_lock(&acl_mu);
    reply_array(c, acl_cur->n);
    for (size_t i = 0; i < acl_cur->n; i++) {
        reply_bulk_cstr(c, acl_cur->users[i]->name);
    }
    pthread_mutex_unlock(&acl_mu);
}

void
acl_reply_getuser(struct conn *c, struct rv_str name)
{
    pthread_mutex_lock(&acl_mu);
    const struct acl_user *u = snap_find(acl_cur, name.p, name.len, NULL);
    if (u == NULL) {
        pthread_mutex_unlock(&acl_mu);
        reply_null(c);
        return;
    }
    struct buf b;
    buf_init(&b);
    reply_map(c, 6);
    reply_bulk_cstr(c, "flags");
    reply_array(c, 1 + ((u->flags & U_NOPASS) != 0) + ((u->flags & (U_SANITIZE | U_SKIP_SANITIZE)) != 0));
    reply_bulk_cstr(c, (u->flags & U_ON) ? "on" : "off");
    if (u->flags & U_NOPASS) {
        reply_bulk_cstr(c, "nopass");
    }
    if (u->flags & (U_SANITIZE | U_SKIP_SANITIZE)) {
        reply_bulk_cstr(c, (u->flags & U_SANITIZE) ? "sanitize-payload" : "skip-sanitize-payload");
    }
    reply_bulk_cstr(c, "passwords");
    reply_array(c, (size_t)u->npass);
    for (int j = 0; j < u->npass; j++) {
        char h[2 * ACL_HASH_LEN + 1];
        hex(u->pass[j], h);
        reply_bulk_cstr(c, h);
    }
    reply_bulk_cstr(c, "commands");
    reply_bulk_cstr(c, u->cmdrules);
    reply_bulk_cstr(c, "keys");
    describe_keys(u, &b);
    reply_bulk(c, b.data ? b.data : "", b.len);
    buf_reset(&b);
    reply_bulk_cstr(c, "channels");
    describe_chans(u, &b, false);
    reply_bulk(c, b.data ? b.data : "", b.len);
    reply_bulk_cstr(c, "selectors");
    reply_array(c, 0);
    buf_deinit(&b);
    pthread_mutex_unlock(&acl_mu);
}

bool
acl_dryrun(struct rv_str user, const struct cmd_spec *cmd, int argc, struct rv_str *argv,
           char *why, size_t whysz, bool *nouser)
{
    pthread_mutex_lock(&acl_mu);
    const struct acl_user *u = snap_find(acl_cur, user.p, user.len, NULL);
    *nouser = u == NULL;
    bool ok = false;
    if (u) {
        int bad = 0;
        char full[96];
        switch (user_check(u, cmd, argc, argv, &bad)) {
        case ACL_OK:
            ok = true;
            break;
        case ACL_DENY_CMD:
            cmd_fullname(cmd, full, sizeof(full));
            snprintf(why, whysz, "User %s has no permissions to run the '%s' command", u->name, full);
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
