/* node/features/acl_int.h: what acl.c (the node's users) and acl_user.c (one user's
 * rules and checks) share. Not for other modules: they use acl.h. */
#pragma once
#include "node/features/acl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ACL_HASH_LEN 32

enum { ACL_PERM_R = 1, ACL_PERM_W = 2 };
enum {
    U_ON = 1u << 0,
    U_NOPASS = 1u << 1,
    U_ALLKEYS = 1u << 2,
    U_ALLCHANNELS = 1u << 3,
    U_SANITIZE = 1u << 4, /* shown as Redis shows it; payloads are always validated */
    U_SKIP_SANITIZE = 1u << 5,
};

struct acl_keypat {
    char *pat;
    size_t len;
    uint8_t perm; /* ACL_PERM_R | ACL_PERM_W */
};

struct acl_user {
    char *name;
    uint32_t flags;
    bool fast; /* on + every command, key and channel: no checks */
    int npass;
    uint8_t (*pass)[ACL_HASH_LEN];
    int nkeys;
    struct acl_keypat *keys;
    int nchans;
    char **chans;
    uint64_t *cmds; /* bitmap by cmd_spec.id */
    char *cmdrules; /* "+@all -debug", as ACL LIST shows them */
};

/* ---- acl_user.c ---- */
/* A new user: off, no passwords, no keys, no channels, no commands (Redis's defaults). */
struct acl_user *acl_user_new(const char *name, size_t len);
struct acl_user *acl_user_dup(const struct acl_user *src);
void acl_user_free(struct acl_user *u); /* NULL is a no-op */
/* One rule; NULL or Redis's reason. */
const char *acl_user_apply(struct acl_user *u, const char *r, size_t n);
/* Recompute u->fast (after rules changed, before publishing). */
void acl_user_update_fast(struct acl_user *u);
/* requirepass: the only password ("" = nopass). */
void acl_user_set_password(struct acl_user *u, const char *pass);
/* The password matches one of u's (or u is nopass); u's on flag is not looked at. */
bool acl_user_pass_ok(const struct acl_user *u, struct rv_str pass);
/* Whether u may use channel ch; literal: ch is a pattern (PSUBSCRIBE) that must be
 * one of u's patterns as written. */
bool acl_user_chan_ok(const struct acl_user *u, const char *ch, size_t len, bool literal);

enum acl_deny { ACL_OK = 0, ACL_DENY_CMD, ACL_DENY_KEY, ACL_DENY_CHAN };
/* u running cmd: the first refusal; *bad is the argument (key or channel) refused. */
enum acl_deny acl_user_check(const struct acl_user *u, const struct cmd_spec *cmd, int argc,
                             struct rv_str *argv, int *bad);
