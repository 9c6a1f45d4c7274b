/* node/commands/function.c: FUNCTION libraries and FCALL (function.h,
 * docs/scripting.md "Functions").
 *
 * Each shard keeps the libraries in a Lua state of their own (not EVAL's, so
 * SCRIPT FLUSH leaves them), created on first use. A library's code runs
 * once at load with a globals table holding only the load-time `redis`
 * (register_function, log, the constants), as Redis 7.0 does; the functions
 * it registers run later with the full sandbox. Both views go through one
 * proxy environment whose reads follow `loading`. */
#include "node/commands/function.h"
#include "node/commands/script_int.h"
#include "node/commands/script_src.h"

#include "base/buf.h"
#include "base/glob.h"
#include "base/log.h"
#include "base/mem.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "node/core/reply.h"
#include "node/core/shard.h"
#include "wal/crc32c.h"

#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <string.h>

#define LOAD_TIMEOUT_MS 500 /* as Redis: a library's load-time code, at most */
#define LOAD_HOOK_EVERY 100000

struct fn_func {
    char *name;
    char *desc; /* NULL: none */
    int flags;  /* SF_* */
    struct fn_lib *lib;
    struct fn_func *next;
};

struct fn_lib {
    char *name;
    char *code;
    size_t len;
    struct fn_func *funcs; /* in registration order */
    int nfuncs;
    struct fn_lib *next;
};

struct fn_shard {
    lua_State *L;
    struct fn_lib *libs; /* in load order */
    int64_t nlibs, nfuncs;
    size_t code_bytes;
    /* the running FCALL (FUNCTION STATS) */
    const struct fn_func *running;
    int run_argc;
    struct rv_str *run_argv;
    int64_t run_start_ms;
};

/* The library being loaded (register_function adds to it) and its clock. */
struct fn_load {
    struct fn_lib *lib;
    struct fn_func **tail;
    int64_t start_ms;
    bool timeout;
};
static _Thread_local struct fn_load *loading;

/* ---------------------------------------------------------------- Lua side */

static int
raise_table(lua_State *L, const char *msg)
{
    lua_createtable(L, 0, 1);
    lua_pushstring(L, msg);
    lua_setfield(L, -2, "err");
    return lua_error(L);
}

static int
env_newindex(lua_State *L)
{
    return luaL_error(L, "Attempt to modify a readonly table");
}

/* The libraries' environment: the load-time globals while loading, else the
 * sandbox's globals (both read-only views that refuse missing names). */
static int
env_index(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, loading ? "fn_load_G" : "G");
    lua_pushvalue(L, 2);
    lua_rawget(L, -2);
    if (lua_isnil(L, -1)) {
        const char *k = lua_tostring(L, 2);
        return luaL_error(L, "Script attempted to access nonexistent global variable '%s'",
                          k ? k : "?");
    }
    return 1;
}

static bool
valid_name(const char *p, size_t n)
{
    if (n == 0) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_')) {
            return false;
        }
    }
    return true;
}

static const char *const NAME_RULE = "Library names can only contain letters, numbers, or "
                                     "underscores(_) and must be at least one character long";

/* The table at idx as flags; -1 with msg set when not valid. */
static int
read_flags(lua_State *L, int idx, const char **msg)
{
    if (!lua_istable(L, idx)) {
        *msg = "ERR flags argument to redis.register_function must be a table representing "
               "function flags";
        return -1;
    }
    int flags = SF_SHEBANG;
    size_t n = lua_objlen(L, idx);
    for (size_t i = 1; i <= n; i++) {
        lua_rawgeti(L, idx, (int)i);
        const char *f = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        int bit = f ? script_flag_of(f, strlen(f)) : 0;
        lua_pop(L, 1);
        if (bit == 0) {
            *msg = "ERR unknown flag given";
            return -1;
        }
        flags |= bit;
    }
    return flags;
}

/* register_function's named form: leaves name at -2 and callback at -1. */
static int
named_args(lua_State *L, const char **desc, int *flags)
{
    int name = 0, cb = 0;
    const char *msg = NULL;
    lua_pushnil(L);
    while (msg == NULL && lua_next(L, 1) != 0) {
        int v = lua_gettop(L);
        const char *k = lua_type(L, v - 1) == LUA_TSTRING ? lua_tostring(L, v - 1) : NULL;
        if (lua_type(L, v - 1) != LUA_TSTRING && lua_type(L, v - 1) != LUA_TNUMBER) {
            msg = "ERR named argument key given to redis.register_function is not a string";
        } else if (k && strcmp(k, "function_name") == 0) {
            if (!lua_isstring(L, v)) {
                msg = "ERR function_name argument given to redis.register_function must be a "
                      "string";
            }
            name = v;
        } else if (k && strcmp(k, "description") == 0) {
            if (!lua_isstring(L, v)) {
                msg = "ERR description argument given to redis.register_function must be a "
                      "string";
            }
            *desc = lua_tostring(L, v);
        } else if (k && strcmp(k, "callback") == 0) {
            if (!lua_isfunction(L, v)) {
                msg = "ERR callback argument given to redis.register_function must be a function";
            }
            cb = v;
        } else if (k && strcmp(k, "flags") == 0) {
            *flags = read_flags(L, v, &msg);
        } else {
            msg = "ERR unknown argument given to redis.register_function";
        }
        lua_pushvalue(L, v - 1); /* the key, for lua_next; the value stays where it is */
    }
    if (msg == NULL && name == 0) {
        msg = "ERR redis.register_function must get a function name argument";
    }
    if (msg == NULL && cb == 0) {
        msg = "ERR redis.register_function must get a callback argument";
    }
    if (msg != NULL) {
        return raise_table(L, msg);
    }
    lua_pushvalue(L, name);
    lua_pushvalue(L, cb);
    return 0;
}

/* redis.register_function(name, callback) or redis.register_function{...}. */
static int
l_register_function(lua_State *L)
{
    struct fn_load *ld = loading;
    if (ld == NULL) {
        return raise_table(L, "ERR redis.register_function can only be called on FUNCTION LOAD "
                              "command");
    }
    int argc = lua_gettop(L);
    const char *desc = NULL;
    int flags = SF_SHEBANG;
    if (argc == 1) {
        if (!lua_istable(L, 1)) {
            return raise_table(L, "ERR calling redis.register_function with a single argument is "
                                  "only applicable to Lua table (representing named arguments).");
        }
        named_args(L, &desc, &flags);
    } else if (argc == 2) {
        if (!lua_isstring(L, 1)) {
            return raise_table(L, "ERR first argument to redis.register_function must be a string");
        }
        if (!lua_isfunction(L, 2)) {
            return raise_table(L,
                               "ERR second argument to redis.register_function must be a function");
        }
        lua_pushvalue(L, 1);
        lua_pushvalue(L, 2);
    } else {
        return raise_table(L, "ERR wrong number of arguments to redis.register_function");
    }
    size_t n;
    const char *name = lua_tolstring(L, -2, &n);
    if (!valid_name(name, n)) {
        char m[200];
        snprintf(m, sizeof(m), "ERR %s", NAME_RULE);
        return raise_table(L, m);
    }
    lua_getfield(L, LUA_REGISTRYINDEX, "fn_new"); /* this load's functions by name */
    lua_pushvalue(L, -3);
    lua_rawget(L, -2);
    if (!lua_isnil(L, -1)) {
        return raise_table(L, "ERR Function already exists in the library");
    }
    lua_pop(L, 1);
    lua_pushvalue(L, -3);
    lua_pushvalue(L, -3);
    lua_rawset(L, -3);
    struct fn_func *f = rv_calloc(1, sizeof(*f));
    f->name = rv_strndup(name, n);
    f->desc = desc ? rv_strndup(desc, strlen(desc)) : NULL;
    f->flags = flags;
    f->lib = ld->lib;
    *ld->tail = f;
    ld->tail = &f->next;
    ld->lib->nfuncs++;
    return 0;
}

static void
load_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    if (loading && script_mono_ms() - loading->start_ms >= LOAD_TIMEOUT_MS) {
        loading->timeout = true;
        raise_table(L, "ERR FUNCTION LOAD timeout");
    }
}

/* The registry's tables of a fresh function state. */
static lua_State *
state_new(void)
{
    lua_State *L = script_engine_new();
    if (L == NULL) {
        return NULL;
    }
    lua_getfield(L, LUA_GLOBALSINDEX, "redis"); /* (the read-only proxy: read through it) */
    lua_newtable(L);                            /* the load-time redis */
    lua_pushcfunction(L, l_register_function);
    lua_setfield(L, -2, "register_function");
    static const char *const copied[] = {
        "log",         "LOG_DEBUG",     "LOG_VERBOSE",       "LOG_NOTICE",
        "LOG_WARNING", "REDIS_VERSION", "REDIS_VERSION_NUM", NULL
    };
    for (int i = 0; copied[i]; i++) {
        lua_getfield(L, -2, copied[i]);
        lua_setfield(L, -2, copied[i]);
    }
    script_make_readonly(L, script_g_index);
    lua_createtable(L, 0, 1); /* the load-time globals (read through env_index only) */
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "redis");
    lua_setfield(L, LUA_REGISTRYINDEX, "fn_load_G");
    lua_pop(L, 2);
    /* the libraries' environment: empty, reads through env_index */
    lua_newtable(L);
    lua_createtable(L, 0, 3);
    lua_pushcfunction(L, env_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, env_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, "fn_env");
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "fn_f"); /* function name -> Lua function */
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "fn_p"); /* function name -> its struct fn_func */
    return L;
}

static void
lib_free(struct fn_lib *lib)
{
    struct fn_func *f = lib->funcs;
    while (f) {
        struct fn_func *n = f->next;
        rv_free(f->name);
        rv_free(f->desc);
        rv_free(f);
        f = n;
    }
    rv_free(lib->name);
    rv_free(lib->code);
    rv_free(lib);
}

static struct fn_shard *
fn_get(struct conn *c, struct script_shard **ssp)
{
    struct script_shard *ss = script_shard_get(c->shard);
    if (ss == NULL) {
        return NULL;
    }
    if (ss->fn == NULL) {
        struct fn_shard *fs = rv_calloc(1, sizeof(*fs));
        fs->L = state_new();
        if (fs->L == NULL) {
            rv_free(fs);
            return NULL;
        }
        ss->fn = fs;
    }
    if (ssp) {
        *ssp = ss;
    }
    return ss->fn;
}

static struct fn_lib *
lib_find(struct fn_shard *fs, const char *name, size_t n, struct fn_lib ***prevp)
{
    struct fn_lib **pp = &fs->libs;
    for (; *pp; pp = &(*pp)->next) {
        if (strlen((*pp)->name) == n && memcmp((*pp)->name, name, n) == 0) {
            if (prevp) {
                *prevp = pp;
            }
            return *pp;
        }
    }
    return NULL;
}

/* Unlink lib and forget its functions (the caller frees it). */
static void
lib_remove(struct fn_shard *fs, struct fn_lib *lib)
{
    struct fn_lib **pp = NULL;
    if (lib_find(fs, lib->name, strlen(lib->name), &pp) == NULL) {
        return;
    }
    *pp = lib->next;
    lua_State *L = fs->L;
    lua_getfield(L, LUA_REGISTRYINDEX, "fn_f");
    lua_getfield(L, LUA_REGISTRYINDEX, "fn_p");
    for (struct fn_func *f = lib->funcs; f; f = f->next) {
        lua_pushnil(L);
        lua_setfield(L, -3, f->name);
        lua_pushnil(L);
        lua_setfield(L, -2, f->name);
    }
    lua_pop(L, 2);
    fs->nlibs--;
    fs->nfuncs -= lib->nfuncs;
    fs->code_bytes -= lib->len;
}

static void
flush_all(struct fn_shard *fs)
{
    while (fs->libs) {
        struct fn_lib *lib = fs->libs;
        lib_remove(fs, lib);
        lib_free(lib);
    }
    lua_State *L = state_new(); /* a fresh state gives the old one's memory back */
    if (L != NULL) {
        lua_close(fs->L);
        fs->L = L;
    }
}

/* The function named name[0..n), or NULL. */
static const struct fn_func *
func_find(struct fn_shard *fs, const char *name, size_t n)
{
    lua_State *L = fs->L;
    lua_getfield(L, LUA_REGISTRYINDEX, "fn_p");
    lua_pushlstring(L, name, n);
    lua_rawget(L, -2);
    const struct fn_func *f = lua_touserdata(L, -1);
    lua_pop(L, 2);
    return f;
}

/* ---------------------------------------------------------------- loading */

/* "#!lua name=<lib>\n...": the library's name; 0 or -1 with err. */
static int
parse_meta(const char *code, size_t len, char *name, size_t cap, char *err, size_t errsz)
{
    if (len < 2 || code[0] != '#' || code[1] != '!') {
        snprintf(err, errsz, "ERR Missing library metadata");
        return -1;
    }
    const char *eol = memchr(code, '\n', len);
    if (eol == NULL) {
        snprintf(err, errsz, "ERR Invalid library metadata");
        return -1;
    }
    const char *p = code + 2, *end = eol;
    const char *w = p;
    while (w < end && *w != ' ') {
        w++;
    }
    if (w - p != 3 || memcmp(p, "lua", 3) != 0) {
        snprintf(err, errsz, "ERR Engine '%.*s' not found", (int)(w - p > 100 ? 100 : w - p), p);
        return -1;
    }
    bool have = false;
    for (p = w; p < end;) {
        while (p < end && *p == ' ') {
            p++;
        }
        if (p == end) {
            break;
        }
        const char *e = p;
        while (e < end && *e != ' ') {
            e++;
        }
        if (e - p < 5 || memcmp(p, "name=", 5) != 0) {
            snprintf(err, errsz, "ERR Invalid metadata value given: %.*s",
                     (int)(e - p > 100 ? 100 : e - p), p);
            return -1;
        }
        if (have) {
            snprintf(err, errsz,
                     "ERR Invalid metadata value, name argument was given multiple "
                     "times");
            return -1;
        }
        size_t n = (size_t)(e - p - 5);
        if (!valid_name(p + 5, n) || n >= cap) {
            snprintf(err, errsz, "ERR %s", NAME_RULE);
            return -1;
        }
        memcpy(name, p + 5, n);
        name[n] = '\0';
        have = true;
        p = e;
    }
    if (!have) {
        snprintf(err, errsz, "ERR Library name was not given");
        return -1;
    }
    return 0;
}

/* Run the library's code; on success its functions are in lib (and in the
 * registry's fn_new). 0 or -1 with err. */
static int
run_code(struct fn_shard *fs, struct fn_lib *lib, char *err, size_t errsz)
{
    lua_State *L = fs->L;
    const char *eol = memchr(lib->code, '\n', lib->len); /* (parse_meta found it) */
    size_t skip = (size_t)(eol - lib->code);             /* its newline kept: lines count */
    if (script_src_load(L, lib->code + skip, lib->len - skip, "@user_function",
                        SCRIPT_SRC_CALLBACKS) != 0) {
        snprintf(err, errsz, "ERR Error compiling function: %s", lua_tostring(L, -1));
        lua_pop(L, 1);
        return -1;
    }
    lua_getfield(L, LUA_REGISTRYINDEX, "fn_env");
    lua_setfenv(L, -2);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "fn_new");
    struct fn_load ld = { lib, &lib->funcs, script_mono_ms(), false };
    loading = &ld;
    lua_sethook(L, load_hook, LUA_MASKCOUNT, LOAD_HOOK_EVERY);
    int rc = lua_pcall(L, 0, 0, 0);
    lua_sethook(L, NULL, 0, 0);
    loading = NULL;
    if (rc != 0) {
        const char *m = NULL;
        if (lua_istable(L, -1)) {
            lua_getfield(L, -1, "err");
            m = lua_tostring(L, -1);
            snprintf(err, errsz, "ERR Error registering functions: %s", m ? m : "ERR unknown");
            lua_pop(L, 1);
        } else {
            m = lua_tostring(L, -1);
            snprintf(err, errsz, "ERR Error registering functions: ERR %s", m ? m : "unknown");
        }
        lua_pop(L, 1);
        return -1;
    }
    if (lib->nfuncs == 0) {
        snprintf(err, errsz, "ERR No functions registered");
        return -1;
    }
    return 0;
}

/* Load one library (REPLACE: over one of the same name). Atomic: on error
 * nothing changed. 0 (name set) or -1 with err. */
static int
load_lib(struct fn_shard *fs, const char *code, size_t len, bool replace, char *name, size_t cap,
         char *err, size_t errsz)
{
    if (parse_meta(code, len, name, cap, err, errsz) != 0) {
        return -1;
    }
    struct fn_lib *old = lib_find(fs, name, strlen(name), NULL);
    if (old != NULL && !replace) {
        snprintf(err, errsz, "ERR Library '%s' already exists", name);
        return -1;
    }
    struct fn_lib *lib = rv_calloc(1, sizeof(*lib));
    lib->name = rv_strndup(name, strlen(name));
    lib->code = rv_malloc(len + 1);
    memcpy(lib->code, code, len);
    lib->code[len] = '\0';
    lib->len = len;
    if (run_code(fs, lib, err, errsz) != 0) {
        lib_free(lib);
        return -1;
    }
    lua_State *L = fs->L;
    for (struct fn_func *f = lib->funcs; f; f = f->next) {
        const struct fn_func *have = func_find(fs, f->name, strlen(f->name));
        if (have != NULL && have->lib != old) {
            snprintf(err, errsz, "ERR Function %s already exists", f->name);
            lib_free(lib);
            return -1;
        }
    }
    if (old != NULL) {
        lib_remove(fs, old);
        lib_free(old);
    }
    lua_getfield(L, LUA_REGISTRYINDEX, "fn_f");
    lua_getfield(L, LUA_REGISTRYINDEX, "fn_p");
    lua_getfield(L, LUA_REGISTRYINDEX, "fn_new");
    for (struct fn_func *f = lib->funcs; f; f = f->next) {
        lua_getfield(L, -1, f->name);
        lua_setfield(L, -4, f->name);
        lua_pushlightuserdata(L, f);
        lua_setfield(L, -3, f->name);
    }
    lua_pop(L, 3);
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "fn_new");
    struct fn_lib **tail = &fs->libs;
    while (*tail) {
        tail = &(*tail)->next;
    }
    *tail = lib;
    fs->nlibs++;
    fs->nfuncs += lib->nfuncs;
    fs->code_bytes += len;
    return 0;
}

int
fn_load(struct conn *c, const char *code, size_t len, bool replace, char *name, size_t cap,
        char *err, size_t errsz)
{
    struct fn_shard *fs = fn_get(c, NULL);
    if (fs == NULL) {
        snprintf(err, errsz, "ERR could not start the Lua engine");
        return -1;
    }
    return load_lib(fs, code, len, replace, name, cap, err, errsz);
}

bool
fn_delete(struct conn *c, struct rv_str name)
{
    struct fn_shard *fs = fn_get(c, NULL);
    struct fn_lib *lib = fs ? lib_find(fs, name.p, name.len, NULL) : NULL;
    if (lib == NULL) {
        return false;
    }
    lib_remove(fs, lib);
    lib_free(lib);
    return true;
}

void
fn_flush(struct conn *c)
{
    struct fn_shard *fs = fn_get(c, NULL);
    if (fs != NULL) {
        flush_all(fs);
    }
}

/* ---------------------------------------------------------------- LIST, STATS */

static void
list_lib(struct conn *c, const struct fn_lib *lib, bool withcode)
{
    reply_map(c, withcode ? 4 : 3);
    reply_bulk_cstr(c, "library_name");
    reply_bulk_cstr(c, lib->name);
    reply_bulk_cstr(c, "engine");
    reply_bulk_cstr(c, "LUA");
    reply_bulk_cstr(c, "functions");
    reply_array(c, (size_t)lib->nfuncs);
    static const struct {
        const char *name;
        int flag;
    } names[] = { { "no-writes", SF_NO_WRITES },
                  { "allow-oom", SF_ALLOW_OOM },
                  { "allow-stale", SF_ALLOW_STALE },
                  { "no-cluster", SF_NO_CLUSTER },
                  { "allow-cross-slot-keys", SF_CROSS_SLOT } };
    for (const struct fn_func *f = lib->funcs; f; f = f->next) {
        reply_map(c, 3);
        reply_bulk_cstr(c, "name");
        reply_bulk_cstr(c, f->name);
        reply_bulk_cstr(c, "description");
        if (f->desc) {
            reply_bulk_cstr(c, f->desc);
        } else {
            reply_null(c);
        }
        reply_bulk_cstr(c, "flags");
        size_t nf = 0;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            nf += (f->flags & names[i].flag) != 0;
        }
        reply_set(c, nf);
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            if (f->flags & names[i].flag) {
                reply_simple(c, names[i].name); /* (as Redis: status strings) */
            }
        }
    }
    if (withcode) {
        reply_bulk_cstr(c, "library_code");
        reply_bulk(c, lib->code, lib->len);
    }
}

void
fn_list(struct conn *c, const struct rv_str *pat, bool withcode)
{
    struct fn_shard *fs = fn_get(c, NULL);
    size_t n = 0;
    for (const struct fn_lib *lib = fs ? fs->libs : NULL; lib; lib = lib->next) {
        n += pat == NULL || glob_match(pat->p, pat->len, lib->name, strlen(lib->name), false);
    }
    reply_array(c, n);
    for (const struct fn_lib *lib = fs ? fs->libs : NULL; lib; lib = lib->next) {
        if (pat == NULL || glob_match(pat->p, pat->len, lib->name, strlen(lib->name), false)) {
            list_lib(c, lib, withcode);
        }
    }
}

void
fn_stats(struct conn *c)
{
    struct script_shard *ss = NULL;
    struct fn_shard *fs = fn_get(c, &ss);
    reply_map(c, 2);
    reply_bulk_cstr(c, "running_script");
    if (fs != NULL && fs->running != NULL && ss->caller != NULL) {
        reply_map(c, 3);
        reply_bulk_cstr(c, "name");
        reply_bulk_cstr(c, fs->running->name);
        reply_bulk_cstr(c, "command");
        reply_array(c, (size_t)fs->run_argc);
        for (int i = 0; i < fs->run_argc; i++) {
            reply_bulk(c, fs->run_argv[i].p, fs->run_argv[i].len);
        }
        reply_bulk_cstr(c, "duration_ms");
        reply_int(c, script_mono_ms() - fs->run_start_ms);
    } else {
        reply_null(c);
    }
    reply_bulk_cstr(c, "engines");
    reply_map(c, 1);
    reply_bulk_cstr(c, "LUA");
    reply_map(c, 2);
    reply_bulk_cstr(c, "libraries_count");
    reply_int(c, fs ? fs->nlibs : 0);
    reply_bulk_cstr(c, "functions_count");
    reply_int(c, fs ? fs->nfuncs : 0);
}

/* ---------------------------------------------------------------- DUMP, RESTORE */

/* Our payload (not Redis's): "RVFN", a version byte, the library count
 * (u32 LE), each library's code as u32 LE length and bytes, then the CRC32C
 * of all that (u32 LE). */
#define PAYLOAD_MAGIC "RVFN"
#define PAYLOAD_VERSION 1

static void
put_u32(struct buf *b, uint32_t v)
{
    unsigned char x[4] = { (unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                           (unsigned char)(v >> 24) };
    buf_append(b, x, 4);
}

static uint32_t
get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void
dump_into(struct fn_shard *fs, struct buf *b)
{
    buf_append(b, PAYLOAD_MAGIC, 4);
    unsigned char v = PAYLOAD_VERSION;
    buf_append(b, &v, 1);
    put_u32(b, (uint32_t)(fs ? fs->nlibs : 0));
    for (const struct fn_lib *lib = fs ? fs->libs : NULL; lib; lib = lib->next) {
        put_u32(b, (uint32_t)lib->len);
        buf_append(b, lib->code, lib->len);
    }
    put_u32(b, wal_crc32c(0, b->data, b->len));
}

void
fn_dump(struct conn *c)
{
    struct fn_shard *fs = fn_get(c, NULL);
    struct buf b;
    buf_init(&b);
    dump_into(fs, &b);
    reply_bulk(c, b.data, b.len);
    buf_deinit(&b);
}

/* The payload's libraries as (code, len) pairs; count, or -1 when it is not
 * ours or damaged. *out is rv_malloc'ed. */
static int64_t
parse_payload(const char *p, size_t len, struct rv_str **out)
{
    const unsigned char *u = (const unsigned char *)p;
    if (len < 13 || memcmp(p, PAYLOAD_MAGIC, 4) != 0 || u[4] != PAYLOAD_VERSION ||
        get_u32(u + len - 4) != wal_crc32c(0, p, len - 4)) {
        return -1;
    }
    uint32_t n = get_u32(u + 5);
    if (n > (len - 13) / 4) {
        return -1;
    }
    struct rv_str *v = rv_calloc(n ? n : 1, sizeof(*v));
    size_t at = 9;
    for (uint32_t i = 0; i < n; i++) {
        if (len - 4 - at < 4) {
            rv_free(v);
            return -1;
        }
        size_t l = get_u32(u + at);
        at += 4;
        if (l > len - 4 - at) {
            rv_free(v);
            return -1;
        }
        v[i].p = p + at;
        v[i].len = l;
        at += l;
    }
    if (at != len - 4) {
        rv_free(v);
        return -1;
    }
    *out = v;
    return n;
}

int
fn_restore(struct conn *c, struct rv_str payload, enum fn_policy policy, char *err, size_t errsz)
{
    struct fn_shard *fs = fn_get(c, NULL);
    if (fs == NULL) {
        snprintf(err, errsz, "ERR could not start the Lua engine");
        return -1;
    }
    struct rv_str *libs = NULL;
    int64_t n = parse_payload(payload.p, payload.len, &libs);
    if (n < 0) {
        snprintf(err, errsz, "ERR DUMP payload version or checksum are wrong");
        return -1;
    }
    /* on an error the old libraries are loaded again (their code loaded once) */
    struct buf saved;
    buf_init(&saved);
    dump_into(fs, &saved);
    if (policy == FN_FLUSH) {
        flush_all(fs);
    }
    int rc = 0;
    char name[256];
    for (int64_t i = 0; i < n && rc == 0; i++) {
        if (policy == FN_APPEND &&
            parse_meta(libs[i].p, libs[i].len, name, sizeof(name), err, errsz) == 0 &&
            lib_find(fs, name, strlen(name), NULL) != NULL) {
            snprintf(err, errsz, "ERR Library %s already exists", name);
            rc = -1;
            break;
        }
        rc = load_lib(fs, libs[i].p, libs[i].len, policy == FN_REPLACE, name, sizeof(name), err,
                      errsz);
    }
    if (rc != 0) {
        struct rv_str *old = NULL;
        int64_t m = parse_payload(saved.data, saved.len, &old);
        flush_all(fs);
        char e2[256];
        for (int64_t i = 0; i < m; i++) {
            (void)load_lib(fs, old[i].p, old[i].len, true, name, sizeof(name), e2, sizeof(e2));
        }
        rv_free(old);
    }
    buf_deinit(&saved);
    rv_free(libs);
    return rc;
}

/* ---------------------------------------------------------------- FCALL */

void
fn_call(struct conn *c, int argc, struct rv_str *argv, bool ro)
{
    int64_t nk;
    if (!cmd_arg_int(argv[2], &nk)) {
        reply_errf(c, "ERR Bad number of keys provided");
        return;
    }
    if (nk < 0) {
        reply_errf(c, "ERR Number of keys can't be negative");
        return;
    }
    if (nk > argc - 3) {
        reply_errf(c, "ERR Number of keys can't be greater than number of args");
        return;
    }
    struct script_shard *ss = NULL;
    struct fn_shard *fs = fn_get(c, &ss);
    if (fs == NULL) {
        reply_errf(c, "ERR could not start the Lua engine");
        return;
    }
    const struct fn_func *f = func_find(fs, argv[1].p, argv[1].len);
    if (f == NULL) {
        reply_errf(c, "ERR Function not found");
        return;
    }
    if (ss->caller != NULL) {
        reply_errf(c,
                   "BUSY Redis is busy running a script. You can only call %s KILL or "
                   "SHUTDOWN NOSAVE.",
                   ss->fcall ? "FUNCTION" : "SCRIPT");
        return;
    }
    lua_State *L = fs->L;
    lua_getfield(L, LUA_REGISTRYINDEX, "fn_f");
    lua_getfield(L, -1, f->name);
    lua_remove(L, -2);
    fs->running = f;
    fs->run_argc = argc;
    fs->run_argv = argv;
    fs->run_start_ms = script_mono_ms();
    script_start(c, ss, L, f->name, f->flags, ro, true, argv + 3, (int)nk, argv + 3 + nk,
                 argc - 3 - (int)nk);
    fs->running = NULL;
    fs->run_argv = NULL;
}

/* ---------------------------------------------------------------- the rest */

long long
fn_vm_bytes(struct script_shard *ss)
{
    struct fn_shard *fs = ss ? ss->fn : NULL;
    return fs ? (long long)lua_gc(fs->L, LUA_GCCOUNT, 0) * 1024 + lua_gc(fs->L, LUA_GCCOUNTB, 0)
              : 0;
}

void
fn_info_memory(struct script_shard *ss, struct buf *b)
{
    struct fn_shard *fs = ss ? ss->fn : NULL;
    long long vm = fn_vm_bytes(ss);
    /* the libraries' bookkeeping: their code, names and descriptions */
    long long caches = 0;
    for (const struct fn_lib *lib = fs ? fs->libs : NULL; lib; lib = lib->next) {
        caches += (long long)(sizeof(*lib) + lib->len + strlen(lib->name) + 1);
        for (const struct fn_func *f = lib->funcs; f; f = f->next) {
            caches += (long long)(sizeof(*f) + strlen(f->name) + 1 +
                                  (f->desc ? strlen(f->desc) + 1 : 0));
        }
    }
    buf_appendf(b,
                "used_memory_vm_functions:%lld\r\nused_memory_functions_caches:%lld\r\n"
                "used_memory_functions:%lld\r\nnumber_of_functions:%lld\r\n"
                "number_of_libraries:%lld\r\n",
                vm, caches, caches, fs ? (long long)fs->nfuncs : 0, fs ? (long long)fs->nlibs : 0);
}

void
fn_shard_free(struct script_shard *ss)
{
    struct fn_shard *fs = ss->fn;
    if (fs == NULL) {
        return;
    }
    while (fs->libs) {
        struct fn_lib *lib = fs->libs;
        fs->libs = lib->next;
        lib_free(lib);
    }
    lua_close(fs->L);
    rv_free(fs);
    ss->fn = NULL;
}

static void
emit_restore(struct shard *s, obj_emit_fn *fn, void *arg, bool always)
{
    struct script_shard *ss = shard_env(s)->scripts;
    struct fn_shard *fs = ss ? ss->fn : NULL;
    if (!always && (fs == NULL || fs->libs == NULL)) {
        return;
    }
    struct buf b;
    buf_init(&b);
    dump_into(fs, &b);
    struct rv_str v[4] = { { "FUNCTION", 8 }, { "RESTORE", 7 }, { b.data, b.len }, { "FLUSH", 5 } };
    fn(arg, 4, v);
    buf_deinit(&b);
}

void
fn_emit_state(struct shard *s, obj_emit_fn *fn, void *arg)
{
    emit_restore(s, fn, arg, false);
}

void
fn_emit_sync(struct shard *s, obj_emit_fn *fn, void *arg)
{
    emit_restore(s, fn, arg, true);
}
