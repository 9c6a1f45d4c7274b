/* node/commands/script.c: the Lua engine behind EVAL (script.h, docs/scripting.md). */
#include "node/commands/script.h"
#include "node/commands/script_conv.h"
#include "node/commands/script_int.h"
#include "node/commands/script_lib.h"
#include "node/commands/script_src.h"

#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "cluster/slot.h"
#include "cluster/topo.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "node/core/node.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "node/features/acl.h"
#include "node/features/evict.h"
#include "node/persist/persist.h"
#include "replication/repl.h"

#include <lauxlib.h>
#include <lua.h>
#include <luajit.h>
#include <lualib.h>
#include <openssl/evp.h>
#ifdef RV_HAVE_CJSON
int luaopen_cjson(lua_State *L); /* Debian's lua-cjson (lua-cjson.h declares only this) */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SCRIPT_REDIS_VERSION "7.4.0" /* as INFO's redis_version (cmd_server.c) */
#define SCRIPT_REDIS_VERSION_NUM 0x070400
#define HOOK_EVERY 100000                 /* VM instructions between time checks */
#define LUA_MAX_ALLOC ((size_t)512 << 20) /* one allocation of a script, at most */

static _Thread_local struct script_shard *cur; /* the shard's running script, if any */
static script_poll_fn *poll_fn;

void
script_set_poll(script_poll_fn *fn)
{
    poll_fn = fn;
}

int64_t
script_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
script_sha1hex(const char *p, size_t n, char out[41])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_Digest(p, n, md, &mdlen, EVP_sha1(), NULL);
    for (unsigned i = 0; i < 20; i++) {
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    }
    out[40] = '\0';
}

/* ---------------------------------------------------------------- the sandbox */

static int
ro_newindex(lua_State *L)
{
    return luaL_error(L, "Attempt to modify a readonly table");
}

/* Globals: reads of a missing name and every write are errors, as Redis 7. */
int
script_g_index(lua_State *L)
{
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1));
    if (lua_isnil(L, -1)) {
        const char *k = lua_tostring(L, 2);
        return luaL_error(L, "Script attempted to access nonexistent global variable '%s'",
                          k ? k : "?");
    }
    return 1;
}

/* Replace the table at the top by an empty proxy that reads through to it
 * (with `index` as __index when not 0) and refuses writes. */
void
script_make_readonly(lua_State *L, lua_CFunction index)
{
    int t = lua_gettop(L);
    lua_newtable(L);          /* proxy */
    lua_createtable(L, 0, 3); /* its metatable */
    if (index) {
        lua_pushvalue(L, t);
        lua_pushcclosure(L, index, 1);
    } else {
        lua_pushvalue(L, t);
    }
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, ro_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_replace(L, t);
}

static int raise_err(lua_State *L, const char *msg);

/* rawset, refused on the read-only tables as Redis's VM does. */
static int
l_rawset(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checkany(L, 2);
    luaL_checkany(L, 3);
    if (lua_getmetatable(L, 1)) {
        lua_getfield(L, -1, "__newindex");
        bool ro = lua_tocfunction(L, -1) == ro_newindex;
        lua_pop(L, 2);
        if (ro) {
            return raise_err(L, "ERR Attempt to modify a readonly table");
        }
    }
    lua_settop(L, 3);
    lua_rawset(L, 1);
    return 1;
}

static void
open_lib(lua_State *L, lua_CFunction f, const char *name)
{
    lua_pushcfunction(L, f);
    lua_pushstring(L, name);
    lua_call(L, 1, 0);
}

static int l_call(lua_State *L);
static int l_pcall(lua_State *L);

static void
push_error_table(lua_State *L, const char *msg)
{
    lua_createtable(L, 0, 1);
    lua_pushstring(L, msg);
    lua_setfield(L, -2, "err");
}

/* Set source and line of the error table at the top from the first Lua
 * frame from level `from` up. LuaJIT replaces the frame of a function that
 * tail-calls (`return redis.call(...)`) by the callee's; script_src keeps
 * the frames of a script's chunk and of register_function's literals, so
 * what is left is a function FCALL calls that was registered by name: when
 * no Lua frame is left, the running function is located when it spans one
 * line (exact, as Redis); otherwise the table stays unlocated. */
static void
locate(lua_State *L, int from)
{
    lua_Debug ar;
    for (int level = from; lua_getstack(L, level, &ar); level++) {
        lua_getinfo(L, "Sl", &ar);
        if (strcmp(ar.what, "C") != 0) {
            lua_pushstring(L, ar.source);
            lua_setfield(L, -2, "source");
            lua_pushinteger(L, ar.currentline);
            lua_setfield(L, -2, "line");
            return;
        }
    }
    /* the running one, looked up (errors only: nothing added to a script's run) */
    struct script_shard *ss = cur;
    if (ss == NULL) {
        return;
    }
    lua_getfield(L, LUA_REGISTRYINDEX, ss->fcall ? "fn_f" : "scripts");
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        return;
    }
    if (ss->fcall) {
        lua_pushstring(L, ss->label);
    } else {
        lua_pushfstring(L, "f_%s", ss->label);
    }
    lua_rawget(L, -2);
    lua_remove(L, -2);
    if (!lua_isfunction(L, -1)) {
        lua_pop(L, 1);
        return;
    }
    lua_getinfo(L, ">S", &ar); /* (pops the function) */
    int line = -1;
    if (strcmp(ar.what, "main") == 0 && ar.lastlinedefined <= 1) {
        line = 1; /* (a main chunk's lastlinedefined is its last line) */
    } else if (strcmp(ar.what, "Lua") == 0 && ar.linedefined == ar.lastlinedefined) {
        line = ar.linedefined;
    }
    if (line > 0) {
        lua_pushstring(L, ar.source);
        lua_setfield(L, -2, "source");
        lua_pushinteger(L, line);
        lua_setfield(L, -2, "line");
    }
}

/* Raise the error table at the top, located at the script line that called
 * the running C function (as Redis's luaError: no "user_script:N:" in the
 * message). */
static int
raise_table_from(lua_State *L, int from)
{
    locate(L, from);
    return lua_error(L);
}

static int
raise_err_from(lua_State *L, const char *msg, int from)
{
    push_error_table(L, msg);
    return raise_table_from(L, from);
}

static int
raise_err(lua_State *L, const char *msg)
{
    return raise_err_from(L, msg, 1);
}

/* redis.error_reply(msg): as Redis, "-CODE text" loses the dash, and a
 * message of one word gets the ERR code. */
static int
l_error_reply(lua_State *L)
{
    size_t n;
    const char *m = lua_tolstring(L, 1, &n);
    if (m == NULL || lua_gettop(L) != 1) {
        return luaL_error(L, "wrong number or type of arguments");
    }
    if (n > 0 && m[0] == '-') {
        m++;
        n--;
    }
    if (memchr(m, ' ', n) == NULL) {
        lua_pushfstring(L, "ERR %s", m);
    } else {
        lua_pushlstring(L, m, n);
    }
    lua_createtable(L, 0, 1);
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "err");
    return 1;
}

static int
l_status_reply(lua_State *L)
{
    if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING) {
        return luaL_error(L, "wrong number or type of arguments");
    }
    lua_createtable(L, 0, 1);
    lua_pushvalue(L, 1);
    lua_setfield(L, -2, "ok");
    return 1;
}

static int
l_sha1hex(lua_State *L)
{
    size_t n;
    const char *s = lua_tolstring(L, 1, &n);
    if (lua_gettop(L) != 1 || s == NULL) {
        return luaL_error(L, "wrong number of arguments");
    }
    char hex[41];
    script_sha1hex(s, n, hex);
    lua_pushstring(L, hex);
    return 1;
}

static int
l_log(lua_State *L)
{
    int argc = lua_gettop(L);
    if (argc < 2) {
        return raise_err(L, "ERR redis.log() requires two arguments or more.");
    }
    if (!lua_isnumber(L, 1)) {
        return raise_err(L, "ERR First argument must be a number (log level).");
    }
    int level = (int)lua_tointeger(L, 1);
    if (level < 0 || level > 3) {
        return raise_err(L, "ERR Invalid debug level.");
    }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 2; i <= argc; i++) {
        size_t n;
        const char *s = lua_tolstring(L, i, &n);
        if (s) {
            if (i > 2) {
                luaL_addchar(&b, ' ');
            }
            luaL_addlstring(&b, s, n);
        }
    }
    luaL_pushresult(&b);
    const char *msg = lua_tostring(L, -1);
    switch (level) {
    case 0: log_debug("script: %s", msg); break;
    case 1: log_info("script: %s", msg); break;
    case 2: log_notice("script: %s", msg); break;
    default: log_warn("script: %s", msg); break;
    }
    return 0;
}

static int
l_setresp(lua_State *L)
{
    if (lua_gettop(L) != 1) {
        return raise_err(L, "ERR redis.setresp() requires one argument.");
    }
    int v = (int)lua_tointeger(L, 1);
    if (v != 2 && v != 3) {
        return raise_err(L, "ERR RESP version must be 2 or 3.");
    }
    cur->resp = v;
    return 0;
}

/* Effects replication is the only mode (as Redis 7): accepted, no effect. */
static int
l_set_repl(lua_State *L)
{
    if (lua_gettop(L) != 1) {
        return raise_err(L, "ERR redis.set_repl() requires one argument.");
    }
    int v = (int)lua_tointeger(L, 1);
    if (v < 0 || v > 3) {
        return raise_err(L,
                         "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or "
                         "REPL_NONE.");
    }
    return 0;
}

static int
l_replicate_commands(lua_State *L)
{
    lua_pushboolean(L, 1);
    return 1;
}

static void
set_int(lua_State *L, const char *k, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

static void
open_redis(lua_State *L)
{
    static const luaL_Reg fns[] = {
        { "call", l_call },
        { "pcall", l_pcall },
        { "error_reply", l_error_reply },
        { "status_reply", l_status_reply },
        { "sha1hex", l_sha1hex },
        { "log", l_log },
        { "setresp", l_setresp },
        { "set_repl", l_set_repl },
        { "replicate_commands", l_replicate_commands },
        { NULL, NULL },
    };
    lua_newtable(L);
    for (const luaL_Reg *r = fns; r->name; r++) {
        lua_pushcfunction(L, r->func);
        lua_setfield(L, -2, r->name);
    }
    set_int(L, "LOG_DEBUG", 0);
    set_int(L, "LOG_VERBOSE", 1);
    set_int(L, "LOG_NOTICE", 2);
    set_int(L, "LOG_WARNING", 3);
    set_int(L, "REPL_NONE", 0);
    set_int(L, "REPL_AOF", 1);
    set_int(L, "REPL_SLAVE", 2);
    set_int(L, "REPL_REPLICA", 2);
    set_int(L, "REPL_ALL", 3);
    lua_pushstring(L, SCRIPT_REDIS_VERSION);
    lua_setfield(L, -2, "REDIS_VERSION");
    set_int(L, "REDIS_VERSION_NUM", SCRIPT_REDIS_VERSION_NUM);
    script_make_readonly(L, NULL);
    lua_setfield(L, LUA_GLOBALSINDEX, "redis");
}

/* The state's memory comes from the shard's allocator: charged to the shard
 * like its keys, so it counts toward maxmemory (and INFO's used_memory). */
static void *
lua_alloc(void *ud, void *p, size_t osize, size_t nsize)
{
    (void)ud;
    if (nsize == 0) {
        rv_free(p);
        return NULL;
    }
    if (nsize > osize && nsize > LUA_MAX_ALLOC) {
        return NULL; /* the script gets "not enough memory" (rv_realloc would abort) */
    }
    return rv_realloc(p, nsize);
}

static int
lua_panic(lua_State *L)
{
    log_warn("Lua panic: %s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "?");
    abort();
}

/* pcall as Redis 7's: an error table with a string err field (redis.call's
 * errors) is caught as that string, which scripts test with string.find. */
static int
l_lua_pcall(lua_State *L)
{
    if (lua_gettop(L) == 0) { /* (Redis's: its placeholder result is what it calls) */
        lua_pushboolean(L, 0);
        lua_pushstring(L, "attempt to call a boolean value");
        return 2;
    }
    if (lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0) == 0) {
        lua_pushboolean(L, 1);
        lua_insert(L, 1);
        return lua_gettop(L);
    }
    if (lua_istable(L, -1)) {
        lua_pushstring(L, "err");
        lua_rawget(L, -2);
        if (lua_isstring(L, -1)) {
            lua_replace(L, -2);
        } else {
            lua_pop(L, 1);
        }
    }
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    return 2;
}

/* A fresh state: base (without loadfile/dofile), table, string, math and bit,
 * each library read-only, and globals that refuse writes. The JIT is off: its
 * compiled loops do not run the count hook, which SCRIPT KILL needs. */
lua_State *
script_engine_new(void)
{
    lua_State *L = lua_newstate(lua_alloc, NULL);
    if (L == NULL) {
        return NULL;
    }
    lua_atpanic(L, lua_panic);
    luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);
    open_lib(L, luaopen_base, "");
    open_lib(L, luaopen_table, LUA_TABLIBNAME);
    open_lib(L, luaopen_string, LUA_STRLIBNAME);
    open_lib(L, luaopen_math, LUA_MATHLIBNAME);
    open_lib(L, luaopen_bit, LUA_BITLIBNAME);
#ifdef RV_HAVE_CJSON
    lua_pushcfunction(L, luaopen_cjson); /* (sets no global: returns the module) */
    lua_call(L, 0, 1);
    lua_setfield(L, LUA_GLOBALSINDEX, "cjson");
#endif
    script_lib_open(L); /* struct, cmsgpack */
    static const char *const gone[] = { "loadfile", "dofile",   "print",   "module",  "require",
                                        "package",  "newproxy", "getfenv", "setfenv", NULL };
    for (int i = 0; gone[i]; i++) {
        lua_pushnil(L);
        lua_setfield(L, LUA_GLOBALSINDEX, gone[i]);
    }
    static const char *const libs[] = { LUA_TABLIBNAME, LUA_STRLIBNAME, LUA_MATHLIBNAME,
                                        LUA_BITLIBNAME, "coroutine",    "cjson",
                                        "struct",       "cmsgpack",     NULL };
    for (int i = 0; libs[i]; i++) {
        lua_getfield(L, LUA_GLOBALSINDEX, libs[i]);
        if (lua_istable(L, -1)) {
            script_make_readonly(L, NULL);
            lua_setfield(L, LUA_GLOBALSINDEX, libs[i]);
        } else {
            lua_pop(L, 1);
        }
    }
    open_redis(L);
    /* scripts: registry.scripts["f_<sha>"]; the globals' real table: registry.G */
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "scripts");
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    lua_setfield(L, LUA_REGISTRYINDEX, "G");
    lua_pushcfunction(L, l_rawset);
    lua_setfield(L, LUA_GLOBALSINDEX, "rawset");
    lua_pushcfunction(L, l_lua_pcall);
    lua_setfield(L, LUA_GLOBALSINDEX, "pcall");
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    script_make_readonly(L, script_g_index);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_GLOBALSINDEX, "_G"); /* _G is the read-only view, never the real table */
    lua_setfield(L, LUA_REGISTRYINDEX, "ENV");
    return L;
}

struct script_shard *
script_shard_get(struct shard *s)
{
    struct shard_env *env = shard_env(s);
    if (env->scripts == NULL) {
        struct script_shard *ss = rv_calloc(1, sizeof(*ss));
        ss->L = script_engine_new();
        if (ss->L == NULL) {
            rv_free(ss);
            return NULL;
        }
        env->scripts = ss;
    }
    return env->scripts;
}

void
script_shard_free(struct shard *s)
{
    struct script_shard *ss = shard_env(s)->scripts;
    if (ss) {
        fn_shard_free(ss);
        lua_close(ss->L);
        rv_free(ss->verdicts);
        rv_free(ss);
        shard_env(s)->scripts = NULL;
    }
}

/* ---------------------------------------------------------------- redis.call */

/* Shortest text that reads back as the same double (Redis passes numbers
 * to commands so: 1 -> "1", 0.1 -> "0.1"). */
static size_t
num_text(lua_Number v, char *out, size_t cap)
{
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(out, cap, "%.*g", prec, v);
        if (strtod(out, NULL) == v) {
            break;
        }
    }
    return n > 0 ? (size_t)n : 0;
}

static bool
in_list(const char *name, const char *const *list)
{
    for (int i = 0; list[i]; i++) {
        if (strcmp(name, list[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* Commands a script may not run: Redis 7.0's noscript list (its COMMAND
 * flags), the rows flagged noscript here, and CLUSTER but for its reads
 * (a topology change would wait for its commit in the middle of a script). */
static bool script_refused_slow(const struct cmd_spec *cmd);

/* script_refused_slow, remembered by command id in ss->verdicts. */
static bool
script_refused(struct script_shard *ss, const struct cmd_spec *cmd)
{
    uint8_t *verdicts = ss->verdicts;
    if (verdicts == NULL) {
        verdicts = ss->verdicts = rv_calloc(cmd_id_count(), 1);
    }
    if (cmd->id < cmd_id_count() && verdicts[cmd->id] != 0) {
        return verdicts[cmd->id] == 2;
    }
    bool no = script_refused_slow(cmd);
    if (cmd->id < cmd_id_count()) {
        verdicts[cmd->id] = no ? 2 : 1;
    }
    return no;
}

static bool
script_refused_slow(const struct cmd_spec *cmd)
{
    static const char *const no[] = {
        "acl",          "auth",       "bgrewriteaof", "bgsave",    "blmove",     "blpop",
        "brpop",        "brpoplpush", "bzpopmax",     "bzpopmin",  "client",     "config",
        "debug",        "discard",    "eval",         "eval_ro",   "evalsha",    "evalsha_ro",
        "exec",         "failover",   "fcall",        "fcall_ro",  "function",   "hello",
        "latency",      "module",     "monitor",      "multi",     "psubscribe", "psync",
        "punsubscribe", "quit",       "replconf",     "replicaof", "reset",      "role",
        "save",         "script",     "shutdown",     "slaveof",   "ssubscribe", "subscribe",
        "sunsubscribe", "sync",       "unsubscribe",  "unwatch",   "wait",       "waitaof",
        "watch",        "rvsync",     NULL,
    };
    static const char *const cluster_reads[] = {
        "info",
        "nodes",
        "slots",
        "shards",
        "myid",
        "myshardid",
        "keyslot",
        "countkeysinslot",
        "getkeysinslot",
        "links",
        "replicas",
        "slaves",
        "count-failure-reports",
        NULL,
    };
    const struct cmd_spec *top = cmd->parent ? cmd->parent : cmd;
    if (strcmp(top->name, "cluster") == 0) {
        return cmd == top || !in_list(cmd->name, cluster_reads);
    }
    return (cmd->flags & CMD_NOSCRIPT) || (top->flags & CMD_NOSCRIPT) || in_list(top->name, no);
}

/* Whether slot sl is served here: by this shard, or in cluster mode by this
 * node (or, for a read on a READONLY connection, by its primary). */
static bool
key_local(struct conn *c, const struct cmd_spec *cmd, int sl)
{
    const struct topo *t = c->env->topo;
    int me = c->env->topo_me;
    if (t == NULL) {
        return shard_owns_slot(c->shard, (unsigned)sl);
    }
    const struct topo_node *owner = topo_slot_node(t, (unsigned)sl);
    if (me < 0 || owner == NULL) {
        return false;
    }
    return owner == &t->nodes[me] || ((c->flags & CONN_READONLY) && !(cmd->flags & CMD_WRITE) &&
                                      t->nodes[me].primary == owner - t->nodes);
}

/* Multi-shard and cluster nodes: every key must hash to the shard's (and
 * the declared keys') slot. NULL when fine, else the error. */
static const char *
keys_refused(struct conn *c, struct script_shard *ss, const struct cmd_spec *cmd, int argc,
             struct rv_str *argv)
{
    if (!shard_multi(c->shard) && c->env->topo == NULL) {
        return NULL;
    }
    int keys[256];
    int nk = cmd_get_keys(cmd, argc, argv, keys, 256);
    for (int i = 0; i < nk; i++) {
        int sl = (int)slot_of(argv[keys[i]].p, argv[keys[i]].len);
        if (ss->slot < 0) {
            ss->slot = sl;
        } else if (sl != ss->slot && !(ss->flags & SF_CROSS_SLOT)) {
            return "ERR Script attempted to access keys that do not hash to the same slot";
        }
        if (!key_local(c, cmd, sl)) {
            return "ERR Script attempted to access a non local key in a cluster node";
        }
    }
    return NULL;
}

/* Checks before running cmd from a script; NULL or the error to raise. */
static const char *
call_refused(struct conn *c, struct script_shard *ss, const struct cmd_spec *cmd, int argc,
             struct rv_str *argv)
{
    if ((cmd->arity > 0 && argc != cmd->arity) || argc < -cmd->arity) {
        return "ERR Wrong number of args calling Redis command from script";
    }
    if (script_refused(ss, cmd)) {
        return "ERR This Redis command is not allowed from script";
    }
    if ((cmd->flags & CMD_WRITE) && ss->ro) {
        return "ERR Write commands are not allowed from read-only scripts.";
    }
    if (c->acl_slow) {
        size_t mark = c->wbuf.len;
        uint32_t nerr = c->nerr;
        bool ok = acl_allow(c, cmd, argc, argv);
        c->wbuf.len = mark;
        c->nerr = nerr;
        if (!ok) {
            return "ERR The user executing the script can't run this command or subcommand";
        }
    }
    if (persist_hot(c->persist)->stale && !(cmd->flags & CMD_STALE)) {
        return "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";
    }
    if (c->env->topo != NULL && (cmd->flags & CMD_WRITE) &&
        (c->env->now_ms >=
             atomic_load_explicit(&c->env->node->cluster_lease_ms, memory_order_relaxed) ||
         c->env->topo_gen <
             atomic_load_explicit(&c->env->node->cluster_lease_topo, memory_order_acquire))) {
        return "CLUSTERDOWN The cluster is down"; /* (the dispatcher's write lease) */
    }
    const char *kerr = keys_refused(c, ss, cmd, argc, argv);
    if (kerr) {
        return kerr;
    }
    if ((cmd->flags & CMD_DENYOOM) && !(ss->flags & SF_ALLOW_OOM) &&
        evict_hot(c->env->evict)->armed && !evict_admit(c->shard)) {
        return "OOM command not allowed when used memory > 'maxmemory'.";
    }
    return NULL;
}

/* A reply whose conversion a Lua error interrupted leaves the output now. */
static void
drop_unsent(struct conn *c, struct script_shard *ss)
{
    if (rv_unlikely(ss->unsent_at != SIZE_MAX)) {
        c->wbuf.len = ss->unsent_at;
        ss->unsent_at = SIZE_MAX;
    }
}

/* The error table at the top is counted already (SCRIPT_ERR_COUNTED). */
static void
mark_counted(lua_State *L)
{
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, SCRIPT_ERR_COUNTED);
}

/* A call refused before it ran: counted now, in INFO errorstats (as Redis's
 * scriptCall, even when pcall catches it), and its table pushed. */
static bool
call_refusal(lua_State *L, struct conn *c, const char *why)
{
    if (c->nerr != 0) {
        script_count_errors(c);
    }
    size_t len = strcspn(why, " ");
    snprintf(c->errcode, sizeof(c->errcode), "%.*s", (int)len, why);
    c->nerr = 1;
    script_count_errors(c);
    push_error_table(L, why);
    mark_counted(L);
    return true;
}

/* Run argv as a command on the caller; pushes the converted reply. true when
 * the reply was an error (the table is on the stack, counted already: the
 * dispatcher counted the command's error as it does any command's). */
static bool
call_run(lua_State *L, struct conn *c, struct script_shard *ss, int argc, struct rv_str *argv)
{
    const struct cmd_spec *cmd = cmd_lookup(argv[0].p, argv[0].len);
    if (cmd && cmd->subs && argc < 2) {
        return call_refusal(L, c, "ERR Wrong number of args calling Redis command from script");
    }
    if (cmd && cmd->subs) {
        cmd = cmd_lookup_sub(cmd, argv[1].p, argv[1].len);
    }
    if (cmd == NULL) {
        return call_refusal(L, c, "ERR Unknown Redis command called from script");
    }
    const char *why = call_refused(c, ss, cmd, argc, argv);
    if (why) {
        c->env->cmdstats[cmd->id].rejected++; /* (INFO commandstats, as Redis's scriptCall) */
        return call_refusal(L, c, why);
    }
    drop_unsent(c, ss);
    size_t before = c->wbuf.len - c->wbuf.off;
    if ((cmd->flags & CMD_WRITE) && persist_hot(c->persist)->guard && persist_refuse_write(c)) {
        if (c->wbuf.len - c->wbuf.off == before) {
            c->env->cmdstats[cmd->id].rejected++;
            return call_refusal(L, c, "READONLY You can't write against a read only replica.");
        }
        if (c->nerr != 0) {
            script_count_errors(c); /* (the refusal's reply, converted below) */
        }
    } else {
        if (cmd->flags & CMD_WRITE) {
            ss->wrote = true;
        }
        uint8_t proto = c->proto;
        c->proto = (uint8_t)ss->resp;
        cmd_call(c, cmd, argc, argv);
        c->proto = proto;
    }
    size_t at = c->wbuf.off + before;
    const char *p = c->wbuf.data + at;
    const char *end = c->wbuf.data + c->wbuf.len;
    bool err = p < end && (*p == '-' || *p == '!');
    /* (a Lua error while converting, out of memory, skips the truncation:
     * unsent_at has the next call, or the script's end, drop the reply) */
    ss->unsent_at = at;
    script_conv_push(L, &p, end, 0);
    c->wbuf.len = at;
    ss->unsent_at = SIZE_MAX;
    if (err) {
        mark_counted(L);
    }
    return err;
}

static int
call_common(lua_State *L, bool raise)
{
    struct script_shard *ss = cur;
    int argc = lua_gettop(L);
    if (ss == NULL || ss->caller == NULL) {
        return luaL_error(L, "redis.call() is only available inside a script");
    }
    if (argc == 0) {
        const char *m = "ERR Please specify at least one argument for this redis lib call";
        if (raise) {
            return raise_err(L, m);
        }
        push_error_table(L, m);
        return 1;
    }
    struct rv_str stackv[16];
    char stackn[16][32];
    struct rv_str *argv = argc <= 16 ? stackv : rv_malloc((size_t)argc * sizeof(*argv));
    char(*nums)[32] = argc <= 16 ? stackn : rv_malloc((size_t)argc * 32);
    for (int i = 0; i < argc; i++) {
        int t = lua_type(L, i + 1);
        if (t == LUA_TNUMBER) {
            argv[i].len = num_text(lua_tonumber(L, i + 1), nums[i], 32);
            argv[i].p = nums[i];
        } else if (t == LUA_TSTRING) {
            argv[i].p = lua_tolstring(L, i + 1, &argv[i].len);
        } else {
            if (argc > 16) {
                rv_free(argv);
                rv_free(nums);
            }
            const char *m = "ERR Lua redis lib command arguments must be strings or integers";
            if (raise) {
                return raise_err(L, m);
            }
            push_error_table(L, m);
            return 1;
        }
    }
    bool err = call_run(L, ss->caller, ss, argc, argv);
    if (argc > 16) {
        rv_free(argv);
        rv_free(nums);
    }
    if (err && raise) { /* the error table (counted): located, raised */
        return raise_table_from(L, 1);
    }
    return 1;
}

static int
l_call(lua_State *L)
{
    return call_common(L, true);
}

static int
l_pcall(lua_State *L)
{
    return call_common(L, false);
}

/* ---------------------------------------------------------------- running */

/* The message handler: errors become {err=, source=, line=} as Redis 7's. */
static int
err_handler(lua_State *L)
{
    if (!lua_istable(L, 1)) {
        /* (as Redis: "ERR " .. tostring(err)) */
        const char *m = lua_tostring(L, 1);
        if (m != NULL) {
            lua_pushfstring(L, "ERR %s", m);
        } else if (lua_isnoneornil(L, 1) || lua_isboolean(L, 1)) {
            lua_pushfstring(L, "ERR %s",
                            lua_isboolean(L, 1) ? (lua_toboolean(L, 1) ? "true" : "false") : "nil");
        } else {
            lua_pushfstring(L, "ERR %s: %p", luaL_typename(L, 1), lua_topointer(L, 1));
        }
        push_error_table(L, lua_tostring(L, -1));
        lua_replace(L, 1);
        lua_settop(L, 1);
    }
    lua_pushstring(L, "source");
    lua_rawget(L, 1);
    bool located = !lua_isnil(L, -1);
    lua_settop(L, 1);
    if (!located) {
        locate(L, 1);
    }
    lua_settop(L, 1);
    return 1;
}

static void
hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    struct script_shard *ss = cur;
    if (ss == NULL || ss->caller == NULL) {
        return;
    }
    int64_t limit = ss->caller->env->cfg->node.busy_reply_threshold;
    if (!ss->busy && limit > 0 && script_mono_ms() - ss->start_ms >= limit) {
        ss->busy = true;
        log_warn("[shard %u] a script (%s) has run %lld ms: other clients get BUSY until it "
                 "ends or SCRIPT KILL",
                 ss->caller->env->id, ss->label, (long long)limit);
    }
    if (ss->busy && poll_fn) {
        poll_fn(ss->caller->shard, ss->caller);
    }
    if (ss->shutdown && ss->wrote) {
        /* as Redis: no save, so the script's open record is never written */
        log_warn("[shard %u] SHUTDOWN NOSAVE while a script that wrote runs: exiting now",
                 ss->caller->env->id);
        _exit(0);
    }
    if (ss->kill || ss->shutdown) {
        raise_err_from(L, "ERR Script killed by user with SCRIPT KILL...", 0);
    }
}

int
script_flag_of(const char *p, size_t n)
{
    static const struct {
        const char *name;
        int flag;
    } names[] = { { "no-writes", SF_NO_WRITES },
                  { "allow-oom", SF_ALLOW_OOM },
                  { "allow-stale", SF_ALLOW_STALE },
                  { "no-cluster", SF_NO_CLUSTER },
                  { "allow-cross-slot-keys", SF_CROSS_SLOT } };
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        if (strlen(names[k].name) == n && memcmp(names[k].name, p, n) == 0) {
            return names[k].flag;
        }
    }
    return 0;
}

/* The shebang line p[0..n) (after "#!"): its flags, or -1 with the error replied. */
static int
shebang_flags(struct conn *c, const char *p, size_t n)
{
    if (n < 3 || memcmp(p, "lua", 3) != 0 || (n > 3 && p[3] != ' ')) {
        reply_errf(c, "ERR Unexpected engine in script shebang: #!%.*s", (int)(n > 200 ? 200 : n),
                   p);
        return -1;
    }
    int flags = SF_SHEBANG;
    size_t i = 3;
    while (i < n) {
        while (i < n && p[i] == ' ') {
            i++;
        }
        size_t w = i;
        while (w < n && p[w] != ' ') {
            w++;
        }
        if (w == i) {
            break;
        }
        if (w - i < 6 || memcmp(p + i, "flags=", 6) != 0) {
            reply_errf(c, "ERR Unknown lua shebang option: %.*s", (int)(w - i > 200 ? 200 : w - i),
                       p + i);
            return -1;
        }
        for (size_t f = i + 6; f < w;) {
            size_t e = f;
            while (e < w && p[e] != ',') {
                e++;
            }
            int bit = script_flag_of(p + f, e - f);
            flags |= bit;
            if (e != f && bit == 0) {
                reply_errf(c, "ERR Unexpected flag in script shebang: %.*s",
                           (int)(e - f > 200 ? 200 : e - f), p + f);
                return -1;
            }
            f = e + 1;
        }
        i = w;
    }
    return flags;
}

/* "f_<sha>" (the function) or "x_<sha>" (its flags): the keys of the
 * registry's "scripts" table, built without lua_pushfstring's formatter since
 * every EVALSHA looks up both. */
static void
push_cache_key(lua_State *L, char kind, const char *sha)
{
    char k[2 + 40];
    size_t n = strnlen(sha, 40);
    k[0] = kind;
    k[1] = '_';
    memcpy(k + 2, sha, n);
    lua_pushlstring(L, k, 2 + n);
}

/* Compile body as f_<sha> into the cache. false with the error replied. */
static bool
compile(struct conn *c, struct script_shard *ss, const char *body, size_t n, const char *sha)
{
    lua_State *L = ss->L;
    const char *code = body;
    size_t len = n;
    int flags = 0;
    if (n >= 2 && body[0] == '#' && body[1] == '!') {
        /* the shebang line is left out, its newline kept: line numbers stay the source's */
        const char *eol = memchr(body, '\n', n);
        size_t ll = eol ? (size_t)(eol - body) : n;
        flags = shebang_flags(c, body + 2, ll - 2);
        if (flags < 0) {
            return false;
        }
        code = body + ll;
        len = n - ll;
    }
    if (script_src_load(L, code, len, "@user_script", SCRIPT_SRC_CHUNK) != 0) {
        reply_errf(c, "ERR Error compiling script (new function): %s", lua_tostring(L, -1));
        lua_pop(L, 1);
        return false;
    }
    lua_getfield(L, LUA_REGISTRYINDEX, "ENV");
    lua_setfenv(L, -2);
    lua_getfield(L, LUA_REGISTRYINDEX, "scripts");
    push_cache_key(L, 'f', sha);
    lua_pushvalue(L, -3);
    lua_rawset(L, -3);
    push_cache_key(L, 'x', sha);
    lua_pushinteger(L, flags);
    lua_rawset(L, -3);
    lua_pop(L, 2);
    ss->count++;
    ss->body_bytes += n;
    return true;
}

static int
cached_flags(struct script_shard *ss, const char *sha)
{
    lua_State *L = ss->L;
    lua_getfield(L, LUA_REGISTRYINDEX, "scripts");
    push_cache_key(L, 'x', sha);
    lua_rawget(L, -2);
    int flags = (int)lua_tointeger(L, -1);
    lua_pop(L, 2);
    return flags;
}

/* Push the cached f_<sha>, or nothing (false). */
static bool
cached(struct script_shard *ss, const char *sha)
{
    lua_State *L = ss->L;
    lua_getfield(L, LUA_REGISTRYINDEX, "scripts");
    push_cache_key(L, 'f', sha);
    lua_rawget(L, -2);
    lua_remove(L, -2);
    if (lua_isfunction(L, -1)) {
        return true;
    }
    lua_pop(L, 1);
    return false;
}

static void
push_array(lua_State *L, struct rv_str *v, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushlstring(L, v[i].p, v[i].len);
        lua_rawseti(L, -2, i + 1);
    }
}

static void
set_array(lua_State *L, const char *name, struct rv_str *v, int n)
{
    push_array(L, v, n);
    lua_getfield(L, LUA_REGISTRYINDEX, "G");
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, name);
    lua_pop(L, 2);
}

/* The reply to a script that raised: Redis's "<error> script: <name>, on
 * <source>:<line>.", without the location when it has none. */
static void
reply_script_error(struct conn *c, lua_State *L, const char *sha)
{
    char out[1024];
    int n;
    bool counted = false;
    if (lua_istable(L, -1)) {
        /* (raw reads: a metamethod would run unprotected here) */
        const char *msg = "ERR unknown error";
        static const char *const keys[] = { "err", "source", "line", SCRIPT_ERR_COUNTED };
        for (int i = 0; i < 4; i++) {
            lua_pushstring(L, keys[i]);
            lua_rawget(L, -2 - i);
        }
        if (lua_type(L, -4) == LUA_TSTRING || lua_type(L, -4) == LUA_TNUMBER) {
            msg = lua_tostring(L, -4);
        }
        counted = lua_toboolean(L, -1);
        const char *src = lua_tostring(L, -3);
        if (src && lua_isnumber(L, -2)) {
            n = snprintf(out, sizeof(out), "%s script: %s, on %s:%d.", msg, sha, src,
                         (int)lua_tointeger(L, -2));
        } else {
            n = snprintf(out, sizeof(out), "%s script: %s", msg, sha);
        }
        lua_pop(L, 4);
    } else {
        const char *m = lua_tostring(L, -1);
        n = snprintf(out, sizeof(out), "ERR %s script: %s", m ? m : "unknown error", sha);
    }
    script_conv_error(c, counted, out, n < 0 ? 0 : (size_t)n);
}

/* err_handler as a function value, made once per state and kept in the
 * registry: lua_pushcfunction allocates a new closure at every call. */
static void
push_err_handler(lua_State *L)
{
    static const char key = 0;
    lua_pushlightuserdata(L, (void *)&key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    if (!lua_isfunction(L, -1)) {
        lua_pop(L, 1);
        lua_pushcfunction(L, err_handler);
        lua_pushlightuserdata(L, (void *)&key);
        lua_pushvalue(L, -2);
        lua_rawset(L, LUA_REGISTRYINDEX);
    }
}

/* Run the function at the top of the stack with KEYS/ARGV and reply. */
static void
run(struct conn *c, struct script_shard *ss, lua_State *L, const char *sha, struct rv_str *keys,
    int nkeys, struct rv_str *args, int nargs, bool ro, bool fcall)
{
    int base = lua_gettop(L); /* the function */
    push_err_handler(L);
    lua_insert(L, base);
    if (fcall) { /* a function gets them as its arguments */
        push_array(L, keys, nkeys);
        push_array(L, args, nargs);
    } else {
        set_array(L, "KEYS", keys, nkeys);
        set_array(L, "ARGV", args, nargs);
    }

    size_t ln = strnlen(sha, sizeof(ss->label) - 1);
    memcpy(ss->label, sha, ln);
    ss->label[ln] = '\0';
    ss->fcall = fcall;
    ss->caller = c;
    ss->resp = 2;
    ss->ro = ro;
    ss->wrote = ss->busy = ss->kill = ss->shutdown = false;
    ss->slot = -1;
    ss->start_ms = script_mono_ms();
    if (nkeys > 0 && (shard_multi(c->shard) || c->env->topo != NULL)) {
        ss->slot = (int)slot_of(keys[0].p, keys[0].len);
    }
    uint32_t saved = c->flags & (CONN_REPLY_OFF | CONN_REPLY_SKIP | CONN_REPLY_SKIP_NEXT);
    bool in_exec = (c->flags & CONN_IN_EXEC) != 0; /* EVAL inside MULTI: EXEC's record */
    c->flags = (c->flags & ~saved) | CONN_IN_EXEC | CONN_IN_SCRIPT;
    const struct cmd_spec *last = c->last_cmd;
    uint32_t db = c->db; /* (as Redis 7: a SELECT in the script is the script's own) */
    cur = ss;
    lua_sethook(L, hook, LUA_MASKCOUNT, HOOK_EVERY);
    ss->unsent_at = SIZE_MAX;
    int rc = lua_pcall(L, fcall ? 2 : 0, 1, base);
    lua_sethook(L, NULL, 0, 0);
    drop_unsent(c, ss);
    cur = NULL;
    ss->caller = NULL;
    c->last_cmd = last;
    c->db = db;
    c->flags = (c->flags & ~CONN_IN_SCRIPT) | saved;
    if (!in_exec) {
        c->flags &= ~CONN_IN_EXEC;
        persist_exec_end(c); /* the script's writes: one record */
    }
    if (rc != 0) {
        reply_script_error(c, L, sha);
    } else {
        script_conv_write(c, L, 0);
    }
    lua_settop(L, base - 1);
    /* A step every 50 scripts; a full collection when the heap doubled since the
     * last one (a script's garbage is charged to the shard until collected). */
    int kb = lua_gc(L, LUA_GCCOUNT, 0);
    if (kb > 2 * ss->gc_kb + 1024) {
        lua_gc(L, LUA_GCCOLLECT, 0);
        ss->gc_kb = lua_gc(L, LUA_GCCOUNT, 0);
    } else if (++ss->runs % 50 == 0) { /* (as Redis: a step every 50 scripts) */
        lua_gc(L, LUA_GCSTEP, 1);
    }
}

static bool
parse_numkeys(struct conn *c, int argc, struct rv_str *argv, int64_t *nk)
{
    if (!cmd_arg_int(argv[2], nk)) {
        reply_errf(c, "ERR value is not an integer or out of range");
        return false;
    }
    if (*nk < 0) {
        reply_errf(c, "ERR Number of keys can't be negative");
        return false;
    }
    if (*nk > argc - 3) {
        reply_errf(c, "ERR Number of keys can't be greater than number of args");
        return false;
    }
    return true;
}

void
script_eval(struct conn *c, int argc, struct rv_str *argv, bool by_sha, bool ro)
{
    int64_t nk;
    if (!parse_numkeys(c, argc, argv, &nk)) {
        return;
    }
    struct script_shard *ss = script_shard_get(c->shard);
    if (ss == NULL) {
        reply_errf(c, "ERR could not start the Lua engine");
        return;
    }
    if (ss->caller != NULL) {
        reply_errf(c, "BUSY Redis is busy running a script. You can only call SCRIPT KILL or "
                      "SHUTDOWN NOSAVE.");
        return;
    }
    char sha[41];
    if (by_sha) {
        size_t n = argv[1].len < 40 ? argv[1].len : 40;
        for (size_t i = 0; i < n; i++) {
            char ch = argv[1].p[i];
            sha[i] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
        }
        sha[n] = '\0';
        if (argv[1].len != 40 || !cached(ss, sha)) {
            reply_errf(c, "NOSCRIPT No matching script. Please use EVAL.");
            return;
        }
    } else {
        script_sha1hex(argv[1].p, argv[1].len, sha);
        if (!cached(ss, sha)) {
            if (!compile(c, ss, argv[1].p, argv[1].len, sha)) {
                return;
            }
            cached(ss, sha);
        }
    }
    script_start(c, ss, ss->L, sha, cached_flags(ss, sha), ro, false, argv + 3, (int)nk,
                 argv + 3 + nk, argc - 3 - (int)nk);
}

void
script_start(struct conn *c, struct script_shard *ss, lua_State *L, const char *label, int flags,
             bool ro, bool fcall, struct rv_str *keys, int nkeys, struct rv_str *args, int nargs)
{
    if (ro && (flags & SF_SHEBANG) && !(flags & SF_NO_WRITES)) {
        lua_pop(L, 1);
        reply_errf(c, "ERR Can not execute a script with write flag using *_ro command.");
        return;
    }
    if ((flags & SF_NO_CLUSTER) && (shard_multi(c->shard) || c->env->topo != NULL)) {
        lua_pop(L, 1);
        reply_errf(c, "ERR Can not run script on cluster, 'no-cluster' flag is set.");
        return;
    }
    ro = ro || (flags & SF_NO_WRITES);
    /* During a FAILOVER a script that may write waits like a write (its writes,
     * inside the script, could not pause): parsed again once it is over. */
    struct repl *r = persist_repl(c->shard);
    if (!ro && !(c->flags & CONN_IN_EXEC) && persist_hot(c->persist)->guard && r != NULL &&
        repl_failover_active(r) && !repl_is_replica(r) && persist_refuse_write(c)) {
        lua_pop(L, 1);
        return;
    }
    ss->flags = flags;
    run(c, ss, L, label, keys, nkeys, args, nargs, ro, fcall);
}

void
script_load(struct conn *c, struct rv_str body)
{
    struct script_shard *ss = script_shard_get(c->shard);
    if (ss == NULL) {
        reply_errf(c, "ERR could not start the Lua engine");
        return;
    }
    char sha[41];
    script_sha1hex(body.p, body.len, sha);
    if (cached(ss, sha)) {
        lua_pop(ss->L, 1);
    } else if (!compile(c, ss, body.p, body.len, sha)) {
        return;
    }
    reply_bulk(c, sha, 40);
}

bool
script_exists(struct conn *c, struct rv_str sha)
{
    struct script_shard *ss = c->env->scripts;
    if (ss == NULL || sha.len != 40) {
        return false;
    }
    char low[41];
    for (size_t i = 0; i < 40; i++) {
        char ch = sha.p[i];
        low[i] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
    }
    low[40] = '\0';
    if (cached(ss, low)) {
        lua_pop(ss->L, 1);
        return true;
    }
    return false;
}

void
script_flush(struct conn *c)
{
    struct script_shard *ss = c->env->scripts;
    if (ss == NULL || ss->caller != NULL) {
        return;
    }
    lua_State *L = script_engine_new();
    if (L == NULL) {
        return;
    }
    lua_close(ss->L);
    ss->L = L;
    ss->count = 0;
    ss->gc_kb = 0;
    ss->body_bytes = 0;
}

/* SCRIPT KILL (eval) or FUNCTION KILL: each stops only its own kind. */
static void
kill_common(struct conn *c, bool eval)
{
    struct script_shard *ss = c->env->scripts;
    if (ss == NULL || ss->caller == NULL) {
        reply_errf(c, "NOTBUSY No scripts in execution right now.");
    } else if (ss->wrote) {
        reply_errf(c, "UNKILLABLE Sorry the script already executed write commands against the "
                      "dataset. You can either wait the script termination or kill the server in "
                      "a hard way using the SHUTDOWN NOSAVE command.");
    } else if (eval && ss->fcall) {
        reply_errf(c, "BUSY Redis is busy running a script. You can only call FUNCTION KILL or "
                      "SHUTDOWN NOSAVE.");
    } else if (!eval && !ss->fcall) {
        reply_errf(c, "BUSY Redis is busy running a script. You can only call SCRIPT KILL or "
                      "SHUTDOWN NOSAVE.");
    } else {
        ss->kill = true;
        reply_ok(c);
    }
}

void
script_kill(struct conn *c)
{
    kill_common(c, true);
}

void
script_kill_function(struct conn *c)
{
    kill_common(c, false);
}

bool
script_busy_fcall(const struct shard *s)
{
    const struct script_shard *ss = shard_env(s)->scripts;
    return ss != NULL && ss->fcall;
}

bool
script_busy_allows(struct conn *c, const struct cmd_spec *cmd, int argc, struct rv_str *argv)
{
    struct script_shard *ss = c->env->scripts;
    if (ss == NULL || strcmp(cmd->name, "shutdown") != 0) {
        return false;
    }
    for (int i = 1; i < argc; i++) {
        if (cmd_arg_is(argv[i], "nosave")) {
            ss->shutdown = true;
            return true;
        }
    }
    return false;
}

bool
script_busy(const struct shard *s)
{
    const struct script_shard *ss = shard_env(s)->scripts;
    return ss != NULL && ss->busy && ss->caller != NULL;
}

void
script_info_memory(struct shard *s, struct buf *b)
{
    struct script_shard *ss = shard_env(s)->scripts;
    long long vm = ss ? (long long)lua_gc(ss->L, LUA_GCCOUNT, 0) * 1024 +
                            lua_gc(ss->L, LUA_GCCOUNTB, 0)
                      : 0;
    long long scripts = ss ? (long long)ss->body_bytes : 0;
    long long n = ss ? (long long)ss->count : 0;
    buf_appendf(
        b,
        "used_memory_vm_eval:%lld\r\nused_memory_lua:%lld\r\nused_memory_lua_human:%.2fK\r\n"
        "used_memory_scripts_eval:%lld\r\nnumber_of_cached_scripts:%lld\r\n"
        "used_memory_vm_total:%lld\r\nused_memory_scripts:%lld\r\n",
        vm, vm, (double)vm / 1024.0, scripts, n, vm + fn_vm_bytes(ss), scripts);
    fn_info_memory(ss, b);
}
