/* node/commands/t_stream_int.h: what the stream command modules share
 * (t_stream.c defines these; t_stream_group.c uses them). */
#pragma once
#include "node/core/conn.h"
#include "node/types/stream.h"

#include <stdbool.h>
#include <stdint.h>

#define XS_ERR_BADID "ERR Invalid stream ID specified as stream command argument"

/* "ms-seq", "ms" (seq missing_seq), "-" and "+" unless strict; "ms-*" when
 * seq_given is not NULL (then *seq_given is false for it). */
bool xs_sid_parse(struct rv_str a, struct sid *id, uint64_t missing_seq, bool strict,
                  bool *seq_given);
/* The same, replying Redis's invalid-id error when false. */
bool xs_sid_parse_reply(struct conn *c, struct rv_str a, struct sid *id, uint64_t missing_seq,
                        bool strict);
/* The stream at key: NULL when missing; *err after a WRONGTYPE reply. xs_write
 * creates it when create. */
struct stream *xs_read(struct conn *c, struct rv_str key, bool *err);
struct stream *xs_write(struct conn *c, struct rv_str key, bool create, bool *err);
/* The stream at key for commands that need it to exist: NULL after replying
 * WRONGTYPE or ERR no such key. */
struct stream *xs_read_existing(struct conn *c, struct rv_str key);
struct stream *xs_write_existing(struct conn *c, struct rv_str key);
void xs_reply_fv(void *arg, struct rv_str f, struct rv_str v);
/* The keys of XREAD's (group false) or XREADGROUP's (true) STREAMS list:
 * their argv indexes into out (at most max); 0 when the list is malformed. */
int xs_streams_keys(int argc, struct rv_str *argv, int *out, int max, bool group);
void xs_reply_id(struct conn *c, struct sid id);
/* Entries of [start, end] (count 0: all) as [[id, [f, v, ...]], ...]; returns
 * how many. */
size_t xs_reply_range(struct conn *c, const struct stream *s, struct sid start, struct sid end,
                      bool rev, uint64_t count);
/* The entry id alone as [id, [f, v, ...]] (no enclosing array); 0 (nothing
 * replied) when it is not in the stream. */
size_t xs_reply_range_one(struct conn *c, const struct stream *s, struct sid id);
/* The last live entry's id; 0-0 when empty. */
struct sid xs_last_valid(const struct stream *s);
