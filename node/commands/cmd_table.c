/* node/commands/cmd_table.c: the only list of commands. COMMAND, COMMAND DOCS, INFO
 * commandstats and docs/commands.md are derived from these rows. */
#include "node/commands/cmds.h"

#include <stddef.h>
/* clang-format off */

#define W CMD_WRITE
#define RO CMD_READONLY
#define FA CMD_FAST
#define DO CMD_DENYOOM
#define AD CMD_ADMIN
#define NA CMD_NOAUTH
#define LO CMD_LOADING
#define ST CMD_STALE

#define ROW(nm, fn, ar, fl, f, l, s, ct, grp, since, cx, sum, args) \
    { nm, fn, ar, fl, f, l, s, ct, grp, since, sum, cx, args, NULL, NULL, 0, NULL }
/* A row whose keys are found by a function (CMD_MOVABLEKEYS), e.g. "numkeys key ...". */
#define ROWK(nm, fn, ar, fl, f, l, s, ct, grp, since, cx, sum, args, gk) \
    { nm, fn, ar, (fl) | CMD_MOVABLEKEYS, f, l, s, ct, grp, since, sum, cx, args, gk, NULL, 0, NULL }
#define SUBS(nm, ar, fl, ct, grp, since, sum, subs) \
    { nm, NULL, ar, fl, 0, 0, 0, ct, grp, since, sum, "Depends on subcommand.", NULL, NULL, subs, 0, NULL }
/* A container whose handler answers the subcommands it does not list. */
#define SUBSF(nm, fn, ar, fl, ct, grp, since, sum, subs) \
    { nm, fn, ar, fl, 0, 0, 0, ct, grp, since, sum, "Depends on subcommand.", NULL, NULL, subs, 0, NULL }
#define END { NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL }

#define K_R (CAT_KEYSPACE | CAT_READ)
#define K_W (CAT_KEYSPACE | CAT_WRITE)
#define S_R (CAT_STRING | CAT_READ)
#define S_W (CAT_STRING | CAT_WRITE)
#define CONN CAT_CONNECTION
#define SRV CAT_SERVER

static struct cmd_spec client_subs[] = {
    ROW("id", cmd_client_id, 2, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "connection", "5.0.0", "O(1)", "Returns the unique client ID of the connection.", ""),
    ROW("setname", cmd_client_setname, 3, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "connection", "2.6.9", "O(1)", "Sets the connection name.", "connection-name"),
    ROW("getname", cmd_client_getname, 2, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "connection", "2.6.9", "O(1)", "Returns the name of the connection.", ""),
    ROW("setinfo", cmd_client_setinfo, 4, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "connection", "7.2.0", "O(1)", "Sets information specific to the client or connection.", "LIB-NAME libname | LIB-VER libver"),
    ROW("list", cmd_client_list, -2, AD | LO | ST, 0, 0, 0, CONN | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "connection", "2.4.0", "O(N) where N is the number of client connections", "Lists open connections of the shard.", "[TYPE NORMAL|MASTER|REPLICA|PUBSUB] [ID client-id ...]"),
    ROW("info", cmd_client_info, 2, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "connection", "6.2.0", "O(1)", "Returns information about the connection.", ""),
    ROW("kill", cmd_client_kill, -3, AD | LO | ST, 0, 0, 0, CONN | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "connection", "2.4.0", "O(N) where N is the number of client connections", "Terminates open connections.", "ip:port | <[ID client-id] [TYPE NORMAL | MASTER | SLAVE | REPLICA | PUBSUB] [USER username] [ADDR ip:port] [LADDR ip:port] [SKIPME YES | NO] [MAXAGE maxage]> ..."),
    ROW("no-evict", cmd_client_no_evict, 3, AD | LO | ST, 0, 0, 0, CONN | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "connection", "7.0.0", "O(1)", "Sets the client eviction mode of the connection.", "ON|OFF"),
    ROW("pause", cmd_client_pause, -3, AD | CMD_NOSCRIPT | LO | ST, 0, 0, 0, CONN | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "connection", "2.9.50", "O(1)", "Suspends commands processing.", "timeout [WRITE | ALL]"),
    ROW("unpause", cmd_client_unpause, 2, AD | CMD_NOSCRIPT | LO | ST, 0, 0, 0, CONN | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "connection", "6.2.0", "O(N) Where N is the number of paused clients", "Resumes processing commands from paused clients.", ""),
    ROW("no-touch", cmd_client_no_touch, 3, CMD_NOSCRIPT | LO | ST, 0, 0, 0, CONN | CAT_SLOW, "connection", "7.2.0", "O(1)", "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.", "ON|OFF"),
    ROW("tracking", cmd_client_tracking, -3, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "connection", "6.0.0", "O(1). Some options may introduce additional complexity.", "Controls server-assisted client-side caching for the connection.", "ON|OFF [REDIRECT client-id] [PREFIX prefix [PREFIX prefix ...]] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]"),
    ROW("caching", cmd_client_caching, 3, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "connection", "6.0.0", "O(1)", "Instructs the server whether to track the keys in the next request.", "YES|NO"),
    ROW("getredir", cmd_client_getredir, 2, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "connection", "6.0.0", "O(1)", "Returns the client ID to which the connection's tracking notifications are redirected.", ""),
    ROW("trackinginfo", cmd_client_trackinginfo, 2, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "connection", "6.2.0", "O(1)", "Returns information about server-assisted client-side caching for the connection.", ""),
    ROW("reply", cmd_client_reply, 3, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "connection", "3.2.0", "O(1)", "Instructs the server whether to reply to commands.", "ON|OFF|SKIP"),
    ROW("unblock", cmd_client_unblock, -3, AD | LO | ST, 0, 0, 0, CONN | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "connection", "5.0.0", "O(log N) where N is the number of client connections", "Unblocks a client blocked by a blocking command from a different connection.", "client-id [TIMEOUT | ERROR]"),
    ROW("help", cmd_client_help, 2, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "connection", "5.0.0", "O(1)", "Returns helpful text about the different subcommands.", ""),
    END,
};

static struct cmd_spec command_subs[] = {
    ROW("count", cmd_command_count, 2, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "server", "2.8.13", "O(1)", "Returns a count of commands.", ""),
    ROW("info", cmd_command_info, -2, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "server", "2.8.13", "O(N) where N is the number of commands to look up", "Returns information about one, multiple or all commands.", "[command-name ...]"),
    ROW("docs", cmd_command_docs, -2, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "server", "7.0.0", "O(N) where N is the number of commands to look up", "Returns documentary information about one, multiple or all commands.", "[command-name ...]"),
    ROW("list", cmd_command_list, -2, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "server", "7.0.0", "O(N) where N is the total number of commands", "Returns a list of command names.", "[FILTERBY MODULE name | ACLCAT category | PATTERN pattern]"),
    ROW("getkeysandflags", cmd_command_getkeysandflags, -4, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "server", "7.0.0", "O(N) where N is the number of arguments to the command", "Extracts the key names and access flags for an arbitrary command.", "command [arg ...]"),
    ROW("getkeys", cmd_command_getkeys, -4, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "server", "2.8.13", "O(N) where N is the number of arguments to the command", "Extracts the key names from an arbitrary command.", "command [arg ...]"),
    ROW("help", cmd_command_help, 2, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "server", "5.0.0", "O(1)", "Returns helpful text about the different subcommands.", ""),
    END,
};

static struct cmd_spec config_subs[] = {
    ROW("get", cmd_config_get, -3, AD | LO | ST, 0, 0, 0, SRV | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "2.0.0", "O(N) when N is the number of configuration parameters provided", "Returns the effective values of configuration parameters.", "parameter [parameter ...]"),
    ROW("set", cmd_config_set, -4, AD | LO | ST, 0, 0, 0, SRV | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "2.0.0", "O(N) when N is the number of configuration parameters provided", "Sets configuration parameters in-flight.", "parameter value [parameter value ...]"),
    ROW("resetstat", cmd_config_resetstat, 2, AD | LO | ST, 0, 0, 0, SRV | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "2.0.0", "O(1)", "Resets the server's statistics.", ""),
    ROW("rewrite", cmd_config_rewrite, 2, AD | LO | ST, 0, 0, 0, SRV | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "2.8.0", "O(1)", "Persists the effective configuration to file.", ""),
    ROW("help", cmd_config_help, 2, LO | ST, 0, 0, 0, SRV | CAT_SLOW, "server", "5.0.0", "O(1)", "Returns helpful text about the different subcommands.", ""),
    END,
};

static struct cmd_spec function_subs[] = {
    ROW("load", cmd_function_load, -3, W | DO | CMD_NOSCRIPT, 0, 0, 0, CAT_WRITE | CAT_SLOW | CAT_SCRIPTING, "scripting", "7.0.0", "O(1) (considering compilation time is redundant)", "Creates a library.", "[REPLACE] function-code"),
    ROW("delete", cmd_function_delete, 3, W | CMD_NOSCRIPT, 0, 0, 0, CAT_WRITE | CAT_SLOW | CAT_SCRIPTING, "scripting", "7.0.0", "O(1)", "Deletes a library and its functions.", "library-name"),
    ROW("flush", cmd_function_flush, -2, W | CMD_NOSCRIPT, 0, 0, 0, CAT_WRITE | CAT_SLOW | CAT_SCRIPTING, "scripting", "7.0.0", "O(N) where N is the number of functions deleted", "Deletes all libraries and functions.", "[ASYNC | SYNC]"),
    ROW("list", cmd_function_list, -2, CMD_NOSCRIPT, 0, 0, 0, CAT_SLOW | CAT_SCRIPTING, "scripting", "7.0.0", "O(N) where N is the number of functions", "Returns information about all libraries.", "[LIBRARYNAME library-name-pattern] [WITHCODE]"),
    ROW("dump", cmd_function_dump, 2, CMD_NOSCRIPT, 0, 0, 0, CAT_SLOW | CAT_SCRIPTING, "scripting", "7.0.0", "O(N) where N is the number of functions", "Dumps all libraries into a serialized binary payload.", ""),
    ROW("restore", cmd_function_restore, -3, W | DO | CMD_NOSCRIPT, 0, 0, 0, CAT_WRITE | CAT_SLOW | CAT_SCRIPTING, "scripting", "7.0.0", "O(N) where N is the number of functions on the payload", "Restores all libraries from a payload.", "serialized-value [FLUSH | APPEND | REPLACE]"),
    ROW("stats", cmd_function_stats, 2, CMD_NOSCRIPT | CMD_ALLOW_BUSY, 0, 0, 0, CAT_SLOW | CAT_SCRIPTING, "scripting", "7.0.0", "O(1)", "Returns information about a function during execution.", ""),
    ROW("kill", cmd_function_kill, 2, CMD_NOSCRIPT | CMD_ALLOW_BUSY, 0, 0, 0, CAT_SLOW | CAT_SCRIPTING, "scripting", "7.0.0", "O(1)", "Terminates a function during execution.", ""),
    ROW("help", cmd_function_help, 2, LO | ST, 0, 0, 0, CAT_SLOW | CAT_SCRIPTING, "scripting", "7.0.0", "O(1)", "Returns helpful text about the different subcommands.", ""),
    END,
};

static struct cmd_spec script_subs[] = {
    ROW("load", cmd_script_load, 3, CMD_NOSCRIPT | ST, 0, 0, 0, CAT_SLOW | CAT_SCRIPTING, "scripting", "2.6.0", "O(N) with N being the length in bytes of the script body.", "Loads a server-side Lua script to the script cache.", "script"),
    ROW("exists", cmd_script_exists, -3, CMD_NOSCRIPT, 0, 0, 0, CAT_SLOW | CAT_SCRIPTING, "scripting", "2.6.0", "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).", "Determines whether server-side Lua scripts exist in the script cache.", "sha1 [sha1 ...]"),
    ROW("flush", cmd_script_flush, -2, CMD_NOSCRIPT, 0, 0, 0, CAT_SLOW | CAT_SCRIPTING, "scripting", "2.6.0", "O(N) with N being the number of scripts in cache", "Removes all server-side Lua scripts from the script cache.", "[ASYNC | SYNC]"),
    ROW("kill", cmd_script_kill, 2, CMD_NOSCRIPT | CMD_ALLOW_BUSY, 0, 0, 0, CAT_SLOW | CAT_SCRIPTING, "scripting", "2.6.0", "O(1)", "Terminates a server-side Lua script during execution.", ""),
    ROW("help", cmd_script_help, 2, LO | ST, 0, 0, 0, CAT_SLOW | CAT_SCRIPTING, "scripting", "5.0.0", "O(1)", "Returns helpful text about the different subcommands.", ""),
    END,
};

static struct cmd_spec pubsub_subs[] = {
    ROW("channels", cmd_pubsub_channels, -2, CMD_PUBSUB | LO | ST, 0, 0, 0, CAT_PUBSUB | CAT_SLOW, "pubsub", "2.8.0", "O(N) where N is the number of active channels", "Returns the active channels.", "[pattern]"),
    ROW("numsub", cmd_pubsub_numsub, -2, CMD_PUBSUB | LO | ST, 0, 0, 0, CAT_PUBSUB | CAT_SLOW, "pubsub", "2.8.0", "O(N) for the NUMSUB subcommand, where N is the number of requested channels", "Returns a count of subscribers to channels.", "[channel [channel ...]]"),
    ROW("numpat", cmd_pubsub_numpat, 2, CMD_PUBSUB | LO | ST, 0, 0, 0, CAT_PUBSUB | CAT_SLOW, "pubsub", "2.8.0", "O(1)", "Returns a count of unique pattern subscriptions.", ""),
    ROW("shardchannels", cmd_pubsub_shardchannels, -2, CMD_PUBSUB | LO | ST, 0, 0, 0, CAT_PUBSUB | CAT_SLOW, "pubsub", "7.0.0", "O(N) where N is the number of active shard channels", "Returns the active shard channels.", "[pattern]"),
    ROW("shardnumsub", cmd_pubsub_shardnumsub, -2, CMD_PUBSUB | LO | ST, 0, 0, 0, CAT_PUBSUB | CAT_SLOW, "pubsub", "7.0.0", "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels", "Returns the count of subscribers of shard channels.", "[shardchannel [shardchannel ...]]"),
    ROW("help", cmd_pubsub_help, 2, LO | ST, 0, 0, 0, CAT_SLOW, "pubsub", "6.2.0", "O(1)", "Returns helpful text about the different subcommands.", ""),
    END,
};

static struct cmd_spec slowlog_subs[] = {
    ROW("get", cmd_slowlog_get, -2, AD | LO | ST, 0, 0, 0, SRV | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "2.2.12", "O(N) where N is the number of entries returned", "Returns the slow log's entries.", "[count]"),
    ROW("len", cmd_slowlog_len, 2, AD | LO | ST, 0, 0, 0, SRV | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "2.2.12", "O(1)", "Returns the number of entries in the slow log.", ""),
    ROW("reset", cmd_slowlog_reset, 2, AD | LO | ST, 0, 0, 0, SRV | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "2.2.12", "O(N) where N is the number of entries in the slowlog", "Clears all entries from the slow log.", ""),
    ROW("help", cmd_slowlog_help, 2, LO | ST, 0, 0, 0, SRV | CAT_SLOW, "server", "6.2.0", "O(1)", "Show helpful text about the different subcommands", ""),
    END,
};

static struct cmd_spec latency_subs[] = {
    ROW("latest", cmd_latency_latest, 2, AD | LO | ST, 0, 0, 0, SRV | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "2.8.13", "O(1)", "Returns the latest latency samples for all events.", ""),
    ROW("history", cmd_latency_history, 3, AD | LO | ST, 0, 0, 0, SRV | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "2.8.13", "O(1)", "Returns timestamp-latency samples for an event.", "event"),
    ROW("graph", cmd_latency_graph, 3, AD | LO | ST, 0, 0, 0, SRV | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "2.8.13", "O(1)", "Returns a latency graph for an event.", "event"),
    ROW("reset", cmd_latency_reset, -2, AD | LO | ST, 0, 0, 0, SRV | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "2.8.13", "O(1)", "Resets the latency data for one or more events.", "[event [event ...]]"),
    ROW("doctor", cmd_latency_doctor, 2, AD | LO | ST, 0, 0, 0, SRV | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "2.8.13", "O(1)", "Returns a human-readable latency analysis report.", ""),
    ROW("histogram", cmd_latency_histogram, -2, AD | LO | ST, 0, 0, 0, SRV | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "7.0.0", "O(N) where N is the number of commands with latency information being retrieved.", "Returns the cumulative distribution of latencies of a subset or all commands.", "[command [command ...]]"),
    ROW("help", cmd_latency_help, 2, LO | ST, 0, 0, 0, SRV | CAT_SLOW, "server", "2.8.13", "O(1)", "Returns helpful text about the different subcommands.", ""),
    END,
};

static struct cmd_spec object_subs[] = {
    ROW("encoding", cmd_object_encoding, 3, RO, 2, 2, 1, K_R | CAT_SLOW, "generic", "2.2.3", "O(1)", "Returns the internal encoding of a Redis object.", "key"),
    ROW("freq", cmd_object_freq, 3, RO, 2, 2, 1, K_R | CAT_SLOW, "generic", "4.0.0", "O(1)", "Returns the logarithmic access frequency counter of a Redis object.", "key"),
    ROW("idletime", cmd_object_idletime, 3, RO, 2, 2, 1, K_R | CAT_SLOW, "generic", "2.2.3", "O(1)", "Returns the time since the last access to a Redis object.", "key"),
    ROW("refcount", cmd_object_refcount, 3, RO, 2, 2, 1, K_R | CAT_SLOW, "generic", "2.2.3", "O(1)", "Returns the reference count of a value of a key.", "key"),
    ROW("help", cmd_object_help, 2, LO | ST, 0, 0, 0, K_R | CAT_SLOW, "generic", "6.2.0", "O(1)", "Returns helpful text about the different subcommands.", ""),
    END,
};

static struct cmd_spec memory_subs[] = {
    ROW("usage", cmd_memory_usage, -3, RO, 2, 2, 1, K_R | CAT_SLOW, "server", "4.0.0", "O(N) where N is the number of samples.", "Estimates the memory usage of a key.", "key [SAMPLES count]"),
    ROW("help", cmd_memory_help, 2, LO | ST, 0, 0, 0, CAT_SLOW, "server", "4.0.0", "O(1)", "Returns helpful text about the different subcommands.", ""),
    ROW("stats", cmd_memory_stats, 2, 0, 0, 0, 0, CAT_SLOW, "server", "4.0.0", "O(1)", "Returns details about memory usage.", ""),
    ROW("doctor", cmd_memory_doctor, 2, 0, 0, 0, 0, CAT_SLOW, "server", "4.0.0", "O(1)", "Outputs a memory problems report.", ""),
    ROW("purge", cmd_memory_purge, 2, 0, 0, 0, 0, CAT_SLOW, "server", "4.0.0", "Depends on how much memory is allocated, could be slow", "Asks the allocator to release memory.", ""),
    ROW("malloc-stats", cmd_memory_malloc_stats, 2, 0, 0, 0, 0, CAT_SLOW, "server", "4.0.0", "Depends on how much memory is allocated, could be slow", "Returns the allocator statistics.", ""),
    END,
};

/* JSON.DEBUG's subcommands (the JSON rows are node/commands/t_json_rows.h). */
static struct cmd_spec json_debug_subs[] = {
    ROW("memory", cmd_json_debug_memory, -3, RO, 2, 2, 1, CAT_READ | CAT_SLOW, "module", "1.0.0", "O(N) when path is evaluated to a single value, where N is the size of the value, O(N) when path is evaluated to multiple values, where N is the size of the key", "Reports the size in bytes of a key", "key [path]"),
    ROW("help", cmd_json_debug_help, -2, 0, 0, 0, 0, CAT_SLOW, "module", "1.0.0", "N/A", "Shows helpful information", ""),
    END,
};

/* DEBUG (cmd_debug.c): refused unless enable-debug-command allows it (HELP excepted). */
#define DBG (AD | LO | ST | CMD_NOSCRIPT)
#define DBGC (CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS)
static struct cmd_spec debug_subs[] = {
    ROW("digest", cmd_debug_digest, 2, DBG, 0, 0, 0, DBGC, "server", "1.0.0", "O(N) where N is the number of keys in the shard", "Returns an order-independent digest of the shard's dataset.", ""),
    ROW("digest-value", cmd_debug_digest_value, -2, DBG, 0, 0, 0, DBGC, "server", "1.0.0", "O(N) where N is the size of the values", "Returns the digests of the values of keys.", "[key ...]"),
    ROW("populate", cmd_debug_populate, -3, DBG | CMD_WRITE, 0, 0, 0, DBGC, "server", "1.0.0", "O(N) where N is the number of keys created", "Creates string keys key:N (or prefix:N) holding value:N, skipping those that exist; logged as SETs.", "count [prefix] [size]"),
    ROW("sleep", cmd_debug_sleep, 3, DBG, 0, 0, 0, DBGC, "server", "1.0.0", "O(1)", "Blocks the shard for a number of seconds.", "seconds"),
    ROW("log", cmd_debug_log, 3, DBG, 0, 0, 0, DBGC, "server", "1.0.0", "O(1)", "Writes a message to the server log.", "message"),
    ROW("set-active-expire", cmd_debug_set_active_expire, 3, DBG, 0, 0, 0, DBGC, "server", "1.0.0", "O(1)", "Turns active expiry off (0) or on (1).", "0|1"),
    ROW("migrate-hold", cmd_debug_migrate_hold, 3, DBG, 0, 0, 0, DBGC, "server", "0.1.0", "O(1)", "Holds this shard's asynchronous MIGRATEs after a big key's first chunk (tests).", "0|1"),
    ROW("migrate-staging", cmd_debug_migrate_staging, 2, DBG, 0, 0, 0, DBGC, "server", "0.1.0", "O(1)", "The number of MIGRATE staging values this shard holds (tests).", ""),
    ROW("slotmig-hold", cmd_debug_slotmig_hold, 3, DBG, 0, 0, 0, DBGC, "server", "0.1.0", "O(1)", "Holds this shard's CLUSTER MIGRATESLOTS jobs before they pause writes (tests); 2: and a big key after its first chunk.", "0|1|2"),
    ROW("role-change-hook", cmd_debug_role_change_hook, 7, DBG, 0, 0, 0, DBGC, "server", "0.1.0", "O(1)", "Queues a run of the on_role_change executable.", "old-role new-role epoch host port"),
    ROW("help", cmd_debug_help, 2, LO | ST, 0, 0, 0, CAT_SLOW, "server", "1.0.0", "O(1)", "Returns helpful text about the different subcommands.", ""),
    END,
};
#undef DBG
#undef DBGC

static struct cmd_spec cluster_subs[] = {
    ROW("keyslot", cmd_cluster_keyslot, 3, LO | ST, 0, 0, 0, CAT_SLOW, "cluster", "3.0.0", "O(N) where N is the number of bytes in the key", "Returns the hash slot for a key.", "key"),
    ROW("slots", cmd_cluster_slots, 2, LO | ST, 0, 0, 0, CAT_SLOW, "cluster", "3.0.0", "O(N) where N is the total number of Cluster nodes", "Returns the mapping of cluster slots to nodes.", ""),
    ROW("shards", cmd_cluster_shards, 2, LO | ST, 0, 0, 0, CAT_SLOW, "cluster", "7.0.0", "O(N) where N is the total number of cluster nodes", "Returns the mapping of cluster slots to shards.", ""),
    ROW("nodes", cmd_cluster_nodes, 2, LO | ST, 0, 0, 0, CAT_SLOW, "cluster", "3.0.0", "O(N) where N is the total number of Cluster nodes", "Returns the cluster configuration for a node.", ""),
    ROW("myid", cmd_cluster_myid, 2, LO | ST, 0, 0, 0, CAT_SLOW, "cluster", "3.0.0", "O(1)", "Returns the ID of a node.", ""),
    ROW("info", cmd_cluster_info, 2, LO | ST, 0, 0, 0, CAT_SLOW, "cluster", "3.0.0", "O(1)", "Returns information about the state of a node.", ""),
    ROW("countkeysinslot", cmd_cluster_countkeysinslot, 3, LO | ST, 0, 0, 0, CAT_SLOW, "cluster", "3.0.0", "O(N) over the shard's keys", "Returns the number of keys in a hash slot.", "slot"),
    ROW("getkeysinslot", cmd_cluster_getkeysinslot, 4, LO | ST, 0, 0, 0, CAT_SLOW, "cluster", "3.0.0", "O(N) over the shard's keys", "Returns the key names in a hash slot.", "slot count"),
    ROW("help", cmd_cluster_help, 2, LO | ST, 0, 0, 0, CAT_SLOW, "cluster", "5.0.0", "O(1)", "Returns helpful text about the different subcommands.", ""),
    ROW("myshardid", cmd_cluster_myshardid, 2, LO | ST, 0, 0, 0, CAT_SLOW, "cluster", "7.2.0", "O(1)", "Returns the shard ID of a node.", ""),
    ROW("replicas", cmd_cluster_replicas, 3, AD | LO | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "5.0.0", "O(N) where N is the number of replicas", "Lists the replica nodes of a master node.", "node-id"),
    ROW("slaves", cmd_cluster_replicas, 3, AD | LO | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "3.0.0", "O(N) where N is the number of replicas", "Lists the replica nodes of a master node (deprecated alias of CLUSTER REPLICAS).", "node-id"),
    ROW("count-failure-reports", cmd_cluster_count_failure_reports, 3, AD | LO | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "3.0.0", "O(N) where N is the number of failure reports", "Returns the number of active failure reports active for a node (always 0: failures are decided by the topology log).", "node-id"),
    ROW("links", cmd_cluster_links, 2, LO | ST, 0, 0, 0, CAT_SLOW, "cluster", "7.0.0", "O(N) where N is the total number of Cluster nodes", "Returns a list of all TCP links to and from peer nodes (none: one consensus link per host).", ""),
    ROW("saveconfig", cmd_cluster_saveconfig, 2, AD | LO | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "3.0.0", "O(1)", "Forces a node to save the cluster configuration to disk (every committed change already is).", ""),
    ROW("addslots", cmd_cluster_addslots, -3, AD | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "3.0.0", "O(N) where N is the total number of hash slot arguments", "Assigns new hash slots to a node (replies once the topology log committed it).", "slot [slot ...]"),
    ROW("addslotsrange", cmd_cluster_addslotsrange, -4, AD | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "7.0.0", "O(N) where N is the total number of the slots between the start slot and end slot arguments", "Assigns new hash slot ranges to a node.", "start-slot end-slot [start-slot end-slot ...]"),
    ROW("delslots", cmd_cluster_delslots, -3, AD | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "3.0.0", "O(N) where N is the total number of hash slot arguments", "Sets hash slots as unbound for a node.", "slot [slot ...]"),
    ROW("delslotsrange", cmd_cluster_delslotsrange, -4, AD | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "7.0.0", "O(N) where N is the total number of the slots between the start slot and end slot arguments", "Sets hash slot ranges as unbound for a node.", "start-slot end-slot [start-slot end-slot ...]"),
    ROW("flushslots", cmd_cluster_flushslots, 2, AD | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "3.0.0", "O(1)", "Deletes all slots information from a node.", ""),
    ROW("set-config-epoch", cmd_cluster_set_config_epoch, 3, AD | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "3.0.0", "O(1)", "Sets the configuration epoch for a new node.", "config-epoch"),
    ROW("bumpepoch", cmd_cluster_bumpepoch, 2, AD | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "3.0.0", "O(1)", "Advances the cluster config epoch.", ""),
    ROW("forget", cmd_cluster_forget, 3, AD | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "3.0.0", "O(1)", "Removes a node from the nodes table.", "node-id"),
    ROW("reset", cmd_cluster_reset, -2, AD | ST | CMD_NOSCRIPT, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "3.0.0", "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.", "Resets a node.", "[HARD | SOFT]"),
    ROW("meet", cmd_cluster_meet, -4, AD | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "3.0.0", "O(1)", "Forces a node to handshake with another node (the nodes of this host only, for now).", "ip port [cluster-bus-port]"),
    ROW("failover", cmd_cluster_failover, -2, AD | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "3.0.0", "O(1)", "Forces a replica to perform a manual failover of its master.", "[FORCE | TAKEOVER]"),
    ROW("setslot", cmd_cluster_setslot, -4, AD | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "3.0.0", "O(1)", "Binds a hash slot to a node, or opens or closes its migration (replies once the topology log committed it).", "slot IMPORTING node-id | MIGRATING node-id | NODE node-id | STABLE"),
    ROW("migrateslots", cmd_cluster_migrateslots, -7, AD | ST | CMD_NOSCRIPT, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "9.0.0", "O(N) where N is the total number of the slots between the start slot and end slot arguments", "Migrates slot ranges to another node atomically (the keys and the writes made meanwhile are streamed, then the ownership change is committed).", "SLOTSRANGE start-slot end-slot [start-slot end-slot ...] NODE node-id"),
    ROW("getslotmigrations", cmd_cluster_getslotmigrations, 2, LO | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "9.0.0", "O(N), where N is the number of active slot import and export jobs.", "Returns the in-progress and recently finished atomic slot migrations of this node.", ""),
    ROW("cancelslotmigrations", cmd_cluster_cancelslotmigrations, 2, AD | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "9.0.0", "O(N), where N is the number of active slot export jobs.", "Cancels the atomic slot migrations this node started.", ""),
    ROW("replicate", cmd_cluster_replicate, 3, AD | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "3.0.0", "O(1)", "Configure a node as replica of a master node (not in cluster mode yet).", "node-id"),
    END,
};

static struct cmd_spec acl_subs[] = {
    ROW("cat", cmd_acl_cat, -2, LO | ST, 0, 0, 0, CAT_SLOW, "server", "6.0.0", "O(1) since the categories and commands are a fixed set.", "Lists the ACL categories, or the commands inside a category.", "[category]"),
    ROW("deluser", cmd_acl_deluser, -3, AD | LO | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "6.0.0", "O(1) amortized time considering the typical user.", "Deletes ACL users, and terminates their connections.", "username [username ...]"),
    ROW("dryrun", cmd_acl_dryrun, -4, AD | LO | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "7.0.0", "O(1).", "Simulates the execution of a command by a user, without executing the command.", "username command [arg [arg ...]]"),
    ROW("genpass", cmd_acl_genpass, -2, LO | ST, 0, 0, 0, CAT_SLOW, "server", "6.0.0", "O(1)", "Generates a pseudorandom, secure password that can be used to identify ACL users.", "[bits]"),
    ROW("getuser", cmd_acl_getuser, 3, AD | LO | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "6.0.0", "O(N). Where N is the number of password, command and pattern rules that the user has.", "Lists the ACL rules of a user.", "username"),
    ROW("help", cmd_acl_help, 2, LO | ST, 0, 0, 0, CAT_SLOW, "server", "6.0.0", "O(1)", "Returns helpful text about the different subcommands.", ""),
    ROW("list", cmd_acl_list, 2, AD | LO | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "6.0.0", "O(N). Where N is the number of configured users.", "Dumps the effective rules in ACL file format.", ""),
    ROW("load", cmd_acl_load, 2, AD | LO | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "6.0.0", "O(N). Where N is the number of configured users.", "Reloads the rules from the configured ACL file.", ""),
    ROW("log", cmd_acl_log, -2, AD | LO | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "6.0.0", "O(N) with N being the number of entries shown.", "Lists recent security events generated due to ACL rules (node-wide).", "[count | RESET]"),
    ROW("save", cmd_acl_save, 2, AD | LO | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "6.0.0", "O(N). Where N is the number of configured users.", "Saves the effective ACL rules in the configured ACL file.", ""),
    ROW("setuser", cmd_acl_setuser, -3, AD | LO | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "6.0.0", "O(N). Where N is the number of rules provided.", "Creates and modifies an ACL user and its rules (on every shard of the node).", "username [rule [rule ...]]"),
    ROW("users", cmd_acl_users, 2, AD | LO | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "6.0.0", "O(N). Where N is the number of configured users.", "Lists all ACL users.", ""),
    ROW("whoami", cmd_acl_whoami, 2, LO | ST, 0, 0, 0, CAT_SLOW, "server", "6.0.0", "O(1)", "Returns the authenticated username of the current connection.", ""),
    END,
};

#include "node/commands/t_stream_group_subs.h"

struct cmd_spec cmd_table[] = {
    /* connection */
    ROW("ping", cmd_ping, -1, FA | ST | CMD_SUBOK, 0, 0, 0, CONN | CAT_FAST, "connection", "1.0.0", "O(1)", "Returns the server's liveliness response.", "[message]"),
    ROW("echo", cmd_echo, 2, FA | LO | ST, 0, 0, 0, CONN | CAT_FAST, "connection", "1.0.0", "O(1)", "Returns the given string.", "message"),
    ROW("hello", cmd_hello, -1, FA | NA | LO | ST, 0, 0, 0, CONN | CAT_FAST, "connection", "6.0.0", "O(1)", "Handshakes with the server.", "[protover [AUTH username password] [SETNAME clientname]]"),
    ROW("auth", cmd_auth, -2, FA | NA | LO | ST, 0, 0, 0, CONN | CAT_FAST, "connection", "1.0.0", "O(N) where N is the number of passwords defined for the user", "Authenticates the connection.", "[username] password"),
    ROW("select", cmd_select, 2, FA | LO | ST, 0, 0, 0, CONN | CAT_FAST, "connection", "1.0.0", "O(1)", "Changes the selected database.", "index"),
    ROW("quit", cmd_quit, -1, FA | NA | LO | ST | CMD_NOQUEUE | CMD_SUBOK, 0, 0, 0, CONN | CAT_FAST, "connection", "1.0.0", "O(1)", "Closes the connection.", ""),
    ROW("reset", cmd_reset, 1, FA | NA | LO | ST | CMD_NOQUEUE | CMD_SUBOK, 0, 0, 0, CONN | CAT_FAST, "connection", "6.2.0", "O(1)", "Resets the connection.", ""),
    ROW("asking", cmd_asking, 1, FA | LO | ST, 0, 0, 0, CONN | CAT_FAST, "cluster", "3.0.0", "O(1)", "Signals that a cluster client is following an -ASK redirect.", ""),
    ROW("readonly", cmd_readonly, 1, FA | LO | ST, 0, 0, 0, CONN | CAT_FAST, "cluster", "3.0.0", "O(1)", "Enables read-only queries for a connection to a Redis Cluster replica node.", ""),
    ROW("readwrite", cmd_readwrite, 1, FA | LO | ST, 0, 0, 0, CONN | CAT_FAST, "cluster", "3.0.0", "O(1)", "Enables read-write queries for a connection to a Redis Cluster replica node.", ""),
    SUBS("client", -2, CMD_SKIP_SLOWLOG, CONN | CAT_SLOW, "connection", "2.4.0", "A container for client connection commands.", client_subs),
    SUBS("acl", -2, 0, CAT_SLOW, "server", "6.0.0", "A container for Access List Control commands.", acl_subs),
    { "command", cmd_command, -1, LO | ST, 0, 0, 0, CONN | CAT_SLOW, "server", "2.8.13", "Returns detailed information about all commands.", "O(N) where N is the total number of Redis commands", "", NULL, command_subs, 0, NULL },

    /* pub/sub */
    ROW("publish", cmd_publish, 3, CMD_MAY_REPLICATE | CMD_PUBSUB | LO | ST | FA, 0, 0, 0, CAT_PUBSUB | CAT_FAST, "pubsub", "2.0.0", "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).", "Posts a message to a channel.", "channel message"),
    ROW("spublish", cmd_spublish, 3, CMD_MAY_REPLICATE | CMD_PUBSUB | LO | ST | FA, 1, 1, 1, CAT_PUBSUB | CAT_FAST, "pubsub", "7.0.0", "O(N) where N is the number of clients subscribed to the receiving shard channel.", "Post a message to a shard channel", "shardchannel message"),
    ROW("subscribe", cmd_subscribe, -2, CMD_PUBSUB | CMD_SUBOK | LO | ST, 0, 0, 0, CAT_PUBSUB | CAT_SLOW, "pubsub", "2.0.0", "O(N) where N is the number of channels to subscribe to.", "Listens for messages published to channels.", "channel [channel ...]"),
    ROW("ssubscribe", cmd_ssubscribe, -2, CMD_PUBSUB | CMD_SUBOK | LO | ST, 1, -1, 1, CAT_PUBSUB | CAT_SLOW, "pubsub", "7.0.0", "O(N) where N is the number of shard channels to subscribe to.", "Listens for messages published to shard channels.", "shardchannel [shardchannel ...]"),
    ROW("unsubscribe", cmd_unsubscribe, -1, CMD_PUBSUB | CMD_SUBOK | LO | ST, 0, 0, 0, CAT_PUBSUB | CAT_SLOW, "pubsub", "2.0.0", "O(N) where N is the number of channels to unsubscribe.", "Stops listening to messages posted to channels.", "[channel [channel ...]]"),
    ROW("sunsubscribe", cmd_sunsubscribe, -1, CMD_PUBSUB | CMD_SUBOK | LO | ST, 1, -1, 1, CAT_PUBSUB | CAT_SLOW, "pubsub", "7.0.0", "O(N) where N is the number of shard channels to unsubscribe.", "Stops listening to messages posted to shard channels.", "[shardchannel [shardchannel ...]]"),
    ROW("psubscribe", cmd_psubscribe, -2, CMD_PUBSUB | CMD_SUBOK | LO | ST, 0, 0, 0, CAT_PUBSUB | CAT_SLOW, "pubsub", "2.0.0", "O(N) where N is the number of patterns to subscribe to.", "Listens for messages published to channels that match one or more patterns.", "pattern [pattern ...]"),
    ROW("punsubscribe", cmd_punsubscribe, -1, CMD_PUBSUB | CMD_SUBOK | LO | ST, 0, 0, 0, CAT_PUBSUB | CAT_SLOW, "pubsub", "2.0.0", "O(N) where N is the number of patterns to unsubscribe.", "Stops listening to messages published to channels that match one or more patterns.", "[pattern [pattern ...]]"),
    SUBS("pubsub", -2, 0, CAT_SLOW, "pubsub", "2.8.0", "A container for Pub/Sub commands.", pubsub_subs),

    /* blocking list commands (t_list_block.c) */
    ROW("blpop", cmd_blpop, -3, W | CMD_BLOCKING | CMD_NOSCRIPT, 1, -2, 1, CAT_LIST | CAT_WRITE | CAT_SLOW | CAT_BLOCKING, "list", "2.0.0", "O(N) where N is the number of provided keys.", "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", "key [key ...] timeout"),
    ROW("brpop", cmd_brpop, -3, W | CMD_BLOCKING | CMD_NOSCRIPT, 1, -2, 1, CAT_LIST | CAT_WRITE | CAT_SLOW | CAT_BLOCKING, "list", "2.0.0", "O(N) where N is the number of provided keys.", "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", "key [key ...] timeout"),
    ROW("brpoplpush", cmd_brpoplpush, 4, W | DO | CMD_BLOCKING | CMD_NOSCRIPT, 1, 2, 1, CAT_LIST | CAT_WRITE | CAT_SLOW | CAT_BLOCKING, "list", "2.2.0", "O(1)", "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.", "source destination timeout"),
    ROW("blmove", cmd_blmove, 6, W | DO | CMD_BLOCKING | CMD_NOSCRIPT, 1, 2, 1, CAT_LIST | CAT_WRITE | CAT_SLOW | CAT_BLOCKING, "list", "6.2.0", "O(1)", "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.", "source destination <LEFT | RIGHT> <LEFT | RIGHT> timeout"),
    ROWK("blmpop", cmd_blmpop, -5, W | CMD_BLOCKING, 0, 0, 0, CAT_LIST | CAT_WRITE | CAT_SLOW | CAT_BLOCKING, "list", "7.0.0", "O(N+M) where N is the number of provided keys and M is the number of elements returned.", "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", "timeout numkeys key [key ...] LEFT | RIGHT [COUNT count]", list_blmpop_keys),

    /* blocking sorted-set commands (t_zset_block.c) */
    ROW("bzpopmin", cmd_bzpopmin, -3, W | FA | CMD_BLOCKING | CMD_NOSCRIPT, 1, -2, 1, CAT_SORTEDSET | CAT_WRITE | CAT_FAST | CAT_BLOCKING, "sorted-set", "5.0.0", "O(log(N)) with N being the number of elements in the sorted set.", "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", "key [key ...] timeout"),
    ROW("bzpopmax", cmd_bzpopmax, -3, W | FA | CMD_BLOCKING | CMD_NOSCRIPT, 1, -2, 1, CAT_SORTEDSET | CAT_WRITE | CAT_FAST | CAT_BLOCKING, "sorted-set", "5.0.0", "O(log(N)) with N being the number of elements in the sorted set.", "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.", "key [key ...] timeout"),
    ROWK("bzmpop", cmd_bzmpop, -5, W | CMD_BLOCKING, 0, 0, 0, CAT_SORTEDSET | CAT_WRITE | CAT_SLOW | CAT_BLOCKING, "sorted-set", "7.0.0", "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.", "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", "timeout numkeys key [key ...] MIN | MAX [COUNT count]", zset_bzmpop_keys),

    /* transactions */
    ROWK("eval", cmd_eval, -3, CMD_SKIP_MONITOR | CMD_MAY_REPLICATE | CMD_NOSCRIPT | ST, 0, 0, 0, CAT_SLOW | CAT_SCRIPTING, "scripting", "2.6.0", "Depends on the script that is executed.", "Executes a server-side Lua script.", "script numkeys [key [key ...]] [arg [arg ...]]", script_eval_keys),
    ROWK("evalsha", cmd_evalsha, -3, CMD_SKIP_MONITOR | CMD_MAY_REPLICATE | CMD_NOSCRIPT | ST, 0, 0, 0, CAT_SLOW | CAT_SCRIPTING, "scripting", "2.6.0", "Depends on the script that is executed.", "Executes a server-side Lua script by SHA1 digest.", "sha1 numkeys [key [key ...]] [arg [arg ...]]", script_eval_keys),
    ROWK("eval_ro", cmd_eval_ro, -3, CMD_SKIP_MONITOR | CMD_NOSCRIPT | ST | RO, 0, 0, 0, CAT_SLOW | CAT_SCRIPTING, "scripting", "7.0.0", "Depends on the script that is executed.", "Executes a read-only server-side Lua script.", "script numkeys [key [key ...]] [arg [arg ...]]", script_eval_keys),
    ROWK("evalsha_ro", cmd_evalsha_ro, -3, CMD_SKIP_MONITOR | CMD_NOSCRIPT | ST | RO, 0, 0, 0, CAT_SLOW | CAT_SCRIPTING, "scripting", "7.0.0", "Depends on the script that is executed.", "Executes a read-only server-side Lua script by SHA1 digest.", "sha1 numkeys [key [key ...]] [arg [arg ...]]", script_eval_keys),
    SUBS("script", -2, 0, CAT_SLOW, "scripting", "2.6.0", "A container for Lua scripts management commands.", script_subs),
    ROWK("fcall", cmd_fcall, -3, CMD_NOSCRIPT | ST, 0, 0, 0, CAT_SLOW | CAT_SCRIPTING, "scripting", "7.0.0", "Depends on the function that is executed.", "Invokes a function.", "function numkeys [key [key ...]] [arg [arg ...]]", script_eval_keys),
    ROWK("fcall_ro", cmd_fcall_ro, -3, CMD_NOSCRIPT | ST | RO, 0, 0, 0, CAT_SLOW | CAT_SCRIPTING, "scripting", "7.0.0", "Depends on the function that is executed.", "Invokes a read-only function.", "function numkeys [key [key ...]] [arg [arg ...]]", script_eval_keys),
    SUBS("function", -2, 0, CAT_SLOW, "scripting", "7.0.0", "A container for function commands.", function_subs),
    ROW("multi", cmd_multi, 1, FA | LO | ST | CMD_NOQUEUE | CMD_ALLOW_BUSY, 0, 0, 0, CAT_TRANSACTION | CAT_FAST, "transactions", "1.2.0", "O(1)", "Starts a transaction.", ""),
    ROW("exec", cmd_exec, 1, LO | ST | CMD_NOQUEUE | CMD_SKIP_SLOWLOG, 0, 0, 0, CAT_TRANSACTION | CAT_SLOW, "transactions", "1.2.0", "Depends on commands in the transaction", "Executes all commands in a transaction.", ""),
    ROW("discard", cmd_discard, 1, FA | LO | ST | CMD_NOQUEUE | CMD_ALLOW_BUSY, 0, 0, 0, CAT_TRANSACTION | CAT_FAST, "transactions", "2.0.0", "O(N), when N is the number of queued commands", "Discards a transaction.", ""),
    ROW("watch", cmd_watch, -2, FA | LO | ST | CMD_NOQUEUE | CMD_ALLOW_BUSY, 1, -1, 1, CAT_TRANSACTION | CAT_FAST, "transactions", "2.2.0", "O(1) for every key.", "Monitors changes to keys to determine the execution of a transaction.", "key [key ...]"),
    ROW("unwatch", cmd_unwatch, 1, FA | LO | ST | CMD_NOQUEUE | CMD_ALLOW_BUSY, 0, 0, 0, CAT_TRANSACTION | CAT_FAST, "transactions", "2.2.0", "O(1)", "Forgets about watched keys of a transaction.", ""),

    /* strings */
    ROW("get", cmd_get, 2, RO | FA, 1, 1, 1, S_R | CAT_FAST, "string", "1.0.0", "O(1)", "Returns the string value of a key.", "key"),
    ROW("set", cmd_set, -3, W | DO, 1, 1, 1, S_W | CAT_SLOW, "string", "1.0.0", "O(1)", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", "key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]"),
    ROW("setnx", cmd_setnx, 3, W | DO | FA, 1, 1, 1, S_W | CAT_FAST, "string", "1.0.0", "O(1)", "Set the string value of a key only when the key doesn't exist.", "key value"),
    ROW("setex", cmd_setex, 4, W | DO, 1, 1, 1, S_W | CAT_SLOW, "string", "2.0.0", "O(1)", "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", "key seconds value"),
    ROW("psetex", cmd_psetex, 4, W | DO, 1, 1, 1, S_W | CAT_SLOW, "string", "2.6.0", "O(1)", "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", "key milliseconds value"),
    ROW("mget", cmd_mget, -2, RO | FA, 1, -1, 1, S_R | CAT_FAST, "string", "1.0.0", "O(N) where N is the number of keys to retrieve.", "Atomically returns the string values of one or more keys.", "key [key ...]"),
    ROW("mset", cmd_mset, -3, W | DO, 1, -1, 2, S_W | CAT_SLOW, "string", "1.0.1", "O(N) where N is the number of keys to set.", "Atomically creates or modifies the string values of one or more keys.", "key value [key value ...]"),
    ROW("msetnx", cmd_msetnx, -3, W | DO, 1, -1, 2, S_W | CAT_SLOW, "string", "1.0.1", "O(N) where N is the number of keys to set.", "Atomically modifies the string values of one or more keys only when all keys don't exist.", "key value [key value ...]"),
    ROW("getset", cmd_getset, 3, W | DO | FA, 1, 1, 1, S_W | CAT_FAST, "string", "1.0.0", "O(1)", "Returns the previous string value of a key after setting it to a new value.", "key value"),
    ROW("getdel", cmd_getdel, 2, W | FA, 1, 1, 1, S_W | CAT_FAST, "string", "6.2.0", "O(1)", "Returns the string value of a key after deleting the key.", "key"),
    ROW("getex", cmd_getex, -2, W | FA, 1, 1, 1, S_W | CAT_FAST, "string", "6.2.0", "O(1)", "Returns the string value of a key after setting its expiration time.", "key [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | PERSIST]"),
    ROW("append", cmd_append, 3, W | DO | FA, 1, 1, 1, S_W | CAT_FAST, "string", "2.0.0", "O(1)", "Appends a string to the value of a key. Creates the key if it doesn't exist.", "key value"),
    ROW("strlen", cmd_strlen, 2, RO | FA, 1, 1, 1, S_R | CAT_FAST, "string", "2.2.0", "O(1)", "Returns the length of a string value.", "key"),
    ROW("incr", cmd_incr, 2, W | DO | FA, 1, 1, 1, S_W | CAT_FAST, "string", "1.0.0", "O(1)", "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", "key"),
    ROW("decr", cmd_decr, 2, W | DO | FA, 1, 1, 1, S_W | CAT_FAST, "string", "1.0.0", "O(1)", "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", "key"),
    ROW("incrby", cmd_incrby, -3, W | DO | FA, 1, 1, 1, S_W | CAT_FAST, "string", "1.0.0", "O(1)", "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist. With MAX (Ruvio), only when the result stays <= limit, else a null reply and no write.", "key increment [MAX limit]"),
    ROW("decrby", cmd_decrby, 3, W | DO | FA, 1, 1, 1, S_W | CAT_FAST, "string", "1.0.0", "O(1)", "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", "key decrement"),
    ROW("incrbyfloat", cmd_incrbyfloat, 3, W | DO | FA, 1, 1, 1, S_W | CAT_FAST, "string", "2.6.0", "O(1)", "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", "key increment"),
    ROW("getrange", cmd_getrange, 4, RO, 1, 1, 1, S_R | CAT_SLOW, "string", "2.4.0", "O(N) where N is the length of the returned string.", "Returns a substring of the string stored at a key.", "key start end"),
    ROW("substr", cmd_getrange, 4, RO, 1, 1, 1, S_R | CAT_SLOW, "string", "1.0.0", "O(N) where N is the length of the returned string.", "Returns a substring from a string value.", "key start end"),
    ROW("setrange", cmd_setrange, 4, W | DO, 1, 1, 1, S_W | CAT_SLOW, "string", "2.2.0", "O(1), not counting the time taken to copy the new string in place.", "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", "key offset value"),

    /* generic */
    ROW("del", cmd_del, -2, W, 1, -1, 1, K_W | CAT_SLOW, "generic", "1.0.0", "O(N) where N is the number of keys that will be removed.", "Deletes one or more keys.", "key [key ...]"),
    ROW("unlink", cmd_unlink, -2, W | FA, 1, -1, 1, K_W | CAT_FAST, "generic", "4.0.0", "O(1) for each key removed regardless of its size.", "Asynchronously deletes one or more keys.", "key [key ...]"),
    ROW("exists", cmd_exists, -2, RO | FA, 1, -1, 1, K_R | CAT_FAST, "generic", "1.0.0", "O(N) where N is the number of keys to check.", "Determines whether one or more keys exist.", "key [key ...]"),
    ROW("type", cmd_type, 2, RO | FA, 1, 1, 1, K_R | CAT_FAST, "generic", "1.0.0", "O(1)", "Determines the type of value stored at a key.", "key"),
    ROW("expire", cmd_expire, -3, W | FA, 1, 1, 1, K_W | CAT_FAST, "generic", "1.0.0", "O(1)", "Sets the expiration time of a key in seconds.", "key seconds [NX | XX | GT | LT]"),
    ROW("pexpire", cmd_pexpire, -3, W | FA, 1, 1, 1, K_W | CAT_FAST, "generic", "2.6.0", "O(1)", "Sets the expiration time of a key in milliseconds.", "key milliseconds [NX | XX | GT | LT]"),
    ROW("expireat", cmd_expireat, -3, W | FA, 1, 1, 1, K_W | CAT_FAST, "generic", "1.2.0", "O(1)", "Sets the expiration time of a key to a Unix timestamp.", "key unix-time-seconds [NX | XX | GT | LT]"),
    ROW("pexpireat", cmd_pexpireat, -3, W | FA, 1, 1, 1, K_W | CAT_FAST, "generic", "2.6.0", "O(1)", "Sets the expiration time of a key to a Unix milliseconds timestamp.", "key unix-time-milliseconds [NX | XX | GT | LT]"),
    ROW("ttl", cmd_ttl, 2, RO | FA, 1, 1, 1, K_R | CAT_FAST, "generic", "1.0.0", "O(1)", "Returns the expiration time in seconds of a key.", "key"),
    ROW("pttl", cmd_pttl, 2, RO | FA, 1, 1, 1, K_R | CAT_FAST, "generic", "2.6.0", "O(1)", "Returns the expiration time in milliseconds of a key.", "key"),
    ROW("expiretime", cmd_expiretime, 2, RO | FA, 1, 1, 1, K_R | CAT_FAST, "generic", "7.0.0", "O(1)", "Returns the expiration time of a key as a Unix timestamp.", "key"),
    ROW("pexpiretime", cmd_pexpiretime, 2, RO | FA, 1, 1, 1, K_R | CAT_FAST, "generic", "7.0.0", "O(1)", "Returns the expiration time of a key as a Unix milliseconds timestamp.", "key"),
    ROW("persist", cmd_persist, 2, W | FA, 1, 1, 1, K_W | CAT_FAST, "generic", "2.2.0", "O(1)", "Removes the expiration time of a key.", "key"),
    ROW("keys", cmd_keys, 2, RO, 0, 0, 0, K_R | CAT_SLOW | CAT_DANGEROUS, "generic", "1.0.0", "O(N) with N being the number of keys in the database", "Returns all key names that match a pattern.", "pattern"),
    ROW("scan", cmd_scan, -2, RO, 0, 0, 0, K_R | CAT_SLOW, "generic", "2.8.0", "O(1) for every call. O(N) for a complete iteration.", "Iterates over the key names in the database.", "cursor [MATCH pattern] [COUNT count] [TYPE type]"),
    ROW("randomkey", cmd_randomkey, 1, RO, 0, 0, 0, K_R | CAT_SLOW, "generic", "1.0.0", "O(1)", "Returns a random key name from the database.", ""),
    ROW("rename", cmd_rename, 3, W, 1, 2, 1, K_W | CAT_SLOW, "generic", "1.0.0", "O(1)", "Renames a key and overwrites the destination.", "key newkey"),
    ROW("renamenx", cmd_renamenx, 3, W | FA, 1, 2, 1, K_W | CAT_FAST, "generic", "1.0.0", "O(1)", "Renames a key only when the target key name doesn't exist.", "key newkey"),
    ROW("move", cmd_move, 3, W | FA, 1, 1, 1, K_W | CAT_FAST, "generic", "1.0.0", "O(1)", "Moves a key to another database.", "key db"),
    ROW("copy", cmd_copy, -3, W | DO, 1, 2, 1, K_W | CAT_SLOW, "generic", "6.2.0", "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.", "Copies the value of a key to a new key.", "source destination [DB destination-db] [REPLACE]"),
    ROW("dump", cmd_dump, 2, RO, 1, 1, 1, K_R | CAT_SLOW, "generic", "2.6.0", "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).", "Returns a serialized representation of the value stored at a key.", "key"),
    ROWK("migrate", cmd_migrate, -6, W, 3, 3, 1, K_W | CAT_SLOW | CAT_DANGEROUS, "generic", "2.6.0", "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance.", "Atomically transfers a key from one instance to another (the shard waits up to timeout ms at each step).", "host port key | \"\" destination-db timeout [COPY] [REPLACE] [AUTH password | AUTH2 username password] [KEYS key [key ...]]", migrate_keys),
    ROW("restore", cmd_restore, -4, W | DO, 1, 1, 1, K_W | CAT_SLOW | CAT_DANGEROUS, "generic", "2.6.0", "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).", "Creates a key from the serialized representation of a value.", "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]"),
    ROW("restore-asking", cmd_restore, -4, W | DO | CMD_ASKING, 1, 1, 1, K_W | CAT_SLOW | CAT_DANGEROUS, "server", "3.0.0", "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).", "RESTORE on a slot being imported, as if after ASKING (what MIGRATE sends in a cluster).", "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]"),
    ROW("touch", cmd_touch, -2, RO | FA, 1, -1, 1, K_R | CAT_FAST, "generic", "3.2.1", "O(N) where N is the number of keys that will be touched.", "Returns the number of existing keys out of those specified after updating the time they were last accessed.", "key [key ...]"),
    SUBS("object", -2, 0, CAT_SLOW, "generic", "2.2.3", "A container for object introspection commands.", object_subs),
    SUBS("memory", -2, 0, CAT_SLOW, "server", "4.0.0", "A container for memory diagnostics commands.", memory_subs),

    /* server */
    ROW("save", cmd_save, 1, AD | CMD_NOSCRIPT | CMD_NO_MULTI, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "1.0.0", "O(N) where N is the total number of keys in the shard", "Synchronously writes a checkpoint of the shard.", ""),
    ROW("bgsave", cmd_bgsave, -1, AD | CMD_NOSCRIPT, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "1.0.0", "O(1)", "Starts a checkpoint of the shard in the background.", "[SCHEDULE]"),
    ROW("bgrewriteaof", cmd_bgrewriteaof, 1, AD | CMD_NOSCRIPT, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "1.0.0", "O(1)", "Compacts the WAL by starting a checkpoint in the background.", ""),
    ROW("lastsave", cmd_lastsave, 1, LO | ST | FA | CMD_RANDOM, 0, 0, 0, CAT_FAST, "server", "1.0.0", "O(1)", "Returns the Unix timestamp of the last successful checkpoint.", ""),
    ROW("dbsize", cmd_dbsize, 1, RO | FA, 0, 0, 0, K_R | CAT_FAST, "server", "1.0.0", "O(1)", "Returns the number of keys in the database.", ""),
    ROW("swapdb", cmd_swapdb, 3, W | FA, 0, 0, 0, K_W | CAT_FAST | CAT_DANGEROUS, "server", "4.0.0", "O(N) where N is the count of clients watching or blocking on keys from both databases.", "Swaps two Redis databases.", "index1 index2"),
    ROW("flushdb", cmd_flushdb, -1, W, 0, 0, 0, K_W | CAT_SLOW | CAT_DANGEROUS, "server", "1.0.0", "O(N) where N is the number of keys in the selected database", "Remove all keys from the current database.", "[ASYNC | SYNC]"),
    ROW("flushall", cmd_flushall, -1, W, 0, 0, 0, K_W | CAT_SLOW | CAT_DANGEROUS, "server", "1.0.0", "O(N) where N is the total number of keys in all databases", "Removes all keys from all databases.", "[ASYNC | SYNC]"),
    ROW("info", cmd_info, -1, LO | ST, 0, 0, 0, CAT_SLOW | CAT_DANGEROUS, "server", "1.0.0", "O(1)", "Returns information and statistics about the server.", "[section [section ...]]"),
    SUBS("config", -2, 0, CAT_SLOW, "server", "2.0.0", "A container for server configuration commands.", config_subs),
    ROW("replicaof", cmd_replicaof, 3, AD | CMD_NOSCRIPT | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "5.0.0", "O(1)", "Configures a server as replica of another, or promotes it to a master.", "host port"),
    ROW("slaveof", cmd_replicaof, 3, AD | CMD_NOSCRIPT | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "1.0.0", "O(1)", "Sets a Redis server as a replica of another, or promotes it to being a master.", "host port"),
    ROW("failover", cmd_failover, -1, AD | CMD_NOSCRIPT | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "6.2.0", "O(1)", "Starts a coordinated failover from a server to one of its replicas.", "[TO host port [FORCE]] [ABORT] [TIMEOUT milliseconds]"),
    ROW("role", cmd_role, 1, CMD_NOSCRIPT | LO | ST | FA, 0, 0, 0, CAT_ADMIN | CAT_FAST | CAT_DANGEROUS, "server", "2.8.12", "O(1)", "Returns the replication role.", ""),
    ROW("wait", cmd_wait, 3, CMD_NOSCRIPT, 0, 0, 0, CAT_SLOW | CAT_BLOCKING | CAT_CONNECTION, "generic", "3.0.0", "O(1)", "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.", "numreplicas timeout"),
    ROW("waitaof", cmd_waitaof, 4, CMD_NOSCRIPT, 0, 0, 0, CAT_SLOW | CAT_BLOCKING | CAT_CONNECTION, "generic", "7.2.0", "O(1)", "Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the master and/or replicas.", "numlocal numreplicas timeout"),
    ROW("replconf", cmd_replconf, -1, AD | CMD_NOSCRIPT | LO | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "3.0.0", "O(1)", "An internal command for configuring the replication stream.", "option value [option value ...]"),
    ROW("restore-stage", cmd_restore_stage, -3, W | DO | AD | CMD_NOSCRIPT | CMD_NO_MULTI | CMD_ASKING, 2, 2, 1, K_W | CAT_WRITE | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "generic", "0.1.0", "O(N) where N is the size of the chunk", "What MIGRATE sends a target for a big key: chunks into a staging value no command sees, which COMMIT makes the key at once (RESTORE's TTL, REPLACE and BUSYKEY rules), or ABORT drops. Internal.", "RESTORE key abs-expire-ms payload | RESERVE key bytes | APPEND key HSET|SADD|ZADD|RPUSH|APPEND arg ... | COMMIT key ttl [REPLACE] [ABSTTL] | ABORT key | LOAD command key arg ..."),
    ROW("rvmigslots", cmd_rvmigslots, -3, W | AD | CMD_NOSCRIPT | CMD_NO_MULTI, 0, 0, 0, CAT_WRITE | CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "0.1.0", "O(N) where N is the size of the value, or the shard's keys for DROP", "Ruvio's atomic slot migration: what a source sends its target (BEGIN of an import, whose slots' keys are hidden until they are this node's; its STATE; RESTORE of a key with its absolute expiry, APPEND of a big key's next chunk, RESERVE of a big string's room, DEL, DROP of the keys of slots this node does not own; END of an import, as the target logs it). Internal.", "BEGIN name source-id start-slot end-slot [start-slot end-slot ...] | STATE name snapshot|streaming|committing | RESTORE key abs-expire-ms payload | APPEND key HSET|SADD|ZADD|RPUSH|APPEND arg ... | RESERVE key bytes | DEL key | DROP start-slot end-slot [start-slot end-slot ...] | END name success|failed|cancelled message"),
    ROW("rvcluster", cmd_rvcluster, -2, AD | ST | CMD_NOSCRIPT | CMD_NO_MULTI, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "cluster", "0.1.0", "O(N) where N is the number of nodes and slot ranges", "Ruvio's cluster join: a host told to CLUSTER MEET a node of this host sends its nodes and slots (RVCLUSTER JOIN host-id bus-address node...). Internal.", "JOIN host-id bus-address node [node ...]"),
    ROW("rvsync", cmd_rvsync, 1, AD | CMD_NOSCRIPT | CMD_NO_MULTI, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "0.1.0", "O(1)", "Ruvio's replication handshake: turns the connection into a replication link (internal).", ""),
    ROW("monitor", cmd_monitor, 1, AD | CMD_NOSCRIPT | LO | ST, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "1.0.0", "O(1)", "Listens for all requests received by the server in real time.", ""),
    ROW("lolwut", cmd_lolwut, -1, RO | FA, 0, 0, 0, CAT_READ | CAT_FAST, "server", "5.0.0", "O(1)", "Displays computer art and the server version.", "[VERSION version]"),
    ROW("time", cmd_time, 1, LO | ST | FA, 0, 0, 0, CAT_FAST, "server", "2.6.0", "O(1)", "Returns the server time.", ""),
    SUBS("slowlog", -2, 0, CAT_SLOW, "server", "2.2.12", "A container for slow log commands.", slowlog_subs),
    SUBS("latency", -2, 0, CAT_SLOW, "server", "2.8.13", "A container for latency diagnostics commands.", latency_subs),
    ROW("shutdown", cmd_shutdown, -1, AD | LO | ST | CMD_NO_MULTI, 0, 0, 0, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "1.0.0", "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)", "Synchronously saves the database(s) to disk and shuts down the server.", "[NOSAVE | SAVE] [NOW] [FORCE] [ABORT]"),
    SUBS("cluster", -2, 0, CAT_SLOW, "cluster", "3.0.0", "A container for Redis Cluster commands.", cluster_subs),
    SUBS("debug", -2, AD | LO | ST | CMD_NOSCRIPT, CAT_ADMIN | CAT_SLOW | CAT_DANGEROUS, "server", "1.0.0", "A container for debugging commands.", debug_subs),

    /* Collection types: each module keeps its rows in node/t_<type>_rows.h. */
#include "node/commands/t_list_rows.h"
#include "node/commands/t_hash_rows.h"
#include "node/commands/t_set_rows.h"
#include "node/commands/t_zset_rows.h"
#include "node/commands/t_bitmap_rows.h"
#include "node/commands/t_hll_rows.h"
#include "node/commands/t_geo_rows.h"
#include "node/commands/t_coord_rows.h"
#include "node/commands/t_stream_rows.h"
#include "node/commands/t_json_rows.h"
#include "node/commands/t_sort_rows.h"
};

/* clang-format on */
const size_t cmd_table_len = sizeof(cmd_table) / sizeof(cmd_table[0]);

void
cmds_init(void)
{
    cmd_init(cmd_table, cmd_table_len);
}
