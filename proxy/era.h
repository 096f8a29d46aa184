/* era.h: the two protocol eras and the translations between them (PROTOCOL.md §1, §7.7).
 *
 * "modern" is MCP 2026-07-28: no handshake, a _meta envelope on every request, resultType on
 * every result. "legacy" is 2025-11-25 and earlier: an initialize handshake per connection.
 * These functions only read and rewrite parsed values; they do no I/O. */
#ifndef SL_ERA_H
#define SL_ERA_H

#include "json.h"
#include "jsonrpc.h"

#define ERA_MODERN_VERSION "2026-07-28"
#define ERA_LEGACY_LATEST  "2025-11-25"
#define META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CLIENT_CAPS      "io.modelcontextprotocol/clientCapabilities"
#define META_CLIENT_INFO      "io.modelcontextprotocol/clientInfo"
#define META_SERVER_INFO      "io.modelcontextprotocol/serverInfo"

enum era { ERA_UNKNOWN, ERA_LEGACY, ERA_MODERN };

/* The envelope of a modern request, once validated. */
struct era_envelope {
    bool modern;                   /* params._meta names a protocol version: a modern request */
    const struct json *caps;      /* clientCapabilities object */
    const char *version;          /* borrowed from the message */
};

/* Reads the envelope claim from a request's params. Returns 0 when there is no claim or the
 * envelope is valid; otherwise -1 with *code (JSONRPC_INVALID_PARAMS or MCP_UNSUPPORTED_VERSION)
 * and a static *message and *data_json set for the error response (data may point into buf,
 * which the caller frees). */
int era_read_envelope(const struct json *params, struct era_envelope *env, int *code,
                      const char **message, struct sl_buf *data);

/* True iff caps (a ClientCapabilities object) declares form elicitation: "elicitation": {} or
 * "elicitation": {"form": {...}}. A declaration of url mode only does not count. */
bool era_caps_form_elicitation(const struct json *caps);

/* A copy of params without the reserved io.modelcontextprotocol/ envelope keys in _meta (and
 * without _meta when nothing else is left), for a legacy upstream. */
struct json *era_strip_envelope(struct sl_arena *a, const struct json *params);

/* The _meta envelope a legacy client's requests carry to a modern upstream: protocolVersion and
 * clientCapabilities caps (NULL: {}), borrowed, not copied. From a, kept with its text (the
 * writer copies it whole): build it once per client, and edit neither it nor caps. */
struct json *era_envelope_new(struct sl_arena *a, const struct json *caps);

/* A copy of params with envelope (era_envelope_new) added to its _meta, for a legacy client
 * talking to a modern upstream: envelope is params' whole _meta when it has none. envelope
 * NULL: a new one with capabilities {}, which the caller may edit. */
struct json *era_add_envelope(struct sl_arena *a, const struct json *params,
                              const struct json *envelope);

/* Rewrites a legacy upstream's result for a modern client: adds resultType "complete", and for
 * list and read results adds ttlMs 0 and cacheScope "private" (PROTOCOL.md §6.5). */
struct json *era_result_to_modern(struct sl_arena *a, struct sl_str method, const struct json *res);
/* Rewrites a modern upstream's result for a legacy client: drops resultType, ttlMs, cacheScope. */
struct json *era_result_to_legacy(struct sl_arena *a, const struct json *res);

/* Logging (PROTOCOL.md §1.5): a LoggingLevel's rank in RFC 5424 order, debug 0 to emergency 7;
 * -1 for anything else. */
#define ERA_LOG_WARNING 3
#define META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
int era_log_rank(const struct json *level);
/* Whether a modern request whose _meta is meta may be sent note, a notification of the server
 * about it (PROTOCOL.md §4.6): notifications/progress, and notifications/message only when
 * meta named a logLevel at or below the message's level (a server MUST NOT log to a request
 * that named none). Nothing else: a handshake-era server's elicitation/complete or
 * tasks/status has no meaning in 2026-07-28. */
bool era_modern_note_wanted(const struct json *meta, const struct jsonrpc_msg *note);

/* The version a legacy server answers to an initialize asking for `requested`. */
const char *era_negotiate_legacy(const struct json *requested);

#endif /* SL_ERA_H */
