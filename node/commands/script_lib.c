/* node/commands/script_lib.c: the `struct` and `cmsgpack` libraries Redis
 * gives scripts, written here from their documented formats (Debian
 * packages neither): struct's format language (Lua 5.1's lstruct: pack,
 * unpack, size) and MessagePack (pack, unpack, unpack_one, unpack_limit).
 * The tests compare their bytes with redis-server's. */
#include "node/commands/script_lib.h"

#include "base/mem.h"

#include <lauxlib.h>
#include <limits.h>
#include <lua.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---------------------------------------------------------------- struct */

#define ST_MAX_INT 32 /* the largest integer option, in bytes */
#define ST_MAX_ALIGN 8

struct st_fmt {
    bool little;
    int align;
};

/* Digits after an option, or dflt when there are none. */
static int
st_num(lua_State *L, const char **p, int dflt)
{
    if (**p < '0' || **p > '9') {
        return dflt;
    }
    long v = 0;
    while (**p >= '0' && **p <= '9') {
        v = v * 10 + (*(*p)++ - '0');
        if (v > INT_MAX / 10) {
            luaL_error(L, "integral size overflow");
        }
    }
    return (int)v;
}

/* The size of option op (0: none, or a variable one). */
static size_t
st_size(lua_State *L, char op, const char **p)
{
    switch (op) {
    case 'b':
    case 'B':
    case 'x': return 1;
    case 'h':
    case 'H': return 2;
    case 'l':
    case 'L':
    case 'T':
    case 'd': return 8;
    case 'f': return 4;
    case 'c': return (size_t)st_num(L, p, 1);
    case 'i':
    case 'I': {
        int n = st_num(L, p, 4);
        if (n > ST_MAX_INT) {
            luaL_error(L, "integral size %d is larger than limit of %d", n, ST_MAX_INT);
        }
        return (size_t)n;
    }
    default: return 0;
    }
}

/* Padding before an option of size n at offset at ('!' alignment only). */
static size_t
st_pad(size_t at, const struct st_fmt *h, char op, size_t n)
{
    if (n == 0 || op == 'c') {
        return 0;
    }
    if (n > (size_t)h->align) {
        n = (size_t)h->align;
    }
    return (n - (at & (n - 1))) & (n - 1);
}

/* The options that change the reading of the others; errors on unknown ones. */
static void
st_control(lua_State *L, char op, const char **p, struct st_fmt *h)
{
    switch (op) {
    case ' ': return;
    case '>': h->little = false; return;
    case '<':
    case '=': h->little = true; return; /* (this machine's order) */
    case '!': {
        int a = st_num(L, p, ST_MAX_ALIGN);
        if (a <= 0 || (a & (a - 1)) != 0) {
            luaL_error(L, "alignment %d is not a power of 2", a);
        }
        h->align = a;
        return;
    }
    default: {
        const char *m = lua_pushfstring(L, "invalid format option '%c'", op);
        luaL_argerror(L, 1, m);
    }
    }
}

static void
st_put_int(luaL_Buffer *b, lua_Number v, bool little, size_t n)
{
    uint64_t u;
    if (isnan(v) || v < -9223372036854775808.0 || v >= 18446744073709551616.0) {
        u = (uint64_t)1 << 63; /* (out of range: what the x86 conversion gives) */
    } else {
        u = v < 0 ? (uint64_t)(int64_t)v : (uint64_t)v;
    }
    char out[ST_MAX_INT];
    for (size_t i = 0; i < n; i++) {
        out[little ? i : n - 1 - i] = (char)(u & 0xff);
        u = i < 7 ? u >> 8 : 0;
    }
    luaL_addlstring(b, out, n);
}

static void
st_put_raw(luaL_Buffer *b, const void *p, size_t n, bool little)
{
    char out[8];
    memcpy(out, p, n);
    if (!little) { /* (this machine is little-endian) */
        for (size_t i = 0; i < n / 2; i++) {
            char t = out[i];
            out[i] = out[n - 1 - i];
            out[n - 1 - i] = t;
        }
    }
    luaL_addlstring(b, out, n);
}

static int
l_struct_pack(lua_State *L)
{
    const char *fmt = luaL_checkstring(L, 1);
    struct st_fmt h = { true, 1 };
    int arg = 2;
    size_t total = 0;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    while (*fmt) {
        char op = *fmt++;
        size_t n = st_size(L, op, &fmt);
        size_t pad = st_pad(total, &h, op, n);
        total += pad;
        while (pad-- > 0) {
            luaL_addchar(&b, '\0');
        }
        switch (op) {
        case 'b':
        case 'B':
        case 'h':
        case 'H':
        case 'l':
        case 'L':
        case 'T':
        case 'i':
        case 'I': st_put_int(&b, luaL_checknumber(L, arg++), h.little, n); break;
        case 'x': luaL_addchar(&b, '\0'); break;
        case 'f': {
            float f = (float)luaL_checknumber(L, arg++);
            st_put_raw(&b, &f, 4, h.little);
            break;
        }
        case 'd': {
            double d = luaL_checknumber(L, arg++);
            st_put_raw(&b, &d, 8, h.little);
            break;
        }
        case 'c':
        case 's': {
            size_t l;
            const char *s = luaL_checklstring(L, arg, &l);
            if (n == 0) {
                n = l;
            }
            luaL_argcheck(L, l >= n, arg + 1, "string too short"); /* (Redis's count) */
            luaL_addlstring(&b, s, n);
            if (op == 's') {
                luaL_addchar(&b, '\0');
                n++;
            }
            arg++;
            break;
        }
        default: st_control(L, op, &fmt, &h); break;
        }
        total += n;
    }
    luaL_pushresult(&b);
    return 1;
}

static lua_Number
st_get_int(const unsigned char *p, bool little, bool sign, size_t n)
{
    uint64_t u = 0;
    for (size_t i = 0; i < n; i++) {
        u = (u << 8) | p[little ? n - 1 - i : i];
    }
    if (!sign) {
        return (lua_Number)u;
    }
    if (n < 8) {
        uint64_t m = (uint64_t)1 << (n * 8 - 1);
        u = (u ^ m) - m; /* sign-extended */
    }
    return (lua_Number)(int64_t)u;
}

static void
st_get_raw(void *out, const char *p, size_t n, bool little)
{
    char t[8];
    for (size_t i = 0; i < n; i++) {
        t[i] = p[little ? i : n - 1 - i];
    }
    memcpy(out, t, n);
}

static int
l_struct_unpack(lua_State *L)
{
    const char *fmt = luaL_checkstring(L, 1);
    size_t len;
    const char *data = luaL_checklstring(L, 2, &len);
    lua_Integer init = luaL_optinteger(L, 3, 1);
    if (init < 0) {
        init = (lua_Integer)len + init + 1 > 0 ? (lua_Integer)len + init + 1 : 0;
    }
    luaL_argcheck(L, init >= 1, 3, "offset must be 1 or greater");
    size_t at = (size_t)init - 1;
    struct st_fmt h = { true, 1 };
    int n = 0;
    while (*fmt) {
        char op = *fmt++;
        size_t sz = st_size(L, op, &fmt);
        at += st_pad(at, &h, op, sz);
        luaL_argcheck(L, at <= len && sz <= len - at, 2, "data string too short");
        luaL_checkstack(L, 2, "too many results");
        switch (op) {
        case 'b':
        case 'B':
        case 'h':
        case 'H':
        case 'l':
        case 'L':
        case 'T':
        case 'i':
        case 'I': {
            bool sign = op >= 'a';
            lua_pushnumber(L, st_get_int((const unsigned char *)data + at, h.little, sign,
                                         sz > 8 ? 8 : sz));
            n++;
            break;
        }
        case 'x': break;
        case 'f': {
            float f;
            st_get_raw(&f, data + at, 4, h.little);
            lua_pushnumber(L, f);
            n++;
            break;
        }
        case 'd': {
            double d;
            st_get_raw(&d, data + at, 8, h.little);
            lua_pushnumber(L, d);
            n++;
            break;
        }
        case 'c':
            if (sz == 0) { /* c0: the length is the value read just before */
                if (n == 0 || !lua_isnumber(L, -1)) {
                    luaL_error(L, "format 'c0' needs a previous size");
                }
                lua_Number l = lua_tonumber(L, -1);
                lua_pop(L, 1);
                n--;
                luaL_argcheck(L, l >= 0 && l <= (lua_Number)(len - at), 2, "data string too short");
                sz = (size_t)l;
            }
            lua_pushlstring(L, data + at, sz);
            n++;
            break;
        case 's': {
            const char *e = memchr(data + at, '\0', len - at);
            if (e == NULL) {
                luaL_error(L, "unfinished string in data");
            }
            sz = (size_t)(e - (data + at)) + 1;
            lua_pushlstring(L, data + at, sz - 1);
            n++;
            break;
        }
        default: st_control(L, op, &fmt, &h); break;
        }
        at += sz;
    }
    lua_pushinteger(L, (lua_Integer)at + 1);
    return n + 1;
}

static int
l_struct_size(lua_State *L)
{
    const char *fmt = luaL_checkstring(L, 1);
    struct st_fmt h = { true, 1 };
    size_t total = 0;
    while (*fmt) {
        char op = *fmt++;
        size_t n = st_size(L, op, &fmt);
        total += st_pad(total, &h, op, n);
        if (op == 's') {
            luaL_argerror(L, 1, "option 's' has no fixed size");
        } else if (op == 'c' && n == 0) {
            luaL_argerror(L, 1, "option 'c0' has no fixed size");
        } else if (n == 0 && op != 'c') {
            st_control(L, op, &fmt, &h);
        }
        total += n;
    }
    lua_pushinteger(L, (lua_Integer)total);
    return 1;
}

/* ---------------------------------------------------------------- cmsgpack */

#define MP_MAX_NESTING 16 /* deeper tables are packed as nil (as Redis's) */

/* The packed bytes (not a luaL_Buffer: that one may not share the stack
 * with the table walk's keys and values). */
struct mpb {
    char *p;
    size_t len, cap;
    bool full; /* over MP_MAX_BYTES: the pack fails with "not enough memory" */
};

#define MP_MAX_BYTES ((size_t)512 << 20) /* as one allocation of a script's, at most */

static void
mpb_add(struct mpb *b, const void *p, size_t n)
{
    if (b->full || n > MP_MAX_BYTES - b->len) {
        b->full = true;
        return;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n) {
            cap *= 2;
        }
        b->p = rv_realloc(b->p, cap);
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void
mpb_byte(struct mpb *b, char ch)
{
    mpb_add(b, &ch, 1);
}

static void
mp_put(struct mpb *b, unsigned char tag, uint64_t v, int n)
{
    char out[9];
    out[0] = (char)tag;
    for (int i = 0; i < n; i++) {
        out[n - i] = (char)(v >> (8 * i));
    }
    mpb_add(b, out, (size_t)n + 1);
}

static void
mp_put_int(struct mpb *b, int64_t v)
{
    if (v >= 0) {
        if (v <= 127) {
            mpb_byte(b, (char)v);
        } else if (v <= 0xff) {
            mp_put(b, 0xcc, (uint64_t)v, 1);
        } else if (v <= 0xffff) {
            mp_put(b, 0xcd, (uint64_t)v, 2);
        } else if (v <= 0xffffffffLL) {
            mp_put(b, 0xce, (uint64_t)v, 4);
        } else {
            mp_put(b, 0xcf, (uint64_t)v, 8);
        }
    } else if (v >= -32) {
        mpb_byte(b, (char)(0xe0 | (v + 32)));
    } else if (v >= -128) {
        mp_put(b, 0xd0, (uint64_t)v, 1);
    } else if (v >= -32768) {
        mp_put(b, 0xd1, (uint64_t)v, 2);
    } else if (v >= INT32_MIN) {
        mp_put(b, 0xd2, (uint64_t)v, 4);
    } else {
        mp_put(b, 0xd3, (uint64_t)v, 8);
    }
}

static void
mp_put_number(struct mpb *b, lua_Number d)
{
    if (!isinf(d) && !isnan(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0 &&
        (lua_Number)(int64_t)d == d) {
        mp_put_int(b, (int64_t)d);
        return;
    }
    float f = (float)d;
    if ((double)f == d) {
        uint32_t u;
        memcpy(&u, &f, 4);
        mp_put(b, 0xca, u, 4);
    } else {
        uint64_t u;
        memcpy(&u, &d, 8);
        mp_put(b, 0xcb, u, 8);
    }
}

static void
mp_put_len(struct mpb *b, size_t n, unsigned char fix, size_t fixmax, unsigned char t8,
           unsigned char t16, unsigned char t32)
{
    if (n <= fixmax) {
        mpb_byte(b, (char)(fix | n));
    } else if (t8 && n <= 0xff) {
        mp_put(b, t8, n, 1);
    } else if (n <= 0xffff) {
        mp_put(b, t16, n, 2);
    } else {
        mp_put(b, t32, n, 4);
    }
}

/* An array when its keys are exactly 1..n (the empty table too). */
static bool
mp_is_array(lua_State *L, int t, size_t *len)
{
    size_t count = 0;
    lua_Number max = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TNUMBER) {
            lua_pop(L, 1);
            return false;
        }
        lua_Number k = lua_tonumber(L, -1);
        if (k <= 0 || floor(k) != k) {
            lua_pop(L, 1);
            return false;
        }
        if (k > max) {
            max = k;
        }
        count++;
    }
    *len = count;
    return max == (lua_Number)count;
}

static void mp_put_value(lua_State *L, struct mpb *b, int idx, int level);

static void
mp_put_table(lua_State *L, struct mpb *b, int t, int level)
{
    size_t n;
    if (level >= MP_MAX_NESTING || !lua_checkstack(L, 4)) {
        mpb_byte(b, (char)0xc0);
        return;
    }
    if (mp_is_array(L, t, &n)) {
        mp_put_len(b, n, 0x90, 15, 0, 0xdc, 0xdd);
        for (size_t i = 1; i <= n; i++) {
            lua_rawgeti(L, t, (int)i);
            mp_put_value(L, b, lua_gettop(L), level + 1);
            lua_pop(L, 1);
        }
        return;
    }
    n = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        n++;
    }
    mp_put_len(b, n, 0x80, 15, 0, 0xde, 0xdf);
    lua_pushnil(L);
    while (lua_next(L, t)) {
        int top = lua_gettop(L);
        mp_put_value(L, b, top - 1, level + 1);
        mp_put_value(L, b, top, level + 1);
        lua_pop(L, 1);
    }
}

static void
mp_put_value(lua_State *L, struct mpb *b, int idx, int level)
{
    switch (lua_type(L, idx)) {
    case LUA_TBOOLEAN: mpb_byte(b, (char)(lua_toboolean(L, idx) ? 0xc3 : 0xc2)); break;
    case LUA_TNUMBER: mp_put_number(b, lua_tonumber(L, idx)); break;
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        mp_put_len(b, n, 0xa0, 31, 0xd9, 0xda, 0xdb);
        mpb_add(b, s, n);
        break;
    }
    case LUA_TTABLE: mp_put_table(L, b, idx, level); break;
    default: mpb_byte(b, (char)0xc0); break;
    }
}

static int
l_mp_pack(lua_State *L)
{
    int n = lua_gettop(L);
    if (n == 0) {
        return luaL_argerror(L, 0, "MessagePack pack needs input.");
    }
    struct mpb b = { NULL, 0, 0, false };
    for (int i = 1; i <= n && !b.full; i++) {
        mp_put_value(L, &b, i, 0);
    }
    if (b.full) {
        rv_free(b.p);
        return luaL_error(L, "not enough memory");
    }
    lua_pushlstring(L, b.p ? b.p : "", b.len);
    rv_free(b.p);
    return 1;
}

struct mp_cur {
    const unsigned char *p;
    size_t left;
    int err; /* 0, MP_EOF or MP_BAD */
};
enum { MP_EOF = 1, MP_BAD = 2 };

static uint64_t
mp_be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) {
        v = (v << 8) | p[i];
    }
    return v;
}

static bool
mp_need(struct mp_cur *c, size_t n)
{
    if (c->left < n) {
        c->err = MP_EOF;
        return false;
    }
    return true;
}

static void mp_get(lua_State *L, struct mp_cur *c);

static void
mp_get_str(lua_State *L, struct mp_cur *c, size_t hdr, size_t n)
{
    if (!mp_need(c, hdr + n)) {
        return;
    }
    lua_pushlstring(L, (const char *)c->p + hdr, n);
    c->p += hdr + n;
    c->left -= hdr + n;
}

static void
mp_get_array(lua_State *L, struct mp_cur *c, size_t hdr, uint64_t n)
{
    c->p += hdr;
    c->left -= hdr;
    luaL_checkstack(L, 4, "in function mp_decode_to_lua_array");
    lua_newtable(L);
    for (uint64_t i = 1; i <= n && !c->err; i++) {
        mp_get(L, c);
        if (c->err) {
            return;
        }
        lua_rawseti(L, -2, (int)i);
    }
}

static void
mp_get_map(lua_State *L, struct mp_cur *c, size_t hdr, uint64_t n)
{
    c->p += hdr;
    c->left -= hdr;
    luaL_checkstack(L, 4, "in function mp_decode_to_lua_hash");
    lua_newtable(L);
    for (uint64_t i = 0; i < n && !c->err; i++) {
        mp_get(L, c);
        if (c->err) {
            return;
        }
        mp_get(L, c);
        if (c->err) {
            return;
        }
        if (lua_isnil(L, -2)) {
            lua_pop(L, 2); /* (a nil key cannot be set) */
        } else {
            lua_settable(L, -3);
        }
    }
}

static void
mp_get_num(lua_State *L, struct mp_cur *c, lua_Number v, size_t n)
{
    lua_pushnumber(L, v);
    c->p += n;
    c->left -= n;
}

/* Decode one value onto the stack (nothing on an error, c->err set). */
static void
mp_get(lua_State *L, struct mp_cur *c)
{
    if (!mp_need(c, 1)) {
        return;
    }
    const unsigned char *p = c->p;
    unsigned t = p[0];
    if (t <= 0x7f) {
        mp_get_num(L, c, t, 1);
    } else if (t >= 0xe0) {
        mp_get_num(L, c, (int8_t)t, 1);
    } else if ((t & 0xf0) == 0x80) {
        mp_get_map(L, c, 1, t & 0x0f);
    } else if ((t & 0xf0) == 0x90) {
        mp_get_array(L, c, 1, t & 0x0f);
    } else if ((t & 0xe0) == 0xa0) {
        mp_get_str(L, c, 1, t & 0x1f);
    } else {
        static const signed char width[] = {
            /* 0xc0..0xdf: the bytes after the tag (-1: not a type decoded here) */
            0, -1, 0, 0, -1, -1, -1, -1, -1, -1, 4, 8, 1, 2, 4, 8, /* (no bin types, as Redis's) */
            1, 2,  4, 8, -1, -1, -1, -1, -1, 1,  2, 4, 2, 4, 2, 4,
        };
        int w = width[t - 0xc0];
        if (w < 0) {
            c->err = MP_BAD;
            return;
        }
        if (!mp_need(c, 1 + (size_t)w)) {
            return;
        }
        uint64_t v = mp_be(p + 1, w);
        switch (t) {
        case 0xc0:
            lua_pushnil(L);
            c->p++;
            c->left--;
            break;
        case 0xc2:
        case 0xc3:
            lua_pushboolean(L, t == 0xc3);
            c->p++;
            c->left--;
            break;
        case 0xd9:
        case 0xda:
        case 0xdb: mp_get_str(L, c, 1 + (size_t)w, v); break;
        case 0xca: {
            uint32_t u = (uint32_t)v;
            float f;
            memcpy(&f, &u, 4);
            mp_get_num(L, c, f, 5);
            break;
        }
        case 0xcb: {
            double d;
            memcpy(&d, &v, 8);
            mp_get_num(L, c, d, 9);
            break;
        }
        case 0xcc:
        case 0xcd:
        case 0xce:
        case 0xcf: mp_get_num(L, c, (lua_Number)v, 1 + (size_t)w); break;
        case 0xd0: mp_get_num(L, c, (int8_t)v, 2); break;
        case 0xd1: mp_get_num(L, c, (int16_t)v, 3); break;
        case 0xd2: mp_get_num(L, c, (int32_t)v, 5); break;
        case 0xd3: mp_get_num(L, c, (lua_Number)(int64_t)v, 9); break;
        case 0xdc:
        case 0xdd: mp_get_array(L, c, 1 + (size_t)w, v); break;
        default: mp_get_map(L, c, 1 + (size_t)w, v); break; /* 0xde, 0xdf */
        }
    }
}

/* Decode up to limit values from offset (all of them: limit 0 and offset 0,
 * no offset returned); else returns the next offset (-1 at the end) first. */
static int
mp_unpack_full(lua_State *L, lua_Integer limit, lua_Integer offset)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    bool all = limit == 0 && offset == 0;
    if (offset < 0 || limit < 0) {
        return luaL_error(L, "Invalid request to unpack with offset of %d and limit of %d.",
                          (int)offset, (int)len);
    }
    if ((size_t)offset > len) {
        return luaL_error(L, "Start offset %d greater than input length %d.", (int)offset,
                          (int)len);
    }
    if (all) {
        limit = INT_MAX;
    }
    struct mp_cur c = { (const unsigned char *)s + offset, len - (size_t)offset, 0 };
    int n = 0;
    for (; c.left > 0 && n < limit; n++) {
        luaL_checkstack(L, 2,
                        "too many return values at once; use unpack_one or unpack_limit "
                        "instead.");
        int top = lua_gettop(L);
        mp_get(L, &c);
        if (c.err) {
            lua_settop(L, top);
            return luaL_error(L, c.err == MP_EOF ? "Missing bytes in input."
                                                 : "Bad data format in input.");
        }
    }
    if (!all) {
        lua_pushinteger(L, c.left == 0 ? -1 : (lua_Integer)(len - c.left));
        lua_insert(L, 2);
        n++;
    }
    return n;
}

static int
l_mp_unpack(lua_State *L)
{
    return mp_unpack_full(L, 0, 0);
}

static int
l_mp_unpack_one(lua_State *L)
{
    lua_Integer offset = luaL_optinteger(L, 2, 0);
    lua_settop(L, 1);
    return mp_unpack_full(L, 1, offset);
}

static int
l_mp_unpack_limit(lua_State *L)
{
    lua_Integer limit = luaL_checkinteger(L, 2);
    lua_Integer offset = luaL_optinteger(L, 3, 0);
    lua_settop(L, 1);
    return mp_unpack_full(L, limit, offset);
}

/* ---------------------------------------------------------------- opening */

static void
new_lib(lua_State *L, const char *name, const luaL_Reg *fns)
{
    lua_newtable(L);
    for (const luaL_Reg *r = fns; r->name; r++) {
        lua_pushcfunction(L, r->func);
        lua_setfield(L, -2, r->name);
    }
    lua_setfield(L, LUA_GLOBALSINDEX, name);
}

void
script_lib_open(lua_State *L)
{
    static const luaL_Reg st[] = {
        { "pack", l_struct_pack },
        { "unpack", l_struct_unpack },
        { "size", l_struct_size },
        { NULL, NULL },
    };
    static const luaL_Reg mp[] = {
        { "pack", l_mp_pack },
        { "unpack", l_mp_unpack },
        { "unpack_one", l_mp_unpack_one },
        { "unpack_limit", l_mp_unpack_limit },
        { NULL, NULL },
    };
    new_lib(L, "struct", st);
    new_lib(L, "cmsgpack", mp);
    lua_getfield(L, LUA_GLOBALSINDEX, "cmsgpack");
    lua_pushstring(L, "lua-cmsgpack");
    lua_setfield(L, -2, "_NAME");
    lua_pushstring(L, "0.4.0");
    lua_setfield(L, -2, "_VERSION");
    lua_pop(L, 1);
}
