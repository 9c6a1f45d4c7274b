/* node/commands/script_conv.h: the conversions of node/commands/script.c,
 * as Redis documents them: a command's reply (RESP2 or RESP3, as our reply
 * writer wrote it) to a Lua value, and a script's Lua value to the client's
 * reply in its protocol. */
#pragma once
#include <lua.h>

struct conn;

/* Push the reply at *p (up to end) onto L and move *p past it. */
void script_conv_push(lua_State *L, const char **p, const char *end, int depth);
/* Write the value at the top of L as c's reply (in c->proto) and pop it. */
void script_conv_write(struct conn *c, lua_State *L, int depth);
