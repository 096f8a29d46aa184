/* session.h: one client of sluice, and the data path for its messages:
 *
 *   client line -> parse -> era and envelope -> local answer | gate -> upstream -> reply
 *
 * A session owns its client channel and the requests it has forwarded (so a client's
 * notifications/cancelled reaches the right upstream request, and a reply finds its client id).
 * It borrows the shared state in struct session_env, which main owns. It knows nothing of its
 * transport: it writes through struct session_io and is fed by front_stdio or front_http. */
#ifndef SL_SESSION_H
#define SL_SESSION_H

#include <event2/event.h>

#include "audit.h"
#include "gate.h"
#include "upstream.h"

/* Per-client upstreams: how a session opens an upstream of its own (session_own.c). main sets
 * one for an HTTP upstream of the handshake era, and for a child with --child-per-session. */
struct session_opener {
    struct upstream *(*open)(void *arg, const struct upstream_cbs *cbs, void *cbarg, char *err,
                             size_t errlen);
    void *arg;
    struct event_base *base;
    size_t max;         /* sessions with an upstream of their own at once; 0: no limit */
    const char *what;   /* "child" or "upstream session", for the log */
};

/* A page approval became pending (approval.h): the server's name, the tool, the caller's
 * principal, the page's URL and when the question expires (unix seconds). Never argument
 * values. Must not block: it runs on the event loop, inside the call's handling. */
typedef void (*session_page_pending_fn)(void *arg, struct sl_str server, struct sl_str tool,
                                        struct sl_str caller, struct sl_str url, uint64_t exp);

struct session_env {
    struct gate_ctx *gate;
    struct policy *policy;
    struct audit *audit;
    struct upstream *up;
    struct store *store;        /* spent nonces and kept outcomes (store.h) */
    unsigned outcome_wait_s;    /* a retry waits this long for the first run's outcome */
    unsigned relayed_wait_s;    /* a legacy server's question stays open at its client so long
                                 * (--upstream-timeout); 0: for ever */
    const struct session_opener *opener; /* NULL: every session shares up */
    /* Parked calls (session_park.c) one principal may hold at once; 0: no cap. The principal
     * "anonymous" (every client of --principal anonymous) has none either. */
    size_t parks_per_principal;
    /* The approval page: the base of the URL people open (--approval-base-url, or the
     * listener's own); NULL: no page is served, and a call that needs it is refused. */
    const char *approval_base_url;
    session_page_pending_fn on_page_pending; /* NULL: nobody is told */
    void *on_page_pending_arg;
};

struct session;
struct store;

/* Where a session's messages for its client go: the front (stdio or HTTP) behind it. */
struct session_io {
    /* One message for the client. rel is the JSON text of the client request the message
     * belongs to (SL_STR_NULL: none, e.g. a list_changed); final: it is that request's response,
     * the last message about it. code: the JSON-RPC error code when line is an error response
     * (HTTP maps some to a status), else 0. */
    void (*send)(void *arg, struct sl_str rel, bool final, int code, struct sl_str line);
    size_t (*out_len)(void *arg);          /* bytes queued for the client */
    void (*pause)(void *arg, bool paused); /* stop/resume reading the client; NULL: never */
    /* The request rel ended without a response (the client cancelled it): HTTP ends its POST's
     * stream. NULL: nothing to do (stdio). */
    void (*ended)(void *arg, struct sl_str rel);
    /* The session's own upstream is ready again, or will not come back (session_own_coming is
     * false now): the front's requests that wait for it go on. NULL: none wait (stdio). */
    void (*own_settled)(void *arg);
};

/* A session that writes through io and whose confirmations are bound to principal (copied). It
 * reads nothing until session_start. */
struct session *session_new(struct event_base *base, struct session_env *env,
                            const struct session_io *io, void *io_arg, struct sl_str principal);
void session_start(struct session *s);              /* the upstream's era is known */
/* Answers every call held for a person's answer with a refusal (isError, text) and journals it
 * as refused for reason: the upstream it was for is gone ("upstream-gone"), or sluice is
 * stopping. The first message, if it still waits for the upstream's handshake, is answered too:
 * a tools/call is refused and journaled the same way, another request gets a JSON-RPC error.
 * Without this they would end with no response at all. */
void session_refuse_held(struct session *s, const char *reason, const char *text);
/* Cancels what it forwarded, except approved calls, which finish (their outcome is kept for a
 * retry): the session then frees itself after the last one. NULL ok. */
void session_free(struct session *s);
/* sluice stops: the approved calls of sessions whose client left are cancelled, and those
 * sessions freed. Call before the upstream and the store are freed. */
void session_stop_all(void);
/* Warns (sl_warn) when p's confirm_ttl exceeds HELD_SDK_TIMEOUT_SECONDS, the request timeout of
 * MCP SDK 1.x clients: a person slower than that loses the approval unless the client resets
 * its timeout on progress. Call at start and after a reload. */
#define HELD_SDK_TIMEOUT_SECONDS 60
void held_warn_ttl(const struct policy *p);
/* The client's stream for request rel closed before its response came (HTTP, legacy era, where
 * a disconnect is not a cancellation). A call held for it keeps waiting for an answer, but its
 * question no longer counts as open: the same call asked again (a reloaded client, a new session)
 * gets a question of its own instead of "an identical call is already waiting". */
void session_stream_lost(struct session *s, struct sl_str rel);

/* A line from a byte-stream client; the first one may wait for the upstream's handshake. */
void session_input_line(struct session *s, struct sl_str line);
void session_input_oversize(struct session *s);
/* A message already parsed (HTTP); the upstream must be ready. Takes ownership. */
void session_input(struct session *s, struct jsonrpc_msg *m);
/* The same, for a modern request whose envelope the caller read and found valid (env, as
 * era_read_envelope gave it): it is not read again. */
void session_input_modern(struct session *s, struct jsonrpc_msg *m,
                          const struct era_envelope *env);
/* Work in flight: forwarded requests, held or observed calls, relayed questions. */
size_t session_busy(const struct session *s);
/* Something waits for the client's own answer: a held call's question, a relayed request. */
bool session_awaits_client(const struct session *s);

/* The upstream finished its handshake and its tools are listed (or that took too long): the
 * message that waited for it is processed, and later ones no longer wait. */
void session_upstream_ready(struct session *s);
/* From a legacy upstream: a request (elicitation, sampling, roots) for this client. It is
 * relayed when the client declared that capability, else answered with an error. on: the
 * request of ours it came about (upstream.h), or NULL. */
void session_upstream_request(struct session *s, struct jsonrpc_msg *msg,
                              const struct up_request *on);
/* From the upstream: a notification for this client. */
void session_upstream_notification(struct session *s, struct jsonrpc_msg *msg);
/* The upstream's input drained: reading from the client may resume. */
void session_update_interest(struct session *s);
/* Logs a finding of lint_check (policy against the server) as a warning, each one once per
 * process, however often the client lists the tools. */
void session_log_finding(void *arg, bool missing, const char *message);
/* What sluice tells each client once as a warning log notification (notifications/message,
 * logger "sluice"), where the client accepts one (session_notice.c says where): the policy
 * check's findings against the server's tools. text is copied; NULL or "" clears it. A text
 * that differs from the last is told again, also to clients that heard the last. */
void session_set_notice(const char *text);
void session_notice_free(void);     /* at exit */
/* A request sluice refuses to serve (strict: the policy does not match the server's tools):
 * the first message, if it still waits, gets a JSON-RPC error (MCP_SERVER_ERROR, text), and so
 * does every later request; nothing reaches the upstream any more. text is copied. */
void session_refuse_all(struct session *s, const char *text);

/* With env->opener, a legacy client's initialize opens an upstream for that session alone,
 * initialized with the client's capabilities and clientInfo (session_own.c). full: as many as
 * opener->max are open or still ending (a new session is refused). count: how many are open or
 * still ending (one that exited and is not opened again, given up, no longer counts, though its
 * session lives); dying: how many of those are ending (their session is gone, the upstream not
 * yet). free_all: after the event loop ended, every one left is freed (a child still running is
 * killed). has_own: s holds one (none before its initialize, nor when that could not open one,
 * e.g. no child could be started, nor once it was given up). */
bool session_has_own(const struct session *s);
/* s's own upstream does not serve now but one is coming, so a request to s may wait for it (the
 * HTTP front's --upstream-wait) as for the shared one: it is starting, it is opened again after
 * the last one went, or it is a child that stopped reading its stdin and is being replaced.
 * False when s has none, or none will come (it went before it ever served). */
bool session_own_coming(const struct session *s);
bool session_own_full(const struct session_env *env);
size_t session_own_count(void);
size_t session_own_dying(void);
void session_own_free_all(void);

/* 2026-07-28 clients' subscriptions/listen streams in front of a legacy server
 * (session_listen.c). notify: a notification of the shared upstream, to every stream whose
 * filter asked for it. end_all: each stream ends with its final "complete" result (sluice
 * stops). */
void session_listen_notify(const struct jsonrpc_msg *n);
void session_listen_end_all(void);

#endif /* SL_SESSION_H */
