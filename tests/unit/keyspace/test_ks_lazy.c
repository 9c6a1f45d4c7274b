/* The keyspace's lazy-free hook (ks.h, ks_set_lazy) and ks_flush_detach: which
 * deletions offer a pointer value to the hook, that a taken value is not freed
 * by the keyspace, and that a detached flush leaves an empty keyspace. */
#include "node/keyspace/ks.h"

#include "base/mem.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static int frees;

static void
count_free(void *p)
{
    frees++;
    rv_free(p);
}

struct taken {
    int n;
    void *ptr[8];
};

static bool
take(void *arg, const struct ks_entry *e, void *ptr, ks_free_fn *fn)
{
    struct taken *t = arg;
    cr_assert_eq(ks_entry_type(e), KS_HASH);
    cr_assert_eq(fn, count_free);
    t->ptr[t->n++] = ptr;
    return true;
}

static void
put(struct ks *ks, const char *key)
{
    ks_set_ptr(ks, key, strlen(key), KS_HASH, rv_malloc(64), count_free, KS_NO_EXPIRE);
}

Test(ks_lazy, the_mask_picks_the_deletions_offered)
{
    struct ks *ks = ks_create(1, 2);
    struct taken t = { 0 };
    frees = 0;
    ks_set_lazy(ks, take, &t, KS_FREE_EVICT);
    put(ks, "a");
    cr_assert(ks_delete(ks, "a", 1)); /* server delete: not in the mask */
    cr_assert_eq(frees, 1);
    cr_assert_eq(t.n, 0);
    put(ks, "a");
    cr_assert(ks_delete_how(ks, "a", 1, true)); /* UNLINK: whatever the mask */
    cr_assert_eq(t.n, 1);
    cr_assert_eq(frees, 1);
    cr_assert_null(ks_peek(ks, "a", 1));
    put(ks, "a");
    cr_assert(ks_delete_how(ks, "a", 1, false)); /* DEL: freed now */
    cr_assert_eq(frees, 2);
    put(ks, "b");
    ks_evict(ks, ks_peek(ks, "b", 1)); /* in the mask */
    cr_assert_eq(t.n, 2);
    ks_set_lazy(ks, take, &t, KS_FREE_SERVER);
    put(ks, "c");
    ks_set_str(ks, "c", 1, "x", 1, KS_NO_EXPIRE, false); /* an overwrite */
    cr_assert_eq(t.n, 3);
    put(ks, "d");
    ks_set_str(ks, "e", 1, "x", 1, KS_NO_EXPIRE, false);
    cr_assert(ks_rename(ks, "e", 1, "d", 1)); /* RENAME's destination */
    cr_assert_eq(t.n, 4);
    ks_set_str(ks, "s", 1, "x", 1, KS_NO_EXPIRE, false);
    cr_assert(ks_delete_how(ks, "s", 1, true)); /* a string is never offered */
    cr_assert_eq(t.n, 4);
    for (int i = 0; i < t.n; i++) {
        count_free(t.ptr[i]);
    }
    cr_assert_eq(frees, 2 + 4);
    ks_destroy(ks);
}

static bool
refuse(void *arg, const struct ks_entry *e, void *ptr, ks_free_fn *fn)
{
    (void)e;
    (void)ptr;
    (void)fn;
    (*(int *)arg)++;
    return false;
}

Test(ks_lazy, a_refused_value_is_freed_inline)
{
    struct ks *ks = ks_create(1, 2);
    int offered = 0;
    frees = 0;
    ks_set_lazy(ks, refuse, &offered, 0);
    put(ks, "a");
    cr_assert(ks_delete_how(ks, "a", 1, true));
    cr_assert_eq(offered, 1);
    cr_assert_eq(frees, 1);
    ks_destroy(ks);
}

Test(ks_lazy, flush_detach_empties_now_and_the_husk_frees_later)
{
    struct ks *ks = ks_create(1, 2);
    frees = 0;
    ks_count_slots(ks, true);
    cr_assert_null(ks_flush_detach(ks)); /* empty: nothing to free */
    for (int i = 0; i < 1000; i++) {
        char k[16];
        snprintf(k, sizeof(k), "k%d", i);
        if (i % 2) {
            put(ks, k);
        } else {
            ks_set_str(ks, k, strlen(k), "v", 1, i % 4 == 0 ? 1000 : KS_NO_EXPIRE, false);
        }
    }
    struct ks_husk *h = ks_flush_detach(ks);
    cr_assert_not_null(h);
    cr_assert_eq(ks_size(ks), 0);
    cr_assert_eq(ks_expires_size(ks), 0);
    cr_assert_null(ks_peek(ks, "k1", 2));
    size_t sum = 0;
    for (unsigned s = 0; s < 16384; s++) {
        sum += ks_slot_keys(ks, s);
    }
    cr_assert_eq(sum, 0);
    put(ks, "k1"); /* the keyspace works on */
    cr_assert_eq(ks_size(ks), 1);
    cr_assert_eq(frees, 0);
    ks_husk_free(h);
    cr_assert_eq(frees, 500);
    ks_husk_free(NULL);
    ks_destroy(ks);
    cr_assert_eq(frees, 501);
}
