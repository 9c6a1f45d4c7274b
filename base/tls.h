/* base/tls.h: TLS on non-blocking sockets, over Debian's OpenSSL.
 *
 * A tls_ctx is the configuration (certificate, key, CAs, protocols,
 * ciphers), reference-counted so that a reloaded one replaces it while
 * connections made with the old one live on. A tls is one connection's
 * session on a socket the caller owns and polls; the handshake runs inside
 * the first reads and writes. Reads and writes never block: they return
 * TLS_WANT_READ or TLS_WANT_WRITE when the socket must become readable or
 * writable first (a read can need a write during the handshake). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct tls_ctx;
struct tls;

enum tls_auth { TLS_AUTH_NO = 0, TLS_AUTH_YES = 1, TLS_AUTH_OPTIONAL = 2 };

/* Redis's names (tls-cert-file, ...); NULL or "" = not set. */
struct tls_opts {
    const char *cert_file, *key_file, *key_file_pass;
    const char *client_cert_file, *client_key_file; /* a client's own, else cert/key */
    const char *ca_cert_file, *ca_cert_dir;
    const char *protocols;    /* "TLSv1.2 TLSv1.3"; "" = both */
    const char *ciphers;      /* TLS 1.2 cipher list */
    const char *ciphersuites; /* TLS 1.3 suites */
    enum tls_auth auth_clients;
    bool prefer_server_ciphers;
};

/* A server (accepting) or client (connecting) context; NULL and a one-line
 * reason in err when a file is missing or bad, or an option is refused. */
struct tls_ctx *tls_ctx_new(const struct tls_opts *o, bool server, char *err, size_t errsz);
void tls_ctx_ref(struct tls_ctx *c);
void tls_ctx_unref(struct tls_ctx *c); /* NULL is a no-op */

/* A session on fd (non-blocking, connected); fd stays the caller's. */
struct tls *tls_new(struct tls_ctx *c, int fd, bool server);
void tls_free(struct tls *t); /* sends a close_notify if it can, without waiting */

#define TLS_WANT_READ (-1)
#define TLS_WANT_WRITE (-2)
#define TLS_ERROR (-3) /* the session is over: tls_strerror says why */
/* Bytes moved (> 0), 0 when the peer closed, or one of the codes above. A
 * write that returns TLS_WANT_* must be retried with the same bytes. */
ssize_t tls_read(struct tls *t, void *p, size_t n);
ssize_t tls_write(struct tls *t, const void *p, size_t n);
/* Whether the session holds bytes not yet returned by tls_read: decrypted
 * ones, or records read ahead from the socket and not yet decrypted (the
 * socket will not signal them again). Readers call tls_read until false. */
bool tls_pending(const struct tls *t);
bool tls_handshake_done(const struct tls *t);
/* Drives the handshake: 1 when done, else TLS_WANT_READ/WRITE or TLS_ERROR. */
int tls_handshake(struct tls *t);
/* The session moves to another descriptor of the same connection (dup). */
void tls_set_fd(struct tls *t, int fd);
const char *tls_strerror(const struct tls *t);
