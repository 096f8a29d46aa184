/* up_http.h: the transport to a Streamable HTTP upstream (PROTOCOL.md §5.2, §5.3): one POST per
 * message, keep-alive connections, replies as JSON or as an event stream. It knows HTTP, not
 * MCP: upstream.c above it keeps ids, eras and the handshake.
 *
 * A request is never retried (it may have run): a POST that ends without a JSON-RPC answer is
 * reported once through on_undelivered. A modern request carries the mirrored headers
 * (Mcp-Method, Mcp-Name, and Mcp-Param from the x-mcp-header marks); a legacy one the
 * session id and the version the server chose. A 404 to a POST that carried the current session
 * id means the server forgot it: on_session_lost. Toward a 2025-11-25 server the session's GET
 * stream is kept open once notifications/initialized was accepted, and a request's event stream
 * that ends after an event id but before its answer is resumed by GET with Last-Event-ID (both
 * deliver through on_message). Stopping closes the GET stream and DELETEs the session (2 s at
 * most), then reports on_closed and on_exit from the event loop; nothing else ends an HTTP
 * upstream. */
#ifndef SL_UP_HTTP_H
#define SL_UP_HTTP_H

#include <event2/event.h>
#include <openssl/ssl.h>

#include "params.h"
#include "up_transport.h"

/* url: http://HOST[:PORT]/PATH or https://... (then tls is the client context that verifies the
 * server). read_timeout_s: the longest the server may stay silent while a reply is due (and an
 * idle connection is kept). marks: the caller's, read at every tools/call, outlives the
 * transport. Returns NULL with err on a bad URL. */
struct up_transport *up_http_new(struct event_base *base, const char *url, SSL_CTX *tls,
                                 int read_timeout_s, const struct params *marks,
                                 const struct up_transport_cbs *cbs, void *arg, char *err,
                                 size_t errlen);

#endif /* SL_UP_HTTP_H */
