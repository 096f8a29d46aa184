/* http1.h: HTTP/1.1 message heads and chunked bodies, parsed from untrusted bytes (RFC 9112):
 * requests from clients, responses from an HTTP upstream.
 *
 * Pure functions over a buffer, so every rule can be unit-tested and fuzzed. Strict where
 * leniency has caused request smuggling elsewhere: no obs-fold, no whitespace before the colon,
 * no Transfer-Encoding on requests (sluice needs Content-Length), one Content-Length value,
 * control characters refused in names and values, request lines ended by CRLF only (a bare LF
 * is refused: a proxy in front may split lines there differently). Responses come from the
 * operator's own upstream: their lines, and chunked bodies, may end in a bare LF. */
#ifndef SL_HTTP1_H
#define SL_HTTP1_H

#include <string.h>
#include <sys/types.h>

#include "base.h"

#define HTTP1_MAX_HEADERS 64

/* The fields sluice reads, found once while the head is parsed (http1_field). */
enum http1_field {
    HTTP1_ACCEPT,
    HTTP1_AUTHORIZATION,
    HTTP1_CONNECTION,
    HTTP1_CONTENT_LENGTH,
    HTTP1_CONTENT_TYPE,
    HTTP1_EXPECT,
    HTTP1_MCP_METHOD,
    HTTP1_MCP_NAME,
    HTTP1_MCP_PROTOCOL_VERSION,
    HTTP1_MCP_SESSION_ID,
    HTTP1_ORIGIN,
    HTTP1_TRANSFER_ENCODING,
    HTTP1_FIELDS
};

struct http1_header {
    struct sl_str name, value;      /* value without surrounding SP/HTAB */
    uint64_t key;                   /* the name's first 8 bytes lowercased, zero-padded: a
                                     * lookup compares it before the name */
    int field;                      /* enum http1_field, or -1 */
};

struct http1_head {
    struct sl_str method;
    struct sl_str path;             /* the target up to '?' */
    int status;                     /* a response's status code */
    bool chunked;                   /* a response's Transfer-Encoding: chunked */
    int minor;                      /* HTTP/1.minor */
    bool keep_alive;                /* from the version and Connection */
    bool has_length;
    size_t content_length;
    uint8_t at[HTTP1_FIELDS];       /* per field: 1 + its index in h, or 0 when absent */
    uint32_t repeated;              /* bit per field that appears more than once */
    size_t nh;
    struct http1_header h[HTTP1_MAX_HEADERS];
};

/* Parses the head at the start of p[0..len). Returns its length (> 0) when complete, 0 when more
 * bytes are needed, or the negated HTTP status to refuse it with: -400 malformed (a bare LF
 * included), -431 over
 * max_head bytes or HTTP1_MAX_HEADERS lines, -501 Transfer-Encoding, -505 not HTTP/1.x. The
 * slices in *h point into p. */
ssize_t http1_parse_head(const char *p, size_t len, size_t max_head, struct http1_head *h);

/* The same for a response head (status line first). Transfer-Encoding is allowed here but only
 * as exactly "chunked", and never together with Content-Length. Returns the head's length, 0
 * for more, or -502 (malformed, over max_head: the upstream is not trusted either). */
ssize_t http1_parse_response_head(const char *p, size_t len, size_t max_head,
                                  struct http1_head *h);

/* The chunked transfer coding (RFC 9112 §7.1), decoded as bytes arrive. Extensions and trailer
 * fields are read and ignored. */
struct http1_chunks {
    int state;
    size_t left;                    /* data bytes still to come in this chunk */
};
#define HTTP1_CHUNKS_INIT { 0, 0 }
/* Decodes from p[0..len), appending the data to out. Returns the bytes consumed (fewer than len
 * when a size or trailer line is incomplete, or when the body ended: what follows is not the
 * body's), or -1 when malformed. */
ssize_t http1_dechunk(struct http1_chunks *c, const char *p, size_t len, struct sl_buf *out);
bool http1_dechunk_done(const struct http1_chunks *c);

/* Header `name` (case-insensitive): 1 and *value when present once, 0 when absent, -1 when it
 * appears more than once (ambiguous: the caller refuses). */
int http1_header_n(const struct http1_head *h, const char *name, size_t len,
                   struct sl_str *value);
#define http1_header(h, name, value) http1_header_n((h), (name), strlen(name), (value))
/* The same for a field of enum http1_field, without searching. */
int http1_field(const struct http1_head *h, enum http1_field f, struct sl_str *value);

/* Whether s is a non-empty RFC 9110 token (a header name, for one). */
bool http1_is_token(struct sl_str s);

/* Whether a comma-separated header value lists token (case-insensitive, parameters ignored).
 * token: tl bytes, none of them ',', ';', SP or HTAB. */
bool http1_list_has_n(struct sl_str value, const char *token, size_t tl);
#define http1_list_has(value, token) http1_list_has_n((value), (token), strlen(token))

/* Whether an authority (host[:port], as in Host or after an Origin's scheme) names this
 * machine by a name no DNS answer can take over: localhost, 127.0.0.1 or [::1] (any case),
 * with a port of 1 to 5 digits or none. What DNS rebinding cannot forge. */
bool http1_authority_is_local(struct sl_str auth);

/* Whether two authorities (host[:port]) name the same host and port: equal ignoring case, or two
 * IPv6 literals of one address however written ("[::1]", "[0:0:0:0:0:0:0:1]", "[::0001]"), with
 * their ports equal byte for byte. A browser writes a literal in its own form, not the one
 * sluice was given. A default port is the caller's to take off first. */
bool http1_authority_same(struct sl_str a, struct sl_str b);

const char *http1_reason(int status);

#endif /* SL_HTTP1_H */
