/* node/types/set.h: the set object (the commands are node/commands/t_set.c).
 *
 * Encodings, as Redis 7.2: "intset" (node/types/intset.h) while every member is an
 * integer and there are at most set-max-intset-entries; "listpack" (the
 * packed list of hpk.h) for at most set-max-listpack-entries members of at
 * most set-max-listpack-value bytes; then "hashtable" (a DICT_KEYONLY dict:
 * one allocation per member, no value). Conversion is one way. The limits
 * come from the caller (struct sobj_lim). */
#pragma once
#include "node/types/hpk.h"
#include "node/types/obj.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dict;
struct intset;
struct ks;
struct ks_entry;

enum { SENC_IS = 0, SENC_PK = 1, SENC_HT = 2 };

/* What the keyspace points to for the intset and hashtable encodings (a
 * listpack set is stored inline in its entry: the hpk bytes). Visible so
 * that commands walk the dict directly (SSCAN). */
struct sbig {
    uint32_t enc;
    union {
        struct intset *is;
        struct dict *d; /* DICT_KEYONLY */
    };
};
/* A set as commands and tests handle it: standalone on the heap
 * (sobj_create), or on a command's stack bound to a keyspace entry
 * (sobj_bind). In the keyspace a listpack set is stored inline in its entry;
 * intset and hashtable sets are a pointer to a small struct sbig. */
struct sobj {
    uint32_t enc;
    struct hpk_ref pk; /* listpack; pk.ks/pk.e: the binding (NULL standalone) */
    struct sbig *b;    /* intset, hashtable */
};
struct sobj_lim {
    size_t max_intset;     /* set-max-intset-entries */
    size_t max_pk_entries; /* set-max-listpack-entries */
    size_t max_pk_value;   /* set-max-listpack-value */
};
/* An empty set in the encoding Redis would pick for a first member m and
 * about hint members. */
struct sobj *sobj_create(const char *m, size_t n, size_t hint, const struct sobj_lim *lim);
void sobj_free(struct sobj *s); /* standalone only; NULL is a no-op */
/* Binds s to set entry e of ks (ks NULL: read only). */
void sobj_bind(struct sobj *s, struct ks *ks, struct ks_entry *e);
/* Stores standalone s at key (replacing it, no deadline) and frees s. */
void sobj_store(struct sobj *s, struct ks *ks, const char *key, size_t klen);
size_t sobj_len(const struct sobj *s);
size_t sobj_mem(const struct sobj *s); /* bytes outside the keyspace entry */
const char *sobj_encoding(const struct sobj *s);
bool sobj_add(struct sobj *s, const char *m, size_t n, const struct sobj_lim *lim);
bool sobj_has(const struct sobj *s, const char *m, size_t n);
bool sobj_rem(struct sobj *s, const char *m, size_t n);

/* Every member (integers formatted); fn must not modify s. */
typedef void svisit_fn(void *arg, struct rv_str m);
void sobj_foreach(const struct sobj *s, svisit_fn *fn, void *arg);
/* A uniformly chosen member of a non-empty set, drawn from the stream *rs
 * (hash_rng_next); a view valid until s changes. */
struct rv_str sobj_random(const struct sobj *s, uint64_t *rs, char scratch[HPK_SCRATCH]);

extern const struct obj_ops obj_set_ops;
