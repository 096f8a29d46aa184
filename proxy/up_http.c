/* up_http.c: POSTs to a Streamable HTTP upstream over a small pool of keep-alive connections;
 * replies come back as JSON or as an event stream, and every message found is handed on.
 *
 * The HTTP/1.1 client is ours rather than evhttp: one request per connection at a time (an
 * event stream may stay open as long as a tool runs, so no pipelining), the request written in
 * one piece, the response parsed with http1.c, which is unit-tested and fuzzed. evhttp cost a
 * header list of allocations and seven system calls per request; this costs one write and one
 * read.
 *
 * Toward a handshake-era (2025-11-25) server three more exchanges run, each on a connection of
 * its own outside the pool (PROTOCOL.md §5.3):
 *   the session's GET stream  opened once the server accepted notifications/initialized; it
 *                             brings what the server says outside a call, is reopened with
 *                             Last-Event-ID when it ends, and ends for good on 405;
 *   a resumed call stream     a POST's event stream that ended after an event id but before
 *                             the answer is fetched again by GET with Last-Event-ID (SEP-1699);
 *   DELETE                    when the transport stops with a session, so the server frees it.
 *
 * A request is never retried (it may have run): a failure is reported for its id once. */
#include "up_http.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include "http1.h"
#include "jsonrpc.h"
#include "log.h"
#include "params.h"
#include "wout.h"

#define POOL_MAX 64
#define HEAD_MAX (16 * 1024)
#define WRITE_TIMEOUT_S 30 /* connecting and sending */
#define LIVENESS_TIMEOUT_MS 1500 /* a liveness probe's connection, at most */
#define EVENT_ID_MAX 256 /* an SSE event id we keep (it goes into Last-Event-ID) */
#define RETRY_MAX_MS 60000 /* a server's retry field is honoured up to this */
#define RETRY_DEFAULT_MS 1000 /* when the server gave none */
#define LISTEN_MIN_MS 100 /* a GET stream is reopened no sooner, whatever retry says */
#define RESUME_TRIES_MAX 5 /* resumed streams in a row that bring no new event id */
#define LISTEN_FAILS_MAX 8 /* GET stream opens in a row that fail, then it is given up */
#define LISTEN_BACKOFF_MAX_MS 30000
#define DELETE_TIMEOUT_MS 2000 /* the DELETE of a session at stop, at most */

enum framing { BODY_LENGTH, BODY_CHUNKED, BODY_UNTIL_CLOSE };

#define BODY_RESERVE_MAX (64u << 10) /* reserved ahead for a reply body, at most */
#define DIRECT_MIN (64u << 10) /* a JSON reply body left larger than this is read by recv() */
#define POST_KEEP_CAP (8u << 10) /* a kept POST keeps buffers up to this size */
#define REQ_HANDOFF_MIN (64u << 10) /* a request this large is not copied to the output */

/* What an exchange is for; only X_POST uses the pool. */
enum xkind {
    X_POST,   /* one message POSTed; its reply is JSON or an event stream */
    X_LISTEN, /* the session's GET stream: what the server says outside a call */
    X_RESUME, /* a GET with Last-Event-ID fetching the rest of request id's event stream */
    X_DELETE, /* the end of the session, when the transport stops */
};

/* How far stopping is: on_closed and on_exit are reported at STOPPED. */
enum stop_stage {
    RUNNING,
    STOP_ASKED,    /* stop was called; the rest happens from the event loop */
    STOP_DELETING, /* the DELETE is out, until it is answered or DELETE_TIMEOUT_MS */
    STOP_REPORT,   /* the next tick reports */
    STOPPED,
};

/* An SSE event over SL_MAX_MESSAGE is never kept whole: its lines are read and dropped as they
 * come, and only its data's first and last bytes are kept (as chan.c keeps a line's), so a
 * request of the server's own in it can still be answered (sse_skip). */
#define CUT_HEAD 1024
#define CUT_TAIL 256
#define CUT_LINE_MIN 4096 /* a line cut this long is dropped as it comes, not waited for whole */

struct sse_cut {
    bool mid;                   /* the next byte continues a line partly dropped, */
    bool mid_data;              /* ... a data line */
    bool any_data;              /* a data line was seen: the next one adds "\n" first */
    size_t head_len, tail_len;
    char head[CUT_HEAD], tail[CUT_TAIL];
};

/* One HTTP exchange (the name is from the POSTs, most of them). */
struct post {
    struct post *next;          /* in the queue of POSTs waiting for a connection, or of the
                                 * resumes waiting for their retry time */
    struct up_http *h;
    enum xkind kind;
    char *id;                   /* JSON text of our request id (in idbuf), or NULL */
    char idbuf[24];             /* our ids are decimal numbers */
    bool modern;                /* a 2026-07-28 request: its stream is never resumed */
    bool opens_listen;          /* notifications/initialized: its acceptance opens GET */
    bool initializes;           /* an initialize: its reply names the session, */
    unsigned init_gen;          /* ... when it is the newest one (up_http's init_gen) */
    bool sent_session;          /* it carried an Mcp-Session-Id, */
    char sid[256];              /* this one */
    bool sse;
    bool answered;              /* X_RESUME: the answer to id came on it */
    unsigned events;            /* SSE events seen (data, id or retry) */
    bool moved;                 /* X_RESUME: this attempt brought a new event id */
    unsigned tries;             /* X_RESUME: attempts in a row that did not move */
    uint64_t deadline_us;       /* X_RESUME: given up when none moved by then */
    int retry_ms;               /* the stream's last retry field, or -1 */
    char event_id[EVENT_ID_MAX]; /* the stream's last event id ("" none, or not usable) */
    struct event *ev;           /* X_RESUME: the timer of its next attempt */
    size_t scanned;             /* SSE: bytes at the front of body already searched for an end */
    size_t lf_only;             /* SSE: bytes at the front of body whose line ends are "\n" */
    bool cr_last;               /* SSE: the last byte read was a CR (a CRLF may be cut there) */
    struct sse_cut *cut;        /* SSE: an event over SL_MAX_MESSAGE, skipped to its end */
    struct sl_buf req;          /* the whole request, until it is written */
    struct sl_buf body;         /* JSON so far, or the SSE bytes not yet split into events */
};

struct uconn {
    struct uconn *prev, *next;
    struct up_http *h;
    struct bufferevent *bev;
    struct wout wout;           /* plain connections, once connected: requests written at once */
    struct post *cur;           /* the POST this connection carries, or NULL when idle */
    bool side;                  /* outside the pool: carries one GET or DELETE, then closes */
    bool got_head;
    bool keep_alive;
    int status;
    enum framing framing;
    size_t left;                /* BODY_LENGTH: bytes still to come */
    struct http1_chunks chunks;
    /* The read timeout: silence since last_us (the open, or the last bytes read). Bytes only
     * note the time; the timer, when it fires early, is set again for the rest. (libevent's
     * own read timeout re-adds its timer at every read.) */
    struct event *timer;
    uint64_t last_us;
    bool held;                  /* not read while the client does not read (http_pause) */
};

struct up_http {
    struct up_transport tr;     /* first: the ops get this pointer */
    struct event_base *base;
    char *host, *path, *hostport;
    char *auth;                 /* "Authorization: ...\r\n", or NULL */
    int port;
    SSL_CTX *tls;
    struct uconn *conns;        /* every connection, pooled and side */
    size_t nconns;              /* the pooled ones */
    struct post *wait_head, **wait_tail;
    char session_id[256];
    unsigned init_gen;          /* initializes sent: only the newest one's reply names the
                                 * session (take_session_id) */
    struct sl_buf head;         /* the part of every request's head that never changes */
    struct sl_spare spare;      /* finished POSTs, for the next ones */
    char version[16];
    int read_timeout_s;
    const struct params *marks; /* the upstream's x-mcp-header marks, for Mcp-Param headers */
    enum stop_stage stage;
    struct event *stop_ev;      /* the stop's next step, and the DELETE's time limit */
    struct uconn *delete_conn;  /* the DELETE's connection, while it is out */
    /* The session's GET stream: its connection while open, else the timer that reopens it. */
    struct uconn *listen_conn;
    struct event *listen_ev;
    char listen_last_id[EVENT_ID_MAX];
    int listen_retry_ms;
    unsigned listen_fails;      /* opens in a row that got no event stream */
    unsigned listen_empties;    /* streams in a row that brought no event */
    struct post *resumes;       /* X_RESUMEs waiting for their retry time */
    bool connect_warned;        /* a connection failure was logged since the last one that
                                 * connected: one line per outage, not one per attempt */
    struct bufferevent *live_bev; /* the liveness probe's connection, while it is out */
    bool paused;                /* the client's output is full: event streams are not read */
    struct up_transport_cbs cbs;
    void *arg;
};

/* Why a reply ended early; compared by address. */
static const char err_cut[] = "the upstream server closed the connection in mid-reply";
static const char err_no_answer[] = "the upstream server ended its event stream without an "
                                    "answer";

static void dispatch_waiting(struct up_http *h);

/* A POST: a kept one with its buffers' memory, or a new one. */
static struct post *post_new(struct up_http *h)
{
    struct post *p = sl_spare_take(&h->spare, sizeof(*p));
    if (p == NULL) {
        p = sl_xcalloc(1, sizeof(*p));
    } else {
        struct sl_buf req = p->req, body = p->body;
        *p = (struct post){ .req = req, .body = body };
    }
    p->h = h;
    p->retry_ms = -1;
    return p;
}

/* Kept for the next POST, buffers and all, unless they grew past what a usual call needs. */
static void post_free(struct up_http *h, struct post *p)
{
    free(p->cut);
    p->cut = NULL;
    if (p->ev) {
        event_free(p->ev);
        p->ev = NULL;
    }
    sl_buf_reset(&p->req);
    sl_buf_reset(&p->body);
    if (p->req.cap > POST_KEEP_CAP)
        sl_buf_free(&p->req);
    if (p->body.cap > POST_KEEP_CAP)
        sl_buf_free(&p->body);
    if (sl_spare_keep(&h->spare, p, sizeof(*p)))
        return;
    sl_buf_free(&p->req);
    sl_buf_free(&p->body);
    free(p);
}

static void fail_post(struct up_http *h, struct post *p, int status, const char *why)
{
    if (p->id)
        h->cbs.on_undelivered(p->id, status, why, h->arg);
}

/* ===== connections ===== */

static void conn_free(struct uconn *c)
{
    struct up_http *h = c->h;
    if (c->prev)
        c->prev->next = c->next;
    else
        h->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (!c->side)
        h->nconns--;
    if (h->listen_conn == c)
        h->listen_conn = NULL;
    if (h->delete_conn == c)
        h->delete_conn = NULL;
    event_free(c->timer);
    wout_detach(&c->wout);
    bufferevent_free(c->bev);
    free(c);
}

/* Whether c is read only while the client reads (http_pause): an event stream in progress, which
 * may bring messages without end (the session's GET stream, a call's notifications). A JSON
 * reply is one message, bounded by SL_MAX_MESSAGE, and is read on. */
static bool conn_holdable(const struct uconn *c)
{
    return c->cur && c->got_head && c->cur->sse;
}

/* Stops or resumes reading c. The server's writes then wait in TCP: backpressure reaches it. The
 * silence that --upstream-timeout bounds counts from the resumption (conn_timer). */
static void conn_hold(struct uconn *c, bool hold)
{
    if (c->held == hold)
        return;
    c->held = hold;
    c->last_us = sl_mono_us();
    if (hold) {
        bufferevent_disable(c->bev, EV_READ);
        return;
    }
    bufferevent_enable(c->bev, EV_READ);
    /* Bytes read before the hold and not yet taken (a chunk size line cut short) get their
     * callback again; it is deferred, so never from inside the caller. */
    if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)
        bufferevent_trigger(c->bev, EV_READ, BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
}

/* evbuffer_add_reference's cleanup: the request's buffer, once it is written. */
static void free_request(const void *data, size_t len, void *arg)
{
    (void)len, (void)arg;
    free((void *)data);
}

static void conn_start(struct uconn *c, struct post *p)
{
    c->cur = p;
    c->got_head = false;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (p->req.len >= REQ_HANDOFF_MIN && !p->req.lent) {
        /* A large request goes out as it is, its buffer with it, rather than copied. */
        evbuffer_add_reference(out, p->req.p, p->req.len, free_request, NULL);
        p->req = (struct sl_buf){ 0 };
    } else {
        wout_send(&c->wout, c->bev, p->req.p, p->req.len);
        sl_buf_reset(&p->req); /* kept for the next POST */
    }
}

/* Whether m is a response (a result or an error) to request id (JSON text of a number). */
static bool response_for(const struct jsonrpc_msg *m, const char *id)
{
    return (m->kind == JSONRPC_RESULT || m->kind == JSONRPC_ERROR) && id &&
           m->id->type == JSON_NUMBER && sl_str_eq(m->id->u.num, sl_str_c(id));
}

/* One message from an event stream, handed on unless the stream may not carry it (PROTOCOL.md
 * §5.3): the session's GET stream carries no response at all, and a resumed stream only the
 * answer to the request it resumes. A response anywhere else would answer a request that was
 * never sent on that stream; the server may run several requests of one session at once, for
 * several clients. A POST's own stream is checked the same way by the upstream, which parses
 * every message anyway (for_id), so the hot path parses once. */
static void stream_message(struct up_http *h, struct post *p, struct sl_str msg)
{
    if (p->kind != X_POST) {
        struct jsonrpc_msg *m;
        struct jsonrpc_parse_error err;
        if (jsonrpc_parse(msg.p, msg.len, &m, &err) == 0) { /* else upstream.c says why */
            bool response = m->kind == JSONRPC_RESULT || m->kind == JSONRPC_ERROR;
            bool ours = p->kind == X_RESUME && response_for(m, p->id);
            jsonrpc_msg_free(m);
            if (response && !ours) {
                sl_warn("upstream %s: a response on %s; dropped", h->hostport,
                        p->kind == X_LISTEN ? "the session's GET stream"
                                            : "a resumed stream, not for its request");
                return;
            }
            p->answered |= ours;
        }
        /* A resumed stream carries its request's messages, as the POST's did (its
         * notifications go to that request's client); the GET stream is the session's. */
        h->cbs.on_message(msg, p->kind == X_RESUME ? p->id : NULL, h->arg);
        return;
    }
    h->cbs.on_message(msg, p->id ? p->id : "", h->arg); /* checked by the upstream's parse */
}

/* An id field: kept for Last-Event-ID. One that cannot go into a header (too long, not visible
 * ASCII) is not kept, and the stream is then not resumed: resuming from an older id would replay
 * what was already handed on. An empty one resets it, as the SSE rules say. */
static void sse_set_id(struct post *p, const char *v, size_t vl)
{
    bool usable = vl < sizeof(p->event_id);
    for (size_t i = 0; i < vl && usable; i++)
        if (v[i] <= 0x20 || v[i] >= 0x7f)
            usable = false;
    if (!usable)
        vl = 0;
    if (strlen(p->event_id) == vl && memcmp(p->event_id, v, vl) == 0)
        return;
    p->moved = true;
    memcpy(p->event_id, v, vl);
    p->event_id[vl] = '\0';
}

/* One line of an event (WHATWG HTML §9.2.6, "event stream interpretation"): data is gathered
 * into data; id and retry are kept for resuming. Returns whether it was one of those fields. */
struct sse_line {
    size_t nl;      /* the field name's length (it starts the line) */
    const char *v;  /* the value, without the one space after the colon */
    size_t vl;
};

static struct sse_line sse_split(const char *line, size_t ll)
{
    const char *colon = memchr(line, ':', ll);
    struct sse_line f = { colon ? (size_t)(colon - line) : ll, colon ? colon + 1 : line + ll, 0 };
    f.vl = ll - (size_t)(f.v - line);
    if (f.vl && *f.v == ' ')
        f.v++, f.vl--;
    return f;
}

static bool sse_is(const char *line, struct sse_line f, const char *name)
{
    return f.nl == strlen(name) && memcmp(line, name, f.nl) == 0;
}

static bool sse_field(struct post *p, const char *line, size_t ll, struct sl_buf *data)
{
    struct sse_line f = sse_split(line, ll);
    const char *v = f.v;
    size_t vl = f.vl;
    if (sse_is(line, f, "data")) {
        if (data->len)
            sl_buf_putc(data, '\n');
        sl_buf_put(data, v, vl);
        return true;
    }
    if (sse_is(line, f, "id")) {
        if (memchr(v, '\0', vl) == NULL) /* the rules ignore such an id */
            sse_set_id(p, v, vl);
        return true;
    }
    if (sse_is(line, f, "retry")) {
        long ms = 0;
        size_t i = 0;
        for (; i < vl && v[i] >= '0' && v[i] <= '9'; i++)
            ms = ms * 10 + (v[i] - '0') > RETRY_MAX_MS ? RETRY_MAX_MS : ms * 10 + (v[i] - '0');
        if (vl && i == vl)
            p->retry_ms = (int)ms;
        return true;
    }
    return false;
}

/* An event stream's lines end in CRLF, LF or a lone CR (WHATWG HTML §9.2.5); the bytes that came
 * since the last call get "\n" for each, in place, so the rest reads one kind. A CR that ends
 * one read may be half of a CRLF whose LF comes in the next (cr_last). */
static void sse_newlines(struct post *p)
{
    struct sl_buf *b = &p->body;
    size_t i = p->lf_only, j = i;
    if (!p->cr_last && (i == b->len || memchr(b->p + i, '\r', b->len - i) == NULL)) {
        p->lf_only = b->len;
        return;
    }
    for (; i < b->len; i++) {
        char c = b->p[i];
        if (c == '\n' && p->cr_last) {
            p->cr_last = false;
            continue;
        }
        p->cr_last = c == '\r';
        b->p[j++] = p->cr_last ? '\n' : c;
    }
    b->len = p->lf_only = j;
    if (b->p)
        b->p[j] = 0;
}

/* What is left of an event stream at its end, after its last blank line: an event never finished.
 * It is discarded, as the SSE rules say (WHATWG HTML §9.2.6): a connection cut in mid-event
 * cannot be told from a clean end (a stream framed by its close), and a message cut at a line
 * end may still parse. Its request then fails, or is resumed, as a stream without its answer. */
static void sse_drop_unfinished(struct up_http *h, struct post *p, const char *rest, size_t n)
{
    size_t i = 0;
    while (i < n && rest[i] == '\n')
        i++;
    if (i < n)
        sl_info("upstream %s: %s ended in mid-event (no blank line after its last %zu bytes); "
                "that event is dropped", h->hostport,
                p->kind == X_LISTEN ? "the session's GET stream" : "an event stream", n - i);
}

/* --- an event over SL_MAX_MESSAGE --- */

static void post_queue(struct up_http *h, const char *id, struct sl_str method, struct sl_str name,
                       bool modern, struct sl_str extra, struct sl_str body);

/* The first n bytes of the body go; the body's newlines are all "\n" already (sse_newlines). */
static void body_consume(struct post *p, size_t n)
{
    struct sl_buf *b = &p->body;
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
    if (b->p)
        b->p[b->len] = 0;
    p->lf_only = b->len;
    p->scanned = 0;
}

/* More of the skipped event's data: its first bytes into head, its last into tail. */
static void cut_data(struct sse_cut *k, const char *v, size_t n)
{
    size_t h = n < CUT_HEAD - k->head_len ? n : CUT_HEAD - k->head_len;
    memcpy(k->head + k->head_len, v, h);
    k->head_len += h;
    size_t take = n < CUT_TAIL ? n : CUT_TAIL;
    size_t keep = CUT_TAIL - take < k->tail_len ? CUT_TAIL - take : k->tail_len;
    memmove(k->tail, k->tail + k->tail_len - keep, keep);
    memcpy(k->tail + keep, v + n - take, take);
    k->tail_len = keep + take;
}

/* The start of a line of the skipped event (the whole line, or its first CUT_LINE_MIN bytes and
 * more): its data goes to cut_data; an id or retry field, when the line is whole, counts as it
 * would in any event. An id cut in the middle is no usable one (sse_set_id). */
static void cut_line(struct post *p, const char *line, size_t ll, bool whole)
{
    struct sse_cut *k = p->cut;
    struct sse_line f = sse_split(line, ll);
    k->mid_data = sse_is(line, f, "data");
    if (k->mid_data) {
        if (k->any_data)
            cut_data(k, "\n", 1);
        k->any_data = true;
        cut_data(k, f.v, f.vl);
    } else if (whole) {
        struct sl_buf none = { 0 };
        sse_field(p, line, ll, &none);
    } else if (sse_is(line, f, "id")) {
        sse_set_id(p, "", EVENT_ID_MAX); /* too long to be kept: not usable */
    }
}

/* The skipped event ended. A request of the server's own in it (elicitation/create,
 * sampling/createMessage, roots/list with a large context) never reaches a client, so nobody
 * would answer it and the server would wait for ever, or its own timeout: when its data's ends
 * show it is a request and which id it has (jsonrpc_cut_request_id), the server is answered at
 * once with the error a client's message too large gets, under its id, as a stdio child is
 * (up_stdio.c), and the stream reads on: other calls' replies on it still come. Anything else (a
 * reply, which is the call's answer, a notification, an id not read safely) ends the stream as
 * too large, as it did before: the calls waiting on it fail. Returns whether the stream goes on. */
static bool cut_done(struct up_http *h, struct post *p)
{
    struct sse_cut *k = p->cut;
    struct sl_buf id = { 0 }, b = { 0 };
    bool request = jsonrpc_cut_request_id((struct sl_str){ k->head, k->head_len },
                                          (struct sl_str){ k->tail, k->tail_len }, &id);
    p->cut = NULL;
    free(k);
    if (request) {
        sl_warn("upstream %s: a request over %u bytes (id %.*s) on an event stream; dropped, and "
                "the server is answered with an error", h->hostport, SL_MAX_MESSAGE,
                (int)id.len, id.p);
        jsonrpc_write_error(&b, sl_buf_str(&id), JSONRPC_PARSE_ERROR,
                            "Parse error: message too large", NULL);
        if (h->stage == RUNNING)
            post_queue(h, NULL, SL_STR_NULL, SL_STR_NULL, false, SL_STR_NULL, sl_buf_str(&b));
    }
    sl_buf_free(&id);
    sl_buf_free(&b);
    return request;
}

/* Splits complete SSE events off the front of the body; each event's data lines, joined, is one
 * message. Comments and empty data are ignored; ids and retry fields are kept. At the stream's
 * end (at_end) an unfinished event is dropped. An event whole in the body whose data is still
 * over SL_MAX_MESSAGE (its last read brought its end) is one too large, as sse_skip's are:
 * returns false when the stream must end for it (cut_done). */
static bool sse_split_events(struct up_http *h, struct post *p, bool at_end)
{
    struct sl_buf *b = &p->body;
    size_t start = 0;
    bool ok = true;
    while (ok) {
        char *base = b->p + start;
        size_t left = b->len - start;
        char *end = NULL;
        size_t sep = 0;
        /* Resume where the last search stopped (less a separator's length): a large event
         * arriving in many reads must not be rescanned from its start each time. */
        size_t from = start == 0 && p->scanned > 1 ? p->scanned - 1 : 0;
        for (size_t i = from; i + 1 < left; i++) {
            if (base[i] == '\n' && base[i + 1] == '\n') {
                end = base + i, sep = 2;
                break;
            }
        }
        if (end == NULL) {
            p->scanned = start == 0 ? left : 0;
            if (at_end && left > 0) {
                sse_drop_unfinished(h, p, base, left);
                start = b->len;
                p->scanned = 0;
            }
            break;
        }
        struct sl_buf data = { 0 };
        bool fields = false;
        for (char *line = base; line < end;) {
            char *nl = memchr(line, '\n', (size_t)(end - line));
            char *le = nl ? nl : end;
            size_t ll = (size_t)(le - line);
            fields |= sse_field(p, line, ll, &data);
            line = nl ? nl + 1 : end;
        }
        p->events += fields;
        if (data.len > SL_MAX_MESSAGE) {
            p->cut = sl_xcalloc(1, sizeof(*p->cut));
            cut_data(p->cut, data.p, data.len);
            ok = cut_done(h, p);
        } else if (data.len) {
            stream_message(h, p, sl_buf_str(&data));
        }
        sl_buf_free(&data);
        start = (size_t)(end - b->p) + sep;
        p->scanned = 0;
    }
    if (start) {
        memmove(b->p, b->p + start, b->len - start);
        b->len -= start;
        if (b->p)
            b->p[b->len] = 0;
    }
    p->lf_only = b->len;
    return ok;
}

/* Reads on through the skipped event, as far as the body goes, dropping what it read: whole
 * lines, and a line cut short once CUT_LINE_MIN of it is there (a data line may be all of the
 * event). Returns 1 when the event ended and the stream goes on (cut_done), -1 when it ended and
 * the stream must end, 0 when more bytes are needed, or at the stream's end (at_end) that the
 * event never finished: it is dropped unanswered, as any unfinished event is. */
static int sse_skip(struct up_http *h, struct post *p, bool at_end)
{
    struct sl_buf *b = &p->body;
    struct sse_cut *k = p->cut;
    size_t i = 0;
    while (i < b->len) {
        char *line = b->p + i;
        char *nl = memchr(line, '\n', b->len - i);
        size_t ll = nl ? (size_t)(nl - line) : b->len - i;
        if (!k->mid && nl == line) { /* the blank line: the event's end */
            body_consume(p, i + 1);
            p->events++;
            return cut_done(h, p) ? 1 : -1;
        }
        if (!k->mid && nl == NULL && ll < CUT_LINE_MIN)
            break; /* a line's start: its field is read once it is whole, or long */
        if (k->mid && k->mid_data)
            cut_data(k, line, ll);
        else if (!k->mid)
            cut_line(p, line, ll, nl != NULL);
        k->mid = nl == NULL;
        i += ll + (nl != NULL);
    }
    body_consume(p, i);
    if (at_end) {
        sl_info("upstream %s: %s ended in an event over %u bytes; that event is dropped",
                h->hostport, p->kind == X_LISTEN ? "the session's GET stream" : "an event stream",
                SL_MAX_MESSAGE);
        free(p->cut);
        p->cut = NULL;
        sl_buf_reset(b);
        p->lf_only = 0;
    }
    return 0;
}

/* The events that came, handed on. An event that grows past SL_MAX_MESSAGE before its end is not
 * kept (sse_skip). Returns false when the stream must end as too large (cut_done). */
static bool sse_drain(struct up_http *h, struct post *p, bool at_end)
{
    struct sl_buf *b = &p->body;
    sse_newlines(p);
    for (;;) {
        if (p->cut) {
            int r = sse_skip(h, p, at_end);
            if (r <= 0)
                return r == 0;
        }
        if (!sse_split_events(h, p, at_end))
            return false;
        if (b->len <= SL_MAX_MESSAGE)
            return true;
        /* An event too large to keep: from here on it is read and dropped. */
        size_t lead = 0;
        while (lead < b->len && b->p[lead] == '\n')
            lead++;
        body_consume(p, lead);
        p->cut = sl_xcalloc(1, sizeof(*p->cut));
    }
}

/* Whether body is a JSON-RPC error response. Whose: the upstream checks the id (for_id). */
static bool is_error(struct sl_buf *body)
{
    struct jsonrpc_msg *m;
    struct jsonrpc_parse_error err;
    if (body->len == 0 || jsonrpc_parse(body->p, body->len, &m, &err) != 0)
        return false;
    bool error = m->kind == JSONRPC_ERROR;
    jsonrpc_msg_free(m);
    return error;
}

/* The Mcp-Session-Id v of p's reply. The server assigns the session with its InitializeResult
 * (PROTOCOL.md §5.3), so only the reply to the newest initialize names it: any other reply's is
 * ignored. A late reply to a request sent before the session was lost still names the old
 * session; taken, it would send every later request into a session the server forgot (each
 * failing with a 404 and a handshake). */
static void take_session_id(struct up_http *h, const struct post *p, struct sl_str v)
{
    if (v.len == 0 || v.len >= sizeof(h->session_id))
        return;
    bool visible = true; /* PROTOCOL.md §5.3: visible ASCII only */
    for (size_t i = 0; i < v.len && visible; i++)
        visible = v.p[i] > 0x20 && v.p[i] < 0x7f;
    if (!visible)
        return;
    if (p->initializes && p->init_gen == h->init_gen) {
        snprintf(h->session_id, sizeof(h->session_id), "%.*s", (int)v.len, v.p);
        return;
    }
    /* A server may repeat the session's id on every reply: only another id is worth a line. */
    if (h->session_id[0] && (strlen(h->session_id) != v.len ||
                             memcmp(h->session_id, v.p, v.len) != 0))
        sl_info("upstream %s: an Mcp-Session-Id on a reply that is not the reply to the current "
                "initialize; ignored", h->hostport);
}

static void listen_start(struct up_http *h);
static void listen_done(struct up_http *h, struct post *p, int code, const char *why);
static bool resume_schedule(struct up_http *h, struct post *p);
static void resume_done(struct up_http *h, struct post *p, int code, const char *why);
static void delete_done(struct up_http *h, struct post *p, int code, const char *why);

/* The server forgot our session (it restarted): the handshake is done again, and p's request,
 * which it never ran, is reported failed rather than resent. A late 404 for a session already
 * replaced says nothing about the new one. */
static void session_gone(struct up_http *h, struct post *p, int code)
{
    bool current = strcmp(h->session_id, p->sid) == 0;
    if (current)
        h->session_id[0] = '\0';
    fail_post(h, p, code, "the upstream server lost its session; it is initialized again, "
                          "try again");
    if (current)
        h->cbs.on_session_lost(h->arg);
}

/* The reply to p is complete with HTTP status code: hand on what it carried. Every path ends in
 * a failure for p's id, which the upstream drops when the answer came first (it no longer waits
 * for that id): a reply that did not answer (an HTML page, an answer for another id, a stream
 * that ended early) must not hold the call. */
static void deliver_reply(struct up_http *h, struct post *p, int code)
{
    if (p->sse) {
        fail_post(h, p, code, err_no_answer);
    } else if (code >= 200 && code < 300) {
        if (p->body.len) {
            /* A body too large to keep for the next POST (post_free) is given to the parse,
             * which then needs no copy of it. */
            if (p->body.cap > POST_KEEP_CAP)
                sl_offer(&p->body);
            h->cbs.on_message(sl_buf_str(&p->body), p->id ? p->id : "", h->arg);
            sl_offer(NULL);
        }
        fail_post(h, p, code, "the upstream server's reply did not answer the request");
    } else if (code == 404 && p->sent_session) {
        session_gone(h, p, code);
    } else {
        /* A JSON-RPC error for exactly our id passes on (for_id); anything else becomes one. */
        if (p->id && is_error(&p->body))
            h->cbs.on_message(sl_buf_str(&p->body), p->id, h->arg);
        char why[64];
        snprintf(why, sizeof(why), "the upstream server answered HTTP %d", code);
        fail_post(h, p, code, why);
    }
}

/* Whether p's event stream, which ended (cleanly, or with its connection closed), is fetched
 * again by GET with Last-Event-ID (PROTOCOL.md §5.3, SEP-1699): a 2025-11-25 request whose
 * stream gave an event id, and whose answer the upstream still waits for. */
static bool resumable(struct up_http *h, const struct post *p, int code, const char *why)
{
    return !p->modern && p->id && p->sse && p->event_id[0] && code >= 200 && code < 300 &&
           (why == NULL || why == err_cut) && h->stage == RUNNING && h->cbs.waits_for &&
           h->cbs.waits_for(p->id, h->arg);
}

static void post_done(struct up_http *h, struct post *p, int code, const char *why)
{
    if (why == NULL && p->sse)
        sse_drain(h, p, true);
    if (p->opens_listen && why == NULL && code >= 200 && code < 300)
        listen_start(h);
    if (resumable(h, p, code, why) && resume_schedule(h, p))
        return;
    if (why)
        fail_post(h, p, code, why);
    else
        deliver_reply(h, p, code);
    post_free(h, p);
}

/* Exchange p ended with HTTP status code (0: no response), cut short when why is not NULL; p is
 * the callee's. */
static void exchange_done(struct up_http *h, struct post *p, int code, const char *why)
{
    switch (p->kind) {
    case X_POST:
        return post_done(h, p, code, why);
    case X_LISTEN:
        return listen_done(h, p, code, why);
    case X_RESUME:
        return resume_done(h, p, code, why);
    case X_DELETE:
        return delete_done(h, p, code, why);
    }
}

/* The response on c ended (complete, or cut short when why is not NULL). The connection is
 * kept for the next POST only when it is a pooled one, the response was complete, allowed it,
 * and left nothing behind (bytes nobody asked for mean the server and we disagree about
 * framing). */
static void conn_done(struct uconn *c, const char *why)
{
    struct up_http *h = c->h;
    struct post *p = c->cur;
    int code = c->got_head ? c->status : 0;
    bool keep = !c->side && why == NULL && c->keep_alive && c->framing != BODY_UNTIL_CLOSE &&
                evbuffer_get_length(bufferevent_get_input(c->bev)) == 0;
    c->cur = NULL;
    if (!keep)
        conn_free(c);
    else
        conn_hold(c, false); /* held in mid-stream, now idle: the next reply is read */
    exchange_done(h, p, code, why);
    dispatch_waiting(h);
}

/* An event stream's body is bounded by sse_drain, which skips an event too large; a JSON
 * body here. */
static bool body_add(struct uconn *c, const char *data, size_t n)
{
    struct post *p = c->cur;
    if (!p->sse && p->body.len + n > SL_MAX_MESSAGE) {
        conn_done(c, "the upstream server's reply is too large");
        return false;
    }
    sl_buf_put(&p->body, data, n);
    return true;
}

/* The rest of a JSON body of known length, all in the input, into the POST's body at once. */
static void take_whole(struct uconn *c, struct evbuffer *in)
{
    struct sl_buf *b = &c->cur->body;
    sl_buf_reserve(b, c->left);
    SL_REQUIRE(evbuffer_remove(in, b->p + b->len, c->left) == (int)c->left);
    b->len += c->left;
    b->p[b->len] = '\0';
    c->left = 0;
}

/* The body of a large JSON reply over plain TCP, read from the socket straight into the POST's
 * body: what the input holds, then recv() until the body is whole or the socket has no more.
 * libevent 2.1 reads a socket 4 KiB a call (EVBUFFER_MAX_READ), so a 1 MiB reply cost 256 loop
 * turns and a copy out of the input; here it is a few recv() calls into its final place. Never
 * past the body (c->left): a next response's bytes stay in the socket for the bufferevent. EOF
 * and errors are left to the bufferevent's next read, which reports them as before. The body
 * grows as bytes arrive, to four times what came (doubling moved a 1 MiB body five times, 0.8
 * instructions a byte, now that main.c keeps large blocks in the heap), so a length announced
 * is still not taken on trust. */
static void read_direct(struct uconn *c, struct evbuffer *in)
{
    struct sl_buf *b = &c->cur->body;
    size_t avail = evbuffer_get_length(in);
    sl_buf_reserve(b, avail);
    SL_REQUIRE(evbuffer_remove(in, b->p + b->len, avail) == (int)avail);
    b->len += avail;
    b->p[b->len] = '\0';
    c->left -= avail;
    evutil_socket_t fd = bufferevent_getfd(c->bev);
    while (c->left > 0) {
        if (b->cap - b->len < 2) { /* four times what came, at most what is left */
            size_t more = 3 * b->len + 1;
            sl_buf_reserve(b, c->left < more ? c->left : more);
        }
        size_t room = b->cap - b->len - 1;
        ssize_t r = recv(fd, b->p + b->len, room < c->left ? room : c->left, 0);
        if (r <= 0)
            break; /* no more for now (EAGAIN), or EOF or an error: see above */
        b->len += (size_t)r;
        b->p[b->len] = '\0';
        c->left -= (size_t)r;
    }
    /* Bytes the server sent after the body, left in the socket by the bound above, are no
     * response to anything: the connection is not kept, or a POST waiting for one would take
     * them for its reply (conn_done keeps a connection whose input is empty). */
    char next;
    if (c->left == 0 && recv(fd, &next, 1, MSG_PEEK | MSG_DONTWAIT) > 0)
        c->keep_alive = false;
}

/* Reads the status line and headers. Returns 1 when the body follows, 0 for more bytes, -1 when
 * c is gone. An interim 1xx response is skipped. */
static int read_head(struct uconn *c, struct evbuffer *in)
{
    size_t avail = evbuffer_get_length(in);
    size_t n = avail < HEAD_MAX ? avail : HEAD_MAX;
    const char *p = (const char *)evbuffer_pullup(in, (ssize_t)n);
    struct http1_head head;
    ssize_t hl = http1_parse_response_head(p, n, HEAD_MAX, &head);
    if (hl == 0 && n < HEAD_MAX)
        return 0;
    if (hl <= 0) {
        conn_done(c, "the upstream server sent a malformed HTTP response");
        return -1;
    }
    struct sl_str v;
    if (head.status < 200) {
        evbuffer_drain(in, (size_t)hl);
        return evbuffer_get_length(in) ? read_head(c, in) : 0;
    }
    c->got_head = true;
    c->status = head.status;
    c->keep_alive = head.keep_alive;
    c->cur->sse = http1_field(&head, HTTP1_CONTENT_TYPE, &v) == 1 && v.len >= 17 &&
                  strncasecmp(v.p, "text/event-stream", 17) == 0;
    if (c->cur->kind == X_POST && http1_field(&head, HTTP1_MCP_SESSION_ID, &v) == 1)
        take_session_id(c->h, c->cur, v);
    if (head.status == 204 || head.status == 304) {
        c->framing = BODY_LENGTH, c->left = 0;
    } else if (head.chunked) {
        c->framing = BODY_CHUNKED;
        c->chunks = (struct http1_chunks)HTTP1_CHUNKS_INIT;
    } else if (head.has_length) {
        c->framing = BODY_LENGTH, c->left = head.content_length;
        if (!c->cur->sse && c->left > SL_MAX_MESSAGE) {
            conn_done(c, "the upstream server's reply is too large");
            return -1;
        }
        /* An event stream's events are taken as they come: one block for a usual one; what a
         * length announces is not taken on trust (the bytes must arrive before a large body
         * holds that much memory). A JSON body is taken whole (read_body). */
        if (c->cur->sse)
            sl_buf_reserve(&c->cur->body, c->left < BODY_RESERVE_MAX ? c->left : BODY_RESERVE_MAX);
    } else {
        c->framing = BODY_UNTIL_CLOSE;
    }
    evbuffer_drain(in, (size_t)hl);
    return 1;
}

/* Takes the body bytes that are there. Returns false when c is gone. */
static bool read_body(struct uconn *c, struct evbuffer *in)
{
    for (;;) {
        size_t avail = evbuffer_get_length(in);
        if (c->framing == BODY_LENGTH && c->left == 0)
            break;
        if (c->framing == BODY_CHUNKED && http1_dechunk_done(&c->chunks))
            break;
        if (avail == 0)
            return true;
        struct evbuffer_iovec vec;
        evbuffer_peek(in, -1, NULL, &vec, 1);
        size_t n = vec.iov_len;
        if (c->framing == BODY_CHUNKED) {
            ssize_t used = http1_dechunk(&c->chunks, vec.iov_base, n, &c->cur->body);
            if (used < 0) {
                conn_done(c, "the upstream server sent a malformed chunked body");
                return false;
            }
            if (!c->cur->sse && c->cur->body.len > SL_MAX_MESSAGE) {
                conn_done(c, "the upstream server's reply is too large");
                return false;
            }
            if (used == 0) { /* an incomplete size line split across segments */
                evbuffer_pullup(in, -1);
                evbuffer_peek(in, -1, NULL, &vec, 1);
                used = http1_dechunk(&c->chunks, vec.iov_base, vec.iov_len, &c->cur->body);
                if (used < 0) {
                    conn_done(c, "the upstream server sent a malformed chunked body");
                    return false;
                }
                if (used == 0)
                    return true;
            }
            evbuffer_drain(in, (size_t)used);
        } else if (c->framing == BODY_LENGTH && !c->cur->sse) {
            if (avail < c->left && c->h->tls == NULL && c->left > DIRECT_MIN) {
                read_direct(c, in);
                if (c->left > 0)
                    return true;
            } else if (avail < c->left) {
                return true; /* taken whole once it is all here: one copy, no buffer that grows */
            } else {
                take_whole(c, in);
            }
        } else {
            if (c->framing == BODY_LENGTH && n > c->left)
                n = c->left;
            if (!body_add(c, vec.iov_base, n))
                return false;
            evbuffer_drain(in, n);
            if (c->framing == BODY_LENGTH)
                c->left -= n;
        }
        if (c->cur->sse && !sse_drain(c->h, c->cur, false)) {
            conn_done(c, "the upstream server's reply is too large");
            return false;
        }
        if (c->cur->answered) /* a resumed stream stays open after its answer (SDK 1.x) */
            break;
    }
    conn_done(c, NULL);
    return false;
}

static void conn_read(struct bufferevent *bev, void *arg)
{
    struct uconn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    c->last_us = sl_mono_us();
    if (c->cur == NULL) { /* bytes nobody asked for */
        struct up_http *h = c->h;
        conn_free(c);
        dispatch_waiting(h);
        return;
    }
    if (!c->got_head && read_head(c, in) <= 0)
        return;
    if (read_body(c, in) && c->h->paused && conn_holdable(c))
        conn_hold(c, true); /* an event stream that began while the client was not reading */
}

static void conn_write(struct bufferevent *bev, void *arg)
{
    struct uconn *c = arg;
    (void)bev;
    wout_written(&c->wout);
}

static void conn_event(struct bufferevent *bev, short what, void *arg)
{
    struct uconn *c = arg;
    if (what & BEV_EVENT_CONNECTED) {
        int one = 1;
        c->h->connect_warned = false;
        if (c->h->tls == NULL) {
            setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            wout_attach(&c->wout, bev, conn_write, 0, c);
        }
        return;
    }
    struct up_http *h = c->h;
    if (c->cur == NULL) {
        conn_free(c);
        dispatch_waiting(h);
        return;
    }
    if (c->got_head && c->framing == BODY_UNTIL_CLOSE && (what & BEV_EVENT_EOF)) {
        conn_done(c, NULL);
        return;
    }
    unsigned long ssl_err = h->tls ? bufferevent_get_openssl_error(bev) : 0;
    enum sl_log_level level = h->connect_warned ? SL_LOG_DEBUG : SL_LOG_WARN;
    if (ssl_err && (ERR_GET_LIB(ssl_err) == ERR_LIB_SYS || ERR_GET_LIB(ssl_err) == 0)) {
        /* Not TLS at all: the connection itself failed (libevent files errno here too). */
        sl_log(level, "upstream %s: cannot connect: %s", h->hostport,
               strerror(ERR_GET_REASON(ssl_err)));
        h->connect_warned = true;
    } else if (ssl_err) {
        char buf[256];
        ERR_error_string_n(ssl_err, buf, sizeof(buf));
        sl_log(level, "upstream %s: TLS: %s", h->hostport, buf);
        h->connect_warned = true;
    }
    if (!c->got_head)
        conn_done(c, (what & BEV_EVENT_TIMEOUT) ? "the upstream server did not answer in time"
                                               : "cannot reach the upstream server");
    else
        conn_done(c, (what & BEV_EVENT_TIMEOUT) ? "the upstream server stopped in mid-reply"
                                               : err_cut);
}

static struct bufferevent *conn_bev_new(struct up_http *h)
{
    int opts = BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS;
    if (h->tls == NULL)
        return bufferevent_socket_new(h->base, -1, opts);
    SSL *ssl = SSL_new(h->tls);
    /* The certificate must name this host: its DNS name, or its IP address for a literal. */
    unsigned char addr[16];
    if (inet_pton(AF_INET, h->host, addr) == 1 || inet_pton(AF_INET6, h->host, addr) == 1) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), h->host);
    } else {
        SSL_set_tlsext_host_name(ssl, h->host);
        SSL_set1_host(ssl, h->host);
    }
    return bufferevent_openssl_socket_new(h->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING, opts);
}

/* The read timeout's timer: acts as libevent's would (a timeout while reading) once the
 * connection has been silent that long, else waits for the rest. */
static void conn_timer(evutil_socket_t fd, short what, void *arg)
{
    struct uconn *c = arg;
    uint64_t limit = (uint64_t)c->h->read_timeout_s * 1000000u, now = sl_mono_us();
    if (c->held) /* not read on purpose: its silence is ours, not the server's */
        c->last_us = now;
    if (now - c->last_us < limit) {
        uint64_t left = limit - (now - c->last_us);
        struct timeval tv = { (time_t)(left / 1000000u), (suseconds_t)(left % 1000000u) };
        evtimer_add(c->timer, &tv);
        return;
    }
    conn_event(c->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, c);
}

/* A new connection carrying p. Callbacks are deferred, so a failure to connect is reported from
 * the event loop, never from inside this call. */
static struct uconn *conn_open(struct up_http *h, struct post *p, bool side)
{
    struct uconn *c = sl_xcalloc(1, sizeof(*c));
    c->h = h;
    c->side = side;
    c->bev = conn_bev_new(h);
    c->next = h->conns;
    if (h->conns)
        h->conns->prev = c;
    h->conns = c;
    if (!side)
        h->nconns++;
    bufferevent_setcb(c->bev, conn_read, conn_write, conn_event, c);
    struct timeval rt = { h->read_timeout_s, 0 }, wt = { WRITE_TIMEOUT_S, 0 };
    bufferevent_set_timeouts(c->bev, NULL, &wt);
    c->timer = evtimer_new(h->base, conn_timer, c);
    c->last_us = sl_mono_us();
    evtimer_add(c->timer, &rt);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    conn_start(c, p);
    if (bufferevent_socket_connect_hostname(c->bev, NULL, AF_UNSPEC, h->host, h->port) != 0) {
        c->cur = NULL;
        conn_free(c);
        exchange_done(h, p, 0, "cannot reach the upstream server");
        return NULL;
    }
    return c;
}

/* Hands waiting POSTs to idle connections, opening new ones up to POOL_MAX. */
static void dispatch_waiting(struct up_http *h)
{
    while (h->wait_head) {
        struct uconn *idle = NULL;
        for (struct uconn *c = h->conns; c && idle == NULL; c = c->next)
            if (c->cur == NULL && !c->side)
                idle = c;
        if (idle == NULL && h->nconns >= POOL_MAX)
            return;
        struct post *p = h->wait_head;
        h->wait_head = p->next;
        if (h->wait_head == NULL)
            h->wait_tail = &h->wait_head;
        p->next = NULL;
        if (idle)
            conn_start(idle, p);
        else
            conn_open(h, p, false);
    }
}

/* ===== requests ===== */

/* Queues the POST of body. id: our request id (NULL for a notification or a response). For a
 * modern request (modern) the mirrored headers are made from method and name (name.p NULL:
 * none), and extra (header lines, "Name: value\r\n" each) goes along; otherwise the handshake
 * session id and version go along once known. */
static void post_queue(struct up_http *h, const char *id, struct sl_str method, struct sl_str name,
                       bool modern, struct sl_str extra, struct sl_str body)
{
    struct post *p = post_new(h);
    if (id) {
        SL_REQUIRE(strlen(id) < sizeof(p->idbuf));
        p->id = memcpy(p->idbuf, id, strlen(id) + 1);
    }
    p->modern = modern;
    p->opens_listen = !modern && sl_str_eq_c(method, "notifications/initialized");
    if (!modern && sl_str_eq_c(method, "initialize")) {
        p->initializes = true;
        p->init_gen = ++h->init_gen;
    }
    struct sl_buf *b = &p->req;
    sl_buf_reserve(b, h->head.len + body.len + extra.len + 256); /* the head's fields: one block */
    sl_buf_put(b, h->head.p, h->head.len); /* request line, Host, media types, Authorization */
    char num[21];
    sl_buf_puts(b, "Content-Length: ");
    sl_buf_put(b, num, sl_u64_dec(num, body.len));
    sl_buf_puts(b, "\r\n");
    if (modern) {
        /* The method is one of ours or a client's checked against the schema's names, which
         * are tokens; anything else would not be a method the upstream has. */
        sl_buf_puts(b, "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: ");
        for (size_t i = 0; i < method.len; i++)
            sl_buf_putc(b, method.p[i] >= 0x21 && method.p[i] < 0x7f ? method.p[i] : '_');
        sl_buf_puts(b, "\r\n");
        if (name.p) {
            sl_buf_puts(b, "Mcp-Name: ");
            params_header_value(b, name);
            sl_buf_puts(b, "\r\n");
        }
        sl_buf_put(b, extra.p, extra.len);
    } else {
        if (h->version[0]) {
            sl_buf_puts(b, "MCP-Protocol-Version: ");
            sl_buf_puts(b, h->version);
            sl_buf_puts(b, "\r\n");
        }
        if (h->session_id[0]) {
            sl_buf_puts(b, "Mcp-Session-Id: ");
            sl_buf_puts(b, h->session_id);
            sl_buf_puts(b, "\r\n");
            p->sent_session = true;
            memcpy(p->sid, h->session_id, sizeof(p->sid));
        }
    }
    sl_buf_puts(b, "\r\n");
    sl_buf_put(b, body.p, body.len);
    *h->wait_tail = p;
    h->wait_tail = &p->next;
    dispatch_waiting(h);
}

/* Drops the POST of request id: before it was sent, or by closing its connection. Nothing is
 * reported for it afterwards. */
static void post_cancel(struct up_http *h, const char *id)
{
    for (struct post **pp = &h->wait_head; *pp; pp = &(*pp)->next) {
        struct post *p = *pp;
        if (p->id && strcmp(p->id, id) == 0) {
            *pp = p->next;
            if (h->wait_tail == &p->next)
                h->wait_tail = pp;
            post_free(h, p);
            return;
        }
    }
    for (struct uconn *c = h->conns; c; c = c->next) {
        if (c->cur && c->cur->id && strcmp(c->cur->id, id) == 0) {
            post_free(h, c->cur);
            c->cur = NULL;
            conn_free(c);
            dispatch_waiting(h);
            return;
        }
    }
}

/* ===== GET and DELETE: the session's stream, resumed streams, the session's end ===== */

/* The head of p's GET (with Last-Event-ID when last_id is not empty) or DELETE, with the version
 * and session id every request after the handshake carries (PROTOCOL.md §5.3). */
static void side_head(struct up_http *h, struct post *p, const char *last_id)
{
    struct sl_buf *b = &p->req;
    sl_buf_reset(b);
    sl_buf_printf(b, "%s %s HTTP/1.1\r\nHost: %s\r\n", p->kind == X_DELETE ? "DELETE" : "GET",
                  h->path, h->hostport);
    if (p->kind != X_DELETE)
        sl_buf_puts(b, "Accept: text/event-stream\r\n");
    if (h->auth)
        sl_buf_puts(b, h->auth);
    if (h->version[0])
        sl_buf_printf(b, "MCP-Protocol-Version: %s\r\n", h->version);
    p->sent_session = h->session_id[0] != '\0';
    if (p->sent_session) {
        sl_buf_printf(b, "Mcp-Session-Id: %s\r\n", h->session_id);
        memcpy(p->sid, h->session_id, sizeof(p->sid));
    }
    if (last_id && *last_id) /* visible ASCII only (sse_set_id) */
        sl_buf_printf(b, "Last-Event-ID: %s\r\n", last_id);
    sl_buf_puts(b, "\r\n");
}

/* --- the session's GET stream --- */

/* Opens the GET stream, from the last event id seen on it (none at first). */
static void listen_open(struct up_http *h)
{
    struct post *p = post_new(h);
    p->kind = X_LISTEN;
    memcpy(p->event_id, h->listen_last_id, sizeof(p->event_id));
    p->retry_ms = h->listen_retry_ms;
    side_head(h, p, h->listen_last_id);
    h->listen_conn = conn_open(h, p, true);
}

static void on_listen_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    listen_open(arg);
}

/* Closes the GET stream, or stops it from being reopened. Never from the stream's own
 * callbacks: its callers are a POST's end and the stop's tick. */
static void listen_stop(struct up_http *h)
{
    evtimer_del(h->listen_ev);
    struct uconn *c = h->listen_conn;
    if (c) {
        post_free(h, c->cur);
        c->cur = NULL;
        conn_free(c);
    }
}

/* The server accepted notifications/initialized: the handshake is done, and the (new) session's
 * stream is opened from its start. */
static void listen_start(struct up_http *h)
{
    if (h->stage != RUNNING)
        return;
    listen_stop(h);
    h->listen_last_id[0] = '\0';
    h->listen_retry_ms = -1;
    h->listen_fails = h->listen_empties = 0;
    listen_open(h);
}

/* The GET stream ended. 405: the server offers none; 404: it forgot the session (the next
 * handshake opens a new one; a 404 here does not start that handshake, as a server that
 * answers every GET so would make sluice initialize for ever). Else it is reopened with
 * Last-Event-ID after the server's retry time, or longer while it keeps failing: 1 s, 2 s ...
 * 30 s, and given up after LISTEN_FAILS_MAX opens in a row that got no event stream. */
static void listen_done(struct up_http *h, struct post *p, int code, const char *why)
{
    bool stream = code >= 200 && code < 300 && p->sse;
    unsigned events = p->events;
    memcpy(h->listen_last_id, p->event_id, sizeof(h->listen_last_id));
    h->listen_retry_ms = p->retry_ms;
    post_free(h, p);
    if (h->stage != RUNNING)
        return;
    if (code == 405 || code == 404) {
        sl_debug("upstream %s: %s (HTTP %d)", h->hostport,
                 code == 405 ? "the server offers no GET stream" : "the GET stream's session is "
                                                                   "gone", code);
        return;
    }
    if (!stream && ++h->listen_fails >= LISTEN_FAILS_MAX) {
        char st[32];
        snprintf(st, sizeof(st), "HTTP %d", code);
        sl_warn("upstream %s: the session's GET stream failed %u times in a row (%s); it is not "
                "opened again until the next handshake, so what the server says outside a "
                "call is lost", h->hostport, h->listen_fails, why ? why : st);
        return;
    }
    if (stream)
        h->listen_fails = 0, h->listen_empties = events ? 0 : h->listen_empties + 1;
    unsigned n = h->listen_fails + h->listen_empties;
    long ms = h->listen_retry_ms >= 0 ? h->listen_retry_ms : RETRY_DEFAULT_MS;
    long backoff = n ? (n > 6 ? LISTEN_BACKOFF_MAX_MS : 1000L << (n - 1)) : 0;
    if (backoff > LISTEN_BACKOFF_MAX_MS)
        backoff = LISTEN_BACKOFF_MAX_MS;
    if (backoff > ms)
        ms = backoff;
    if (ms < LISTEN_MIN_MS) /* a stream that ends at once, again and again */
        ms = LISTEN_MIN_MS;
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    evtimer_add(h->listen_ev, &tv);
}

/* --- resuming a request's event stream --- */

static void resume_unlink(struct up_http *h, struct post *p)
{
    for (struct post **pp = &h->resumes; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            p->next = NULL;
            return;
        }
    }
}

static void on_resume_timer(evutil_socket_t fd, short what, void *arg)
{
    struct post *p = arg;
    struct up_http *h = p->h;
    (void)fd, (void)what;
    resume_unlink(h, p);
    if (!h->cbs.waits_for(p->id, h->arg)) { /* withdrawn meanwhile */
        post_free(h, p);
        return;
    }
    if (p->sent_session && strcmp(p->sid, h->session_id) != 0) {
        fail_post(h, p, 0, "the upstream server lost its session before the answer came");
        post_free(h, p);
        return;
    }
    side_head(h, p, p->event_id);
    p->sse = p->answered = p->moved = false;
    p->events = 0;
    p->scanned = p->lf_only = 0;
    p->cr_last = false;
    free(p->cut);
    p->cut = NULL;
    sl_buf_reset(&p->body);
    conn_open(h, p, true);
}

/* Schedules p's next GET after the server's retry time (PROTOCOL.md §5.3: MUST honour it).
 * Returns false when it is given up: RESUME_TRIES_MAX streams in a row brought no new event id
 * (a server that replays the same events would be asked for ever), or none would have come for
 * --upstream-timeout by then (the silence a reply may have). */
static bool resume_schedule(struct up_http *h, struct post *p)
{
    uint64_t now = sl_mono_us();
    if (p->kind == X_POST || p->moved) {
        p->tries = 0;
        p->deadline_us = now + (uint64_t)h->read_timeout_s * 1000000u;
    } else if (++p->tries >= RESUME_TRIES_MAX) {
        return false;
    }
    long ms = p->retry_ms >= 0 ? p->retry_ms : RETRY_DEFAULT_MS;
    if (now + (uint64_t)ms * 1000u >= p->deadline_us)
        return false;
    if (p->kind == X_POST)
        sl_debug("upstream %s: request %s's event stream ended before its answer; resuming it "
                 "after event %s in %ld ms", h->hostport, p->id, p->event_id, ms);
    p->kind = X_RESUME;
    if (p->ev == NULL)
        p->ev = evtimer_new(h->base, on_resume_timer, p);
    p->next = h->resumes;
    h->resumes = p;
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    evtimer_add(p->ev, &tv);
    return true;
}

/* A resumed stream ended: the answer came (nothing to say), or it is resumed again, or the
 * request fails as a stream that ended without its answer did before resuming existed. */
static void resume_done(struct up_http *h, struct post *p, int code, const char *why)
{
    if (!p->answered && why == NULL && p->sse)
        sse_drain(h, p, true);
    if (p->answered || !h->cbs.waits_for(p->id, h->arg)) {
        post_free(h, p);
        return;
    }
    if (code == 404 && p->sent_session) {
        session_gone(h, p, code);
    } else if (resumable(h, p, code, why) && resume_schedule(h, p)) {
        return;
    } else if (why == NULL && (code < 200 || code >= 300)) {
        char st[96];
        snprintf(st, sizeof(st), "the upstream server answered HTTP %d to resuming its event "
                                 "stream", code);
        fail_post(h, p, code, st);
    } else {
        fail_post(h, p, code, why ? why : err_no_answer);
    }
    post_free(h, p);
}

/* Drops the resumes of request id (all of them when id is NULL), without a word. */
static void resume_drop(struct up_http *h, const char *id)
{
    for (struct post **pp = &h->resumes; *pp;) {
        struct post *p = *pp;
        if (id == NULL || strcmp(p->id, id) == 0) {
            *pp = p->next;
            post_free(h, p);
        } else {
            pp = &p->next;
        }
    }
    for (struct uconn *c = h->conns, *next; c; c = next) {
        next = c->next;
        if (c->side && c->cur && c->cur->kind == X_RESUME &&
            (id == NULL || strcmp(c->cur->id, id) == 0)) {
            post_free(h, c->cur);
            c->cur = NULL;
            conn_free(c);
        }
    }
}

/* --- stopping, and the DELETE --- */

static void delete_done(struct up_http *h, struct post *p, int code, const char *why)
{
    sl_debug("upstream %s: the session's DELETE: %s (HTTP %d)", h->hostport,
             why ? why : "answered", code);
    post_free(h, p);
    if (h->stage == STOP_DELETING) {
        h->stage = STOP_REPORT;
        struct timeval now = { 0, 0 };
        evtimer_add(h->stop_ev, &now);
    }
}

/* The stop's steps, from the event loop: close the GET stream and the resumes, DELETE the
 * session (PROTOCOL.md §5.3; not when there is none, as after a 404), then report on_closed and
 * on_exit once it is answered or DELETE_TIMEOUT_MS passed. */
static void on_stop_tick(evutil_socket_t fd, short what, void *arg)
{
    struct up_http *h = arg;
    (void)fd, (void)what;
    switch (h->stage) {
    case STOP_ASKED:
        listen_stop(h);
        resume_drop(h, NULL);
        if (h->session_id[0]) {
            h->stage = STOP_DELETING;
            struct timeval tv = { DELETE_TIMEOUT_MS / 1000, (DELETE_TIMEOUT_MS % 1000) * 1000 };
            evtimer_add(h->stop_ev, &tv);
            struct post *p = post_new(h);
            p->kind = X_DELETE;
            side_head(h, p, NULL);
            h->delete_conn = conn_open(h, p, true);
            return;
        }
        break;
    case STOP_DELETING:
        sl_debug("upstream %s: the session's DELETE got no answer in time", h->hostport);
        if (h->delete_conn) {
            post_free(h, h->delete_conn->cur);
            h->delete_conn->cur = NULL;
            conn_free(h->delete_conn);
        }
        break;
    case STOP_REPORT:
        break;
    case RUNNING:
    case STOPPED:
        return;
    }
    h->stage = STOPPED;
    if (h->live_bev) { /* nothing is reported any more */
        bufferevent_free(h->live_bev);
        h->live_bev = NULL;
    }
    h->cbs.on_closed("sluice is stopping", h->arg);
    h->cbs.on_exit("was disconnected", h->arg);
}

/* ===== the ops ===== */

static struct up_http *http_of(struct up_transport *t)
{
    return (struct up_http *)t;
}

/* The mirrored Mcp-Name of a request (PROTOCOL.md §5.2). */
static struct sl_str mirrored_name(struct sl_str method, const struct json *params)
{
    const char *key = sl_str_eq_c(method, "resources/read") ? "uri"
                      : (sl_str_eq_c(method, "tools/call") || sl_str_eq_c(method, "prompts/get"))
                          ? "name" : NULL;
    const struct json *v = key ? json_get(params, key) : NULL;
    return v && v->type == JSON_STRING ? v->u.str : SL_STR_NULL;
}

static void http_send(struct up_transport *t, const struct up_msg *m)
{
    struct up_http *h = http_of(t);
    char store[512];
    struct sl_buf extra;
    sl_buf_on(&extra, store, sizeof(store));
    struct sl_str name = mirrored_name(m->method, m->params);
    if (m->modern && name.p && sl_str_eq_c(m->method, "tools/call"))
        params_write(h->marks, name, json_get(m->params, "arguments"), &extra);
    post_queue(h, m->id, m->method, name, m->modern, sl_buf_str(&extra), m->line);
    sl_buf_free(&extra);
}

/* A modern server reads the closing of the request's stream as the cancellation and expects
 * no notification (PROTOCOL.md §4.4); a 2025 server must not read a disconnect so. */
static bool http_cancel(struct up_transport *t, const char *id, bool modern)
{
    if (!modern) { /* a resumed stream would wait for an answer that never comes */
        resume_drop(http_of(t), id);
        return false;
    }
    post_cancel(http_of(t), id);
    return true;
}

static void http_set_version(struct up_transport *t, const char *version)
{
    struct up_http *h = http_of(t);
    /* The server chose it; it goes into a header, so only a token-like value is kept. */
    h->version[0] = '\0';
    size_t n = version ? strlen(version) : 0;
    for (size_t i = 0; i < n; i++)
        if (version[i] <= 0x20 || version[i] >= 0x7f)
            return;
    if (n < sizeof(h->version))
        memcpy(h->version, version, n + 1);
}

/* ===== liveness ===== */

/* A TCP connection to the server's port, closed as soon as it is made: no HTTP request, so the
 * server sees no MCP traffic (its session is untouched) and nothing here counts as a failed
 * request. Over https the TLS handshake is not done either: what is asked is whether something
 * listens. */
static void live_done(struct up_http *h, bool reachable, const char *why)
{
    bufferevent_free(h->live_bev);
    h->live_bev = NULL;
    h->cbs.on_liveness(reachable, why, h->arg);
}

static void live_event(struct bufferevent *bev, short what, void *arg)
{
    struct up_http *h = arg;
    if (what & BEV_EVENT_CONNECTED)
        return live_done(h, true, NULL);
    int dns = bufferevent_socket_get_dns_error(bev);
    int e = EVUTIL_SOCKET_ERROR(); /* restored by libevent before a deferred callback */
    const char *why = (what & BEV_EVENT_TIMEOUT) ? "no connection within the probe's limit"
                      : dns                      ? evutil_gai_strerror(dns)
                      : e                        ? evutil_socket_error_to_string(e)
                                                 : "cannot connect";
    live_done(h, false, why);
}

static void http_liveness(struct up_transport *t)
{
    struct up_http *h = http_of(t);
    if (h->live_bev)
        return; /* one at a time; the one out reports */
    h->live_bev = bufferevent_socket_new(h->base, -1,
                                         BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    SL_REQUIRE(h->live_bev != NULL);
    struct timeval limit = { LIVENESS_TIMEOUT_MS / 1000, (LIVENESS_TIMEOUT_MS % 1000) * 1000 };
    bufferevent_set_timeouts(h->live_bev, NULL, &limit); /* the write timeout bounds connect */
    bufferevent_setcb(h->live_bev, NULL, NULL, live_event, h);
    /* Callbacks are deferred, so even a failure found at once is reported from the loop. */
    if (bufferevent_socket_connect_hostname(h->live_bev, NULL, AF_UNSPEC, h->host, h->port) != 0)
        bufferevent_trigger_event(h->live_bev, BEV_EVENT_ERROR, 0);
}

/* No process to end: the GET stream closes and the session is deleted, then what is in flight
 * is failed, from the event loop (never from inside the caller's call). */
static void http_stop(struct up_transport *t, int grace_ms)
{
    struct up_http *h = http_of(t);
    (void)grace_ms;
    if (h->stage != RUNNING)
        return;
    h->stage = STOP_ASKED;
    struct timeval now = { 0, 0 };
    evtimer_add(h->stop_ev, &now);
}

/* A POST is written as it comes (its connection buffers it): nothing waits here. */
static size_t http_out_len(const struct up_transport *t)
{
    (void)t;
    return 0;
}

/* The client's output is full (a client on a pipe that stops reading): the event streams in
 * progress are not read until it drains, as a stdio child's output is not (chan_pause). Without
 * this the GET stream or a call's notifications would pile up in that output without bound. A
 * JSON reply is read on (conn_holdable); a stream that starts meanwhile is held once its head
 * is read (conn_read). Called at every message sent to the client: cheap when nothing changes. */
static void http_pause(struct up_transport *t, bool paused)
{
    struct up_http *h = http_of(t);
    if (h->paused == paused)
        return;
    h->paused = paused;
    for (struct uconn *c = h->conns; c; c = c->next)
        if (!paused || conn_holdable(c))
            conn_hold(c, paused);
}

static void http_free(struct up_transport *t);

static const struct up_transport_ops http_ops = {
    .send = http_send,
    .cancel = http_cancel,
    .set_version = http_set_version,
    .stop = http_stop,
    .out_len = http_out_len,
    .pause = http_pause,
    .free = http_free,
    .liveness = http_liveness,
};

struct up_transport *up_http_new(struct event_base *base, const char *url, SSL_CTX *tls,
                                 int read_timeout_s, const struct params *marks,
                                 const struct up_transport_cbs *cbs, void *arg, char *err,
                                 size_t errlen)
{
    struct evhttp_uri *uri = evhttp_uri_parse(url);
    const char *scheme = uri ? evhttp_uri_get_scheme(uri) : NULL;
    const char *host = uri ? evhttp_uri_get_host(uri) : NULL;
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    bool https = scheme && strcmp(scheme, "https") == 0;
    bool bad = uri == NULL || scheme == NULL || host == NULL || *host == '\0' ||
               (!https && strcmp(scheme, "http") != 0);
    for (const char *q = path; q && *q && !bad; q++) /* it goes into the request line */
        bad = (unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f;
    for (const char *q = query; q && *q && !bad; q++)
        bad = (unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f;
    if (bad || (https && tls == NULL)) {
        snprintf(err, errlen, bad ? "--upstream %s: expected http(s)://HOST[:PORT]/PATH"
                                  : "--upstream %s: https needs a TLS context", url);
        if (uri)
            evhttp_uri_free(uri);
        return NULL;
    }
    struct up_http *h = sl_xcalloc(1, sizeof(*h));
    h->tr.ops = &http_ops;
    h->base = base;
    h->read_timeout_s = read_timeout_s;
    h->host = sl_xstrdup(host);
    h->port = evhttp_uri_get_port(uri) > 0 ? evhttp_uri_get_port(uri) : (https ? 443 : 80);
    struct sl_buf b = { 0 };
    sl_buf_printf(&b, "%s%s%s", path && *path ? path : "/", query ? "?" : "", query ? query : "");
    h->path = sl_xstrndup(b.p, b.len);
    sl_buf_reset(&b);
    /* An IPv6 literal goes in brackets in Host (RFC 9110 §7.2). */
    sl_buf_printf(&b, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, h->port);
    h->hostport = sl_xstrndup(b.p, b.len);
    sl_buf_free(&b);
    evhttp_uri_free(uri);
    h->tls = https ? tls : NULL;
    h->wait_tail = &h->wait_head;
    h->marks = marks;
    h->cbs = *cbs;
    h->arg = arg;
    /* The client's own Authorization is never passed on (no token passthrough, PROTOCOL.md §7.8);
     * an upstream that wants one gets sluice's, from the environment (not argv: ps shows it). */
    const char *auth = getenv("SLUICE_UPSTREAM_AUTHORIZATION");
    sl_buf_printf(&h->head, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                            "Accept: application/json, text/event-stream\r\n",
                  h->path, h->hostport);
    if (auth && *auth && strpbrk(auth, "\r\n") == NULL) {
        sl_buf_printf(&h->head, "Authorization: %s\r\n", auth);
        struct sl_buf a = { 0 };
        sl_buf_printf(&a, "Authorization: %s\r\n", auth);
        h->auth = sl_xstrndup(a.p, a.len);
        sl_buf_free(&a);
    }
    h->stop_ev = evtimer_new(base, on_stop_tick, h);
    h->listen_ev = evtimer_new(base, on_listen_timer, h);
    SL_REQUIRE(h->stop_ev && h->listen_ev);
    h->listen_retry_ms = -1;
    return &h->tr;
}

/* Frees without callbacks: the upstream above is going away too. */
static void http_free(struct up_transport *t)
{
    struct up_http *h = http_of(t);
    while (h->conns) {
        if (h->conns->cur)
            post_free(h, h->conns->cur);
        conn_free(h->conns);
    }
    while (h->wait_head) {
        struct post *p = h->wait_head;
        h->wait_head = p->next;
        post_free(h, p);
    }
    resume_drop(h, NULL);
    if (h->live_bev)
        bufferevent_free(h->live_bev);
    event_free(h->stop_ev);
    event_free(h->listen_ev);
    free(h->auth);
    struct post *p;
    while ((p = sl_spare_take(&h->spare, sizeof(*p))) != NULL) {
        sl_buf_free(&p->req);
        sl_buf_free(&p->body);
        free(p);
    }
    free(h->host);
    free(h->path);
    free(h->hostport);
    sl_buf_free(&h->head);
    free(h);
}
