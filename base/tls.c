/* base/tls.c: TLS sessions on non-blocking sockets (OpenSSL 3). */
#include "base/tls.h"

#include "base/mem.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

struct tls_ctx {
    SSL_CTX *ssl;
    atomic_int refs;
};

struct tls {
    SSL *ssl;
    char err[200];
};

static void
ssl_err(char *err, size_t errsz, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[160] = "";
    if (e != 0) {
        ERR_error_string_n(e, buf, sizeof(buf));
    }
    snprintf(err, errsz, "%s%s%s", what, e ? ": " : "", buf);
    ERR_clear_error();
}

/* tls-protocols: the lowest and highest version named ("" = 1.2 and 1.3). */
static bool
proto_range(const char *list, int *lo, int *hi)
{
    static const struct {
        const char *name;
        int v;
    } names[] = { { "TLSv1", TLS1_VERSION },
                  { "TLSv1.1", TLS1_1_VERSION },
                  { "TLSv1.2", TLS1_2_VERSION },
                  { "TLSv1.3", TLS1_3_VERSION } };
    *lo = 0, *hi = 0;
    if (list == NULL || *list == '\0') {
        *lo = TLS1_2_VERSION, *hi = TLS1_3_VERSION;
        return true;
    }
    char copy[256], *save = NULL;
    snprintf(copy, sizeof(copy), "%s", list);
    for (char *w = strtok_r(copy, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save)) {
        int v = 0;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            if (strcasecmp(w, names[i].name) == 0) {
                v = names[i].v;
            }
        }
        if (v == 0) {
            return false;
        }
        *lo = *lo == 0 || v < *lo ? v : *lo;
        *hi = v > *hi ? v : *hi;
    }
    return *lo != 0;
}

static int
key_pass_cb(char *buf, int size, int rwflag, void *u)
{
    (void)rwflag;
    const char *pass = u;
    int n = (int)strlen(pass);
    if (n > size) {
        n = size;
    }
    memcpy(buf, pass, (size_t)n);
    return n;
}

static bool
set(const char *s)
{
    return s != NULL && *s != '\0';
}

static bool
ctx_setup(SSL_CTX *ssl, const struct tls_opts *o, bool server, char *err, size_t errsz)
{
    int lo, hi;
    if (!proto_range(o->protocols, &lo, &hi)) {
        snprintf(err, errsz, "Invalid tls-protocols specified: '%s'", o->protocols);
        return false;
    }
    SSL_CTX_set_min_proto_version(ssl, lo);
    SSL_CTX_set_max_proto_version(ssl, hi);
    SSL_CTX_set_options(ssl, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                 (o->prefer_server_ciphers ? SSL_OP_CIPHER_SERVER_PREFERENCE : 0));
    /* partial writes, a retried write from another address (the output buffer
     * moves as it grows), and no buffers kept by idle sessions */
    SSL_CTX_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    /* one read() per burst of records instead of two per record (its 5-byte
     * header, then its body); readers drain what was read ahead (tls_pending) */
    SSL_CTX_set_read_ahead(ssl, 1);
    const char *cert = o->cert_file, *key = o->key_file;
    if (!server && set(o->client_cert_file)) {
        cert = o->client_cert_file, key = o->client_key_file;
    }
    if (set(o->key_file_pass)) {
        SSL_CTX_set_default_passwd_cb(ssl, key_pass_cb);
        SSL_CTX_set_default_passwd_cb_userdata(ssl, (void *)o->key_file_pass);
    }
    if (set(cert)) {
        if (SSL_CTX_use_certificate_chain_file(ssl, cert) != 1) {
            ssl_err(err, errsz, "Failed to load certificate");
            return false;
        }
        if (!set(key) || SSL_CTX_use_PrivateKey_file(ssl, key, SSL_FILETYPE_PEM) != 1) {
            ssl_err(err, errsz, "Failed to load private key");
            return false;
        }
        if (SSL_CTX_check_private_key(ssl) != 1) {
            ssl_err(err, errsz, "The private key does not match the certificate");
            return false;
        }
    } else if (server) {
        snprintf(err, errsz, "No tls-cert-file and tls-key-file configured");
        return false;
    }
    if (set(o->ca_cert_file) || set(o->ca_cert_dir)) {
        if (SSL_CTX_load_verify_locations(ssl, set(o->ca_cert_file) ? o->ca_cert_file : NULL,
                                          set(o->ca_cert_dir) ? o->ca_cert_dir : NULL) != 1) {
            ssl_err(err, errsz, "Failed to configure CA certificate(s) file/directory");
            return false;
        }
    } else if (!server || o->auth_clients != TLS_AUTH_NO) {
        snprintf(err, errsz,
                 "Either tls-ca-cert-file or tls-ca-cert-dir must be specified when "
                 "tls-cluster, tls-replication or tls-auth-clients are enabled!");
        return false;
    }
    if (set(o->ciphers) && SSL_CTX_set_cipher_list(ssl, o->ciphers) != 1) {
        ssl_err(err, errsz, "Failed to configure ciphers");
        return false;
    }
    if (set(o->ciphersuites) && SSL_CTX_set_ciphersuites(ssl, o->ciphersuites) != 1) {
        ssl_err(err, errsz, "Failed to configure ciphersuites");
        return false;
    }
    if (server) {
        int mode = o->auth_clients == TLS_AUTH_YES
                       ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT
                   : o->auth_clients == TLS_AUTH_OPTIONAL ? SSL_VERIFY_PEER
                                                          : SSL_VERIFY_NONE;
        SSL_CTX_set_verify(ssl, mode, NULL);
        SSL_CTX_set_session_id_context(ssl, (const unsigned char *)"ruvio", 5);
    } else {
        SSL_CTX_set_verify(ssl, SSL_VERIFY_PEER, NULL);
    }
    return true;
}

struct tls_ctx *
tls_ctx_new(const struct tls_opts *o, bool server, char *err, size_t errsz)
{
    SSL_CTX *ssl = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    if (ssl == NULL) {
        ssl_err(err, errsz, "Failed to create a TLS context");
        return NULL;
    }
    if (!ctx_setup(ssl, o, server, err, errsz)) {
        SSL_CTX_free(ssl);
        return NULL;
    }
    struct tls_ctx *c = rv_malloc(sizeof(*c));
    c->ssl = ssl;
    atomic_init(&c->refs, 1);
    return c;
}

void
tls_ctx_ref(struct tls_ctx *c)
{
    atomic_fetch_add(&c->refs, 1);
}

void
tls_ctx_unref(struct tls_ctx *c)
{
    if (c != NULL && atomic_fetch_sub(&c->refs, 1) == 1) {
        SSL_CTX_free(c->ssl);
        rv_free(c);
    }
}

struct tls *
tls_new(struct tls_ctx *c, int fd, bool server)
{
    SSL *ssl = SSL_new(c->ssl);
    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1) {
        SSL_free(ssl);
        ERR_clear_error();
        return NULL;
    }
    if (server) {
        SSL_set_accept_state(ssl);
    } else {
        SSL_set_connect_state(ssl);
    }
    struct tls *t = rv_calloc(1, sizeof(*t));
    t->ssl = ssl;
    return t;
}

void
tls_free(struct tls *t)
{
    if (t == NULL) {
        return;
    }
    if (SSL_is_init_finished(t->ssl)) {
        SSL_shutdown(t->ssl); /* one close_notify, no waiting for the peer's */
    }
    ERR_clear_error();
    SSL_free(t->ssl);
    rv_free(t);
}

static ssize_t
outcome(struct tls *t, int rc)
{
    switch (SSL_get_error(t->ssl, rc)) {
    case SSL_ERROR_WANT_READ: return TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE: return TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: return 0;
    case SSL_ERROR_SYSCALL:
        if (ERR_peek_error() == 0) {
            snprintf(t->err, sizeof(t->err), "connection reset or closed during TLS");
            return 0;
        }
        /* fall through */
    default: ssl_err(t->err, sizeof(t->err), "TLS error"); return TLS_ERROR;
    }
}

ssize_t
tls_read(struct tls *t, void *p, size_t n)
{
    ERR_clear_error();
    int rc = SSL_read(t->ssl, p, n > INT32_MAX ? INT32_MAX : (int)n);
    return rc > 0 ? rc : outcome(t, rc);
}

ssize_t
tls_write(struct tls *t, const void *p, size_t n)
{
    ERR_clear_error();
    int rc = SSL_write(t->ssl, p, n > INT32_MAX ? INT32_MAX : (int)n);
    return rc > 0 ? rc : outcome(t, rc);
}

int
tls_handshake(struct tls *t)
{
    ERR_clear_error();
    int rc = SSL_do_handshake(t->ssl);
    if (rc == 1) {
        return 1;
    }
    ssize_t o = outcome(t, rc);
    return o == 0 ? TLS_ERROR : (int)o;
}

void
tls_set_fd(struct tls *t, int fd)
{
    SSL_set_fd(t->ssl, fd);
}

bool
tls_pending(const struct tls *t)
{
    return SSL_pending(t->ssl) > 0 || SSL_has_pending(t->ssl);
}

bool
tls_handshake_done(const struct tls *t)
{
    return SSL_is_init_finished(t->ssl);
}

const char *
tls_strerror(const struct tls *t)
{
    return t->err[0] ? t->err : "TLS error";
}
