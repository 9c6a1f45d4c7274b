/* tools/ruvio_check.c: verify a Ruvio data directory offline (like
 * redis-check-aof). For each shard-<i>/ it checks the newest checkpoint (every
 * record's CRC and payload, the end record and its key count) and every WAL
 * segment (header, CRCs, payloads, LSNs in sequence across segments), and
 * reports the checkpoint LSN and the last valid LSN.
 *
 * Exit status: 0 all valid; 1 a torn tail in a last segment (recovery cuts it
 * off; --fix does it now); 2 corruption recovery would refuse; 3 usage or I/O. */
#include "base/mem.h"
#include "wal/wal.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
check_payload(const struct wal_rec *rec)
{
    struct wal_pay_it it;
    struct rv_str *argv = NULL;
    size_t cap = 0;
    int argc, rc;
    if (!wal_pay_open(&it, rec->payload, rec->len)) {
        return -1;
    }
    while ((rc = wal_pay_next(&it, &argc, &argv, &cap)) == 1) {
    }
    rv_free(argv);
    return rc;
}

struct shard_report {
    int status; /* 0 ok, 1 torn tail, 2 corrupt */
    uint64_t ckpt_lsn, ckpt_keys, first_lsn, last_lsn, records, bytes;
    size_t segments;
    char problem[9000];
};

static void
check_ckpt(const struct wal_file *f, struct shard_report *rep)
{
    struct wal_reader r;
    struct wal_rec rec;
    enum wal_rd rd;
    char err[4300];
    if (wal_reader_open(&r, f->path, true, err, sizeof(err)) != 0) {
        rep->status = 2;
        snprintf(rep->problem, sizeof(rep->problem), "%s", err);
        return;
    }
    rep->ckpt_lsn = r.ck.lsn;
    uint64_t keys = 0;
    bool end = false;
    while ((rd = wal_reader_next(&r, &rec)) == WAL_RD_OK) {
        if (rec.len >= 1 && rec.payload[0] == WAL_P_END && rec.len == 13) {
            uint64_t n;
            memcpy(&n, rec.payload + 5, 8);
            if (n != keys) {
                rd = WAL_RD_CORRUPT;
                r.why = "key count in the end record does not match";
                break;
            }
            end = true;
            break;
        }
        if (check_payload(&rec) != 0) {
            rd = WAL_RD_CORRUPT;
            r.why = "malformed payload";
            break;
        }
        keys++;
    }
    rep->ckpt_keys = keys;
    if (!end) {
        rep->status = 2;
        snprintf(rep->problem, sizeof(rep->problem), "checkpoint %s corrupt at offset %zu: %s",
                 f->path, r.off, rd == WAL_RD_END ? "no end record" : r.why);
    }
    wal_reader_close(&r);
}

static void
check_segments(struct wal_file *segs, size_t n, struct shard_report *rep, bool fix, uint64_t after)
{
    struct wal_walk k;
    struct wal_rec rec;
    enum wal_rd rd;
    rep->segments = n;
    wal_walk_init(&k, segs, n, after);
    while ((rd = wal_walk_next(&k, &rec)) == WAL_RD_OK) {
        if (check_payload(&rec) != 0) {
            rd = wal_walk_reject(&k, "malformed payload");
            break;
        }
        if (rep->first_lsn == 0) {
            rep->first_lsn = rec.lsn;
        }
        rep->last_lsn = rec.lsn;
        rep->records++;
    }
    wal_walk_close(&k);
    rep->bytes = k.bytes;
    if (rd == WAL_RD_END) {
        return;
    }
    bool torn = rd == WAL_RD_TORN;
    rep->status = torn ? 1 : 2;
    if (k.whole_file) {
        snprintf(rep->problem, sizeof(rep->problem), "%s", k.why);
        return;
    }
    snprintf(rep->problem, sizeof(rep->problem), "%s: %s at offset %zu (%s)", segs[k.seg].path,
             torn ? "torn tail" : "corrupt", k.off, k.why);
    if (torn && fix && wal_truncate(segs[k.seg].path, k.off) == 0) {
        for (size_t i = k.seg + 1; k.drop_later && i < n; i++) {
            char to[4200];
            snprintf(to, sizeof(to), "%s.discarded", segs[i].path);
            if (rename(segs[i].path, to) != 0) {
                fprintf(stderr, "cannot rename %s: %s\n", segs[i].path, strerror(errno));
            }
        }
        rep->status = 0;
        strncat(rep->problem, " - cut off (--fix)",
                sizeof(rep->problem) - strlen(rep->problem) - 1);
    }
}

static int
usage(void)
{
    fprintf(stderr, "usage: ruvio-check [--fix] [--json] <data_dir | data_dir/shard-N>\n");
    return 3;
}

int
main(int argc, char **argv)
{
    bool fix = false, json = false;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--fix") == 0) {
            fix = true;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (argv[i][0] == '-' || dir) {
            return usage();
        } else {
            dir = argv[i];
        }
    }
    if (dir == NULL) {
        return usage();
    }
    /* A shard directory, or a data directory holding shard-<i>/ */
    char shards[256][4200];
    size_t ns = 0;
    DIR *d = opendir(dir);
    if (d == NULL) {
        perror(dir);
        return 3;
    }
    struct dirent *de;
    bool has_files = false;
    while ((de = readdir(d)) != NULL) {
        unsigned idx;
        char tail;
        if (sscanf(de->d_name, "shard-%u%c", &idx, &tail) == 1 && ns < 256) {
            snprintf(shards[ns++], sizeof(shards[0]), "%s/%s", dir, de->d_name);
        } else if (strncmp(de->d_name, "wal-", 4) == 0 || strncmp(de->d_name, "ckpt-", 5) == 0) {
            has_files = true;
        }
    }
    closedir(d);
    if (ns == 0 && has_files) {
        snprintf(shards[ns++], sizeof(shards[0]), "%s", dir);
    }
    if (ns == 0) {
        fprintf(stderr, "%s: no shard-<i> directories and no WAL files\n", dir);
        return 3;
    }
    qsort(shards, ns, sizeof(shards[0]), (int (*)(const void *, const void *))strcmp);
    int worst = 0;
    if (json) {
        printf("[");
    }
    for (size_t i = 0; i < ns; i++) {
        struct shard_report rep;
        memset(&rep, 0, sizeof(rep));
        struct wal_file *segs = NULL, *cks = NULL;
        size_t nseg = 0, nck = 0;
        if (wal_list(shards[i], &segs, &nseg, &cks, &nck) != 0) {
            perror(shards[i]);
            return 3;
        }
        if (nck > 0) {
            check_ckpt(&cks[nck - 1], &rep);
        }
        if (rep.status != 2) {
            check_segments(segs, nseg, &rep, fix, rep.ckpt_lsn);
        }
        uint64_t last_valid = rep.last_lsn > rep.ckpt_lsn ? rep.last_lsn : rep.ckpt_lsn;
        static const char *const st[] = { "ok", "torn-tail", "corrupt" };
        if (json) {
            printf("%s{\"dir\":\"%s\",\"status\":\"%s\",\"checkpoint_lsn\":%" PRIu64
                   ",\"checkpoint_keys\":%" PRIu64 ",\"segments\":%zu,\"records\":%" PRIu64
                   ",\"first_lsn\":%" PRIu64 ",\"last_valid_lsn\":%" PRIu64
                   ",\"wal_bytes\":%" PRIu64 ",\"problem\":\"%s\"}",
                   i ? "," : "", shards[i], st[rep.status], rep.ckpt_lsn, rep.ckpt_keys,
                   rep.segments, rep.records, rep.first_lsn, last_valid, rep.bytes, rep.problem);
        } else {
            printf("%s: %s; checkpoint LSN %" PRIu64 " (%" PRIu64
                   " keys); %zu WAL segments, %" PRIu64 " records, LSN %" PRIu64 "..%" PRIu64
                   "; last valid LSN %" PRIu64 "\n",
                   shards[i], st[rep.status], rep.ckpt_lsn, rep.ckpt_keys, rep.segments,
                   rep.records, rep.first_lsn, rep.last_lsn, last_valid);
            if (rep.problem[0]) {
                printf("  %s\n", rep.problem);
            }
        }
        if (rep.status > worst) {
            worst = rep.status;
        }
        rv_free(segs);
        rv_free(cks);
    }
    if (json) {
        printf("]\n");
    }
    return worst;
}
