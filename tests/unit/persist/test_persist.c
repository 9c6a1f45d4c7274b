/* Unit tests of the WAL glue's pure parts: the record size bound that lets
 * dispatch refuse a write before it runs (issue 14, finding 11). */
#include "node/persist/persist.h"

#include "wal/wal.h"

#include <criterion/criterion.h>

Test(persist_limit, a_command_at_the_limit_runs_one_byte_over_is_refused)
{
    struct rv_str argv[3] = { { "SET", 3 }, { "k", 1 }, { NULL, 0 } };
    uint64_t base = persist_rec_need(0, 3, argv); /* the value's bytes are added 1:1 */
    argv[2].len = (size_t)(WAL_MAX_REC - base);
    cr_assert_eq(persist_rec_need(0, 3, argv), WAL_MAX_REC);
    argv[2].len++;
    cr_assert_gt(persist_rec_need(0, 3, argv), WAL_MAX_REC);
    argv[2].len = (size_t)1 << 32; /* would have wrapped to 0 */
    cr_assert_gt(persist_rec_need(0, 3, argv), WAL_MAX_REC);
}

Test(persist_limit, an_exec_record_counts_what_it_already_holds)
{
    struct rv_str argv[3] = { { "SET", 3 }, { "k", 1 }, { "v", 1 } };
    uint64_t small = persist_rec_need(0, 3, argv);
    cr_assert_lt(small, 128);
    uint64_t open = WAL_MAX_REC - 8; /* earlier commands of the transaction */
    cr_assert_gt(persist_rec_need(open, 3, argv), WAL_MAX_REC);
    cr_assert_leq(persist_rec_need(WAL_MAX_REC - small, 3, argv), WAL_MAX_REC);
}
