/* node/t_geo_rows.h: command rows of t_geo.c, included inside cmd_table[]. */
