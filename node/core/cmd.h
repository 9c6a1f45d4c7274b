/* node/core/cmd.h: the command table and dispatcher.
 *
 * Every command is one row of cmd_table.c: name, handler, arity, flags, key
 * positions and docs. COMMAND INFO/DOCS/COUNT/LIST are derived from it.
 * dispatch() (node/server/dispatch.c) runs the generic checks once (arity, auth, cluster routing,
 * MULTI queueing, stats) so handlers hold only command semantics. A handler
 * emits exactly one top-level reply. Argument views (argv) are borrowed from the
 * connection's read buffer and are valid only until the handler returns. */
#pragma once
#include "proto/resp.h"

#include <stdbool.h>
#include <stdint.h>

struct conn;

typedef void cmd_fn(struct conn *c, int argc, struct rv_str *argv);

enum cmd_flag {
    CMD_WRITE = 1u << 0,
    CMD_READONLY = 1u << 1,
    CMD_FAST = 1u << 2,
    CMD_DENYOOM = 1u << 3,
    CMD_ADMIN = 1u << 4,
    CMD_NOAUTH = 1u << 5,  /* allowed before authentication ("no_auth") */
    CMD_LOADING = 1u << 6, /* allowed while loading */
    CMD_STALE = 1u << 7,
    CMD_NOSCRIPT = 1u << 8,
    CMD_PUBSUB = 1u << 9,
    CMD_BLOCKING = 1u << 10,
    CMD_MOVABLEKEYS = 1u << 11, /* keys found by cmd_spec.getkeys */
    CMD_NO_MULTI = 1u << 12,
    CMD_SKIP_SLOWLOG = 1u << 13,
    CMD_ALLOW_BUSY = 1u << 14,
    CMD_DANGEROUS = 1u << 15,     /* ACL @dangerous */
    CMD_RANDOM = 1u << 16,        /* nondeterministic output */
    CMD_NOQUEUE = 1u << 17,       /* runs at once even inside MULTI (EXEC, DISCARD, WATCH, ...) */
    CMD_SUBOK = 1u << 18,         /* allowed in RESP2 subscribed mode */
    CMD_SKIP_MONITOR = 1u << 19,  /* MONITOR shows it before it runs, not after (scripts) */
    CMD_MAY_REPLICATE = 1u << 20, /* not a write, but may cause one: CLIENT PAUSE WRITE holds it */
    CMD_ASKING = 1u << 21, /* runs on an importing slot as if after ASKING (RESTORE-ASKING) */
};

/* ACL categories, as COMMAND INFO reports them. */
enum cmd_cat {
    CAT_KEYSPACE = 1u << 0,
    CAT_READ = 1u << 1,
    CAT_WRITE = 1u << 2,
    CAT_STRING = 1u << 3,
    CAT_CONNECTION = 1u << 4,
    CAT_SERVER = 1u << 5,
    CAT_SLOW = 1u << 6,
    CAT_FAST = 1u << 7,
    CAT_ADMIN = 1u << 8,
    CAT_DANGEROUS = 1u << 9,
    CAT_PUBSUB = 1u << 10,
    CAT_TRANSACTION = 1u << 11,
    CAT_LIST = 1u << 12,
    CAT_HASH = 1u << 13,
    CAT_SET = 1u << 14,
    CAT_SORTEDSET = 1u << 15,
    CAT_BITMAP = 1u << 16,
    CAT_HYPERLOGLOG = 1u << 17,
    CAT_GEO = 1u << 18,
    CAT_BLOCKING = 1u << 19,
    CAT_SCRIPTING = 1u << 20,
    CAT_STREAM = 1u << 21,
};

/* Returns the number of key argument indexes written to out (at most max). */
typedef int cmd_getkeys_fn(int argc, struct rv_str *argv, int *out, int max);

struct cmd_spec {
    const char *name; /* lower case; for subcommands the subcommand name */
    cmd_fn *fn;
    int arity;             /* > 0 exact, < 0 at least -arity (name included) */
    uint32_t flags;        /* enum cmd_flag */
    int first, last, step; /* key positions as COMMAND reports them (0 = none) */
    uint32_t cats;         /* enum cmd_cat */
    const char *group;     /* docs group: "string", "generic", ... */
    const char *since;     /* Redis version that introduced it */
    const char *summary;
    const char *complexity;
    const char *args;            /* argument syntax for docs, e.g. "key value [NX | XX]" */
    cmd_getkeys_fn *getkeys;     /* for CMD_MOVABLEKEYS */
    const struct cmd_spec *subs; /* subcommand table, terminated by a row with name NULL */
    uint32_t id;                 /* index for per-command stats; set at start-up */
    const struct cmd_spec *parent;
};

/* Build lookup structures; call once before any shard starts. */
void cmd_init(struct cmd_spec *table, size_t n);
/* Top-level command by name, case-insensitive, no allocation; NULL if unknown. */
const struct cmd_spec *cmd_lookup(const char *name, size_t len);
/* rename-command (start-up only, before shards run): clients then reach the
 * command as `to` only ("" = nowhere); cmd_lookup() keeps the real names. */
int cmd_rename_command(const char *from, const char *to, char *err, size_t errsz);
/* parent's subcommand name; NULL if unknown, or parent itself when the
 * container has a handler (fn) for the subcommands it does not list. */
const struct cmd_spec *cmd_lookup_sub(const struct cmd_spec *parent, const char *name, size_t len);
/* All commands (top level), and the number of ids (top + sub) for stats arrays. */
size_t cmd_count(void);
const struct cmd_spec *cmd_at(size_t i);
size_t cmd_id_count(void);
const struct cmd_spec *cmd_by_id(uint32_t id);
/* Full name for stats/errors, e.g. "get" or "client|list". */
void cmd_fullname(const struct cmd_spec *s, char *out, size_t outsz);
/* Key indexes of argv for s; returns how many (<= max). */
int cmd_get_keys(const struct cmd_spec *s, int argc, struct rv_str *argv, int *out, int max);
/* Narrow a write's keys[0..n-1] (cmd_get_keys's) to those it modified, as
 * Redis signals them (a store: its destination only); returns the new count.
 * CLIENT TRACKING invalidates and WATCH is touched by exactly these. */
int cmd_written_keys(const struct cmd_spec *s, int *keys, int n);
/* The command whose keys say what a write that just ran on c modified: the
 * command that redoes it when its handler built one (effect.h: DEL of some
 * missing keys names those it deleted, a served multi-key pop the key it
 * popped from), else cmd itself; *argc and *argv then become the redo's
 * (views valid until c's next command). WATCH and CLIENT TRACKING both read
 * the keys of this command, through cmd_written_keys. */
const struct cmd_spec *cmd_effective(struct conn *c, const struct cmd_spec *cmd, int *argc,
                                     struct rv_str **argv);

/* Client-visible lookup: honours rename-command (cmd_renamed is set once at start-up). */
extern bool cmd_renamed;
const struct cmd_spec *cmd_lookup_client(const char *name, size_t len);

/* Run an already validated command: handler, stats, WATCH invalidation, WAL.
 * The server's dispatcher (node/server/dispatch.c) provides it before any
 * shard starts; EXEC, blocking retries and replay run their commands through
 * it without depending on the server. */
typedef void cmd_call_fn(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv);
extern cmd_call_fn *cmd_caller;
void cmd_set_caller(cmd_call_fn *fn);
static inline void
cmd_call(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv)
{
    cmd_caller(c, cmd, argc, argv);
}

/* The shared tail of LMPOP/BLMPOP/ZMPOP/BZMPOP, from argv[at]:
 * "numkeys key [key ...] <end0|end1> [COUNT count]". Sets the key count, which
 * end word was given (0 or 1) and count (1 by default); on bad input replies
 * Redis's error (through the connection) and returns false. */
bool cmd_parse_mpop(struct conn *c, int argc, struct rv_str *argv, int at, const char *end0,
                    const char *end1, int *nkeys, int *which, int64_t *count);

/* Options of the SCAN family after the cursor: [MATCH pattern] [COUNT count]
 * [TYPE type] (SCAN only) [NOVALUES] (HSCAN only), parsed as Redis does. */
enum scan_opt_allow { SCAN_ALLOW_TYPE = 1u << 0, SCAN_ALLOW_NOVALUES = 1u << 1 };
struct scan_opts {
    struct rv_str match; /* p == NULL: no pattern (also for "*") */
    struct rv_str type;  /* p == NULL: any type */
    int64_t count;       /* 10 unless given */
    bool novalues;
};
/* Parse argv[from..]; on bad input replies Redis's error and returns false. */
bool cmd_parse_scan_opts(struct conn *c, int argc, struct rv_str *argv, int from, unsigned allow,
                         struct scan_opts *o);

/* Argument helpers shared by handlers. */
bool cmd_arg_is(struct rv_str a, const char *lower);    /* case-insensitive equality */
bool cmd_arg_int(struct rv_str a, int64_t *out);        /* strict Redis string2ll */
bool cmd_arg_double(struct rv_str a, long double *out); /* strtold, rejects NaN and spaces */
bool cmd_arg_cursor(struct rv_str a, uint64_t *out);    /* SCAN cursor, read as strtoul() does */
