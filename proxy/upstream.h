/* upstream.h: the one upstream MCP server sluice fronts: a child process on pipes (up_stdio.h) or
 * a Streamable HTTP server (up_http.h), both behind one transport interface (up_transport.h).
 *
 * sluice is the upstream's only client. It talks to the upstream in the upstream's own era: at
 * start it sends server/discover; a DiscoverResult (or MCP_UNSUPPORTED_VERSION listing
 * 2026-07-28) means modern, anything else or silence means legacy (PROTOCOL.md §1.8). on_era
 * reports which. A legacy upstream then waits for upstream_initialize(), which the owner calls
 * with the client capabilities it can route (a stdio legacy client's own; none
 * otherwise), so that the upstream asks only what sluice can relay (§7.3); on_ready follows its
 * initialize result. Requests get ids from one counter, so ids from several clients can never
 * collide; a reply is routed to the callback given with its request.
 *
 * Lifetime: a child dies with sluice even when sluice is killed with SIGKILL (up_stdio.h).
 * upstream_terminate() closes its stdin, then sends SIGTERM and SIGKILL to its group on a short
 * schedule; an HTTP upstream's session is ended with DELETE (a 2025-11-25 server's, 2 s at most). When the transport closes, every pending request
 * is answered through its callback with msg == NULL, then on_exit runs. */
#ifndef SL_UPSTREAM_H
#define SL_UPSTREAM_H

#include <event2/event.h>

#include "era.h"
#include "jsonrpc.h"

#include <openssl/ssl.h>

/* A child that goes away is started again after 1 s, 2 s, 4 s ... 30 s; the delay starts over
 * only once the child that went had been ready this long (main.c for the shared child,
 * session_own.c for a session's own). */
#define UPSTREAM_STABLE_S 10

struct upstream;
struct up_request;  /* a pending request; valid until its callback ran or it was cancelled */

/* A reply (msg is a JSONRPC_RESULT or JSONRPC_ERROR), or msg == NULL with why when the upstream
 * went away first. msg is freed after the callback returns. */
typedef void up_reply_cb(struct jsonrpc_msg *msg, const char *why, void *arg);

struct upstream_cbs {
    void (*on_era)(struct upstream *up, void *arg);              /* era known */
    void (*on_ready)(struct upstream *up, void *arg);            /* handshake done (if any) */
    /* A request of the server's (not ping). on: the request of ours whose response stream
     * carried it (an HTTP server's event stream for that POST, which relates it to that
     * request: PROTOCOL.md §7.3), or NULL when nothing names one (a child's pipe, the
     * session's GET stream). Valid during the call only. */
    void (*on_request)(struct upstream *up, struct jsonrpc_msg *msg,
                       const struct up_request *on, void *arg);
    void (*on_notification)(struct upstream *up, struct jsonrpc_msg *msg, void *arg);
    void (*on_exit)(struct upstream *up, const char *why, void *arg); /* output ended, reaped */
    void (*on_drained)(struct upstream *up, void *arg);          /* our output to it drained */
    /* Optional: a ready HTTP upstream stopped (or started again) being reachable. One that has
     * said nothing for a second is probed every second (a bare TCP connection, no request: its
     * session and the error metrics stay untouched); a failed probe says unreachable, a probe
     * that connects or any message from the server says reachable. A child has no probe: its
     * exit says it all. */
    void (*on_reachable)(struct upstream *up, bool reachable, void *arg);
};

/* Spawns argv (NULL-terminated) or, with argv == NULL, the built-in demo server in a forked
 * child. reply_timeout_s (0: none): a request that heard nothing from the child for that long
 * since it was sent fails (a reply the child garbled is dropped, and would be waited for ever).
 * Returns NULL with a message in err on failure. */
struct upstream *upstream_spawn(struct event_base *base, char *const argv[],
                                int reply_timeout_s, const struct upstream_cbs *cbs, void *arg,
                                char *err, size_t errlen);
/* The same for a Streamable HTTP server at url (tls: the client context for https).
 * reply_timeout_s: the longest silence of the server in one reply (or on an idle connection). */
struct upstream *upstream_connect(struct event_base *base, const char *url, SSL_CTX *tls,
                                  int reply_timeout_s, const struct upstream_cbs *cbs, void *arg,
                                  char *err, size_t errlen);
void upstream_free(struct upstream *up); /* kills the child if it still runs */
/* Frees base once its upstreams are freed. An HTTP upstream's connections defer their
 * callbacks, and each callback still scheduled holds a reference to its connection, which
 * libevent drops only by running it: event_base_free alone would cancel it and leak the
 * connection. So the scheduled callbacks run first (one pass, without waiting). That pass runs
 * whatever else is due too: every event of the caller's must be freed before (none is made
 * with event_base_once, which cannot be cancelled). */
void upstream_base_free(struct event_base *base);

/* Sends a request; params may be NULL. Returns the pending handle, or NULL if the upstream is
 * gone or deaf (the callback is not called then). */
struct up_request *upstream_request(struct upstream *up, struct sl_str method,
                                    const struct json *params, up_reply_cb *cb, void *arg);
/* The same, and what the upstream says about this request goes to note, never to
 * on_notification: its notifications/progress (with the caller's own progressToken put back),
 * and any other notification it sends on this request's own response stream (an HTTP server's
 * event stream for the POST), which is about this request (PROTOCOL.md §7.4). List changes,
 * resource updates and cancellations concern the whole session: they still go to
 * on_notification, except on a subscriptions/listen's own stream, which is the subscription. */
typedef void up_note_cb(struct jsonrpc_msg *note, void *arg);
struct up_request *upstream_request_notes(struct upstream *up, struct sl_str method,
                                          const struct json *params, up_reply_cb *cb,
                                          up_note_cb *note, void *arg);
/* Forgets a pending request and tells the upstream (notifications/cancelled with our id). The
 * callback will not be called. */
void upstream_cancel(struct upstream *up, struct up_request *req, const char *reason);
/* Legacy: sends initialize declaring caps (a ClientCapabilities object, or NULL for {}) and
 * client_info (an Implementation object, or NULL for sluice's own). Only the first call does
 * anything; a handshake done again (an HTTP server that lost the session) repeats it. */
void upstream_initialize(struct upstream *up, const struct json *caps,
                         const struct json *client_info);
bool upstream_ready(const struct upstream *up);
/* The server stopped reading what it is sent (a child that closed its stdin): it is not taken
 * for ready by the fronts, and upstream_request returns NULL, until it is gone and started
 * again. Answers to requests sent before still come. */
bool upstream_deaf(const struct upstream *up);
/* A request sent now goes out (upstream_request does not return NULL): the server is not gone
 * and reads what it is sent. */
bool upstream_takes(const struct upstream *up);
/* The server answered the last thing sent to it (no outage is counted, no probe failed). */
bool upstream_reachable(const struct upstream *up);
/* Sends one complete message line as is (a response to the upstream's own request). */
void upstream_send_line(struct upstream *up, struct sl_str line);
/* Answers the upstream's own request msg with a JSON-RPC "method not found" error saying why
 * nobody behind sluice can answer it. */
void upstream_refuse(struct upstream *up, const struct jsonrpc_msg *msg, const char *why);
/* Sends a notification as is. */
void upstream_notify(struct upstream *up, struct sl_str method, const struct json *params);

/* Lists every tool of a ready upstream (following nextCursor, at most 100 pages) and calls cb once
 * with a JSON array of Tool objects, or with tools == NULL and why when listing failed. */
typedef void up_tools_cb(struct upstream *up, const struct json *tools, const char *why,
                         void *arg);
void upstream_list_tools(struct upstream *up, up_tools_cb *cb, void *arg);

enum era upstream_era(const struct upstream *up);
/* The x-mcp-header marks learned from this upstream's tools/list replies (params.h). */
struct params *upstream_params(const struct upstream *up);
/* The tools' definition digests learned from the same replies (pin.h). */
struct pins *upstream_pins(const struct upstream *up);
/* The upstream's initialize result (legacy) or discover result (modern); NULL before ready. */
const struct json *upstream_info(const struct upstream *up);
/* The upstream's serverInfo name, or "" */
struct sl_str upstream_name(const struct upstream *up);
size_t upstream_out_len(const struct upstream *up);
void upstream_pause(struct upstream *up, bool paused);
size_t upstream_pending(const struct upstream *up);

/* Ends the upstream. A child: close stdin now, SIGTERM to its group after grace_ms, SIGKILL
 * grace_ms later. on_exit runs when it is gone (from the event loop, never inside this call). */
void upstream_terminate(struct upstream *up, int grace_ms);

#endif /* SL_UPSTREAM_H */
