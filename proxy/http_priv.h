/* http_priv.h: what the pieces of the HTTP front share; included by them only.
 *
 *   front_http.c      the public API (front_http.h) and the wiring: listen, ready, broadcast,
 *                     drain, free, and the route of a request by its path
 *   http_conn.c       a connection: accept, TLS, reading heads and bodies, timers, keep-alive,
 *                     writing responses, the reaper
 *   http_exchange.c   an exchange: one request in flight and the session's messages about it,
 *                     as one JSON response or an event stream
 *   http_mcp.c        /mcp: Origin, media types, the headers against the body, era dispatch
 *   http_sessions.c   legacy sessions: Mcp-Session-Id, owners per principal, LRU
 *                     eviction, idle sweep, the POSTs and the GET stream of each session
 *   http_principal.c  who is asking (anonymous, certificate, bearer token, trusted header)
 *   http_ops.c        /healthz, /readyz, /metrics
 *   http_approve.c    /approve/: sluice's approval page (approval.h)
 *
 * Ownership: a conn owns its bufferevent and at most one exchange in flight (no pipelining:
 * the next request is read once the current one is answered). An exchange is a POST waiting for
 * the session's answer, or a GET stream. A modern exchange owns its one-request session; a
 * legacy session (struct hsess) owns its session and lists its exchanges.
 *
 * Nothing is freed inside a session's callback into us (the session's code is still on the
 * stack): dead exchanges and connections go to the reaper, an event that runs next. */
#ifndef SL_HTTP_PRIV_H
#define SL_HTTP_PRIV_H

#include <event2/listener.h>

#include "front_http.h"
#include "http1.h"
#include "wout.h"

struct areq;           /* an approval page request: http_approve.c */
struct conn;
struct hsess;          /* a legacy session: opaque, http_sessions.c */
struct http_sessions;  /* the table of them: opaque, http_sessions.c */

/* One request in flight (http_exchange.c). */
struct xchg {
    struct front_http *fh;
    struct conn *c;              /* NULL once the client went away */
    struct hsess *hs;            /* legacy session, or NULL: */
    struct session *s;           /* ... then this one-request session is ours */
    char *rel;                   /* the request's id as JSON text; NULL for a GET stream */
    char relbuf[48];             /* rel, when it fits (most ids are numbers or short strings) */
    char method[32];             /* for metrics and the access log */
    char rid[24];
    bool sse, modern, done, dead, set_session;
    uint64_t t0;
    struct xchg *prev, *next;    /* in the session's POSTs in flight (http_sessions.c) */
    struct xchg *dead_next;      /* in fh->dead_x, for the reaper */
};

/* One client connection (http_conn.c). */
struct conn {
    struct front_http *fh;
    struct bufferevent *bev;
    struct wout wout;            /* plain connections: replies written in the turn they are made */
    struct event *timer;         /* fires at armed_us or before; the deadline is deadline_us */
    uint64_t deadline_us, armed_us;
    struct xchg *x;              /* the exchange in flight, or NULL: the next request is read */
    char peer[64];
    char *cert_subject;          /* verified client certificate, once read */
    bool keep_alive, closing, dead, in_request, sent_continue;
    bool http10;                 /* the request is HTTP/1.0, which has no chunks: an event
                                  * stream goes out unframed and ends with the connection */
    bool linger;                 /* a refusal with the request unread: linger before closing */
    bool lingering;              /* ... now: our side shut, what arrives is discarded */
    bool read_paused;            /* a client piling up requests is not read until the
                                  * exchange is over (on_read) */
    bool out_paused;             /* a client not reading its answers is not read until
                                  * they drain (CONN_OUT_HIGH_WATER, http_conn.c) */
    bool waiting;                /* its request, still unread in the input, waits for the
                                    upstream to be ready (http_conn.c) */
    bool waited;                 /* ... and the wait is over: the request goes on as it is */
    uint64_t wait_until_us;      /* when that wait ends, however often it is woken and resumed;
                                  * 0: no request waits */
    char wait_sid[33];           /* the session the waiting request names, or "" */
    size_t head_len;             /* the request being read: its head's length, once the head is */
    size_t body_len;             /* here and valid, and its Content-Length (0 0: none yet) */
    struct conn *prev, *next, *dead_next;
};

struct front_http {
    struct event_base *base;
    struct session_env *env;
    struct front_http_opts o;
    struct evconnlistener *lis;
    int port;
    struct conn *conns;
    size_t nconns;
    struct http_sessions *sessions;
    struct event *reaper;
    struct xchg *dead_x;
    struct sl_spare spare_x;     /* reaped exchanges, for the next requests */
    struct conn *dead_c;
    bool ready, draining;
    char *unready_why;           /* front_http_set_unready_reason, or NULL */
    bool reachable;              /* the upstream's liveness probe passes (true without one) */
    struct event *wake;          /* lets the requests waiting for the upstream go on */
    bool loopback;               /* the listener's address is 127.0.0.0/8 or ::1 */
    void (*drained)(void *arg);
    void *drained_arg;
    uint64_t next_rid;
    char rid_prefix[9];
    struct areq *approvals;      /* approval page requests waiting for the store */
};

/* ===== front_http.c ===== */

/* A whole request is here (body: its content_length bytes): answer it or start its exchange. */
void http_route(struct conn *c, const struct http1_head *h, const char *body);
/* While draining: tells the caller of front_http_drain once nothing is in flight any more. */
void http_check_drained(struct front_http *fh);
/* The upstream takes work: ready (by main's word and its own) and reachable. */
bool http_serving(const struct front_http *fh);
/* c came in on a loopback address (127.0.0.0/8, ::1): also true on a wildcard listener, which a
 * browser on this machine reaches through 127.0.0.1. */
bool http_conn_local(const struct conn *c);

/* ===== http_conn.c ===== */

void conn_on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
                    int salen, void *arg);
/* The reaper's event callback (arg: fh): frees dead connections and exchanges. */
void conn_on_reap(evutil_socket_t fd, short what, void *arg);
/* Frees c now (front_http_free); its exchange, if any, loses its client. */
void conn_free(struct conn *c);
/* c's exchange loses its client, as when the client goes away: a modern request is cancelled,
 * a stream ends, a legacy POST stays (the question it carried is withdrawn). Returns whether the
 * exchange is over (then it must not be touched). */
bool conn_lose_exchange(struct conn *c);
/* Closes c at the reaper's next run; safe inside any callback, idempotent. */
void conn_close_later(struct conn *c);
/* The head of a response (length < 0: chunked, for an event stream). */
void conn_write_head(struct conn *c, int status, const char *ctype, long length,
                     const char *extra);
/* A whole response; the connection closes after it unless it stays alive. extra: more header
 * lines, each ending in CRLF, or NULL. */
void conn_respond(struct conn *c, int status, const char *ctype, const char *body, size_t len,
                  const char *extra);
/* A JSON-RPC error response: id is the request's id as JSON text (NULL: null), data JSON text
 * or NULL. Every JSON-RPC error the front answers by itself is written here. */
void conn_respond_rpc_error(struct conn *c, int status, const char *id, int code,
                            const char *message, const char *data);
/* The same with extra header lines (each ending in CRLF), or NULL. */
void conn_respond_error_with(struct conn *c, int status, const char *id, int code,
                             const char *message, const char *data, const char *extra);
/* The JSON-RPC code for an HTTP error status that has no more specific one: -32600 for what is
 * wrong with the request's shape, -32000 for the server's state (401, 408, 503). */
int conn_status_code(int status);
/* An error status with id null, that code, and the status's reason as the message: for the
 * refusals that know nothing more specific (MCP SDKs parse every error body as JSON-RPC). */
void conn_respond_status(struct conn *c, int status, const char *extra);
/* The same, counted in the metrics under method. */
void conn_refuse_rpc(struct conn *c, struct sl_str method, int status, const char *id, int code,
                     const char *message);
/* The last chunk of a chunked response (an event stream that ends); nothing for HTTP/1.0,
 * whose stream the close ends. */
void conn_end_chunks(struct conn *c);
/* c's request waits no more for the upstream: it is read and handled now (its own answer, or
 * 503 if the upstream is still not serving). No-op unless c is waiting. */
void conn_wait_end(struct conn *c);
/* c's exchange is over (c->x is NULL): a request the client already sent is read from the loop,
 * never from inside this call; else c waits, idle, for the next one. */
void conn_exchange_over(struct conn *c);

/* ===== http_exchange.c ===== */

/* A new exchange for c's request (rid: its request id; method: for metrics and the log). */
struct xchg *xchg_new(struct conn *c, const char *rid, struct sl_str method);
/* id: the request's id as JSON text, which the session's messages about it name. */
void xchg_set_rel(struct xchg *x, const struct sl_buf *id);
/* A modern request's exchange, with its own one-request session for principal. */
struct xchg *xchg_new_modern(struct conn *c, const char *rid, struct sl_str method,
                             const struct sl_buf *id, const char *principal);
/* The exchange is over (status for the access log); its connection reads the next request. */
void xchg_finish(struct xchg *x, int status);
/* Out of every list, to the reaper. Idempotent. */
void xchg_kill(struct xchg *x);
/* Frees a reaped exchange (its own session too), or keeps it for the next request. */
void xchg_free(struct xchg *x);
/* One message of the session about x's request; final: the response. code: JSON-RPC error
 * code of line, or 0. */
void xchg_deliver(struct xchg *x, bool final, int code, struct sl_str line);
/* x's request ends without a response (a cancelled held call): its event stream closes. */
void xchg_end_unanswered(struct xchg *x);
/* Opens x's response as an event stream; extra: more header lines. */
void xchg_start_stream(struct xchg *x, const char *extra);
/* One event on x's stream (x->c must be set). */
void xchg_send_event(struct xchg *x, struct sl_str line);
/* x is a legacy session's GET stream (not a request waiting for its answer). */
bool xchg_is_stream(const struct xchg *x);
extern const char xchg_sse_headers[];
/* A session_io out_len: nothing waits in a buffer of ours (responses go straight out). */
size_t xchg_out_len_none(void *arg);

/* ===== http_sessions.c ===== */

struct http_sessions *http_sessions_new(struct front_http *fh);
/* Ends every session (their exchanges finish); the table stays, empty. */
void http_sessions_end_all(struct http_sessions *t);
void http_sessions_free(struct http_sessions *t);
size_t http_sessions_count(const struct http_sessions *t);
/* A request of principal naming session id starts waiting for the upstream: the session is
 * not idle meanwhile. false (nothing kept) when the id names no session of principal's. */
bool http_sessions_wait_start(struct http_sessions *t, struct sl_str id, const char *principal);
/* ... and ends waiting (an id wait_start took; the session may have ended meanwhile). */
void http_sessions_wait_end(struct http_sessions *t, struct sl_str id);
/* Request h on c names a session of its principal whose own upstream does not serve now but
 * one is coming (session_own_coming). */
bool http_sessions_own_coming(struct conn *c, const struct http1_head *h);
/* Request h names (one Mcp-Session-Id) no session of principal's: never opened, or ended. */
bool http_sessions_gone(struct http_sessions *t, const struct http1_head *h,
                        const char *principal);
/* Request h on c needs no upstream: it names no session of its principal's (404), or it is a
 * DELETE of one that it does (the session ends). false when its principal is not known. */
bool http_sessions_upstream_unneeded(struct conn *c, const struct http1_head *h);
/* Work in flight in all sessions (session_busy). */
size_t http_sessions_busy(const struct http_sessions *t);
/* line to every session's GET stream. */
void http_sessions_broadcast(struct http_sessions *t, struct sl_str line);
/* A POST to a legacy session (or initialize, which makes one); m is taken. id: the
 * request's id as JSON text (empty for a notification). */
void hsess_post(struct conn *c, const struct http1_head *h, struct jsonrpc_msg *m,
                const struct sl_buf *id, struct sl_str method, const char *rid,
                const char *principal);
/* A GET: the session's event stream. */
void hsess_get(struct conn *c, const struct http1_head *h, const char *rid, const char *principal);
/* A DELETE: the client ends its session. */
void hsess_delete(struct conn *c, const struct http1_head *h, const char *principal);
const char *hsess_id(const struct hsess *hs);
bool hsess_stream_is(const struct hsess *hs, const struct xchg *x);
/* x leaves hs (its POSTs or its stream). */
void hsess_detach(struct hsess *hs, struct xchg *x);
/* The client of the POST for request rel went away; the session stays. */
void hsess_stream_lost(struct hsess *hs, struct sl_str rel);

/* ===== http_principal.c ===== */

/* Who sent c's request h, by the operator's chosen source, into out. Returns 0, or the HTTP
 * status of the refusal (401). */
int http_principal_of(struct conn *c, const struct http1_head *h, struct sl_buf *out);

/* ===== http_mcp.c, http_ops.c ===== */

/* An Accept value takes type: itself, the wildcard of its major type (major), or any type. */
bool http_accepts(struct sl_str accept, const char *type, const char *major);

void mcp_handle(struct conn *c, const struct http1_head *h, const char *body, size_t len,
                const char *rid);
/* Whether request h on c (its body body[0..len)) should wait for the upstream (http_conn.c
 * holds it), while --upstream-wait allows a wait: a request to /mcp that would be answered 503
 * "upstream not ready" now, or a POST to a session whose own upstream is coming
 * (http_sessions_own_coming) that needs it (not an answer nor a cancellation). */
bool mcp_should_wait(struct conn *c, const struct http1_head *h, const char *body, size_t len);
void ops_handle(struct conn *c, const struct http1_head *h);

/* ===== http_approve.c ===== */

/* A request under /approve/ (approval.h): the page, or a decision posted from it. */
void approve_handle(struct conn *c, const struct http1_head *h, const char *body,
                    const char *rid);
/* Ends every approval page request in flight (front_http_free): no answer, no callback. */
void approve_free_all(struct front_http *fh);

#endif /* SL_HTTP_PRIV_H */
