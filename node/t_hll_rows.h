/* node/t_hll_rows.h: command rows of t_hll.c, included inside cmd_table[]. */
