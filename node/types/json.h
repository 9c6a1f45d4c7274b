/* node/types/json.h: JSON documents (the JSON.* commands, KS_JSON keys) as a
 * tree of nodes, never as text.
 *
 * A node is a null, boolean, 64-bit integer (exact), double, string, array
 * (a vector of node pointers: O(1) indexing) or object (members in insertion
 * order, with a hash index once an object has more than JSON_OBJ_INDEX_MIN
 * members, so a lookup costs the key, not the object). Reading or changing one
 * value costs the path and the value touched: nothing is rebuilt.
 *
 * Ownership: a document owns all its nodes. Functions named _take take
 * ownership of the node passed in; json_arr_take/json_obj_take return a node
 * the caller then owns. Node pointers stay valid until their node is removed
 * or the document destroyed (json_assign keeps the node's address). */
#pragma once
#include "base/buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 128 /* nesting limit, as RedisJSON */
#define JSON_OBJ_INDEX_MIN 16

enum json_type { JSON_NULL, JSON_BOOL, JSON_INT, JSON_DOUBLE, JSON_STR, JSON_ARR, JSON_OBJ };

struct json;

/* ---- creation and destruction ---- */
struct json *json_new_null(void);
struct json *json_new_bool(bool b);
struct json *json_new_int(int64_t v);
/* An integer above INT64_MAX (up to UINT64_MAX): JSON_INT, kept exact as RedisJSON does. */
struct json *json_new_uint(uint64_t v);
struct json *json_new_double(double v);
struct json *json_new_str(const char *p, size_t n);
struct json *json_new_arr(void);
struct json *json_new_obj(void);
void json_destroy(struct json *j); /* NULL is a no-op; frees the subtree */
struct json *json_dup(const struct json *j);
/* Moves src's value into dst (freeing dst's old value) and frees the src
 * node: dst keeps its address, so a parent needs no update. */
void json_assign_take(struct json *dst, struct json *src);

/* ---- reading ---- */
enum json_type json_type(const struct json *j);
bool json_bool(const struct json *j);
int64_t json_int(const struct json *j);
bool json_int_unsigned(const struct json *j); /* a JSON_INT above INT64_MAX */
uint64_t json_uint(const struct json *j);     /* its value */
double json_double(const struct json *j);
double json_num(const struct json *j); /* an int or a double, as double */
const char *json_str(const struct json *j, size_t *len);
size_t json_len(const struct json *j); /* array elements, object members, string bytes */
struct json *json_arr_at(const struct json *j, size_t i);
const char *json_obj_key(const struct json *j, size_t i, size_t *klen);
struct json *json_obj_val(const struct json *j, size_t i);
/* The member's index, or -1. */
ptrdiff_t json_obj_find(const struct json *j, const char *k, size_t klen);
struct json *json_obj_get(const struct json *j, const char *k, size_t klen);
bool json_equal(const struct json *a, const struct json *b);
/* Bytes allocated for the subtree (MEMORY USAGE, JSON.DEBUG MEMORY): O(subtree). */
size_t json_mem(const struct json *j);
/* The type name JSON.TYPE replies ("object", "integer", "number", ...). */
const char *json_type_name(const struct json *j);

/* ---- changes ---- */
void json_set_bool(struct json *j, bool b);
void json_set_int(struct json *j, int64_t v);
void json_set_double(struct json *j, double v);
void json_str_append(struct json *j, const char *p, size_t n);
/* Inserts v at i (0 <= i <= len). */
void json_arr_insert_take(struct json *a, size_t i, struct json *v);
/* Inserts the k nodes of v at i (0 <= i <= len), moving the tail once. */
void json_arr_insert_many_take(struct json *a, size_t i, struct json *const *v, size_t k);
/* Removes element i and returns it (the caller owns it). */
struct json *json_arr_take(struct json *a, size_t i);
/* Keeps elements [start, stop] (inclusive; start > stop empties it). */
void json_arr_trim(struct json *a, size_t start, size_t stop);
/* Sets member k to v: replaces the value in place or appends the member. */
void json_obj_set_take(struct json *o, const char *k, size_t klen, struct json *v);
/* Removes member i and returns its value (the caller owns it). */
struct json *json_obj_take(struct json *o, size_t i);
/* Removes (and frees) every element or member whose value drop() says to, in
 * one pass: O(len) however many go, where repeated takes would cost O(len)
 * each. Returns how many were removed. */
typedef bool json_drop_fn(const struct json *child, void *arg);
size_t json_remove_children(struct json *parent, json_drop_fn *drop, void *arg);
/* Empties an array or object, or sets a number to 0; false for other types. */
bool json_clear(struct json *j);

/* ---- text ---- */
/* Parses one JSON value (surrounding whitespace allowed). On error returns
 * NULL and writes a message like RedisJSON's ("expected value at line 1
 * column 2") to err. Nesting beyond JSON_MAX_DEPTH is an error. */
struct json *json_parse(const char *p, size_t n, char *err, size_t errlen);

/* Output format of JSON.GET: NULL strings are empty (compact output). */
struct json_fmt {
    const char *indent, *newline, *space;
    size_t ilen, nlen, slen;
};
void json_write(struct buf *b, const struct json *j, const struct json_fmt *f);
/* A double as RedisJSON prints it (shortest round trip; "1.0", "1e300"
 * style as serde_json/ryu). Returns the length written to out (>= 32 bytes). */
size_t json_fmt_double(double v, char *out);
/* An integer in decimal (snprintf's "%lld" without its cost: reads of
 * small fields are mostly numbers). out holds >= 21 bytes; returns the length. */
size_t json_fmt_int(int64_t v, char *out);
/* A string with JSON escapes and quotes. */
void json_write_str(struct buf *b, const char *p, size_t n);

/* The type's operations (node/types/obj.h), in json_obj.c. */
struct obj_ops;
extern const struct obj_ops obj_json_ops;
/* Frees a document (the keyspace's free function for KS_JSON values). */
void json_free(void *doc);
