/* node/keyspace/ks_snap.c: the snapshot iterator (see ks.h): a ks_scan walk in
 * hash order plus the set of keys emitted (or found absent) ahead of it. */
#include "node/keyspace/ks.h"

#include "base/mem.h"
#include "node/keyspace/dict.h"

struct ks_snap {
    ks_snap_emit_fn *emit;
    void *arg;
    uint64_t cursor; /* keys with hash < cursor have been walked (0: none yet) */
    bool done;
    struct dict *ahead; /* keys emitted or absent ahead of the walk: skip them */
};

struct ks_snap *
ks_snap_begin(ks_snap_emit_fn *emit, void *arg)
{
    struct ks_snap *sn = rv_calloc(1, sizeof(*sn));
    sn->emit = emit;
    sn->arg = arg;
    sn->ahead = dict_create_kind(DICT_KEYONLY);
    return sn;
}

static void
walk_cb(void *arg, struct ks_entry *e)
{
    struct ks_snap *sn = arg;
    if (dict_size(sn->ahead) > 0) {
        struct rv_str k = ks_entry_key(e);
        if (dict_find(sn->ahead, k.p, k.len) != NULL) {
            return;
        }
    }
    sn->emit(sn->arg, e);
}

bool
ks_snap_next(struct ks_snap *sn, struct ks *ks, size_t count)
{
    if (!sn->done) {
        sn->cursor = ks_scan(ks, sn->cursor, count, walk_cb, sn);
        sn->done = sn->cursor == 0;
    }
    return sn->done;
}

void
ks_snap_touch(struct ks_snap *sn, struct ks *ks, const char *key, size_t klen)
{
    bool created = false;
    if (sn->done || (sn->cursor != 0 && ks_hash(ks, key, klen) < sn->cursor)) {
        return; /* walked: already emitted with its value then */
    }
    dict_add(sn->ahead, key, klen, &created);
    if (created) {
        struct ks_entry *e = ks_peek(ks, key, klen);
        if (e != NULL) {
            sn->emit(sn->arg, e);
        }
    }
}

bool
ks_snap_done(const struct ks_snap *sn)
{
    return sn->done;
}

void
ks_snap_end(struct ks_snap *sn)
{
    if (sn == NULL) {
        return;
    }
    dict_destroy(sn->ahead, NULL);
    rv_free(sn);
}
