/* notify.c: the webhook of --notify-url, over libevent's HTTP client.
 *
 * A job is one event: its JSON body and its attempts. Each attempt has a connection of its own
 * (Connection: close), so a failure leaves nothing behind for the next one. The job's timer does
 * everything that must not happen inside libevent's request callback: that callback only records
 * the status and fires the timer at once; the timer frees the connection, then retries (armed
 * again with the backoff) or finishes the job. While an attempt runs the same timer is its
 * watchdog, in case the HTTP client never calls back. */
#include "notify.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "json.h"
#include "log.h"
#include "metrics.h"
#include "tls.h"
#include "unicode_hidden.h"

#define NOTIFY_MAX_REPLY 65536   /* a webhook's answer is read and dropped; no more than this */

enum job_state {
    JOB_WAITING,   /* queued behind NOTIFY_MAX_ACTIVE others */
    JOB_SENDING,   /* an attempt in flight; the timer is its watchdog */
    JOB_ENDED,     /* the attempt is over (answered, failed, or never began); the timer fires now */
    JOB_BACKOFF    /* waiting to retry; the timer starts the next attempt */
};

struct job {
    struct job *prev, *next;        /* every job, oldest first */
    enum job_state state;
    char *body;                     /* the JSON */
    size_t len;
    char *tool;                     /* for log lines */
    int attempts;                   /* started so far */
    struct evhttp_connection *conn; /* the attempt's, until the timer frees it */
    int status;                     /* the attempt's HTTP status; 0: no response */
    const char *why;                /* without a status: what went wrong */
    struct event *timer;
};

static struct notifier {
    struct event_base *base;
    struct evdns_base *dns;
    SSL_CTX *tls;                   /* https only */
    char *host, *path, *where;      /* where: scheme://host:port, for logs (no path: a
                                     * webhook's path is often its secret) */
    char *host_header;
    int port;
    struct job *head, *tail;
    size_t njobs, nactive;
} *g;

/* ===== the event, as bytes ===== */

/* s as printable UTF-8 of at most NOTIFY_MAX_FIELD bytes: control bytes, invalid UTF-8 and the
 * characters that render as nothing or reorder the text (unicode_hidden.h) become '?', so a
 * principal taken from a header cannot break a line of the chat message, and a tool's name
 * cannot turn the rest of its line around (U+202E). */
static void put_clean(struct sl_buf *out, struct sl_str s)
{
    size_t i = 0, start = out->len;
    while (i < s.len && out->len - start < NOTIFY_MAX_FIELD) {
        uint32_t cp;
        size_t n = sl_utf8_decode(s.p + i, s.len - i, &cp); /* trusts its input: */
        if (!sl_utf8_valid(s.p + i, n)) {
            sl_buf_putc(out, '?');
            i++;
        } else if (cp < 0x20 || unicode_hidden(cp)) { /* DEL and C1 are hidden too */
            sl_buf_putc(out, '?');
            i += n;
        } else {
            sl_buf_put(out, s.p + i, n);
            i += n;
        }
    }
}

static void put_json_field(struct sl_buf *out, const char *key, struct sl_str s)
{
    struct sl_buf b = { 0 };
    put_clean(&b, s);
    sl_buf_printf(out, ",\"%s\":", key);
    json_write_string(out, b.p ? b.p : "", b.len);
    sl_buf_free(&b);
}

/* t in UTC: the date and time (ISO 8601), or the time alone. */
static void put_time(struct sl_buf *out, int64_t t, bool date)
{
    struct tm tm;
    time_t tt = (time_t)t;
    char buf[64];
    size_t n = 0;
    if (gmtime_r(&tt, &tm) != NULL)
        n = date ? strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm)
                 : strftime(buf, sizeof(buf), "%H:%M:%SZ", &tm);
    if (n == 0)
        snprintf(buf, sizeof(buf), "%lld", (long long)t);
    sl_buf_puts(out, buf);
}

/* s in a chat message's text, cleaned (put_clean) and escaped as Slack wants: '<' starts a link
 * or a mention (<!channel>), so it and '>' and '&' are written as entities, which Slack shows as
 * the characters.
 *
 * name: s is a name sluice did not choose (the caller's principal comes from a header or a
 * certificate, the tool's name from the client, the server's from the upstream), so it is made
 * inert in Slack-style markup too: it goes in an inline code span, where *bold*, _italic_,
 * ~strike~ and @here are not formatted; a backtick (which would end the span) becomes "'"; and
 * "://" becomes "[:]//", so no scheme link forms even where a client links inside code. The
 * page's URL is sluice's own (--approval-base-url and the page id), the one link the text keeps:
 * it is written with name false. */
static void put_chat(struct sl_buf *out, struct sl_str s, bool name)
{
    struct sl_buf b = { 0 };
    put_clean(&b, s);
    if (name)
        sl_buf_putc(out, '`');
    for (size_t i = 0; i < b.len; i++) {
        char c = b.p[i];
        if (c == '&')
            sl_buf_puts(out, "&amp;");
        else if (c == '<')
            sl_buf_puts(out, "&lt;");
        else if (c == '>')
            sl_buf_puts(out, "&gt;");
        else if (name && c == '`')
            sl_buf_putc(out, '\'');
        else if (name && c == ':' && b.len - i > 2 && b.p[i + 1] == '/' && b.p[i + 2] == '/')
            sl_buf_puts(out, "[:]");
        else
            sl_buf_putc(out, c);
    }
    if (name)
        sl_buf_putc(out, '`');
    sl_buf_free(&b);
}

void notify_event_text(struct sl_buf *out, const struct notify_event *ev)
{
    sl_buf_puts(out, "sluice: ");
    put_chat(out, ev->caller.len ? ev->caller : SL_STR("anonymous"), true);
    sl_buf_puts(out, " asks to run ");
    put_chat(out, ev->tool, true);
    sl_buf_puts(out, " on ");
    put_chat(out, ev->server, true);
    sl_buf_puts(out, "; approve at ");
    put_chat(out, ev->url, false);
    sl_buf_puts(out, " before ");
    put_time(out, ev->expires_at, false);
}

void notify_event_json(struct sl_buf *out, const struct notify_event *ev)
{
    sl_buf_puts(out, "{\"event\":\"approval-pending\"");
    put_json_field(out, "server", ev->server);
    put_json_field(out, "tool", ev->tool);
    put_json_field(out, "caller", ev->caller.len ? ev->caller : SL_STR("anonymous"));
    put_json_field(out, "url", ev->url);
    sl_buf_puts(out, ",\"expires_at\":\"");
    put_time(out, ev->expires_at, true);
    sl_buf_puts(out, "\"");
    struct sl_buf text = { 0 };
    notify_event_text(&text, ev);
    sl_buf_puts(out, ",\"text\":");
    json_write_string(out, text.p, text.len);
    sl_buf_free(&text);
    sl_buf_puts(out, "}");
}

/* ===== the URL ===== */

/* Where the part of url after "scheme://" ends: its host[:port] (with any user@ before it). */
static size_t authority_end(const char *url, size_t start)
{
    return start + strcspn(url + start, "/?#");
}

/* Where "scheme://" ends in url, or 0 when url does not start with one (RFC 3986's letters). */
static size_t scheme_end(const char *url)
{
    size_t n = strspn(url, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.");
    return n > 0 && strncmp(url + n, "://", 3) == 0 ? n + 3 : 0;
}

/* n bytes of p for a log line: a byte that would break it is written \xNN. */
static void put_escaped(struct sl_buf *out, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\\')
            sl_buf_printf(out, "\\x%02x", c);
        else
            sl_buf_putc(out, (char)c);
    }
}

/* What an error may show of url: scheme://host[:port], never a user name or password, a path
 * or a query (a webhook's secret is its path, or its query). Escaped: the newline a file or a
 * variable often leaves at the end must not break the log line. */
static void put_shown(struct sl_buf *out, const char *url)
{
    size_t start = scheme_end(url);
    if (start == 0) {
        sl_buf_puts(out, "(URL not shown)");
        return;
    }
    size_t end = authority_end(url, start), host = start;
    for (size_t i = start; i < end; i++) /* the last '@' ends user:password@ */
        if (url[i] == '@')
            host = i + 1;
    put_escaped(out, url, start);
    if (strchr(url + end, '@') != NULL) { /* a password with a '/', '?' or '#' in it, maybe */
        sl_buf_puts(out, "(host not shown)");
        return;
    }
    put_escaped(out, url + host, end - host);
    if (url[end] != '\0')
        sl_buf_puts(out, " (path not shown)");
}

/* The first byte of url that cannot go into the request line, said in why (which part holds
 * it, by value, not shown); false when there is none. */
static bool bad_byte(const char *url, char *why, size_t whylen)
{
    size_t i = 0;
    while (url[i] && (unsigned char)url[i] > 0x20 && (unsigned char)url[i] < 0x7f)
        i++;
    if (url[i] == '\0')
        return false;
    size_t start = scheme_end(url);
    const char *part = start == 0 ? "the URL" : i < authority_end(url, start) ? "the host"
                                                                             : "the path or query";
    snprintf(why, whylen, "%s holds a space, control or non-ASCII byte (0x%02x%s)", part,
             (unsigned char)url[i], url[i + 1] == '\0' ? ", at its end" : "");
    return true;
}

/* A host in brackets must be an IPv6 address; libevent also takes RFC 3986's [vX.future]. */
static bool bracketed_ok(const char *h)
{
    size_t n = strlen(h);
    if (h[0] != '[')
        return true;
    char inner[INET6_ADDRSTRLEN + 1];
    unsigned char addr[16];
    if (n < 3 || n - 2 >= sizeof(inner))
        return false;
    memcpy(inner, h + 1, n - 2);
    inner[n - 2] = '\0';
    return inet_pton(AF_INET6, inner, addr) == 1;
}

/* Why url (parsed by libevent into uri, NULL when it could not be) is not
 * http(s)://HOST[:PORT]/PATH, in why; false when it is. */
static bool url_problem(const char *url, const struct evhttp_uri *uri, char *why, size_t whylen)
{
    const char *scheme = uri ? evhttp_uri_get_scheme(uri) : NULL;
    const char *h = uri ? evhttp_uri_get_host(uri) : NULL;
    const char *problem =
        *url == '\0' ? "it is empty"
        : bad_byte(url, why, whylen) ? why
        : scheme_end(url) == 0 || (uri && scheme && strcmp(scheme, "http") != 0 &&
                                   strcmp(scheme, "https") != 0)
            ? "the scheme is not http:// or https://"
        : uri == NULL || scheme == NULL ? "it is not http(s)://HOST[:PORT]/PATH"
        : h == NULL || *h == '\0' ? "it has no host"
        : evhttp_uri_get_userinfo(uri) != NULL
            ? "a user name or password (USER@HOST) is not supported"
        : !bracketed_ok(h) ? "the host in brackets is not an IPv6 address"
                           : NULL;
    if (problem && problem != why)
        snprintf(why, whylen, "%s", problem);
    return problem != NULL;
}

/* libevent keeps an IPv6 literal's brackets ("[::1]"). They belong in the Host header and in the
 * URL, not in the address connected to, nor in the IP the certificate is checked against. */
static char *host_unbracketed(const char *h)
{
    size_t n = strlen(h);
    return h[0] == '[' ? sl_xstrndup(h + 1, n - 2) : sl_xstrdup(h);
}

/* Parses url into its parts. Returns 0 or -1 with err: what is wrong, showing only
 * scheme://host[:port] of url. */
static int parse_url(const char *url, bool *https, char **host, int *port, char **path,
                     char *err, size_t errlen)
{
    char why[160];
    url = url ? url : "";
    struct evhttp_uri *uri = *url ? evhttp_uri_parse(url) : NULL;
    if (url_problem(url, uri, why, sizeof(why))) {
        struct sl_buf shown = { 0 };
        put_shown(&shown, url);
        sl_fail(err, errlen, "%s: %s", shown.p, why);
        sl_buf_free(&shown);
        if (uri)
            evhttp_uri_free(uri);
        return -1;
    }
    const char *p = evhttp_uri_get_path(uri), *q = evhttp_uri_get_query(uri);
    *https = strcmp(evhttp_uri_get_scheme(uri), "https") == 0;
    *host = host_unbracketed(evhttp_uri_get_host(uri));
    *port = evhttp_uri_get_port(uri) > 0 ? evhttp_uri_get_port(uri) : (*https ? 443 : 80);
    struct sl_buf b = { 0 };
    sl_buf_printf(&b, "%s%s%s", p && *p ? p : "/", q ? "?" : "", q ? q : "");
    *path = sl_xstrndup(b.p, b.len);
    sl_buf_free(&b);
    evhttp_uri_free(uri);
    return 0;
}

int notify_url_check(const char *url, char *err, size_t errlen)
{
    bool https;
    char *host, *path;
    int port;
    if (parse_url(url, &https, &host, &port, &path, err, errlen) != 0)
        return -1;
    free(host);
    free(path);
    return 0;
}

/* ===== the jobs ===== */

static void job_free(struct job *j)
{
    if (j->conn)
        evhttp_connection_free(j->conn); /* a request still in it is dropped without its cb */
    event_free(j->timer);
    free(j->body);
    free(j->tool);
    free(j);
}

static void job_finish(struct job *j)
{
    *(j->prev ? &j->prev->next : &g->head) = j->next;
    *(j->next ? &j->next->prev : &g->tail) = j->prev;
    g->njobs--;
    g->nactive--;
    job_free(j);
}

static void arm_ms(struct event *ev, unsigned ms)
{
    struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };
    evtimer_add(ev, &tv);
}

static void on_error(enum evhttp_request_error e, void *arg)
{
    struct job *j = arg;
    j->why = e == EVREQ_HTTP_TIMEOUT ? "no answer in time"
             : e == EVREQ_HTTP_EOF   ? "the connection closed before an answer"
             : e == EVREQ_HTTP_INVALID_HEADER ? "an invalid answer"
             : e == EVREQ_HTTP_DATA_TOO_LONG  ? "an answer too long"
                                              : "a connection error";
}

/* libevent's request callback: record, and let the timer act (see the top of the file). */
static void on_response(struct evhttp_request *req, void *arg)
{
    struct job *j = arg;
    j->state = JOB_ENDED;
    j->status = req ? evhttp_request_get_response_code(req) : 0;
    if (j->status == 0 && j->why == NULL)
        j->why = "cannot connect";
    arm_ms(j->timer, 0);
}

static struct bufferevent *attempt_bev(void)
{
    int opts = BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS;
    if (g->tls == NULL)
        return bufferevent_socket_new(g->base, -1, opts);
    SSL *ssl = SSL_new(g->tls);
    if (ssl == NULL)
        return NULL;
    /* The certificate must name this host: its DNS name, or its IP address for a literal. */
    unsigned char addr[16];
    if (inet_pton(AF_INET, g->host, addr) == 1 || inet_pton(AF_INET6, g->host, addr) == 1) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), g->host);
    } else {
        SSL_set_tlsext_host_name(ssl, g->host);
        SSL_set1_host(ssl, g->host);
    }
    struct bufferevent *bev =
        bufferevent_openssl_socket_new(g->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING, opts);
    if (bev == NULL) {
        SSL_free(ssl);
        return NULL;
    }
    /* The answer is read and dropped: a server that closes without close_notify is fine. */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}

/* Starts one attempt; returns -1 (nothing left in flight) when it cannot even begin. */
static int attempt_send(struct job *j)
{
    struct bufferevent *bev = attempt_bev();
    if (bev == NULL)
        return -1;
    j->conn = evhttp_connection_base_bufferevent_new(g->base, g->dns, bev, g->host,
                                                     (unsigned short)g->port);
    if (j->conn == NULL) {
        bufferevent_free(bev);
        return -1;
    }
    struct timeval tv = { NOTIFY_ATTEMPT_TIMEOUT_S, 0 };
    evhttp_connection_set_timeout_tv(j->conn, &tv);
    evhttp_connection_set_retries(j->conn, 0);
    evhttp_connection_set_max_body_size(j->conn, NOTIFY_MAX_REPLY);
    evhttp_connection_set_max_headers_size(j->conn, 16384);
    struct evhttp_request *req = evhttp_request_new(on_response, j);
    evhttp_request_set_error_cb(req, on_error);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Host", g->host_header);
    evhttp_add_header(h, "Content-Type", "application/json");
    evhttp_add_header(h, "User-Agent", "sluice/" SLUICE_VERSION);
    evhttp_add_header(h, "Connection", "close");
    evbuffer_add(evhttp_request_get_output_buffer(req), j->body, j->len);
    /* On failure evhttp_make_request has freed req. */
    return evhttp_make_request(j->conn, req, EVHTTP_REQ_POST, g->path);
}

static void attempt_start(struct job *j)
{
    j->attempts++;
    j->status = 0;
    j->why = NULL;
    j->state = JOB_SENDING;
    if (attempt_send(j) != 0) {
        j->why = "cannot start the request";
        j->state = JOB_ENDED;
    }
    if (j->state == JOB_ENDED) { /* also when the client called back already */
        arm_ms(j->timer, 0);
        return;
    }
    /* The watchdog: the HTTP client's own timeout should end the attempt well before. */
    arm_ms(j->timer, NOTIFY_ATTEMPT_TIMEOUT_S * 1000 + 2000);
}

static void start_waiting(void)
{
    for (struct job *j = g->head; j && g->nactive < NOTIFY_MAX_ACTIVE; j = j->next)
        if (j->state == JOB_WAITING) {
            g->nactive++;
            attempt_start(j);
        }
}

static bool retryable(int status)
{
    return status == 0 || status == 429 || (status >= 500 && status <= 599);
}

/* After an attempt: sent, retried after the backoff, or failed. */
static void attempt_done(struct job *j)
{
    if (j->status == 0 && j->why == NULL)
        j->why = "no answer in time";
    if (j->status >= 200 && j->status <= 299) {
        sl_info("notify: approval-pending for %s sent to %s (HTTP %d, attempt %d)", j->tool,
                g->where, j->status, j->attempts);
        metrics_notify(METRICS_NOTIFY_SENT);
        job_finish(j);
    } else if (retryable(j->status) && j->attempts < NOTIFY_ATTEMPTS) {
        unsigned wait = NOTIFY_BACKOFF_MS << (j->attempts - 1);
        if (j->status)
            sl_warn("notify: %s answered HTTP %d to attempt %d of %d; retrying in %u ms",
                    g->where, j->status, j->attempts, NOTIFY_ATTEMPTS, wait);
        else
            sl_warn("notify: %s: %s (attempt %d of %d); retrying in %u ms", g->where, j->why,
                    j->attempts, NOTIFY_ATTEMPTS, wait);
        j->state = JOB_BACKOFF;
        arm_ms(j->timer, wait);
    } else {
        if (j->status)
            sl_warn("notify: gave up on approval-pending for %s: %s answered HTTP %d (attempt "
                    "%d of %d)", j->tool, g->where, j->status, j->attempts, NOTIFY_ATTEMPTS);
        else
            sl_warn("notify: gave up on approval-pending for %s: %s: %s (attempt %d of %d)",
                    j->tool, g->where, j->why, j->attempts, NOTIFY_ATTEMPTS);
        metrics_notify(METRICS_NOTIFY_FAILED);
        job_finish(j);
    }
}

/* The job's timer: an attempt ended (or its watchdog fired), or the backoff is over. */
static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct job *j = arg;
    if (j->state == JOB_BACKOFF) {
        attempt_start(j);
        return;
    }
    if (j->conn) { /* frees a request still in it, without its callback */
        evhttp_connection_free(j->conn);
        j->conn = NULL;
    }
    attempt_done(j);
    start_waiting();
}

void notify_approval_pending(const struct notify_event *ev)
{
    if (g == NULL)
        return;
    struct sl_buf tool = { 0 };
    put_clean(&tool, ev->tool);
    if (g->njobs >= NOTIFY_MAX_QUEUE) {
        sl_warn("notify: %zu events already waiting for %s; dropped approval-pending for %s",
                g->njobs, g->where, tool.p ? tool.p : "");
        metrics_notify(METRICS_NOTIFY_DROPPED);
        sl_buf_free(&tool);
        return;
    }
    struct job *j = sl_xcalloc(1, sizeof(*j));
    struct sl_buf b = { 0 };
    notify_event_json(&b, ev);
    j->body = b.p;
    j->len = b.len;
    j->tool = sl_xstrndup(tool.p ? tool.p : "", tool.len);
    sl_buf_free(&tool);
    j->timer = evtimer_new(g->base, on_timer, j);
    SL_REQUIRE(j->timer != NULL);
    j->prev = g->tail;
    *(g->tail ? &g->tail->next : &g->head) = j;
    g->tail = j;
    g->njobs++;
    start_waiting();
}

void notify_on_page_pending(void *arg, struct sl_str server, struct sl_str tool,
                            struct sl_str caller, struct sl_str url, uint64_t exp)
{
    (void)arg;
    struct notify_event ev = { server, tool, caller, url,
                               exp > INT64_MAX ? INT64_MAX : (int64_t)exp };
    notify_approval_pending(&ev);
}

int notify_start(struct event_base *base, const char *url, char *err, size_t errlen)
{
    bool https;
    char *host, *path;
    int port;
    SL_REQUIRE(g == NULL);
    if (parse_url(url, &https, &host, &port, &path, err, errlen) != 0)
        return -1;
    struct notifier *n = sl_xcalloc(1, sizeof(*n));
    n->base = base;
    n->host = host;
    n->path = path;
    n->port = port;
    if (https && (n->tls = tls_client_ctx(NULL, err, errlen)) == NULL)
        goto fail;
    /* Looked up by evdns: libevent's HTTP client would otherwise call getaddrinfo, which
     * blocks the loop (and every gate with it) while a resolver is slow. */
    n->dns = evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
                                      EVDNS_BASE_DISABLE_WHEN_INACTIVE);
    if (n->dns == NULL) {
        sl_fail(err, errlen, "cannot start a DNS resolver (/etc/resolv.conf)");
        goto fail;
    }
    bool v6 = strchr(host, ':') != NULL, dflt = port == (https ? 443 : 80);
    struct sl_buf b = { 0 };
    sl_buf_printf(&b, v6 ? "[%s]" : "%s", host);
    if (!dflt)
        sl_buf_printf(&b, ":%d", port);
    n->host_header = sl_xstrndup(b.p, b.len);
    sl_buf_reset(&b);
    sl_buf_printf(&b, "%s://%s", https ? "https" : "http", n->host_header);
    n->where = sl_xstrndup(b.p, b.len);
    sl_buf_free(&b);
    g = n;
    sl_info("notify: pending page approvals are posted to %s (path not logged)", n->where);
    return 0;
fail:
    SSL_CTX_free(n->tls);
    free(n->host);
    free(n->path);
    free(n);
    return -1;
}

void notify_stop(void)
{
    if (g == NULL)
        return;
    if (g->njobs)
        sl_warn("notify: stopping with %zu approval-pending events not delivered to %s",
                g->njobs, g->where);
    while (g->head) {
        struct job *j = g->head;
        g->head = j->next;
        job_free(j);
    }
    evdns_base_free(g->dns, 0);
    SSL_CTX_free(g->tls);
    free(g->host);
    free(g->path);
    free(g->host_header);
    free(g->where);
    free(g);
    g = NULL;
}
