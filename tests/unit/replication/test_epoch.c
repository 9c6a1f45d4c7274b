/* repl_newer: which of two histories supersedes the other (docs/replication.md,
 * "Promotion and history ids"): a greater epoch, or two promotions from one
 * epoch told apart by replid; epoch 0 (independent nodes) never fences. */
#include "replication/repl_int.h"

#include <criterion/criterion.h>

#define A "1111111111111111111111111111111111111111"
#define B "2222222222222222222222222222222222222222"

Test(epoch, greater_epoch_wins_whatever_the_replid)
{
    cr_assert(repl_newer(2, A, 1, B));
    cr_assert_not(repl_newer(1, B, 2, A));
}

Test(epoch, same_epoch_is_decided_by_replid_both_ways)
{
    cr_assert(repl_newer(1, B, 1, A));
    cr_assert_not(repl_newer(1, A, 1, B));
}

Test(epoch, one_history_never_supersedes_itself)
{
    cr_assert_not(repl_newer(3, A, 3, A));
}

Test(epoch, epoch_zero_and_unnamed_histories_never_fence)
{
    cr_assert_not(repl_newer(0, B, 0, A));   /* two fresh nodes */
    cr_assert_not(repl_newer(1, "?", 1, A)); /* a replica with no history */
    cr_assert_not(repl_newer(1, B, 1, ""));
}
