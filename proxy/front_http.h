/* front_http.h: MCP Streamable HTTP on /mcp for both eras (PROTOCOL.md §5.2, §5.3), plus
 * /healthz, /readyz and /metrics, on a socket sluice listens on.
 *
 *   modern: every POST is one request; a session lives for that request only, and a
 *               closed connection cancels it. Round two may come on any connection.
 *   legacy era: initialize mints an Mcp-Session-Id; the session lives until DELETE or idle
 *               expiry; its held calls ask on the POST's event stream.
 *
 * The principal of a request comes from the operator's chosen source (a verified client
 * certificate, a bearer token's digest, a header set by a trusted proxy), never from the body. */
#ifndef SL_FRONT_HTTP_H
#define SL_FRONT_HTTP_H

#include <openssl/ssl.h>

#include "session.h"

enum principal_source { PRINCIPAL_ANONYMOUS, PRINCIPAL_CERT, PRINCIPAL_BEARER, PRINCIPAL_HEADER };

struct front_http_opts {
    const char *listen;                 /* ADDR:PORT; port 0 picks a free one */
    SSL_CTX *tls;                       /* NULL: plain HTTP; borrowed */
    enum principal_source principal;
    const char *principal_header;       /* PRINCIPAL_HEADER */
    const char *const *origins;         /* allowed Origin values; a request with any other Origin
                                           header is refused (DNS rebinding) */
    size_t norigins;
    size_t max_connections, max_body, max_head, max_sessions;
    size_t max_sessions_per_principal;  /* legacy sessions one principal may hold */
    int request_timeout_s;              /* to receive one request, head and body */
    int idle_timeout_s;                 /* a keep-alive connection with nothing in flight */
    int session_idle_s;                 /* a legacy session nobody uses */
    int upstream_wait_s;                /* a request to /mcp waits this long for the upstream to
                                           be ready before it gets 503; 0: 503 at once */
    bool approval_only;                 /* serve the approval page (/approve/) and /healthz
                                           only: --approval-listen */
    bool approval_elsewhere;            /* --approval-listen serves the page, not this one:
                                           /approve/ is 404 here (its principal, TLS and
                                           client CA are that listener's, not this one's) */
};

struct front_http;

struct front_http *front_http_new(struct event_base *base, struct session_env *env,
                                  const struct front_http_opts *o, char *err, size_t errlen);
void front_http_free(struct front_http *fh);   /* NULL ok */
int front_http_port(const struct front_http *fh);
/* The upstream is ready (or not): /readyz and /mcp follow. Requests to /mcp that arrive while
 * it is not wait for it (upstream_wait_s), and go on once it is. */
void front_http_set_ready(struct front_http *fh, bool ready);
/* Why not, for the message of the 503's JSON-RPC error (copied); NULL: "upstream not ready". */
void front_http_set_unready_reason(struct front_http *fh, const char *why);
/* The upstream is reachable (or not: its liveness probe failed). Serving needs both; true at
 * start. */
void front_http_set_reachable(struct front_http *fh, bool reachable);
/* An upstream notification that belongs to no request: to every legacy session's GET
 * stream. */
void front_http_broadcast(struct front_http *fh, struct jsonrpc_msg *msg);
/* Stops accepting, closes idle connections, answers new requests 503; done runs once nothing is
 * in flight any more (possibly at once). */
void front_http_drain(struct front_http *fh, void (*done)(void *arg), void *arg);

#endif /* SL_FRONT_HTTP_H */
