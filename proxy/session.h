/* session.h: one client of sluice, and the data path for its messages:
 *
 *   client line -> parse -> era and envelope -> local answer | gate -> upstream -> reply
 *
 * A session owns its client channel and the requests it has forwarded (so a client's
 * notifications/cancelled reaches the right upstream request, and a reply finds its client id).
 * It borrows the shared state in struct session_env, which main owns. On stdio the principal is
 * "local". */
#ifndef SL_SESSION_H
#define SL_SESSION_H

#include <event2/event.h>

#include "audit.h"
#include "gate.h"
#include "upstream.h"

struct session_env {
    struct gate_ctx *gate;
    struct policy *policy;
    struct audit *audit;
    struct upstream *up;
};

struct session;

/* The client went away (EOF or write error). Called once. */
typedef void session_gone_cb(struct session *s, void *arg);

/* A session on a pair of fds (our stdin/stdout), paused until session_start. */
struct session *session_new_stdio(struct event_base *base, struct session_env *env, int in_fd,
                                  int out_fd, session_gone_cb *gone, void *arg);
void session_start(struct session *s);              /* the upstream is ready: start reading */
void session_free(struct session *s);               /* cancels what it forwarded; NULL ok */

/* The upstream finished its handshake: the message that waited for it is processed. */
void session_upstream_ready(struct session *s);
/* From a handshake-era upstream: a request (elicitation, sampling, roots) for this client. It is
 * relayed when the client declared that capability, else answered with an error. */
void session_upstream_request(struct session *s, struct jsonrpc_msg *msg);
/* From the upstream: a notification for this client. */
void session_upstream_notification(struct session *s, struct jsonrpc_msg *msg);
/* The upstream's input drained: reading from the client may resume. */
void session_update_interest(struct session *s);
/* Logs a finding of lint_check (policy against the server) as a warning, each one once per
 * process, however often the client lists the tools. */
void session_log_finding(void *arg, bool missing, const char *message);
/* Writes everything queued to the client, waiting at most timeout_ms (exit paths). */
void session_flush(struct session *s, int timeout_ms);

#endif /* SL_SESSION_H */
