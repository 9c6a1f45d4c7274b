/* node/commands/script_int.h: what the Lua engine (script.c) shares with
 * FUNCTION/FCALL (function.c): the shard's scripting state, the sandbox's
 * pieces and the runner. Private to node/commands. */
#pragma once
#include "proto/resp.h"

#include <lua.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;
struct shard;
struct fn_shard;

/* Script flags: a shebang's ("#!lua flags=a,b", kept with the script as
 * x_<sha>) or a function's (register_function's flags; always SF_SHEBANG). */
enum {
    SF_SHEBANG = 1u << 0,
    SF_NO_WRITES = 1u << 1,
    SF_ALLOW_OOM = 1u << 2,
    SF_ALLOW_STALE = 1u << 3,
    SF_NO_CLUSTER = 1u << 4,
    SF_CROSS_SLOT = 1u << 5,
};
/* The flag named p[0..n) ("no-writes", ...), 0 for a name Redis does not know. */
int script_flag_of(const char *p, size_t n);

struct script_shard {
    lua_State *L;
    int64_t count;       /* cached scripts */
    size_t body_bytes;   /* their source */
    struct fn_shard *fn; /* the function libraries (function.c), or NULL */
    /* the running script or function */
    struct conn *caller;
    char label[64];    /* its sha, or the function's name (for the log) */
    int resp;          /* redis.setresp() */
    bool ro;           /* EVAL_RO: writes refused */
    bool wrote;        /* a write ran: SCRIPT KILL may not stop it */
    bool busy;         /* past busy-reply-threshold */
    bool kill;         /* SCRIPT KILL asked */
    bool shutdown;     /* SHUTDOWN NOSAVE asked */
    bool fcall;        /* the running one is a function (FUNCTION KILL, not SCRIPT KILL) */
    int flags;         /* its flags (SF_*) */
    int gc_kb;         /* the heap after the last full collection */
    uint64_t runs;     /* scripts run */
    uint8_t *verdicts; /* by command id: 0 not known yet, 1 may run in scripts, 2 refused */
    size_t unsent_at;  /* SIZE_MAX, or where a reply being converted starts in the output */
    int slot;          /* the declared keys' slot, -1 none (multi-shard and cluster nodes) */
    int64_t start_ms;
};

/* The shard's state, created on first use (NULL: the engine could not start). */
struct script_shard *script_shard_get(struct shard *s);
/* A fresh sandboxed state (script.c's libraries, redis.*, read-only globals). */
lua_State *script_engine_new(void);
void script_sha1hex(const char *p, size_t n, char out[41]);
/* Replace the table at the top by a read-only proxy (index: its __index, or 0). */
void script_make_readonly(lua_State *L, lua_CFunction index);
/* __index of the globals: a missing name is an error (upvalue 1: the table). */
int script_g_index(lua_State *L);
int64_t script_mono_ms(void);
/* Run the function at the top of L for c, with flags (SF_*): refused (with
 * Redis's errors: *_RO of a writing script, no-cluster, a FAILOVER's wait)
 * or run and replied. fcall: the keys and args are its two arguments (a
 * function), else the globals KEYS and ARGV (EVAL). */
void script_start(struct conn *c, struct script_shard *ss, lua_State *L, const char *label,
                  int flags, bool ro, bool fcall, struct rv_str *keys, int nkeys,
                  struct rv_str *args, int nargs);
/* The function state's part of INFO memory, and its teardown (function.c). */
struct buf;
void fn_info_memory(struct script_shard *ss, struct buf *b);
long long
fn_vm_bytes(struct script_shard *ss); /* the functions' Lua heap (0: none; ss may be NULL) */
void fn_shard_free(struct script_shard *ss);
