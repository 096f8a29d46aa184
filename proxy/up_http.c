/* up_http.c: POSTs to a Streamable HTTP upstream over a small pool of keep-alive connections;
 * replies come back as JSON or as an event stream, and every message found is handed on.
 *
 * A request is never retried (it may have run): a failure is reported for its id once. */
#include "up_http.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <arpa/inet.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "log.h"

#define POOL_MAX 32
#define UPSTREAM_TIMEOUT_S 300 /* between bytes of one reply; a person's time is not in it */

struct hconn {
    struct evhttp_connection *evcon;
    unsigned inflight;
};

struct up_http {
    struct event_base *base;
    struct evhttp_uri *uri;
    char *host, *path, *hostport;
    int port;
    SSL_CTX *tls;
    struct hconn pool[POOL_MAX];
    size_t npool;
    char session_id[256];
    char *authorization;     /* sluice's own credential for the upstream, or NULL */
    char version[16];
    up_http_msg_cb *on_msg;
    up_http_fail_cb *on_fail;
    void (*on_session_lost)(void *arg);
    void *arg;
    struct post *posts;
};

struct post {
    struct post *prev, *next;   /* the upstream's POSTs in flight */
    struct up_http *h;
    struct hconn *hc;
    char *id;                /* JSON text of our request id, or NULL */
    bool sent_session;       /* it carried an Mcp-Session-Id */
    bool sse;
    struct sl_buf body;      /* JSON so far, or the SSE bytes not yet split into events */
};

static struct evhttp_connection *connect_one(struct up_http *h)
{
    struct bufferevent *bev = NULL;
    if (h->tls) {
        SSL *ssl = SSL_new(h->tls);
        /* The certificate must name this host: its DNS name, or its IP address for a literal. */
        unsigned char addr[16];
        if (inet_pton(AF_INET, h->host, addr) == 1 || inet_pton(AF_INET6, h->host, addr) == 1) {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), h->host);
        } else {
            SSL_set_tlsext_host_name(ssl, h->host);
            SSL_set1_host(ssl, h->host);
        }
        bev = bufferevent_openssl_socket_new(h->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                             BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    }
    struct evhttp_connection *c =
        evhttp_connection_base_bufferevent_new(h->base, NULL, bev, h->host, (unsigned short)h->port);
    evhttp_connection_set_retries(c, 0);
    evhttp_connection_set_timeout(c, UPSTREAM_TIMEOUT_S);
    return c;
}

static struct hconn *pick(struct up_http *h)
{
    struct hconn *best = NULL;
    for (size_t i = 0; i < h->npool; i++)
        if (best == NULL || h->pool[i].inflight < best->inflight)
            best = &h->pool[i];
    if ((best == NULL || best->inflight > 0) && h->npool < POOL_MAX) {
        best = &h->pool[h->npool++];
        best->evcon = connect_one(h);
        best->inflight = 0;
    }
    return best;
}

static void post_free(struct post *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        p->h->posts = p->next;
    if (p->next)
        p->next->prev = p->prev;
    if (p->hc)
        p->hc->inflight--;
    free(p->id);
    sl_buf_free(&p->body);
    free(p);
}

/* Splits complete SSE events off the front of the buffer; each event's data lines, joined, is one
 * message. Comments, ids, retry fields and empty data are ignored. */
static void sse_drain(struct post *p, bool at_end)
{
    struct sl_buf *b = &p->body;
    size_t start = 0;
    for (;;) {
        char *base = b->p + start;
        size_t left = b->len - start;
        char *end = NULL;
        size_t sep = 0;
        for (size_t i = 0; i + 1 < left; i++) {
            if (base[i] == '\n' && base[i + 1] == '\n') {
                end = base + i, sep = 2;
                break;
            }
            if (i + 3 < left && memcmp(base + i, "\r\n\r\n", 4) == 0) {
                end = base + i, sep = 4;
                break;
            }
        }
        if (end == NULL) {
            if (!at_end || left == 0)
                break;
            end = base + left, sep = 0;
        }
        struct sl_buf data = { 0 };
        for (char *line = base; line < end;) {
            char *nl = memchr(line, '\n', (size_t)(end - line));
            char *le = nl ? nl : end;
            size_t ll = (size_t)(le - line);
            if (ll && line[ll - 1] == '\r')
                ll--;
            if (ll >= 5 && memcmp(line, "data:", 5) == 0) {
                size_t skip = (ll > 5 && line[5] == ' ') ? 6 : 5;
                if (data.len)
                    sl_buf_putc(&data, '\n');
                sl_buf_put(&data, line + skip, ll - skip);
            }
            line = nl ? nl + 1 : end;
        }
        if (data.len)
            p->h->on_msg(sl_buf_str(&data), p->h->arg);
        sl_buf_free(&data);
        start = (size_t)(end - b->p) + sep;
        if (sep == 0)
            break;
    }
    if (start) {
        memmove(b->p, b->p + start, b->len - start);
        b->len -= start;
        if (b->p)
            b->p[b->len] = 0;
    }
}

static int on_headers(struct evhttp_request *req, void *arg)
{
    struct post *p = arg;
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *ct = evhttp_find_header(in, "Content-Type");
    p->sse = ct && strncasecmp(ct, "text/event-stream", 17) == 0;
    const char *sid = evhttp_find_header(in, "Mcp-Session-Id");
    if (sid && strlen(sid) < sizeof(p->h->session_id))
        snprintf(p->h->session_id, sizeof(p->h->session_id), "%s", sid);
    return 0;
}

static void on_chunk(struct evhttp_request *req, void *arg)
{
    struct post *p = arg;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(in);
    if (p->body.len + n > SL_MAX_MESSAGE) {
        evbuffer_drain(in, n);
        return;
    }
    char *tmp = sl_xmalloc(n + 1);
    evbuffer_remove(in, tmp, n);
    sl_buf_put(&p->body, tmp, n);
    free(tmp);
    if (p->sse)
        sse_drain(p, false);
}

static void on_done(struct evhttp_request *req, void *arg)
{
    struct post *p = arg;
    int code = req ? evhttp_request_get_response_code(req) : 0;
    if (req)
        on_chunk(req, p); /* whatever came without chunk callbacks */
    if (code == 0) {
        if (p->id)
            p->h->on_fail(p->id, 0, "cannot reach the upstream server", p->h->arg);
    } else if (p->sse) {
        sse_drain(p, true);
    } else if (p->body.len && code >= 200 && code < 300) {
        p->h->on_msg(sl_buf_str(&p->body), p->h->arg);
    } else if (code == 404 && p->sent_session) {
        /* The server forgot our session (it restarted): the handshake is done again, and this
         * request, which it never ran, is reported failed rather than resent. */
        p->h->session_id[0] = '\0';
        if (p->id)
            p->h->on_fail(p->id, code, "the upstream server lost its session; it is "
                                       "initialized again, try again", p->h->arg);
        if (p->h->on_session_lost)
            p->h->on_session_lost(p->h->arg);
    } else if (code >= 300) {
        /* A JSON-RPC error for our id passes on; anything else becomes one. */
        bool ours = p->id && p->body.len && strstr(p->body.p, p->id) != NULL &&
                    strstr(p->body.p, "\"error\"") != NULL;
        if (ours) {
            p->h->on_msg(sl_buf_str(&p->body), p->h->arg);
        } else if (p->id) {
            char why[64];
            snprintf(why, sizeof(why), "the upstream server answered HTTP %d", code);
            p->h->on_fail(p->id, code, why, p->h->arg);
        }
    }
    post_free(p);
}

void up_http_post(struct up_http *h, const char *id, struct sl_str method, struct sl_str name,
                  bool modern, struct sl_str body)
{
    struct post *p = sl_xcalloc(1, sizeof(*p));
    p->h = h;
    p->id = id ? sl_xstrdup(id) : NULL;
    p->hc = pick(h);
    p->hc->inflight++;
    p->next = h->posts;
    if (h->posts)
        h->posts->prev = p;
    h->posts = p;
    struct evhttp_request *req = evhttp_request_new(on_done, p);
    evhttp_request_set_header_cb(req, on_headers);
    evhttp_request_set_chunked_cb(req, on_chunk);
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Host", h->hostport);
    evhttp_add_header(out, "Content-Type", "application/json");
    evhttp_add_header(out, "Accept", "application/json, text/event-stream");
    if (h->authorization)
        evhttp_add_header(out, "Authorization", h->authorization);
    if (modern) {
        char *m = sl_xstrndup(method.p, method.len);
        evhttp_add_header(out, "MCP-Protocol-Version", "2026-07-28");
        evhttp_add_header(out, "Mcp-Method", m);
        free(m);
        if (name.p) {
            /* Plain header-safe ASCII as is, anything else in the base64 sentinel (§5.2). */
            bool plain = name.len > 0 && name.p[0] != ' ' && name.p[name.len - 1] != ' ' &&
                         !(name.len >= 9 && memcmp(name.p, "=?base64?", 9) == 0);
            for (size_t i = 0; i < name.len && plain; i++)
                plain = name.p[i] >= 0x20 && name.p[i] < 0x7f;
            struct sl_buf v = { 0 };
            if (plain) {
                sl_buf_put(&v, name.p, name.len);
            } else {
                sl_buf_puts(&v, "=?base64?");
                size_t start = v.len;
                sl_b64url_encode(&v, (const uint8_t *)name.p, name.len);
                for (size_t i = start; i < v.len; i++)
                    v.p[i] = v.p[i] == '-' ? '+' : v.p[i] == '_' ? '/' : v.p[i];
                while ((v.len - start) % 4)
                    sl_buf_putc(&v, '=');
                sl_buf_puts(&v, "?=");
            }
            evhttp_add_header(out, "Mcp-Name", v.p);
            sl_buf_free(&v);
        }
    } else {
        if (h->version[0])
            evhttp_add_header(out, "MCP-Protocol-Version", h->version);
        if (h->session_id[0]) {
            evhttp_add_header(out, "Mcp-Session-Id", h->session_id);
            p->sent_session = true;
        }
    }
    evbuffer_add(evhttp_request_get_output_buffer(req), body.p, body.len);
    if (evhttp_make_request(p->hc->evcon, req, EVHTTP_REQ_POST, h->path) != 0) {
        if (p->id)
            h->on_fail(p->id, 0, "cannot send to the upstream server", h->arg);
        post_free(p);
    }
}

void up_http_on_session_lost(struct up_http *h, void (*cb)(void *arg))
{
    h->on_session_lost = cb;
}

void up_http_set_version(struct up_http *h, const char *version)
{
    snprintf(h->version, sizeof(h->version), "%s", version ? version : "");
}

struct up_http *up_http_new(struct event_base *base, const char *url, SSL_CTX *tls,
                            up_http_msg_cb *on_msg, up_http_fail_cb *on_fail, void *arg,
                            char *err, size_t errlen)
{
    struct evhttp_uri *uri = evhttp_uri_parse(url);
    const char *scheme = uri ? evhttp_uri_get_scheme(uri) : NULL;
    const char *host = uri ? evhttp_uri_get_host(uri) : NULL;
    bool https = scheme && strcmp(scheme, "https") == 0;
    if (uri == NULL || scheme == NULL || host == NULL || *host == '\0' ||
        (!https && strcmp(scheme, "http") != 0)) {
        snprintf(err, errlen, "--upstream %s: expected http(s)://HOST[:PORT]/PATH", url);
        if (uri)
            evhttp_uri_free(uri);
        return NULL;
    }
    if (https && tls == NULL) {
        snprintf(err, errlen, "--upstream %s: https needs a TLS context", url);
        evhttp_uri_free(uri);
        return NULL;
    }
    struct up_http *h = sl_xcalloc(1, sizeof(*h));
    h->base = base;
    h->uri = uri;
    h->host = sl_xstrdup(host);
    h->port = evhttp_uri_get_port(uri) > 0 ? evhttp_uri_get_port(uri) : (https ? 443 : 80);
    const char *path = evhttp_uri_get_path(uri);
    h->path = sl_xstrdup(path && *path ? path : "/");
    struct sl_buf hp = { 0 };
    sl_buf_printf(&hp, "%s:%d", host, h->port);
    h->hostport = sl_xstrndup(hp.p, hp.len);
    sl_buf_free(&hp);
    h->tls = https ? tls : NULL;
    h->on_msg = on_msg;
    h->on_fail = on_fail;
    h->arg = arg;
    /* The client's own Authorization is never passed on (no token passthrough, PROTOCOL.md §7.8);
     * an upstream that wants one gets sluice's, from the environment (not argv: ps shows it). */
    const char *auth = getenv("SLUICE_UPSTREAM_AUTHORIZATION");
    if (auth && *auth && strpbrk(auth, "\r\n") == NULL)
        h->authorization = sl_xstrdup(auth);
    return h;
}

void up_http_free(struct up_http *h)
{
    if (h == NULL)
        return;
    for (size_t i = 0; i < h->npool; i++)
        evhttp_connection_free(h->pool[i].evcon); /* frees its requests, without callbacks */
    while (h->posts) {
        h->posts->hc = NULL;
        post_free(h->posts);
    }
    evhttp_uri_free(h->uri);
    free(h->host);
    free(h->path);
    free(h->hostport);
    free(h->authorization);
    free(h);
}
