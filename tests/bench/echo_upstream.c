/* echo_upstream: a fast MCP server for benchmarks. Not part of sluice.
 *
 *   echo_upstream --stdio          newline-delimited JSON-RPC on stdin/stdout
 *   echo_upstream --http PORT      Streamable HTTP on 127.0.0.1:PORT, path /mcp (PORT 0: any;
 *                                  the bound port is printed on stderr as "listening 127.0.0.1:N")
 *
 * It serves both protocol eras on the same endpoint, per request (PROTOCOL.md §1.5), unless
 * --legacy-only makes it a 2025-11-25 server (server/discover unknown, no envelope read):
 *   - a request whose params._meta carries "io.modelcontextprotocol/protocolVersion" is
 *     2026-07-28: the envelope is validated (§1.3), on HTTP also the mirrored headers (§5.2),
 *     and every result carries "resultType":"complete";
 *   - anything else is 2025-11-25: on HTTP `initialize` mints an Mcp-Session-Id and every later
 *     legacy request must carry a live one (§5.3).
 * Methods: initialize, server/discover, ping, tools/list (tools `echo`, `write` and `blob`),
 * tools/call (the result's text is arguments.text; for `blob`, arguments.text followed by the
 * filler up to arguments.bytes bytes in all, and arguments.pad, any size, is ignored: a large
 * argument or a large result on demand). Notifications are dropped; anything else is -32601.
 *
 * The stdio loop is plain read/write: everything that arrived in one read is answered in one
 * write, so a proxy that pipelines many clients onto one pipe gets batched replies. The HTTP
 * server is a small epoll loop (keep-alive, pipelining, Content-Length or chunked request
 * bodies, one read and one write per request) rather than evhttp, which spends four
 * epoll_ctl calls per request: the upstream should cost as little as possible next to the
 * proxy being measured. It is single-threaded, like the stdio mode.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "json.h"
#include "jsonrpc.h"

#define MODERN_VERSION "2026-07-28"
#define LEGACY_VERSION "2025-11-25"
#define ENV_VERSION "io.modelcontextprotocol/protocolVersion"
#define ENV_CAPS "io.modelcontextprotocol/clientCapabilities"
#define MAX_LINE (16u << 20) /* one stdio message or HTTP body */
#define SESSION_HEX 32

/* ---- growable output buffer ---------------------------------------------------------- */

struct buf {
    char *p;
    size_t len, cap;
};

static void buf_reserve(struct buf *b, size_t more)
{
    if (b->len + more <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        fprintf(stderr, "echo_upstream: out of memory\n");
        exit(1);
    }
    b->p = p;
    b->cap = cap;
}

static void buf_add(struct buf *b, const char *s, size_t n)
{
    if (!n)
        return;
    buf_reserve(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void buf_adds(struct buf *b, const char *s)
{
    buf_add(b, s, strlen(s));
}

/* A JSON string literal. The input came out of a validating parser, so it is UTF-8; a string
 * with U+0000 in it ends there, which no benchmark request has. */
static void buf_add_jstr(struct buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    buf_reserve(b, 2 + strlen(s) * 6);
    char *o = b->p + b->len;
    *o++ = '"';
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') {
            *o++ = '\\';
            *o++ = (char)*c;
        } else if (*c < 0x20) {
            memcpy(o, "\\u00", 4);
            o[4] = hex[*c >> 4];
            o[5] = hex[*c & 15];
            o += 6;
        } else {
            *o++ = (char)*c;
        }
    }
    *o++ = '"';
    b->len = (size_t)(o - b->p);
}

/* ---- options ------------------------------------------------------------------------- */

static struct {
    unsigned corrupt_every;    /* hidden --corrupt: every Nth tools/call text is altered */
    unsigned corrupt_id_every; /* hidden --corrupt-id: every Nth tools/call id is altered */
    unsigned long calls;
    bool legacy_only;          /* --legacy-only: a 2025-11-25 server, no 2026-07-28 at all */
} g;

/* ---- the MCP answers ------------------------------------------------------------------ */

/* What the HTTP layer knows about a request; NULL fields on stdio. */
struct http_ctx {
    const char *version_hdr, *method_hdr, *name_hdr;
};

struct reply {
    int status;          /* HTTP status */
    bool none;           /* a notification: no JSON-RPC reply (202 on HTTP) */
    bool mint_session;   /* a legacy initialize answered: mint Mcp-Session-Id */
    bool modern;         /* the request carried the modern envelope */
};

/* The parsed request: sluice's reader (libsluice), the cheapest parser in the tree, so that the
 * upstream costs as little as possible next to the proxy being measured. Strings it returns are
 * NUL-terminated; numbers are slices of the message. */
typedef const struct json *jval;

static bool is_string(jval v) { return v && v->type == JSON_STRING; }
static bool is_object(jval v) { return v && v->type == JSON_OBJECT; }

static bool is_integer(jval v)
{
    return v && v->type == JSON_NUMBER && !memchr(v->u.num.p, '.', v->u.num.len) &&
           !memchr(v->u.num.p, 'e', v->u.num.len) && !memchr(v->u.num.p, 'E', v->u.num.len);
}

/* The value at path (a NULL-terminated list of keys) below v, or NULL. */
static jval get_path(jval v, const char *const *path)
{
    for (; v && *path; path++)
        v = is_object(v) ? json_get(v, *path) : NULL;
    return v;
}

static jval get_string(jval v, const char *const *path)
{
    jval s = get_path(v, path);
    return is_string(s) ? s : NULL;
}

static const char *k_params[] = {"params", NULL};
static const char *k_meta_version[] = {"params", "_meta", ENV_VERSION, NULL};
static const char *k_meta_caps[] = {"params", "_meta", ENV_CAPS, NULL};
static const char *k_name[] = {"params", "name", NULL};
static const char *k_text[] = {"params", "arguments", "text", NULL};
static const char *k_args[] = {"params", "arguments", NULL};

static void put_head(struct buf *out, jval id)
{
    buf_adds(out, "{\"jsonrpc\":\"2.0\",\"id\":");
    if (is_string(id))
        buf_add_jstr(out, id->u.str.p);
    else
        buf_add(out, id->u.num.p, id->u.num.len);
}

static void put_error(struct buf *out, jval id, int code, const char *msg, const char *data)
{
    char num[16];
    if (id)
        put_head(out, id);
    else
        buf_adds(out, "{\"jsonrpc\":\"2.0\",\"id\":null");
    snprintf(num, sizeof num, "%d", code);
    buf_adds(out, ",\"error\":{\"code\":");
    buf_adds(out, num);
    buf_adds(out, ",\"message\":");
    buf_add_jstr(out, msg);
    if (data) {
        buf_adds(out, ",\"data\":");
        buf_adds(out, data);
    }
    buf_adds(out, "}}");
}

static const char tool_list[] =
    "\"tools\":[{\"name\":\"echo\",\"description\":\"Returns arguments.text\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}},"
    "\"annotations\":{\"readOnlyHint\":true}},"
    "{\"name\":\"write\",\"description\":\"Pretends to write arguments.text (for gated calls)\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}},"
    "\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":true}},"
    "{\"name\":\"blob\",\"description\":\"Returns arguments.text padded to arguments.bytes "
    "bytes; ignores arguments.pad (for large payloads)\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"},"
    "\"pad\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"}}},"
    "\"annotations\":{\"readOnlyHint\":true}}]";

/* blob's padding: byte i of a result (counted from the start of the text) is
 * BLOB_FILLER[i % 26], as loadgen expects it. */
#define BLOB_FILLER "abcdefghijklmnopqrstuvwxyz"
#define BLOB_MAX (16u << 20)

/* blob: arguments.text then the filler up to arguments.bytes bytes (no escaping needed: the
 * filler is ASCII letters). */
static void put_blob_text(struct buf *out, const char *t, jval bytes)
{
    size_t len = strlen(t), want = 0;
    if (is_integer(bytes))
        want = strtoul(bytes->u.num.p, NULL, 10);
    if (want > BLOB_MAX)
        want = BLOB_MAX;
    buf_add_jstr(out, t);
    if (want <= len)
        return;
    out->len--; /* reopen the string literal */
    buf_reserve(out, want - len + 1);
    for (size_t i = len; i < want; i++)
        out->p[out->len++] = BLOB_FILLER[i % 26];
    out->p[out->len++] = '"';
}

static void on_tools_call(jval req, jval id, bool modern, struct buf *out)
{
    jval name = get_string(req, k_name);
    jval args = get_path(req, k_args);
    jval text = get_string(req, k_text);
    bool blob = name && !strcmp(name->u.str.p, "blob");
    if (!name || (strcmp(name->u.str.p, "echo") && strcmp(name->u.str.p, "write") && !blob)) {
        put_error(out, id, -32602, "Unknown tool", NULL);
        return;
    }
    if (args && !is_object(args)) {
        put_error(out, id, -32602, "arguments must be an object", NULL);
        return;
    }
    g.calls++;
    bool bad_id = g.corrupt_id_every && g.calls % g.corrupt_id_every == 0;
    bool bad_text = g.corrupt_every && g.calls % g.corrupt_every == 0;
    if (bad_id) {
        buf_adds(out, "{\"jsonrpc\":\"2.0\",\"id\":\"corrupt\"");
    } else {
        put_head(out, id);
    }
    buf_adds(out, ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":");
    const char *t = text ? text->u.str.p : "";
    if (bad_text) {
        struct buf tmp = {0};
        buf_adds(&tmp, t);
        buf_add(&tmp, "~corrupt", 9); /* includes the NUL */
        buf_add_jstr(out, tmp.p);
        free(tmp.p);
    } else if (blob) {
        static const char *k_bytes[] = {"params", "arguments", "bytes", NULL};
        put_blob_text(out, t, get_path(req, k_bytes));
    } else {
        buf_add_jstr(out, t);
    }
    buf_adds(out, "}]");
    if (modern)
        buf_adds(out, ",\"resultType\":\"complete\"");
    buf_adds(out, "}}");
}

/* Validates the modern envelope and, on HTTP, the mirrored headers. Writes an error and
 * returns false when the request must be refused. */
static bool modern_ok(jval req, const char *method, jval id, const struct http_ctx *h,
                      struct buf *out, struct reply *r)
{
    jval ver = get_path(req, k_meta_version);
    jval caps = get_path(req, k_meta_caps);
    if (!is_string(ver) || !is_object(caps)) {
        put_error(out, id, -32602, "Invalid _meta envelope", NULL);
        r->status = 400;
        return false;
    }
    if (strcmp(ver->u.str.p, MODERN_VERSION)) {
        struct buf data = {0};
        buf_adds(&data, "{\"supported\":[\"" MODERN_VERSION "\",\"" LEGACY_VERSION "\"],"
                        "\"requested\":");
        buf_add_jstr(&data, ver->u.str.p);
        buf_add(&data, "}", 2); /* with the NUL */
        put_error(out, id, -32022, "Unsupported protocol version", data.p);
        free(data.p);
        r->status = 400;
        return false;
    }
    if (!h)
        return true;
    const char *why = NULL;
    if (!h->version_hdr || strcmp(h->version_hdr, MODERN_VERSION))
        why = "Header mismatch: MCP-Protocol-Version";
    else if (!h->method_hdr || strcmp(h->method_hdr, method))
        why = "Header mismatch: Mcp-Method";
    else if (!strcmp(method, "tools/call")) {
        jval name = get_string(req, k_name);
        if (!name || !h->name_hdr || strcmp(h->name_hdr, name->u.str.p))
            why = "Header mismatch: Mcp-Name";
    }
    if (why) {
        put_error(out, id, -32020, why, NULL);
        r->status = 400;
        return false;
    }
    return true;
}

/* Answers one parsed message into out (nothing for a notification or a response). */
static void handle(jval req, const struct http_ctx *h, struct buf *out, struct reply *r)
{
    static const char *k_method[] = {"method", NULL};
    static const char *k_id[] = {"id", NULL};
    r->status = 200;
    if (!is_object(req)) {
        put_error(out, NULL, -32600, "Invalid Request", NULL);
        r->status = 400;
        return;
    }
    jval method = get_string(req, k_method);
    jval id = get_path(req, k_id);
    if (id && !is_string(id) && !is_integer(id)) {
        put_error(out, NULL, -32600, "Invalid Request", NULL);
        r->status = 400;
        return;
    }
    if (!method || !id) { /* a notification, or a response to us: nothing to say */
        r->none = true;
        r->status = 202;
        return;
    }
    const char *m = method->u.str.p;
    jval params = get_path(req, k_params);
    if (params && !is_object(params)) {
        put_error(out, id, -32602, "params must be an object", NULL);
        return;
    }
    r->modern = !g.legacy_only && get_path(req, k_meta_version) != NULL;
    if (!r->modern && h && h->version_hdr && !strcmp(h->version_hdr, MODERN_VERSION)) {
        put_error(out, id, -32602, "Missing _meta envelope key " ENV_VERSION, NULL);
        r->status = 400;
        return;
    }
    if (r->modern && !modern_ok(req, m, id, h, out, r))
        return;
    if (!strcmp(m, "tools/call")) {
        on_tools_call(req, id, r->modern, out);
        return;
    }
    if (!strcmp(m, "tools/list")) {
        put_head(out, id);
        buf_adds(out, ",\"result\":{");
        buf_adds(out, tool_list);
        if (r->modern)
            buf_adds(out, ",\"ttlMs\":0,\"cacheScope\":\"private\",\"resultType\":\"complete\"");
        buf_adds(out, "}}");
    } else if (!strcmp(m, "ping") && !r->modern) {
        put_head(out, id);
        buf_adds(out, ",\"result\":{}}");
    } else if (!strcmp(m, "initialize") && !r->modern) {
        put_head(out, id);
        buf_adds(out, ",\"result\":{\"protocolVersion\":\"" LEGACY_VERSION "\","
                      "\"capabilities\":{\"tools\":{}},"
                      "\"serverInfo\":{\"name\":\"echo\",\"version\":\"1\"}}}");
        r->mint_session = true;
    } else if (!strcmp(m, "server/discover") && !g.legacy_only) {
        put_head(out, id);
        buf_adds(out, ",\"result\":{\"supportedVersions\":[\"" MODERN_VERSION "\"],"
                      "\"capabilities\":{\"tools\":{}},"
                      "\"serverInfo\":{\"name\":\"echo\",\"version\":\"1\"},"
                      "\"ttlMs\":0,\"cacheScope\":\"private\",\"resultType\":\"complete\","
                      "\"_meta\":{\"io.modelcontextprotocol/serverInfo\":"
                      "{\"name\":\"echo\",\"version\":\"1\"}}}}");
    } else {
        put_error(out, id, -32601, "Method not found", NULL);
        if (r->modern && h)
            r->status = 404;
    }
}

/* One message's tree, or NULL when it is not JSON. It lives in an arena that the next parse
 * frees, so no caller frees anything. */
static struct json *parse(const char *text, size_t len)
{
    static struct sl_arena *arena;
    char err[128];
    struct json *v;
    sl_arena_free(arena);
    arena = sl_arena_new();
    return json_parse(text, len, arena, &v, err, sizeof err) ? NULL : v;
}

/* Parses text (NUL-terminated) and answers it. */
static void handle_text(const char *text, const struct http_ctx *h, struct buf *out,
                        struct reply *r)
{
    struct json *req = parse(text, strlen(text));
    if (!req) {
        put_error(out, NULL, -32700, "Parse error", NULL);
        r->status = 400;
        return;
    }
    handle(req, h, out, r);
}

/* ---- stdio ---------------------------------------------------------------------------- */

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int run_stdio(void)
{
    struct buf in = {0}, out = {0};
    buf_reserve(&in, 1 << 16);
    for (;;) {
        if (in.cap - in.len < 4096)
            buf_reserve(&in, in.cap);
        ssize_t n = read(0, in.p + in.len, in.cap - in.len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        in.len += (size_t)n;
        size_t start = 0;
        char *nl;
        while ((nl = memchr(in.p + start, '\n', in.len - start))) {
            *nl = '\0';
            if (nl > in.p + start && nl[-1] == '\r')
                nl[-1] = '\0';
            if (in.p[start]) {
                struct reply r = {0};
                size_t mark = out.len;
                handle_text(in.p + start, NULL, &out, &r);
                if (out.len != mark)
                    buf_add(&out, "\n", 1);
            }
            start = (size_t)(nl - in.p) + 1;
        }
        memmove(in.p, in.p + start, in.len - start);
        in.len -= start;
        if (in.len > MAX_LINE) {
            fprintf(stderr, "echo_upstream: line over %u bytes\n", MAX_LINE);
            return 1;
        }
        if (out.len && write_all(1, out.p, out.len) < 0)
            break;
        out.len = 0;
    }
    free(in.p);
    free(out.p);
    return 0;
}

/* ---- HTTP ----------------------------------------------------------------------------- */

/* Live session ids: an open-addressing set of fixed-size hex strings. */
static struct {
    char (*slot)[SESSION_HEX + 1];
    size_t cap, used;
} sessions;

static size_t sess_hash(const char *s)
{
    size_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static long sess_find(const char *id)
{
    if (!sessions.cap || strlen(id) != SESSION_HEX)
        return -1;
    for (size_t i = sess_hash(id) & (sessions.cap - 1);; i = (i + 1) & (sessions.cap - 1)) {
        if (!sessions.slot[i][0])
            return -1;
        if (!strcmp(sessions.slot[i], id))
            return (long)i;
    }
}

static void sess_add(const char *id)
{
    if ((sessions.used + 1) * 2 > sessions.cap) {
        size_t old_cap = sessions.cap;
        char (*old)[SESSION_HEX + 1] = sessions.slot;
        sessions.cap = old_cap ? old_cap * 2 : 1024;
        sessions.slot = calloc(sessions.cap, sizeof *sessions.slot);
        if (!sessions.slot) {
            fprintf(stderr, "echo_upstream: out of memory\n");
            exit(1);
        }
        sessions.used = 0;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i][0] && old[i][0] != '-')
                sess_add(old[i]);
        free(old);
    }
    size_t i = sess_hash(id) & (sessions.cap - 1);
    while (sessions.slot[i][0])
        i = (i + 1) & (sessions.cap - 1);
    memcpy(sessions.slot[i], id, SESSION_HEX + 1);
    sessions.used++;
}

/* Deleted slots keep a tombstone ("-") so probing goes on past them. */
static void sess_del(long i)
{
    strcpy(sessions.slot[i], "-");
}

static void sess_mint(char out[SESSION_HEX + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[SESSION_HEX / 2];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
        fprintf(stderr, "echo_upstream: getrandom failed\n");
        exit(1);
    }
    for (size_t i = 0; i < sizeof raw; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[SESSION_HEX] = '\0';
}

/* One HTTP request, as the server loop parsed it. Header values are NUL-terminated copies;
 * NULL when absent. */
struct hreq {
    const char *method, *target;
    const char *ctype, *accept, *sid, *version, *mcp_method, *mcp_name;
    const char *body;
    size_t body_len;
};

/* One HTTP response being built. */
struct hresp {
    int status;
    const char *extra;   /* extra header lines, each ending in \r\n, or NULL */
    char sid[SESSION_HEX + 1];
    struct buf *body;
};

static const char *status_reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    default: return "Error";
    }
}

static void simple_error(struct hresp *o, int status, int code, const char *msg)
{
    o->status = status;
    put_error(o->body, NULL, code, msg, NULL);
}

/* Legacy requests other than initialize need a live session (§5.3): 400 without, 404 unknown.
 * Returns true when the request may go on. */
static bool legacy_session_ok(const struct hreq *q, bool is_init, struct hresp *o)
{
    if (is_init && !q->sid)
        return true;
    if (!q->sid) {
        simple_error(o, 400, -32000, "Bad Request: Mcp-Session-Id header is required");
        return false;
    }
    if (sess_find(q->sid) < 0) {
        simple_error(o, 404, -32001, "Session not found");
        return false;
    }
    return true;
}

static void serve_post(const struct hreq *q, struct hresp *o)
{
    if (!q->ctype || strncasecmp(q->ctype, "application/json", 16)) {
        simple_error(o, 415, -32000, "Content-Type must be application/json");
        return;
    }
    if (!q->accept || !strstr(q->accept, "application/json") ||
        !strstr(q->accept, "text/event-stream")) {
        simple_error(o, 406, -32000,
                     "Client must accept both application/json and text/event-stream");
        return;
    }
    jval msg = parse(q->body, q->body_len);
    if (!msg) {
        simple_error(o, 400, -32700, "Parse error");
        return;
    }
    static const char *k_method[] = {"method", NULL};
    jval method = get_string(msg, k_method);
    bool modern = get_path(msg, k_meta_version) != NULL;
    bool is_init = method && !strcmp(method->u.str.p, "initialize");
    if (modern || legacy_session_ok(q, is_init, o)) {
        struct http_ctx h = {q->version, q->mcp_method, q->mcp_name};
        struct reply r = {0};
        handle(msg, &h, o->body, &r);
        o->status = r.none ? 202 : r.status;
        if (r.mint_session && !r.modern) {
            sess_mint(o->sid);
            sess_add(o->sid);
        }
    }
}

static void serve(const struct hreq *q, struct hresp *o)
{
    size_t plen = strcspn(q->target, "?#");
    if (plen != 4 || strncmp(q->target, "/mcp", 4)) {
        simple_error(o, 404, -32000, "Not found");
    } else if (!strcmp(q->method, "POST")) {
        serve_post(q, o);
    } else if (!strcmp(q->method, "DELETE")) {
        long i = q->sid ? sess_find(q->sid) : -1;
        if (i < 0) {
            simple_error(o, 404, -32001, "Session not found");
        } else {
            sess_del(i);
            o->status = 200;
        }
    } else {
        o->status = 405;
        o->extra = "Allow: POST, DELETE\r\n";
    }
}

/* ---- the HTTP/1.1 server loop: epoll, keep-alive, pipelining, chunked request bodies ---- */

#define MAX_HEAD 65536

struct hconn {
    int fd;
    bool want_out, close_after;
    struct buf in, out, body;
    size_t out_off;
};

static int g_ep;
static volatile sig_atomic_t g_stop;

static void on_stop(int sig)
{
    g_stop = 1;
}

static void hconn_free(struct hconn *c)
{
    epoll_ctl(g_ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->in.p);
    free(c->out.p);
    free(c->body.p);
    free(c);
}

/* Case-insensitive "Name:" match; returns the trimmed value copied into dst, or NULL. */
static const char *hdr_value(const char *line, size_t len, const char *name, char *dst,
                             size_t cap)
{
    size_t n = strlen(name);
    if (len <= n || strncasecmp(line, name, n) || line[n] != ':')
        return NULL;
    const char *v = line + n + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    size_t vl = (size_t)(end - v);
    if (vl >= cap)
        vl = cap - 1; /* a longer value then fails every comparison it takes part in */
    memcpy(dst, v, vl);
    dst[vl] = '\0';
    return dst;
}

/* De-chunks a request body. Returns bytes consumed when complete, 0 if more is needed,
 * -1 on junk. */
static long dechunk(const char *p, size_t n, struct buf *body)
{
    size_t i = 0;
    body->len = 0;
    for (;;) {
        const char *crlf = memmem(p + i, n - i, "\r\n", 2);
        if (!crlf)
            return 0;
        char *endp;
        unsigned long sz = strtoul(p + i, &endp, 16);
        if (endp == p + i || sz > MAX_LINE)
            return -1;
        i = (size_t)(crlf - p) + 2;
        if (sz == 0) {
            for (;;) {
                const char *t = memmem(p + i, n - i, "\r\n", 2);
                if (!t)
                    return 0;
                size_t tl = (size_t)(t - (p + i));
                i += tl + 2;
                if (tl == 0)
                    return (long)i;
            }
        }
        if (n - i < sz + 2)
            return 0;
        buf_add(body, p + i, sz);
        i += sz + 2;
    }
}

/* Appends the response for o to the connection's output. */
static void put_response(struct hconn *c, const struct hresp *o)
{
    char head[128];
    int n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\n", o->status,
                     status_reason(o->status), o->body->len);
    buf_add(&c->out, head, (size_t)n);
    if (o->body->len)
        buf_adds(&c->out, "Content-Type: application/json\r\n");
    if (o->sid[0]) {
        buf_adds(&c->out, "Mcp-Session-Id: ");
        buf_adds(&c->out, o->sid);
        buf_adds(&c->out, "\r\n");
    }
    if (o->extra)
        buf_adds(&c->out, o->extra);
    if (c->close_after)
        buf_adds(&c->out, "Connection: close\r\n");
    buf_adds(&c->out, "\r\n");
    buf_add(&c->out, o->body->p, o->body->len);
}

/* Parses and answers every complete request in c->in. Returns -1 to close the connection. */
static int hconn_serve(struct hconn *c)
{
    static struct buf rbody;
    size_t off = 0;
    while (!c->close_after) {
        const char *p = c->in.p + off;
        size_t n = c->in.len - off;
        const char *end = memmem(p, n, "\r\n\r\n", 4);
        if (!end) {
            if (n > MAX_HEAD)
                return -1;
            break;
        }
        size_t head_len = (size_t)(end - p) + 4;
        char method[16], target[256], ctype[128], accept[256], sid[128], version[64],
            mmethod[128], mname[256], cl[32], te[64], conn[64];
        struct hreq q = {0};
        const char *sp1 = memchr(p, ' ', head_len), *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(end - sp1)) : NULL;
        if (!sp1 || !sp2 || (size_t)(sp1 - p) >= sizeof method ||
            (size_t)(sp2 - sp1 - 1) >= sizeof target || memcmp(sp2 + 1, "HTTP/1.", 7))
            return -1;
        memcpy(method, p, (size_t)(sp1 - p));
        method[sp1 - p] = '\0';
        memcpy(target, sp1 + 1, (size_t)(sp2 - sp1 - 1));
        target[sp2 - sp1 - 1] = '\0';
        bool http10 = sp2[8] == '0';
        q.method = method;
        q.target = target;
        const char *line = memchr(p, '\n', head_len) + 1, *cl_v = NULL, *te_v = NULL, *conn_v = NULL;
        while (line < end + 2) {
            const char *le = memchr(line, '\r', (size_t)(end + 2 - line));
            size_t len = (size_t)(le - line);
            if (!q.ctype) q.ctype = hdr_value(line, len, "content-type", ctype, sizeof ctype);
            if (!q.accept) q.accept = hdr_value(line, len, "accept", accept, sizeof accept);
            if (!q.sid) q.sid = hdr_value(line, len, "mcp-session-id", sid, sizeof sid);
            if (!q.version) q.version = hdr_value(line, len, "mcp-protocol-version", version, sizeof version);
            if (!q.mcp_method) q.mcp_method = hdr_value(line, len, "mcp-method", mmethod, sizeof mmethod);
            if (!q.mcp_name) q.mcp_name = hdr_value(line, len, "mcp-name", mname, sizeof mname);
            if (!cl_v) cl_v = hdr_value(line, len, "content-length", cl, sizeof cl);
            if (!te_v) te_v = hdr_value(line, len, "transfer-encoding", te, sizeof te);
            if (!conn_v) conn_v = hdr_value(line, len, "connection", conn, sizeof conn);
            line = le + 2;
        }
        size_t used;
        rbody.len = 0;
        if (te_v && strcasestr(te_v, "chunked")) {
            long u = dechunk(p + head_len, n - head_len, &rbody);
            if (u < 0)
                return -1;
            if (u == 0)
                break;
            used = head_len + (size_t)u;
        } else {
            unsigned long len = cl_v ? strtoul(cl_v, NULL, 10) : 0;
            if (len > MAX_LINE)
                return -1;
            if (n - head_len < len)
                break;
            buf_add(&rbody, p + head_len, len);
            used = head_len + len;
        }
        buf_add(&rbody, "", 1); /* NUL for the JSON parser */
        q.body = rbody.p;
        q.body_len = rbody.len - 1;
        c->close_after = http10 ? !(conn_v && !strcasecmp(conn_v, "keep-alive"))
                                : (conn_v && !strcasecmp(conn_v, "close"));
        struct buf out = {0};
        struct hresp o = {.status = 200, .body = &out};
        serve(&q, &o);
        put_response(c, &o);
        free(out.p);
        off += used;
    }
    memmove(c->in.p, c->in.p + off, c->in.len - off);
    c->in.len -= off;
    return 0;
}

static void hconn_events(struct hconn *c, bool want_out)
{
    if (c->want_out == want_out)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(g_ep, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = want_out;
}

/* Writes what is pending. Returns -1 to close the connection. */
static int hconn_flush(struct hconn *c)
{
    while (c->out_off < c->out.len) {
        ssize_t w = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            hconn_events(c, true);
            return 0;
        }
        if (w <= 0)
            return -1;
        c->out_off += (size_t)w;
    }
    c->out.len = c->out_off = 0;
    hconn_events(c, false);
    return c->close_after ? -1 : 0;
}

static void on_hconn(struct hconn *c, uint32_t events)
{
    if (events & EPOLLOUT && hconn_flush(c) < 0) {
        hconn_free(c);
        return;
    }
    if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        return;
    for (;;) {
        buf_reserve(&c->in, 16384);
        ssize_t n = recv(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) {
            hconn_free(c);
            return;
        }
        c->in.len += (size_t)n;
        if (c->in.len > MAX_LINE + MAX_HEAD) {
            hconn_free(c);
            return;
        }
        if ((size_t)n < c->in.cap - (c->in.len - (size_t)n))
            break;
    }
    if (hconn_serve(c) < 0 || (c->out.len && !c->want_out && hconn_flush(c) < 0))
        hconn_free(c);
}

static void on_accept(int lfd)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct hconn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            return;
        }
        c->fd = fd;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(g_ep, EPOLL_CTL_ADD, fd, &ev);
    }
}

static int run_http(int port)
{
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sin;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sin, sizeof sin) || listen(lfd, 4096) ||
        getsockname(lfd, (struct sockaddr *)&sin, &sl)) {
        fprintf(stderr, "echo_upstream: cannot listen on 127.0.0.1:%d: %s\n", port,
                strerror(errno));
        return 1;
    }
    fprintf(stderr, "listening 127.0.0.1:%u\n", ntohs(sin.sin_port));
    struct sigaction sa = {.sa_handler = on_stop};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    g_ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(g_ep, EPOLL_CTL_ADD, lfd, &lev);
    struct epoll_event evs[256];
    while (!g_stop) {
        int n = epoll_wait(g_ep, evs, 256, -1);
        for (int i = 0; i < n; i++) {
            if (!evs[i].data.ptr)
                on_accept(lfd);
            else
                on_hconn(evs[i].data.ptr, evs[i].events);
        }
    }
    close(lfd);
    free(sessions.slot);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: echo_upstream --stdio [--legacy-only] [--start-log FILE]\n"
               "       echo_upstream --http PORT [--legacy-only] [--start-log FILE]"
               "   (127.0.0.1:PORT/mcp; 0 picks a port)\n"
               "--legacy-only answers as a 2025-11-25 server only (server/discover is -32601),\n"
               "  so a proxy in front speaks that era to it and converts nothing.\n"
               "--start-log FILE appends this process's pid to FILE at start.\n");
}

int main(int argc, char **argv)
{
    int mode = 0, port = 0;
    const char *start_log = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--stdio")) {
            mode = 1;
        } else if (!strcmp(argv[i], "--http") && i + 1 < argc) {
            mode = 2;
            port = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--start-log") && i + 1 < argc) {
            start_log = argv[++i];
        } else if (!strcmp(argv[i], "--legacy-only")) {
            g.legacy_only = true;
        } else if (!strcmp(argv[i], "--corrupt")) {
            g.corrupt_every = 97;
        } else if (!strcmp(argv[i], "--corrupt-id")) {
            g.corrupt_id_every = 89;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    if (start_log) { /* one line per process started, so a script can count upstream spawns */
        FILE *f = fopen(start_log, "a");
        if (f) {
            fprintf(f, "%ld\n", (long)getpid());
            fclose(f);
        }
    }
    if (mode == 1)
        return run_stdio();
    if (mode == 2 && port >= 0 && port < 65536)
        return run_http(port);
    usage(stderr);
    return 2;
}
