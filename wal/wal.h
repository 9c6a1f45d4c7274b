/* wal/wal.h: one shard's write-ahead log: framed records in segment files,
 * group-committed writes, a background syncer, and the reader recovery and
 * ruvio-check use. Checkpoint files use the same record framing.
 *
 * Files, under the shard's directory (data_dir/shard-<i>/):
 *   wal-<first lsn, 20 digits>.log   segment: 32-byte header, then records
 *   ckpt-<lsn, 20 digits>.ckpt       checkpoint covering records <= lsn
 *   wal-spare.tmp                    always: the next segment, zero-filled ahead
 *
 * Records are pwrite()n at the segment's logical end. In always mode a
 * segment is a pre-zeroed file (the spare, renamed into place at rotation),
 * so the log ends at the first all-zero record header followed only by
 * zeros; a finished segment is cut to its last record. Elsewhere (and when no
 * spare could be prepared) a segment grows as written.
 *
 * Record (little-endian): u32 len | u32 crc32c | u64 lsn | i64 ts_ms | payload
 * (len bytes). The CRC covers lsn, ts and payload. The top bit of len is the
 * sync barrier (WAL_LEN_BARRIER): set on the first record of a write when
 * everything before it had been fdatasync'd, and on the newest record at a
 * clean close; recovery uses it to tell damage to synced records from the
 * torn end of an unsynced write (wal_walk_next). It never leaves the file:
 * replication frames carry the plain length. LSNs start at 1 and grow by
 * one per record with no gaps, across segments; a record's ts is the shard
 * clock when it was executed, and replay runs it with that clock.
 *
 * Payload: u8 kind, then for WAL_P_CMDS u32 ncmds and per command varint argc
 * and per argument varint length + bytes (the effects of one client command,
 * or of a whole MULTI/EXEC, so a transaction is all-or-nothing on recovery);
 * for WAL_P_END (last record of a checkpoint) u64 number of keys.
 *
 * Threads: everything except the syncer runs on the shard's thread. The
 * syncer calls fdatasync() on its own thread (every interval in everysec, on
 * request in always, spaced while syncs run slow) and publishes the durable
 * LSN; the shard never syncs. In always mode a spare thread zero-fills the
 * next segment. */
#pragma once
#include "base/buf.h"
#include "proto/resp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WAL_REC_HDR 24
#define WAL_SEG_HDR 32
#define WAL_CKPT_HDR 48
/* Payload bytes of one record (records, replication frames, checkpoint
 * records): the length field is 32 bits and its top bit is the sync
 * barrier flag (WAL_LEN_BARRIER). A write whose record would be larger is
 * refused before it runs; nothing longer is ever framed. */
#define WAL_MAX_REC 0x7fffffffull
/* A key's rebuild record (checkpoints, full sync) is split at the first
 * command boundary past this many bytes: any key a command can build fits,
 * and neither a checkpoint nor a replica's frame limit meets one huge record. */
#define WAL_SPLIT_REC (32u << 20)
#define WAL_LEN_BARRIER 0x80000000u

enum wal_mode { WAL_MEMORY = 0, WAL_EVERYSEC = 1, WAL_ALWAYS = 2 };
enum wal_kind { WAL_P_CMDS = 1, WAL_P_END = 2 };

struct wal;

struct wal_opts {
    const char *dir; /* the shard's directory; must exist */
    unsigned shard;
    int mode;                  /* enum wal_mode (not WAL_MEMORY) */
    uint64_t seg_bytes;        /* rotate past this size */
    int64_t sync_interval_ms;  /* everysec */
    void (*notify)(void *arg); /* syncer thread: durable LSN advanced (always) */
    void *notify_arg;
    /* always: 0 = adaptive (sync starts spaced WAL_PACE_DEFAULT_US apart
     * while syncs run slow), > 0 = always spaced this many us, < 0 = never */
    int64_t sync_min_interval_us;
    bool no_spare; /* always: never pre-zero segments (tests) */
};
#define WAL_PACE_DEFAULT_US 1000

/* Start a new segment whose first record will be next_lsn. */
struct wal *wal_open(const struct wal_opts *o, uint64_t next_lsn, char *err, size_t errsz);
/* Write and sync what is staged, stop the syncer, close. NULL is a no-op. */
void wal_close(struct wal *w);

/* ---- appending (shard thread) ---- */
/* Start a record: returns a mark; append the payload to wal_buf(w), then seal
 * it with wal_rec_end(), which returns its LSN. Or drop it with wal_rec_abort. */
size_t wal_rec_begin(struct wal *w);
struct buf *wal_buf(struct wal *w);
uint64_t wal_rec_end(struct wal *w, size_t mark, int64_t ts_ms);
/* (A payload over WAL_MAX_REC is never framed: wal_rec_end drops it, returns
 * 0 and fails the log for good (wal_sync_error EFBIG), since the effect it
 * held is then in memory only. Callers refuse such writes before they run.) */
void wal_rec_abort(struct wal *w, size_t mark);
/* Append a record framed elsewhere, verbatim (a replica logs its primary's
 * frames as they came; a wal_frame_mark frame is sealed here): the frame's
 * LSN must be wal_last_lsn(w) + 1. */
void wal_rec_put(struct wal *w, const uint8_t *frame, size_t len);
/* write() everything staged to the segment (rotating when full). 0, or
 * -errno when the kernel refused bytes (they stay staged; call again).
 * Between wal_rec_begin and its end nothing is written: a record reaches
 * the file whole, after it is sealed. */
int wal_write(struct wal *w);
bool wal_staged(const struct wal *w);
/* Ask the syncer for an fdatasync covering everything written. */
void wal_request_sync(struct wal *w);
/* Start the next segment now (checkpoints); -errno on failure. Inside an
 * open record it waits for the first wal_write after the record is sealed
 * or dropped (a record never spans two segments, nor is written unsealed). */
int wal_rotate(struct wal *w);
/* Delete segments whose records are all <= lsn (never the current one). */
void wal_drop_covered(struct wal *w, uint64_t lsn);

uint64_t wal_last_lsn(const struct wal *w);    /* last staged */
uint64_t wal_written_lsn(const struct wal *w); /* the kernel has it */
uint64_t wal_durable_lsn(const struct wal *w); /* fdatasync covered it */
int wal_write_error(const struct wal *w); /* errno of the last failed write, 0 once it succeeds */
int wal_sync_error(const struct wal *w);  /* errno of a failed fdatasync: sticky, fatal */
uint64_t wal_bytes(const struct wal *w);  /* logical bytes of the segments (not file sizes) */
uint64_t wal_bytes_from(const struct wal *w, uint64_t lsn); /* of those from the one holding lsn */
size_t wal_segments(const struct wal *w);
struct wal_stats {
    uint64_t syncs;              /* fdatasync rounds */
    uint64_t slow_syncs;         /* over 4 x the recent median and over 5 ms */
    uint64_t paced_syncs;        /* started late by pacing */
    uint64_t max_sync_us;        /* slowest round */
    uint64_t prezeroed_segments; /* spares taken into use */
};
void wal_stats(const struct wal *w, struct wal_stats *st);

/* Run fn(arg) on the syncer thread after any sync in progress (fsync of a
 * finished checkpoint, renames). fn must not touch shard state. */
void wal_io_run(struct wal *w, void (*fn)(void *arg), void *arg);

/* ---- payload ---- */
void wal_pay_begin(struct buf *b, enum wal_kind kind); /* kind + ncmds placeholder */
void wal_pay_cmd(struct buf *b, size_t start, int argc, const struct rv_str *argv);
/* Number of commands in the payload started at start. */
uint32_t wal_pay_ncmds(const struct buf *b, size_t start);
/* A whole WAL_P_CMDS payload of one command, written at p (the same bytes as
 * wal_pay_begin + wal_pay_cmd): at most wal_pay_one_max bytes; returns the length. */
size_t wal_pay_one_max(int argc, const struct rv_str *argv);
/* Upper bound of the bytes wal_pay_cmd adds for one command (no allocation,
 * reads only the lengths). */
uint64_t wal_pay_cmd_max(int argc, const struct rv_str *argv);
size_t wal_pay_one(uint8_t *p, int argc, const struct rv_str *argv);

struct wal_pay_it {
    const uint8_t *p, *end;
    uint32_t left;
    enum wal_kind kind;
};
/* false when the payload is malformed. */
bool wal_pay_open(struct wal_pay_it *it, const uint8_t *p, size_t len);
/* 1 with the next command (argv grown as needed, views into the payload),
 * 0 when done, -1 when malformed. */
int wal_pay_next_slow(struct wal_pay_it *it, int *argc, struct rv_str **argv, size_t *cap);
static inline int
wal_pay_next(struct wal_pay_it *it, int *argc, struct rv_str **argv, size_t *cap)
{
    /* Inline for the common shape: fewer than 128 arguments of under 128
     * bytes each, so every varint is one byte and argv is big enough.
     * Anything else (or anything malformed) is redone by the slow path,
     * which starts over from it->p: nothing is committed before the end. */
    const uint8_t *p = it->p, *end = it->end;
    if (it->left == 0) {
        return p == end || it->kind != WAL_P_CMDS ? 0 : -1;
    }
    if (p < end && (size_t)p[0] - 1 < 0x7f && p[0] <= *cap) {
        size_t n = p[0], i;
        struct rv_str *a = *argv;
        p++;
        for (i = 0; i < n && p < end && p[0] < 0x80; i++) {
            size_t l = p[0];
            p++;
            if (l > (size_t)(end - p)) {
                break;
            }
            a[i].p = (const char *)p;
            a[i].len = l;
            p += l;
        }
        if (i == n) {
            it->p = p;
            it->left--;
            *argc = (int)n;
            return 1;
        }
    }
    return wal_pay_next_slow(it, argc, argv, cap);
}

/* ---- files ---- */
struct wal_file {
    uint64_t lsn; /* segment: first LSN; checkpoint: covered LSN */
    bool ckpt;
    char path[4096];
};
/* Segments and checkpoints in dir, each list sorted by LSN. -errno on error. */
int wal_list(const char *dir, struct wal_file **segs, size_t *nsegs, struct wal_file **ckpts,
             size_t *nckpts);
void wal_path_seg(char *out, size_t outsz, const char *dir, uint64_t first_lsn);
void wal_path_ckpt(char *out, size_t outsz, const char *dir, uint64_t lsn, bool tmp);
int wal_fsync_dir(const char *dir);

/* ---- reading (recovery, ruvio-check) ---- */
struct wal_rec {
    uint64_t lsn;
    int64_t ts_ms;
    const uint8_t *payload;
    size_t len;
    bool sealed; /* (wal_frame_parse) it carries a CRC, checked */
};
struct wal_ckpt_info {
    unsigned shard, nshards;
    uint32_t keys_hint; /* keys when it started (to size the table on load) */
    uint64_t lsn;
    int64_t created_ms;
};
enum wal_rd { WAL_RD_OK = 0, WAL_RD_END, WAL_RD_TORN, WAL_RD_CORRUPT };
struct wal_reader {
    int fd;
    const uint8_t *map;
    size_t size;
    size_t off;                   /* next record; the bad one after TORN/CORRUPT */
    uint64_t first_lsn;           /* segments */
    uint64_t last_lsn;            /* of the last good record (internal) */
    struct wal_ckpt_info ck;      /* checkpoints */
    const char *why;              /* after TORN/CORRUPT */
    bool zero_tail;               /* END: zeros from off to the end of the file */
    uint64_t gap_recs;            /* TORN: well-formed records after the bad one (dropped) */
    uint64_t gap_first, gap_last; /*   their LSNs */
};
/* Map a segment (ckpt false) or checkpoint and check its header; -1 with a
 * message naming the file on failure. */
int wal_reader_open(struct wal_reader *r, const char *path, bool ckpt, char *err, size_t errsz);
enum wal_rd wal_reader_next(struct wal_reader *r, struct wal_rec *rec);
void wal_reader_close(struct wal_reader *r);
/* Cut a segment at off (a torn tail); -errno on failure. */
int wal_truncate(const char *path, size_t off);

/* ---- walking the WAL after a checkpoint (recovery, ruvio-check) ---- */
/* Every record of the segments still needed after a checkpoint covering
 * LSNs <= after (segments wholly covered are skipped; records <= after in a
 * partly covered one are returned too), with the checks both readers share:
 * the first needed segment starts at or before after + 1, each later one
 * right after its predecessor's last record, each header names its file's
 * first LSN, records come in LSN order without gaps. */
struct wal_walk {
    const struct wal_file *segs;
    size_t n;
    const struct wal *live; /* wal_walk_live */
    size_t seg;             /* the segment being read, or the one a problem is in */
    uint64_t after, next;
    bool started, open;
    struct wal_reader r;
    size_t rec_off; /* offset of the record last returned */
    uint64_t bytes; /* logical sizes of the segments read */
    bool zero_tail; /* a segment ended in a zero tail (recovery cuts it and clears this): */
    size_t tail_seg, tail_off; /*   the latest, segs[tail_seg] at offset tail_off */
    /* after WAL_RD_TORN / WAL_RD_CORRUPT: */
    size_t off;        /* where in segs[seg]; 0 with whole_file */
    uint64_t gap_recs; /* TORN: well-formed records after off, cut with it */
    bool drop_later;   /* TORN: and every segment after segs[seg] (none synced) */
    size_t prev_end;   /* (where the last segment read ended) */
    bool whole_file;   /* a missing segment before it, or an unreadable/bad header */
    char why[4400];
};
void wal_walk_init(struct wal_walk *k, const struct wal_file *segs, size_t n, uint64_t after);
/* Reading the log that w is writing (shard thread; replica catch-up): map
 * each segment only up to its logical size. The sync thread cuts a finished
 * segment's zero tail after its fdatasync; a mapping past that cut would
 * raise SIGBUS when read. */
void wal_walk_live(struct wal_walk *k, const struct wal *w);
/* WAL_RD_OK with the next record; WAL_RD_END; WAL_RD_TORN (a torn tail:
 * never synced, may be cut off at off in segs[seg], and with drop_later the
 * segments after it set aside) or WAL_RD_CORRUPT, with seg, off and why set. */
enum wal_rd wal_walk_next(struct wal_walk *k, struct wal_rec *rec);
/* The caller found the record last returned unusable (malformed payload):
 * turns it into WAL_RD_CORRUPT at its offset. */
enum wal_rd wal_walk_reject(struct wal_walk *k, const char *why);
void wal_walk_close(struct wal_walk *k);

/* ---- checkpoint writer (shard thread; finish on the syncer) ---- */
struct wal_ckpt;
struct wal_ckpt *wal_ckpt_create(const char *dir, const struct wal_ckpt_info *info, char *err,
                                 size_t errsz);
size_t wal_ckpt_rec_begin(struct wal_ckpt *k);
struct buf *wal_ckpt_buf(struct wal_ckpt *k);
/* -EFBIG (the record dropped) when its payload is over WAL_MAX_REC. */
int wal_ckpt_rec_end(struct wal_ckpt *k, size_t mark);
/* write() the buffer when it holds at least min bytes; -errno on failure. */
int wal_ckpt_flush(struct wal_ckpt *k, size_t min);
/* End record, write, fdatasync, rename into place, fsync the directory. Slow:
 * run it on the syncer (wal_io_run). 0 or -errno; k is freed either way and
 * the temporary file removed on failure. */
int wal_ckpt_finish(struct wal_ckpt *k, uint64_t nkeys);
void wal_ckpt_abort(struct wal_ckpt *k);

/* ---- framing without a segment (wal/frame.c; replication) ---- */
/* Fill the 24-byte header h of a record whose len payload bytes follow it
 * (len <= WAL_MAX_REC: the caller checks). */
void wal_frame_seal(uint8_t *h, size_t len, uint64_t lsn, int64_t ts_ms);
/* The same header without the CRC (0), flagged by WAL_LSN_UNSEALED in the LSN
 * field: a record that only travels in memory (durability memory's
 * replication stream; its CRC would protect nothing that TCP and the process
 * do not). Never on disk: wal_rec_put seals such a frame as it stages it. */
#define WAL_LSN_UNSEALED (1ull << 63)
void wal_frame_mark(uint8_t *h, size_t len, uint64_t lsn, int64_t ts_ms);
/* Parse one whole record of the replication stream at p (avail bytes): 1 with
 * rec set (its size is WAL_REC_HDR + rec->len; rec->sealed false for a
 * wal_frame_mark frame, whose CRC is not checked), 0 when avail is shorter
 * than a header, -1 when it is truncated or fails its CRC. */
int wal_frame_parse(const uint8_t *p, size_t avail, struct wal_rec *rec);
/* Append the frame of rec (read from a WAL file) to out as it goes on the
 * wire: without the file's sync barrier flag. */
void wal_frame_copy(struct buf *out, const struct wal_rec *rec);

/* Failpoints for crash tests: with RUVIO_FAILPOINT=<site> in the environment
 * the process dies (_exit(77)) when it reaches that site; sites: wal-append,
 * wal-sync, wal-rotate, ckpt-write, ckpt-rename, and resharding's reshard-*
 * (node/persist/reshard.c). One getenv at start-up; a
 * predictable branch otherwise. */
void wal_failpoint(const char *site);
/* Fault injection without dying: true when RUVIO_FAILPOINT names site
 * (wal-sync-eio: the syncer reports EIO as if the disk failed). */
bool wal_failpoint_hit(const char *site);
