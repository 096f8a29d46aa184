/* http_principal.c: who sent a request, by the source the operator chose (--principal). Never
 * from the body: the principal is bound into every approval, so a client must not name it. */
#include "http_priv.h"

#include <strings.h>

#include <event2/bufferevent_ssl.h>

#include "seal.h"
#include "tls.h"

/* "cert:" and the verified client certificate's subject, read once per connection. */
static int principal_from_cert(struct conn *c, struct sl_buf *out)
{
    if (c->cert_subject == NULL) {
        struct sl_buf subj = { 0 };
        SSL *ssl = bufferevent_openssl_get_ssl(c->bev);
        if (ssl == NULL || tls_peer_subject(ssl, &subj) != 0) {
            sl_buf_free(&subj);
            return 401;
        }
        c->cert_subject = sl_xstrndup(subj.p, subj.len);
        sl_buf_free(&subj);
    }
    sl_buf_printf(out, "cert:%s", c->cert_subject);
    return 0;
}

/* "bearer:" and the first half of the token's SHA-256: the token itself is never kept. */
static int principal_from_bearer(const struct http1_head *h, struct sl_buf *out)
{
    struct sl_str v;
    if (http1_field(h, HTTP1_AUTHORIZATION, &v) != 1 || v.len < 8 ||
        strncasecmp(v.p, "Bearer ", 7) != 0)
        return 401;
    uint8_t d[SEAL_DIGEST_LEN];
    seal_sha256(v.p + 7, v.len - 7, d);
    sl_buf_puts(out, "bearer:");
    sl_hex_encode(out, d, 16);
    return 0;
}

/* "header:" and the value a trusted proxy in front set (--principal header:NAME). */
static int principal_from_header(const struct front_http *fh, const struct http1_head *h,
                                 struct sl_buf *out)
{
    struct sl_str v;
    if (http1_header(h, fh->o.principal_header, &v) != 1 || v.len == 0 || v.len > 256)
        return 401;
    sl_buf_puts(out, "header:");
    sl_buf_put(out, v.p, v.len);
    return 0;
}

int http_principal_of(struct conn *c, const struct http1_head *h, struct sl_buf *out)
{
    switch (c->fh->o.principal) {
    case PRINCIPAL_ANONYMOUS:
        sl_buf_puts(out, "anonymous");
        return 0;
    case PRINCIPAL_CERT:
        return principal_from_cert(c, out);
    case PRINCIPAL_BEARER:
        return principal_from_bearer(h, out);
    case PRINCIPAL_HEADER:
        return principal_from_header(c->fh, h, out);
    }
    return 401;
}
