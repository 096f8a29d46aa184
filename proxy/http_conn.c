/* http_conn.c: one client connection of the HTTP front: accept (and TLS), reading a request's
 * head and body under the limits, the request and idle timers, keep-alive, writing responses,
 * and the reaper that frees dead connections and exchanges outside any callback. */
#include "http_priv.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>

#include "log.h"
#include "metrics.h"

/* ===== writing responses ===== */

/* The head of a response into b (SSE and chunked when length < 0; for HTTP/1.0, which has
 * no chunks, neither a length nor chunks: conn_write_head closes the connection after it). An
 * HTTP/1.0 client that asked to keep its connection is told it is kept: 1.0 closes otherwise. */
static void put_head(struct sl_buf *b, const struct conn *c, int status, const char *ctype,
                     long length, const char *extra)
{
    char code[] = { 'H', 'T', 'T', 'P', '/', '1', '.', '1', ' ', (char)('0' + status / 100 % 10),
                    (char)('0' + status / 10 % 10), (char)('0' + status % 10), ' ' };
    sl_buf_put(b, code, sizeof(code));
    sl_buf_puts(b, http1_reason(status));
    if (ctype) {
        sl_buf_puts(b, "\r\nContent-Type: ");
        sl_buf_puts(b, ctype);
    }
    if (length >= 0) {
        char num[21];
        sl_buf_puts(b, "\r\nContent-Length: ");
        sl_buf_put(b, num, sl_u64_dec(num, (uint64_t)length));
        sl_buf_puts(b, "\r\n");
    } else {
        sl_buf_puts(b, c->http10 ? "\r\n" : "\r\nTransfer-Encoding: chunked\r\n");
    }
    if (!c->keep_alive)
        sl_buf_puts(b, "Connection: close\r\n");
    else if (c->http10)
        sl_buf_puts(b, "Connection: keep-alive\r\n");
    if (extra)
        sl_buf_puts(b, extra);
    sl_buf_puts(b, "\r\n");
}

void conn_write_head(struct conn *c, int status, const char *ctype, long length,
                     const char *extra)
{
    char store[1024];
    struct sl_buf b;
    if (length < 0 && c->http10)
        c->keep_alive = false; /* the close is the stream's end */
    sl_buf_on(&b, store, sizeof(store));
    put_head(&b, c, status, ctype, length, extra);
    evbuffer_add(bufferevent_get_output(c->bev), b.p, b.len);
    sl_buf_free(&b);
}

/* Head and body are added to the output at once. */
void conn_respond(struct conn *c, int status, const char *ctype, const char *body, size_t len,
                  const char *extra)
{
    char store[4096];
    struct sl_buf b;
    sl_buf_on(&b, store, sizeof(store));
    put_head(&b, c, status, ctype, (long)len, extra);
    if (b.len + len < sizeof(store)) {
        sl_buf_put(&b, body, len);
        wout_send(&c->wout, c->bev, b.p, b.len);
    } else {
        evbuffer_add(bufferevent_get_output(c->bev), b.p, b.len);
        if (len)
            wout_add(bufferevent_get_output(c->bev), body, len); /* a large body: no copy */
    }
    sl_buf_free(&b);
    if (!c->keep_alive) {
        c->closing = true;
        wout_kick(&c->wout); /* on_write closes once the output is out */
    }
}

void conn_respond_rpc_error(struct conn *c, int status, const char *id, int code,
                            const char *message, const char *data)
{
    conn_respond_error_with(c, status, id, code, message, data, NULL);
}

void conn_respond_error_with(struct conn *c, int status, const char *id, int code,
                             const char *message, const char *data, const char *extra)
{
    struct sl_buf b = { 0 };
    jsonrpc_write_error(&b, sl_str_c(id ? id : "null"), code, message, data);
    conn_respond(c, status, "application/json", b.p, b.len, extra);
    sl_buf_free(&b);
}

int conn_status_code(int status)
{
    /* Not ready, draining, timed out, unauthorized: the server's state, not the request's shape. */
    return status == 401 || status == 408 || (status >= 500 && status != 501 && status != 505)
               ? MCP_SERVER_ERROR
               : JSONRPC_INVALID_REQUEST;
}

void conn_respond_status(struct conn *c, int status, const char *extra)
{
    conn_respond_error_with(c, status, NULL, conn_status_code(status), http1_reason(status), NULL,
                            extra);
}

void conn_refuse_rpc(struct conn *c, struct sl_str method, int status, const char *id, int code,
                     const char *message)
{
    metrics_request(method, status);
    conn_respond_rpc_error(c, status, id, code, message, NULL);
}

void conn_end_chunks(struct conn *c)
{
    if (!c->http10)
        evbuffer_add(bufferevent_get_output(c->bev), "0\r\n\r\n", 5);
}

/* ===== closing and the reaper ===== */

static void wait_release(struct conn *c);

bool conn_lose_exchange(struct conn *c)
{
    struct xchg *x = c->x;
    if (x == NULL)
        return false;
    x->c = NULL;
    c->x = NULL;
    if (x->modern) {
        /* modern: a closed stream is the request's cancellation (PROTOCOL.md §5.2). */
        sl_info("%s: the client's connection is gone; the request is cancelled", x->rid);
        xchg_finish(x, 499);
        return true;
    }
    if (xchg_is_stream(x)) {
        xchg_finish(x, 200);
        return true;
    }
    if (x->hs && x->rel && !x->done) {
        /* A legacy POST stays: a disconnect is not a cancellation there. But the question it
         * carried can no longer reach the person on this stream. */
        hsess_stream_lost(x->hs, sl_str_c(x->rel));
    }
    return x->done;
}

void conn_free(struct conn *c)
{
    struct front_http *fh = c->fh;
    conn_lose_exchange(c);
    wait_release(c);
    if (c->prev)
        c->prev->next = c->next;
    else
        fh->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    fh->nconns--;
    wout_detach(&c->wout);
    bufferevent_free(c->bev);
    event_free(c->timer);
    free(c->cert_subject);
    free(c);
    if (fh->draining)
        http_check_drained(fh);
}

void conn_close_later(struct conn *c)
{
    if (c->dead)
        return;
    c->dead = true;
    wout_detach(&c->wout);
    bufferevent_disable(c->bev, EV_READ | EV_WRITE);
    c->dead_next = c->fh->dead_c;
    c->fh->dead_c = c;
    event_active(c->fh->reaper, 0, 0);
}

void conn_on_reap(evutil_socket_t fd, short what, void *arg)
{
    struct front_http *fh = arg;
    (void)fd, (void)what;
    while (fh->dead_c) {
        struct conn *c = fh->dead_c;
        fh->dead_c = c->dead_next;
        conn_free(c);
    }
    while (fh->dead_x) {
        struct xchg *x = fh->dead_x;
        fh->dead_x = x->dead_next;
        xchg_free(x);
    }
}

/* ===== timers ===== */

/* The connection's one deadline: the request's, or the idle one. A keep-alive connection moves
 * it later at every response, and re-adding a timer costs a heap update each time; so a later
 * deadline only is noted, and the timer, when it fires early, is set again for the rest. An
 * earlier deadline (a request timeout shorter than the idle one) re-arms it at once. */
static void arm_deadline_at(struct conn *c, uint64_t at_us)
{
    uint64_t now = sl_mono_us();
    c->deadline_us = at_us;
    if (c->armed_us <= c->deadline_us && evtimer_pending(c->timer, NULL))
        return;
    c->armed_us = c->deadline_us;
    uint64_t left = at_us > now ? at_us - now : 0;
    struct timeval tv = { (time_t)(left / 1000000u), (suseconds_t)(left % 1000000u) };
    evtimer_add(c->timer, &tv);
}

static void arm_deadline(struct conn *c, int seconds)
{
    arm_deadline_at(c, sl_mono_us() + (uint64_t)seconds * 1000000u);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    (void)fd, (void)what;
    if (c->x)
        return; /* an exchange is in flight: the deadline is set again when it ends */
    uint64_t now = sl_mono_us();
    if (c->deadline_us > now) { /* moved later since the timer was set */
        uint64_t left = c->deadline_us - now;
        struct timeval tv = { (time_t)(left / 1000000u), (suseconds_t)(left % 1000000u) };
        c->armed_us = c->deadline_us;
        evtimer_add(c->timer, &tv);
        return;
    }
    if (c->waiting) {
        sl_info("%s: the upstream is still not ready after %d s (--upstream-wait); answering 503",
                c->peer, c->fh->o.upstream_wait_s);
        c->waited = true;
        conn_wait_end(c);
        return;
    }
    if (c->in_request) {
        sl_info("%s: request not received within %d s; closing", c->peer,
                c->fh->o.request_timeout_s);
        c->keep_alive = false;
        conn_respond_status(c, 408, NULL);
        c->closing = true;
        bufferevent_disable(c->bev, EV_READ);
    } else {
        if (c->out_paused)
            sl_info("%s: the answers to the client have not drained in %d s (%zu bytes unsent); "
                    "closing", c->peer, c->fh->o.idle_timeout_s,
                    evbuffer_get_length(bufferevent_get_output(c->bev)));
        conn_close_later(c);
    }
}

/* ===== reading requests ===== */

/* A client that pipelines requests and never reads the answers would have them pile up in its
 * output without limit (one small request, one answer, again and again: hundreds of MiB in
 * seconds). Above this much unsent output, its next request waits, unread, until the output
 * drains; what it sends meanwhile stays in the kernel's buffers, and then in its own. */
#define CONN_OUT_HIGH_WATER (1u << 20)

static bool out_full(struct conn *c)
{
    return evbuffer_get_length(bufferevent_get_output(c->bev)) > CONN_OUT_HIGH_WATER;
}

/* Reading stops until on_write sees the output drained. The idle deadline runs meanwhile (a
 * request half read is no longer the client's delay, but ours): a client that reads nothing
 * for that long is closed, and what it piled up is freed. */
static void pause_for_output(struct conn *c)
{
    if (!c->out_paused)
        sl_debug("%s: the client does not read its answers; reading paused", c->peer);
    c->out_paused = true;
    c->read_paused = false;
    c->in_request = false;
    bufferevent_disable(c->bev, EV_READ);
    const struct front_http *fh = c->fh;
    arm_deadline(c, fh->o.idle_timeout_s); /* later at every pause: it bounds no progress */
}

/* The output drained: the requests the client piled up meanwhile are read on. From the loop,
 * as conn_exchange_over does, never inside another callback of this connection. */
static void resume_for_output(struct conn *c)
{
    c->out_paused = false;
    bufferevent_enable(c->bev, EV_READ);
    if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)
        bufferevent_trigger(c->bev, EV_READ, BEV_TRIG_DEFER_CALLBACKS | BEV_TRIG_IGNORE_WATERMARKS);
}

static void refuse_head(struct conn *c, int status)
{
    c->keep_alive = false;
    conn_respond_status(c, status, NULL);
    c->closing = true;
    c->linger = true;
    bufferevent_disable(c->bev, EV_READ);
    metrics_request(SL_STR("other"), status);
    sl_info("%s: refused a request: %d %s", c->peer, status, http1_reason(status));
}

/* Part of a request is here: the request timeout runs from its first bytes. (A request that
 * arrives whole, the usual case, never touches the timer.) */
static void await_rest(struct conn *c)
{
    if (!c->in_request) {
        c->in_request = true;
        arm_deadline(c, c->fh->o.request_timeout_s);
    }
}

/* ===== waiting for the upstream ===== */

/* A request to /mcp while the upstream is not ready (sluice just started, a child restarts, an
 * HTTP upstream is unreachable) waits for it rather than failing at once: a client that
 * connects as the pod starts would otherwise fail its initialize. The request stays unread in
 * the input, inside the limits it was read under (head, body, one request per connection,
 * --max-connections), and is parsed again when the wait ends; a client that leaves meanwhile is
 * closed as any other. The connection's one timer bounds the wait. */
static void wait_start(struct conn *c, const struct http1_head *h)
{
    c->waiting = true;
    struct sl_str sid;
    struct sl_buf principal = { 0 };
    if (http1_field(h, HTTP1_MCP_SESSION_ID, &sid) == 1 && sid.len < sizeof(c->wait_sid) &&
        http_principal_of(c, h, &principal) == 0 &&
        http_sessions_wait_start(c->fh->sessions, sid, principal.p)) {
        memcpy(c->wait_sid, sid.p, sid.len);
        c->wait_sid[sid.len] = '\0';
    }
    sl_buf_free(&principal);
    sl_debug("%s: a request waits for the upstream (at most %d s)", c->peer,
             c->fh->o.upstream_wait_s);
    /* Woken for another's sake (the shared upstream, or another session's own, is ready), a
     * request that still waits keeps its first deadline: --upstream-wait bounds its whole wait. */
    if (c->wait_until_us == 0)
        c->wait_until_us = sl_mono_us() + (uint64_t)c->fh->o.upstream_wait_s * 1000000u;
    arm_deadline_at(c, c->wait_until_us);
}

/* The waiting request's session is its client's to keep alive again. */
static void wait_release(struct conn *c)
{
    if (c->wait_sid[0] != '\0')
        http_sessions_wait_end(c->fh->sessions, sl_str_c(c->wait_sid));
    c->wait_sid[0] = '\0';
}

static void read_requests(struct conn *c);

void conn_wait_end(struct conn *c)
{
    if (!c->waiting || c->dead)
        return;
    c->waiting = false;
    wait_release(c);
    if (c->read_paused) { /* what the client piled up meanwhile (on_read) is read on, as after
                           * an exchange: a request answered at once makes none to do it */
        bufferevent_enable(c->bev, EV_READ);
        c->read_paused = false;
    }
    read_requests(c);
}

/* The head of the request at the front of the input, checked against the limits. Returns its
 * length (h set, the body's length in h->content_length), 0 when it is not all here yet, or
 * -status when it is refused. p: a contiguous view of its first look bytes. */
static ssize_t read_head(struct conn *c, const char *p, size_t look, struct http1_head *h)
{
    ssize_t n = http1_parse_head(p, look, c->fh->o.max_head, h);
    if (n > 0 && h->content_length > c->fh->o.max_body)
        return -413;
    return n;
}

/* A body is still coming: what the client must be told (100 Continue, never to HTTP/1.0, which
 * does not know it: RFC 9110 10.1.1) and the timer. */
static void await_body(struct conn *c, const struct http1_head *h)
{
    struct sl_str expect;
    if (!c->sent_continue && h->minor >= 1 && http1_field(h, HTTP1_EXPECT, &expect) == 1 &&
        http1_list_has(expect, "100-continue")) {
        evbuffer_add(bufferevent_get_output(c->bev), "HTTP/1.1 100 Continue\r\n\r\n", 25);
        c->sent_continue = true;
    }
    await_rest(c);
}

/* Reads and handles requests while the connection has no exchange in flight. A head is parsed
 * when it arrives; while its body comes in, read after read, only the input's length is looked
 * at (head_len and body_len remember the rest), and the request is made contiguous once, when
 * it is complete (at every read, both would be quadratic in the body's size). */
static void read_requests(struct conn *c)
{
    struct front_http *fh = c->fh;
    while (!c->x && !c->closing && !c->dead) {
        struct evbuffer *in = bufferevent_get_input(c->bev);
        size_t avail = evbuffer_get_length(in);
        if (avail == 0) {
            c->in_request = false;
            arm_deadline(c, fh->o.idle_timeout_s);
            return;
        }
        if (out_full(c))
            return pause_for_output(c);
        struct http1_head h;
        size_t look = 0; /* h was parsed in this turn from the first look bytes; 0: it was not */
        if (c->head_len == 0) {
            look = avail < fh->o.max_head + 1 ? avail : fh->o.max_head + 1;
            ssize_t n = read_head(c, (const char *)evbuffer_pullup(in, (ev_ssize_t)look), look, &h);
            if (n == 0)
                return await_rest(c);
            if (n < 0)
                return refuse_head(c, (int)-n);
            c->head_len = (size_t)n;
            c->body_len = h.content_length;
            if (avail < c->head_len + c->body_len)
                return await_body(c, &h);
        } else if (avail < c->head_len + c->body_len) {
            return await_rest(c); /* the body is still coming */
        }
        size_t head_len = c->head_len, total = head_len + c->body_len;
        const char *p = (const char *)evbuffer_pullup(in, (ev_ssize_t)total);
        if (total > look) /* h's slices moved with the pullup, or h is from an earlier read */
            SL_REQUIRE(read_head(c, p, total, &h) == (ssize_t)head_len);
        c->head_len = c->body_len = 0;
        c->sent_continue = false;
        c->in_request = false; /* the timer may fire meanwhile: c->x makes it wait */
        if (!c->waited && mcp_should_wait(c, &h, p + head_len, total - head_len))
            return wait_start(c, &h);
        c->waited = false;
        c->wait_until_us = 0;
        http_route(c, &h, p + head_len);
        evbuffer_drain(in, total);
    }
}

/* Asking the bufferevent to run on_read from the loop, as before, cost a deferred callback
 * and a pass of read_requests() that finds the input empty, about 500 instructions of every
 * keep-alive call (callgrind, tests/bench). The input is looked at here instead. */
void conn_exchange_over(struct conn *c)
{
    if (c->closing || c->dead || c->x)
        return;
    if (out_full(c)) /* its answer is not read yet: neither is its next request */
        return pause_for_output(c);
    if (c->read_paused) { /* the rest of what it piled up, and its end, are read again */
        c->read_paused = false;
        bufferevent_enable(c->bev, EV_READ);
    }
    if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0) {
        /* Not read_requests() here: we may be inside the session's own call, and the next
         * request could be for the same session. */
        bufferevent_trigger(c->bev, EV_READ, BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
        return;
    }
    c->in_request = false;
    arm_deadline(c, c->fh->o.idle_timeout_s);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct conn *c = arg;
    if (c->lingering) {
        struct evbuffer *in = bufferevent_get_input(bev);
        evbuffer_drain(in, evbuffer_get_length(in));
        return;
    }
    if (c->x || c->waiting) {
        /* One request at a time; a client that piles up more is not read beyond the limits. */
        if (evbuffer_get_length(bufferevent_get_input(bev)) > c->fh->o.max_head + c->fh->o.max_body) {
            bufferevent_disable(bev, EV_READ);
            c->read_paused = true;
        }
        return;
    }
    read_requests(c);
}

/* How long a refused request's connection discards what the client still sends. */
#define LINGER_SECONDS 2

/* A refusal went out while the client may still be sending its request (a 64 MiB body after
 * its head): closing now, with unread bytes, makes the kernel send a reset, which can destroy
 * our answer in the client's receive buffer before it reads it. So our side is shut (the client
 * sees the end of the answer), and what still arrives is read and dropped, never kept, until the
 * client closes or LINGER_SECONDS pass. */
static void start_linger(struct conn *c)
{
    c->lingering = true;
    c->in_request = false;
    if (!c->fh->o.tls)
        shutdown(bufferevent_getfd(c->bev), SHUT_WR);
    struct evbuffer *in = bufferevent_get_input(c->bev);
    evbuffer_drain(in, evbuffer_get_length(in));
    bufferevent_enable(c->bev, EV_READ);
    arm_deadline(c, LINGER_SECONDS);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct conn *c = arg;
    wout_written(&c->wout);
    if (c->out_paused && !c->closing && !c->dead && !out_full(c))
        resume_for_output(c);
    if (!c->closing || c->lingering || evbuffer_get_length(bufferevent_get_output(bev)) != 0)
        return;
    if (c->linger)
        start_linger(c);
    else
        conn_close_later(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct conn *c = arg;
    if (what & BEV_EVENT_ERROR) {
        unsigned long e = bufferevent_get_openssl_error(bev);
        if (e) {
            char buf[200];
            ERR_error_string_n(e, buf, sizeof(buf));
            sl_info("%s: TLS: %s", c->peer, buf);
        }
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
        conn_close_later(c);
}

/* ===== accepting ===== */

/* At --max-connections: a plain client is told why (a TLS one cannot be, before its handshake). */
static void refuse_connection(struct front_http *fh, evutil_socket_t fd)
{
#define BUSY_BODY                                                                              \
    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,"                              \
    "\"message\":\"Service Unavailable: too many connections\"}}"
    _Static_assert(sizeof(BUSY_BODY) - 1 == 105, "the Content-Length below");
    static const char busy[] =
        "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\n"
        "Content-Type: application/json\r\nContent-Length: 105\r\n\r\n" BUSY_BODY;
    if (fh->o.tls == NULL && send(fd, busy, sizeof(busy) - 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
        sl_debug("could not tell a refused connection why");
    evutil_closesocket(fd);
    metrics_request(SL_STR("other"), 503);
    sl_warn("connection refused: %zu connections open (--max-connections)", fh->nconns);
}

/* "ADDR:PORT" of the peer, for the log. */
static void name_peer(char *out, size_t outlen, const struct sockaddr *sa)
{
    char addr[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, addr, sizeof(addr));
        port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof(addr));
        port = ntohs(in6->sin6_port);
    }
    snprintf(out, outlen, "%s:%d", addr, port);
}

void conn_on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
                    int salen, void *arg)
{
    struct front_http *fh = arg;
    (void)lis, (void)salen;
    if (fh->nconns >= fh->o.max_connections)
        return refuse_connection(fh, fd);
    struct conn *c = sl_xcalloc(1, sizeof(*c));
    c->fh = fh;
    name_peer(c->peer, sizeof(c->peer), sa);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (fh->o.tls)
        c->bev = bufferevent_openssl_socket_new(fh->base, fd, SSL_new(fh->o.tls),
                                                BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    else
        c->bev = bufferevent_socket_new(fh->base, fd, BEV_OPT_CLOSE_ON_FREE);
    SL_REQUIRE(c->bev != NULL);
    c->timer = evtimer_new(fh->base, on_timer, c);
    bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    if (!fh->o.tls)
        wout_attach(&c->wout, c->bev, on_write, 0, c);
    c->next = fh->conns;
    if (fh->conns)
        fh->conns->prev = c;
    fh->conns = c;
    fh->nconns++;
    c->keep_alive = true;
    arm_deadline(c, fh->o.request_timeout_s); /* a TLS handshake and the first request, in time */
    c->in_request = true;
}
