/* front_http.c: the HTTP front's public API (front_http.h) and its wiring: the listening
 * socket, readiness, broadcast, drain and free, and the route of each request by its path. The
 * pieces are in http_*.c, listed in http_priv.h. */
#include "front_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "http_priv.h"

#include "approval.h"
#include "log.h"
#include "upstream.h"

/* A whole request: /mcp, an operational endpoint, or nothing. Every request gets its id here. */
void http_route(struct conn *c, const struct http1_head *h, const char *body)
{
    struct front_http *fh = c->fh;
    char rid[8 + 1 + 21];
    memcpy(rid, fh->rid_prefix, 8);
    rid[8] = '-';
    sl_u64_dec(rid + 9, ++fh->next_rid);
    c->keep_alive = h->keep_alive && !fh->draining;
    c->http10 = h->minor == 0;
    sl_log_set_request(rid);
    bool approve = h->path.len >= sizeof(APPROVAL_PATH) - 1 &&
                   memcmp(h->path.p, APPROVAL_PATH, sizeof(APPROVAL_PATH) - 1) == 0;
    if (approve && fh->o.approval_elsewhere)
        conn_respond_status(c, 404, NULL);
    else if (approve)
        approve_handle(c, h, body, rid);
    else if (fh->o.approval_only && !sl_str_eq_c(h->path, "/healthz"))
        conn_respond_status(c, 404, NULL); /* --approval-listen serves the page alone */
    else if (sl_str_eq_c(h->path, "/mcp"))
        mcp_handle(c, h, body, h->content_length, rid);
    else if (sl_str_eq_c(h->path, "/healthz") || sl_str_eq_c(h->path, "/readyz") ||
             sl_str_eq_c(h->path, "/metrics"))
        ops_handle(c, h);
    else
        conn_respond_status(c, 404, NULL); /* JSON-RPC too: a client may have a wrong /mcp URL */
    sl_log_set_request(NULL);
}

/* ===== the public API ===== */

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

/* Whether ss is a loopback address (127.0.0.0/8, ::1, or ::ffff:127.0.0.0/104). */
static bool is_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

bool http_conn_local(const struct conn *c)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    return getsockname(bufferevent_getfd(c->bev), (struct sockaddr *)&ss, &len) == 0 &&
           (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) && is_loopback(&ss);
}

/* The requests that wait for the upstream go on, from the event loop: readiness is told from
 * inside the upstream's callbacks, and a request may go to the upstream at once. */
static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    struct front_http *fh = arg;
    (void)fd, (void)what;
    for (struct conn *c = fh->conns; c; c = c->next) /* none is freed here: the reaper does */
        conn_wait_end(c);
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
    fh->loopback = is_loopback(&ss);
    fh->lis = evconnlistener_new_bind(base, conn_on_accept, fh,
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
    fh->reaper = event_new(base, -1, 0, conn_on_reap, fh);
    fh->wake = event_new(base, -1, 0, on_wake, fh);
    fh->reachable = true;
    fh->sessions = http_sessions_new(fh);
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

/* fh->ready is main's word (the handshake done, the tools listed); the upstream itself says it
 * is not ready before main hears of it: a child whose output ended but that is not reaped yet,
 * or that stopped reading its stdin, an HTTP server that lost sluice's session and is being
 * initialized again. */
bool http_serving(const struct front_http *fh)
{
    return fh->ready && fh->reachable && fh->env->up && upstream_ready(fh->env->up) &&
           !upstream_deaf(fh->env->up);
}

void front_http_set_ready(struct front_http *fh, bool ready)
{
    fh->ready = ready;
    if (http_serving(fh))
        event_active(fh->wake, 0, 0);
}

void front_http_set_reachable(struct front_http *fh, bool reachable)
{
    fh->reachable = reachable;
    if (http_serving(fh))
        event_active(fh->wake, 0, 0);
}

void front_http_set_unready_reason(struct front_http *fh, const char *why)
{
    free(fh->unready_why);
    fh->unready_why = why ? sl_xstrdup(why) : NULL;
    if (why) /* the requests waiting are answered with it, not held to their deadline */
        event_active(fh->wake, 0, 0);
}

void front_http_broadcast(struct front_http *fh, struct jsonrpc_msg *msg)
{
    struct sl_buf b = { 0 };
    json_write(&b, msg->root);
    http_sessions_broadcast(fh->sessions, sl_buf_str(&b));
    sl_buf_free(&b);
}

/* In flight: POSTs waiting for an answer, and sessions with work (a held call, an observation). */
static size_t in_flight(struct front_http *fh)
{
    size_t n = 0;
    for (struct conn *c = fh->conns; c; c = c->next)
        if (c->x && !xchg_is_stream(c->x))
            n++;
    return n + http_sessions_busy(fh->sessions);
}

void http_check_drained(struct front_http *fh)
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
    /* The listener stays open, so that probes see /readyz answer 503 (a closed port looks like
     * a crash, not a drain) and load balancers send work elsewhere; every connection closes
     * after its next response. Open ones stay: a client answering a held call's question does so
     * on the connection it has. Everything that would start new work gets 503 with a JSON-RPC
     * error (http_mcp.c). The GET streams end: they carry no work. */
    for (struct conn *c = fh->conns; c; c = c->next) {
        conn_wait_end(c); /* a request waiting for the upstream: 503, shutting down */
        if (c->x && xchg_is_stream(c->x)) {
            conn_end_chunks(c);
            c->keep_alive = false;
            c->closing = true;
            xchg_finish(c->x, 200);
        }
    }
    fh->drained = done;
    fh->drained_arg = arg;
    http_check_drained(fh);
}

void front_http_free(struct front_http *fh)
{
    if (fh == NULL)
        return;
    http_sessions_end_all(fh->sessions);
    approve_free_all(fh);
    while (fh->conns)
        conn_free(fh->conns);
    /* A connection closed but not yet reaped stays on fh->conns until the reaper frees it, so
     * the loop above freed those too: the reaper's list only points at freed memory now. */
    fh->dead_c = NULL;
    conn_on_reap(-1, 0, fh);
    sl_spare_clear(&fh->spare_x, sizeof(struct xchg));
    if (fh->lis)
        evconnlistener_free(fh->lis);
    event_free(fh->reaper);
    event_free(fh->wake);
    http_sessions_free(fh->sessions);
    free(fh->unready_why);
    free(fh);
}
