/* node/commands/cmd_debug.c: DEBUG (the subset tests and operators use) and the
 * dataset digest (debug.h).
 *
 * Digest: per key SHA-1(key, value digest, deadline), XORed over the keys,
 * so the order keys are visited in does not matter. A value digest is built
 * from the rebuild commands every type emits (obj.h): RPUSH and unknown
 * commands are ordered sequences; SADD members, HSET/ZADD pairs and
 * HPEXPIREAT field deadlines are unordered, each element hashed alone and
 * XORed (elements of one value are distinct), so dict iteration order and
 * listpack-versus-hashtable layouts give the same digest. */
#define LOG_MODULE "server"
#include "node/commands/debug.h"

#include "base/log.h"
#include "base/sha1.h"
#include "node/commands/cmds.h"
#include "node/commands/slotmig.h"
#include "node/core/config.h"
#include "node/core/conn.h"
#include "node/core/effect.h"
#include "node/core/lookup.h"
#include "node/features/hook.h"
#include "node/features/multi.h"
#include "node/features/tracking.h"
#include "node/keyspace/ks.h"
#include "node/persist/persist.h"
#include "node/types/obj.h"
#include "node/core/reply.h"
#include "node/core/shard.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static atomic_bool active_expire_off;

bool
debug_active_expire_on(void)
{
    return !atomic_load_explicit(&active_expire_off, memory_order_relaxed);
}

/* Length-prefixed, so ("ab","c") and ("a","bc") differ. */
static void
feed(struct sha1 *h, const void *p, size_t n)
{
    uint64_t len = n;
    sha1_update(h, &len, sizeof(len));
    sha1_update(h, p, n);
}

static void
xor20(uint8_t acc[20], const uint8_t d[20])
{
    for (int i = 0; i < 20; i++) {
        acc[i] ^= d[i];
    }
}

struct vdig {
    struct sha1 ordered;
    uint8_t unordered[20];
    char last[24]; /* name of the previous ordered command */
};

/* Arguments per unordered element, by rebuild command; 0 = the whole command
 * after the key is one element; -1 = ordered. */
static int
elem_width(struct rv_str name)
{
    static const struct {
        const char *n;
        int w;
    } rows[] = {
        { "SADD", 1 },
        { "HSET", 2 },
        { "ZADD", 2 },
        { "HPEXPIREAT", 0 },
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (name.len == strlen(rows[i].n) && memcmp(name.p, rows[i].n, name.len) == 0) {
            return rows[i].w;
        }
    }
    return -1;
}

static void
vdig_cmd(void *arg, int argc, const struct rv_str *argv)
{
    struct vdig *v = arg;
    int w = elem_width(argv[0]);
    if (w < 0) {
        /* Batches of one value repeat the name: feed it only when it changes. */
        if (argv[0].len >= sizeof(v->last) || strlen(v->last) != argv[0].len ||
            memcmp(v->last, argv[0].p, argv[0].len) != 0) {
            feed(&v->ordered, argv[0].p, argv[0].len);
            snprintf(v->last, sizeof(v->last), "%.*s", (int)argv[0].len, argv[0].p);
        }
        for (int i = 2; i < argc; i++) {
            feed(&v->ordered, argv[i].p, argv[i].len);
        }
        return;
    }
    int step = w == 0 ? argc - 2 : w;
    for (int i = 2; i + step <= argc && step > 0; i += step) {
        struct sha1 h;
        uint8_t d[20];
        sha1_init(&h);
        feed(&h, argv[0].p, argv[0].len);
        for (int j = 0; j < step; j++) {
            feed(&h, argv[i + j].p, argv[i + j].len);
        }
        sha1_final(&h, d);
        xor20(v->unordered, d);
    }
}

void
debug_digest_value(const struct ks_entry *e, uint8_t out[20])
{
    struct vdig v;
    enum ks_type t = ks_entry_type(e);
    const char *tn = obj_type_name(t);

    memset(&v, 0, sizeof(v));
    sha1_init(&v.ordered);
    feed(&v.ordered, tn, strlen(tn));
    if (t == KS_STRING) {
        char scratch[24];
        struct rv_str s = ks_str_get(e, scratch);
        feed(&v.ordered, s.p, s.len);
    } else {
        const struct obj_ops *ops = obj_ops_of(t);
        if (ops != NULL && ops->emit != NULL) {
            ops->emit(e, vdig_cmd, &v);
        }
    }
    sha1_update(&v.ordered, v.unordered, sizeof(v.unordered));
    sha1_final(&v.ordered, out);
}

struct ksdig {
    int64_t now;
    uint8_t acc[20];
};

static void
ksdig_visit(void *arg, struct ks_entry *e)
{
    struct ksdig *k = arg;
    int64_t dl = ks_entry_expire(e);
    if (dl != KS_NO_EXPIRE && dl <= k->now) {
        return; /* logically gone: replicas hide such keys too */
    }
    struct rv_str key = ks_entry_key(e);
    struct sha1 h;
    uint8_t vd[20], d[20];
    debug_digest_value(e, vd);
    sha1_init(&h);
    feed(&h, key.p, key.len);
    sha1_update(&h, vd, sizeof(vd));
    if (dl != KS_NO_EXPIRE) {
        feed(&h, "!!expire!!", 10);
        sha1_update(&h, &dl, sizeof(dl));
    }
    sha1_final(&h, d);
    xor20(k->acc, d);
}

void
debug_digest_ks(struct ks *ks, int64_t now_ms, uint8_t out[20])
{
    struct ksdig k;
    uint64_t cur = 0;
    memset(&k, 0, sizeof(k));
    k.now = now_ms;
    if (ks_size(ks) > 0) {
        do {
            cur = ks_scan(ks, cur, 1024, ksdig_visit, &k);
        } while (cur != 0);
    }
    memcpy(out, k.acc, 20);
}

/* ------------------------------------------------------------------ DEBUG */

static void
debug_help(struct conn *c)
{
    static const char *const lines[] = {
        "DIGEST",
        "    Output a hex signature representing the current shard's dataset.",
        "DIGEST-VALUE <key> [<key> ...]",
        "    Output a hex signature of the values of all the specified keys.",
        "SLEEP <seconds>",
        "    Stop the shard for <seconds>. Decimals allowed.",
        "LOG <message>",
        "    Write <message> to the server log.",
        "SET-ACTIVE-EXPIRE <0|1>",
        "    Setting it to 0 disables expiring keys in background when they are not",
        "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
        "    default.",
        "POPULATE <count> [<prefix>] [<size>]",
        "    Create <count> string keys named key:<num>. If <prefix> is specified then",
        "    it is used instead of the 'key' prefix. These are not propagated to",
        "    replicas. Cluster slots are not respected so keys not belonging to the",
        "    current node can be created.",
        "ROLE-CHANGE-HOOK <old-role> <new-role> <epoch> <host> <port>",
        "    Queue a run of the on_role_change executable with these arguments (Ruvio).",
        NULL,
    };
    reply_help(c, "DEBUG", lines);
}

/* enable-debug-command: no | yes | local (loopback clients only). */
static bool
debug_allowed(struct conn *c)
{
    int64_t mode = c->env->cfg->node.enable_debug_command;
    if (mode == CFG_PROT_YES) {
        return true;
    }
    if (mode == CFG_PROT_LOCAL &&
        (strncmp(c->addr, "127.", 4) == 0 || strncmp(c->addr, "::1", 3) == 0 ||
         strncmp(c->addr, "[::1]", 5) == 0)) {
        return true;
    }
    return false;
}

/* Every subcommand but HELP: refused with Redis's text unless enabled. */
#define DEBUG_GUARD(c)                                                                             \
    do {                                                                                           \
        if (!debug_allowed(c)) {                                                                   \
            reply_errf(c, "ERR DEBUG command not allowed. If the enable-debug-command option is "  \
                          "set to \"local\", you can run it from a local connection, otherwise "   \
                          "you need to set this option in the configuration file, and then "       \
                          "restart the server.");                                                  \
            return;                                                                                \
        }                                                                                          \
    } while (0)

CMD_HANDLER(debug_help)
{
    debug_help(c);
}

CMD_HANDLER(debug_digest)
{
    uint8_t d[20];
    char hex[41];
    DEBUG_GUARD(c);
    debug_digest_ks(c->env->ks, c->env->now_ms, d);
    sha1_hex(d, hex);
    reply_simple(c, hex);
}

CMD_HANDLER(debug_digest_value)
{
    DEBUG_GUARD(c);
    reply_array(c, (size_t)(argc - 2));
    for (int i = 2; i < argc; i++) {
        uint8_t d[20] = { 0 };
        char hex[41];
        struct ks_entry *e = ks_peek(c->env->ks, argv[i].p, argv[i].len);
        if (ks_entry_live(e, c->env->now_ms)) {
            debug_digest_value(e, d);
        }
        sha1_hex(d, hex);
        reply_simple(c, hex);
    }
}

/* One key of DEBUG POPULATE: logged as the SET it amounts to, so the WAL and
 * the replicas hold it as any write (Redis does not propagate it: its
 * replicas and AOF miss the keys). */
static void
populate_one(struct conn *c, const struct cmd_spec *set, struct rv_str key, struct rv_str val)
{
    if (rv_unlikely(persist_hot(c->persist)->cow)) {
        persist_touch_db(c, c->db, key); /* a checkpoint or full sync walking: absent ahead */
    }
    ks_set_str(c->env->ks, key.p, key.len, val.p, val.len, KS_NO_EXPIRE, false);
    multi_touch_db(c->shard, c->db, key);
    if (c->env->tracking != NULL) {
        tracking_key_written(c, key);
    }
    if (persist_hot(c->persist)->log) {
        struct rv_str argv[3] = { { "SET", 3 }, key, val };
        persist_log(c, set, 3, argv);
    }
}

/* DEBUG POPULATE count [prefix] [size]: as Redis, "prefix:N" = "value:N" for N
 * in [0, count), keys that exist (and have not expired) left alone; with size,
 * the value is cut or zero-padded to size bytes. Cluster slots are not checked.
 * Its row is a write (Redis's is not): it logs what it creates, so it passes
 * the gates a SET does before it runs (a replica's READONLY, NOREPLICAS, a
 * failed WAL's MISCONF, a FAILOVER's or CLIENT PAUSE WRITE's hold), but not
 * the OOM refusal (not denyoom, as Redis). */
CMD_HANDLER(debug_populate)
{
    int64_t count, size = 0;
    DEBUG_GUARD(c);
    if (argc > 5) {
        reply_errf(
            c, "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try DEBUG HELP.",
            (int)argv[1].len, argv[1].p);
        return;
    }
    if (!cmd_arg_int(argv[2], &count) || count < 0 ||
        (argc == 5 && (!cmd_arg_int(argv[4], &size) || size < 0))) {
        reply_errf(c, "ERR value is out of range, must be positive");
        return;
    }
    if (size > 512 * 1024 * 1024) {
        reply_errf(c, "ERR string exceeds maximum allowed size (proto-max-bulk-len)");
        return;
    }
    const struct cmd_spec *set = cmd_lookup("set", 3);
    struct rv_str prefix = argc >= 4 ? argv[3] : (struct rv_str){ "key", 3 };
    char *val = size > 0 ? rv_calloc(1, (size_t)size) : NULL;
    char kbuf[128], vbuf[32];
    for (int64_t j = 0; j < count; j++) {
        /* (Redis formats the name into 128 bytes: a long prefix is cut there) */
        int kn = snprintf(kbuf, sizeof(kbuf), "%.*s:%lld", (int)prefix.len, prefix.p, (long long)j);
        struct rv_str key = { kbuf, kn < (int)sizeof(kbuf) ? (size_t)kn : sizeof(kbuf) - 1 };
        if (lookup_write(c, key) != NULL) {
            continue;
        }
        int vn = snprintf(vbuf, sizeof(vbuf), "value:%lld", (long long)j);
        struct rv_str v = { vbuf, (size_t)vn };
        if (size > 0) {
            memset(val, 0, (size_t)size);
            memcpy(val, vbuf, (size_t)vn < (size_t)size ? (size_t)vn : (size_t)size);
            v = (struct rv_str){ val, (size_t)size };
        }
        populate_one(c, set, key, v);
    }
    rv_free(val);
    effect_none(c); /* (its SETs are logged: not the DEBUG command itself) */
    reply_ok(c);
}

CMD_HANDLER(debug_sleep)
{
    long double secs;
    DEBUG_GUARD(c);
    if (!cmd_arg_double(argv[2], &secs) || secs < 0 || secs > 3600) {
        reply_errf(c, "ERR value is not a valid float");
        return;
    }
    struct timespec ts = { (time_t)secs, (long)((secs - (long double)(time_t)secs) * 1e9L) };
    while (nanosleep(&ts, &ts) != 0) {
    }
    shard_refresh_clock(c->shard);
    reply_ok(c);
}

CMD_HANDLER(debug_set_active_expire)
{
    int64_t on;
    DEBUG_GUARD(c);
    if (!cmd_arg_int(argv[2], &on)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    atomic_store(&active_expire_off, on == 0);
    reply_ok(c);
}

CMD_HANDLER(debug_slotmig_hold)
{
    int64_t on;
    DEBUG_GUARD(c);
    if (!cmd_arg_int(argv[2], &on)) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    slotmig_hold(c, on == 2 ? 2 : on != 0);
    reply_ok(c);
}

CMD_HANDLER(debug_role_change_hook)
{
    int64_t epoch, port;
    char oldr[32], newr[32], host[256];
    DEBUG_GUARD(c);
    if (!cmd_arg_int(argv[4], &epoch) || epoch < 0 || !cmd_arg_int(argv[6], &port) || port < 0 ||
        port > 65535) {
        reply_err(c, RV_ERR_NOTINT);
        return;
    }
    snprintf(oldr, sizeof(oldr), "%.*s", (int)argv[2].len, argv[2].p);
    snprintf(newr, sizeof(newr), "%.*s", (int)argv[3].len, argv[3].p);
    snprintf(host, sizeof(host), "%.*s", (int)argv[5].len, argv[5].p);
    hook_role_change(oldr, newr, (uint64_t)epoch, host, (int)port);
    reply_ok(c);
}

/* DEBUG LOG <message>: a marker line in the log (tests, operators). */
void
cmd_debug_log(struct conn *c, int argc, struct rv_str *argv)
{
    (void)argc;
    log_warn("DEBUG LOG: %.*s", (int)(argv[2].len > 400 ? 400 : argv[2].len), argv[2].p);
    reply_ok(c);
}
