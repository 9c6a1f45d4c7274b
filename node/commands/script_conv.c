/* node/commands/script_conv.c: Redis's conversions between RESP and Lua
 * values (script_conv.h, docs/scripting.md). */
#include "node/commands/script_conv.h"

#include "base/buf.h"
#include "node/core/cmd.h"
#include "node/core/conn.h"
#include "node/core/shard.h"
#include "node/core/reply.h"
#include "node/obs/metrics.h"
#include "proto/resp.h"

#include <lauxlib.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- replies to Lua */

static int64_t
read_len(const char **p, const char *end)
{
    const char *q = *p;
    bool neg = false;
    int64_t v = 0;
    if (q < end && *q == '-') {
        neg = true;
        q++;
    }
    while (q < end && *q >= '0' && *q <= '9') {
        v = v * 10 + (*q - '0');
        q++;
    }
    *p = q + 2 <= end ? q + 2 : end; /* CRLF */
    return neg ? -v : v;
}

/* The line at *p (without CRLF): its length; *p moves past it. */
static size_t
read_line(const char **p, const char *end, const char **start)
{
    const char *q = *p;
    *start = q;
    while (q + 1 < end && !(q[0] == '\r' && q[1] == '\n')) {
        q++;
    }
    size_t n = (size_t)(q - *start);
    *p = q + 2 <= end ? q + 2 : end;
    return n;
}

static void
set_field_str(lua_State *L, const char *k, const char *s, size_t n)
{
    lua_createtable(L, 0, 1);
    lua_pushlstring(L, s, n);
    lua_setfield(L, -2, k);
}

/* An array, push, set, map or attribute (whose reply follows it). */
static void
push_aggregate(lua_State *L, char t, const char **p, const char *end, int depth)
{
    int64_t cnt = read_len(p, end);
    if (cnt < 0) {
        lua_pushboolean(L, 0);
        return;
    }
    if (t == '|') { /* attributes: skipped, the reply follows */
        for (int64_t i = 0; i < 2 * cnt && *p < end; i++) {
            script_conv_push(L, p, end, depth + 1);
            lua_pop(L, 1);
        }
        script_conv_push(L, p, end, depth + 1);
        return;
    }
    if (t == '%' || t == '~') {
        lua_createtable(L, 0, 1);
    }
    lua_createtable(L, t == '%' || t == '~' ? 0 : (int)(cnt < 1024 ? cnt : 1024), 0);
    for (int64_t i = 0; i < cnt && *p < end; i++) {
        if (t == '%' || t == '~') {
            script_conv_push(L, p, end, depth + 1);
            if (t == '%') {
                script_conv_push(L, p, end, depth + 1);
            } else {
                lua_pushboolean(L, 1);
            }
            if (lua_isnil(L, -2) ||
                (lua_type(L, -2) == LUA_TNUMBER && lua_tonumber(L, -2) != lua_tonumber(L, -2))) {
                lua_pop(L, 2); /* (a nil or NaN key cannot index a table) */
            } else {
                lua_rawset(L, -3);
            }
        } else {
            script_conv_push(L, p, end, depth + 1);
            lua_rawseti(L, -2, (int)(i + 1));
        }
    }
    if (t == '%' || t == '~') {
        lua_setfield(L, -2, t == '%' ? "map" : "set");
    }
}

/* Push one reply (of our own writer: well formed) as Redis converts it. */
void
script_conv_push(lua_State *L, const char **p, const char *end, int depth)
{
    const char *s;
    size_t n;
    if (*p >= end || depth > 200 || !lua_checkstack(L, 4)) {
        lua_pushboolean(L, 0);
        *p = end;
        return;
    }
    char t = *(*p)++;
    switch (t) {
    case '+':
        n = read_line(p, end, &s);
        set_field_str(L, "ok", s, n);
        return;
    case '-':
        n = read_line(p, end, &s);
        set_field_str(L, "err", s, n);
        return;
    case ':':
        n = read_line(p, end, &s);
        lua_pushnumber(L, (lua_Number)strtoll(s, NULL, 10));
        return;
    case '(':
        n = read_line(p, end, &s);
        set_field_str(L, "big_number", s, n);
        return;
    case '#':
        n = read_line(p, end, &s);
        lua_pushboolean(L, n > 0 && s[0] == 't');
        return;
    case '_':
        read_line(p, end, &s);
        lua_pushnil(L);
        return;
    case ',': {
        n = read_line(p, end, &s);
        char tmp[64];
        snprintf(tmp, sizeof(tmp), "%.*s", (int)(n < 63 ? n : 63), s);
        lua_createtable(L, 0, 1);
        lua_pushnumber(L, strtod(tmp, NULL));
        lua_setfield(L, -2, "double");
        return;
    }
    case '$':
    case '=':
    case '!': {
        int64_t len = read_len(p, end);
        if (len < 0) {
            lua_pushboolean(L, 0);
            return;
        }
        if (len > end - *p) {
            len = end - *p;
        }
        s = *p;
        *p += len;
        *p = *p + 2 <= end ? *p + 2 : end;
        if (t == '$') {
            lua_pushlstring(L, s, (size_t)len);
        } else if (t == '!') {
            set_field_str(L, "err", s, (size_t)len);
        } else { /* verbatim "fmt:text" */
            size_t fl = len >= 4 ? 3 : 0;
            lua_createtable(L, 0, 1);
            lua_createtable(L, 0, 2);
            lua_pushlstring(L, s, fl);
            lua_setfield(L, -2, "format");
            lua_pushlstring(L, s + (fl ? 4 : 0), (size_t)len - (fl ? 4 : 0));
            lua_setfield(L, -2, "string");
            lua_setfield(L, -2, "verbatim_string");
        }
        return;
    }
    case '*':
    case '>':
    case '~':
    case '%':
    case '|': push_aggregate(L, t, p, end, depth); return;
    default:
        lua_pushboolean(L, 0);
        *p = end;
        return;
    }
}

/* ---------------------------------------------------------------- Lua to the client */


/* The table at the top has field k of Lua type t: pushed (true), else nothing. */
static bool
field(lua_State *L, const char *k, int t)
{
    lua_pushstring(L, k);
    lua_rawget(L, -2);
    if (lua_type(L, -1) == t) {
        return true;
    }
    lua_pop(L, 1);
    return false;
}

void
script_count_errors(struct conn *c)
{
    c->env->stats.total_error_replies += c->nerr;
    metrics_error(c->shard, c->errcode, c->nerr);
    c->nerr = 0;
}

void
script_conv_error(struct conn *c, bool counted, const char *msg, size_t n)
{
    int len = (int)(n > 1000 ? 1000 : n);
    if (counted) {
        /* (as Redis's ERR_REPLY_FLAG_NO_STATS_UPDATE: failed, not counted again) */
        uint32_t nerr = c->nerr;
        char code[sizeof(c->errcode)];
        memcpy(code, c->errcode, sizeof(code));
        reply_errf(c, "%.*s", len, msg);
        c->nerr = nerr;
        memcpy(c->errcode, code, sizeof(code));
        if (c->last_cmd != NULL) {
            c->env->cmdstats[c->last_cmd->id].failed++;
        }
        return;
    }
    if (c->nerr != 0) {
        script_count_errors(c); /* (the dispatcher counts c->nerr under one code) */
    }
    reply_errf(c, "%.*s", len, msg);
}

static void
write_table(struct conn *c, lua_State *L, int depth)
{
    size_t n;
    const char *s;
    struct buf *b = &c->wbuf;
    if (field(L, "err", LUA_TSTRING)) {
        s = lua_tolstring(L, -1, &n);
        lua_pushstring(L, SCRIPT_ERR_COUNTED);
        lua_rawget(L, -3);
        bool counted = lua_toboolean(L, -1);
        lua_pop(L, 1);
        script_conv_error(c, counted, s, n);
        lua_pop(L, 1);
        return;
    }
    if (field(L, "ok", LUA_TSTRING)) {
        s = lua_tolstring(L, -1, &n);
        char clean[1024];
        n = n < sizeof(clean) ? n : sizeof(clean);
        for (size_t i = 0; i < n; i++) {
            clean[i] = s[i] == '\r' || s[i] == '\n' ? ' ' : s[i];
        }
        resp_w_simple(b, clean, n);
        lua_pop(L, 1);
        return;
    }
    if (field(L, "double", LUA_TNUMBER)) {
        resp_w_double(b, c->proto, lua_tonumber(L, -1));
        lua_pop(L, 1);
        return;
    }
    if (field(L, "big_number", LUA_TSTRING)) {
        s = lua_tolstring(L, -1, &n);
        if (c->proto == 3) {
            buf_appendf(b, "(%.*s\r\n", (int)n, s);
        } else {
            resp_w_bulk(b, s, n);
        }
        lua_pop(L, 1);
        return;
    }
    if (field(L, "map", LUA_TTABLE)) {
        size_t h = resp_w_defer_len(b);
        size_t pairs = 0;
        lua_pushnil(L);
        while (lua_next(L, -2)) {
            lua_pushvalue(L, -2); /* key */
            script_conv_write(c, L, depth + 1);
            script_conv_write(c, L, depth + 1); /* value (pops it) */
            pairs++;
        }
        resp_w_patch_len(b, h, c->proto == 3 ? '%' : '*', c->proto == 3 ? pairs : 2 * pairs);
        lua_pop(L, 1);
        return;
    }
    if (field(L, "set", LUA_TTABLE)) {
        size_t h = resp_w_defer_len(b);
        size_t cnt = 0;
        lua_pushnil(L);
        while (lua_next(L, -2)) {
            lua_pop(L, 1);
            lua_pushvalue(L, -1);
            script_conv_write(c, L, depth + 1);
            cnt++;
        }
        resp_w_patch_len(b, h, c->proto == 3 ? '~' : '*', cnt);
        lua_pop(L, 1);
        return;
    }
    if (field(L, "verbatim_string", LUA_TTABLE)) {
        size_t fn;
        const char *f = NULL;
        lua_getfield(L, -1, "format");
        lua_getfield(L, -2, "string");
        f = lua_tolstring(L, -2, &fn);
        s = lua_tolstring(L, -1, &n);
        if (f && s && fn == 3) {
            if (c->proto == 3) {
                buf_appendf(b, "=%zu\r\n%.3s:", n + 4, f);
                buf_append(b, s, n);
                buf_append(b, "\r\n", 2);
            } else {
                resp_w_bulk(b, s, n);
            }
        } else {
            resp_w_null(b, c->proto);
        }
        lua_pop(L, 3);
        return;
    }
    /* an array, up to its first nil */
    size_t h = resp_w_defer_len(b);
    size_t cnt = 0;
    for (int i = 1;; i++) {
        lua_rawgeti(L, -1, i);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            break;
        }
        script_conv_write(c, L, depth + 1);
        cnt++;
    }
    resp_w_patch_len(b, h, '*', cnt);
}

/* Write the value at the top of the stack as Redis converts it, and pop it. */
void
script_conv_write(struct conn *c, lua_State *L, int depth)
{
    struct buf *b = &c->wbuf;
    size_t n;
    const char *s;
    if (depth > 1000 || !lua_checkstack(L, 8)) {
        resp_w_null(b, c->proto);
        lua_pop(L, 1);
        return;
    }
    switch (lua_type(L, -1)) {
    case LUA_TSTRING:
        s = lua_tolstring(L, -1, &n);
        resp_w_bulk(b, s, n);
        break;
    case LUA_TNUMBER: resp_w_int(b, (int64_t)lua_tonumber(L, -1)); break;
    case LUA_TBOOLEAN:
        if (lua_toboolean(L, -1)) {
            resp_w_int(b, 1);
        } else {
            resp_w_null(b, c->proto);
        }
        break;
    case LUA_TTABLE: write_table(c, L, depth); break;
    default: resp_w_null(b, c->proto); break;
    }
    lua_pop(L, 1);
}
