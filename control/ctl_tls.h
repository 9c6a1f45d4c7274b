/* control/ctl_tls.h: raft's transport over mutual TLS (tls-cluster yes).
 *
 * A struct raft_uv_transport of our own: raft gets, for each connection, one
 * end of an AF_UNIX socketpair (a uv_pipe_t from raft's allocator, raft's to
 * close and free), and a relay on the control thread's loop copies bytes
 * between the other end and a TLS session on the TCP connection to the peer.
 * connect answers once the TLS handshake is done; the connecting side then
 * sends its raft id and address (the hello, the job of raft_uv_tcp's own
 * handshake), and the accepting side reads it before handing raft the stream.
 * A peer that fails the handshake (plaintext, an unknown CA, a bad or missing
 * certificate) or sends no hello within CTL_TLS_HANDSHAKE_MS is logged and
 * dropped. The contexts are asked of ctx_fn for every new connection, so a
 * reloaded certificate applies to the next ones. Control thread only. */
#pragma once
#include <stdbool.h>

struct raft_uv_transport;
struct uv_loop_s;
struct tls_ctx;

#define CTL_TLS_HANDSHAKE_MS 10000

/* A new reference to the server (accepting) or client (connecting) context,
 * NULL when there is none. Called on the control thread. */
typedef struct tls_ctx *(*ctl_tls_ctx_fn)(void *arg, bool server);

/* bind_address: NULL binds the address raft_init gets. 0, or a raft error code. */
int ctl_tls_transport_init(struct raft_uv_transport *t, struct uv_loop_s *loop,
                           const char *bind_address, ctl_tls_ctx_fn ctx_fn, void *arg);
/* Free it once raft is closed (raft closed the transport before that). */
void ctl_tls_transport_release(struct raft_uv_transport *t);
