/* node/commands/script_src.h: a script's source rewritten before it is
 * compiled, so that LuaJIT keeps the frame Redis's errors name.
 *
 * LuaJIT compiles `return f(args)` into a tail call (BC_CALLT): the returning
 * function's frame is gone when f runs, so an error raised by a C function f
 * (redis.call, error, string.rep ...) cannot be placed on the `return` line
 * the way PUC Lua 5.1 (Redis) places it. Where the caller uses only the first
 * result and nothing else can call the function, `return EXPR` is the same as
 * `return (EXPR)`, which is no tail call: script_src_untail() adds those
 * parentheses, with no newline added (line numbers stay the source's).
 * docs/scripting.md ("Where LuaJIT cannot say where"). */
#pragma once
#include <lua.h>
#include <stddef.h>

enum script_src_scope {
    SCRIPT_SRC_CHUNK,     /* EVAL: the returns of the main chunk (outside every function) */
    SCRIPT_SRC_CALLBACKS, /* FUNCTION LOAD: the returns of function literals passed directly to
                           * redis.register_function (positional, or callback= of the table) */
};

/* Rewrite each `return EXPR` of the scope whose expression list is one
 * expression that may end in a call (its last token is `)`, `}` or a string)
 * as `return (EXPR)`: `(` before its first token, `)` after its last. Returns
 * how many were rewritten; when some were, *out is the new text
 * (NUL-terminated, the caller rv_frees it) of *outlen bytes, otherwise *out is
 * NULL. The input must be Lua that compiles (the caller compiles it first):
 * on anything unexpected the text is left as it is. */
size_t script_src_untail(const char *src, size_t n, enum script_src_scope scope, char **out,
                         size_t *outlen);
/* luaL_loadbuffer of code, then of its rewrite (above) when there is one and
 * it compiles, which replaces the original's function at the top of L. A
 * compile error is the original's (what luaL_loadbuffer returns and pushes). */
int script_src_load(lua_State *L, const char *code, size_t len, const char *chunk,
                    enum script_src_scope scope);
