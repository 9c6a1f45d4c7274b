/* node/commands/cmds.h: command handlers, one per row of cmd_table.c. Grouped by file. */
#pragma once
#include "node/core/cmd.h"

/* Give the command table (cmd_table.c) to node/core: once, before any shard starts. */
void cmds_init(void);

#define CMD_HANDLER(name) void cmd_##name(struct conn *c, int argc, struct rv_str *argv)
/* clang-format off */

/* cmd_string.c */
CMD_HANDLER(get); CMD_HANDLER(set); CMD_HANDLER(setnx); CMD_HANDLER(setex); CMD_HANDLER(psetex);
CMD_HANDLER(mget); CMD_HANDLER(mset); CMD_HANDLER(msetnx); CMD_HANDLER(getset); CMD_HANDLER(getdel);
CMD_HANDLER(getex); CMD_HANDLER(append); CMD_HANDLER(strlen); CMD_HANDLER(incr); CMD_HANDLER(decr);
CMD_HANDLER(incrby); CMD_HANDLER(decrby); CMD_HANDLER(incrbyfloat); CMD_HANDLER(getrange);
CMD_HANDLER(setrange);

/* cmd_generic.c */
CMD_HANDLER(del); CMD_HANDLER(unlink); CMD_HANDLER(exists); CMD_HANDLER(type); CMD_HANDLER(expire);
CMD_HANDLER(pexpire); CMD_HANDLER(expireat); CMD_HANDLER(pexpireat); CMD_HANDLER(ttl); CMD_HANDLER(pttl);
CMD_HANDLER(expiretime); CMD_HANDLER(pexpiretime); CMD_HANDLER(persist); CMD_HANDLER(keys);
CMD_HANDLER(scan); CMD_HANDLER(randomkey); CMD_HANDLER(rename); CMD_HANDLER(renamenx);
CMD_HANDLER(copy); CMD_HANDLER(touch); CMD_HANDLER(dbsize); CMD_HANDLER(flushdb);
CMD_HANDLER(flushall); CMD_HANDLER(object_encoding); CMD_HANDLER(object_freq);
CMD_HANDLER(object_idletime); CMD_HANDLER(object_refcount); CMD_HANDLER(object_help);
CMD_HANDLER(memory_usage);

/* cmd_db.c: numbered databases */
CMD_HANDLER(move); CMD_HANDLER(swapdb);
struct buf;
struct ks_entry;
/* A database index argument; false (replied) when not one of 0..databases-1. */
bool db_parse_index(struct conn *c, struct rv_str arg, unsigned *db);
/* Copy e's value and deadline to key dst of database db (replacing it); false when the type cannot. */
bool db_copy_entry(struct conn *c, const struct ks_entry *e, unsigned db, struct rv_str dst);
/* Cluster mode and multi-shard nodes (which route by slot) have database 0 only. */
bool db_cluster(const struct conn *c);
void db_info_keyspace(struct conn *c, struct buf *b); /* INFO keyspace's lines */

/* cmd_dump.c */
CMD_HANDLER(dump); CMD_HANDLER(restore); CMD_HANDLER(migrate);
/* DUMP's payload of e, appended to b (cmd_dump.c); MIGRATE's keys (cmd_migrate.c). */
struct buf;
struct ks_entry;
void dump_payload(struct ks_entry *e, struct buf *b);
/* The payload of a value that one rebuild command recreates (argv[1], its
 * key, left out): a part of a big value (slotmig_chunk.c). */
void dump_payload_cmd(int argc, const struct rv_str *argv, struct buf *b);
int migrate_keys(int argc, struct rv_str *argv, int *out, int max);

/* cmd_conn.c */
CMD_HANDLER(ping); CMD_HANDLER(echo); CMD_HANDLER(hello); CMD_HANDLER(auth); CMD_HANDLER(select);
CMD_HANDLER(quit); CMD_HANDLER(reset); CMD_HANDLER(readonly); CMD_HANDLER(readwrite); CMD_HANDLER(asking);
CMD_HANDLER(cluster_setslot);
CMD_HANDLER(cluster_migrateslots); CMD_HANDLER(cluster_getslotmigrations);
CMD_HANDLER(cluster_cancelslotmigrations); CMD_HANDLER(rvmigslots); CMD_HANDLER(debug_slotmig_hold);
CMD_HANDLER(restore_stage); CMD_HANDLER(debug_migrate_staging); CMD_HANDLER(debug_migrate_hold);
CMD_HANDLER(client_id); CMD_HANDLER(client_setname); CMD_HANDLER(client_getname);
CMD_HANDLER(client_list); CMD_HANDLER(client_info); CMD_HANDLER(client_kill);
CMD_HANDLER(client_setinfo);
CMD_HANDLER(client_no_evict); CMD_HANDLER(client_unblock); CMD_HANDLER(client_reply); CMD_HANDLER(client_help);
CMD_HANDLER(command_getkeysandflags); CMD_HANDLER(lolwut);
/* cmd_client.c */
CMD_HANDLER(monitor); CMD_HANDLER(client_pause); CMD_HANDLER(client_unpause); CMD_HANDLER(client_no_touch);
CMD_HANDLER(client_tracking); CMD_HANDLER(client_caching); CMD_HANDLER(client_getredir);
CMD_HANDLER(client_trackinginfo);
CMD_HANDLER(command); CMD_HANDLER(command_count); CMD_HANDLER(command_info);
CMD_HANDLER(command_docs); CMD_HANDLER(command_list); CMD_HANDLER(command_getkeys);
/* COMMAND INFO: one key spec (index begin_search, range find_keys) with flags f0 f1. */
void cmd_reply_range_spec(struct conn *c, const char *f0, const char *f1, int index, int lastkey,
                          int step);
CMD_HANDLER(command_help);

/* cmd_server.c */
CMD_HANDLER(info); CMD_HANDLER(config_get); CMD_HANDLER(config_set); CMD_HANDLER(config_resetstat);
CMD_HANDLER(config_help); CMD_HANDLER(config_rewrite); CMD_HANDLER(time); CMD_HANDLER(shutdown); CMD_HANDLER(memory_help);

/* cmd_debug.c */
void cmd_debug_log(struct conn *c, int argc, struct rv_str *argv);
CMD_HANDLER(debug_digest); CMD_HANDLER(debug_digest_value); CMD_HANDLER(debug_populate); CMD_HANDLER(debug_sleep);
CMD_HANDLER(debug_set_active_expire); CMD_HANDLER(debug_role_change_hook); CMD_HANDLER(debug_help);

/* cmd_slowlog.c, cmd_latency.c */
CMD_HANDLER(slowlog_get); CMD_HANDLER(slowlog_len); CMD_HANDLER(slowlog_reset); CMD_HANDLER(slowlog_help);
CMD_HANDLER(latency_latest); CMD_HANDLER(latency_history); CMD_HANDLER(latency_reset);
CMD_HANDLER(latency_doctor); CMD_HANDLER(latency_histogram); CMD_HANDLER(latency_help);
CMD_HANDLER(latency_graph);
CMD_HANDLER(debug);

/* cmd_memory.c */
CMD_HANDLER(memory_stats); CMD_HANDLER(memory_doctor); CMD_HANDLER(memory_purge);
CMD_HANDLER(memory_malloc_stats);

/* cmd_repl.c (replication/repl.h) */
CMD_HANDLER(replicaof); CMD_HANDLER(role); CMD_HANDLER(wait); CMD_HANDLER(waitaof);
CMD_HANDLER(replconf); CMD_HANDLER(rvsync); CMD_HANDLER(failover);
/* clang-format on */
/* While c's shard loads its data (replication attaches after), the primary
 * its configuration names (ROLE and INFO answer as a replica, as Redis's
 * loading replica does); false when none or not loading. */
bool cmd_repl_loading_primary(struct conn *c, char *host, size_t hostsz, int *port);
/* clang-format off */

/* cmd_script.c */
CMD_HANDLER(eval); CMD_HANDLER(evalsha); CMD_HANDLER(eval_ro); CMD_HANDLER(evalsha_ro);
CMD_HANDLER(script_load); CMD_HANDLER(script_exists); CMD_HANDLER(script_flush);
CMD_HANDLER(script_kill); CMD_HANDLER(script_help);
int script_eval_keys(int argc, struct rv_str *argv, int *out, int max);

/* cmd_function.c */
CMD_HANDLER(function_load); CMD_HANDLER(function_delete); CMD_HANDLER(function_flush);
CMD_HANDLER(function_list); CMD_HANDLER(function_dump); CMD_HANDLER(function_restore);
CMD_HANDLER(function_stats); CMD_HANDLER(function_kill); CMD_HANDLER(function_help);
CMD_HANDLER(fcall); CMD_HANDLER(fcall_ro);

/* cmd_multi.c */
CMD_HANDLER(multi); CMD_HANDLER(exec); CMD_HANDLER(discard); CMD_HANDLER(watch); CMD_HANDLER(unwatch);

/* cmd_pubsub.c */
CMD_HANDLER(publish); CMD_HANDLER(spublish); CMD_HANDLER(subscribe); CMD_HANDLER(ssubscribe);
CMD_HANDLER(unsubscribe); CMD_HANDLER(sunsubscribe); CMD_HANDLER(psubscribe);
CMD_HANDLER(punsubscribe); CMD_HANDLER(pubsub_channels); CMD_HANDLER(pubsub_shardchannels);
CMD_HANDLER(pubsub_numsub); CMD_HANDLER(pubsub_shardnumsub); CMD_HANDLER(pubsub_numpat);
CMD_HANDLER(pubsub_help);

/* t_list_block.c */
CMD_HANDLER(blpop); CMD_HANDLER(brpop); CMD_HANDLER(blmove); CMD_HANDLER(brpoplpush);
CMD_HANDLER(blmpop);
int list_blmpop_keys(int argc, struct rv_str *argv, int *out, int max);

/* t_zset_block.c */
CMD_HANDLER(bzpopmin); CMD_HANDLER(bzpopmax); CMD_HANDLER(bzmpop);
int zset_bzmpop_keys(int argc, struct rv_str *argv, int *out, int max);

/* cmd_cluster.c */
CMD_HANDLER(cluster_keyslot); CMD_HANDLER(cluster_slots); CMD_HANDLER(cluster_shards);
CMD_HANDLER(cluster_nodes); CMD_HANDLER(cluster_myid); CMD_HANDLER(cluster_info);
CMD_HANDLER(cluster_countkeysinslot); CMD_HANDLER(cluster_getkeysinslot); CMD_HANDLER(cluster_help);
/* cmd_cluster_mode.c: cluster-enabled yes (the topology log) */
void cm_cluster_slots(struct conn *c); void cm_cluster_shards(struct conn *c);
void cm_cluster_nodes(struct conn *c); void cm_cluster_info(struct conn *c);
CMD_HANDLER(cluster_myshardid); CMD_HANDLER(cluster_replicas); CMD_HANDLER(cluster_count_failure_reports);
CMD_HANDLER(cluster_links); CMD_HANDLER(cluster_saveconfig); CMD_HANDLER(cluster_addslots);
CMD_HANDLER(cluster_addslotsrange); CMD_HANDLER(cluster_delslots); CMD_HANDLER(cluster_delslotsrange);
CMD_HANDLER(cluster_flushslots); CMD_HANDLER(cluster_set_config_epoch); CMD_HANDLER(cluster_bumpepoch);
CMD_HANDLER(cluster_forget); CMD_HANDLER(cluster_reset); CMD_HANDLER(cluster_meet); CMD_HANDLER(cluster_replicate);
CMD_HANDLER(rvcluster); CMD_HANDLER(cluster_failover);

/* Collection types: each module declares its handlers in node/t_<type>.h. */
#include "node/commands/t_list.h"
#include "node/commands/t_hash.h"
#include "node/commands/t_set.h"
#include "node/commands/t_zset.h"
#include "node/commands/t_bitmap.h"
#include "node/commands/t_hll.h"
#include "node/commands/t_geo.h"
#include "node/commands/t_coord.h"
#include "node/commands/t_stream.h"
#include "node/commands/t_stream_group.h"
#include "node/commands/t_json.h"
#include "node/commands/t_sort.h"

/* cmd_persist.c: checkpoints */
CMD_HANDLER(save); CMD_HANDLER(bgsave); CMD_HANDLER(bgrewriteaof); CMD_HANDLER(lastsave);

/* cmd_acl.c */
CMD_HANDLER(acl_setuser); CMD_HANDLER(acl_deluser); CMD_HANDLER(acl_getuser); CMD_HANDLER(acl_list);
CMD_HANDLER(acl_users); CMD_HANDLER(acl_whoami); CMD_HANDLER(acl_cat); CMD_HANDLER(acl_genpass);
CMD_HANDLER(acl_log); CMD_HANDLER(acl_dryrun); CMD_HANDLER(acl_load); CMD_HANDLER(acl_save);
CMD_HANDLER(acl_help);
/* clang-format on */
