/* script_src_untail: which returns get their parentheses, and that nothing
 * else in the text moves. */
#include "node/commands/script_src.h"

#include "base/mem.h"

#include <criterion/criterion.h>
#include <lauxlib.h>
#include <lualib.h>
#include <string.h>

/* The rewritten text, or the source itself when nothing was rewritten. */
static char *
rw(const char *src, enum script_src_scope scope)
{
    char *out;
    size_t outlen;
    size_t n = script_src_untail(src, strlen(src), scope, &out, &outlen);
    if (n == 0) {
        cr_assert_null(out);
        return rv_strndup(src, strlen(src));
    }
    cr_assert_eq(strlen(out), outlen);
    return out;
}

static void
check(const char *src, const char *want, enum script_src_scope scope)
{
    char *got = rw(src, scope);
    cr_assert_str_eq(got, want, "source:\n%s\ngot:\n%s", src, got);
    rv_free(got);
}

static void
chunk(const char *src, const char *want)
{
    check(src, want, SCRIPT_SRC_CHUNK);
}

static void
unchanged(const char *src)
{
    chunk(src, src);
}

Test(script_src, main_chunk_call)
{
    chunk("return redis.call('incr', KEYS[1])", "return (redis.call('incr', KEYS[1]))");
    chunk("local a = 1\n\nreturn redis.call('incr', KEYS[1])\n",
          "local a = 1\n\nreturn (redis.call('incr', KEYS[1]))\n");
    chunk("return error('x');", "return (error('x'));");
    chunk("return f(1) -- done\n", "return (f(1)) -- done\n");
    chunk("return --[[ c ]] f(1)", "return --[[ c ]] (f(1))");
    chunk("return\n  f(1)\n", "return\n  (f(1))\n");
    chunk("return f(\n1,\n2)", "return (f(\n1,\n2))");
}

Test(script_src, call_forms)
{
    chunk("return obj:method(1)", "return (obj:method(1))");
    chunk("return f\"x\"", "return (f\"x\")");
    chunk("return f'x'", "return (f'x')");
    chunk("return f[[x]]", "return (f[[x]])");
    chunk("return f[==[x]]y]==]", "return (f[==[x]]y]==])");
    chunk("return f{1, 2}", "return (f{1, 2})");
    chunk("return a.b.c(1)(2)", "return (a.b.c(1)(2))");
    chunk("return t[1](x)", "return (t[1](x))");
    chunk("return (f(1))", "return ((f(1)))");
}

Test(script_src, left_alone)
{
    unchanged("return");
    unchanged("return;");
    unchanged("local a = 1\nreturn\n");
    unchanged("return f(), g()");
    unchanged("return f(1, 2), 3");
    unchanged("return 1");
    unchanged("return x");
    unchanged("return ...");
    unchanged("return KEYS[1]");
    unchanged("return function() return 1 end");
    unchanged("local x = 1");
    unchanged("");
}

Test(script_src, return_in_strings_and_comments)
{
    unchanged("local s = 'return f()' return s");
    unchanged("local s = \"return f()\\\"\" return s");
    unchanged("-- return f()\nreturn 1");
    unchanged("--[[ return f()\n]] return 1");
    unchanged("--[==[ ]] return f() ]=] ]==] return 1");
    unchanged("local s = [[return f()]] return s");
    unchanged("local s = [=[ ]] return f() ]=] return s");
    chunk("local s = \"it's\" return f(s)", "local s = \"it's\" return (f(s))");
    chunk("local s = '\\'' return f(s)", "local s = '\\'' return (f(s))");
    chunk("local s = 'a\\\nb' return f(s)", "local s = 'a\\\nb' return (f(s))");
    chunk("local returned = 1 return f(returned)", "local returned = 1 return (f(returned))");
}

Test(script_src, blocks)
{
    chunk("if a then\n  return f(1)\nend\nreturn g(2)",
          "if a then\n  return (f(1))\nend\nreturn (g(2))");
    chunk("if a then return f(1) elseif b then return g(2) else return h(3) end",
          "if a then return (f(1)) elseif b then return (g(2)) else return (h(3)) end");
    chunk("do return f() end", "do return (f()) end");
    chunk("while true do return f() end", "while true do return (f()) end");
    chunk("for i = 1, 3 do return f(i) end", "for i = 1, 3 do return (f(i)) end");
    chunk("for k, v in pairs(t) do return f(k) end", "for k, v in pairs(t) do return (f(k)) end");
    chunk("repeat return f() until true", "repeat return (f()) until true");
    chunk("repeat local x = 1 until g(x) return f()", "repeat local x = 1 until g(x) return (f())");
    chunk("if a then return f(1), 2 end return g()", "if a then return f(1), 2 end return (g())");
}

Test(script_src, nested_functions_untouched)
{
    unchanged(
        "local function g()\n  return redis.call('incr', KEYS[1])\nend\nlocal v = g()\nreturn v");
    chunk("local function g() return f() end return g()",
          "local function g() return f() end return (g())");
    chunk("local g = function() if a then return f() end end return g()",
          "local g = function() if a then return f() end end return (g())");
    chunk("return pcall(function() return f() end)", "return (pcall(function() return f() end))");
    chunk("return f(function() return 1 end, 2)", "return (f(function() return 1 end, 2))");
    chunk("return {function() return g() end}", "return ({function() return g() end})");
    chunk("if x then local t = {f = function() return 1 end} return t.f() end",
          "if x then local t = {f = function() return 1 end} return (t.f()) end");
}

static void
lib(const char *src, const char *want)
{
    check(src, want, SCRIPT_SRC_CALLBACKS);
}

Test(script_src, register_function_callbacks)
{
    lib("\nredis.register_function('f', function(keys, args)\n  return redis.call('get', keys[1])\nend)",
        "\nredis.register_function('f', function(keys, args)\n  return (redis.call('get', keys[1]))\nend)");
    lib("redis.register_function{function_name='f', callback=function(k, a) return error('x') end}",
        "redis.register_function{function_name='f', callback=function(k, a) return (error('x')) end}");
    lib("redis.register_function({function_name='f', flags={'no-writes'}, callback=function(k, a)\n"
        "if k[1] then return f(k) else return g(a) end end})",
        "redis.register_function({function_name='f', flags={'no-writes'}, callback=function(k, a)\n"
        "if k[1] then return (f(k)) else return (g(a)) end end})");
    lib("redis.register_function('a', function() return f() end)\n"
        "redis.register_function('b', function() return g() end)",
        "redis.register_function('a', function() return (f()) end)\n"
        "redis.register_function('b', function() return (g()) end)");
    /* the library's own chunk, named functions, nested functions: left alone */
    lib("local function h() return f() end\nredis.register_function('a', h)\nreturn g()",
        "local function h() return f() end\nredis.register_function('a', h)\nreturn g()");
    lib("redis.register_function('a', function() local x = function() return f() end return x() end)",
        "redis.register_function('a', function() local x = function() return f() end return (x()) end)");
    lib("redis.register_function('a', make(function() return f() end))",
        "redis.register_function('a', make(function() return f() end))");
    lib("redis.register_function{function_name='a', other=function() return f() end, callback=h}",
        "redis.register_function{function_name='a', other=function() return f() end, callback=h}");
    lib("redis.register_function('a', function() return f(), 1 end)",
        "redis.register_function('a', function() return f(), 1 end)");
    /* EVAL's scope does not rewrite callbacks, FUNCTION's not the chunk */
    chunk("redis.register_function('a', function() return f() end) return g()",
          "redis.register_function('a', function() return f() end) return (g())");
}

Test(script_src, unexpected_text_left_alone)
{
    unchanged("end return f()");
    unchanged("until x return f()");
}

/* Every prefix of these (unterminated strings, brackets, comments and blocks
 * included), copied to a buffer of its exact size so that a read past its end
 * shows under ASan: the text is read within bounds and only `(`/`)` pairs are
 * added. */
Test(script_src, cut_text_is_read_within_bounds)
{
    static const char *texts[] = {
        "local s = 'a\\'b' return f(s) --[==[ x ]==] return g[[y]]",
        "if a then return f\"x\" elseif b then return t{1, [2] = 3} else return (g()) end",
        "redis.register_function{function_name='f', callback=function(k, a) return h(k) end}",
        "--[[ c ]] repeat return obj:m(1.5e+3, 0x1p-2, .5) until x -- t",
        "return [=[ ]] ]=]",
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        size_t n = strlen(texts[i]);
        for (size_t k = 0; k <= n; k++) {
            char *cut = rv_malloc(k ? k : 1);
            memcpy(cut, texts[i], k);
            for (int scope = SCRIPT_SRC_CHUNK; scope <= SCRIPT_SRC_CALLBACKS; scope++) {
                char *out;
                size_t outlen;
                size_t e = script_src_untail(cut, k, (enum script_src_scope)scope, &out, &outlen);
                if (e > 0) {
                    cr_assert_eq(outlen, k + 2 * e);
                    rv_free(out);
                } else {
                    cr_assert_null(out);
                }
            }
            rv_free(cut);
        }
    }
}

Test(script_src, deep_nesting_is_left_alone)
{
    size_t depth = 300;
    char *src = rv_malloc(depth * 3 + 16 + depth * 4 + 1);
    size_t w = 0;
    for (size_t i = 0; i < depth; i++) {
        memcpy(src + w, "do ", 3);
        w += 3;
    }
    memcpy(src + w, "return f() ", 11);
    w += 11;
    for (size_t i = 0; i < depth; i++) {
        memcpy(src + w, "end ", 4);
        w += 4;
    }
    src[w] = '\0';
    unchanged(src);
    rv_free(src);
    unchanged("do do return f() end end end return g()"); /* an `end` too many */
}

/* The rewrite compiles and gives the same first result; an error raised by a
 * C function called in the last line is placed on that line. */
static lua_State *
state(void)
{
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    return L;
}

Test(script_src, load_keeps_results_and_places_errors)
{
    lua_State *L = state();
    const char *ok = "local a = 2\nreturn string.rep('x', a)\n";
    cr_assert_eq(script_src_load(L, ok, strlen(ok), "@user_script", SCRIPT_SRC_CHUNK), 0);
    cr_assert_eq(lua_pcall(L, 0, 1, 0), 0);
    cr_assert_str_eq(lua_tostring(L, -1), "xx");
    lua_pop(L, 1);
    const char *bad = "local a = 1\n\nreturn string.rep()\n";
    cr_assert_eq(script_src_load(L, bad, strlen(bad), "@user_script", SCRIPT_SRC_CHUNK), 0);
    cr_assert_neq(lua_pcall(L, 0, 1, 0), 0);
    cr_assert_str_eq(lua_tostring(L, -1),
                     "user_script:3: bad argument #1 to 'rep' (string expected, got no value)");
    lua_pop(L, 1);
    const char *err = "local a = 1\nreturn error('x')";
    cr_assert_eq(script_src_load(L, err, strlen(err), "@user_script", SCRIPT_SRC_CHUNK), 0);
    cr_assert_neq(lua_pcall(L, 0, 1, 0), 0);
    cr_assert_str_eq(lua_tostring(L, -1), "user_script:2: x");
    lua_pop(L, 1);
    lua_close(L);
}

Test(script_src, load_reports_the_original_compile_error)
{
    lua_State *L = state();
    const char *bad = "return f(\n";
    cr_assert_neq(script_src_load(L, bad, strlen(bad), "@user_script", SCRIPT_SRC_CHUNK), 0);
    cr_assert_str_eq(lua_tostring(L, -1), "user_script:2: unexpected symbol near '<eof>'");
    lua_close(L);
}
