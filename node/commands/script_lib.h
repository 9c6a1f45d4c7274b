/* node/commands/script_lib.h: the `struct` and `cmsgpack` libraries of the
 * scripts' sandbox (script_lib.c), written here from their formats. */
#pragma once
#include <lua.h>
#include <stdbool.h>

/* Set the globals `struct` and `cmsgpack` (the sandbox then makes them read-only). */
void script_lib_open(lua_State *L);
