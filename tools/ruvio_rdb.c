/* tools/ruvio_rdb.c: load a Redis RDB file into Ruvio (or any Redis-protocol
 * server). Reads a dump.rdb of Redis 2.x to 7.2 (RDB versions 1 to 11) and
 * writes the commands that recreate its data in Redis's protocol, for
 * `redis-cli --pipe`:
 *
 *   ruvio-rdb dump.rdb | redis-cli -p 6379 --pipe
 *
 * Each key becomes `RESTORE key <deadline> <payload> REPLACE ABSTTL`, the
 * payload being exactly what Redis's DUMP gives for it (the value's bytes from
 * the file, the file's RDB version and Redis's CRC-64), so the server decodes
 * it as it does a RESTORE from Redis; `SELECT n` comes before the keys of
 * database n; functions become `FUNCTION LOAD REPLACE`. Keys already expired
 * are left out. Every value is decoded here first (node/types/rdb.c), so a
 * corrupt file is refused before anything is written.
 *
 *   ruvio-rdb --check dump.rdb     decodes everything, prints counts per type
 *   ruvio-rdb --slots 0-5460 dump.rdb   only the keys of those hash slots (one
 *                                  shard's or node's share)
 *
 * Exit status: 0 done; 2 bad or unsupported file; 3 usage or I/O. */
#include "base/buf.h"
#include "base/mem.h"
#include "cluster/slot.h"
#include "node/types/rdb_file.h"
#include "proto/resp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

struct counts {
    unsigned slot_lo, slot_hi; /* keys kept: those of these hash slots */
    uint64_t keys, expired, skipped;
    uint64_t by_type[32];
    uint64_t dbs, functions;
};

/* One walk of the file: counting only (out NULL), or writing commands. */
struct walk {
    struct counts *n;
    struct buf *out;
    unsigned version;
    int64_t now;
    bool io_failed;
};

static void
resp_cmd(struct buf *out, int argc, const struct rv_str *argv)
{
    resp_w_array(out, (size_t)argc);
    for (int i = 0; i < argc; i++) {
        resp_w_bulk(out, argv[i].p, argv[i].len);
    }
}

/* Writes out's bytes to stdout and empties it. */
static int
drain(struct buf *out)
{
    if (out->len > 0 && fwrite(out->data, 1, out->len, stdout) != out->len) {
        fprintf(stderr, "ruvio-rdb: write: %s\n", strerror(errno));
        return 3;
    }
    buf_reset(out);
    return 0;
}

/* RESTORE key deadline payload REPLACE ABSTTL, the payload being the value's
 * bytes v0..v1 made into Redis's DUMP payload (type, value, version, CRC-64). */
static void
restore_cmd(struct walk *w, struct rv_str key, unsigned type, const uint8_t *v0, const uint8_t *v1,
            int64_t deadline)
{
    struct buf pl;
    buf_init(&pl);
    buf_putc(&pl, (char)type);
    buf_append(&pl, v0, (size_t)(v1 - v0));
    buf_putc(&pl, (char)(w->version & 0xff));
    buf_putc(&pl, (char)(w->version >> 8));
    uint64_t crc = rdb_crc64(0, (const uint8_t *)pl.data, pl.len);
    for (int i = 0; i < 8; i++) {
        buf_putc(&pl, (char)(crc >> (8 * i)));
    }
    char ttl[24];
    struct rv_str av[6] = { { "RESTORE", 7 },
                            key,
                            { ttl, (size_t)snprintf(ttl, sizeof(ttl), "%" PRId64, deadline) },
                            { pl.data, pl.len },
                            { "REPLACE", 7 },
                            { "ABSTTL", 6 } };
    resp_cmd(w->out, 6, av);
    buf_deinit(&pl);
}

static int
on_key(void *arg, uint64_t db, struct rv_str key, unsigned type, struct rdb_rd *r, int64_t deadline)
{
    struct walk *w = arg;
    struct counts *n = w->n;
    const uint8_t *v0 = r->p;
    (void)db;
    int rc = rdb_value_emit(r, type, key, NULL, NULL);
    if (rc != 0) {
        return rc;
    }
    unsigned slot = slot_of(key.p, key.len);
    if (w->out == NULL) {
        n->by_type[type < 32 ? type : 31]++;
        n->skipped += slot < n->slot_lo || slot > n->slot_hi;
    }
    if (slot < n->slot_lo || slot > n->slot_hi) {
        return 0;
    }
    if (deadline >= 0 && deadline <= w->now) {
        n->expired += w->out == NULL;
        return 0;
    }
    if (w->out == NULL) {
        n->keys++;
        return 0;
    }
    restore_cmd(w, key, type, v0, r->p, deadline < 0 ? 0 : deadline);
    if (w->out->len >= (1u << 20) && drain(w->out) != 0) {
        w->io_failed = true; /* (stops the walk) */
        return -1;
    }
    return 0;
}

static void
on_select(void *arg, uint64_t db)
{
    struct walk *w = arg;
    if (w->out == NULL) {
        w->n->dbs++;
        return;
    }
    char t[24];
    struct rv_str av[2] = { { "SELECT", 6 },
                            { t, (size_t)snprintf(t, sizeof(t), "%" PRIu64, db) } };
    resp_cmd(w->out, 2, av);
}

static void
on_function(void *arg, struct rv_str code)
{
    struct walk *w = arg;
    if (w->out == NULL) {
        w->n->functions++;
        return;
    }
    struct rv_str av[4] = { { "FUNCTION", 8 }, { "LOAD", 4 }, { "REPLACE", 7 }, code };
    resp_cmd(w->out, 4, av);
}

/* Decodes the whole file first (nothing is written for a bad one), then
 * writes its commands (a second walk can only fail writing: 3). */
static int
load(const uint8_t *p, size_t len, bool check, struct counts *n)
{
    static const struct rdb_file_ops ops = { on_key, on_function, on_select };
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct walk w = { n, NULL, 0, (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000, false };
    char err[256];
    if (rdb_file_walk(p, len, &ops, &w, &w.version, err, sizeof(err)) != 0) {
        fprintf(stderr, "ruvio-rdb: %s\n", err);
        return 2;
    }
    if (check) {
        return 0;
    }
    struct buf out;
    buf_init(&out);
    w.out = &out;
    int rc = rdb_file_walk(p, len, &ops, &w, &w.version, err, sizeof(err)) == 0 ? drain(&out) : 3;
    buf_deinit(&out);
    return rc;
}

int
main(int argc, char **argv)
{
    struct counts n = { .slot_lo = 0, .slot_hi = 16383 };
    bool check = false;
    int i = 1;
    for (; i < argc - 1; i++) {
        if (strcmp(argv[i], "--check") == 0) {
            check = true;
        } else if (strcmp(argv[i], "--slots") == 0 && i + 2 < argc &&
                   sscanf(argv[i + 1], "%u-%u", &n.slot_lo, &n.slot_hi) == 2 &&
                   n.slot_lo <= n.slot_hi && n.slot_hi < 16384) {
            i++;
        } else {
            break;
        }
    }
    if (i != argc - 1 || argv[i][0] == '-') {
        fprintf(stderr, "usage: ruvio-rdb [--check] [--slots FIRST-LAST] dump.rdb"
                        "   (then: | redis-cli -p PORT --pipe)\n");
        return 3;
    }
    FILE *f = fopen(argv[i], "rb");
    if (f == NULL) {
        fprintf(stderr, "ruvio-rdb: %s: %s\n", argv[i], strerror(errno));
        return 3;
    }
    struct buf in;
    buf_init(&in);
    char chunk[1 << 16];
    size_t got;
    while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        buf_append(&in, chunk, got);
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        fprintf(stderr, "ruvio-rdb: read error\n");
        buf_deinit(&in);
        return 3;
    }
    int rc = load((const uint8_t *)in.data, in.len, check, &n);
    buf_deinit(&in);
    if (rc == 0 && check) {
        printf("keys %" PRIu64 " (expired, left out: %" PRIu64 "; other slots: %" PRIu64
               "), databases %" PRIu64 ", functions %" PRIu64 "\n",
               n.keys, n.expired, n.skipped, n.dbs, n.functions);
        for (int t = 0; t < 32; t++) {
            if (n.by_type[t] != 0) {
                printf("rdb type %d: %" PRIu64 "\n", t, n.by_type[t]);
            }
        }
    }
    return rc;
}
