/* node/commands/t_sort.h: SORT and SORT_RO (t_sort.c) and LCS (t_lcs.c). */
#pragma once
#include "node/commands/cmds.h"

CMD_HANDLER(sort);
CMD_HANDLER(sort_ro);
CMD_HANDLER(lcs);
/* getkeys: the sorted key and the last STORE destination (Redis sortGetKeys). */
int sort_getkeys(int argc, struct rv_str *argv, int *out, int max);
int sort_ro_getkeys(int argc, struct rv_str *argv, int *out, int max);
/* COMMAND INFO's key specs of SORT (store) and SORT_RO, as Redis 7.0 lists them. */
void sort_reply_key_specs(struct conn *c, bool store);
