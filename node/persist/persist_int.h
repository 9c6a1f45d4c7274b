/* node/persist/persist_int.h: state shared by persist.c (WAL glue, recovery) and
 * snap.c (checkpoints). Not for other modules. */
#pragma once
#include "node/types/obj.h"
#include "node/persist/persist.h"
#include "wal/wal.h"

#include <stdbool.h>
#include <stdint.h>

struct shard;
struct conn;
struct snap;
struct repl;

struct persist {
    struct persist_hot hot; /* must stay first (persist.h) */
    struct shard *s;
    int mode;          /* enum wal_mode */
    char dir[4096];    /* data_dir/shard-<i> */
    struct wal *w;     /* NULL in memory mode */
    struct buf mstage; /* memory mode with replication: the record being built */
    struct repl *repl; /* replication state (replication/), NULL until used */
    bool replica;      /* following a primary: no records of its own, no expiry logging */
    bool repl_cow;     /* a replication full sync walks the keyspace (copy-on-write) */
    bool loading;
    bool unclean;   /* the last run did not shut down cleanly (dir/running stood) */
    bool cut;       /* recovery cut the log (torn tail, wal-accept-loss) */
    bool side_load; /* a full sync applies records to a keyspace beside the served
                                      * one: no copy-on-write for them (persist_side_load) */
    bool rebase;    /* a full sync at rebase_lsn (0 too) is not checkpointed yet:
                                      * the data directory's rebase marker stands (persist_rebase) */
    uint64_t rebase_lsn;
    int64_t rebase_retry_ms; /* its checkpoint failed: retry from snap_cron after this */
    uint64_t next_lsn;       /* after recovery */
    /* persist_set_tap: told of each logged write; tap_only: hot.log is on for
     * the tap alone (memory mode, no backlog), no record is built */
    persist_tap_fn *tap;
    void *tap_arg;
    bool tap_only;
    /* the record being built (one command, or one EXEC) */
    bool rec_open;
    unsigned rec_db; /* database of the open record's last command (records start in 0) */
    size_t rec_mark, pay_start;
    uint64_t changes;      /* records since the last checkpoint */
    uint64_t sync_asked;   /* always: highest LSN a sync was requested for */
    struct conn *held;     /* replies waiting for the WAL (or for replicas) */
    uint64_t last_release; /* release LSN when the held list was last walked */
    size_t nheld;
    /* synchronous replication (min-sync-replicas): replies also wait until
     * sync_rel, what enough replicas acked as of the last loop (frozen while a
     * cluster node's write lease is out: a failover may be under way) */
    bool sync_hold;
    uint64_t sync_rel;
    uint64_t sync_wait_lsn; /* sync_rel when writes began waiting on it ... */
    int64_t sync_wait_ms;   /* ... since then (0: none waits) */
    uint64_t sync_closed;   /* clients closed: not acked in time, or demoted */
    /* checkpoints */
    struct snap *snap;
    uint64_t ckpt_lsn;
    int64_t lastsave_ms;
    int64_t last_ckpt_ms; /* duration of the last one */
    bool last_ckpt_ok;
    uint64_t saves;
    uint64_t wal_at_ckpt; /* wal_bytes() when the last checkpoint started */
    bool ckpt_pending;    /* start one once the open record is sealed */
    /* recovery figures */
    uint64_t keys_loaded, records_replayed, torn_tails, replay_errors, load_us;
};

struct persist *persist_of(struct shard *s);

/* snap.c */
void snap_emit_entry(const struct ks_entry *e, obj_emit_fn *fn, void *arg);
void snap_remove_tmp(const char *dir);
/* Start a checkpoint; -1 with a Redis error text when one is running, a
 * record is open (its effects are in the keyspace, its LSN not yet given:
 * set ckpt_pending instead) or the file cannot be created. */
int snap_start(struct persist *p, char *err, size_t errsz);
/* Run the whole snapshot now (SAVE); 0 or -1 with err. */
int snap_run_sync(struct persist *p, char *err, size_t errsz);
void snap_touch(struct persist *p, const char *key, size_t len);
void snap_all_changed(struct persist *p); /* FLUSHALL: the snapshot restarts */
void snap_cow_refresh(struct persist *p);
void snap_abort(struct persist *p);
void snap_wait_finish(struct persist *p);
void snap_cron(struct persist *p);
void snap_after_record(struct persist *p); /* a record was sealed: start a pending one */
/* persist.c: a checkpoint at lsn is in place (file and directory synced). */
void persist_ckpt_done(struct persist *p, uint64_t lsn);
int snap_active(const struct persist *p);
uint64_t snap_keys(const struct persist *p);

/* Open the WAL for appending at p->next_lsn (persist.c). */
struct wal *persist_open_wal(struct persist *p, char *err, size_t errsz);
/* At start: finish or undo a switch to a full sync's data that a crash
 * interrupted (rebase.c); 0, or -1 with err. */
int persist_rebase_recover(struct persist *p, char *err, size_t errsz);
