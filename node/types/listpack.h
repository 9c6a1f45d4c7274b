/* node/types/listpack.h: a packed array of byte-string elements in one allocation,
 * the compact encoding of small collections (lists, and later hashes, sets and
 * sorted sets) and the node payload of large lists.
 *
 * Layout: an 8-byte header (total bytes, element count, both uint32 little
 * endian), then the elements back to back. Each element is
 *     <encoding+length, 1..5 bytes> <data> <backlen, 1..5 bytes>
 * where backlen is the size of the first two parts, readable from its last
 * byte backwards, so the array can be walked in both directions. A string in
 * canonical integer form ("-12", not "012") is stored as an integer in the
 * fewest bytes that hold it: 0..127 in one byte, -4096..4095 in two, otherwise
 * 1 + 2..8 bytes. Strings up to 63 bytes take one length byte, up to 4095 two.
 *
 * Positions (uint8_t *p) point at an element's first byte. They are valid
 * until the next call that modifies the listpack: every mutation may move the
 * allocation, so it takes the handle by address (uint8_t **lpp) and updates it
 * in place, and returns the position the caller continues from. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LP_HDR 8u
/* Largest encoded element that still fits the 32-bit total. */
#define LP_MAX_BYTES UINT32_MAX

/* An element as read: a string view into the listpack, or an integer. */
struct lp_val {
    const char *p; /* string bytes; NULL when the element is an integer */
    size_t len;
    int64_t v; /* the integer when p == NULL */
};

/* A value to compare elements with, parsed once (lp_key_init). */
struct lp_key {
    const char *p;
    size_t len;
    bool is_int; /* p[0,len) is a canonical integer: elements equal only as integers */
    int64_t v;
};

uint8_t *lp_create(void);     /* empty; caller owns (lp_destroy) */
void lp_destroy(uint8_t *lp); /* NULL is a no-op */
uint8_t *lp_dup(const uint8_t *lp);
size_t lp_bytes(const uint8_t *lp); /* total encoded size, header included */
size_t lp_count(const uint8_t *lp);
/* Bytes an element holding s[0,n) would add (encoding, data, backlen). */
size_t lp_entry_cost(const char *s, size_t n);
/* true when s[0,n) is a canonical int64 ("-12"; not "012", "+1", "-0", " 1"). */
bool lp_str_is_int(const char *s, size_t n, int64_t *out);

/* ---- walking ---- */
uint8_t *lp_first(const uint8_t *lp); /* NULL when empty */
uint8_t *lp_last(const uint8_t *lp);
uint8_t *lp_next(const uint8_t *lp, const uint8_t *p); /* NULL after the last */
uint8_t *lp_prev(const uint8_t *lp, const uint8_t *p); /* NULL before the first */
/* Element at index (negative counts from the tail, -1 = last); NULL if out of range.
 * Walks from the nearer end. */
uint8_t *lp_seek(const uint8_t *lp, int64_t index);
void lp_get(const uint8_t *p, struct lp_val *out);
/* Format v as bytes: a view of the string, or the integer written into buf. */
const char *lp_val_bytes(const struct lp_val *v, char buf[24], size_t *len);
void lp_key_init(struct lp_key *k, const char *p, size_t len);
bool lp_match(const uint8_t *p, const struct lp_key *k);

/* ---- changes (each may move *lpp) ---- */
/* Insert s[0,n) before p (p NULL: append); returns the new element's position. */
uint8_t *lp_insert(uint8_t **lpp, uint8_t *p, const char *s, size_t n);
uint8_t *lp_append(uint8_t **lpp, const char *s, size_t n);
uint8_t *lp_prepend(uint8_t **lpp, const char *s, size_t n);
/* Replace the element at p; returns its (possibly moved) position. */
uint8_t *lp_replace(uint8_t **lpp, uint8_t *p, const char *s, size_t n);
/* Delete the element at p; returns the element that followed it, or NULL. */
uint8_t *lp_delete(uint8_t **lpp, uint8_t *p);
/* Delete n elements starting at p (fewer if the array ends first); returns
 * the element that followed them, or NULL. */
uint8_t *lp_delete_range(uint8_t **lpp, uint8_t *p, size_t n);
/* Move the elements from p to the end into a new listpack (returned, caller
 * owns); *lpp keeps those before p. */
uint8_t *lp_split(uint8_t **lpp, uint8_t *p);
/* Append every element of src to *lpp (src unchanged). */
void lp_concat(uint8_t **lpp, const uint8_t *src);
/* Structural check (tests, debug): false when the encoding is inconsistent. */
bool lp_valid(const uint8_t *lp);
