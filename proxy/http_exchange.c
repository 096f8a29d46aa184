/* http_exchange.c: an exchange, one request in flight on a connection, and the way the
 * session's messages about it reach the client: the response alone as JSON, or, once anything
 * comes before it (a question, a progress notification), an event stream that the response ends.
 *
 * A modern exchange owns a session made for its one request; a legacy one belongs to
 * its session (http_sessions.c), which routes each message to it by the request's id. */
#include "http_priv.h"

#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "chan.h"
#include "log.h"
#include "metrics.h"

/* An event stream the client does not read is cut at this much unsent output. */
#define SLOW_READER_BYTES CHAN_HIGH_WATER

const char xchg_sse_headers[] = "Cache-Control: no-cache, no-transform\r\n"
                                "X-Accel-Buffering: no\r\n";

struct xchg *xchg_new(struct conn *c, const char *rid, struct sl_str method)
{
    struct xchg *x = sl_spare_take(&c->fh->spare_x, sizeof(*x));
    if (x)
        memset(x, 0, sizeof(*x));
    else
        x = sl_xcalloc(1, sizeof(*x));
    x->fh = c->fh;
    x->c = c;
    x->t0 = sl_mono_us();
    size_t rl = strlen(rid) < sizeof(x->rid) ? strlen(rid) : sizeof(x->rid) - 1;
    memcpy(x->rid, rid, rl);
    size_t ml = method.len < sizeof(x->method) ? method.len : sizeof(x->method) - 1;
    memcpy(x->method, method.p, ml);
    c->x = x;
    return x;
}

void xchg_set_rel(struct xchg *x, const struct sl_buf *id)
{
    if (id->len < sizeof(x->relbuf)) {
        memcpy(x->relbuf, id->p, id->len);
        x->relbuf[id->len] = '\0';
        x->rel = x->relbuf;
    } else {
        x->rel = sl_xstrndup(id->p, id->len);
    }
}

bool xchg_is_stream(const struct xchg *x)
{
    return x->hs && hsess_stream_is(x->hs, x);
}

void xchg_kill(struct xchg *x)
{
    if (x->dead)
        return;
    x->dead = true;
    if (x->c && x->c->x == x)
        x->c->x = NULL;
    x->c = NULL;
    if (x->hs)
        hsess_detach(x->hs, x);
    x->dead_next = x->fh->dead_x;
    x->fh->dead_x = x;
    event_active(x->fh->reaper, 0, 0);
}

void xchg_free(struct xchg *x)
{
    session_free(x->s);
    if (x->rel != x->relbuf)
        free(x->rel);
    if (!sl_spare_keep(&x->fh->spare_x, x, sizeof(*x)))
        free(x);
}

static void log_access(struct xchg *x, int status)
{
    metrics_request(sl_str_c(x->method), status);
    double ms = (double)(sl_mono_us() - x->t0) / 1000.0;
    if (status >= 400)
        sl_info("%s %s -> %d in %.1f ms", x->rid, x->method, status, ms);
    else
        sl_debug("%s %s -> %d in %.1f ms", x->rid, x->method, status, ms);
}

/* The HTTP status of a JSON response whose JSON-RPC error code is code (0: none). */
static int status_for_code(const struct xchg *x, int code)
{
    if (!x->modern || code == 0)
        return 200;
    switch (code) {
    case JSONRPC_METHOD_NOT_FOUND:
        return 404; /* 2026: MUST be 404 (PROTOCOL.md §1.9) */
    case JSONRPC_PARSE_ERROR:
    case JSONRPC_INVALID_REQUEST:
    case MCP_HEADER_MISMATCH:
    case MCP_MISSING_CAPABILITY:
    case MCP_UNSUPPORTED_VERSION:
        return 400;
    default:
        return 200;
    }
}

void xchg_finish(struct xchg *x, int status)
{
    log_access(x, status);
    struct conn *c = x->c;
    x->done = true;
    xchg_kill(x);
    if (c) {
        if (!c->keep_alive)
            c->closing = true;
        conn_exchange_over(c);
    }
    if (x->fh->draining)
        http_check_drained(x->fh);
}

void xchg_send_event(struct xchg *x, struct sl_str line)
{
    struct evbuffer *out = bufferevent_get_output(x->c->bev);
    if (x->c->http10) { /* no chunks: the bytes of the stream as they are */
        evbuffer_add(out, "event: message\ndata: ", 21);
        wout_add(out, line.p, line.len);
        evbuffer_add(out, "\n\n", 2);
        return;
    }
    evbuffer_add_printf(out, "%zx\r\nevent: message\ndata: ", line.len + 23);
    wout_add(out, line.p, line.len);
    evbuffer_add(out, "\n\n\r\n", 4);
}

void xchg_start_stream(struct xchg *x, const char *extra)
{
    conn_write_head(x->c, 200, "text/event-stream", -1, extra);
    x->sse = true;
}

/* The response's own header lines: the new session's id after initialize, the request id. */
static void put_session_headers(struct xchg *x, char *buf, size_t len, bool sse)
{
    const char *parts[] = {
        sse ? xchg_sse_headers : "",
        x->set_session ? "Mcp-Session-Id: " : "X-Request-Id: ",
        x->set_session ? hsess_id(x->hs) : x->rid,
        x->set_session ? "\r\nX-Request-Id: " : "",
        x->set_session ? x->rid : "",
        "\r\n",
    };
    size_t used = 0;
    for (size_t i = 0; i < SL_ARRAY_LEN(parts); i++) {
        size_t pl = strlen(parts[i]);
        if (used + pl < len) {
            memcpy(buf + used, parts[i], pl);
            used += pl;
        }
    }
    buf[used] = '\0';
}

/* The response's head, as an event stream. */
static void open_stream(struct xchg *x)
{
    char extra[256];
    put_session_headers(x, extra, sizeof(extra), true);
    xchg_start_stream(x, extra);
}

static void deliver_msg(struct xchg *x, bool final, int code, struct sl_str line)
{
    if (x->c == NULL) {
        if (final)
            xchg_finish(x, 499); /* nobody to tell: the client went away */
        return;
    }
    if (!x->sse && final) {
        char extra[256];
        int status = status_for_code(x, code);
        put_session_headers(x, extra, sizeof(extra), false);
        conn_respond(x->c, status, "application/json", line.p, line.len, extra);
        xchg_finish(x, status);
        return;
    }
    if (!x->sse)
        open_stream(x);
    /* The backlog before this message: one large message (up to SL_MAX_MESSAGE) to a client
     * that reads is no reason to cut it off. */
    size_t backlog = evbuffer_get_length(bufferevent_get_output(x->c->bev));
    xchg_send_event(x, line);
    if (backlog > SLOW_READER_BYTES) {
        sl_warn("%s: the client does not read its event stream; closing it", x->rid);
        struct conn *c = x->c;
        bool over = conn_lose_exchange(c); /* as if the client had gone away */
        conn_close_later(c);
        if (final && !over)
            xchg_finish(x, 499);
    } else if (final) {
        conn_end_chunks(x->c);
        xchg_finish(x, 200);
    }
}

void xchg_deliver(struct xchg *x, bool final, int code, struct sl_str line)
{
    sl_log_set_request(x->rid);
    deliver_msg(x, final, code, line);
    sl_log_set_request(NULL);
}

/* A held call the client cancelled gets no response (PROTOCOL.md §4.4), but its POST is over:
 * the event stream ends, and the exchange leaves the session (or it would never expire). */
void xchg_end_unanswered(struct xchg *x)
{
    if (x->c == NULL)
        return xchg_finish(x, 499);
    if (!x->sse)
        open_stream(x);
    conn_end_chunks(x->c);
    xchg_finish(x, 200);
}

/* ===== modern: one request, one session ===== */

/* The session writes here: everything is about its one request. */
static void send_to_request(void *arg, struct sl_str rel, bool final, int code, struct sl_str line)
{
    struct xchg *x = arg;
    (void)rel;
    if (!x->done)
        xchg_deliver(x, final, code, line);
}

size_t xchg_out_len_none(void *arg)
{
    (void)arg;
    return 0;
}

static const struct session_io request_io = { .send = send_to_request,
                                              .out_len = xchg_out_len_none };

struct xchg *xchg_new_modern(struct conn *c, const char *rid, struct sl_str method,
                             const struct sl_buf *id, const char *principal)
{
    struct xchg *x = xchg_new(c, rid, method);
    x->modern = true;
    xchg_set_rel(x, id);
    x->s = session_new(c->fh->base, c->fh->env, &request_io, x, sl_str_c(principal));
    session_start(x->s);
    return x;
}
