/* up_transport.h: how upstream.c reaches its server; private to upstream.c and the transports.
 *
 * upstream.c speaks the protocol (eras, the handshake, request ids, reply routing) and moves
 * every message through a struct up_transport, never knowing which one it has:
 *   up_stdio.c  a child process on pipes, one message per line (PROTOCOL.md §5.1);
 *   up_http.c   a Streamable HTTP server, one POST per message (PROTOCOL.md §5.2, §5.3).
 * A transport is an ops table plus its own state (redis's ConnectionType, replay.h's ops): it
 * embeds struct up_transport first and its ops get that pointer back.
 *
 * What a transport reports goes up through struct up_transport_cbs, in this order at the end:
 * on_closed once (no message comes any more), then on_exit once (gone for good). A transport
 * may deliver messages on more than one channel (an HTTP server's replies, its GET stream, a
 * resumed stream): all of them come through on_message, which says which request the channel
 * answers when it answers only one: a POST's reply carries the response to that POST's request
 * and to no other (PROTOCOL.md §5.2), so a response there for any other id is not routed. */
#ifndef SL_UP_TRANSPORT_H
#define SL_UP_TRANSPORT_H

#include "base.h"
#include "json.h"

/* One message to the server. */
struct up_msg {
    const char *id;            /* our request id (JSON text), or NULL: a notification, a response */
    struct sl_str method;      /* SL_STR_NULL for a response */
    const struct json *params; /* the request's params, or NULL */
    bool modern;               /* a modern request (server/discover, or any once modern) */
    struct sl_str line;        /* the whole message, JSON text without a line break */
};

struct up_transport;

struct up_transport_ops {
    /* Sends m (copied: nothing of m is kept). */
    void (*send)(struct up_transport *t, const struct up_msg *m);
    /* Withdraws request id from the server. Returns true when that alone told the server (a
     * 2026-07-28 HTTP stream closed); false when the caller must send notifications/cancelled. */
    bool (*cancel)(struct up_transport *t, const char *id, bool modern);
    /* The protocol version a legacy server chose, for transports that repeat it. */
    void (*set_version)(struct up_transport *t, const char *version);
    /* Ends the transport; on_closed and on_exit follow (later, from the event loop). grace_ms:
     * how long a child gets after its stdin closed, and again after SIGTERM. */
    void (*stop)(struct up_transport *t, int grace_ms);
    size_t (*out_len)(const struct up_transport *t); /* bytes queued towards the server */
    void (*pause)(struct up_transport *t, bool paused); /* stop/resume reading from it */
    void (*free)(struct up_transport *t); /* without callbacks; a child still running is killed */
    /* Optional (NULL: the transport's end says it all, as a child's exit): checks that the
     * server can be reached without sending it anything (no request, no session touched) and
     * reports through on_liveness once, from the event loop, within a few seconds. */
    void (*liveness)(struct up_transport *t);
};

struct up_transport {
    const struct up_transport_ops *ops;
};

/* What a transport tells the upstream above it; arg is the one given at creation. */
struct up_transport_cbs {
    /* One JSON-RPC message, as text. for_id: the only request id (JSON text) a response on
     * this channel may answer ("" for none: a POST of a notification or a response), or NULL
     * when any may (a child's stdout; a stream the transport checked itself). */
    void (*on_message)(struct sl_str msg, const char *for_id, void *arg);
    /* Request id (JSON text) got no JSON-RPC answer and is not retried. status: the HTTP status
     * the server answered with, or 0 when no answer came at all. */
    void (*on_undelivered)(const char *id, int status, const char *why, void *arg);
    void (*on_session_lost)(void *arg); /* the server forgot our handshake: do it again */
    void (*on_drained)(void *arg);      /* the output to the server fell below low water */
    /* The server reads nothing more (a child closed its stdin): what it wrote still comes, then
     * on_closed. Only a child's transport says so. */
    void (*on_deaf)(void *arg);
    void (*on_closed)(const char *why, void *arg); /* no more messages; why: for the waiting */
    void (*on_exit)(const char *why, void *arg);   /* gone ("exited with status 0", ...) */
    void (*on_liveness)(bool reachable, const char *why, void *arg); /* its result */
    /* Whether request id (JSON text) still waits for its answer: an HTTP event stream that
     * ended before it is fetched again only then. Optional. */
    bool (*waits_for)(const char *id, void *arg);
};

#endif /* SL_UP_TRANSPORT_H */
