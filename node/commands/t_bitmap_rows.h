/* node/commands/t_bitmap_rows.h: command rows of t_bitmap.c, included inside cmd_table[]. */
/* clang-format off */
    ROW("setbit", cmd_setbit, 4, W | DO, 1, 1, 1, CAT_WRITE | CAT_BITMAP | CAT_SLOW, "bitmap", "2.2.0", "O(1)", "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", "key offset value"),
    ROW("getbit", cmd_getbit, 3, RO | FA, 1, 1, 1, CAT_READ | CAT_BITMAP | CAT_FAST, "bitmap", "2.2.0", "O(1)", "Returns a bit value by offset.", "key offset"),
    ROW("bitcount", cmd_bitcount, -2, RO, 1, 1, 1, CAT_READ | CAT_BITMAP | CAT_SLOW, "bitmap", "2.6.0", "O(N)", "Counts the number of set bits (population counting) in a string.", "key [start end [BYTE | BIT]]"),
    ROW("bitpos", cmd_bitpos, -3, RO, 1, 1, 1, CAT_READ | CAT_BITMAP | CAT_SLOW, "bitmap", "2.8.7", "O(N)", "Finds the first set (1) or clear (0) bit in a string.", "key bit [start [end [BYTE | BIT]]]"),
    ROW("bitop", cmd_bitop, -4, W | DO, 2, -1, 1, CAT_WRITE | CAT_BITMAP | CAT_SLOW, "bitmap", "2.6.0", "O(N)", "Performs bitwise operations on multiple strings, and stores the result.", "operation destkey key [key ...]"),
    ROW("bitfield", cmd_bitfield, -2, W | DO, 1, 1, 1, CAT_WRITE | CAT_BITMAP | CAT_SLOW, "bitmap", "3.2.0", "O(1) for each subcommand specified", "Performs arbitrary bitfield integer operations on strings.", "key [GET encoding offset | <[OVERFLOW WRAP | SAT | FAIL] <SET encoding offset value | INCRBY encoding offset increment>> ...]"),
    ROW("bitfield_ro", cmd_bitfield_ro, -2, RO | FA, 1, 1, 1, CAT_READ | CAT_BITMAP | CAT_FAST, "bitmap", "6.0.0", "O(1) for each subcommand specified", "Performs arbitrary read-only bitfield integer operations on strings.", "key [GET encoding offset ...]"),
    /* clang-format on */
