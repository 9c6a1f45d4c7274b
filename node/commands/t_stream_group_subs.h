/* node/commands/t_stream_group_subs.h: XGROUP's and XINFO's subcommand rows,
 * included in cmd_table.c before cmd_table[]. */
/* clang-format off */
static struct cmd_spec xgroup_subs[] = {
    ROW("create", cmd_xgroup_create, -5, W | DO, 2, 2, 1, CAT_WRITE | CAT_STREAM | CAT_SLOW, "stream", "5.0.0", "O(1)", "Creates a consumer group.", "key group id | $ [MKSTREAM] [ENTRIESREAD entries-read]"),
    ROW("createconsumer", cmd_xgroup_createconsumer, 5, W | DO, 2, 2, 1, CAT_WRITE | CAT_STREAM | CAT_SLOW, "stream", "6.2.0", "O(1)", "Creates a consumer in a consumer group.", "key group consumer"),
    ROW("delconsumer", cmd_xgroup_delconsumer, 5, W, 2, 2, 1, CAT_WRITE | CAT_STREAM | CAT_SLOW, "stream", "5.0.0", "O(1)", "Deletes a consumer from a consumer group.", "key group consumer"),
    ROW("destroy", cmd_xgroup_destroy, 4, W, 2, 2, 1, CAT_WRITE | CAT_STREAM | CAT_SLOW, "stream", "5.0.0", "O(N) where N is the number of entries in the group's pending entries list (PEL).", "Destroys a consumer group.", "key group"),
    ROW("setid", cmd_xgroup_setid, -5, W, 2, 2, 1, CAT_WRITE | CAT_STREAM | CAT_SLOW, "stream", "5.0.0", "O(1)", "Sets the last-delivered ID of a consumer group.", "key group id | $ [ENTRIESREAD entries-read]"),
    ROW("help", cmd_xgroup_help, 2, LO | ST, 0, 0, 0, CAT_STREAM | CAT_SLOW, "stream", "5.0.0", "O(1)", "Returns helpful text about the different subcommands.", ""),
    END,
};

static struct cmd_spec xinfo_subs[] = {
    ROW("consumers", cmd_xinfo_consumers, 4, RO, 2, 2, 1, CAT_READ | CAT_STREAM | CAT_SLOW, "stream", "5.0.0", "O(1)", "Returns a list of the consumers in a consumer group.", "key group"),
    ROW("groups", cmd_xinfo_groups, 3, RO, 2, 2, 1, CAT_READ | CAT_STREAM | CAT_SLOW, "stream", "5.0.0", "O(1)", "Returns a list of the consumer groups of a stream.", "key"),
    ROW("stream", cmd_xinfo_stream, -3, RO, 2, 2, 1, CAT_READ | CAT_STREAM | CAT_SLOW, "stream", "5.0.0", "O(1)", "Returns information about a stream.", "key [FULL [COUNT count]]"),
    ROW("help", cmd_xinfo_help, 2, LO | ST, 0, 0, 0, CAT_STREAM | CAT_SLOW, "stream", "5.0.0", "O(1)", "Returns helpful text about the different subcommands.", ""),
    END,
};
/* clang-format on */
