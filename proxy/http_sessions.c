/* http_sessions.c: legacy sessions over HTTP (PROTOCOL.md §5.3). initialize mints an
 * Mcp-Session-Id; the session lives until its client sends DELETE, until it has been idle for
 * --session-idle, or until the table needs room and it is the least recently used one with
 * nothing in flight. Each session lists its POSTs in flight and its one GET stream, and routes
 * the session's messages to them.
 *
 * Sessions belong to the principal that opened them: another principal's requests do not find
 * them. An owner record counts a principal's sessions, for --max-sessions-per-principal. */
#include "http_priv.h"

#include <string.h>

#include <event2/event.h>
#include <openssl/rand.h>

#include "log.h"
#include "metrics.h"
#include "seal.h"

#define SESSION_BUCKETS 4096
#define OWNER_BUCKETS 1024

/* A principal holding legacy sessions, and how many (--max-sessions-per-principal). */
struct owner {
    char *principal;
    size_t nsess;
    struct hsess *sessions;      /* its nsess sessions, through hs->o_next */
    struct owner *next;
};

struct hsess {
    char id[33];
    struct front_http *fh;
    const char *principal;       /* its owner's */
    struct hsess *o_prev, *o_next; /* in owner->sessions */
    struct owner *owner;
    struct session *s;
    struct xchg *xchgs;          /* POSTs in flight */
    struct xchg *stream;         /* the GET stream */
    time_t last_used;
    unsigned waiters;            /* requests naming it that wait for the upstream (http_conn.c) */
    struct hsess *hnext;         /* in its bucket */
    struct hsess *older, *newer; /* in the table's list by last use */
};

struct http_sessions {
    struct front_http *fh;
    const struct front_http_opts *opts;
    struct hsess *buckets[SESSION_BUCKETS];
    size_t nsess;
    struct hsess *oldest, *newest; /* sessions by last use, for eviction */
    struct owner *owners[OWNER_BUCKETS];
    uint8_t owner_salt[16];        /* keys the owners' hash: a client cannot aim at a bucket */
    struct event *sweeper;
};

/* ===== the table ===== */

static struct hsess **sess_bucket(struct http_sessions *t, const char *id)
{
    unsigned v = 0; /* the id's first 4 lowercase hex digits: random, so spread evenly (other
                     * bytes, in an id that exists nowhere, land in some bucket all the same) */
    for (int i = 0; i < 4; i++)
        v = v << 4 | (unsigned)(id[i] <= '9' ? id[i] - '0' : id[i] - 'a' + 10);
    return &t->buckets[v % SESSION_BUCKETS];
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

static struct hsess *sess_find(struct http_sessions *t, struct sl_str id)
{
    /* Any 32 bytes: ids are minted as lowercase hex, so anything else finds no equal, and the
     * bucket of any bytes is a bucket. */
    if (id.len != 32)
        return NULL;
    for (struct hsess *hs = *sess_bucket(t, id.p); hs; hs = hs->hnext)
        if (sess_id_eq(hs->id, id.p))
            return hs;
    return NULL;
}

/* The session the id names, when principal opened it: another principal's session is not found
 * either (an id that leaks is worth nothing to anyone else). */
static struct hsess *sess_find_owned(struct http_sessions *t, struct sl_str id,
                                     const char *principal)
{
    struct hsess *hs = sess_find(t, id);
    if (hs == NULL || strcmp(hs->principal, principal) != 0)
        return NULL;
    return hs;
}

/* ===== owners ===== */

static struct owner **owner_bucket(struct http_sessions *t, const char *principal)
{
    uint8_t h[SEAL_DIGEST_LEN];
    struct sl_buf b = { 0 };
    sl_buf_put(&b, t->owner_salt, sizeof(t->owner_salt));
    sl_buf_puts(&b, principal);
    seal_sha256(b.p, b.len, h);
    sl_buf_free(&b);
    uint32_t v;
    memcpy(&v, h, sizeof(v));
    return &t->owners[v % OWNER_BUCKETS];
}

/* The principal's record, or NULL when it holds no session. */
static struct owner *owner_find(struct http_sessions *t, const char *principal)
{
    for (struct owner *o = *owner_bucket(t, principal); o; o = o->next)
        if (strcmp(o->principal, principal) == 0)
            return o;
    return NULL;
}

static struct owner *owner_get(struct http_sessions *t, const char *principal)
{
    struct owner *o = owner_find(t, principal);
    if (o)
        return o;
    struct owner **b = owner_bucket(t, principal);
    o = sl_xcalloc(1, sizeof(*o));
    o->principal = sl_xstrndup(principal, strlen(principal));
    o->next = *b;
    *b = o;
    return o;
}

static void owner_put(struct http_sessions *t, struct owner *o)
{
    if (--o->nsess > 0)
        return;
    for (struct owner **pp = owner_bucket(t, o->principal); *pp; pp = &(*pp)->next) {
        if (*pp == o) {
            *pp = o->next;
            break;
        }
    }
    free(o->principal);
    free(o);
}

/* ===== least recently used ===== */

static void lru_unlink(struct http_sessions *t, struct hsess *hs)
{
    *(hs->older ? &hs->older->newer : &t->oldest) = hs->newer;
    *(hs->newer ? &hs->newer->older : &t->newest) = hs->older;
    hs->older = hs->newer = NULL;
}

static void lru_append(struct http_sessions *t, struct hsess *hs)
{
    hs->older = t->newest;
    hs->newer = NULL;
    *(t->newest ? &t->newest->newer : &t->oldest) = hs;
    t->newest = hs;
}

/* A request for the session: it becomes the most recently used. */
static void sess_touch(struct http_sessions *t, struct hsess *hs)
{
    hs->last_used = time(NULL);
    lru_unlink(t, hs);
    lru_append(t, hs);
}

/* Nothing in flight: no POST or stream open, no call held, forwarded or observed, no request
 * waiting for the upstream. Only such a session is ever ended without its client asking. */
static bool sess_idle(const struct hsess *hs)
{
    return hs->xchgs == NULL && hs->stream == NULL && hs->waiters == 0 &&
           session_busy(hs->s) == 0;
}

/* ===== the session's messages ===== */

/* The POST in flight for request rel, or NULL. */
static struct xchg *post_for(struct hsess *hs, struct sl_str rel)
{
    for (struct xchg *x = hs->xchgs; x && rel.p; x = x->next)
        if (!x->done && sl_str_eq_c(rel, x->rel))
            return x;
    return NULL;
}

/* The newest POST of the session still open, or NULL. */
static struct xchg *newest_post(struct hsess *hs)
{
    for (struct xchg *x = hs->xchgs; x; x = x->next)
        if (!x->done && x->c)
            return x;
    return NULL;
}

/* The session writes here: to the POST whose request the message belongs to, else to the GET
 * stream, else to the newest POST still open (an upstream's question during a call, to a client
 * that opened no GET stream: that call's stream, as the server itself would have used), else
 * nowhere. */
static void send_to_post_or_stream(void *arg, struct sl_str rel, bool final, int code,
                                   struct sl_str line)
{
    struct hsess *hs = arg;
    struct xchg *x = post_for(hs, rel);
    if (x)
        return xchg_deliver(x, final, code, line);
    if (hs->stream && hs->stream->c)
        return xchg_deliver(hs->stream, false, 0, line);
    if (!final && (x = newest_post(hs)) != NULL)
        return xchg_deliver(x, false, code, line);
    sl_debug("session %.8s: no open stream for a message; dropped", hs->id);
}

/* A held call the client cancelled: its POST ends without a response (PROTOCOL.md §4.4). */
static void end_unanswered_post(void *arg, struct sl_str rel)
{
    struct xchg *x = post_for(arg, rel);
    if (x)
        xchg_end_unanswered(x);
}

/* The session's own upstream is ready, or will not come: the requests that wait for it look
 * again (from the loop: this runs inside the upstream's callbacks). */
static void own_settled(void *arg)
{
    struct hsess *hs = arg;
    event_active(hs->fh->wake, 0, 0);
}

static const struct session_io hsess_io = { .send = send_to_post_or_stream,
                                            .out_len = xchg_out_len_none,
                                            .ended = end_unanswered_post,
                                            .own_settled = own_settled };

/* ===== a session's life ===== */

static struct hsess *sess_new(struct http_sessions *t, const char *principal)
{
    struct front_http *fh = t->fh;
    struct hsess *hs = sl_xcalloc(1, sizeof(*hs));
    uint8_t raw[16];
    SL_REQUIRE(RAND_bytes(raw, sizeof(raw)) == 1);
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(hs->id + 2 * i, 3, "%02x", raw[i]);
    hs->fh = fh;
    hs->owner = owner_get(t, principal);
    hs->owner->nsess++;
    hs->o_next = hs->owner->sessions;
    if (hs->o_next)
        hs->o_next->o_prev = hs;
    hs->owner->sessions = hs;
    hs->principal = hs->owner->principal;
    hs->s = session_new(fh->base, fh->env, &hsess_io, hs, sl_str_c(principal));
    session_start(hs->s);
    hs->last_used = time(NULL);
    struct hsess **b = sess_bucket(t, hs->id);
    hs->hnext = *b;
    *b = hs;
    lru_append(t, hs);
    t->nsess++;
    return hs;
}

/* Its POSTs in flight end (404: the session is gone), its stream ends, and it is freed. */
static void sess_free(struct http_sessions *t, struct hsess *hs)
{
    for (struct hsess **pp = sess_bucket(t, hs->id); *pp; pp = &(*pp)->hnext) {
        if (*pp == hs) {
            *pp = hs->hnext;
            break;
        }
    }
    t->nsess--;
    lru_unlink(t, hs);
    /* Requests that wait for the upstream, the shared one or its own (only its DELETE, which
     * waits for neither, or sluice stopping, ends a session they wait for), go on now, and are
     * refused as for any ended session (404), not at their deadline. */
    if (hs->waiters > 0)
        event_active(hs->fh->wake, 0, 0);
    while (hs->xchgs) {
        struct xchg *x = hs->xchgs;
        if (x->c && x->sse)
            conn_end_chunks(x->c);
        else if (x->c)
            conn_respond_rpc_error(x->c, 404, x->rel, MCP_SESSION_NOT_FOUND,
                                   "Session terminated", NULL);
        xchg_finish(x, 404);
    }
    if (hs->stream) {
        if (hs->stream->c)
            conn_end_chunks(hs->stream->c);
        xchg_finish(hs->stream, 200);
    }
    session_free(hs->s);
    if (hs->o_prev)
        hs->o_prev->o_next = hs->o_next;
    else
        hs->owner->sessions = hs->o_next;
    if (hs->o_next)
        hs->o_next->o_prev = hs->o_prev;
    owner_put(t, hs->owner);
    free(hs);
}

/* ===== making room ===== */

/* Whether ending hs makes room for a new session. While the children are full, only one that
 * holds a child does: one whose child could not start (own_open failed) holds none, and ending
 * it would leave the initialize to be refused after all, or served over --max-children. */
static bool sess_frees_room(const struct http_sessions *t, const struct hsess *hs)
{
    return !session_own_full(t->fh->env) || session_has_own(hs->s);
}

/* The table is full: the least recently used idle session ends to make room (its client's next
 * request gets 404 and a client initializes again, as after an idle expiry). A busy one met on
 * the way counts as used, so the next search does not walk past it again. Returns whether one
 * was ended. */
static bool sess_evict_idle(struct http_sessions *t, const char *rid)
{
    struct hsess *hs = t->oldest;
    for (size_t n = t->nsess; n > 0 && hs; n--) {
        struct hsess *next = hs->newer;
        if (!sess_idle(hs)) {
            lru_unlink(t, hs);
            lru_append(t, hs);
        } else if (sess_frees_room(t, hs)) {
            sl_info("%s: session %.8s of %s ended to make room (--max-sessions %zu, least "
                    "recently used, nothing in flight)", rid, hs->id, hs->principal,
                    t->opts->max_sessions);
            sess_free(t, hs);
            return true;
        }
        hs = next;
    }
    return false;
}

/* Whether an idle session holds a child: sess_evict_idle can end it for its child. A walk over
 * the table, as sess_evict_idle's; only when a principal at its cap has no such session itself. */
static bool idle_child_held(const struct http_sessions *t)
{
    for (const struct hsess *hs = t->oldest; hs; hs = hs->newer)
        if (sess_idle(hs) && session_has_own(hs->s))
            return true;
    return false;
}

/* A principal at its cap: its own least recently used idle session ends to make room (a client
 * that reloads, such as MCP Inspector, opens a new session without ending the old one). The walk
 * is over that principal's sessions only, at most its cap. While the children are full, one that
 * holds a child is ended first (it makes room under every limit at once); else one without a child
 * makes room under the cap alone, when another idle session can give its child up after it
 * (sess_admit): a principal whose sessions could not start a child is not refused until they
 * expire, and none ends for an initialize that would be refused after all. Returns whether one
 * was ended. */
static bool sess_evict_own_idle(struct http_sessions *t, struct owner *o, const char *rid)
{
    struct hsess *lru = NULL, *childless = NULL;
    for (struct hsess *hs = o->sessions; hs; hs = hs->o_next) {
        if (!sess_idle(hs))
            continue;
        struct hsess **pick = sess_frees_room(t, hs) ? &lru : &childless;
        if (*pick == NULL || hs->last_used < (*pick)->last_used)
            *pick = hs;
    }
    if (lru == NULL && childless != NULL && idle_child_held(t))
        lru = childless;
    if (lru == NULL)
        return false;
    sl_info("%s: session %.8s of %s ended to make room (--max-sessions-per-principal %zu, its "
            "least recently used, nothing in flight)", rid, lru->id, lru->principal,
            t->opts->max_sessions_per_principal);
    sess_free(t, lru);
    return true;
}

/* Whether principal may open another session: 0, or the HTTP status of the refusal with its
 * message in msg. One principal is held to its own cap before it can fill the table, making room
 * from its own idle sessions first; a full table makes room from idle sessions before it refuses
 * anyone. With --principal anonymous every client is the same principal, so there the table's
 * own limit is the only one (a per-principal cap would be a far smaller global one). */
static int sess_admit(struct http_sessions *t, const char *principal, const char *rid, char *msg,
                      size_t msglen)
{
    /* Each session with a child of its own. A child counts until it has exited; while one is
     * ending and none is free, nothing is ended to make room (its place comes back soon), and
     * nothing is ended only for this initialize to be refused after. With none free, whichever
     * limit below ends a session ends one that holds a child (sess_frees_room): one session
     * ended makes room under every limit at once. */
    size_t dying = session_own_dying();
    if (session_own_full(t->fh->env) && dying > 0) {
        snprintf(msg, msglen, "Too many server processes (limit %zu, --max-children), %zu of "
                 "them still ending after their session; try again in a moment",
                 t->fh->env->opener->max, dying);
        return 503;
    }
    struct owner *o = owner_find(t, principal);
    if (t->opts->principal != PRINCIPAL_ANONYMOUS && o &&
        o->nsess >= t->opts->max_sessions_per_principal && !sess_evict_own_idle(t, o, rid)) {
        snprintf(msg, msglen, "Too many sessions for this principal (limit %zu, "
                 "--max-sessions-per-principal), none that can end now; end unused sessions "
                 "with DELETE",
                 t->opts->max_sessions_per_principal);
        return 429;
    }
    if (t->nsess >= t->opts->max_sessions && !sess_evict_idle(t, rid)) {
        snprintf(msg, msglen, "Too many sessions (limit %zu, --max-sessions), none of them "
                 "idle; try again later", t->opts->max_sessions);
        return 503;
    }
    /* Room, or a session ended above gave its child up for this one: the ended child and its
     * successor are one over the cap until it has exited. Else an idle one gives its child up. */
    if (!session_own_full(t->fh->env) || session_own_dying() > dying)
        return 0;
    if (!sess_evict_idle(t, rid)) {
        snprintf(msg, msglen, "Too many sessions with a server process of their own (limit %zu, "
                 "--max-children), none of them idle; try again later",
                 t->fh->env->opener->max);
        return 503;
    }
    return 0;
}

/* Sessions unused for session_idle_s, with nothing in flight, are forgotten. */
static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    struct http_sessions *t = arg;
    (void)fd, (void)what;
    time_t now = time(NULL);
    for (size_t b = 0; b < SESSION_BUCKETS; b++) {
        struct hsess *hs = t->buckets[b];
        while (hs) {
            struct hsess *next = hs->hnext;
            if (now - hs->last_used > t->opts->session_idle_s && sess_idle(hs)) {
                sl_info("session %.8s expired after %d s without use", hs->id,
                        t->opts->session_idle_s);
                sess_free(t, hs);
            }
            hs = next;
        }
    }
}

/* A request that waits for the upstream is unread, so it cannot touch its session; yet the
 * session is in use. Without this, --session-idle shorter than the wait (or a session already
 * near its idle limit) ends it meanwhile, and the request, read at last, gets 404. Only the
 * session's own principal keeps it so: another's request naming it would be refused anyway. */
bool http_sessions_wait_start(struct http_sessions *t, struct sl_str id, const char *principal)
{
    struct hsess *hs = sess_find_owned(t, id, principal);
    if (hs == NULL)
        return false;
    hs->waiters++;
    sess_touch(t, hs);
    return true;
}

void http_sessions_wait_end(struct http_sessions *t, struct sl_str id)
{
    struct hsess *hs = sess_find(t, id);
    if (hs == NULL)
        return; /* ended by its DELETE meanwhile */
    if (hs->waiters > 0)
        hs->waiters--;
    sess_touch(t, hs);
}

/* Looked up without the principal first: only a session whose own upstream is coming costs the
 * principal's computation, not every request to every session. */
bool http_sessions_own_coming(struct conn *c, const struct http1_head *h)
{
    struct sl_str sid;
    if (http1_field(h, HTTP1_MCP_SESSION_ID, &sid) != 1)
        return false;
    struct hsess *hs = sess_find(c->fh->sessions, sid);
    if (hs == NULL || !session_own_coming(hs->s))
        return false;
    char pstore[160];
    struct sl_buf principal;
    sl_buf_on(&principal, pstore, sizeof(pstore));
    /* Another principal's request naming it is refused (404) at once, as it would be anyway. */
    bool mine = http_principal_of(c, h, &principal) == 0 && strcmp(principal.p, hs->principal) == 0;
    sl_buf_free(&principal);
    return mine;
}

bool http_sessions_gone(struct http_sessions *t, const struct http1_head *h,
                        const char *principal)
{
    struct sl_str sid;
    return http1_field(h, HTTP1_MCP_SESSION_ID, &sid) == 1 &&
           sess_find_owned(t, sid, principal) == NULL;
}

/* Computes the principal (a digest of a bearer token, say): only for a request naming a session
 * while the upstream is not ready, which is rare. */
bool http_sessions_upstream_unneeded(struct conn *c, const struct http1_head *h)
{
    struct sl_str sid;
    if (http1_field(h, HTTP1_MCP_SESSION_ID, &sid) != 1)
        return false;
    char pstore[160];
    struct sl_buf principal;
    sl_buf_on(&principal, pstore, sizeof(pstore));
    bool unneeded = http_principal_of(c, h, &principal) == 0 &&
                 (sl_str_eq_c(h->method, "DELETE") ||
                  sess_find_owned(c->fh->sessions, sid, principal.p) == NULL);
    sl_buf_free(&principal);
    return unneeded;
}

/* ===== requests ===== */

/* The session a request names: found (and now the most recently used), or NULL with the
 * refusal answered. initialize, which names none, opens one. */
static struct hsess *sess_for_post(struct conn *c, const struct http1_head *h, bool init,
                                   const char *id, struct sl_str method, const char *rid,
                                   const char *principal)
{
    struct http_sessions *t = c->fh->sessions;
    struct sl_str v;
    int has_sid = http1_field(h, HTTP1_MCP_SESSION_ID, &v);
    struct hsess *hs;
    if (has_sid < 0 || (has_sid == 0 && !init)) {
        conn_refuse_rpc(c, method, 400, id, MCP_SERVER_ERROR,
                        "Bad Request: Mcp-Session-Id header is required");
        return NULL;
    }
    if (has_sid == 1) {
        hs = sess_find_owned(t, v, principal);
        if (hs == NULL) {
            conn_refuse_rpc(c, method, 404, id, MCP_SESSION_NOT_FOUND, "Session not found");
            return NULL;
        }
        if (init) {
            conn_refuse_rpc(c, method, 400, id, JSONRPC_INVALID_REQUEST,
                            "Invalid Request: Server already initialized");
            return NULL;
        }
    } else {
        char text[160];
        int st = sess_admit(t, principal, rid, text, sizeof(text));
        if (st) {
            sl_info("%s: initialize refused for %s: %s", rid, principal, text);
            conn_refuse_rpc(c, method, st, id, MCP_SERVER_ERROR, text);
            return NULL;
        }
        hs = sess_new(t, principal);
        sl_info("%s: session %.8s opened for %s", rid, hs->id, principal);
    }
    sess_touch(t, hs);
    return hs;
}

void hsess_post(struct conn *c, const struct http1_head *h, struct jsonrpc_msg *m,
                const struct sl_buf *id, struct sl_str method, const char *rid,
                const char *principal)
{
    bool init = m->kind == JSONRPC_REQUEST && sl_str_eq_c(m->method, "initialize");
    struct hsess *hs = sess_for_post(c, h, init, id->len ? id->p : NULL, method, rid, principal);
    if (hs == NULL)
        return jsonrpc_msg_free(m);
    if (m->kind != JSONRPC_REQUEST) {
        metrics_request(method, 202);
        conn_respond(c, 202, NULL, NULL, 0, NULL);
        return session_input(hs->s, m);
    }
    struct xchg *x = xchg_new(c, rid, method);
    x->hs = hs;
    xchg_set_rel(x, id);
    x->set_session = init;
    x->next = hs->xchgs;
    if (hs->xchgs)
        hs->xchgs->prev = x;
    hs->xchgs = x;
    session_input(hs->s, m);
}

void hsess_get(struct conn *c, const struct http1_head *h, const char *rid, const char *principal)
{
    struct sl_str v;
    int has_sid = http1_field(h, HTTP1_MCP_SESSION_ID, &v);
    if (has_sid != 1) /* 2026-07-28 has no GET; a legacy stream needs its session */
        return conn_respond_status(c, 405, "Allow: POST\r\n");
    struct hsess *hs = sess_find_owned(c->fh->sessions, v, principal);
    if (hs == NULL)
        return conn_respond_rpc_error(c, 404, NULL, MCP_SESSION_NOT_FOUND, "Session not found",
                                      NULL);
    if (http1_field(h, HTTP1_ACCEPT, &v) != 1 || !http_accepts(v, "text/event-stream", "text/*"))
        return conn_respond_rpc_error(c, 406, NULL, JSONRPC_INVALID_REQUEST,
                                      "Not Acceptable: Accept must list text/event-stream", NULL);
    if (hs->stream)
        return conn_respond_rpc_error(c, 409, NULL, JSONRPC_INVALID_REQUEST,
                                      "Conflict: only one stream per session", NULL);
    struct xchg *x = xchg_new(c, rid, SL_STR("GET"));
    x->hs = hs;
    hs->stream = x;
    sess_touch(c->fh->sessions, hs);
    char extra[160];
    snprintf(extra, sizeof(extra), "%sX-Request-Id: %s\r\n", xchg_sse_headers, rid);
    xchg_start_stream(x, extra);
}

void hsess_delete(struct conn *c, const struct http1_head *h, const char *principal)
{
    struct sl_str v;
    if (http1_field(h, HTTP1_MCP_SESSION_ID, &v) != 1)
        return conn_respond_status(c, 405, "Allow: POST\r\n");
    struct hsess *hs = sess_find_owned(c->fh->sessions, v, principal);
    if (hs == NULL)
        return conn_respond_rpc_error(c, 404, NULL, MCP_SESSION_NOT_FOUND, "Session not found",
                                      NULL);
    sl_info("session %.8s ended by the client", hs->id);
    sess_free(c->fh->sessions, hs);
    conn_respond(c, 200, NULL, NULL, 0, NULL);
}

/* ===== for the other pieces ===== */

const char *hsess_id(const struct hsess *hs)
{
    return hs->id;
}

bool hsess_stream_is(const struct hsess *hs, const struct xchg *x)
{
    return hs->stream == x;
}

void hsess_detach(struct hsess *hs, struct xchg *x)
{
    if (hs->stream == x) {
        hs->stream = NULL;
        return;
    }
    if (x->prev)
        x->prev->next = x->next;
    else
        hs->xchgs = x->next;
    if (x->next)
        x->next->prev = x->prev;
}

void hsess_stream_lost(struct hsess *hs, struct sl_str rel)
{
    session_stream_lost(hs->s, rel);
}

struct http_sessions *http_sessions_new(struct front_http *fh)
{
    struct http_sessions *t = sl_xcalloc(1, sizeof(*t));
    t->fh = fh;
    t->opts = &fh->o;
    SL_REQUIRE(RAND_bytes(t->owner_salt, sizeof(t->owner_salt)) == 1);
    t->sweeper = event_new(fh->base, -1, EV_PERSIST, on_sweep, t);
    /* Often enough that a session ends within half its idle limit of it, at most every 30 s. */
    int half = fh->o.session_idle_s / 2;
    struct timeval every = { half < 1 ? 1 : half > 30 ? 30 : half, 0 };
    event_add(t->sweeper, &every);
    return t;
}

void http_sessions_end_all(struct http_sessions *t)
{
    for (size_t i = 0; i < SESSION_BUCKETS; i++)
        while (t->buckets[i])
            sess_free(t, t->buckets[i]);
}

void http_sessions_free(struct http_sessions *t)
{
    if (t == NULL)
        return;
    http_sessions_end_all(t);
    event_free(t->sweeper);
    free(t);
}

size_t http_sessions_count(const struct http_sessions *t)
{
    return t->nsess;
}

size_t http_sessions_busy(const struct http_sessions *t)
{
    size_t n = 0;
    for (size_t i = 0; i < SESSION_BUCKETS; i++)
        for (const struct hsess *hs = t->buckets[i]; hs; hs = hs->hnext)
            n += session_busy(hs->s);
    return n;
}

void http_sessions_broadcast(struct http_sessions *t, struct sl_str line)
{
    for (size_t i = 0; i < SESSION_BUCKETS; i++)
        for (struct hsess *hs = t->buckets[i]; hs; hs = hs->hnext)
            if (hs->stream && hs->stream->c)
                xchg_deliver(hs->stream, false, 0, line);
}
