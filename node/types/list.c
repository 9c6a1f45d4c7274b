/* node/types/list.c: the list object (see list.h): one listpack, or a quicklist
 * of listpack nodes; the commands are in node/commands/t_list.c. */
#include "node/types/list.h"

#include "base/mem.h"
#include "node/keyspace/ks.h"

#include <string.h>


/* Bytes a node may reach with a positive (count) fill, unless it holds a
 * single element: keeps count-limited nodes from growing without bound. */
#define NODE_SAFETY_BYTES 8192u

struct qnode {
    struct qnode *prev, *next;
    uint8_t *lp;
};

struct qlist {
    struct qnode *head, *tail;
    size_t count; /* elements in all nodes */
    size_t nodes;
};

/* The keyspace object: a listpack pointer, or a qlist pointer tagged with
 * bit 0 (allocations are at least 8-aligned). One word, so a small list costs
 * its listpack plus 8 bytes. */
struct list {
    union {
        uint8_t *lp;
        uintptr_t tag;
    } u;
};

static inline bool
is_ql(const struct list *l)
{
    return (l->u.tag & 1u) != 0;
}

static inline struct qlist *
ql_of(const struct list *l)
{
    return (struct qlist *)(l->u.tag & ~(uintptr_t)1);
}

/* ------------------------------------------------------------ node limits */

static inline size_t
fill_bytes(int64_t fill)
{
    int64_t f = fill < -5 ? -5 : fill;
    return (size_t)4096 << (-f - 1);
}

/* Could a listpack of count elements and bytes size take one of add bytes? */
static inline bool
node_fits(const uint8_t *lp, size_t add, int64_t fill)
{
    size_t count = lp_count(lp);
    size_t bytes = lp_bytes(lp) + add;

    if (count == 0) {
        return true;
    }
    if (fill >= 0) {
        return count + 1 <= (size_t)(fill > 0 ? fill : 1) && bytes <= NODE_SAFETY_BYTES;
    }
    return bytes <= fill_bytes(fill);
}

static inline bool
node_over(const uint8_t *lp, int64_t fill)
{
    size_t count = lp_count(lp);
    size_t bytes = lp_bytes(lp);

    if (count <= 1) {
        return false;
    }
    if (fill >= 0) {
        return count > (size_t)(fill > 0 ? fill : 1) || bytes > NODE_SAFETY_BYTES;
    }
    return bytes > fill_bytes(fill);
}

/* ------------------------------------------------------------- quicklist */

static struct qnode *
qnode_create(uint8_t *lp)
{
    struct qnode *n = rv_malloc(sizeof(*n));
    n->prev = n->next = NULL;
    n->lp = lp;
    return n;
}

/* Link n after `after` (NULL: at the head). */
static void
ql_link(struct qlist *ql, struct qnode *after, struct qnode *n)
{
    n->prev = after;
    n->next = after ? after->next : ql->head;
    if (n->next) {
        n->next->prev = n;
    } else {
        ql->tail = n;
    }
    if (after) {
        after->next = n;
    } else {
        ql->head = n;
    }
    ql->nodes++;
}

/* Unlink and free n (its elements are not counted here). */
static void
ql_unlink(struct qlist *ql, struct qnode *n)
{
    if (n->prev) {
        n->prev->next = n->next;
    } else {
        ql->head = n->next;
    }
    if (n->next) {
        n->next->prev = n->prev;
    } else {
        ql->tail = n->prev;
    }
    ql->nodes--;
    lp_destroy(n->lp);
    rv_free(n);
}

/* Split n in halves until no node from it is over the limit. */
static void
ql_fix_node(struct qlist *ql, struct qnode *n, int64_t fill)
{
    while (node_over(n->lp, fill)) {
        uint8_t *mid = lp_seek(n->lp, (int64_t)lp_count(n->lp) / 2);
        struct qnode *m = qnode_create(lp_split(&n->lp, mid));
        ql_link(ql, n, m);
        ql_fix_node(ql, m, fill);
    }
}

/* Merge n with its neighbours while the result fits in one node, so that
 * splits and deletions in the middle do not leave many small nodes. */
static void
ql_try_merge(struct qlist *ql, struct qnode *n, int64_t fill)
{
    struct qnode *p = n->prev;
    if (p && node_fits(p->lp, lp_bytes(n->lp) - LP_HDR, fill) &&
        (fill < 0 || lp_count(p->lp) + lp_count(n->lp) <= (size_t)fill)) {
        lp_concat(&p->lp, n->lp);
        ql_unlink(ql, n);
        n = p;
    }
    struct qnode *x = n->next;
    if (x && node_fits(n->lp, lp_bytes(x->lp) - LP_HDR, fill) &&
        (fill < 0 || lp_count(n->lp) + lp_count(x->lp) <= (size_t)fill)) {
        lp_concat(&n->lp, x->lp);
        ql_unlink(ql, x);
    }
}

/* The listpack encoding becomes a one-node quicklist (no copy). */
static struct qlist *
list_convert(struct list *l)
{
    struct qlist *ql = rv_malloc(sizeof(*ql));
    ql->head = ql->tail = NULL;
    ql->nodes = 0;
    ql->count = lp_count(l->u.lp);
    ql_link(ql, NULL, qnode_create(l->u.lp));
    l->u.tag = (uintptr_t)ql | 1u;
    return ql;
}

/* ---------------------------------------------------------------- basics */

struct list *
list_create(void)
{
    struct list *l = rv_malloc(sizeof(*l));
    l->u.lp = lp_create();
    return l;
}

void
list_destroy(void *v)
{
    struct list *l = v;
    if (l == NULL) {
        return;
    }
    if (is_ql(l)) {
        struct qlist *ql = ql_of(l);
        struct qnode *n = ql->head;
        while (n) {
            struct qnode *nx = n->next;
            lp_destroy(n->lp);
            rv_free(n);
            n = nx;
        }
        rv_free(ql);
    } else {
        lp_destroy(l->u.lp);
    }
    rv_free(l);
}

struct list *
list_dup(const struct list *l)
{
    struct list *d = rv_malloc(sizeof(*d));
    if (!is_ql(l)) {
        d->u.lp = lp_dup(l->u.lp);
        return d;
    }
    const struct qlist *ql = ql_of(l);
    struct qlist *dq = rv_malloc(sizeof(*dq));
    dq->head = dq->tail = NULL;
    dq->nodes = 0;
    dq->count = ql->count;
    for (const struct qnode *n = ql->head; n; n = n->next) {
        ql_link(dq, dq->tail, qnode_create(lp_dup(n->lp)));
    }
    d->u.tag = (uintptr_t)dq | 1u;
    return d;
}

size_t
list_len(const struct list *l)
{
    return is_ql(l) ? ql_of(l)->count : lp_count(l->u.lp);
}

bool
list_is_quicklist(const struct list *l)
{
    return is_ql(l);
}

size_t
list_nodes(const struct list *l)
{
    return is_ql(l) ? ql_of(l)->nodes : 1;
}

size_t
list_mem(const struct list *l)
{
    size_t m = rv_usable_size(l);
    if (!is_ql(l)) {
        return m + rv_usable_size(l->u.lp);
    }
    const struct qlist *ql = ql_of(l);
    m += rv_usable_size(ql);
    for (const struct qnode *n = ql->head; n; n = n->next) {
        m += rv_usable_size(n) + rv_usable_size(n->lp);
    }
    return m;
}

void
list_push(struct list *l, enum list_end end, const char *s, size_t n, int64_t fill)
{
    size_t cost = lp_entry_cost(s, n);
    struct qlist *ql;

    if (!is_ql(l)) {
        if (node_fits(l->u.lp, cost, fill)) {
            if (end == LIST_HEAD) {
                lp_prepend(&l->u.lp, s, n);
            } else {
                lp_append(&l->u.lp, s, n);
            }
            return;
        }
        ql = list_convert(l);
    } else {
        ql = ql_of(l);
    }
    struct qnode *node = end == LIST_HEAD ? ql->head : ql->tail;
    if (node == NULL || !node_fits(node->lp, cost, fill)) {
        node = qnode_create(lp_create());
        ql_link(ql, end == LIST_HEAD ? NULL : ql->tail, node);
    }
    if (end == LIST_HEAD) {
        lp_prepend(&node->lp, s, n);
    } else {
        lp_append(&node->lp, s, n);
    }
    ql->count++;
}

/* ------------------------------------------------------------- iterator */

static inline uint8_t **
lit_lpp(struct lit *it)
{
    return it->node ? &it->node->lp : &it->l->u.lp;
}

/* Position at index (0 <= index < len), walking from the nearer end. */
void
lit_seek(struct lit *it, struct list *l, int64_t index)
{
    it->l = l;
    it->node = NULL;
    if (!is_ql(l)) {
        it->p = lp_seek(l->u.lp, index);
        return;
    }
    struct qlist *ql = ql_of(l);
    struct qnode *n;
    if ((size_t)index < ql->count / 2) {
        n = ql->head;
        while ((size_t)index >= lp_count(n->lp)) {
            index -= (int64_t)lp_count(n->lp);
            n = n->next;
        }
    } else {
        int64_t back = (int64_t)ql->count - 1 - index; /* 0 = last */
        n = ql->tail;
        while ((size_t)back >= lp_count(n->lp)) {
            back -= (int64_t)lp_count(n->lp);
            n = n->prev;
        }
        index = (int64_t)lp_count(n->lp) - 1 - back;
    }
    it->node = n;
    it->p = lp_seek(n->lp, index);
}

void
lit_next(struct lit *it)
{
    uint8_t **lpp = lit_lpp(it);
    it->p = lp_next(*lpp, it->p);
    if (it->p == NULL && it->node && it->node->next) {
        it->node = it->node->next;
        it->p = lp_first(it->node->lp);
    }
}

void
lit_prev(struct lit *it)
{
    uint8_t **lpp = lit_lpp(it);
    it->p = lp_prev(*lpp, it->p);
    if (it->p == NULL && it->node && it->node->prev) {
        it->node = it->node->prev;
        it->p = lp_last(it->node->lp);
    }
}

/* Delete the current element; move to the following one (forward) or the
 * preceding one. An emptied node is freed; an emptied listpack encoding stays
 * (the caller deletes the key). */
void
lit_delete(struct lit *it, bool forward)
{
    uint8_t **lpp = lit_lpp(it);
    uint8_t *nx = lp_delete(lpp, it->p);

    if (it->node == NULL) {
        it->p = forward ? nx : (nx ? lp_prev(*lpp, nx) : lp_last(*lpp));
        return;
    }
    struct qlist *ql = ql_of(it->l);
    ql->count--;
    if (lp_count(*lpp) == 0) {
        struct qnode *dead = it->node;
        struct qnode *to = forward ? dead->next : dead->prev;
        ql_unlink(ql, dead);
        it->node = to;
        it->p = to ? (forward ? lp_first(to->lp) : lp_last(to->lp)) : NULL;
        return;
    }
    if (forward) {
        it->p = nx;
        if (nx == NULL && it->node->next) {
            it->node = it->node->next;
            it->p = lp_first(it->node->lp);
        }
    } else {
        it->p = nx ? lp_prev(*lpp, nx) : lp_last(*lpp);
        if (it->p == NULL && it->node->prev) {
            it->node = it->node->prev;
            it->p = lp_last(it->node->lp);
        }
    }
}

/* Insert s before (or after) the current element. */
void
lit_insert(struct lit *it, bool after, const char *s, size_t n, int64_t fill)
{
    size_t cost = lp_entry_cost(s, n);
    struct list *l = it->l;
    struct qlist *ql;

    if (!is_ql(l)) {
        if (node_fits(l->u.lp, cost, fill)) {
            uint8_t *at = after ? lp_next(l->u.lp, it->p) : it->p;
            lp_insert(&l->u.lp, at, s, n);
            return;
        }
        ql = list_convert(l);
        it->node = ql->head;
    } else {
        ql = ql_of(l);
    }
    struct qnode *node = it->node;
    uint8_t *at = after ? lp_next(node->lp, it->p) : it->p;
    ql->count++;
    if (node_fits(node->lp, cost, fill)) {
        lp_insert(&node->lp, at, s, n);
        return;
    }
    /* Full node: at its edges use (or create) the neighbour instead of splitting. */
    if (at == NULL) {
        struct qnode *x = node->next;
        if (x && node_fits(x->lp, cost, fill)) {
            lp_prepend(&x->lp, s, n);
        } else {
            x = qnode_create(lp_create());
            lp_append(&x->lp, s, n);
            ql_link(ql, node, x);
        }
        return;
    }
    if (at == node->lp + LP_HDR) {
        struct qnode *x = node->prev;
        if (x && node_fits(x->lp, cost, fill)) {
            lp_append(&x->lp, s, n);
        } else {
            x = qnode_create(lp_create());
            lp_append(&x->lp, s, n);
            ql_link(ql, node->prev, x);
        }
        return;
    }
    lp_insert(&node->lp, at, s, n);
    struct qnode *next = node->next;
    ql_fix_node(ql, node, fill);
    /* The split halves may now fit with their outer neighbours. */
    ql_try_merge(ql, node, fill);
    if (next && next->prev) {
        ql_try_merge(ql, next->prev, fill);
    }
}

/* ---------------------------------------------------------------- access */

bool
list_index(const struct list *l, int64_t index, struct lp_val *out)
{
    int64_t len = (int64_t)list_len(l);
    struct lit it;

    if (index < 0) {
        index += len;
    }
    if (index < 0 || index >= len) {
        return false;
    }
    lit_seek(&it, (struct list *)l, index);
    lp_get(it.p, out);
    return true;
}

bool
list_set(struct list *l, int64_t index, const char *s, size_t n, int64_t fill)
{
    int64_t len = (int64_t)list_len(l);
    struct lit it;

    if (index < 0) {
        index += len;
    }
    if (index < 0 || index >= len) {
        return false;
    }
    lit_seek(&it, l, index);
    uint8_t **lpp = lit_lpp(&it);
    lp_replace(lpp, it.p, s, n);
    if (node_over(*lpp, fill)) {
        if (!is_ql(l)) {
            list_convert(l);
        }
        struct qlist *ql = ql_of(l);
        struct qnode *node = it.node ? it.node : ql->head;
        ql_fix_node(ql, node, fill);
    }
    return true;
}

/* Delete n elements starting at index start (0 <= start < len). */
void
list_del_range(struct list *l, size_t start, size_t n)
{
    if (n == 0) {
        return;
    }
    if (!is_ql(l)) {
        lp_delete_range(&l->u.lp, lp_seek(l->u.lp, (int64_t)start), n);
        return;
    }
    struct lit it;
    struct qlist *ql = ql_of(l);
    lit_seek(&it, l, (int64_t)start);
    while (n > 0 && it.node) {
        struct qnode *node = it.node;
        struct qnode *next = node->next;
        size_t cnt = lp_count(node->lp);
        bool at_first = it.p == node->lp + LP_HDR;
        if (at_first && n >= cnt) {
            ql_unlink(ql, node); /* whole node: O(1) */
            ql->count -= cnt;
            n -= cnt;
        } else {
            size_t before = lp_count(node->lp);
            lp_delete_range(&node->lp, it.p, n);
            size_t k = before - lp_count(node->lp);
            ql->count -= k;
            n -= k;
            if (lp_count(node->lp) == 0) {
                ql_unlink(ql, node);
            }
        }
        it.node = next;
        it.p = next ? lp_first(next->lp) : NULL;
    }
}

void
list_drop(struct list *l, enum list_end end, size_t n)
{
    size_t len = list_len(l);
    if (n > len) {
        n = len;
    }
    list_del_range(l, end == LIST_HEAD ? 0 : len - n, n);
}

bool
list_valid(const struct list *l, int64_t fill)
{
    if (!is_ql(l)) {
        return lp_valid(l->u.lp);
    }
    const struct qlist *ql = ql_of(l);
    size_t count = 0;
    size_t nodes = 0;
    const struct qnode *prev = NULL;
    for (const struct qnode *n = ql->head; n; n = n->next) {
        if (n->prev != prev || !lp_valid(n->lp) || lp_count(n->lp) == 0 || node_over(n->lp, fill)) {
            return false;
        }
        count += lp_count(n->lp);
        nodes++;
        prev = n;
    }
    return prev == ql->tail && count == ql->count && nodes == ql->nodes;
}

/* ------------------------------------------------------------ obj_ops */

static const char *
list_encoding(const struct ks_entry *e)
{
    return is_ql(ks_entry_ptr(e)) ? "quicklist" : "listpack";
}

static size_t
list_mem_op(const struct ks_entry *e)
{
    return list_mem(ks_entry_ptr(e));
}

static size_t
list_effort_op(const struct ks_entry *e)
{
    const struct list *l = ks_entry_ptr(e);
    return is_ql(l) ? ql_of(l)->nodes : 1;
}

static void *
list_dup_op(const struct ks_entry *e)
{
    return list_dup(ks_entry_ptr(e));
}

static void
emit_lp(struct obj_emitter *b, const uint8_t *lp)
{
    for (const uint8_t *p = lp_first(lp); p != NULL; p = lp_next(lp, p)) {
        struct lp_val v;
        lp_get(p, &v);
        if (v.p != NULL) {
            obj_emit_arg(b, (struct rv_str){ v.p, v.len });
        } else {
            obj_emit_int(b, v.v);
        }
        obj_emit_elem(b);
    }
}

/* RPUSH key e1 .. eN, head to tail. */
static void
list_emit(const struct ks_entry *e, obj_emit_fn *fn, void *arg)
{
    const struct list *l = ks_entry_ptr(e);
    struct obj_emitter b;

    obj_emit_init(&b, fn, arg, "RPUSH", ks_entry_key(e));
    if (!is_ql(l)) {
        emit_lp(&b, l->u.lp);
    } else {
        for (const struct qnode *n = ql_of(l)->head; n != NULL; n = n->next) {
            emit_lp(&b, n->lp);
        }
    }
    obj_emit_flush(&b);
}

const struct obj_ops obj_list_ops = {
    .type_name = "list",
    .encoding = list_encoding,
    .mem = list_mem_op,
    .dup = list_dup_op,
    .free = list_destroy,
    .emit = list_emit,
    .effort = list_effort_op,
};
