/* front_http.c: connections, the /mcp exchange, and the operational endpoints.
 *
 * Ownership: a conn owns its bufferevent and at most one exchange in flight (no pipelining:
 * the next request is read once the current one is answered). An exchange is a POST waiting for
 * the session's answer, or a GET stream. A modern exchange owns its one-request session; a
 * handshake-era session (struct hsess) owns its session and lists its exchanges.
 *
 * Nothing is freed inside a session's callback into us (the session's code is still on the
 * stack): dead exchanges and connections go to the reaper, an event that runs next. */
#include "front_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include "seal.h"

#include "chan.h"
#include "era.h"
#include "http1.h"
#include "log.h"
#include "metrics.h"
#include "params.h"
#include "tls.h"
#include "wout.h"

#define SESSION_BUCKETS 4096
#define OWNER_BUCKETS 1024
#define SLOW_READER_BYTES CHAN_HIGH_WATER

struct conn;
struct hsess;

struct xchg {
    struct front_http *fh;
    struct conn *c;              /* NULL once the client went away */
    struct hsess *hs;            /* handshake-era session, or NULL: */
    struct session *s;           /* ... then this one-request session is ours */
    char *rel;                   /* the request's id as JSON text; NULL for a GET stream */
    char relbuf[48];             /* rel, when it fits (most ids are numbers or short strings) */
    char method[32];             /* for metrics and the access log */
    char rid[24];
    bool sse, modern, done, dead, set_session;
    uint64_t t0;
    struct xchg *prev, *next;    /* in hs->xchgs */
    struct xchg *dead_next;
};

struct conn {
    struct front_http *fh;
    struct bufferevent *bev;
    struct wout wout;            /* plain connections: replies written in the turn they are made */
    struct event *timer;         /* fires at armed_us or before; the deadline is deadline_us */
    uint64_t deadline_us, armed_us;
    struct xchg *x;
    char peer[64];
    char *cert_subject;          /* verified client certificate, once read */
    bool keep_alive, closing, dead, in_request, sent_continue;
    struct conn *prev, *next, *dead_next;
};

/* A principal holding handshake-era sessions, and how many (--max-sessions-per-principal). */
struct owner {
    char *principal;
    size_t nsess;
    struct hsess *sessions;      /* its nsess sessions, through hs->o_next */
    struct owner *next;
};

struct hsess {
    char id[33];
    const char *principal;       /* its owner's */
    struct hsess *o_prev, *o_next; /* in owner->sessions */
    struct owner *owner;
    struct session *s;
    struct xchg *xchgs;          /* POSTs in flight */
    struct xchg *stream;         /* the GET stream */
    time_t last_used;
    struct hsess *hnext;
    struct hsess *older, *newer; /* in fh's list by last use */
};

struct front_http {
    struct event_base *base;
    struct session_env *env;
    struct front_http_opts o;
    struct evconnlistener *lis;
    int port;
    struct conn *conns;
    size_t nconns;
    struct hsess *buckets[SESSION_BUCKETS];
    size_t nsess;
    struct hsess *oldest, *newest; /* sessions by last use, for eviction */
    struct owner *owners[OWNER_BUCKETS];
    uint8_t owner_salt[16];        /* keys the owners' hash: a client cannot aim at a bucket */
    struct event *reaper, *sweeper;
    struct xchg *dead_x;
    struct sl_spare spare_x;     /* reaped exchanges, for the next requests */
    struct conn *dead_c;
    bool ready, draining;
    void (*drained)(void *arg);
    void *drained_arg;
    uint64_t next_rid;
    char rid_prefix[9];
};

static void check_drained(struct front_http *fh);

/* ===== writing responses ===== */

/* The head of a response into b (SSE and chunked when length < 0). */
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
        sl_buf_puts(b, "\r\nTransfer-Encoding: chunked\r\n");
    }
    if (!c->keep_alive)
        sl_buf_puts(b, "Connection: close\r\n");
    if (extra)
        sl_buf_puts(b, extra);
    sl_buf_puts(b, "\r\n");
}

static void write_head(struct conn *c, int status, const char *ctype, long length,
                       const char *extra)
{
    char store[1024];
    struct sl_buf b;
    sl_buf_on(&b, store, sizeof(store));
    put_head(&b, c, status, ctype, length, extra);
    evbuffer_add(bufferevent_get_output(c->bev), b.p, b.len);
    sl_buf_free(&b);
}

static void conn_close_later(struct conn *c);

/* A whole response, head and body added to the output at once; the connection closes after it
 * unless it stays alive. */
static void respond(struct conn *c, int status, const char *ctype, const char *body,
                    size_t len, const char *extra)
{
    char store[4096];
    struct sl_buf b;
    sl_buf_on(&b, store, sizeof(store));
    put_head(&b, c, status, ctype, (long)len, extra);
    if (b.len + len < sizeof(store)) {
        sl_buf_put(&b, body, len);
        evbuffer_add(bufferevent_get_output(c->bev), b.p, b.len);
    } else {
        evbuffer_add(bufferevent_get_output(c->bev), b.p, b.len);
        if (len)
            evbuffer_add(bufferevent_get_output(c->bev), body, len);
    }
    sl_buf_free(&b);
    if (!c->keep_alive)
        c->closing = true;
}

static void respond_rpc_error_data(struct conn *c, int status, const char *id, int code,
                                   const char *message, const char *data)
{
    struct sl_buf b = { 0 };
    jsonrpc_write_error(&b, sl_str_c(id ? id : "null"), code, message, data);
    respond(c, status, "application/json", b.p, b.len, NULL);
    sl_buf_free(&b);
}

static void respond_rpc_error(struct conn *c, int status, const char *id, int code,
                              const char *message)
{
    respond_rpc_error_data(c, status, id, code, message, NULL);
}

/* ===== exchanges ===== */

static void xchg_kill(struct xchg *x)
{
    if (x->dead)
        return;
    x->dead = true;
    if (x->c && x->c->x == x)
        x->c->x = NULL;
    x->c = NULL;
    if (x->hs) {
        if (x->hs->stream == x)
            x->hs->stream = NULL;
        else {
            if (x->prev)
                x->prev->next = x->next;
            else
                x->hs->xchgs = x->next;
            if (x->next)
                x->next->prev = x->prev;
        }
    }
    x->dead_next = x->fh->dead_x;
    x->fh->dead_x = x;
    event_active(x->fh->reaper, 0, 0);
}

static void access_log(struct xchg *x, int status)
{
    metrics_request(sl_str_c(x->method), status);
    double ms = (double)(sl_mono_us() - x->t0) / 1000.0;
    if (status >= 400)
        sl_info("%s %s -> %d in %.1f ms", x->rid, x->method, status, ms);
    else
        sl_debug("%s %s -> %d in %.1f ms", x->rid, x->method, status, ms);
}

static int status_for(const struct xchg *x, int code)
{
    if (!x->modern || code == 0)
        return 200;
    switch (code) {
    case JSONRPC_METHOD_NOT_FOUND:
        return 404; /* 2026: MUST be 404 (PROTOCOL.md §1.9) */
    case JSONRPC_PARSE_ERROR:
    case JSONRPC_INVALID_REQUEST:
    case -32020:
    case -32021:
    case -32022:
        return 400;
    default:
        return 200;
    }
}

static void xchg_finish(struct xchg *x, int status)
{
    access_log(x, status);
    struct conn *c = x->c;
    x->done = true;
    xchg_kill(x);
    if (c) {
        if (!c->keep_alive)
            c->closing = true;
        /* Not conn_next() here: we may be inside the session's own call, and the next request
         * could be for the same session. */
        bufferevent_trigger(c->bev, EV_READ, BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
    }
    if (x->fh->draining)
        check_drained(x->fh);
}

static void sse_event(struct conn *c, struct sl_str line)
{
    struct evbuffer *out = bufferevent_get_output(c->bev);
    evbuffer_add_printf(out, "%zx\r\nevent: message\ndata: ", line.len + 23);
    evbuffer_add(out, line.p, line.len);
    evbuffer_add(out, "\n\n\r\n", 4);
}

static void sse_start(struct xchg *x, const char *extra)
{
    write_head(x->c, 200, "text/event-stream", -1, extra);
    x->sse = true;
}

static const char sse_headers[] = "Cache-Control: no-cache, no-transform\r\n"
                                  "X-Accel-Buffering: no\r\n";

static void session_header(struct xchg *x, char *buf, size_t len, bool sse)
{
    const char *parts[] = {
        sse ? sse_headers : "",
        x->set_session ? "Mcp-Session-Id: " : "X-Request-Id: ",
        x->set_session ? x->hs->id : x->rid,
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

/* One message of the session for exchange x. */
static void deliver_msg(struct xchg *x, bool final, int code, struct sl_str line);

static void deliver(struct xchg *x, bool final, int code, struct sl_str line)
{
    sl_log_set_request(x->rid);
    deliver_msg(x, final, code, line);
    sl_log_set_request(NULL);
}

static void deliver_msg(struct xchg *x, bool final, int code, struct sl_str line)
{
    if (x->c == NULL) {
        if (final)
            xchg_finish(x, 499); /* nobody to tell: the client went away */
        return;
    }
    char extra[256];
    if (!x->sse && final) {
        int status = status_for(x, code);
        session_header(x, extra, sizeof(extra), false);
        respond(x->c, status, "application/json", line.p, line.len, extra);
        xchg_finish(x, status);
        return;
    }
    if (!x->sse) {
        session_header(x, extra, sizeof(extra), true);
        sse_start(x, extra);
    }
    sse_event(x->c, line);
    if (evbuffer_get_length(bufferevent_get_output(x->c->bev)) > SLOW_READER_BYTES) {
        sl_warn("%s: the client does not read its event stream; closing it", x->rid);
        struct conn *c = x->c;
        x->c = NULL;
        c->x = NULL;
        conn_close_later(c);
    } else if (final) {
        evbuffer_add(bufferevent_get_output(x->c->bev), "0\r\n\r\n", 5);
        xchg_finish(x, 200);
    }
}

/* A modern exchange's session writes here: everything is about its one request. */
static void modern_send(void *arg, struct sl_str rel, bool final, int code, struct sl_str line)
{
    struct xchg *x = arg;
    (void)rel;
    if (!x->done)
        deliver(x, final, code, line);
}

static size_t no_out_len(void *arg)
{
    (void)arg;
    return 0;
}

static const struct session_io modern_io = { .send = modern_send, .out_len = no_out_len };

/* A handshake-era session writes here: to the POST whose request the message belongs to, else
 * to the GET stream, else nowhere (the client opened no stream to receive it). */
static void legacy_send(void *arg, struct sl_str rel, bool final, int code, struct sl_str line)
{
    struct hsess *hs = arg;
    for (struct xchg *x = hs->xchgs; x && rel.p; x = x->next) {
        if (!x->done && sl_str_eq_c(rel, x->rel)) {
            deliver(x, final, code, line);
            return;
        }
    }
    if (hs->stream && hs->stream->c) {
        sse_event(hs->stream->c, line);
        return;
    }
    sl_debug("session %.8s: no open stream for a message; dropped", hs->id);
}

/* A held call the client cancelled gets no response (PROTOCOL.md §4.4), but its POST is over:
 * the event stream ends, and the exchange leaves the session (or it would never expire). */
static void legacy_ended(void *arg, struct sl_str rel)
{
    struct hsess *hs = arg;
    for (struct xchg *x = hs->xchgs; x && rel.p; x = x->next) {
        if (!x->done && sl_str_eq_c(rel, x->rel)) {
            if (x->c == NULL) {
                xchg_finish(x, 499);
            } else if (x->sse) {
                evbuffer_add(bufferevent_get_output(x->c->bev), "0\r\n\r\n", 5);
                xchg_finish(x, 200);
            } else {
                char extra[256];
                session_header(x, extra, sizeof(extra), true);
                sse_start(x, extra);
                evbuffer_add(bufferevent_get_output(x->c->bev), "0\r\n\r\n", 5);
                xchg_finish(x, 200);
            }
            return;
        }
    }
}

static const struct session_io legacy_io = { .send = legacy_send, .out_len = no_out_len,
                                              .ended = legacy_ended };

static struct xchg *xchg_new(struct conn *c, const char *rid, struct sl_str method)
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

static void xchg_set_rel(struct xchg *x, const struct sl_buf *id)
{
    if (id->len < sizeof(x->relbuf)) {
        memcpy(x->relbuf, id->p, id->len);
        x->relbuf[id->len] = '\0';
        x->rel = x->relbuf;
    } else {
        x->rel = sl_xstrndup(id->p, id->len);
    }
}

/* ===== handshake-era sessions ===== */

static struct hsess **sess_bucket(struct front_http *fh, const char *id)
{
    unsigned v = 0; /* the id's first 4 lowercase hex digits: random, so spread evenly (other
                     * bytes, in an id that exists nowhere, land in some bucket all the same) */
    for (int i = 0; i < 4; i++)
        v = v << 4 | (unsigned)(id[i] <= '9' ? id[i] - '0' : id[i] - 'a' + 10);
    return &fh->buckets[v % SESSION_BUCKETS];
}

/* Two 32-character ids, compared in time that does not depend on where they differ (as
 * CRYPTO_memcmp, four words rather than 32 bytes): a guessed id learns nothing from timing. */
static bool sess_id_eq(const char *a, const char *b)
{
    uint64_t diff = 0;
    for (size_t i = 0; i < 32; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        diff |= x ^ y;
    }
    return diff == 0;
}

static struct hsess *sess_find(struct front_http *fh, struct sl_str id)
{
    /* Any 32 bytes: ids are minted as lowercase hex, so anything else finds no equal, and the
     * bucket of any bytes is a bucket. */
    if (id.len != 32)
        return NULL;
    for (struct hsess *hs = *sess_bucket(fh, id.p); hs; hs = hs->hnext)
        if (sess_id_eq(hs->id, id.p))
            return hs;
    return NULL;
}

static struct owner **owner_bucket(struct front_http *fh, const char *principal)
{
    uint8_t h[SEAL_DIGEST_LEN];
    struct sl_buf b = { 0 };
    sl_buf_put(&b, fh->owner_salt, sizeof(fh->owner_salt));
    sl_buf_puts(&b, principal);
    seal_sha256(b.p, b.len, h);
    sl_buf_free(&b);
    uint32_t v;
    memcpy(&v, h, sizeof(v));
    return &fh->owners[v % OWNER_BUCKETS];
}

/* The principal's record, or NULL when it holds no session. */
static struct owner *owner_find(struct front_http *fh, const char *principal)
{
    for (struct owner *o = *owner_bucket(fh, principal); o; o = o->next)
        if (strcmp(o->principal, principal) == 0)
            return o;
    return NULL;
}

static struct owner *owner_get(struct front_http *fh, const char *principal)
{
    struct owner *o = owner_find(fh, principal);
    if (o)
        return o;
    struct owner **b = owner_bucket(fh, principal);
    o = sl_xcalloc(1, sizeof(*o));
    o->principal = sl_xstrndup(principal, strlen(principal));
    o->next = *b;
    *b = o;
    return o;
}

static void owner_put(struct front_http *fh, struct owner *o)
{
    if (--o->nsess > 0)
        return;
    for (struct owner **pp = owner_bucket(fh, o->principal); *pp; pp = &(*pp)->next) {
        if (*pp == o) {
            *pp = o->next;
            break;
        }
    }
    free(o->principal);
    free(o);
}

static void lru_unlink(struct front_http *fh, struct hsess *hs)
{
    *(hs->older ? &hs->older->newer : &fh->oldest) = hs->newer;
    *(hs->newer ? &hs->newer->older : &fh->newest) = hs->older;
    hs->older = hs->newer = NULL;
}

static void lru_append(struct front_http *fh, struct hsess *hs)
{
    hs->older = fh->newest;
    hs->newer = NULL;
    *(fh->newest ? &fh->newest->newer : &fh->oldest) = hs;
    fh->newest = hs;
}

/* A request for the session: it becomes the most recently used. */
static void sess_touch(struct front_http *fh, struct hsess *hs)
{
    hs->last_used = time(NULL);
    lru_unlink(fh, hs);
    lru_append(fh, hs);
}

/* Nothing in flight: no POST or stream open, no call held, forwarded or observed. Only such a
 * session is ever ended without its client asking. */
static bool sess_idle(const struct hsess *hs)
{
    return hs->xchgs == NULL && hs->stream == NULL && session_busy(hs->s) == 0;
}

static struct hsess *sess_new(struct front_http *fh, const char *principal)
{
    struct hsess *hs = sl_xcalloc(1, sizeof(*hs));
    uint8_t raw[16];
    SL_REQUIRE(RAND_bytes(raw, sizeof(raw)) == 1);
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(hs->id + 2 * i, 3, "%02x", raw[i]);
    hs->owner = owner_get(fh, principal);
    hs->owner->nsess++;
    hs->o_next = hs->owner->sessions;
    if (hs->o_next)
        hs->o_next->o_prev = hs;
    hs->owner->sessions = hs;
    hs->principal = hs->owner->principal;
    hs->s = session_new(fh->base, fh->env, &legacy_io, hs, sl_str_c(principal));
    session_start(hs->s);
    hs->last_used = time(NULL);
    struct hsess **b = sess_bucket(fh, hs->id);
    hs->hnext = *b;
    *b = hs;
    lru_append(fh, hs);
    fh->nsess++;
    return hs;
}

static void sess_free(struct front_http *fh, struct hsess *hs)
{
    for (struct hsess **pp = sess_bucket(fh, hs->id); *pp; pp = &(*pp)->hnext) {
        if (*pp == hs) {
            *pp = hs->hnext;
            break;
        }
    }
    fh->nsess--;
    lru_unlink(fh, hs);
    while (hs->xchgs) {
        struct xchg *x = hs->xchgs;
        if (x->c && x->sse)
            evbuffer_add(bufferevent_get_output(x->c->bev), "0\r\n\r\n", 5);
        else if (x->c)
            respond_rpc_error(x->c, 404, x->rel, -32001, "Session terminated");
        xchg_finish(x, 404);
    }
    if (hs->stream) {
        if (hs->stream->c)
            evbuffer_add(bufferevent_get_output(hs->stream->c->bev), "0\r\n\r\n", 5);
        xchg_finish(hs->stream, 200);
    }
    session_free(hs->s);
    if (hs->o_prev)
        hs->o_prev->o_next = hs->o_next;
    else
        hs->owner->sessions = hs->o_next;
    if (hs->o_next)
        hs->o_next->o_prev = hs->o_prev;
    owner_put(fh, hs->owner);
    free(hs);
}

/* The table is full: the least recently used idle session ends to make room (its client's next
 * request gets 404 and a client initializes again, as after an idle expiry). A busy one met on
 * the way counts as used, so the next search does not walk past it again. Returns whether one
 * was ended. */
static bool sess_evict_idle(struct front_http *fh, const char *rid)
{
    for (size_t n = fh->nsess; n > 0 && fh->oldest; n--) {
        struct hsess *hs = fh->oldest;
        if (!sess_idle(hs)) {
            lru_unlink(fh, hs);
            lru_append(fh, hs);
            continue;
        }
        sl_info("%s: session %.8s of %s ended to make room (--max-sessions %zu, least recently "
                "used, nothing in flight)", rid, hs->id, hs->principal, fh->o.max_sessions);
        sess_free(fh, hs);
        return true;
    }
    return false;
}

/* A principal at its cap: its own least recently used idle session ends to make room (a client
 * that reloads, such as MCP Inspector, opens a new session without ending the old one). The walk
 * is over that principal's sessions only, at most its cap. Returns whether one was ended. */
static bool sess_evict_own_idle(struct front_http *fh, struct owner *o, const char *rid)
{
    struct hsess *lru = NULL;
    for (struct hsess *hs = o->sessions; hs; hs = hs->o_next)
        if (sess_idle(hs) && (lru == NULL || hs->last_used < lru->last_used))
            lru = hs;
    if (lru == NULL)
        return false;
    sl_info("%s: session %.8s of %s ended to make room (--max-sessions-per-principal %zu, its "
            "least recently used, nothing in flight)", rid, lru->id, lru->principal,
            fh->o.max_sessions_per_principal);
    sess_free(fh, lru);
    return true;
}

/* Whether principal may open another session: 0, or the HTTP status of the refusal with its
 * message in msg. One principal is held to its own cap before it can fill the table, making room
 * from its own idle sessions first; a full table makes room from idle sessions before it refuses
 * anyone. With --principal anonymous every client is the same principal, so there the table's
 * own limit is the only one (a per-principal cap would be a far smaller global one). */
static int sess_admit(struct front_http *fh, const char *principal, const char *rid, char *msg,
                      size_t msglen)
{
    struct owner *o = owner_find(fh, principal);
    if (fh->o.principal != PRINCIPAL_ANONYMOUS && o &&
        o->nsess >= fh->o.max_sessions_per_principal && !sess_evict_own_idle(fh, o, rid)) {
        snprintf(msg, msglen, "Too many sessions for this principal (limit %zu, "
                 "--max-sessions-per-principal), none of them idle; end unused sessions with "
                 "DELETE",
                 fh->o.max_sessions_per_principal);
        return 429;
    }
    if (fh->nsess >= fh->o.max_sessions && !sess_evict_idle(fh, rid)) {
        snprintf(msg, msglen, "Too many sessions (limit %zu, --max-sessions), none of them "
                 "idle; try again later", fh->o.max_sessions);
        return 503;
    }
    return 0;
}

/* Sessions unused for session_idle_s, with nothing in flight, are forgotten. */
static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    struct front_http *fh = arg;
    time_t now = time(NULL);
    for (size_t b = 0; b < SESSION_BUCKETS; b++) {
        struct hsess *hs = fh->buckets[b];
        while (hs) {
            struct hsess *next = hs->hnext;
            if (now - hs->last_used > fh->o.session_idle_s && sess_idle(hs)) {
                sl_info("session %.8s expired after %d s without use", hs->id,
                        fh->o.session_idle_s);
                sess_free(fh, hs);
            }
            hs = next;
        }
    }
}

/* ===== the principal ===== */

/* Returns 0 with the principal, or an HTTP status. */
static int principal_of(struct conn *c, const struct http1_head *h, struct sl_buf *out)
{
    struct front_http *fh = c->fh;
    struct sl_str v;
    switch (fh->o.principal) {
    case PRINCIPAL_ANONYMOUS:
        sl_buf_puts(out, "anonymous");
        return 0;
    case PRINCIPAL_CERT:
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
    case PRINCIPAL_BEARER: {
        if (http1_field(h, HTTP1_AUTHORIZATION, &v) != 1 || v.len < 8 ||
            strncasecmp(v.p, "Bearer ", 7) != 0)
            return 401;
        uint8_t d[SEAL_DIGEST_LEN];
        seal_sha256(v.p + 7, v.len - 7, d);
        sl_buf_puts(out, "bearer:");
        sl_hex_encode(out, d, 16);
        return 0;
    }
    case PRINCIPAL_HEADER:
        if (http1_header(h, fh->o.principal_header, &v) != 1 || v.len == 0 || v.len > 256)
            return 401;
        sl_buf_puts(out, "header:");
        sl_buf_put(out, v.p, v.len);
        return 0;
    }
    return 401;
}

/* ===== /mcp ===== */

static bool origin_ok(struct front_http *fh, const struct http1_head *h)
{
    struct sl_str v;
    int n = http1_field(h, HTTP1_ORIGIN, &v);
    if (n == 0)
        return true; /* not a browser */
    if (n < 0)
        return false;
    for (size_t i = 0; i < fh->o.norigins; i++)
        if (sl_str_eq_c(v, fh->o.origins[i]))
            return true;
    return false;
}

/* type, the wildcard of its major type (major), or any type. */
static bool accepts(struct sl_str accept, const char *type, const char *major)
{
    return http1_list_has(accept, type) || http1_list_has(accept, major) ||
           http1_list_has(accept, "*/*");
}

/* Header values that mirror the body (2026-07-28): "=?base64?...?=" is decoded first. */
static bool header_matches(const struct http1_head *h, enum http1_field f, struct sl_str body)
{
    struct sl_str v;
    if (http1_field(h, f, &v) != 1)
        return false;
    return params_header_equals(v, body);
}

static const char *mirrored_name_key(struct sl_str method)
{
    if (sl_str_eq_c(method, "tools/call") || sl_str_eq_c(method, "prompts/get"))
        return "name";
    if (sl_str_eq_c(method, "resources/read"))
        return "uri";
    return NULL;
}

static int head_get(const char *name, struct sl_str *value, void *arg)
{
    return http1_header(arg, name, value);
}

/* The 2026-07-28 header rules: the body is the truth, and the headers must agree with it
 * (Mcp-Param-* too, for the tools whose schemas mark arguments). */
static const char *modern_header_problem(struct front_http *fh, const struct http1_head *h,
                                         const struct jsonrpc_msg *m,
                                         const struct era_envelope *env)
{
    if (!header_matches(h, HTTP1_MCP_PROTOCOL_VERSION, sl_str_c(env->version)))
        return "Header mismatch: MCP-Protocol-Version does not match the request's "
               "_meta protocolVersion";
    if (!header_matches(h, HTTP1_MCP_METHOD, m->method))
        return "Header mismatch: Mcp-Method does not match the body's method";
    const char *key = mirrored_name_key(m->method);
    if (key) {
        const struct json *v = json_get(m->params, key);
        if (v == NULL || v->type != JSON_STRING || !header_matches(h, HTTP1_MCP_NAME, v->u.str))
            return "Header mismatch: Mcp-Name does not match the body";
        if (sl_str_eq_c(m->method, "tools/call"))
            return params_check(upstream_params(fh->env->up), v->u.str,
                                json_get(m->params, "arguments"), head_get, (void *)h);
    }
    return NULL;
}

static void mcp_post(struct conn *c, const struct http1_head *h, const char *body, size_t len,
                     const char *rid, const char *principal)
{
    struct front_http *fh = c->fh;
    struct sl_str v;
    if (http1_field(h, HTTP1_CONTENT_TYPE, &v) != 1 || !http1_list_has(v, "application/json"))
        return respond_rpc_error(c, 415, NULL, JSONRPC_INVALID_REQUEST,
                                 "Unsupported Media Type: Content-Type must be application/json");
    if (http1_field(h, HTTP1_ACCEPT, &v) != 1 || !accepts(v, "application/json", "application/*") ||
        !accepts(v, "text/event-stream", "text/*"))
        return respond_rpc_error(c, 406, NULL, JSONRPC_INVALID_REQUEST,
                                 "Not Acceptable: Accept must list application/json and "
                                 "text/event-stream");
    struct jsonrpc_msg *m;
    struct jsonrpc_parse_error perr;
    if (jsonrpc_parse(body, len, &m, &perr) != 0) {
        sl_info("%s: refused body: %s", rid, perr.msg);
        metrics_request(SL_STR("other"), 400);
        return respond_rpc_error(c, 400, perr.id, perr.code,
                                 perr.code == JSONRPC_PARSE_ERROR ? "Parse error"
                                                                  : "Invalid Request");
    }
    char idstore[64];
    struct sl_buf idb, data = { 0 };
    sl_buf_on(&idb, idstore, sizeof(idstore));
    if (m->id)
        json_write(&idb, m->id);
    struct era_envelope env = { 0 };
    int code = 0;
    const char *msg = NULL;
    bool is_call = m->kind == JSONRPC_REQUEST || m->kind == JSONRPC_NOTIFICATION;
    struct sl_str method = m->kind == JSONRPC_REQUEST ? m->method
                           : m->kind == JSONRPC_NOTIFICATION ? SL_STR("notification")
                                                              : SL_STR("response");
    int bad = 0;
    const char *why = NULL;
    if (is_call && era_read_envelope(m->params, &env, &code, &msg, &data) != 0) {
        bad = 400, why = msg;
    } else if (is_call && env.claimed && (why = modern_header_problem(fh, h, m, &env)) != NULL) {
        bad = 400, code = -32020;
    } else if (!env.claimed && http1_field(h, HTTP1_MCP_PROTOCOL_VERSION, &v) == 1 &&
               sl_str_eq_c(v, ERA_MODERN_VERSION)) {
        bad = 400, code = JSONRPC_INVALID_PARAMS,
        why = "Invalid _meta envelope for protocol revision 2026-07-28: "
              "io.modelcontextprotocol/protocolVersion: missing";
    }
    if (bad) {
        metrics_request(method, bad);
        sl_info("%s: refused %.*s: %s", rid, (int)method.len, method.p, why);
        respond_rpc_error_data(c, bad, idb.len ? idb.p : NULL, code, why,
                               data.len ? data.p : NULL);
        goto out;
    }
    if (fh->draining && (env.claimed || m->kind == JSONRPC_REQUEST)) {
        /* New work is refused; answers that let work in flight finish are not (below). */
        c->keep_alive = false;
        metrics_request(method, 503);
        respond_rpc_error(c, 503, idb.len ? idb.p : NULL, -32000,
                          "Service Unavailable: shutting down");
        goto out;
    }
    if (env.claimed) {
        if (m->kind == JSONRPC_NOTIFICATION) { /* none is defined over HTTP in 2026 */
            metrics_request(method, 202);
            respond(c, 202, NULL, NULL, 0, NULL);
            goto out;
        }
        struct xchg *x = xchg_new(c, rid, method);
        x->modern = true;
        xchg_set_rel(x, &idb);
        x->s = session_new(fh->base, fh->env, &modern_io, x, sl_str_c(principal));
        session_start(x->s);
        session_input_modern(x->s, m, &env);
        m = NULL;
        goto out;
    }
    /* The handshake era: a session, made by initialize. */
    int has_sid = http1_field(h, HTTP1_MCP_SESSION_ID, &v);
    struct hsess *hs = NULL;
    bool init = m->kind == JSONRPC_REQUEST && sl_str_eq_c(m->method, "initialize");
    if (has_sid < 0 || (has_sid == 0 && !init)) {
        metrics_request(method, 400);
        respond_rpc_error(c, 400, idb.len ? idb.p : NULL, -32000,
                          "Bad Request: Mcp-Session-Id header is required");
        goto out;
    }
    if (has_sid == 1) {
        hs = sess_find(fh, v);
        if (hs == NULL || strcmp(hs->principal, principal) != 0) {
            metrics_request(method, 404);
            respond_rpc_error(c, 404, idb.len ? idb.p : NULL, -32001, "Session not found");
            goto out;
        }
        if (init) {
            metrics_request(method, 400);
            respond_rpc_error(c, 400, idb.p, JSONRPC_INVALID_REQUEST,
                              "Invalid Request: Server already initialized");
            goto out;
        }
    } else {
        char text[160];
        int st = sess_admit(fh, principal, rid, text, sizeof(text));
        if (st) {
            sl_info("%s: initialize refused for %s: %s", rid, principal, text);
            metrics_request(method, st);
            respond_rpc_error(c, st, idb.p, -32000, text);
            goto out;
        }
        hs = sess_new(fh, principal);
        sl_info("%s: session %.8s opened for %s", rid, hs->id, principal);
    }
    sess_touch(fh, hs);
    if (m->kind != JSONRPC_REQUEST) {
        metrics_request(method, 202);
        respond(c, 202, NULL, NULL, 0, NULL);
        session_input(hs->s, m);
        m = NULL;
        goto out;
    }
    struct xchg *x = xchg_new(c, rid, method);
    x->hs = hs;
    xchg_set_rel(x, &idb);
    x->set_session = init;
    x->next = hs->xchgs;
    if (hs->xchgs)
        hs->xchgs->prev = x;
    hs->xchgs = x;
    session_input(hs->s, m);
    m = NULL;
out:
    jsonrpc_msg_free(m);
    sl_buf_free(&idb);
    sl_buf_free(&data);
}

static void mcp_get(struct conn *c, const struct http1_head *h, const char *rid,
                    const char *principal)
{
    struct sl_str v;
    int has_sid = http1_field(h, HTTP1_MCP_SESSION_ID, &v);
    if (has_sid != 1) /* 2026-07-28 has no GET; a handshake-era stream needs its session */
        return respond(c, 405, NULL, NULL, 0, "Allow: POST\r\n");
    struct hsess *hs = sess_find(c->fh, v);
    if (hs == NULL || strcmp(hs->principal, principal) != 0)
        return respond_rpc_error(c, 404, NULL, -32001, "Session not found");
    if (http1_field(h, HTTP1_ACCEPT, &v) != 1 || !accepts(v, "text/event-stream", "text/*"))
        return respond_rpc_error(c, 406, NULL, JSONRPC_INVALID_REQUEST,
                                 "Not Acceptable: Accept must list text/event-stream");
    if (hs->stream)
        return respond_rpc_error(c, 409, NULL, JSONRPC_INVALID_REQUEST,
                                 "Conflict: only one stream per session");
    struct xchg *x = xchg_new(c, rid, SL_STR("GET"));
    x->hs = hs;
    hs->stream = x;
    sess_touch(c->fh, hs);
    char extra[160];
    snprintf(extra, sizeof(extra), "%sX-Request-Id: %s\r\n", sse_headers, rid);
    sse_start(x, extra);
}

static void mcp_delete(struct conn *c, const struct http1_head *h, const char *principal)
{
    struct sl_str v;
    if (http1_field(h, HTTP1_MCP_SESSION_ID, &v) != 1)
        return respond(c, 405, NULL, NULL, 0, "Allow: POST\r\n");
    struct hsess *hs = sess_find(c->fh, v);
    if (hs == NULL || strcmp(hs->principal, principal) != 0)
        return respond_rpc_error(c, 404, NULL, -32001, "Session not found");
    sl_info("session %.8s ended by the client", hs->id);
    sess_free(c->fh, hs);
    respond(c, 200, NULL, NULL, 0, NULL);
}

static void mcp(struct conn *c, const struct http1_head *h, const char *body, size_t len,
                const char *rid)
{
    struct front_http *fh = c->fh;
    if (!origin_ok(fh, h)) {
        sl_warn("%s: refused a request from Origin not in --allow-origin", rid);
        return respond_rpc_error(c, 403, NULL, JSONRPC_INVALID_REQUEST,
                                 "Forbidden: Origin not allowed");
    }
    struct sl_str sid;
    bool answering = sl_str_eq_c(h->method, "POST") && http1_field(h, HTTP1_MCP_SESSION_ID, &sid) == 1;
    if ((fh->draining && !answering) || !fh->ready) {
        /* While draining, only POSTs to an existing session get further: the answer to a held
         * call's question must still arrive (mcp_post refuses new requests). */
        c->keep_alive = false;
        return respond_rpc_error(c, 503, NULL, -32000, fh->draining
                                                           ? "Service Unavailable: shutting down"
                                                           : "Service Unavailable: upstream not ready");
    }
    char pstore[160]; /* "bearer:" and a digest's hex, or a short name: no allocation */
    struct sl_buf principal;
    sl_buf_on(&principal, pstore, sizeof(pstore));
    int st = principal_of(c, h, &principal);
    if (st) {
        sl_info("%s: no principal (%s)", rid, fh->o.principal == PRINCIPAL_CERT
                                                  ? "no verified client certificate"
                                                  : "no credentials");
        respond_rpc_error(c, st, NULL, -32000, "Unauthorized");
    } else if (sl_str_eq_c(h->method, "POST")) {
        mcp_post(c, h, body, len, rid, principal.p);
    } else if (sl_str_eq_c(h->method, "GET")) {
        mcp_get(c, h, rid, principal.p);
    } else if (sl_str_eq_c(h->method, "DELETE")) {
        mcp_delete(c, h, principal.p);
    } else {
        respond(c, 405, NULL, NULL, 0, "Allow: POST, GET, DELETE\r\n");
    }
    sl_buf_free(&principal);
}

static void ops(struct conn *c, const struct http1_head *h)
{
    struct front_http *fh = c->fh;
    if (!sl_str_eq_c(h->method, "GET"))
        return respond(c, 405, NULL, NULL, 0, "Allow: GET\r\n");
    if (sl_str_eq_c(h->path, "/healthz"))
        return respond(c, 200, "text/plain", "ok\n", 3, NULL);
    if (sl_str_eq_c(h->path, "/readyz")) {
        bool ready = fh->ready && !fh->draining && fh->env->policy != NULL;
        return ready ? respond(c, 200, "text/plain", "ready\n", 6, NULL)
                     : respond(c, 503, "text/plain", "not ready\n", 10, NULL);
    }
    struct sl_buf b = { 0 };
    struct metrics_gauges g = { .connections = fh->nconns, .sessions = fh->nsess,
                                .ready = fh->ready && !fh->draining };
    metrics_render(&b, &g);
    respond(c, 200, "text/plain; version=0.0.4", b.p, b.len, NULL);
    sl_buf_free(&b);
}

static void handle(struct conn *c, const struct http1_head *h, const char *body)
{
    struct front_http *fh = c->fh;
    char rid[8 + 1 + 21];
    memcpy(rid, fh->rid_prefix, 8);
    rid[8] = '-';
    sl_u64_dec(rid + 9, ++fh->next_rid);
    c->keep_alive = h->keep_alive && !fh->draining;
    sl_log_set_request(rid);
    if (sl_str_eq_c(h->path, "/mcp"))
        mcp(c, h, body, h->content_length, rid);
    else if (sl_str_eq_c(h->path, "/healthz") || sl_str_eq_c(h->path, "/readyz") ||
             sl_str_eq_c(h->path, "/metrics"))
        ops(c, h);
    else
        respond(c, 404, "text/plain", "not found\n", 10, NULL);
    sl_log_set_request(NULL);
}

/* ===== connections ===== */

static void conn_free(struct conn *c)
{
    struct front_http *fh = c->fh;
    if (c->x) {
        struct xchg *x = c->x;
        x->c = NULL;
        c->x = NULL;
        if (x->modern) {
            /* 2026-07-28: a closed stream is the request's cancellation (PROTOCOL.md §5.2). */
            sl_info("%s: the client closed the connection; the request is cancelled", x->rid);
            xchg_finish(x, 499);
        } else if (x->hs && x->hs->stream == x) {
            xchg_finish(x, 200);
        } else if (x->hs && x->rel && !x->done) {
            /* A handshake-era POST stays: a disconnect is not a cancellation there. But the
             * question it carried can no longer reach the person on this stream. */
            session_stream_lost(x->hs->s, sl_str_c(x->rel));
        }
    }
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
        check_drained(fh);
}

static void conn_close_later(struct conn *c)
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

static void on_reap(evutil_socket_t fd, short what, void *arg)
{
    struct front_http *fh = arg;
    while (fh->dead_c) {
        struct conn *c = fh->dead_c;
        fh->dead_c = c->dead_next;
        conn_free(c);
    }
    while (fh->dead_x) {
        struct xchg *x = fh->dead_x;
        fh->dead_x = x->dead_next;
        session_free(x->s);
        if (x->rel != x->relbuf)
            free(x->rel);
        if (!sl_spare_keep(&fh->spare_x, x, sizeof(*x)))
            free(x);
    }
}

/* The connection's one deadline: the request's, or the idle one. A keep-alive connection moves
 * it later at every response, and re-adding a timer costs a heap update each time; so a later
 * deadline only is noted, and the timer, when it fires early, is set again for the rest. An
 * earlier deadline (a request timeout shorter than the idle one) re-arms it at once. */
static void arm(struct conn *c, int seconds)
{
    uint64_t now = sl_mono_us();
    c->deadline_us = now + (uint64_t)seconds * 1000000u;
    if (c->armed_us <= c->deadline_us && evtimer_pending(c->timer, NULL))
        return;
    c->armed_us = c->deadline_us;
    struct timeval tv = { seconds, 0 };
    evtimer_add(c->timer, &tv);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
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
    if (c->in_request) {
        sl_info("%s: request not received within %d s; closing", c->peer,
                c->fh->o.request_timeout_s);
        c->keep_alive = false;
        respond(c, 408, "text/plain", "request timeout\n", 16, NULL);
        c->closing = true;
        bufferevent_disable(c->bev, EV_READ);
    } else {
        conn_close_later(c);
    }
}

static void refuse_head(struct conn *c, int status)
{
    c->keep_alive = false;
    respond(c, status, "text/plain", http1_reason(status), strlen(http1_reason(status)), NULL);
    c->closing = true;
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
        arm(c, c->fh->o.request_timeout_s);
    }
}

/* Reads and handles requests while the connection has no exchange in flight. */
static void conn_next(struct conn *c)
{
    struct front_http *fh = c->fh;
    while (!c->x && !c->closing && !c->dead) {
        struct evbuffer *in = bufferevent_get_input(c->bev);
        size_t avail = evbuffer_get_length(in);
        if (avail == 0) {
            c->in_request = false;
            arm(c, fh->o.idle_timeout_s);
            return;
        }
        /* A contiguous view of at most a head's worth; a body that goes beyond it is made
         * contiguous once, when it is complete (not at every read: that would be quadratic). */
        size_t look = avail < fh->o.max_head + 1 ? avail : fh->o.max_head + 1;
        const char *p = (const char *)evbuffer_pullup(in, (ev_ssize_t)look);
        struct http1_head h;
        ssize_t n = http1_parse_head(p, look, fh->o.max_head, &h);
        if (n == 0)
            return await_rest(c);
        if (n < 0)
            return refuse_head(c, (int)-n);
        if (h.content_length > fh->o.max_body)
            return refuse_head(c, 413);
        size_t total = (size_t)n + h.content_length;
        struct sl_str expect;
        if (avail < total && !c->sent_continue && http1_field(&h, HTTP1_EXPECT, &expect) == 1 &&
            http1_list_has(expect, "100-continue")) {
            evbuffer_add(bufferevent_get_output(c->bev), "HTTP/1.1 100 Continue\r\n\r\n", 25);
            c->sent_continue = true;
        }
        if (avail < total)
            return await_rest(c); /* the body is still coming */
        if (total > look) {
            p = (const char *)evbuffer_pullup(in, (ev_ssize_t)total);
            http1_parse_head(p, total, fh->o.max_head, &h); /* the slices moved */
        }
        c->sent_continue = false;
        c->in_request = false; /* the timer may fire meanwhile: c->x makes it wait */
        handle(c, &h, p + n);
        evbuffer_drain(in, total);
    }
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct conn *c = arg;
    if (c->x) {
        /* One request at a time; a client that piles up more is not read beyond the limits. */
        if (evbuffer_get_length(bufferevent_get_input(bev)) > c->fh->o.max_head + c->fh->o.max_body)
            bufferevent_disable(bev, EV_READ);
        return;
    }
    conn_next(c);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct conn *c = arg;
    wout_written(&c->wout);
    if (c->closing && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
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

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    struct front_http *fh = arg;
    (void)lis;
    if (fh->nconns >= fh->o.max_connections) {
        static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"
                                   "Content-Length: 0\r\nRetry-After: 1\r\n\r\n";
        if (fh->o.tls == NULL && send(fd, busy, sizeof(busy) - 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
            sl_debug("could not tell a refused connection why");
        evutil_closesocket(fd);
        metrics_request(SL_STR("other"), 503);
        sl_warn("connection refused: %zu connections open (--max-connections)", fh->nconns);
        return;
    }
    struct conn *c = sl_xcalloc(1, sizeof(*c));
    c->fh = fh;
    char addr[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, addr, sizeof(addr));
        port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof(addr));
        port = ntohs(in6->sin6_port);
    }
    (void)salen;
    snprintf(c->peer, sizeof(c->peer), "%s:%d", addr, port);
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
    arm(c, fh->o.request_timeout_s); /* a TLS handshake and the first request, in time */
    c->in_request = true;
}

/* ===== public ===== */

/* ADDR:PORT or [V6ADDR]:PORT, numeric only (no resolver at start), port 0 allowed. */
static int parse_listen(const char *s, struct sockaddr_storage *ss, int *sslen)
{
    const char *colon = strrchr(s, ':');
    if (colon == NULL || colon == s || colon[1] == '\0' || strlen(s) > 80)
        return -1;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port < 0 || port > 65535)
        return -1;
    char addr[81];
    snprintf(addr, sizeof(addr), "%.*s", (int)(colon - s), s);
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *in = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    size_t alen = strlen(addr);
    if (alen > 2 && addr[0] == '[' && addr[alen - 1] == ']') {
        addr[alen - 1] = '\0';
        if (inet_pton(AF_INET6, addr + 1, &in6->sin6_addr) != 1)
            return -1;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        *sslen = (int)sizeof(*in6);
        return 0;
    }
    if (inet_pton(AF_INET, addr, &in->sin_addr) != 1)
        return -1;
    in->sin_family = AF_INET;
    in->sin_port = htons((uint16_t)port);
    *sslen = (int)sizeof(*in);
    return 0;
}

struct front_http *front_http_new(struct event_base *base, struct session_env *env,
                                  const struct front_http_opts *o, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    int sslen;
    if (parse_listen(o->listen, &ss, &sslen) != 0) {
        snprintf(err, errlen, "--listen %s: expected ADDR:PORT (e.g. 127.0.0.1:8080)", o->listen);
        return NULL;
    }
    struct front_http *fh = sl_xcalloc(1, sizeof(*fh));
    fh->base = base;
    fh->env = env;
    fh->o = *o;
    fh->lis = evconnlistener_new_bind(base, on_accept, fh,
                                      LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
                                          LEV_OPT_CLOSE_ON_EXEC,
                                      511, (struct sockaddr *)&ss, sslen);
    if (fh->lis == NULL) {
        snprintf(err, errlen, "--listen %s: %s", o->listen, strerror(errno));
        free(fh);
        return NULL;
    }
    struct sockaddr_storage bound;
    socklen_t blen = sizeof(bound);
    getsockname(evconnlistener_get_fd(fh->lis), (struct sockaddr *)&bound, &blen);
    fh->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                 : ((struct sockaddr_in *)&bound)->sin_port);
    fh->reaper = event_new(base, -1, 0, on_reap, fh);
    fh->sweeper = event_new(base, -1, EV_PERSIST, on_sweep, fh);
    SL_REQUIRE(RAND_bytes(fh->owner_salt, sizeof(fh->owner_salt)) == 1);
    struct timeval every = { 30, 0 };
    event_add(fh->sweeper, &every);
    uint8_t raw[4];
    SL_REQUIRE(RAND_bytes(raw, sizeof(raw)) == 1);
    snprintf(fh->rid_prefix, sizeof(fh->rid_prefix), "%02x%02x%02x%02x", raw[0], raw[1], raw[2],
             raw[3]);
    return fh;
}

int front_http_port(const struct front_http *fh)
{
    return fh->port;
}

void front_http_set_ready(struct front_http *fh, bool ready)
{
    fh->ready = ready;
}

void front_http_broadcast(struct front_http *fh, struct jsonrpc_msg *msg)
{
    struct sl_buf b = { 0 };
    json_write(&b, msg->root);
    for (size_t i = 0; i < SESSION_BUCKETS; i++)
        for (struct hsess *hs = fh->buckets[i]; hs; hs = hs->hnext)
            if (hs->stream && hs->stream->c)
                sse_event(hs->stream->c, sl_buf_str(&b));
    sl_buf_free(&b);
}

/* In flight: POSTs waiting for an answer, and sessions with work (a held call, an observation). */
static size_t in_flight(struct front_http *fh)
{
    size_t n = 0;
    for (struct conn *c = fh->conns; c; c = c->next)
        if (c->x && !(c->x->hs && c->x->hs->stream == c->x))
            n++;
    for (size_t i = 0; i < SESSION_BUCKETS; i++)
        for (struct hsess *hs = fh->buckets[i]; hs; hs = hs->hnext)
            n += session_busy(hs->s);
    return n;
}

static void check_drained(struct front_http *fh)
{
    if (fh->drained == NULL || in_flight(fh) != 0)
        return;
    void (*done)(void *) = fh->drained;
    fh->drained = NULL;
    done(fh->drained_arg);
}

void front_http_drain(struct front_http *fh, void (*done)(void *arg), void *arg)
{
    if (fh->draining)
        return;
    fh->draining = true;
    /* No new connections. Open ones stay: a client answering a held call's question does so on
     * the connection it has (each closes after its next response). Everything that would start
     * new work gets 503, and /readyz says 503 so that load balancers send work elsewhere. The
     * GET streams end: they carry no work. */
    evconnlistener_free(fh->lis);
    fh->lis = NULL;
    for (struct conn *c = fh->conns; c; c = c->next) {
        if (c->x && c->x->hs && c->x->hs->stream == c->x) {
            evbuffer_add(bufferevent_get_output(c->bev), "0\r\n\r\n", 5);
            c->keep_alive = false;
            c->closing = true;
            xchg_finish(c->x, 200);
        }
    }
    fh->drained = done;
    fh->drained_arg = arg;
    check_drained(fh);
}

void front_http_free(struct front_http *fh)
{
    if (fh == NULL)
        return;
    for (size_t i = 0; i < SESSION_BUCKETS; i++)
        while (fh->buckets[i])
            sess_free(fh, fh->buckets[i]);
    while (fh->conns)
        conn_free(fh->conns);
    on_reap(-1, 0, fh);
    sl_spare_clear(&fh->spare_x, sizeof(struct xchg));
    if (fh->lis)
        evconnlistener_free(fh->lis);
    event_free(fh->reaper);
    event_free(fh->sweeper);
    free(fh);
}
