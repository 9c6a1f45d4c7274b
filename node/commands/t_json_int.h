/* node/commands/t_json_int.h: helpers shared by t_json.c and t_json_ops.c
 * only (not for other modules). Each helper that can fail replies the error
 * itself and returns NULL (or false). */
#pragma once
#include "node/core/conn.h"
#include "node/types/json.h"
#include "node/types/json_path.h"

#include <stdbool.h>

#define TJSON_ERR_NOKEY "ERR could not perform this operation on a key that doesn't exist"
#define TJSON_ERR_ROOT "ERR new objects must be created at the root"
#define TJSON_ERR_DEPTH "ERR nesting depth exceeds the limit of 128"
/* RedisJSON 2.x's find_add_paths (its key_value.rs), texts as it replies them */
#define TJSON_ERR_STATIC "Err wrong static path"
#define TJSON_ERR_INDEX "ERR array index out of range"

/* The default path of commands whose path is optional: "." (RESP2), "$" (RESP3). */
struct rv_str tjson_root(const struct conn *c);

/* Small documents are packed inline in their entry (node/types/json_pack.h):
 * commands work on a decoded tree that writes store again. */
/* The JSON entry at key; NULL when missing or (after a WRONGTYPE reply) *err. */
struct ks_entry *tjson_entry(struct conn *c, struct rv_str key, bool write, bool *err);
/* The document at key to read: a packed one is decoded into *tmp, which the
 * caller frees (json_destroy) after its last use of the document. */
struct json *tjson_doc_ro(struct conn *c, struct rv_str key, struct json **tmp, bool *err);
/* The same for an entry already looked up (KS_JSON). */
struct json *tjson_doc_of(struct conn *c, struct ks_entry *e, struct json **tmp, bool *err);
/* The document at key to change without turning a packed one into the
 * tree: it is decoded into *tmp (NULL for a tree) and *expire gets the
 * key's deadline; tjson_doc_w_done then stores *tmp again if changed (packed
 * while it fits) or frees it. The tree's nodes are valid until then. */
struct json *tjson_doc_w(struct conn *c, struct rv_str key, struct json **tmp, int64_t *expire,
                         bool *err);
void tjson_doc_w_done(struct conn *c, struct rv_str key, struct json *tmp, int64_t expire,
                      bool changed);
/* Stores v as key's whole document (consumed): packed when small. */
void tjson_store(struct conn *c, struct rv_str key, struct json *v, int64_t expire_ms);
struct jpath *tjson_path(struct conn *c, struct rv_str p);
struct json *tjson_value(struct conn *c, struct rv_str v);
/* jpath_eval, replying JPATH_ERR_WORK (false) when it went past its bound. */
bool tjson_eval(struct conn *c, const struct jpath *jp, struct json *doc, struct jmatches *m);
int tjson_depth(const struct json *j); /* nesting levels: 0 for a scalar */
void tjson_reply(struct conn *c, const struct json *j, const struct json_fmt *f);
void tjson_reply_missing(struct conn *c, struct rv_str path);
void tjson_reply_wrong(struct conn *c, const char *expect, const struct json *found);
/* A read of path in key's document (TYPE, RESP, OBJKEYS): the path parsed
 * into *jp and its matches into *m. false when already replied: a key of
 * another type, no key (a null; with TJSON_RD_NOKEY_ERR and a `$` path,
 * TJSON_ERR_NOKEY as RedisJSON's OBJKEYS), or a bad path (its syntax error;
 * a null instead for a legacy path with TJSON_RD_BADPATH_NIL, as RedisJSON's
 * legacy TYPE and OBJKEYS; in a one-element array under RESP3 with
 * TJSON_RD_RESP3_WRAP, as RedisJSON's TYPE wraps its reply). The key is looked at before the path is
 * compiled, as RedisJSON 2.x does. The caller frees both, and *tmp (a
 * packed document's decoded tree, else NULL) after them. */
#define TJSON_RD_NOKEY_ERR 1u
#define TJSON_RD_BADPATH_NIL 2u
#define TJSON_RD_RESP3_WRAP 4u
bool tjson_read(struct conn *c, struct rv_str key, struct rv_str path, struct jpath **jp,
                struct jmatches *m, struct json **tmp, unsigned flags);
/* RedisJSON's Path::is_legacy, from the text alone: not starting with `$`. */
static inline bool
tjson_legacy_text(struct rv_str p)
{
    return p.len == 0 || p.p[0] != '$';
}
/* The root path as RedisJSON compares it before compiling: `$` or `.`. */
static inline bool
tjson_root_text(struct rv_str p)
{
    return p.len == 1 && (p.p[0] == '$' || p.p[0] == '.');
}
/* Where JSON.SET (MSET, MERGE) puts a value at jp in doc, as RedisJSON
 * 2.x's find_paths decides, changing nothing: TJSON_SET_REPLACE (*m: the
 * matches, unless NX), TJSON_SET_ADD (*m: the objects that get member *k,
 * a view into jp; a static path whose last step is a key), TJSON_SET_NONE
 * (the nil reply: XX without a match, NX on an existing place, nothing to
 * add to), or -1 with the error replied: a path with wildcards, `..`,
 * slices, filters or unions that would add (TJSON_ERR_STATIC), an index
 * that does not exist (TJSON_ERR_INDEX), the evaluation bound. The caller
 * frees *m (jmatches_free) in every case. */
#define TJSON_SET_NONE 0
#define TJSON_SET_REPLACE 1
#define TJSON_SET_ADD 2
int tjson_set_plan(struct conn *c, struct json *doc, const struct jpath *jp, bool nx, bool xx,
                   struct jmatches *m, const char **k, size_t *kl);
/* JSON.SET's change: jp set to v in doc (v consumed), NX/XX as given; 1
 * done, 0 nothing matched (the nil reply), -1 error replied. */
int tjson_set_at(struct conn *c, struct json *doc, struct jpath *jp, struct json *v, bool nx,
                 bool xx);
/* qsort order for matches: deepest first, then by node (duplicates adjacent). */
int tjson_cmp_depth(const void *a, const void *b);
