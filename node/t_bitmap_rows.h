/* node/t_bitmap_rows.h: command rows of t_bitmap.c, included inside cmd_table[]. */
