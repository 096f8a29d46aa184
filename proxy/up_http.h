/* up_http.h: the transport to a Streamable HTTP upstream (PROTOCOL.md §5.2, §5.3): one POST per
 * message, keep-alive connections, replies as JSON or as an event stream. It knows HTTP, not
 * MCP: upstream.c above it keeps ids, eras and the handshake. */
#ifndef SL_UP_HTTP_H
#define SL_UP_HTTP_H

#include <event2/event.h>
#include <openssl/ssl.h>

#include "base.h"

struct up_http;

/* A message from the server (one JSON-RPC message, as text). */
typedef void up_http_msg_cb(struct sl_str msg, void *arg);
/* The POST of request id (JSON text) failed without a JSON-RPC answer; it is not retried.
 * status: the HTTP status the server answered with, or 0 when no answer came at all. */
typedef void up_http_fail_cb(const char *id, int status, const char *why, void *arg);

/* url: http://HOST[:PORT]/PATH or https://... (then tls is the client context that verifies the
 * server). read_timeout_s: the longest the server may stay silent while a reply is due (and an
 * idle connection is kept). Returns NULL with err on a bad URL. */
struct up_http *up_http_new(struct event_base *base, const char *url, SSL_CTX *tls,
                            int read_timeout_s, up_http_msg_cb *on_msg, up_http_fail_cb *on_fail,
                            void *arg, char *err, size_t errlen);
void up_http_free(struct up_http *h);
/* POSTs body. id: our request id (NULL for a notification or a response). For a 2026-07-28 request
 * (modern) the mirrored headers are made from method and name (name.p NULL: none), and extra
 * (header lines, "Name: value\r\n" each) goes along; otherwise the handshake session id and
 * version go along once known. */
void up_http_post(struct up_http *h, const char *id, struct sl_str method, struct sl_str name,
                  bool modern, struct sl_str extra, struct sl_str body);
/* Cancels the POST of request id (PROTOCOL.md §4.4, 2026-07-28: closing the request's stream is
 * the cancellation): its connection is closed, or it is dropped before it was sent. Nothing is
 * reported for it afterwards. */
void up_http_cancel(struct up_http *h, const char *id);
/* cb runs when the server answers 404 to a POST that carried our session id (PROTOCOL.md §5.3):
 * the handshake must be done again. */
void up_http_on_session_lost(struct up_http *h, void (*cb)(void *arg));
/* The protocol version negotiated with a handshake-era server, sent on every later POST. */
void up_http_set_version(struct up_http *h, const char *version);

#endif /* SL_UP_HTTP_H */
