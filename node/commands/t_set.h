/* node/commands/t_set.h: the set type (SADD, SINTER, ...).
 *
 * Encodings, as Redis 7.2: "intset" (node/types/intset.h) while every member is an
 * integer and there are at most set-max-intset-entries; "listpack" (the
 * packed list of t_hash.h) for at most set-max-listpack-entries members of at
 * most set-max-listpack-value bytes; then "hashtable" (a DICT_KEYONLY dict:
 * one allocation per member, no value). Conversion is one way. */
#pragma once
#include "node/commands/cmds.h"
#include "node/types/hpk.h"
#include "node/types/obj.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ks;
struct ks_entry;
struct sbig;
/* A set as commands and tests handle it: standalone on the heap
 * (sobj_create), or on a command's stack bound to a keyspace entry
 * (sobj_bind). In the keyspace a listpack set is stored inline in its entry;
 * intset and hashtable sets are a pointer to a small struct sbig. */
struct sobj {
    uint32_t enc;
    struct hpk_ref pk;     /* listpack; pk.ks/pk.e: the binding (NULL standalone) */
    struct sbig *b;        /* intset, hashtable */
};
struct sobj_lim {
    size_t max_intset;       /* set-max-intset-entries */
    size_t max_pk_entries;   /* set-max-listpack-entries */
    size_t max_pk_value;     /* set-max-listpack-value */
};
/* An empty set in the encoding Redis would pick for a first member m and
 * about hint members. */
struct sobj *sobj_create(const char *m, size_t n, size_t hint, const struct sobj_lim *lim);
void sobj_free(struct sobj *s);                    /* standalone only; NULL is a no-op */
/* Binds s to set entry e of ks (ks NULL: read only). */
void sobj_bind(struct sobj *s, struct ks *ks, struct ks_entry *e);
/* Stores standalone s at key (replacing it, no deadline) and frees s. */
void sobj_store(struct sobj *s, struct ks *ks, const char *key, size_t klen);
size_t sobj_len(const struct sobj *s);
size_t sobj_mem(const struct sobj *s);             /* bytes outside the keyspace entry */
const char *sobj_encoding(const struct sobj *s);
bool sobj_add(struct sobj *s, const char *m, size_t n, const struct sobj_lim *lim);
bool sobj_has(const struct sobj *s, const char *m, size_t n);
bool sobj_rem(struct sobj *s, const char *m, size_t n);

extern const struct obj_ops obj_set_ops;

/* Key positions of SINTERCARD: "numkeys key [key ...]". */
int set_getkeys_numkeys(int argc, struct rv_str *argv, int *out, int max);

CMD_HANDLER(sadd); CMD_HANDLER(srem); CMD_HANDLER(smembers); CMD_HANDLER(sismember);
CMD_HANDLER(smismember); CMD_HANDLER(scard); CMD_HANDLER(spop); CMD_HANDLER(srandmember);
CMD_HANDLER(smove); CMD_HANDLER(sinter); CMD_HANDLER(sintercard); CMD_HANDLER(sunion);
CMD_HANDLER(sdiff); CMD_HANDLER(sinterstore); CMD_HANDLER(sunionstore); CMD_HANDLER(sdiffstore);
CMD_HANDLER(sscan);
