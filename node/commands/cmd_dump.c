/* node/commands/cmd_dump.c: DUMP and RESTORE (Redis 7 syntax, replies and errors).
 *
 * The payload is Ruvio's own and opaque to clients, as Redis's is:
 *
 *   byte 0        DUMP_MAGIC
 *   records       the value's rebuild commands (obj_ops.emit; SET for a
 *                 string) without their key: varint argc, then argc times
 *                 varint length + bytes
 *   2 bytes       DUMP_VERSION, little-endian
 *   8 bytes       CRC-64 (reflected ECMA-182 polynomial, as CRC-64/XZ) of
 *                 every byte before it, little-endian
 *
 * RESTORE checks the trailer, then parses every record and checks that the
 * commands are the rebuild commands of one type before touching the
 * keyspace, so a payload can only ever recreate a value: it never runs an
 * arbitrary command. The records then run through a replay context
 * (node/persist/replay.h) with the target key put back as argv[1]. */
#include "node/commands/cmds.h"

#include "base/buf.h"
#include "base/mem.h"
#include "node/core/conn.h"
#include "node/keyspace/ks.h"
#include "node/core/lookup.h"
#include "node/types/obj.h"
#include "node/types/rdb.h"
#include "node/persist/replay.h"
#include "node/features/ksnotify.h"
#include "node/core/reply.h"

#include <string.h>
#include <strings.h>

#define DUMP_MAGIC 0xF5u
#define DUMP_VERSION 1u
#define DUMP_TRAILER 10u

#define ERR_DUMP "ERR DUMP payload version or checksum are wrong"
#define ERR_BADFMT "ERR Bad data format"

/* ------------------------------------------------------------------ CRC-64 */

#define CRC64_POLY UINT64_C(0xC96C5795D7870F42) /* ECMA-182, reflected */

static uint64_t
dump_crc64(const uint8_t *p, size_t n)
{
    uint64_t tab[256], crc = ~UINT64_C(0);

    for (unsigned i = 0; i < 256; i++) {
        uint64_t v = i;
        for (int k = 0; k < 8; k++) {
            v = (v & 1) ? (v >> 1) ^ CRC64_POLY : v >> 1;
        }
        tab[i] = v;
    }
    for (size_t i = 0; i < n; i++) {
        crc = tab[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    }
    return ~crc;
}

/* ---------------------------------------------------------------- encoding */


/* Appends one record: argv without argv[1] (the key). */
static void
dump_record(void *arg, int argc, const struct rv_str *argv)
{
    struct buf *b = arg;
    buf_put_varint(b, (uint64_t)argc - 1);
    for (int i = 0; i < argc; i++) {
        if (i == 1) {
            continue;
        }
        buf_put_varint(b, argv[i].len);
        buf_append(b, argv[i].p, argv[i].len);
    }
}

static void
dump_finish(struct buf *b)
{
    uint8_t t[8];
    uint64_t crc;

    buf_putc(b, (char)(DUMP_VERSION & 0xff));
    buf_putc(b, (char)(DUMP_VERSION >> 8));
    crc = dump_crc64((const uint8_t *)b->data, b->len);
    for (int i = 0; i < 8; i++) {
        t[i] = (uint8_t)(crc >> (8 * i));
    }
    buf_append(b, t, sizeof(t));
}

void
dump_payload(struct ks_entry *e, struct buf *b)
{
    buf_putc(b, (char)DUMP_MAGIC);
    if (ks_entry_type(e) == KS_STRING) {
        char scratch[24];
        struct rv_str av[3] = { { "SET", 3 }, ks_entry_key(e), ks_str_get(e, scratch) };
        dump_record(b, 3, av);
    } else {
        obj_ops_of(ks_entry_type(e))->emit(e, dump_record, b);
    }
    dump_finish(b);
}

void
dump_payload_cmd(int argc, const struct rv_str *argv, struct buf *b)
{
    buf_putc(b, (char)DUMP_MAGIC);
    dump_record(b, argc, argv);
    dump_finish(b);
}

CMD_HANDLER(dump)
{
    struct ks_entry *e = lookup_read(c, argv[1]);
    struct buf b;

    (void)argc;
    if (e == NULL) {
        reply_null(c);
        return;
    }
    buf_init(&b);
    dump_payload(e, &b);
    reply_bulk(c, b.data, b.len);
    buf_deinit(&b);
}

/* ---------------------------------------------------------------- decoding */

struct dump_rd {
    const uint8_t *p, *end;
};

static bool
get_varint(struct dump_rd *r, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; r->p < r->end && shift < 64; shift += 7) {
        uint8_t c = *r->p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* Record arguments: a stream entry's XADD has as many as the entry has
 * fields, so the array grows (bounded by the payload's bytes). */
struct dump_av {
    struct rv_str *v;
    size_t cap;
};

/* Reads one record into av[0], av[2..] (av[1] is left for the key); *argc
 * counts the key. false on a malformed record. */
static bool
read_record(struct dump_rd *r, struct dump_av *a, int *argc)
{
    uint64_t n, len;
    /* every argument takes at least its length byte */
    if (!get_varint(r, &n) || n < 1 || n > (uint64_t)(r->end - r->p) || n > INT32_MAX - 1) {
        return false;
    }
    if (n + 1 > a->cap) {
        a->cap = n + 1 > 2 * a->cap ? n + 1 : 2 * a->cap;
        a->v = rv_realloc(a->v, a->cap * sizeof(*a->v));
    }
    for (uint64_t i = 0; i < n; i++) {
        if (!get_varint(r, &len) || len > (uint64_t)(r->end - r->p)) {
            return false;
        }
        a->v[i == 0 ? 0 : i + 1] = (struct rv_str){ (const char *)r->p, (size_t)len };
        r->p += len;
    }
    *argc = (int)n + 1;
    return true;
}

/* Which commands a payload may hold: the rebuild commands of one type. */
enum dump_kind {
    DK_NONE,
    DK_STRING,
    DK_LIST,
    DK_SET,
    DK_ZSET,
    DK_HASH,
    DK_COORD,
    DK_STREAM,
    DK_STREAM_END,
    DK_JSON
};

static enum dump_kind
record_kind(const struct rv_str *av, int argc, enum dump_kind cur, bool *ttl_phase)
{
    struct rv_str name = av[0];
    if (cmd_arg_is(name, "set") && argc == 3 && cur == DK_NONE) {
        return DK_STRING;
    }
    if (cmd_arg_is(name, "rpush") && argc >= 3 && (cur == DK_NONE || cur == DK_LIST)) {
        return DK_LIST;
    }
    if (cmd_arg_is(name, "sadd") && argc >= 3 && (cur == DK_NONE || cur == DK_SET)) {
        return DK_SET;
    }
    if (cmd_arg_is(name, "zadd") && argc >= 4 && argc % 2 == 0 &&
        (cur == DK_NONE || cur == DK_ZSET)) {
        return DK_ZSET;
    }
    if (cmd_arg_is(name, "hset") && argc >= 4 && argc % 2 == 0 && !*ttl_phase &&
        (cur == DK_NONE || cur == DK_HASH)) {
        return DK_HASH;
    }
    if (cmd_arg_is(name, "hpexpireat") && argc == 6 && cur == DK_HASH &&
        cmd_arg_is(av[3], "fields") && av[4].len == 1 && av[4].p[0] == '1') {
        *ttl_phase = true;
        return DK_HASH;
    }
    if (cmd_arg_is(name, "semaphore") && argc >= 4 && cmd_arg_is(av[2], "restore") &&
        (cur == DK_NONE || cur == DK_COORD)) {
        return DK_COORD;
    }
    /* a stream: XADDs, then one XSETID, last */
    if (cmd_arg_is(name, "xadd") && argc >= 5 && (cur == DK_NONE || cur == DK_STREAM)) {
        return DK_STREAM;
    }
    if (cmd_arg_is(name, "xsetid") && argc == 7 && cur == DK_STREAM) {
        return DK_STREAM_END;
    }
    /* then its consumer groups (payloads from before groups end at XSETID) */
    if (cmd_arg_is(name, "xgroupload") && (argc == 5 || (argc >= 8 && (argc - 8) % 3 == 0)) &&
        cur == DK_STREAM_END) {
        return DK_STREAM_END;
    }
    /* a JSON document: one JSON.SET at the root */
    if (cmd_arg_is(name, "json.set") && argc == 4 && av[2].len == 1 && av[2].p[0] == '$' &&
        cur == DK_NONE) {
        return DK_JSON;
    }
    return DK_NONE;
}

/* 0 when the payload is good, else the error to reply. */
static const char *
dump_verify(struct rv_str pl)
{
    const uint8_t *p = (const uint8_t *)pl.p;
    struct dump_rd r;
    enum dump_kind kind = DK_NONE;
    bool ttl_phase = false;
    uint64_t crc = 0;
    size_t body;

    if (pl.len < 1 + DUMP_TRAILER || p[0] != DUMP_MAGIC) {
        return ERR_DUMP;
    }
    body = pl.len - DUMP_TRAILER;
    if ((unsigned)(p[body] | p[body + 1] << 8) != DUMP_VERSION) {
        return ERR_DUMP;
    }
    for (int i = 0; i < 8; i++) {
        crc |= (uint64_t)p[body + 2 + i] << (8 * i);
    }
    if (crc != dump_crc64(p, body + 2)) {
        return ERR_DUMP;
    }
    r.p = p + 1;
    r.end = p + body;
    if (r.p == r.end) {
        return ERR_BADFMT;
    }
    struct dump_av a = { NULL, 0 };
    const char *err = NULL;
    while (err == NULL && r.p < r.end) {
        int argc;
        if (!read_record(&r, &a, &argc)) {
            err = ERR_BADFMT;
        } else if ((kind = record_kind(a.v, argc, kind, &ttl_phase)) == DK_NONE) {
            err = ERR_BADFMT;
        }
    }
    rv_free(a.v);
    if (err == NULL && kind == DK_STREAM) {
        err = ERR_BADFMT; /* a stream's payload ends with its XSETID */
    }
    return err;
}

/* Replays the verified payload on key; false (key deleted) when a command failed. */
static bool
dump_replay(struct conn *c, struct rv_str key, struct rv_str pl)
{
    struct replay *rp = replay_create(c->shard);
    replay_set_db(rp, c->db);
    struct dump_rd r = { (const uint8_t *)pl.p + 1, (const uint8_t *)pl.p + pl.len - DUMP_TRAILER };
    bool ok = true;

    struct dump_av a = { NULL, 0 };
    ksn_mute(true);
    while (ok && r.p < r.end) {
        char err[256];
        int argc;
        read_record(&r, &a, &argc);
        a.v[1] = key;
        /* the payload rebuilds one key in the caller's database, never another's */
        ok = !(a.v[0].len == 6 && strncasecmp(a.v[0].p, "select", 6) == 0) &&
             replay_exec(rp, argc, a.v, err, sizeof(err));
    }
    ksn_mute(false);
    rv_free(a.v);
    replay_destroy(rp);
    if (!ok) {
        ks_delete(c->env->ks, key.p, key.len);
    }
    return ok;
}

/* A payload made by Redis's DUMP (RDB versions up to 7.2's), rewritten as
 * Ruvio's: its value decoded into the same rebuild commands, then checked and
 * replayed like any payload. NULL when pl is not Redis's (Ruvio's, or bad:
 * dump_verify says which), else the error to reply, or "" with *out set. */
static const char *
dump_from_redis(struct rv_str pl, struct buf *out)
{
    struct rdb_rd r;
    unsigned version;
    const uint8_t *p = (const uint8_t *)pl.p;
    if (pl.len == 0 || p[0] == DUMP_MAGIC || !rdb_payload_check(p, pl.len, &r, &version)) {
        return NULL;
    }
    unsigned type = *r.p++;
    buf_putc(out, (char)DUMP_MAGIC);
    int rc = rdb_value_emit(&r, type, (struct rv_str){ "", 0 }, dump_record, out);
    if (rc == -2) {
        return "ERR Bad data format: module values are not supported";
    }
    if (rc != 0 || r.p != r.end) {
        return ERR_BADFMT;
    }
    dump_finish(out);
    return "";
}

/* RESTORE's options. */
struct restore_opts {
    int64_t ttl, idle, freq;
    bool replace, absttl;
};

static bool
restore_parse(struct conn *c, int argc, struct rv_str *argv, struct restore_opts *o)
{
    *o = (struct restore_opts){ 0, -1, -1, false, false };
    for (int j = 4; j < argc; j++) {
        bool more = j + 1 < argc;
        if (cmd_arg_is(argv[j], "replace")) {
            o->replace = true;
        } else if (cmd_arg_is(argv[j], "absttl")) {
            o->absttl = true;
        } else if (cmd_arg_is(argv[j], "idletime") && more && o->freq == -1) {
            if (!cmd_arg_int(argv[++j], &o->idle)) {
                reply_err(c, RV_ERR_NOTINT);
                return false;
            }
            if (o->idle < 0) {
                reply_errf(c, "ERR Invalid IDLETIME value, must be >= 0");
                return false;
            }
        } else if (cmd_arg_is(argv[j], "freq") && more && o->idle == -1) {
            if (!cmd_arg_int(argv[++j], &o->freq)) {
                reply_err(c, RV_ERR_NOTINT);
                return false;
            }
            if (o->freq < 0 || o->freq > 255) {
                reply_errf(c, "ERR Invalid FREQ value, must be >= 0 and <= 255");
                return false;
            }
        } else {
            reply_err(c, RV_ERR_SYNTAX);
            return false;
        }
    }
    if (!o->replace && lookup_write(c, argv[1]) != NULL) {
        reply_errf(c, "BUSYKEY Target key name already exists.");
        return false;
    }
    if (!cmd_arg_int(argv[2], &o->ttl)) {
        reply_err(c, RV_ERR_NOTINT);
        return false;
    }
    if (o->ttl < 0) {
        reply_errf(c, "ERR Invalid TTL value, must be >= 0");
        return false;
    }
    return true;
}

/* RESTORE's second half: the payload checked (Ruvio's form), the options parsed. */
static void
restore_value(struct conn *c, struct rv_str key, struct rv_str pl, struct restore_opts *o)
{
    struct ks *ks = c->env->ks;
    int64_t now = c->env->now_ms, ttl = o->ttl;
    struct ks_entry *e;

    if (ttl != 0 && !o->absttl && __builtin_add_overflow(ttl, now, &ttl)) {
        reply_errf(c, "ERR Invalid TTL value, must be >= 0");
        return;
    }
    if (o->replace) {
        ks_delete(ks, key.p, key.len);
    }
    if (ttl != 0 && ttl <= now) {
        reply_ok(c); /* already expired: not created (Redis) */
        return;
    }
    if (!dump_replay(c, key, pl)) {
        reply_errf(c, ERR_BADFMT);
        return;
    }
    e = ks_peek(ks, key.p, key.len);
    if (e != NULL) {
        ks_set_expire(ks, e, ttl != 0 ? ttl : KS_NO_EXPIRE);
        e = ks_peek(ks, key.p, key.len);
        if (o->idle >= 0 && !ks_lfu(ks)) {
            ks_entry_set_idle(e, now, (uint64_t)o->idle * 1000);
        } else if (o->freq >= 0 && ks_lfu(ks)) {
            ks_entry_set_freq(e, now, (unsigned)o->freq);
        }
    }
    ksn_event(c->env, KSN_NEW, "new", key); /* (Redis adds it anew, REPLACE or not) */
    ksn_event(c->env, KSN_GENERIC, "restore", key);
    reply_ok(c);
}

/* RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]:
 * Ruvio's payloads and Redis's (DUMP of Redis 2.x to 7.2). */
CMD_HANDLER(restore)
{
    struct restore_opts o;
    struct rv_str pl = argv[3];
    struct buf conv;
    const char *err;

    if (!restore_parse(c, argc, argv, &o)) {
        return;
    }
    buf_init(&conv);
    if ((err = dump_from_redis(pl, &conv)) != NULL && *err == 0) {
        pl = (struct rv_str){ conv.data, conv.len };
        err = NULL;
    }
    if (err != NULL || (err = dump_verify(pl)) != NULL) {
        reply_errf(c, "%s", err);
    } else {
        restore_value(c, argv[1], pl, &o);
    }
    buf_deinit(&conv);
}
