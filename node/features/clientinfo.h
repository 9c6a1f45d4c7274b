/* node/features/clientinfo.h: one CLIENT LIST line describing a connection, with Redis's
 * fields (CLIENT LIST, CLIENT INFO, and the client-info of ACL LOG entries). It lives
 * here, beside the features whose state it shows (subscriptions, MULTI, the user). */
#pragma once

struct buf;
struct conn;

/* Append c's line, '\n'-terminated, as seen by me (whose shard clock gives age and idle). */
void clientinfo_line(struct conn *me, struct conn *c, struct buf *out);
