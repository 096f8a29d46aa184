/* params.h: the Mcp-Param-* headers of 2026-07-28 HTTP (PROTOCOL.md §5.2). A tool's inputSchema
 * may mark an argument with "x-mcp-header": "Region"; an HTTP tools/call of that tool then
 * carries "Mcp-Param-Region: <value>", so that routers can read it without parsing the body.
 *
 * sluice learns the marks from the upstream's tools/list replies, then: writes the headers on
 * every tools/call it sends to a 2026-07-28 HTTP upstream (the body being sent is the source,
 * whatever the client sent or whichever era it speaks), and checks a client's headers against
 * the body it came with. The headers are never trusted for a decision: the gate reads the body. */
#ifndef SL_PARAMS_H
#define SL_PARAMS_H

#include "base.h"
#include "json.h"

struct params;

struct params *params_new(void);
void params_free(struct params *ps);

/* Replaces what is known of the tools in a tools/list result's "tools" array. A tool whose
 * marks are invalid (a name that is not a token, two names equal ignoring case, a mark on a
 * property that is not a string, integer or boolean, or off a "properties" chain) gets no
 * headers, as clients drop such tools. */
void params_learn(struct params *ps, const struct json *tools);

/* Appends "Mcp-Param-NAME: value\r\n" for each marked argument of tool that args holds (not
 * null): strings as they are when header-safe, else in the base64 sentinel; integers in their
 * shortest form; booleans as true/false. */
void params_write(const struct params *ps, struct sl_str tool, const struct json *args,
                  struct sl_buf *out);

/* Checks a client's headers: get(name, arg) returns 1 and the value of header NAME, 0 when it
 * is absent, -1 when repeated. Returns NULL when they agree with args, else the problem (a
 * marked argument without its header, a header without its argument, a value that differs). */
const char *params_check(const struct params *ps, struct sl_str tool, const struct json *args,
                         int (*get)(const char *name, struct sl_str *value, void *arg),
                         void *arg);

/* A mirrored header value (Mcp-Name, Mcp-Param-*): v as it is when it is plain header-safe
 * ASCII, else "=?base64?<base64 of v>?=". */
void params_header_value(struct sl_buf *out, struct sl_str v);
/* The reverse, for a value a client sent: appends the decoded text. Returns -1 for a sentinel
 * that is not canonical padded base64 of UTF-8. */
int params_header_decode(struct sl_str v, struct sl_buf *out);
/* Whether header value v, decoded as above, is the text want (an undecodable v is not). */
bool params_header_equals(struct sl_str v, struct sl_str want);

#endif /* SL_PARAMS_H */
