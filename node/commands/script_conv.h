/* node/commands/script_conv.h: the conversions of node/commands/script.c,
 * as Redis documents them: a command's reply (RESP2 or RESP3, as our reply
 * writer wrote it) to a Lua value, and a script's Lua value to the client's
 * reply in its protocol. */
#pragma once
#include <lua.h>
#include <stdbool.h>
#include <stddef.h>

struct conn;

/* Push the reply at *p (up to end) onto L and move *p past it. */
void script_conv_push(lua_State *L, const char **p, const char *end, int depth);
/* Write the value at the top of L as c's reply (in c->proto) and pop it. */
void script_conv_write(struct conn *c, lua_State *L, int depth);
/* A script's error reply, counted as Redis 7 counts it. An error a call
 * inside the script already counted (its table has SCRIPT_ERR_COUNTED set)
 * counts only in the running command's failed_calls; any other is counted
 * in INFO errorstats under its own code. */
#define SCRIPT_ERR_COUNTED "ignore_error_stats_update"
void script_conv_error(struct conn *c, bool counted, const char *msg, size_t n);
/* Count c's error replies not counted yet (INFO errorstats, total_error_replies). */
void script_count_errors(struct conn *c);
