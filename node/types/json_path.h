/* node/types/json_path.h: JSON paths, compiled once per command and
 * evaluated against a document (node/types/json.h).
 *
 * Two syntaxes, as RedisJSON 2.x: a path starting with `$` is JSONPath
 * (`$.a`, `$['a']`, `$..a`, `*`, `[n]` with negative n, slices `[a:b:c]`,
 * unions `[a,b]`, filters `[?(@.x > 1 && @.y =~ "re")]`) and its commands
 * reply one result per match; anything else is a legacy path (`.`, `.a.b`,
 * `a[0]`, `["a"]`), read as JSONPath after `$`, whose commands reply the first
 * match only and fail when nothing matches.
 *
 * Evaluation visits only the nodes the path names: a chain of keys and
 * indexes costs its length (objects are indexed), `..` and filters cost the
 * subtree they scan. */
#pragma once
#include "node/types/json.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jpath;

/* One match: the node, its parent (NULL for the root) and its depth. */
struct jmatch {
    struct json *v, *parent;
    int depth;
};
struct jmatches {
    struct jmatch *v;
    size_t n, cap;
};

/* Compiles p; NULL with err set on a syntax error: RedisJSON 2.x's text for
 * the client, without ERR (`Error occurred on position 4, "$.a[ ---->>>> $]",
 * expected one of the following: ...`: the offset in the path's `$` form,
 * the path cut there, what its grammar expected; at most JPATH_ERR_SHOW
 * bytes of the path are shown). The caller owns the path (jpath_destroy). */
#define JPATH_ERR_SHOW 200
struct jpath *jpath_parse(const char *p, size_t n, char *err, size_t errlen);
void jpath_destroy(struct jpath *jp); /* NULL is a no-op */
bool jpath_legacy(const struct jpath *jp);
/* True when the path is `$` (or the legacy `.`): the whole document. */
bool jpath_is_root(const struct jpath *jp);
/* Bound on one evaluation's work (steps at each node, union items included,
 * and matches). A path with
 * several `..` steps, or filters whose operands scan (`@..x`, `$..x`,
 * `$.a[*]`), costs the product of what it scans: past JPATH_MIN_WORK steps
 * the document's nodes are counted once, and evaluation stops past
 * JPATH_WORK_PER_NODE steps per node (at least JPATH_MIN_WORK). A path that
 * scans the document once (`$..a`, `$.a[*]`) stays within it. */
#define JPATH_MIN_WORK (UINT64_C(1) << 16)
#define JPATH_WORK_PER_NODE 16
#define JPATH_ERR_WORK "ERR JSONPath evaluation exceeds its limit of 16 steps per node"

/* Appends every match of jp in root to out, in document order for `..`.
 * false (out empty) when evaluation went past JPATH_MAX_WORK. */
bool jpath_eval(const struct jpath *jp, struct json *root, struct jmatches *out);
/* RedisJSON's static path (its Query::is_static): every step names one
 * member or one index (`.a`, `['a']`, `[0]`, `[-1]`), no `..`, `*`, slice,
 * filter or union of several; at most one match. JSON.SET adds a value only
 * through such a path. */
bool jpath_static(const struct jpath *jp);
/* True when the last step is a single index (`$.a[0]`, `.a[-1]`). */
bool jpath_ends_in_index(const struct jpath *jp);
/* For JSON.SET on a missing member: when the last step is a plain key (or
 * a single quoted key), the matches of the path without it and that key. */
bool jpath_eval_parents(const struct jpath *jp, struct json *root, struct jmatches *out,
                        const char **key, size_t *klen);
void jmatches_reset(struct jmatches *m);
void jmatches_free(struct jmatches *m);
