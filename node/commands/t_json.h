/* node/commands/t_json.h: the JSON.* commands (node/commands/t_json.c); the
 * document tree is node/types/json.h, paths node/types/json_path.h. */
#pragma once
#include "node/commands/cmds.h" /* CMD_HANDLER */
#include "node/core/cmd.h"

CMD_HANDLER(json_set);
CMD_HANDLER(json_get);
CMD_HANDLER(json_mget);
CMD_HANDLER(json_mset);
CMD_HANDLER(json_del);
CMD_HANDLER(json_type);
CMD_HANDLER(json_clear);
CMD_HANDLER(json_toggle);
CMD_HANDLER(json_merge);
CMD_HANDLER(json_resp);
CMD_HANDLER(json_debug_memory);
CMD_HANDLER(json_debug_help);
CMD_HANDLER(json_debug); /* a subcommand JSON.DEBUG does not have */
CMD_HANDLER(json_strlen);
CMD_HANDLER(json_strappend);
CMD_HANDLER(json_numincrby);
CMD_HANDLER(json_nummultby);
CMD_HANDLER(json_arrappend);
CMD_HANDLER(json_arrindex);
CMD_HANDLER(json_arrinsert);
CMD_HANDLER(json_arrlen);
CMD_HANDLER(json_arrpop);
CMD_HANDLER(json_arrtrim);
CMD_HANDLER(json_objkeys);
CMD_HANDLER(json_objlen);
