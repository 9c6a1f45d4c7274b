#include "cluster/topo.h"

#include "base/rv_err.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* Each test runs in its own process, so this state is per test. */
static struct topo *T;
static struct buf B;
static struct buf TXT;
static char E[TOPO_ERR_MAX];
static char ID[64][TOPO_ID_LEN + 1];
static char SH[64][TOPO_ID_LEN + 1];

static void
setup(void)
{
    T = topo_create();
    buf_init(&B);
    buf_init(&TXT);
    for (unsigned i = 0; i < 64; i++) {
        snprintf(ID[i], sizeof(ID[i]), "%02x%038u", i * 3 + 1, i);
        snprintf(SH[i], sizeof(SH[i]), "5%039u", i);
    }
}

static void
teardown(void)
{
    topo_put(T);
    buf_deinit(&B);
    buf_deinit(&TXT);
}

TestSuite(topo, .init = setup, .fini = teardown);

/* Apply what B holds to T. */
static enum topo_res
apply(void)
{
    struct topo *next;
    enum topo_res r = topo_apply(T, B.data, B.len, &next, E, sizeof(E));
    cr_assert_not_null(next);
    topo_put(T);
    T = next;
    buf_reset(&B);
    return r;
}

#define EXPECT(enc, want)                                                                          \
    do {                                                                                           \
        buf_reset(&B);                                                                             \
        cr_assert_eq((enc), RV_OK);                                                                \
        enum topo_res got_ = apply();                                                              \
        cr_assert_eq(got_, (want), "got %d (%s)", got_, E);                                        \
    } while (0)
#define OK(enc) EXPECT(enc, TOPO_CHANGED)
#define SAME(enc) EXPECT(enc, TOPO_UNCHANGED)
#define REFUSED(enc, text)                                                                         \
    do {                                                                                           \
        uint64_t v_ = T->version;                                                                  \
        EXPECT(enc, TOPO_EREFUSED);                                                                \
        cr_assert_str_eq(E, (text));                                                               \
        cr_assert_eq(T->version, v_);                                                              \
    } while (0)

static int
add_node(unsigned i, int primary, uint64_t host)
{
    struct topo_node_spec s = {
        .id = ID[i],
        .shard_id = SH[i],
        .ip = "127.0.0.1",
        .port = (uint16_t)(30001 + i),
        .cport = (uint16_t)(40001 + i),
        .role = primary < 0 ? TOPO_PRIMARY : TOPO_REPLICA,
        .primary_id = primary < 0 ? NULL : ID[primary],
        .host_id = host,
    };
    return topo_enc_node_add(&B, &s);
}

static int
add_slots(unsigned i, unsigned lo, unsigned hi)
{
    struct topo_range r = { (uint16_t)lo, (uint16_t)hi };
    return topo_enc_slots_add(&B, ID[i], &r, 1);
}

static int
idx(unsigned i)
{
    return topo_find(T, ID[i], TOPO_ID_LEN);
}

static const struct topo_node *
node(unsigned i)
{
    return topo_node_by_id(T, ID[i], TOPO_ID_LEN);
}

/* CLUSTER NODES as seen by myself; valid until the next call. */
static char *
nodes_text(const char *myself)
{
    buf_reset(&TXT);
    topo_nodes_text(T, myself, NULL, &TXT);
    buf_putc(&TXT, '\0');
    return TXT.data;
}

/* ---- nodes ---- */

Test(topo, node_add_lookup_and_refusals)
{
    OK(add_node(0, -1, 7));
    OK(add_node(1, -1, 8));
    OK(add_node(2, 0, 8));
    cr_assert_eq(T->version, 3);
    cr_assert_eq(T->nnodes, 3);
    const struct topo_node *r = node(2);
    cr_assert_not_null(r);
    cr_assert_eq(r->role, TOPO_REPLICA);
    cr_assert_eq(r->primary, idx(0));
    cr_assert_str_eq(r->shard_id, SH[0], "a replica takes its primary's shard id");
    cr_assert_str_eq(r->ip, "127.0.0.1");
    cr_assert_eq(r->port, 30003);
    cr_assert_eq(r->host_id, 8);
    cr_assert_null(topo_node_by_id(T, ID[3], TOPO_ID_LEN));
    cr_assert_eq(topo_find(T, ID[0], 39), -1);

    char want[TOPO_ERR_MAX];
    snprintf(want, sizeof(want), "ERR Node %s already exists", ID[1]);
    REFUSED(add_node(1, -1, 1), want);
    snprintf(want, sizeof(want), "ERR Unknown node %s", ID[9]);
    REFUSED(add_node(3, 9, 1), want);
    REFUSED(add_node(3, 2, 1), "ERR I can only replicate a master, not a replica.");
    cr_assert_eq(T->nnodes, 3);

    struct topo_node_spec s = { .id = ID[4], .shard_id = SH[4], .ip = "::1", .config_epoch = 9 };
    OK(topo_enc_node_add(&B, &s));
    cr_assert_eq(T->current_epoch, 9, "a node's config epoch raises the current epoch");

    uint16_t out[8];
    cr_assert_eq(topo_host_nodes(T, 8, out, 8), 2);
    cr_assert_eq(out[0], idx(1));
    cr_assert_eq(out[1], idx(2));
    cr_assert_eq(topo_primaries(T, out, 8), 3);
    cr_assert_eq(topo_replicas(T, (unsigned)idx(0), out, 8), 1);
    cr_assert_eq(out[0], idx(2));
    cr_assert_eq(topo_shard_nodes(T, SH[0], out, 1), 2, "the count exceeds cap");
    cr_assert_eq(out[0], idx(0));
}

Test(topo, node_forget_renumbers)
{
    for (unsigned i = 0; i < 3; i++) {
        OK(add_node(i, -1, 1));
    }
    OK(add_node(3, 2, 1));
    OK(add_slots(0, 0, 9));
    OK(add_slots(1, 10, 19));
    OK(add_slots(2, 20, 29));
    OK(topo_enc_setslot(&B, TOPO_CMD_SLOT_MIGRATING, 25, ID[2], ID[1]));
    OK(topo_enc_setslot(&B, TOPO_CMD_SLOT_IMPORTING, 5, ID[2], ID[0]));
    OK(topo_enc_node_forget(&B, ID[1]));
    cr_assert_eq(T->nnodes, 3);
    cr_assert_null(node(1));
    cr_assert_null(topo_slot_node(T, 15), "the forgotten node's slots are unassigned");
    cr_assert_str_eq(topo_slot_node(T, 25)->id, ID[2]);
    cr_assert_str_eq(topo_slot_node(T, 5)->id, ID[0]);
    cr_assert_eq(node(3)->primary, idx(2));
    cr_assert_null(topo_slot_mig(T, 25), "a migration towards it is gone");
    const struct topo_mig *m = topo_slot_mig(T, 5);
    cr_assert_not_null(m);
    cr_assert_eq(m->imp_by, idx(2));
    cr_assert_eq(m->imp_from, idx(0));

    OK(topo_enc_node_forget(&B, ID[2]));
    cr_assert_eq(node(3)->role, TOPO_REPLICA);
    cr_assert_eq(node(3)->primary, TOPO_NONE, "its replica is an orphan");
    cr_assert_eq(T->nmigs, 0);
    char want[TOPO_ERR_MAX];
    snprintf(want, sizeof(want), "ERR Unknown node %s", ID[2]);
    REFUSED(topo_enc_node_forget(&B, ID[2]), want);
}

Test(topo, forget_check_from_myself)
{
    OK(add_node(0, -1, 1));
    OK(add_node(1, 0, 1));
    OK(add_node(2, -1, 1));
    char err[TOPO_ERR_MAX], want[TOPO_ERR_MAX];
    cr_assert(topo_forget_check(T, ID[0], ID[2], err, sizeof(err)));
    cr_assert(topo_forget_check(T, ID[2], ID[0], err, sizeof(err)));
    cr_assert_not(topo_forget_check(T, ID[0], ID[0], err, sizeof(err)));
    cr_assert_str_eq(err, "ERR I tried hard but I can't forget myself...");
    cr_assert_not(topo_forget_check(T, ID[1], ID[0], err, sizeof(err)));
    cr_assert_str_eq(err, "ERR Can't forget my master!");
    cr_assert_not(topo_forget_check(T, ID[1], ID[5], err, sizeof(err)));
    snprintf(want, sizeof(want), "ERR Unknown node %s", ID[5]);
    cr_assert_str_eq(err, want);
    cr_assert_not(topo_forget_check(T, ID[1], "short", err, sizeof(err)));
    cr_assert_str_eq(err, "ERR Unknown node short");
}

Test(topo, node_set_addr_and_flags)
{
    OK(add_node(0, -1, 1));
    OK(topo_enc_node_set_addr(&B, ID[0], "10.0.0.1", 7000, 17000, "h1.example"));
    cr_assert_str_eq(node(0)->ip, "10.0.0.1");
    cr_assert_eq(node(0)->port, 7000);
    cr_assert_eq(node(0)->cport, 17000);
    cr_assert_str_eq(node(0)->hostname, "h1.example");
    SAME(topo_enc_node_set_addr(&B, ID[0], "10.0.0.1", 7000, 17000, "h1.example"));
    OK(topo_enc_node_set_flags(&B, ID[0], TOPO_F_FAIL | TOPO_F_NOFAILOVER));
    cr_assert_eq(node(0)->flags, TOPO_F_FAIL | TOPO_F_NOFAILOVER);
    SAME(topo_enc_node_set_flags(&B, ID[0], TOPO_F_FAIL | TOPO_F_NOFAILOVER));
    char want[TOPO_ERR_MAX];
    snprintf(want, sizeof(want), "ERR Unknown node %s", ID[5]);
    REFUSED(topo_enc_node_set_addr(&B, ID[5], "1.2.3.4", 1, 2, NULL), want);
    REFUSED(topo_enc_node_set_flags(&B, ID[5], 0), want);
    cr_assert_eq(T->version, 3);
}

/* ---- slots ---- */

Test(topo, slots_add_del_flush)
{
    OK(add_node(0, -1, 1));
    OK(add_node(1, -1, 1));
    OK(add_node(2, 0, 1));
    struct topo_range r[3] = { { 0, 4 }, { 6, 6 }, { 100, 200 } };
    OK(topo_enc_slots_add(&B, ID[0], r, 3));
    cr_assert_eq(topo_node_slot_count(T, (unsigned)idx(0)), 5 + 1 + 101);
    cr_assert_null(topo_slot_node(T, 5));
    cr_assert_str_eq(topo_slot_node(T, 6)->id, ID[0]);

    struct topo_range busy[2] = { { 7, 9 }, { 150, 150 } };
    REFUSED(topo_enc_slots_add(&B, ID[1], busy, 2), "ERR Slot 150 is already busy");
    cr_assert_null(topo_slot_node(T, 7), "a refused command changes nothing");
    struct topo_range dup[2] = { { 7, 9 }, { 9, 10 } };
    REFUSED(topo_enc_slots_add(&B, ID[1], dup, 2), "ERR Slot 9 specified multiple times");
    REFUSED(add_slots(2, 300, 300), "ERR Cannot assign slots to a replica");
    char want[TOPO_ERR_MAX];
    snprintf(want, sizeof(want), "ERR Unknown node %s", ID[7]);
    REFUSED(add_slots(7, 300, 300), want);

    struct topo_range del[2] = { { 0, 1 }, { 5, 5 } };
    REFUSED(topo_enc_slots_del(&B, del, 2), "ERR Slot 5 is already unassigned");
    struct topo_range deldup[2] = { { 0, 1 }, { 1, 1 } };
    REFUSED(topo_enc_slots_del(&B, deldup, 2), "ERR Slot 1 specified multiple times");
    OK(topo_enc_slots_del(&B, del, 1));
    cr_assert_null(topo_slot_node(T, 0));
    cr_assert_str_eq(topo_slot_node(T, 2)->id, ID[0]);

    OK(add_slots(1, 16383, 16383));
    OK(topo_enc_slots_flush(&B, ID[0]));
    cr_assert_eq(topo_node_slot_count(T, (unsigned)idx(0)), 0);
    cr_assert_str_eq(topo_slot_node(T, 16383)->id, ID[1]);
    SAME(topo_enc_slots_flush(&B, ID[0]));
    REFUSED(topo_enc_slots_flush(&B, ID[7]), want);
}

Test(topo, ranges_iterate_in_slot_order)
{
    OK(add_node(0, -1, 1));
    OK(add_node(1, -1, 1));
    OK(add_slots(0, 0, 99));
    OK(add_slots(1, 100, 199));
    OK(add_slots(0, 300, 300));
    unsigned pos = 0;
    struct topo_range r;
    uint16_t o;
    cr_assert(topo_next_range(T, &pos, TOPO_NONE, &r, &o));
    cr_assert(r.lo == 0 && r.hi == 99 && o == idx(0));
    cr_assert(topo_next_range(T, &pos, TOPO_NONE, &r, &o));
    cr_assert(r.lo == 100 && r.hi == 199 && o == idx(1));
    cr_assert(topo_next_range(T, &pos, TOPO_NONE, &r, &o));
    cr_assert(r.lo == 300 && r.hi == 300 && o == idx(0));
    cr_assert_not(topo_next_range(T, &pos, TOPO_NONE, &r, &o));
    pos = 0;
    cr_assert(topo_next_range(T, &pos, (unsigned)idx(0), &r, NULL));
    cr_assert(topo_next_range(T, &pos, (unsigned)idx(0), &r, NULL));
    cr_assert(r.lo == 300 && r.hi == 300);
    cr_assert_not(topo_next_range(T, &pos, (unsigned)idx(0), &r, NULL));
}

/* ---- roles and epochs ---- */

Test(topo, replicate)
{
    OK(add_node(0, -1, 1));
    OK(add_node(1, -1, 2));
    OK(add_node(2, 0, 2));
    OK(add_node(3, -1, 3));
    OK(add_node(4, 3, 3));
    OK(add_slots(0, 0, 10));
    char want[TOPO_ERR_MAX];
    snprintf(want, sizeof(want), "ERR Unknown node %s", ID[9]);
    REFUSED(topo_enc_replicate(&B, ID[1], ID[9]), want);
    REFUSED(topo_enc_replicate(&B, ID[9], ID[1]), want);
    REFUSED(topo_enc_replicate(&B, ID[1], ID[1]), "ERR Can't replicate myself");
    REFUSED(topo_enc_replicate(&B, ID[1], ID[2]),
            "ERR I can only replicate a master, not a replica.");
    REFUSED(topo_enc_replicate(&B, ID[0], ID[1]),
            "ERR To set a master the node must be empty and without assigned slots.");
    OK(topo_enc_replicate(&B, ID[1], ID[0]));
    cr_assert_eq(node(1)->role, TOPO_REPLICA);
    cr_assert_eq(node(1)->primary, idx(0));
    cr_assert_str_eq(node(1)->shard_id, SH[0]);
    SAME(topo_enc_replicate(&B, ID[1], ID[0]));
    /* A replica moves to another primary; a slotless primary's replicas follow it. */
    OK(topo_enc_replicate(&B, ID[2], ID[3]));
    cr_assert_eq(node(2)->primary, idx(3));
    cr_assert_str_eq(node(2)->shard_id, SH[3]);
    OK(topo_enc_replicate(&B, ID[3], ID[0]));
    cr_assert_eq(node(3)->primary, idx(0));
    cr_assert_eq(node(4)->primary, idx(0));
    cr_assert_eq(node(2)->primary, idx(0));
    uint16_t out[8];
    cr_assert_eq(topo_replicas(T, (unsigned)idx(0), out, 8), 4);
}

Test(topo, promote_moves_slots_and_epochs)
{
    OK(add_node(0, -1, 1));
    OK(add_node(1, -1, 2));
    OK(add_node(2, 0, 2));
    OK(add_node(3, 0, 3));
    OK(add_slots(0, 0, 5460));
    OK(add_slots(1, 5461, 10922));
    OK(topo_enc_set_config_epoch(&B, ID[0], 1));
    OK(topo_enc_set_config_epoch(&B, ID[1], 2));
    cr_assert_eq(T->current_epoch, 2);
    REFUSED(topo_enc_promote(&B, ID[0]), "ERR You should send CLUSTER FAILOVER to a replica");
    char want[TOPO_ERR_MAX];
    snprintf(want, sizeof(want), "ERR Unknown node %s", ID[9]);
    REFUSED(topo_enc_promote(&B, ID[9]), want);
    /* moves under way, both ways between 0 and 1 */
    OK(topo_enc_setslot(&B, TOPO_CMD_SLOT_MIGRATING, 7, ID[0], ID[1]));
    OK(topo_enc_setslot(&B, TOPO_CMD_SLOT_IMPORTING, 7, ID[1], ID[0]));
    OK(topo_enc_setslot(&B, TOPO_CMD_SLOT_MIGRATING, 6000, ID[1], ID[0]));
    OK(topo_enc_setslot(&B, TOPO_CMD_SLOT_IMPORTING, 6000, ID[0], ID[1]));

    OK(topo_enc_promote(&B, ID[2]));
    /* the states survive: node 0's are node 2's now, and node 1's name node 2 */
    const struct topo_mig *m = topo_slot_mig(T, 7);
    cr_assert(m && m->mig_by == idx(2) && m->mig_to == idx(1), "the source's MIGRATING moved");
    cr_assert(m->imp_by == idx(1) && m->imp_from == idx(2),
              "the target's IMPORTING names the new source");
    m = topo_slot_mig(T, 6000);
    cr_assert(m && m->mig_by == idx(1) && m->mig_to == idx(2));
    cr_assert(m->imp_by == idx(2) && m->imp_from == idx(1));
    cr_assert_eq(T->current_epoch, 3);
    cr_assert_eq(node(2)->role, TOPO_PRIMARY);
    cr_assert_eq(node(2)->primary, TOPO_NONE);
    cr_assert_eq(node(2)->config_epoch, 3);
    cr_assert_eq(node(0)->role, TOPO_REPLICA);
    cr_assert_eq(node(0)->primary, idx(2));
    cr_assert_eq(node(0)->config_epoch, 1, "the old primary keeps its epoch");
    cr_assert_eq(node(3)->primary, idx(2), "the other replica follows the new primary");
    cr_assert_eq(topo_node_slot_count(T, (unsigned)idx(2)), 5461);
    cr_assert_eq(topo_node_slot_count(T, (unsigned)idx(0)), 0);
    cr_assert_str_eq(topo_slot_node(T, 0)->id, ID[2]);
    cr_assert_str_eq(topo_slot_node(T, 5460)->id, ID[2]);
    cr_assert_str_eq(topo_slot_node(T, 5461)->id, ID[1]);
    cr_assert_str_eq(node(2)->shard_id, SH[0], "the shard keeps its id");

    /* An orphan replica becomes an empty primary with a new epoch. */
    OK(topo_enc_node_forget(&B, ID[2]));
    cr_assert_eq(node(0)->primary, TOPO_NONE);
    OK(topo_enc_promote(&B, ID[0]));
    cr_assert_eq(node(0)->role, TOPO_PRIMARY);
    cr_assert_eq(node(0)->config_epoch, 4);
}

Test(topo, set_config_epoch)
{
    OK(add_node(0, -1, 1));
    OK(add_node(1, -1, 1));
    SAME(topo_enc_set_config_epoch(&B, ID[0], 0));
    OK(topo_enc_set_config_epoch(&B, ID[0], 5));
    cr_assert_eq(node(0)->config_epoch, 5);
    cr_assert_eq(T->current_epoch, 5);
    REFUSED(topo_enc_set_config_epoch(&B, ID[0], 6), "ERR Node config epoch is already non-zero");
    REFUSED(topo_enc_set_config_epoch(&B, ID[1], UINT64_MAX),
            "ERR Invalid config epoch specified: -1");
    OK(topo_enc_set_config_epoch(&B, ID[1], 3));
    cr_assert_eq(T->current_epoch, 5, "a lower epoch leaves the current one");
    char want[TOPO_ERR_MAX];
    snprintf(want, sizeof(want), "ERR Unknown node %s", ID[9]);
    REFUSED(topo_enc_set_config_epoch(&B, ID[9], 1), want);
}

Test(topo, bump_epoch_like_redis)
{
    OK(add_node(0, -1, 1));
    /* Redis: BUMPED 1, then STILL 1 for a lone node. */
    OK(topo_enc_bump_epoch(&B, ID[0]));
    cr_assert_eq(node(0)->config_epoch, 1);
    SAME(topo_enc_bump_epoch(&B, ID[0]));
    cr_assert_eq(node(0)->config_epoch, 1);
    OK(add_node(1, -1, 1));
    OK(topo_enc_bump_epoch(&B, ID[1]));
    cr_assert_eq(node(1)->config_epoch, 2);
    /* Node 0 no longer holds the greatest epoch. */
    OK(topo_enc_bump_epoch(&B, ID[0]));
    cr_assert_eq(node(0)->config_epoch, 3);
    cr_assert_eq(T->current_epoch, 3);
    char want[TOPO_ERR_MAX];
    snprintf(want, sizeof(want), "ERR Unknown node %s", ID[9]);
    REFUSED(topo_enc_bump_epoch(&B, ID[9]), want);
}

/* Found by fuzz_topo: NODE_ADD takes any u64 config epoch, and a new epoch
 * past UINT64_MAX wrapped to 0, leaving the current epoch below the nodes'
 * (a snapshot topo_decode refuses). Each way to a new epoch is refused now. */
Test(topo, epoch_overflow_refused)
{
    struct topo_node_spec s = {
        .id = ID[0],
        .shard_id = SH[0],
        .ip = "",
        .role = TOPO_PRIMARY,
        .config_epoch = UINT64_MAX,
    };
    OK(topo_enc_node_add(&B, &s));
    cr_assert_eq(T->current_epoch, UINT64_MAX);
    OK(add_node(1, 0, 1));
    OK(add_node(2, -1, 1));
    OK(add_slots(0, 0, 10));
    uint64_t v = T->version;
    REFUSED(topo_enc_promote(&B, ID[1]), "ERR Config epoch overflow");
    REFUSED(topo_enc_bump_epoch(&B, ID[2]), "ERR Config epoch overflow");
    SAME(topo_enc_bump_epoch(&B, ID[0])); /* it already holds the greatest */
    OK(topo_enc_setslot(&B, TOPO_CMD_SLOT_IMPORTING, 5, ID[2], ID[0]));
    REFUSED(topo_enc_setslot(&B, TOPO_CMD_SLOT_NODE, 5, ID[2], ID[2]), "ERR Config epoch overflow");
    cr_assert_eq(T->version, v + 1);
    cr_assert_eq(T->current_epoch, UINT64_MAX);
    cr_assert_eq(node(1)->role, TOPO_REPLICA);
    cr_assert_eq(node(2)->config_epoch, 0);
    cr_assert_str_eq(topo_slot_node(T, 5)->id, ID[0]);
    /* The state still round-trips. */
    struct topo *d;
    buf_reset(&B);
    topo_encode(T, &B);
    cr_assert_eq(topo_decode(B.data, B.len, &d, E, sizeof(E)), RV_OK, "%s", E);
    topo_put(d);
    buf_reset(&B);
}

/* ---- SETSLOT ---- */

Test(topo, setslot_migrating_importing_stable_node)
{
    OK(add_node(0, -1, 1));
    OK(add_node(1, -1, 2));
    OK(add_node(2, 0, 2));
    OK(add_slots(0, 0, 100));
    char want[TOPO_ERR_MAX];

    REFUSED(topo_enc_setslot(&B, TOPO_CMD_SLOT_MIGRATING, 7, ID[2], ID[1]),
            "ERR Please use SETSLOT only with masters.");
    REFUSED(topo_enc_setslot(&B, TOPO_CMD_SLOT_MIGRATING, 7, ID[1], ID[0]),
            "ERR I'm not the owner of hash slot 7");
    snprintf(want, sizeof(want), "ERR I don't know about node %s", ID[9]);
    REFUSED(topo_enc_setslot(&B, TOPO_CMD_SLOT_MIGRATING, 7, ID[0], ID[9]), want);
    REFUSED(topo_enc_setslot(&B, TOPO_CMD_SLOT_MIGRATING, 7, ID[0], ID[2]),
            "ERR Target node is not a master");
    REFUSED(topo_enc_setslot(&B, TOPO_CMD_SLOT_IMPORTING, 7, ID[0], ID[1]),
            "ERR I'm already the owner of hash slot 7");
    REFUSED(topo_enc_setslot(&B, TOPO_CMD_SLOT_IMPORTING, 7, ID[1], ID[9]), want);
    REFUSED(topo_enc_setslot(&B, TOPO_CMD_SLOT_IMPORTING, 7, ID[1], ID[2]),
            "ERR Target node is not a master");
    snprintf(want, sizeof(want), "ERR Unknown node %s", ID[9]);
    REFUSED(topo_enc_setslot(&B, TOPO_CMD_SLOT_NODE, 7, ID[1], ID[9]), want);
    REFUSED(topo_enc_setslot(&B, TOPO_CMD_SLOT_NODE, 7, ID[1], ID[2]),
            "ERR Target node is not a master");
    REFUSED(topo_enc_setslot(&B, TOPO_CMD_SLOT_STABLE, 7, ID[9], NULL), want);

    OK(topo_enc_setslot(&B, TOPO_CMD_SLOT_IMPORTING, 7, ID[1], ID[0]));
    OK(topo_enc_setslot(&B, TOPO_CMD_SLOT_MIGRATING, 7, ID[0], ID[1]));
    SAME(topo_enc_setslot(&B, TOPO_CMD_SLOT_MIGRATING, 7, ID[0], ID[1]));
    const struct topo_mig *m = topo_slot_mig(T, 7);
    cr_assert_not_null(m);
    cr_assert(m->mig_by == idx(0) && m->mig_to == idx(1));
    cr_assert(m->imp_by == idx(1) && m->imp_from == idx(0));

    /* Each node lists its own side on its myself line only. */
    char *txt = nodes_text(ID[0]);
    snprintf(want, sizeof(want), " 0-100 [7->-%s]\n", ID[1]);
    cr_assert(strstr(txt, want), "%s", txt);
    cr_assert_null(strstr(txt, "-<-"));
    txt = nodes_text(ID[1]);
    snprintf(want, sizeof(want), "connected [7-<-%s]\n", ID[0]);
    cr_assert(strstr(txt, want), "%s", txt);
    cr_assert_null(strstr(txt, "->-"));

    /* SETSLOT NODE on the destination: it owns the slot, stops importing and
     * takes a new epoch; then on the source: it stops migrating. */
    OK(topo_enc_setslot(&B, TOPO_CMD_SLOT_NODE, 7, ID[1], ID[1]));
    cr_assert_str_eq(topo_slot_node(T, 7)->id, ID[1]);
    cr_assert_eq(node(1)->config_epoch, 1);
    m = topo_slot_mig(T, 7);
    cr_assert(m && m->imp_by == TOPO_NONE && m->mig_by == idx(0));
    OK(topo_enc_setslot(&B, TOPO_CMD_SLOT_NODE, 7, ID[0], ID[1]));
    cr_assert_null(topo_slot_mig(T, 7));
    SAME(topo_enc_setslot(&B, TOPO_CMD_SLOT_NODE, 7, ID[0], ID[1]));

    OK(topo_enc_setslot(&B, TOPO_CMD_SLOT_MIGRATING, 8, ID[0], ID[1]));
    OK(topo_enc_setslot(&B, TOPO_CMD_SLOT_IMPORTING, 8, ID[1], ID[0]));
    OK(topo_enc_setslot(&B, TOPO_CMD_SLOT_STABLE, 8, ID[0], NULL));
    m = topo_slot_mig(T, 8);
    cr_assert(m && m->mig_by == TOPO_NONE && m->imp_by == idx(1), "STABLE clears by's side");
    OK(topo_enc_setslot(&B, TOPO_CMD_SLOT_STABLE, 8, ID[1], NULL));
    cr_assert_null(topo_slot_mig(T, 8));
    SAME(topo_enc_setslot(&B, TOPO_CMD_SLOT_STABLE, 8, ID[1], NULL));

    /* ADDSLOTS ends an import into the node that gets the slot. */
    OK(topo_enc_setslot(&B, TOPO_CMD_SLOT_IMPORTING, 500, ID[1], ID[0]));
    OK(add_slots(1, 500, 500));
    cr_assert_null(topo_slot_mig(T, 500));
}

/* A batch applies its commands as one entry: one new version, or nothing
 * at all when one of them is refused or malformed. */
Test(topo, batch_all_or_nothing)
{
    OK(add_node(0, -1, 1));
    OK(add_node(1, -1, 2));
    OK(add_node(2, 0, 2));
    OK(add_slots(0, 0, 100));
    struct buf one;
    buf_init(&one);
    uint64_t v = T->version;

    /* slots 7 and 8 to node 1, then its epoch bump: one version */
    topo_batch_start(&B);
    for (unsigned slot = 7; slot <= 8; slot++) {
        buf_reset(&one);
        cr_assert_eq(topo_enc_setslot(&one, TOPO_CMD_SLOT_NODE, slot, ID[0], ID[1]), RV_OK);
        cr_assert_eq(topo_batch_add(&B, 0, one.data, one.len), RV_OK);
    }
    buf_reset(&one);
    cr_assert_eq(topo_enc_bump_epoch(&one, ID[1]), RV_OK);
    cr_assert_eq(topo_batch_add(&B, 0, one.data, one.len), RV_OK);
    cr_assert_eq(apply(), TOPO_CHANGED, "%s", E);
    cr_assert_eq(T->version, v + 1);
    cr_assert_str_eq(topo_slot_node(T, 7)->id, ID[1]);
    cr_assert_str_eq(topo_slot_node(T, 8)->id, ID[1]);
    cr_assert_str_eq(topo_slot_node(T, 9)->id, ID[0]);
    cr_assert_eq(node(1)->config_epoch, 1);

    /* the same again: nothing changes */
    topo_batch_start(&B);
    buf_reset(&one);
    topo_enc_setslot(&one, TOPO_CMD_SLOT_NODE, 7, ID[0], ID[1]);
    topo_batch_add(&B, 0, one.data, one.len);
    cr_assert_eq(apply(), TOPO_UNCHANGED, "%s", E);

    /* slot 9 would move, slot 10 is refused (a replica): neither moves */
    v = T->version;
    topo_batch_start(&B);
    buf_reset(&one);
    topo_enc_setslot(&one, TOPO_CMD_SLOT_NODE, 9, ID[0], ID[1]);
    topo_batch_add(&B, 0, one.data, one.len);
    buf_reset(&one);
    topo_enc_setslot(&one, TOPO_CMD_SLOT_NODE, 10, ID[0], ID[2]);
    topo_batch_add(&B, 0, one.data, one.len);
    cr_assert_eq(apply(), TOPO_EREFUSED);
    cr_assert_str_eq(E, "ERR Target node is not a master");
    cr_assert_eq(T->version, v);
    cr_assert_str_eq(topo_slot_node(T, 9)->id, ID[0]);

    /* malformed: empty, a batch inside, trailing bytes, a cut command */
    topo_batch_start(&B);
    cr_assert_eq(apply(), TOPO_EMALFORMED);
    cr_assert_str_eq(E, "ERR malformed topology entry: empty batch");
    struct buf inner;
    buf_init(&inner);
    topo_batch_start(&inner);
    buf_reset(&one);
    topo_enc_setslot(&one, TOPO_CMD_SLOT_NODE, 9, ID[0], ID[1]);
    topo_batch_add(&inner, 0, one.data, one.len);
    topo_batch_start(&B);
    cr_assert_eq(topo_batch_add(&B, 0, inner.data, inner.len), RV_EINVAL, "no batch in a batch");
    uint8_t nested[4] = { (uint8_t)inner.len, 0, 0, 0 };
    B.data[2] = 1;
    buf_append(&B, nested, 4);
    buf_append(&B, inner.data, inner.len);
    cr_assert_eq(apply(), TOPO_EMALFORMED);
    cr_assert_str_eq(E, "ERR malformed topology entry: a batch inside a batch");
    topo_batch_start(&B);
    topo_batch_add(&B, 0, one.data, one.len);
    buf_putc(&B, 0);
    cr_assert_eq(apply(), TOPO_EMALFORMED);
    cr_assert_str_eq(E, "ERR malformed topology entry: trailing bytes");
    topo_batch_start(&B);
    topo_batch_add(&B, 0, one.data, one.len);
    B.len--;
    cr_assert_eq(apply(), TOPO_EMALFORMED);
    cr_assert_str_eq(E, "ERR malformed topology entry: truncated");
    cr_assert_str_eq(topo_slot_node(T, 9)->id, ID[0]);
    buf_deinit(&inner);
    buf_deinit(&one);
}

/* ---- text ---- */

Test(topo, cluster_nodes_three_primaries_three_replicas)
{
    static const char *ids[6] = {
        "07c37dfeb235213a872192d90877d0cd55635b91", "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1",
        "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f", "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca",
        "6ec23923021cf3ffec47632106199cb7f496ce01", "824fe116063bc5fcf9f4ffd895bc17aee7731ac3",
    };
    static const uint16_t ranges[3][2] = { { 0, 5460 }, { 5461, 10922 }, { 10923, 16383 } };
    for (unsigned i = 0; i < 6; i++) {
        struct topo_node_spec s = {
            .id = ids[i],
            .shard_id = SH[i],
            .ip = "127.0.0.1",
            .port = (uint16_t)(30001 + i),
            .cport = (uint16_t)(40001 + i),
            .hostname = i == 1 ? "host-b.example" : NULL,
            .role = i < 3 ? TOPO_PRIMARY : TOPO_REPLICA,
            .primary_id = i < 3 ? NULL : ids[(i + 1) % 3],
            .config_epoch = i < 3 ? i + 1 : 0,
            .host_id = i % 3,
        };
        OK(topo_enc_node_add(&B, &s));
        if (i < 3) {
            struct topo_range r = { ranges[i][0], ranges[i][1] };
            OK(topo_enc_slots_add(&B, ids[i], &r, 1));
        }
    }
    struct topo_range extra = { 100, 100 };
    OK(topo_enc_slots_del(&B, &extra, 1));
    OK(topo_enc_slots_add(&B, ids[2], &extra, 1));
    OK(topo_enc_node_set_flags(&B, ids[5], TOPO_F_FAIL));
    /* Hand-built from the documented format: replicas show their primary's
     * epoch; ranges in slot order; myself only on the caller's line. */
    const char *want =
        "07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30001@40001 myself,master - 0 0 1 "
        "connected 0-99 101-5460\n"
        "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@40002,host-b.example master - "
        "0 0 2 connected 5461-10922\n"
        "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@40003 master - 0 0 3 connected "
        "100 10923-16383\n"
        "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30004@40004 slave "
        "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 0 0 2 connected\n"
        "6ec23923021cf3ffec47632106199cb7f496ce01 127.0.0.1:30005@40005 slave "
        "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 0 0 3 connected\n"
        "824fe116063bc5fcf9f4ffd895bc17aee7731ac3 127.0.0.1:30006@40006 slave,fail "
        "07c37dfeb235213a872192d90877d0cd55635b91 0 0 1 connected\n";
    cr_assert_str_eq(nodes_text(ids[0]), want);

    /* CLUSTER SLOTS' data: each run with its primary and replicas. */
    struct buf sl;
    buf_init(&sl);
    unsigned pos = 0;
    struct topo_range r;
    uint16_t owner, reps[4];
    while (topo_next_range(T, &pos, TOPO_NONE, &r, &owner)) {
        buf_appendf(&sl, "%u-%u %u", r.lo, r.hi, T->nodes[owner].port);
        size_t nr = topo_replicas(T, owner, reps, 4);
        for (size_t i = 0; i < nr; i++) {
            buf_appendf(&sl, " %u", T->nodes[reps[i]].port);
        }
        buf_putc(&sl, ';');
    }
    buf_putc(&sl, '\0');
    cr_assert_str_eq(sl.data, "0-99 30001 30006;100-100 30003 30005;101-5460 30001 30006;"
                              "5461-10922 30002 30004;10923-16383 30003 30005;");
    buf_deinit(&sl);
    /* CLUSTER SHARDS' data: one entry per shard id, with its nodes. */
    uint16_t sh[8], members[8];
    cr_assert_eq(topo_shards(T, sh, 8), 3);
    for (unsigned i = 0; i < 3; i++) {
        cr_assert_eq(sh[i], i);
        cr_assert_eq(topo_shard_nodes(T, T->nodes[i].shard_id, members, 8), 2);
        cr_assert_eq(members[0], i);
        cr_assert_eq(T->nodes[members[1]].primary, i);
    }

    /* Live link state comes from the caller; myself is always connected. */
    struct topo_link links[6] = { { 0 } };
    links[0].ping_sent = 5;
    links[1].ping_sent = 1700000000000ull;
    links[1].pong_recv = 1700000000123ull;
    links[1].connected = true;
    struct buf o;
    buf_init(&o);
    topo_node_line(T, 1, ids[0], &links[1], &o);
    buf_putc(&o, '\0');
    cr_assert_str_eq(
        o.data, "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@40002,host-b.example "
                "master - 1700000000000 1700000000123 2 connected 5461-10922");
    buf_reset(&o);
    topo_node_line(T, 3, NULL, &links[3], &o);
    buf_putc(&o, '\0');
    cr_assert(strstr(o.data, " 0 0 2 disconnected"), "%s", o.data);
    buf_reset(&o);
    topo_node_line(T, 0, ids[0], &links[0], &o);
    buf_putc(&o, '\0');
    cr_assert(strstr(o.data, " 5 0 1 connected"), "%s", o.data);
    buf_deinit(&o);
}

/* ---- encoders ---- */

Test(topo, encoders_reject_bad_arguments)
{
    struct topo_range bad[1] = { { 5, 4 } }, high[1] = { { 0, 16384 } }, ok[1] = { { 0, 1 } };
    cr_assert_eq(topo_enc_node_forget(&B, "abc"), RV_EINVAL);
    cr_assert_eq(topo_enc_node_forget(&B, NULL), RV_EINVAL);
    cr_assert_eq(topo_enc_node_forget(&B, "G000000000000000000000000000000000000000"), RV_EINVAL);
    cr_assert_eq(topo_enc_node_forget(&B, "A000000000000000000000000000000000000000"), RV_EINVAL);
    cr_assert_eq(topo_enc_slots_add(&B, ID[0], bad, 1), RV_EINVAL);
    cr_assert_eq(topo_enc_slots_add(&B, ID[0], high, 1), RV_EINVAL);
    cr_assert_eq(topo_enc_slots_add(&B, ID[0], ok, 0), RV_EINVAL);
    cr_assert_eq(topo_enc_slots_del(&B, NULL, 1), RV_EINVAL);
    cr_assert_eq(topo_enc_node_set_addr(&B, ID[0], "1.2.3.4 ", 1, 2, NULL), RV_EINVAL);
    cr_assert_eq(topo_enc_node_set_addr(&B, ID[0], "1.2.3.4", 1, 2, "a b"), RV_EINVAL);
    cr_assert_eq(topo_enc_node_set_flags(&B, ID[0], 0x100), RV_EINVAL);
    cr_assert_eq(topo_enc_setslot(&B, TOPO_CMD_SLOT_NODE, 16384, ID[0], ID[1]), RV_EINVAL);
    cr_assert_eq(topo_enc_setslot(&B, TOPO_CMD_SLOT_NODE, 1, ID[0], NULL), RV_EINVAL);
    cr_assert_eq(topo_enc_setslot(&B, TOPO_CMD_PROMOTE, 1, ID[0], ID[1]), RV_EINVAL);
    struct topo_node_spec s = { .id = ID[0], .shard_id = SH[0], .role = TOPO_REPLICA };
    cr_assert_eq(topo_enc_node_add(&B, &s), RV_EINVAL, "a replica needs a primary id");
    s.role = TOPO_PRIMARY;
    s.primary_id = ID[1];
    cr_assert_eq(topo_enc_node_add(&B, &s), RV_EINVAL, "a primary has none");
    cr_assert_eq(B.len, 0, "nothing appended on error");
}

/* ---- copy-on-write ---- */

Test(topo, unchanged_parts_are_shared)
{
    OK(add_node(0, -1, 1));
    OK(add_node(1, -1, 1));
    struct topo *before = topo_get(T);
    OK(add_slots(0, 0, 10));
    cr_assert_eq(T->nodes, before->nodes, "a slot command shares the node table");
    cr_assert_neq(T->slots, before->slots);
    cr_assert_null(topo_slot_node(before, 0), "the old snapshot is unchanged");
    topo_put(before);
    before = topo_get(T);
    OK(topo_enc_node_set_flags(&B, ID[1], TOPO_F_PFAIL));
    cr_assert_eq(T->slots, before->slots, "a node command shares the slot table");
    cr_assert_neq(T->nodes, before->nodes);
    cr_assert_eq(before->nodes[1].flags, 0);
    SAME(topo_enc_node_set_flags(&B, ID[1], TOPO_F_PFAIL));
    struct topo *same = topo_get(T);
    SAME(topo_enc_node_set_flags(&B, ID[1], TOPO_F_PFAIL));
    cr_assert_eq(T, same, "an unchanged apply returns the same snapshot");
    topo_put(same);
    topo_put(before);
}

/* ---- random sequences: determinism, snapshots, fuzz ---- */

static uint64_t
rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Append one random, well-formed command over a pool of 12 ids. */
static void
random_cmd(uint64_t *s, struct buf *b)
{
    const char *a = ID[rnd(s) % 12], *c = ID[rnd(s) % 12];
    unsigned slot = (unsigned)(rnd(s) % 64) * 250 + (unsigned)(rnd(s) % 3);
    struct topo_range r[3];
    size_t nr = 1 + rnd(s) % 3;
    for (size_t i = 0; i < nr; i++) {
        unsigned lo = (unsigned)(rnd(s) % SLOT_COUNT), len = (unsigned)(rnd(s) % 300);
        r[i].lo = (uint16_t)lo;
        r[i].hi = (uint16_t)(lo + len < SLOT_COUNT ? lo + len : SLOT_COUNT - 1);
    }
    unsigned k = (unsigned)(rnd(s) % 16);
    int rc;
    if (k < 4) {
        struct topo_node_spec sp = {
            .id = a,
            .shard_id = SH[rnd(s) % 12],
            .ip = "10.1.2.3",
            .port = (uint16_t)rnd(s),
            .cport = (uint16_t)rnd(s),
            .hostname = k == 0 ? "h.example" : "",
            .role = k % 2 ? TOPO_REPLICA : TOPO_PRIMARY,
            .primary_id = k % 2 ? c : NULL,
            .config_epoch = rnd(s) % 4,
            .host_id = rnd(s) % 4,
        };
        rc = topo_enc_node_add(b, &sp);
    } else if (k == 4) {
        rc = rnd(s) % 4 ? topo_enc_node_set_flags(b, a, (uint16_t)(rnd(s) & TOPO_F_ALL))
                        : topo_enc_node_forget(b, a);
    } else if (k == 5) {
        rc = topo_enc_node_set_addr(b, a, "::1", (uint16_t)rnd(s), 2, rnd(s) % 2 ? "x" : NULL);
    } else if (k <= 7) {
        rc = topo_enc_slots_add(b, a, r, nr);
    } else if (k == 8) {
        rc = rnd(s) % 2 ? topo_enc_slots_del(b, r, nr) : topo_enc_slots_flush(b, a);
    } else if (k == 9) {
        rc = topo_enc_replicate(b, a, c);
    } else if (k == 10) {
        rc = topo_enc_promote(b, a);
    } else if (k == 11) {
        rc = rnd(s) % 2 ? topo_enc_set_config_epoch(b, a, rnd(s) % 10) : topo_enc_bump_epoch(b, a);
    } else {
        rc = topo_enc_setslot(b, (enum topo_cmd_type)(TOPO_CMD_SLOT_MIGRATING + (k - 12)), slot, a,
                              c);
    }
    cr_assert_eq(rc, RV_OK);
}

/* Invariants every snapshot keeps, checked from the public fields. */
static void
check_invariants(const struct topo *t)
{
    for (uint32_t i = 0; i < t->nnodes; i++) {
        const struct topo_node *n = &t->nodes[i];
        cr_assert_eq(topo_find(t, n->id, TOPO_ID_LEN), (int)i);
        if (n->role == TOPO_PRIMARY) {
            cr_assert_eq(n->primary, TOPO_NONE);
        } else if (n->primary != TOPO_NONE) {
            cr_assert_lt(n->primary, t->nnodes);
            cr_assert_eq(t->nodes[n->primary].role, TOPO_PRIMARY);
            cr_assert_str_eq(n->shard_id, t->nodes[n->primary].shard_id);
        }
        cr_assert_leq(n->config_epoch, t->current_epoch);
    }
    for (unsigned s = 0; s < SLOT_COUNT; s++) {
        const struct topo_node *o = topo_slot_node(t, s);
        cr_assert(o == NULL || o->role == TOPO_PRIMARY, "slot %u owned by a replica", s);
    }
    for (uint32_t i = 0; i < t->nmigs; i++) {
        const struct topo_mig *m = &t->migs[i];
        cr_assert(i == 0 || m->slot > t->migs[i - 1].slot);
        cr_assert(m->mig_by != TOPO_NONE || m->imp_by != TOPO_NONE);
        cr_assert(m->mig_by == TOPO_NONE || (m->mig_by < t->nnodes && m->mig_to < t->nnodes));
        cr_assert(m->imp_by == TOPO_NONE || (m->imp_by < t->nnodes && m->imp_from < t->nnodes));
    }
}

/* Run n random commands from seed on a fresh topology; returns it and
 * appends each result code and error text to log. */
static struct topo *
random_run(uint64_t seed, unsigned n, struct buf *log)
{
    struct topo *t = topo_create();
    struct buf b;
    buf_init(&b);
    uint64_t s = seed;
    for (unsigned i = 0; i < n; i++) {
        buf_reset(&b);
        random_cmd(&s, &b);
        struct topo *next;
        char err[TOPO_ERR_MAX];
        enum topo_res r = topo_apply(t, b.data, b.len, &next, err, sizeof(err));
        cr_assert(r == TOPO_CHANGED || r == TOPO_UNCHANGED || r == TOPO_EREFUSED, "%d %s", r, err);
        buf_appendf(log, "%d %s\n", r, err);
        topo_put(t);
        t = next;
        if (i % 50 == 0) {
            check_invariants(t);
        }
    }
    check_invariants(t);
    buf_deinit(&b);
    return t;
}

Test(topo, same_commands_same_snapshot)
{
    for (uint64_t seed = 1; seed <= 8; seed++) {
        struct buf l1, l2, e1, e2;
        buf_init(&l1);
        buf_init(&l2);
        buf_init(&e1);
        buf_init(&e2);
        struct topo *a = random_run(seed * 0x9e3779b97f4a7c15ull, 1500, &l1);
        struct topo *b = random_run(seed * 0x9e3779b97f4a7c15ull, 1500, &l2);
        topo_encode(a, &e1);
        topo_encode(b, &e2);
        cr_assert_eq(l1.len, l2.len);
        cr_assert(memcmp(l1.data, l2.data, l1.len) == 0, "same results and error texts");
        cr_assert_eq(e1.len, e2.len);
        cr_assert(memcmp(e1.data, e2.data, e1.len) == 0, "same snapshot bytes");
        cr_assert_gt(a->version, 100, "the sequence did change things (%" PRIu64 ")", a->version);
        cr_assert_gt(a->nnodes, 0);
        topo_put(a);
        topo_put(b);
        buf_deinit(&l1);
        buf_deinit(&l2);
        buf_deinit(&e1);
        buf_deinit(&e2);
    }
}

Test(topo, snapshot_round_trip)
{
    for (uint64_t seed = 11; seed <= 16; seed++) {
        struct buf log, e1, e2, t1, t2;
        buf_init(&log);
        buf_init(&e1);
        buf_init(&e2);
        buf_init(&t1);
        buf_init(&t2);
        struct topo *a = random_run(seed, 800, &log);
        topo_encode(a, &e1);
        struct topo *b;
        char err[TOPO_ERR_MAX];
        cr_assert_eq(topo_decode(e1.data, e1.len, &b, err, sizeof(err)), RV_OK, "%s", err);
        topo_encode(b, &e2);
        cr_assert_eq(e1.len, e2.len);
        cr_assert(memcmp(e1.data, e2.data, e1.len) == 0);
        cr_assert_eq(b->version, a->version);
        cr_assert_eq(b->current_epoch, a->current_epoch);
        cr_assert(memcmp(a->slots, b->slots, SLOT_COUNT * sizeof(uint16_t)) == 0);
        check_invariants(b);
        const char *me = a->nnodes ? a->nodes[0].id : NULL;
        topo_nodes_text(a, me, NULL, &t1);
        topo_nodes_text(b, me, NULL, &t2);
        cr_assert_eq(t1.len, t2.len);
        cr_assert(memcmp(t1.data, t2.data, t1.len) == 0);
        /* The whole text is the single lines joined. */
        buf_reset(&t2);
        for (uint32_t i = 0; i < b->nnodes; i++) {
            topo_node_line(b, i, me, NULL, &t2);
            buf_putc(&t2, '\n');
        }
        cr_assert(t1.len == t2.len && memcmp(t1.data, t2.data, t1.len) == 0);
        /* Applying the same command to both gives the same result. */
        struct buf c;
        buf_init(&c);
        uint64_t s = seed;
        for (int i = 0; i < 50; i++) {
            buf_reset(&c);
            random_cmd(&s, &c);
            struct topo *na, *nb;
            cr_assert_eq(topo_apply(a, c.data, c.len, &na, err, sizeof(err)),
                         topo_apply(b, c.data, c.len, &nb, err, sizeof(err)));
            topo_put(a);
            topo_put(b);
            a = na;
            b = nb;
        }
        buf_reset(&e1);
        buf_reset(&e2);
        topo_encode(a, &e1);
        topo_encode(b, &e2);
        cr_assert(e1.len == e2.len && memcmp(e1.data, e2.data, e1.len) == 0);
        buf_deinit(&c);
        topo_put(a);
        topo_put(b);
        buf_deinit(&log);
        buf_deinit(&e1);
        buf_deinit(&e2);
        buf_deinit(&t1);
        buf_deinit(&t2);
    }
    struct topo *empty;
    struct buf e;
    buf_init(&e);
    topo_encode(T, &e);
    cr_assert_eq(topo_decode(e.data, e.len, &empty, NULL, 0), RV_OK);
    cr_assert_eq(empty->nnodes, 0);
    topo_put(empty);
    buf_deinit(&e);
}

/* Hand-made snapshot bytes: one primary owning slots 0-9 as two runs. */
static void
put16(struct buf *b, unsigned v)
{
    buf_putc(b, (char)(v & 0xff));
    buf_putc(b, (char)(v >> 8));
}

Test(topo, decoder_wants_canonical_runs)
{
    OK(add_node(0, -1, 1));
    OK(add_slots(0, 0, 9));
    struct buf e;
    buf_init(&e);
    topo_encode(T, &e);
    /* The tail is: nruns=1, (0, 9, 0), nmigs=0. Split the run in two. */
    size_t tail = e.len - 2 - 6 - 2;
    e.len = tail;
    put16(&e, 2);
    put16(&e, 0);
    put16(&e, 4);
    put16(&e, 0);
    put16(&e, 5);
    put16(&e, 9);
    put16(&e, 0);
    put16(&e, 0);
    struct topo *out;
    char err[TOPO_ERR_MAX];
    cr_assert_eq(topo_decode(e.data, e.len, &out, err, sizeof(err)), RV_ECORRUPT);
    cr_assert_str_eq(err, "malformed topology snapshot: slot runs not merged");
    /* With a gap the two runs are fine. */
    e.data[tail + 2 + 6] = 6;
    cr_assert_eq(topo_decode(e.data, e.len, &out, err, sizeof(err)), RV_OK, "%s", err);
    cr_assert_null(topo_slot_node(out, 5));
    cr_assert_eq(topo_node_slot_count(out, 0), 9);
    topo_put(out);
    buf_deinit(&e);
}

Test(topo, decoder_survives_garbage)
{
    struct buf log, e;
    buf_init(&log);
    buf_init(&e);
    struct topo *a = random_run(99, 600, &log);
    topo_encode(a, &e);
    topo_put(a);
    char err[TOPO_ERR_MAX];
    struct topo *out;
    /* Every strict prefix is refused. */
    for (size_t n = 0; n < e.len; n += (n < 256 ? 1 : 97)) {
        cr_assert_eq(topo_decode(e.data, n, &out, err, sizeof(err)), RV_ECORRUPT, "prefix %zu", n);
        cr_assert_null(out);
        cr_assert(strncmp(err, "malformed topology snapshot: ", 29) == 0, "%s", err);
    }
    cr_assert_eq(topo_decode(NULL, 0, &out, err, sizeof(err)), RV_ECORRUPT);
    /* A trailing byte is refused. */
    buf_putc(&e, 0);
    cr_assert_eq(topo_decode(e.data, e.len, &out, err, sizeof(err)), RV_ECORRUPT);
    e.len--;
    /* Flipped bytes: an error, or a snapshot that keeps the invariants. */
    uint64_t s = 12345;
    char *copy = malloc(e.len);
    unsigned accepted = 0;
    for (int i = 0; i < 3000; i++) {
        memcpy(copy, e.data, e.len);
        for (int k = 0; k < 1 + (int)(rnd(&s) % 3); k++) {
            copy[rnd(&s) % e.len] ^= (char)(1u << (rnd(&s) % 8));
        }
        if (topo_decode(copy, e.len, &out, err, sizeof(err)) == RV_OK) {
            check_invariants(out);
            topo_put(out);
            accepted++;
        }
    }
    /* Random bytes, with and without a valid header. */
    for (int i = 0; i < 3000; i++) {
        size_t n = rnd(&s) % 600;
        for (size_t k = 0; k < n; k++) {
            copy[k] = (char)rnd(&s);
        }
        if (i % 2 && n >= 5) {
            memcpy(copy, e.data, 5);
        }
        if (topo_decode(copy, n, &out, err, sizeof(err)) == RV_OK) {
            check_invariants(out);
            topo_put(out);
        }
    }
    cr_log_info("flipped snapshots accepted: %u of 3000", accepted);
    free(copy);
    buf_deinit(&e);
    buf_deinit(&log);
}

Test(topo, apply_survives_garbage)
{
    struct buf log;
    buf_init(&log);
    struct topo *t = random_run(7, 300, &log);
    struct buf c;
    buf_init(&c);
    uint64_t s = 777;
    char err[TOPO_ERR_MAX], raw[512];
    for (int i = 0; i < 4000; i++) {
        buf_reset(&c);
        random_cmd(&s, &c);
        struct topo *next;
        /* Every strict prefix of a valid entry is malformed. */
        size_t cut = rnd(&s) % c.len;
        cr_assert_eq(topo_apply(t, c.data, cut, &next, err, sizeof(err)), TOPO_EMALFORMED);
        cr_assert_eq(next, t);
        cr_assert(strncmp(err, "ERR malformed topology entry: ", 30) == 0, "%s", err);
        topo_put(next);
        /* A flipped byte: any result, invariants kept. */
        c.data[rnd(&s) % c.len] ^= (char)(1u << (rnd(&s) % 8));
        enum topo_res r = topo_apply(t, c.data, c.len, &next, err, sizeof(err));
        cr_assert(r >= TOPO_EMALFORMED && r <= TOPO_CHANGED);
        check_invariants(next);
        topo_put(t);
        t = next;
        /* Random bytes. */
        size_t n = rnd(&s) % sizeof(raw);
        for (size_t k = 0; k < n; k++) {
            raw[k] = (char)rnd(&s);
        }
        if (n >= 2 && i % 2) {
            raw[0] = 1;
            raw[1] = (char)(1 + rnd(&s) % 16); /* 16: a batch */
        }
        r = topo_apply(t, raw, n, &next, err, sizeof(err));
        cr_assert(r >= TOPO_EMALFORMED && r <= TOPO_CHANGED);
        topo_put(t);
        t = next;
    }
    check_invariants(t);
    struct topo *next;
    cr_assert_eq(topo_apply(t, NULL, 0, &next, NULL, 0), TOPO_EMALFORMED);
    topo_put(next);
    topo_put(t);
    buf_deinit(&c);
    buf_deinit(&log);
}
