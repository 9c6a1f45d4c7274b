/* node/types/json_pack.h: the packed form of a small JSON document, one
 * byte string kept inline in the key's entry (as a small hash is a
 * listpack), so a small document costs about its text, not a node tree.
 *
 * A value is a tag byte and its payload: null, false, true; an integer
 * (zigzag varint), an unsigned integer above INT64_MAX or a double (8
 * bytes); a string (length in the tag below 128 bytes, else a varint); an
 * array or object (a varint of the content's bytes, so a reader skips it in
 * O(1), then the elements, or the members as varint key length, key bytes,
 * value). Members keep their insertion order.
 *
 * Reads (a chain of keys, the compact text) run on the bytes; anything else
 * decodes the tree (jpk_decode). The bytes come only from jpk_encode, but
 * every reader checks its bounds and fails rather than read past them. */
#pragma once
#include "base/buf.h"
#include "node/types/json.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Documents whose packed form is at most this many bytes are kept packed:
 * the default of the json-max-packed-bytes config key (0..JPK_LIMIT_BYTES). */
#define JPK_MAX_BYTES 512
#define JPK_LIMIT_BYTES 65536

/* Appends j's packed form to out when it is at most max bytes; false (out
 * unchanged) when larger. */
bool jpk_encode(const struct json *j, size_t max, struct buf *out);
/* The tree of a packed value; NULL when the bytes are malformed. */
struct json *jpk_decode(const uint8_t *p, size_t n);
/* Appends the compact text of the packed value at p (RedisJSON's output,
 * as json_write with no format); false when malformed. */
bool jpk_write(struct buf *b, const uint8_t *p, size_t n);
/* The value of member k of the object at [*p, *p + *n): true with *p and *n
 * narrowed to that value; false when the value is not an object, has no such
 * member or is malformed. */
bool jpk_member(const uint8_t **p, size_t *n, const char *k, size_t klen);
