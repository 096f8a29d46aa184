/* jsonrpc.h: untrusted bytes to a JSON-RPC 2.0 message, under explicit limits.
 *
 * The reader (jsonrpc.c) accepts RFC 8259 JSON text only and enforces the limits as it reads.
 * Refused outright: invalid UTF-8 (including overlong forms, encoded surrogates, lone or
 * mismatched \u surrogate escapes), duplicate object keys at any depth, nesting beyond
 * SL_MAX_DEPTH, strings over SL_MAX_STRING, messages over SL_MAX_MESSAGE, number literals over
 * SL_MAX_NUMBER characters, comments, trailing garbage. Duplicate keys matter: most JSON peers
 * keep the last, so a proxy that read the first would check one tool and forward another. */
#ifndef SL_JSONRPC_H
#define SL_JSONRPC_H

#include "json.h"

/* JSON-RPC 2.0 and MCP error codes sluice emits (PROTOCOL.md §1.9). */
#define JSONRPC_PARSE_ERROR      (-32700)
#define JSONRPC_INVALID_REQUEST  (-32600)
#define JSONRPC_METHOD_NOT_FOUND (-32601)
#define JSONRPC_INVALID_PARAMS   (-32602)
#define JSONRPC_INTERNAL_ERROR   (-32603)
#define MCP_SERVER_ERROR         (-32000)  /* sluice's own: not ready, draining, refused */
#define MCP_SESSION_NOT_FOUND    (-32001)  /* Streamable HTTP: unknown or ended session */
#define MCP_RESOURCE_NOT_FOUND   (-32002)  /* 2025 servers; 2026-07-28 uses -32602 */
#define MCP_HEADER_MISMATCH      (-32020)
#define MCP_MISSING_CAPABILITY   (-32021)
#define MCP_UNSUPPORTED_VERSION  (-32022)

enum jsonrpc_kind {
    JSONRPC_REQUEST,       /* method + id */
    JSONRPC_NOTIFICATION,  /* method, no id */
    JSONRPC_RESULT,        /* id + result */
    JSONRPC_ERROR,         /* id (may be null) + error */
};

struct jsonrpc_msg {
    enum jsonrpc_kind kind;
    struct json *root;       /* the whole message object */
    struct json *id;         /* string or number; JSON_NULL for an error about an unreadable id */
    struct sl_str method;    /* requests and notifications */
    struct json *params;     /* object or array, or NULL */
    struct json *result;     /* JSONRPC_RESULT */
    struct json *error;      /* JSONRPC_ERROR: object with integer code and string message */
    struct sl_arena *arena;  /* owns everything above */
};

/* Why a parse failed, for the error response. */
struct jsonrpc_parse_error {
    int code;           /* JSONRPC_PARSE_ERROR or JSONRPC_INVALID_REQUEST */
    char msg[160];      /* human-readable cause */
    char id[128];       /* the request id as JSON text when it could be read, else "null" */
};

/* Parses one JSON value from buf[0..len) into arena a. Returns 0 and *out, or -1 with a message in
 * err (errlen bytes). Used for any JSON sluice reads (messages, tests, the demo). */
int json_parse(const char *buf, size_t len, struct sl_arena *a, struct json **out,
               char *err, size_t errlen);

/* Parses one JSON-RPC message. Returns 0 and *out (free with jsonrpc_msg_free), or -1 and fills
 * *err. A JSON array (batch) is refused with JSONRPC_INVALID_REQUEST. */
int jsonrpc_parse(const char *buf, size_t len, struct jsonrpc_msg **out,
                  struct jsonrpc_parse_error *err);
void jsonrpc_msg_free(struct jsonrpc_msg *m); /* NULL is a no-op */
/* A parse takes an offered buffer (sl_offer, base.h) of exactly buf[0..len) over instead of
 * copying it: its arena frees it. */

/* The id of a response too large to read, from its first and last bytes alone (a line chan.c
 * dropped): true with *id when they show a top-level "result" or "error", no "method", and one
 * "id" that is an unsigned integer, as a member of the head or as the text's last member. False
 * when any of that cannot be known (the id is then in the middle, or it is a string, or the
 * message is the server's own request). */
bool jsonrpc_cut_response_id(struct sl_str head, struct sl_str tail, uint64_t *id);

/* The id of a request too large to read (the peer's own question, which waits for an answer),
 * from the same ends: true with the id's JSON text appended to id_json when they show a top-level
 * "method", no "result" or "error", and one "id" that is an unsigned integer (in the head or as
 * the last member) or, in the head, a string of at most CUT_ID_MAX printable ASCII bytes without
 * escapes. False otherwise (a notification, an id in the middle, an id not echoed safely). */
#define CUT_ID_MAX 256
bool jsonrpc_cut_request_id(struct sl_str head, struct sl_str tail, struct sl_buf *id_json);

/* Writers: append one complete message, without newline. id_json is JSON text ("null" when the id
 * is unknown); data_json and result_json are JSON text or NULL. */
void jsonrpc_write_error(struct sl_buf *out, struct sl_str id_json, int code, const char *message,
                         const char *data_json);
void jsonrpc_write_result(struct sl_buf *out, struct sl_str id_json, struct sl_str result_json);
/* The same with the result as a tree, written straight into the message with json_write_relay:
 * a parsed result's unedited containers go out as their text, escapes as the peer sent them. */
void jsonrpc_write_result_value(struct sl_buf *out, struct sl_str id_json,
                                const struct json *result);

#endif /* SL_JSONRPC_H */
