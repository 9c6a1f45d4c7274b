/* replication/repl_msg_pb.h: the framing of replication/repl_msg.h for a
 * protobuf-c ReplMsg. For repl_msg.c, and for the unit tests and the fuzzer
 * that compare the hand-packed Records with protobuf-c's output; the rest of
 * replication/ never sees protobuf-c's types. */
#pragma once
#include "base/buf.h"
#include "proto/repl.pb-c.h"

void repl_send(struct buf *out, const ReplMsg *m);
void repl_msg_free(ReplMsg *m);
