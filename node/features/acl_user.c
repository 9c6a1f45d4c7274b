/* node/features/acl_user.c: one ACL user: its rules (Redis's ACL SETUSER syntax, parsed
 * into flags, password hashes, key and channel patterns and a command bitmap), their text
 * form (ACL LIST, ACL SAVE, ACL GETUSER) and the permission check of one command. The
 * node's set of users (snapshots, loading, connections, the log) is acl.c. */
#include "node/features/acl_int.h"

#include "base/buf.h"
#include "base/glob.h"
#include "base/mem.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <string.h>
#include <strings.h>

_Static_assert(ACL_PASS_HEX_LEN == 2 * ACL_HASH_LEN, "acl.h's hex length");

static size_t
bitmap_words(void)
{
    return (cmd_id_count() + 63) / 64;
}

/* ---------------------------------------------------------------- categories */

static const char *const cat_names[] = {
    "keyspace", "read",        "write",  "string",      "connection", "server", "slow", "fast",
    "admin",    "dangerous",   "pubsub", "transaction", "list",       "hash",   "set",  "sortedset",
    "bitmap",   "hyperloglog", "geo",    "blocking",    "scripting",  "stream",
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

void
acl_user_free(struct acl_user *u)
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
struct acl_user *
acl_user_new(const char *name, size_t len)
{
    struct acl_user *u = rv_calloc(1, sizeof(*u));
    u->name = rv_strndup(name, len);
    u->cmds = rv_calloc(bitmap_words(), sizeof(uint64_t));
    u->cmdrules = rv_strndup("-@all", 5);
    return u;
}

struct acl_user *
acl_user_dup(const struct acl_user *src)
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

void
acl_user_update_fast(struct acl_user *u)
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
        unsigned lo = (unsigned)(p[2 * i + 1] <= '9' ? p[2 * i + 1] - '0'
                                                     : p[2 * i + 1] - 'a' + 10);
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

/* ---------------------------------------------------------------- rules */

#define IS(lit) (n == sizeof(lit) - 1 && strncasecmp(r, lit, n) == 0)

/* on, off, (skip-)sanitize-payload, nopass, resetpass, >pass, <pass, #hash, !hash.
 * false when r is none of these; else *why is NULL or Redis's reason. */
static bool
apply_flag(struct acl_user *u, const char *r, size_t n, const char **why)
{
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
            *why = "The password you are trying to remove from the user does not exist";
        }
    } else if (n >= 1 && (r[0] == '#' || r[0] == '!')) {
        if (!parse_hex_hash(r + 1, n - 1, h)) {
            *why = "The password hash must be exactly 64 characters and contain only lowercase "
                   "hexadecimal characters";
        } else if (r[0] == '#') {
            pass_add(u, h);
        } else if (!pass_del(u, h)) {
            *why = "The password you are trying to remove from the user does not exist";
        }
    } else {
        return false;
    }
    return true;
}

/* ~pattern or %R~pattern, %W~pattern, %RW~pattern: NULL or Redis's reason. */
static const char *
apply_keypat(struct acl_user *u, const char *r, size_t n)
{
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
    return NULL;
}

/* Key and channel rules: allkeys, resetkeys, ~..., %...~..., allchannels,
 * resetchannels, &... (as apply_flag). */
static bool
apply_pattern(struct acl_user *u, const char *r, size_t n, const char **why)
{
    if (IS("allkeys") || IS("~*")) {
        keys_reset(u);
        u->flags |= U_ALLKEYS;
    } else if (IS("resetkeys")) {
        keys_reset(u);
    } else if ((n >= 1 && r[0] == '~') || (n >= 1 && r[0] == '%')) {
        *why = apply_keypat(u, r, n);
    } else if (IS("allchannels") || IS("&*")) {
        chans_reset(u);
        u->flags |= U_ALLCHANNELS;
    } else if (IS("resetchannels")) {
        chans_reset(u);
    } else if (n >= 1 && r[0] == '&') {
        if (u->flags & U_ALLCHANNELS) {
            *why = "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid "
                   "and does not have any effect. Try 'resetchannels' to start with an empty list "
                   "of channels";
            return true;
        }
        for (int i = 0; i < u->nchans; i++) {
            if (strlen(u->chans[i]) == n - 1 && memcmp(u->chans[i], r + 1, n - 1) == 0) {
                return true;
            }
        }
        u->chans = rv_realloc(u->chans, (size_t)(u->nchans + 1) * sizeof(char *));
        u->chans[u->nchans++] = rv_strndup(r + 1, n - 1);
    } else {
        return false;
    }
    return true;
}

/* Command rules: allcommands, nocommands, +@category, -@category, +command,
 * -command, +command|sub, -command|sub (as apply_flag). */
static bool
apply_command(struct acl_user *u, const char *r, size_t n, const char **why)
{
    if (IS("allcommands") || IS("+@all")) {
        cmds_all(u, true);
        rules_set(u, "+@all");
    } else if (IS("nocommands") || IS("-@all")) {
        cmds_all(u, false);
        rules_set(u, "-@all");
    } else if (n >= 2 && (r[0] == '+' || r[0] == '-') && r[1] == '@') {
        int cat = cat_find(r + 2, n - 2);
        if (cat < 0) {
            *why = "Unknown command or category name in ACL";
            return true;
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
            *why = "Unknown command or category name in ACL";
            return true;
        }
        bool on = r[0] == '+';
        if (s == parent) {
            cmd_put_tree(u, s, on);
        } else {
            bit_put(u->cmds, s->id, on);
        }
        rules_append(u, r, n);
    } else {
        return false;
    }
    return true;
}

const char *
acl_user_apply(struct acl_user *u, const char *r, size_t n)
{
    const char *why = NULL;
    if (apply_flag(u, r, n, &why) || apply_pattern(u, r, n, &why) || apply_command(u, r, n, &why)) {
        return why;
    }
    if (!IS("reset")) {
        return "Syntax error";
    }
    acl_user_apply(u, "resetpass", 9);
    acl_user_apply(u, "resetkeys", 9);
    acl_user_apply(u, "resetchannels", 13);
    acl_user_apply(u, "off", 3);
    acl_user_apply(u, "-@all", 5);
    acl_user_apply(u, "sanitize-payload", 16);
    return NULL;
}

#undef IS

void
acl_user_set_password(struct acl_user *u, const char *pass)
{
    acl_user_apply(u, "resetpass", 9);
    if (pass[0] == '\0') {
        acl_user_apply(u, "nopass", 6);
    } else {
        uint8_t h[ACL_HASH_LEN];
        sha256(pass, strlen(pass), h);
        pass_add(u, h);
    }
}

bool
acl_user_pass_ok(const struct acl_user *u, struct rv_str pass)
{
    if (u->flags & U_NOPASS) {
        return true;
    }
    uint8_t h[ACL_HASH_LEN];
    sha256(pass.p, pass.len, h);
    bool ok = false;
    for (int i = 0; i < u->npass; i++) {
        ok |= CRYPTO_memcmp(u->pass[i], h, ACL_HASH_LEN) == 0;
    }
    return ok;
}

/* ---------------------------------------------------------------- text form */

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

void
acl_user_keys_text(const struct acl_user *u, struct buf *b)
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
void
acl_user_describe(const struct acl_user *u, struct buf *b)
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
        acl_user_keys_text(u, b);
    }
    buf_putc(b, ' ');
    describe_chans(u, b, true);
    buf_putc(b, ' ');
    buf_append(b, u->cmdrules, strlen(u->cmdrules));
}

void
acl_user_chans_text(const struct acl_user *u, struct buf *b)
{
    describe_chans(u, b, false);
}

int
acl_user_flag_names(const struct acl_user *u, const char *out[3])
{
    int n = 0;
    out[n++] = (u->flags & U_ON) ? "on" : "off";
    if (u->flags & U_NOPASS) {
        out[n++] = "nopass";
    }
    if (u->flags & (U_SANITIZE | U_SKIP_SANITIZE)) {
        out[n++] = (u->flags & U_SANITIZE) ? "sanitize-payload" : "skip-sanitize-payload";
    }
    return n;
}

int
acl_user_npass(const struct acl_user *u)
{
    return u->npass;
}

void
acl_user_pass_hex(const struct acl_user *u, int i, char out[ACL_PASS_HEX_LEN + 1])
{
    hex(u->pass[i], out);
}

const char *
acl_user_cmdrules(const struct acl_user *u)
{
    return u->cmdrules;
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

bool
acl_user_chan_ok(const struct acl_user *u, const char *ch, size_t len, bool literal)
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

enum acl_deny
acl_user_check(const struct acl_user *u, const struct cmd_spec *cmd, int argc, struct rv_str *argv,
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
            if (!acl_user_chan_ok(u, argv[i].p, argv[i].len, literal)) {
                *bad = i;
                return ACL_DENY_CHAN;
            }
        }
    }
    return ACL_OK;
}

bool
acl_all_keys_readable(const struct conn *c)
{
    const struct acl_user *u = c->user;
    if (u == NULL || (u->flags & U_ALLKEYS)) {
        return true; /* (no user: the server's own calls, replay) */
    }
    for (int i = 0; i < u->nkeys; i++) {
        const struct acl_keypat *k = &u->keys[i];
        if (k->len == 1 && k->pat[0] == '*' && (k->perm & ACL_PERM_R)) {
            return true;
        }
    }
    return false;
}
