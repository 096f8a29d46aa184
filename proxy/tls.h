/* tls.h: OpenSSL contexts for the HTTP front (server, optionally verifying client certificates)
 * and for https upstreams (client, verifying the server). TLS 1.2 at least; verification of the
 * upstream is always on. */
#ifndef SL_TLS_H
#define SL_TLS_H

#include <openssl/ssl.h>

#include "base.h"

/* client_ca: NULL for plain TLS, else clients must present a certificate it signed. */
SSL_CTX *tls_server_ctx(const char *cert, const char *key, const char *client_ca, char *err,
                        size_t errlen);
/* ca_file: NULL for the system's trust store. */
SSL_CTX *tls_client_ctx(const char *ca_file, char *err, size_t errlen);
/* The RFC 2253 subject of the peer's verified certificate, or -1 when there is none. */
int tls_peer_subject(SSL *ssl, struct sl_buf *out);

#endif /* SL_TLS_H */
