/* node/features/acl.h: ACL users (Redis's ACL SETUSER rule syntax) and the
 * per-command permission check.
 *
 * The users of the node form one immutable snapshot. ACL SETUSER/DELUSER
 * (and CONFIG SET requirepass) build a new snapshot under a mutex and publish
 * it with a generation counter. Each shard holds a reference on the snapshot
 * its connections point into; it compares the generation once per read batch
 * (one relaxed load) and, when it moved, re-points its connections to the new
 * users (closing those whose user was deleted or disabled) and drops its
 * reference on the old snapshot, which is freed by the last shard to leave it.
 *
 * Hot path: a connection whose user may run everything on every key and
 * channel (the default user, out of the box) has conn.acl_slow == false, so
 * the dispatcher pays one predicted branch. Otherwise acl_allow() costs one
 * bitmap test, plus key/channel pattern checks only for users that have key
 * or channel restrictions.
 *
 * acl.c keeps the node's users (snapshots, loading, connections, the log);
 * acl_user.c one user's rules and checks. The ACL command's parsing and
 * replies are node/commands/cmd_acl.c. */
#pragma once
#include "proto/resp.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;
struct shard;
struct cmd_spec;
struct buf;
struct acl_user;
struct acl_snap;

/* Build the first snapshot: the default user (nopass, or requirepass's
 * password), then each "name rules..." line of user_lines ('\n'-separated,
 * as the config file's `user` directives), or the users of aclfile (not
 * both). Call once before shards start. */
int acl_init(const char *requirepass, const char *user_lines, const char *aclfile, char *err,
             size_t errsz);
/* Free the published snapshot (process exit). */
void acl_shutdown(void);

/* CONFIG SET requirepass: the default user's only password ("" = nopass). */
void acl_set_requirepass(const char *pass);

/* ---- shards and connections ---- */
extern atomic_uint_fast64_t acl_gen; /* bumped by every publish */
static inline uint64_t
acl_gen_now(void)
{
    return atomic_load_explicit(&acl_gen, memory_order_acquire);
}
/* Adopt the newest snapshot on shard s (its own thread): re-point every
 * connection, close those of deleted/disabled users. */
void acl_shard_refresh(struct shard *s);
/* The shard's final release of its snapshot (shard_destroy). */
void acl_shard_release(struct acl_snap *snap);
/* A new connection: default user; authenticated when the default user needs no password. */
void acl_conn_init(struct conn *c);
/* RESET: back to the default user. */
void acl_conn_reset(struct conn *c);

/* Check credentials; on success the connection becomes user (user == NULL: "default").
 * On failure logs an ACL LOG "auth" entry; returns false. */
bool acl_auth(struct conn *c, const struct rv_str *user, struct rv_str pass);
/* true when the default user has the nopass flag (AUTH <password> is then an error). */
bool acl_default_nopass(void);
/* Protected mode: the default user may log in without a password. */
bool acl_default_open(struct shard *s);

/* The slow half of the dispatcher's check (called only when c->acl_slow):
 * NOAUTH, then command, key and channel permissions. Replies Redis's error and
 * returns false when the command must not run. */
bool acl_allow(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv);

/* Whether c's user may read every key ("allkeys", or a "~*"/"%R~*" pattern):
 * SORT's BY and GET read keys no argument names (Redis refuses them otherwise). */
bool acl_all_keys_readable(const struct conn *c);

const char *acl_user_name(const struct acl_user *u);
bool acl_user_exists(struct rv_str name);

/* Category names ("keyspace", "read", ...) by bit index of enum cmd_cat. */
const char *acl_cat_name(unsigned bit);
unsigned acl_cat_count(void);

/* ---- the ACL command (cmd_acl.c uses these) ---- */
/* Apply rules to user name (created when missing); 0 or -1 with Redis's error text. */
int acl_setuser(struct shard *s, struct rv_str name, int nrules, const struct rv_str *rules,
                char *err, size_t errsz);
/* Delete users; returns how many existed. -1 with err for "default". */
int acl_deluser(struct shard *s, int n, const struct rv_str *names, char *err, size_t errsz);
/* DRYRUN: NULL when allowed, else the reason written into why. */
bool acl_dryrun(struct rv_str user, const struct cmd_spec *cmd, int argc, struct rv_str *argv,
                char *why, size_t whysz, bool *nouser);
/* ACL LOAD / ACL SAVE with the aclfile; 0, or -1 with Redis's error text. */
int acl_load(struct shard *s, char *err, size_t errsz);
int acl_save(char *err, size_t errsz);
void acl_log_reset(void);
/* Refusals since start, node-wide, for INFO stats: acl_access_denied_auth,
 * acl_access_denied_cmd, acl_access_denied_key, acl_access_denied_channel. */
void acl_denied_counts(uint64_t out[4]);

/* The newest users, sorted by name: a reference that keeps them unchanged
 * (and their acl_user pointers valid) until acl_snap_put. */
struct acl_snap *acl_snap_get(void);
void acl_snap_put(struct acl_snap *s);
size_t acl_snap_count(const struct acl_snap *s);
const struct acl_user *acl_snap_user(const struct acl_snap *s, size_t i);
const struct acl_user *acl_snap_find(const struct acl_snap *s,
                                     struct rv_str name); /* NULL if none */

/* A user in text, as ACL LIST and the ACL file write it:
 * "user <name> on #<hash> ~keys resetchannels &chans <command rules>". */
void acl_user_describe(const struct acl_user *u, struct buf *b);
/* ACL GETUSER's fields: the flags ("on" or "off", then "nopass", then
 * "sanitize-payload" or "skip-sanitize-payload", when set; returns how many),
 * the password hashes in hex, the command rules, the key patterns ("~*", or
 * "%R~a ~b") and the channel patterns ("&*", or "&a &b"). */
#define ACL_PASS_HEX_LEN 64
int acl_user_flag_names(const struct acl_user *u, const char *out[3]);
int acl_user_npass(const struct acl_user *u);
void acl_user_pass_hex(const struct acl_user *u, int i, char out[ACL_PASS_HEX_LEN + 1]);
const char *acl_user_cmdrules(const struct acl_user *u);
void acl_user_keys_text(const struct acl_user *u, struct buf *b);
void acl_user_chans_text(const struct acl_user *u, struct buf *b);

/* ACL LOG: copies of the newest min(count, entries) entries (count < 0: all),
 * newest first; *n says how many. Free them with acl_log_free. */
struct acl_log_view {
    uint64_t id;
    int64_t count;       /* refusals merged into the entry */
    const char *reason;  /* "auth", "command", "key", "channel" */
    const char *context; /* "toplevel", "multi" */
    const char *object, *username, *client_info;
    int64_t created_ms, updated_ms;
};
struct acl_log_view *acl_log_copy(int64_t count, size_t *n);
void acl_log_free(struct acl_log_view *v, size_t n);
