/* tls.c: SSL_CTX setup and the peer's identity. */
#include "tls.h"

#include <openssl/err.h>
#include <openssl/x509.h>

static void ssl_err(char *err, size_t errlen, const char *what, const char *file)
{
    unsigned long e = ERR_get_error();
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    snprintf(err, errlen, "%s %s: %s", what, file ? file : "", e ? buf : "failed");
    ERR_clear_error();
}

SSL_CTX *tls_server_ctx(const char *cert, const char *key, const char *client_ca, char *err,
                        size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        ssl_err(err, errlen, "cannot create a TLS context", NULL);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        ssl_err(err, errlen, "cannot load the certificate", cert);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        ssl_err(err, errlen, "cannot load the key (or it does not match the certificate)", key);
        goto fail;
    }
    if (client_ca) {
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(client_ca);
        if (SSL_CTX_load_verify_locations(ctx, client_ca, NULL) != 1 || names == NULL) {
            ssl_err(err, errlen, "cannot load the client CA", client_ca);
            goto fail;
        }
        SSL_CTX_set_client_CA_list(ctx, names);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

SSL_CTX *tls_client_ctx(const char *ca_file, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        ssl_err(err, errlen, "cannot create a TLS context", NULL);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    int ok = ca_file ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL)
                     : SSL_CTX_set_default_verify_paths(ctx);
    if (ok != 1) {
        ssl_err(err, errlen, "cannot load the CA bundle", ca_file ? ca_file : "(system)");
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    return ctx;
}

int tls_peer_subject(SSL *ssl, struct sl_buf *out)
{
    X509 *cert = SSL_get1_peer_certificate(ssl);
    if (cert == NULL || SSL_get_verify_result(ssl) != X509_V_OK) {
        X509_free(cert);
        return -1;
    }
    BIO *bio = BIO_new(BIO_s_mem());
    X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
    char *p;
    long n = BIO_get_mem_data(bio, &p);
    if (n > 0)
        sl_buf_put(out, p, (size_t)n);
    BIO_free(bio);
    X509_free(cert);
    return n > 0 ? 0 : -1;
}
