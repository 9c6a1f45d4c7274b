/* node/commands/t_sort.h: SORT and SORT_RO (t_sort.c) and LCS (t_lcs.c). */
#pragma once
#include "node/commands/cmds.h"

CMD_HANDLER(sort);
CMD_HANDLER(sort_ro);
CMD_HANDLER(lcs);
/* getkeys: the sorted key and the last STORE destination (Redis sortGetKeys). */
int sort_getkeys(int argc, struct rv_str *argv, int *out, int max);
int sort_ro_getkeys(int argc, struct rv_str *argv, int *out, int max);
