/* node/commands/t_hll_rows.h: command rows of t_hll.c, included inside cmd_table[]. */
/* clang-format off */
    ROW("pfadd", cmd_pfadd, -2, W | DO | FA, 1, 1, 1, CAT_WRITE | CAT_HYPERLOGLOG | CAT_FAST, "hyperloglog", "2.8.9", "O(1) to add every element.", "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.", "key [element [element ...]]"),
    ROW("pfcount", cmd_pfcount, -2, RO | CMD_MAY_REPLICATE, 1, -1, 1, CAT_READ | CAT_HYPERLOGLOG | CAT_SLOW, "hyperloglog", "2.8.9", "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.", "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s).", "key [key ...]"),
    ROW("pfmerge", cmd_pfmerge, -2, W | DO, 1, -1, 1, CAT_WRITE | CAT_HYPERLOGLOG | CAT_SLOW, "hyperloglog", "2.8.9", "O(N) to merge N HyperLogLogs, but with high constant times.", "Merges one or more HyperLogLog values into a single key.", "destkey [sourcekey [sourcekey ...]]"),
    /* clang-format on */
