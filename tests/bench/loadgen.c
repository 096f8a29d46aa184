/* loadgen: an MCP load generator that checks every reply. Not part of sluice.
 *
 * HTTP (Streamable HTTP, one keep-alive HTTP/1.1 connection per simulated client):
 *   loadgen --url http://127.0.0.1:PORT/mcp [--connections 16] [--duration 10] [--warmup 1]
 *           [--rate N] [--calls N] [--era legacy|modern] [--timeout 10]
 *           [--pair gated|plain] [--principal-header NAME] [--principals 256]
 *           [--arg-bytes N] [--result-bytes N]
 *   loadgen --url ... --sessions-only N [--hold SECONDS]
 *   loadgen --url ... --held N [--hold SECONDS] [--principal-header NAME] [--principals 256]
 * stdio (one client, sequential calls over the child's pipes):
 *   loadgen --stdio [--calls 20000] [--era legacy|modern] [--pair gated|plain] -- CMD [ARG...]
 *
 * legacy: each connection sends `initialize` (2025-11-25) and `notifications/initialized`,
 *         keeps the Mcp-Session-Id, then loops `tools/call echo`.
 * modern: no handshake; every request carries the 2026-07-28 `_meta` envelope and the
 *         MCP-Protocol-Version, Mcp-Method and Mcp-Name headers.
 * Every tools/call carries a unique text. A reply counts as good only when the HTTP status is
 * 200, the body (application/json, or text/event-stream with the response in a `data:` event)
 * is JSON-RPC 2.0 with the request's id, no error, and result.content[0] is
 * {"type":"text","text":<the text sent>} (modern: also "resultType":"complete").
 * Any other reply, a timeout or a dropped connection is an error; the exit status is 1 when
 * there was any error.
 *
 * Closed loop (default): each connection sends its next call when the last reply arrived.
 * --rate N: calls are scheduled at a fixed aggregate rate (a timerfd) and go out on an idle
 * connection; latency is still send to reply, and the worst delay of a send behind its
 * schedule is reported (max_lag_us), so a backlog cannot hide.
 * --calls N: stop after N calls (no warmup; for instruction counts).
 * --sessions-only N: open N connections with a legacy session each, print how long that took
 * ("sessions_open=N open_ms=..."), then hold them idle for --hold seconds or until SIGTERM.
 * --pair gated: each unit is a confirmation round (modern, declaring form elicitation): round
 * one `tools/call echo`, whose reply must be sluice's question (resultType "input_required", a
 * requestState string, inputRequests["sluice.confirm"] an elicitation/create), then round two,
 * the same call with a new id, the requestState echoed and an accept with approve: true, whose
 * reply must be the echo result above (and not a replay). --pair plain: two plain calls with the
 * same arguments, the reference. A pair counts, and is timed, as one unit (pairs=, pairs_per_s=);
 * --calls then counts pairs. --principal-header NAME sends NAME: bench-K, K cycling through
 * --principals names per pair (per connection without --pair), so sluice's per-principal
 * question limits (at most 10,000 a minute each) are not what is measured.
 *
 * --arg-bytes N / --result-bytes N: calls go to the tool `blob` (echo_upstream), with an
 * argument "pad" of N filler bytes, and "bytes": N, which makes the result's text the call's
 * text followed by filler up to N bytes; the reply is checked byte for byte as always, and the
 * summary adds arg_bytes=, result_bytes= and mb_per_s= (calls/s times the bytes of both).
 * --held N: open N legacy sessions (declaring form elicitation), then on each one call
 * `tools/call write`, which a gating sluice holds while it asks a person: the call counts as
 * held once the elicitation/create sluice sends on the call's event stream has arrived, and it
 * is never answered. Prints "held=N held_ms=..." once all are held (or the time ran out), then
 * holds them until --hold or SIGTERM, and fails if any call got a response meanwhile.
 *
 * The last line on stdout is the result as key=value pairs, for scripts.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_parse.h>

#define MODERN_VERSION "2026-07-28"
#define LEGACY_VERSION "2025-11-25"
#define MAX_BODY (64u << 20)
#define MAX_ERRORS_SHOWN 10
#define HANDSHAKES_IN_FLIGHT 128

/* ---- small utilities ------------------------------------------------------------------ */

struct buf {
    char *p;
    size_t len, cap;
};

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p) {
        fprintf(stderr, "loadgen: out of memory\n");
        exit(2);
    }
    return p;
}

static void buf_reserve(struct buf *b, size_t more)
{
    if (b->len + more <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + more)
        cap *= 2;
    b->p = xrealloc(b->p, cap);
    b->cap = cap;
}

static void buf_add(struct buf *b, const void *s, size_t n)
{
    buf_reserve(b, n + 1);
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(struct buf *b, const char *fmt, ...)
{
    size_t want = 256;
    for (;;) {
        buf_reserve(b, want);
        size_t room = b->cap - b->len;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, room, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        want = (size_t)n + 1;
    }
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- options and totals ----------------------------------------------------------------- */

/* --pair: each unit of work is two requests on one connection, measured from the first send to
 * the second reply. gated: round one and the accepted round two of a confirmation; plain: two
 * calls of an allowed tool (the reference a gated pair is compared with). */
enum pair { PAIR_NONE, PAIR_PLAIN, PAIR_GATED };

static struct {
    const char *host, *port, *path;
    unsigned connections;
    double duration, warmup, timeout, hold;
    double rate;
    unsigned long calls; /* 0: run for --duration */
    bool modern;
    unsigned long sessions_only;
    char **cmd; /* --stdio */
    enum pair pair;
    const char *principal_header; /* --principal-header: sent with a name per pair */
    unsigned principals;          /* --principals: how many names the pairs cycle through */
    size_t arg_bytes, result_bytes; /* --arg-bytes, --result-bytes: the tool blob */
    unsigned long held;           /* --held N: calls held for a person, never answered */
} opt = {.connections = 16, .duration = 10, .warmup = 1, .timeout = 10, .hold = 30,
         .principals = 256};

static struct {
    unsigned long errors, good, measured;
    uint64_t *lat;      /* measured latencies, ns */
    size_t nlat, caplat;
} tot;

static volatile sig_atomic_t g_stop;

static void on_stop_signal(int sig)
{
    g_stop = 1;
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    tot.errors++;
    if (tot.errors > MAX_ERRORS_SHOWN)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("loadgen: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void record(uint64_t ns)
{
    if (tot.nlat == tot.caplat) {
        tot.caplat = tot.caplat ? tot.caplat * 2 : 65536;
        tot.lat = xrealloc(tot.lat, tot.caplat * sizeof *tot.lat);
    }
    tot.lat[tot.nlat++] = ns;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of the sorted samples, in microseconds. */
static double pct_us(double q)
{
    if (!tot.nlat)
        return 0;
    double x = q * (double)tot.nlat;
    size_t k = (size_t)x;
    if ((double)k < x)
        k++;
    if (k < 1)
        k = 1;
    return (double)tot.lat[k - 1] / 1000.0;
}

/* ---- checking one JSON-RPC reply ------------------------------------------------------- */

/* What a yajl pass over one message found at the paths we care about. */
struct jcheck {
    int depth;
    struct {
        bool arr;
        long idx;
        char key[24];
    } st[16];
    bool jsonrpc2, has_id, has_method, has_result, has_error, bad_json;
    char id[32];
    char method[40];   /* a request's or notification's method */
    char result_type[16];
    bool text_type_ok;
    int texts;         /* content[0].text seen */
    struct buf text;
    bool proto_seen;   /* result.protocolVersion (initialize) */
    char proto[32];
    long err_code;
    char err_msg[160];
    /* a gated round one (input_required) */
    struct buf state;  /* result.requestState */
    bool state_seen;
    bool confirm_seen; /* result.inputRequests["sluice.confirm"].method == elicitation/create */
    bool replayed;     /* result._meta["dev.sluice/replayed"] is true */
};

/* True when the value about to be seen sits at the given path; "#N" is array index N. */
static bool at(const struct jcheck *j, int n, ...)
{
    if (j->depth != n)
        return false;
    va_list ap;
    va_start(ap, n);
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        const char *seg = va_arg(ap, const char *);
        if (i >= 16)
            ok = false;
        else if (seg[0] == '#')
            ok = j->st[i].arr && j->st[i].idx == atol(seg + 1);
        else
            ok = !j->st[i].arr && !strcmp(j->st[i].key, seg);
    }
    va_end(ap);
    return ok;
}

static void value_start(struct jcheck *j)
{
    if (j->depth > 0 && j->depth <= 16 && j->st[j->depth - 1].arr)
        j->st[j->depth - 1].idx++;
}

static void on_any_value(struct jcheck *j)
{
    if (at(j, 1, "id"))
        j->has_id = true; /* a non-scalar or null id fails the id comparison later */
    if (at(j, 1, "result"))
        j->has_result = true;
    if (at(j, 1, "error"))
        j->has_error = true;
}

static int cb_null(void *ctx)
{
    struct jcheck *j = ctx;
    value_start(j);
    on_any_value(j);
    return 1;
}

static int cb_bool(void *ctx, int v)
{
    struct jcheck *j = ctx;
    value_start(j);
    on_any_value(j);
    if (at(j, 2, "result", "isError") && v)
        j->has_error = true;
    if (at(j, 3, "result", "_meta", "dev.sluice/replayed") && v)
        j->replayed = true;
    return 1;
}

static int cb_number(void *ctx, const char *s, size_t n)
{
    struct jcheck *j = ctx;
    value_start(j);
    on_any_value(j);
    if (at(j, 1, "id") && n < sizeof j->id) {
        memcpy(j->id, s, n);
        j->id[n] = '\0';
    }
    if (at(j, 2, "error", "code"))
        j->err_code = strtol(s, NULL, 10);
    return 1;
}

static void copy_str(char *dst, size_t cap, const unsigned char *s, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

static int cb_string(void *ctx, const unsigned char *s, size_t n)
{
    struct jcheck *j = ctx;
    value_start(j);
    on_any_value(j);
    if (at(j, 1, "jsonrpc"))
        j->jsonrpc2 = n == 3 && !memcmp(s, "2.0", 3);
    else if (at(j, 1, "id"))
        snprintf(j->id, sizeof j->id, "\"%.*s\"", (int)(n < 20 ? n : 20), (const char *)s);
    else if (at(j, 1, "method")) {
        j->has_method = true;
        copy_str(j->method, sizeof j->method, s, n);
    }
    else if (at(j, 2, "result", "resultType"))
        copy_str(j->result_type, sizeof j->result_type, s, n);
    else if (at(j, 2, "result", "protocolVersion")) {
        j->proto_seen = true;
        copy_str(j->proto, sizeof j->proto, s, n);
    } else if (at(j, 4, "result", "content", "#0", "type"))
        j->text_type_ok = n == 4 && !memcmp(s, "text", 4);
    else if (at(j, 4, "result", "content", "#0", "text")) {
        j->texts++;
        j->text.len = 0;
        buf_add(&j->text, s, n);
    } else if (at(j, 2, "error", "message"))
        copy_str(j->err_msg, sizeof j->err_msg, s, n);
    else if (at(j, 2, "result", "requestState")) {
        j->state_seen = true;
        j->state.len = 0;
        buf_add(&j->state, s, n);
    } else if (at(j, 4, "result", "inputRequests", "sluice.confirm", "method"))
        j->confirm_seen = n == 18 && !memcmp(s, "elicitation/create", 18);
    return 1;
}

static int cb_start(struct jcheck *j, bool arr)
{
    value_start(j);
    on_any_value(j);
    if (j->depth < 16) {
        j->st[j->depth].arr = arr;
        j->st[j->depth].idx = -1;
        j->st[j->depth].key[0] = '\0';
    }
    j->depth++;
    return 1;
}

static int cb_start_map(void *ctx)
{
    return cb_start(ctx, false);
}

static int cb_start_array(void *ctx)
{
    return cb_start(ctx, true);
}

static int cb_end(void *ctx)
{
    ((struct jcheck *)ctx)->depth--;
    return 1;
}

static int cb_key(void *ctx, const unsigned char *s, size_t n)
{
    struct jcheck *j = ctx;
    if (j->depth >= 1 && j->depth <= 16) {
        /* A key longer than the slot can never match one of ours; mark it so. */
        if (n >= sizeof j->st[0].key)
            strcpy(j->st[j->depth - 1].key, "\x01");
        else
            copy_str(j->st[j->depth - 1].key, sizeof j->st[0].key, s, n);
    }
    return 1;
}

static const yajl_callbacks jcallbacks = {
    .yajl_null = cb_null,
    .yajl_boolean = cb_bool,
    .yajl_number = cb_number,
    .yajl_string = cb_string,
    .yajl_start_map = cb_start_map,
    .yajl_map_key = cb_key,
    .yajl_end_map = cb_end,
    .yajl_start_array = cb_start_array,
    .yajl_end_array = cb_end,
};

/* Parses one JSON text into j (which the caller zeroes and later frees with jcheck_free). */
static void jcheck_run(struct jcheck *j, const char *s, size_t n)
{
    yajl_handle h = yajl_alloc(&jcallbacks, NULL, j);
    if (yajl_parse(h, (const unsigned char *)s, n) != yajl_status_ok ||
        yajl_complete_parse(h) != yajl_status_ok)
        j->bad_json = true;
    yajl_free(h);
}

static void jcheck_free(struct jcheck *j)
{
    free(j->text.p);
    free(j->state.p);
}

/* Hands the requestState j found to *out (the previous buffer goes back to j, to be freed). */
static void take_state(struct jcheck *j, struct buf *out)
{
    struct buf t = *out;
    *out = j->state;
    j->state = t;
}

/* What the request in flight expects of its reply. K_ASK is round one of a gated pair: its
 * reply must be sluice's question (input_required), not the tool's result. K_HELD (--held) is
 * a call of the gated tool `write` that must get sluice's elicitation/create and no reply. */
enum kind { K_NONE, K_INIT, K_NOTIF, K_CALL, K_ASK, K_HELD };

struct expect {
    enum kind kind;
    uint64_t id;
    const char *text;
    size_t text_len;
    bool modern;
};

/* Checks one JSON-RPC response. Returns NULL when good, or what was wrong. */
static const char *check_response(const struct jcheck *j, const struct expect *e, char *why,
                                  size_t whylen)
{
    char want_id[32];
    snprintf(want_id, sizeof want_id, "%llu", (unsigned long long)e->id);
    if (j->bad_json)
        return "reply is not valid JSON";
    if (!j->jsonrpc2)
        return "reply lacks \"jsonrpc\":\"2.0\"";
    if (strcmp(j->id, want_id)) {
        snprintf(why, whylen, "reply id %s, expected %s", j->id[0] ? j->id : "(none)", want_id);
        return why;
    }
    if (j->has_error) {
        snprintf(why, whylen, "error reply %ld: %s", j->err_code, j->err_msg);
        return why;
    }
    if (!j->has_result)
        return "reply has no result";
    if (e->kind == K_INIT)
        return j->proto_seen ? NULL : "initialize result lacks protocolVersion";
    if (e->kind == K_ASK) {
        if (strcmp(j->result_type, "input_required")) {
            snprintf(why, whylen, "round one: resultType \"%s\", expected \"input_required\"",
                     j->result_type);
            return why;
        }
        if (!j->state_seen || !j->state.len)
            return "round one: no requestState string";
        if (!j->confirm_seen)
            return "round one: no inputRequests[\"sluice.confirm\"] elicitation/create";
        return NULL;
    }
    if (!j->text_type_ok || j->texts != 1)
        return "result.content[0] is not one text item";
    if (j->text.len != e->text_len || memcmp(j->text.p, e->text, e->text_len)) {
        snprintf(why, whylen, "echoed text \"%.60s\" differs from the text sent \"%.60s\"",
                 j->text.p, e->text);
        return why;
    }
    if (e->modern && strcmp(j->result_type, "complete"))
        return "modern result lacks \"resultType\":\"complete\"";
    if (j->replayed)
        return "result is a replay (_meta[\"dev.sluice/replayed\"]): the call did not run now";
    return NULL;
}

/* Finds the response among the events of an SSE body (notifications are skipped) and checks
 * it. Returns NULL when good; a round one's requestState then goes to *state. */
static const char *check_sse(const char *body, size_t n, const struct expect *e, char *why,
                             size_t whylen, char *proto, size_t protolen, struct buf *state)
{
    struct buf data = {0};
    const char *res = "event stream held no JSON-RPC response";
    int responses = 0;
    size_t i = 0;
    bool have_data = false;
    while (i <= n) {
        const char *line = body + i;
        const char *nl = i < n ? memchr(line, '\n', n - i) : NULL;
        size_t len = nl ? (size_t)(nl - line) : n - i;
        i += len + 1;
        if (len && line[len - 1] == '\r')
            len--;
        if (len == 0) { /* end of an event */
            if (have_data && data.len) {
                struct jcheck j = {0};
                jcheck_run(&j, data.p, data.len);
                if (j.has_method && !j.has_id) {
                    /* a notification: progress, log */
                } else if (j.has_method) {
                    res = "server sent a request on the response stream";
                    responses++;
                } else {
                    responses++;
                    res = check_response(&j, e, why, whylen);
                    snprintf(proto, protolen, "%s", j.proto);
                    if (!res && e->kind == K_ASK)
                        take_state(&j, state);
                }
                jcheck_free(&j);
            }
            data.len = 0;
            have_data = false;
            continue;
        }
        if (line[0] == ':')
            continue;
        if (len >= 5 && !memcmp(line, "data:", 5)) {
            size_t off = (len > 5 && line[5] == ' ') ? 6 : 5;
            if (have_data)
                buf_add(&data, "\n", 1);
            buf_add(&data, line + off, len - off);
            have_data = true;
        }
    }
    free(data.p);
    if (responses > 1)
        return "event stream held more than one response";
    return res;
}

/* ---- HTTP client connections ----------------------------------------------------------- */

struct conn {
    int fd;
    unsigned idx;
    bool connecting, ready, dead, busy, close_after;
    enum kind kind;
    uint64_t next_id, id;
    char text[96];
    size_t text_len;
    struct buf want;     /* the result text expected: text, or with --result-bytes padded */
    bool held;           /* --held: our elicitation/create arrived for this call */
    size_t scan;         /* chunked bodies: bytes of c->in searched for the last chunk */
    uint64_t t_sched, t_send;
    uint64_t t_unit;     /* when the call, or the pair's first request, was dispatched */
    unsigned step;       /* --pair: 0 for the first request of the pair, 1 for the second */
    struct buf state;    /* --pair gated: round one's requestState, echoed in round two */
    char principal[32];  /* --principal-header: this pair's name */
    char sid[160];
    char proto[32];
    struct buf out;
    size_t out_off;
    struct buf in;
    struct buf body; /* de-chunked body of the response being read */
    bool want_out;
};

static struct {
    int ep;
    struct addrinfo *ai;
    struct conn *conns;
    unsigned nconn;
    unsigned handshaking;   /* connections between connect and their session being ready */
    unsigned ready, dead;
    uint64_t t_start, t_measure, t_end;
    bool running, started;
    /* --rate */
    uint64_t interval_ns, k_next;
    int tfd;                  /* timerfd that wakes the loop at the next scheduled call */
    uint64_t max_lag;         /* worst delay from a call's scheduled time to its send, ns */
    unsigned long late;       /* calls sent more than 1 ms after their scheduled time */
    unsigned *idle;
    unsigned nidle;
    unsigned long dispatched;
    unsigned long opened_next; /* --sessions-only: next connection to open */
    unsigned long pair_seq;    /* --principal-header: pairs begun, for the next name */
    unsigned long held;        /* --held: calls held (elicitation/create seen) */
} L;

static void conn_close(struct conn *c)
{
    if (c->fd >= 0) {
        epoll_ctl(L.ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    c->fd = -1;
    c->connecting = false;
    c->in.len = 0;
    c->scan = 0;
    c->out.len = c->out_off = 0;
    c->want_out = false;
}

static void conn_kill(struct conn *c)
{
    if (c->dead)
        return;
    conn_close(c);
    c->dead = true;
    c->busy = false;
    if (!c->ready && L.handshaking)
        L.handshaking--;
    L.dead++;
}

static void conn_set_events(struct conn *c, bool want_out)
{
    if (c->want_out == want_out)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(L.ep, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = want_out;
}

static int conn_connect(struct conn *c)
{
    c->fd = socket(L.ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        fail("socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    c->want_out = true;
    c->connecting = true;
    if (connect(c->fd, L.ai->ai_addr, L.ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
        fail("connect: %s", strerror(errno));
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    epoll_ctl(L.ep, EPOLL_CTL_ADD, c->fd, &ev);
    return 0;
}

static void conn_flush(struct conn *c)
{
    while (c->out_off < c->out.len) {
        ssize_t w = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            conn_set_events(c, true);
            return;
        }
        if (w <= 0) {
            fail("connection %u: send: %s", c->idx, strerror(errno));
            conn_kill(c);
            return;
        }
        c->out_off += (size_t)w;
    }
    c->out.len = c->out_off = 0;
    conn_set_events(c, false);
}

static void json_text(struct buf *b, const char *s)
{
    buf_add(b, "\"", 1);
    for (; *s; s++) {
        if ((unsigned char)*s < 0x20) {
            buf_printf(b, "\\u%04x", (unsigned)*s);
            continue;
        }
        if (*s == '"' || *s == '\\')
            buf_add(b, "\\", 1);
        buf_add(b, s, 1);
    }
    buf_add(b, "\"", 1);
}

static const char envelope[] =
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"" MODERN_VERSION "\","
    "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"loadgen\",\"version\":\"1\"},"
    "\"io.modelcontextprotocol/clientCapabilities\":{}}";

/* --pair: the client declares form elicitation, so sluice may ask it (both kinds of pair send
 * it, so the plain reference carries the same envelope). */
static const char envelope_elicit[] =
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"" MODERN_VERSION "\","
    "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"loadgen\",\"version\":\"1\"},"
    "\"io.modelcontextprotocol/clientCapabilities\":{\"elicitation\":{\"form\":{}}}}";

static const char accept_answer[] =
    "\"inputResponses\":{\"sluice.confirm\":{\"action\":\"accept\","
    "\"content\":{\"approve\":true}}}";

/* The tool a call of this kind names: --held calls the gated `write`; --arg-bytes and
 * --result-bytes call `blob`, which pads its result (echo_upstream.c). */
static const char *call_tool(enum kind kind)
{
    if (kind == K_HELD)
        return "write";
    return opt.arg_bytes || opt.result_bytes ? "blob" : "echo";
}

/* max(--arg-bytes, --result-bytes) bytes (and 32 more) where byte i is BLOB_FILLER[i % 26], as
 * echo_upstream's blob pads: built once. */
#define BLOB_FILLER "abcdefghijklmnopqrstuvwxyz"
static const char *filler(void)
{
    static char *f;
    if (!f) {
        size_t n = (opt.arg_bytes > opt.result_bytes ? opt.arg_bytes : opt.result_bytes) + 32;
        f = xrealloc(NULL, n);
        for (size_t i = 0; i < n; i++)
            f[i] = BLOB_FILLER[i % 26];
    }
    return f;
}

/* The result text a call with this text must get back: the text, then with --result-bytes the
 * filler from where the text ends up to that many bytes. */
static void expected_text(struct buf *want, const char *text, size_t len)
{
    want->len = 0;
    buf_add(want, text, len);
    if (opt.result_bytes > len)
        buf_add(want, filler() + len, opt.result_bytes - len);
}

/* The JSON-RPC text of a request of the given kind. state: a gated round two, which echoes
 * it and accepts (NULL otherwise). */
static void build_body(struct buf *b, enum kind kind, uint64_t id, const char *text, bool modern,
                       const struct buf *state)
{
    b->len = 0;
    switch (kind) {
    case K_INIT:
        buf_printf(b, "{\"jsonrpc\":\"2.0\",\"id\":%llu,\"method\":\"initialize\",\"params\":{"
                      "\"protocolVersion\":\"" LEGACY_VERSION "\",\"capabilities\":%s,"
                      "\"clientInfo\":{\"name\":\"loadgen\",\"version\":\"1\"}}}",
                   (unsigned long long)id, opt.held ? "{\"elicitation\":{\"form\":{}}}" : "{}");
        break;
    case K_NOTIF:
        buf_printf(b, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
        break;
    case K_CALL:
    case K_ASK:
    case K_HELD:
        buf_printf(b, "{\"jsonrpc\":\"2.0\",\"id\":%llu,\"method\":\"tools/call\",\"params\":{"
                      "\"name\":\"%s\",\"arguments\":{\"text\":",
                   (unsigned long long)id, call_tool(kind));
        json_text(b, text);
        if (kind != K_HELD && (opt.arg_bytes || opt.result_bytes)) {
            if (opt.arg_bytes) { /* filler: letters only, so it goes in unescaped */
                buf_add(b, ",\"pad\":\"", 8);
                buf_add(b, filler(), opt.arg_bytes);
                buf_add(b, "\"", 1);
            }
            buf_printf(b, ",\"bytes\":%zu", opt.result_bytes);
        }
        buf_add(b, "}", 1);
        if (state) {
            buf_add(b, ",\"requestState\":", 16);
            json_text(b, state->p);
            buf_add(b, ",", 1);
            buf_add(b, accept_answer, sizeof accept_answer - 1);
        }
        buf_printf(b, "%s%s}}", modern ? "," : "",
                   !modern ? "" : opt.pair ? envelope_elicit : envelope);
        break;
    case K_NONE:
        break;
    }
}

static void conn_send(struct conn *c, enum kind kind, uint64_t t_sched)
{
    static struct buf body;
    c->kind = kind;
    c->busy = true;
    c->id = kind == K_NOTIF ? 0 : ++c->next_id;
    /* A pair's second request repeats the first one's arguments. */
    if ((kind == K_CALL || kind == K_ASK || kind == K_HELD) && c->step == 0) {
        c->text_len = (size_t)snprintf(c->text, sizeof c->text, "h\xc3\xa9llo \"bench\" %u.%llu",
                                       c->idx, (unsigned long long)c->id);
        if (kind == K_HELD) /* two loadgens' held calls must differ, or sluice shares them */
            c->text_len += (size_t)snprintf(c->text + c->text_len, sizeof c->text - c->text_len,
                                            " pid %ld", (long)getpid());
        expected_text(&c->want, c->text, c->text_len);
    }
    build_body(&body, kind, c->id, c->text, opt.modern,
               opt.pair == PAIR_GATED && c->step == 1 ? &c->state : NULL);
    buf_printf(&c->out,
               "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
               "Accept: application/json, text/event-stream\r\nContent-Length: %zu\r\n",
               opt.path, opt.host, opt.port, body.len);
    if (opt.modern && (kind == K_CALL || kind == K_ASK))
        buf_printf(&c->out, "MCP-Protocol-Version: " MODERN_VERSION "\r\n"
                            "Mcp-Method: tools/call\r\nMcp-Name: %s\r\n", call_tool(kind));
    if (opt.principal_header && !c->principal[0]) /* one name per connection, as a session */
        snprintf(c->principal, sizeof c->principal, "bench-%u", c->idx % opt.principals);
    if (opt.principal_header)
        buf_printf(&c->out, "%s: %s\r\n", opt.principal_header, c->principal);
    if (!opt.modern && kind != K_INIT) {
        if (c->proto[0])
            buf_printf(&c->out, "MCP-Protocol-Version: %s\r\n", c->proto);
        if (c->sid[0])
            buf_printf(&c->out, "Mcp-Session-Id: %s\r\n", c->sid);
    }
    buf_add(&c->out, "\r\n", 2);
    buf_add(&c->out, body.p, body.len);
    c->t_sched = t_sched;
    c->t_send = now_ns();
    if (c->fd < 0 && conn_connect(c) < 0) {
        conn_kill(c);
        return;
    }
    if (!c->connecting)
        conn_flush(c);
}

/* ---- HTTP response parsing ----------------------------------------------------------- */

struct resp {
    int status;
    bool sse, json, chunked, close, has_cl;
    size_t cl, head_len;
    char sid[160];
};

static bool hdr_is(const char *line, size_t len, const char *name, const char **val,
                   size_t *vlen)
{
    size_t n = strlen(name);
    if (len <= n || strncasecmp(line, name, n) || line[n] != ':')
        return false;
    const char *v = line + n + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *val = v;
    *vlen = (size_t)(end - v);
    return true;
}

/* Parses the head in buf; returns 1 when parsed, 0 when more is needed, -1 on junk. */
static int parse_head(const char *p, size_t n, struct resp *r)
{
    const char *end = memmem(p, n, "\r\n\r\n", 4);
    if (!end)
        return n > 65536 ? -1 : 0;
    memset(r, 0, sizeof *r);
    r->head_len = (size_t)(end - p) + 4;
    if (n < 12 || memcmp(p, "HTTP/1.", 7))
        return -1;
    r->status = atoi(p + 9);
    bool http10 = p[7] == '0';
    r->close = http10;
    const char *first_nl = memchr(p, '\n', (size_t)(end - p));
    const char *line = first_nl ? first_nl + 1 : end + 2;
    while (line < end + 2) {
        const char *le = memchr(line, '\r', (size_t)(end + 2 - line));
        size_t len = (size_t)(le - line);
        const char *v;
        size_t vl;
        if (hdr_is(line, len, "content-length", &v, &vl)) {
            r->has_cl = true;
            r->cl = strtoul(v, NULL, 10);
        } else if (hdr_is(line, len, "transfer-encoding", &v, &vl)) {
            r->chunked = vl >= 7 && !strncasecmp(v + vl - 7, "chunked", 7);
        } else if (hdr_is(line, len, "content-type", &v, &vl)) {
            r->sse = vl >= 17 && !strncasecmp(v, "text/event-stream", 17);
            r->json = vl >= 16 && !strncasecmp(v, "application/json", 16);
        } else if (hdr_is(line, len, "connection", &v, &vl)) {
            if (vl == 5 && !strncasecmp(v, "close", 5))
                r->close = true;
            if (vl == 10 && !strncasecmp(v, "keep-alive", 10))
                r->close = false;
        } else if (hdr_is(line, len, "mcp-session-id", &v, &vl) && vl < sizeof r->sid) {
            memcpy(r->sid, v, vl);
            r->sid[vl] = '\0';
        }
        line = le + 2;
    }
    return 1;
}

/* De-chunks from p (after the head). Returns bytes consumed when the body is complete, 0 when
 * more is needed, -1 on junk. */
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
        if (endp == p + i)
            return -1;
        i = (size_t)(crlf - p) + 2;
        if (sz == 0) { /* trailers, then an empty line */
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
        if (sz > MAX_BODY || n - i < sz + 2)
            return sz > MAX_BODY ? -1 : 0;
        buf_add(body, p + i, sz);
        i += sz + 2;
    }
}

static void conn_idle(struct conn *c);

static void finish_request(struct conn *c, const struct resp *r, const char *body, size_t blen)
{
    uint64_t t = now_ns();
    char why[256];
    const char *bad = NULL;
    struct expect e = {c->kind, c->id, c->want.p, c->want.len, opt.modern};
    enum kind kind = c->kind;
    c->busy = false;
    if (kind == K_NOTIF) {
        if (r->status != 202 && r->status != 200 && r->status != 204) {
            snprintf(why, sizeof why, "HTTP %d to notifications/initialized", r->status);
            bad = why;
        }
    } else if (r->status != 200) {
        snprintf(why, sizeof why, "HTTP %d: %.120s", r->status, body);
        bad = why;
    } else if (r->sse) {
        bad = check_sse(body, blen, &e, why, sizeof why, c->proto, sizeof c->proto, &c->state);
    } else if (r->json) {
        struct jcheck j = {0};
        jcheck_run(&j, body, blen);
        bad = check_response(&j, &e, why, sizeof why);
        if (!bad && kind == K_INIT)
            snprintf(c->proto, sizeof c->proto, "%s", j.proto);
        if (!bad && kind == K_ASK)
            take_state(&j, &c->state);
        jcheck_free(&j);
    } else {
        bad = "reply is neither application/json nor text/event-stream";
    }
    if (bad) {
        fail("connection %u, %s id %llu: %s", c->idx,
             kind == K_INIT    ? "initialize"
             : kind == K_NOTIF ? "initialized"
             : kind == K_ASK   ? "tools/call round one"
             : opt.pair == PAIR_GATED ? "tools/call round two"
                                      : "tools/call",
             (unsigned long long)c->id, bad);
        conn_kill(c);
        return;
    }
    if (kind == K_INIT && r->sid[0])
        snprintf(c->sid, sizeof c->sid, "%s", r->sid);
    if (r->close)
        conn_close(c);
    if (kind == K_INIT) {
        conn_send(c, K_NOTIF, 0);
        return;
    }
    if (kind == K_NOTIF) {
        c->ready = true;
        L.ready++;
        L.handshaking--;
        conn_idle(c);
        return;
    }
    if (opt.pair && c->step == 0) { /* the pair's second request, on the same connection */
        c->step = 1;
        conn_send(c, K_CALL, c->t_sched);
        return;
    }
    tot.good++;
    if (L.started && t >= L.t_measure && (opt.calls || t < L.t_end)) {
        tot.measured++;
        record(t - c->t_unit);
    }
    conn_idle(c);
}

/* A chunked body can be complete only once its last chunk ("0" CRLF CRLF: sluice sends no
 * trailers) has arrived; searching for it from where the last search stopped keeps a 1 MiB
 * body read in 16 KiB pieces from being de-chunked from its start on every read. A false
 * positive costs one dechunk(), which decides. */
static bool chunked_may_be_done(struct conn *c, size_t head_len)
{
    size_t from = c->scan > head_len + 4 ? c->scan - 4 : head_len;
    if (from >= c->in.len || !memmem(c->in.p + from, c->in.len - from, "0\r\n\r\n", 5)) {
        c->scan = c->in.len;
        return false;
    }
    return true;
}

/* --held: what arrived so far on the held call's stream. Good is our elicitation/create and
 * nothing else; a response (sluice refused to hold it, e.g. a question limit) or the stream's
 * end is an error. */
static void held_parse(struct conn *c)
{
    struct resp r;
    int h = parse_head(c->in.p, c->in.len, &r);
    if (h == 0)
        return;
    if (h < 0 || r.status != 200 || !r.sse) {
        if (h > 0 && r.has_cl && c->in.len - r.head_len < r.cl)
            return; /* the whole (refusing) body first, to show it */
        fail("connection %u, held call: %s: %.160s", c->idx,
             h < 0 ? "bad HTTP response" : "not an event stream",
             h > 0 ? c->in.p + r.head_len : "");
        conn_kill(c);
        return;
    }
    long done = 0;
    if (r.chunked) {
        done = dechunk(c->in.p + r.head_len, c->in.len - r.head_len, &c->body);
    } else {
        c->body.len = 0;
        buf_add(&c->body, c->in.p + r.head_len, c->in.len - r.head_len);
    }
    const char *p = c->body.p ? c->body.p : "", *end = p + c->body.len, *ev;
    while (done >= 0 && (ev = memmem(p, (size_t)(end - p), "\n\n", 2))) {
        struct buf data = {0};
        for (const char *line = p; line < ev;) {
            const char *nl = memchr(line, '\n', (size_t)(ev + 1 - line));
            if (nl - line > 5 && !memcmp(line, "data:", 5))
                buf_add(&data, line + 5 + (line[5] == ' '), (size_t)(nl - line) - 5 - (line[5] == ' '));
            line = nl + 1;
        }
        struct jcheck j = {0};
        if (data.len)
            jcheck_run(&j, data.p, data.len);
        if (data.len && !j.has_method) {
            fail("connection %u: the held call was answered: %s%.160s", c->idx, j.err_msg,
                 j.text.p ? j.text.p : "");
            done = -1;
        } else if (!strcmp(j.method, "elicitation/create") && !c->held) {
            c->held = true;
            L.held++;
        }
        jcheck_free(&j);
        free(data.p);
        p = ev + 2;
    }
    if (done != 0) {
        if (done > 0)
            fail("connection %u: the held call's stream ended", c->idx);
        conn_kill(c);
    }
}

/* Consumes complete responses from c->in. */
static void conn_parse(struct conn *c)
{
    if (c->kind == K_HELD) {
        held_parse(c);
        return;
    }
    for (;;) {
        struct resp r;
        int h = parse_head(c->in.p, c->in.len, &r);
        if (h == 0)
            return;
        if (h < 0 || !c->busy) {
            fail("connection %u: %s", c->idx, h < 0 ? "bad HTTP response" : "unsolicited bytes");
            conn_kill(c);
            return;
        }
        /* The body goes to c->body (NUL-terminated, for error messages), then leaves c->in. */
        size_t used;
        if (r.chunked) {
            if (!chunked_may_be_done(c, r.head_len))
                return;
            long u = dechunk(c->in.p + r.head_len, c->in.len - r.head_len, &c->body);
            if (u < 0) {
                fail("connection %u: bad chunked body", c->idx);
                conn_kill(c);
                return;
            }
            if (u == 0)
                return;
            used = r.head_len + (size_t)u;
        } else if (r.has_cl || r.status == 204 || r.status == 304 || r.status < 200) {
            size_t cl = r.has_cl ? r.cl : 0;
            if (c->in.len - r.head_len < cl)
                return;
            used = r.head_len + cl;
            c->body.len = 0;
            buf_add(&c->body, c->in.p + r.head_len, cl);
        } else {
            return; /* delimited by close: finished in on_eof */
        }
        if (!c->body.p)
            buf_add(&c->body, "", 0);
        memmove(c->in.p, c->in.p + used, c->in.len - used);
        c->in.len -= used;
        c->scan = 0;
        finish_request(c, &r, c->body.p, c->body.len);
        if (c->fd < 0 || c->dead || !c->in.len)
            return;
    }
}

static void on_eof(struct conn *c)
{
    struct resp r;
    if (c->busy && parse_head(c->in.p, c->in.len, &r) == 1 && !r.chunked && !r.has_cl) {
        size_t blen = c->in.len - r.head_len;
        c->body.len = 0;
        buf_add(&c->body, c->in.p + r.head_len, blen);
        conn_close(c);
        finish_request(c, &r, c->body.p, blen);
        return;
    }
    if (c->busy) {
        fail("connection %u: closed by the server with a request in flight", c->idx);
        conn_kill(c);
        return;
    }
    conn_close(c); /* idle keep-alive connection closed: reconnect on the next request */
}

static void on_conn_event(struct conn *c, uint32_t events)
{
    if (c->connecting && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err) {
            fail("connection %u: connect: %s", c->idx, strerror(err));
            conn_kill(c);
            return;
        }
        c->connecting = false;
    }
    if ((events & EPOLLOUT) && !c->connecting)
        conn_flush(c);
    if (c->dead || c->fd < 0)
        return;
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        for (;;) {
            buf_reserve(&c->in, 16384);
            ssize_t n = recv(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len - 1, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                break;
            if (n <= 0) {
                if (n < 0)
                    fail("connection %u: recv: %s", c->idx, strerror(errno));
                on_eof(c);
                return;
            }
            c->in.len += (size_t)n;
            c->in.p[c->in.len] = '\0';
            if (c->in.len > MAX_BODY) {
                fail("connection %u: response too large", c->idx);
                conn_kill(c);
                return;
            }
            if ((size_t)n < c->in.cap - c->in.len)
                break;
        }
        conn_parse(c);
    }
}

/* ---- scheduling ---------------------------------------------------------------------- */

static bool may_send(void)
{
    if (!L.running)
        return false;
    if (opt.calls)
        return L.dispatched < opt.calls;
    return now_ns() < L.t_end;
}

static void dispatch(struct conn *c, uint64_t t_sched)
{
    L.dispatched++;
    if (t_sched) {
        uint64_t t = now_ns(), lag = t > t_sched ? t - t_sched : 0;
        if (t >= L.t_measure && lag > L.max_lag)
            L.max_lag = lag;
        L.late += lag > 1000000u;
    }
    c->step = 0;
    c->t_unit = now_ns();
    /* Questions are limited per principal (max_questions_per_minute): pairs cycle through
     * names, so the limit is not what is measured. */
    if (opt.principal_header && opt.pair)
        snprintf(c->principal, sizeof c->principal, "bench-%lu", L.pair_seq++ % opt.principals);
    conn_send(c, opt.pair == PAIR_GATED ? K_ASK : K_CALL, t_sched);
}

static void conn_idle(struct conn *c)
{
    if (opt.sessions_only)
        return;
    if (opt.rate > 0) {
        if (L.started)
            L.idle[L.nidle++] = c->idx;
        return;
    }
    if (L.started && may_send())
        dispatch(c, 0);
}

static void rate_tick(void)
{
    uint64_t t = now_ns();
    while (L.nidle && may_send()) {
        uint64_t sched = L.t_start + L.k_next * L.interval_ns;
        if (sched > t)
            break;
        struct conn *c = &L.conns[L.idle[--L.nidle]];
        if (c->dead)
            continue;
        L.k_next++;
        dispatch(c, sched);
    }
}

static void start_measuring(void)
{
    L.started = true;
    L.running = true;
    L.t_start = now_ns();
    L.t_measure = L.t_start + (opt.calls ? 0 : (uint64_t)(opt.warmup * 1e9));
    L.t_end = L.t_measure + (uint64_t)(opt.duration * 1e9);
    if (opt.rate > 0)
        return;
    for (unsigned i = 0; i < L.nconn; i++)
        if (L.conns[i].ready && !L.conns[i].busy && !L.conns[i].dead && may_send())
            dispatch(&L.conns[i], 0);
}

static void check_timeouts(void)
{
    uint64_t t = now_ns(), limit = (uint64_t)(opt.timeout * 1e9);
    for (unsigned i = 0; i < L.nconn; i++) {
        struct conn *c = &L.conns[i];
        if (!c->dead && c->busy && !c->held && t - c->t_send > limit) {
            fail("connection %u: no reply within %.0f s", c->idx, opt.timeout);
            conn_kill(c);
        }
    }
}

static unsigned busy_count(void)
{
    unsigned n = 0;
    for (unsigned i = 0; i < L.nconn; i++)
        n += L.conns[i].busy && !L.conns[i].dead;
    return n;
}

static void open_more_sessions(void)
{
    while (L.opened_next < L.nconn && L.handshaking < HANDSHAKES_IN_FLIGHT) {
        struct conn *c = &L.conns[L.opened_next++];
        L.handshaking++;
        conn_send(c, K_INIT, 0);
    }
}

static void raise_nofile(unsigned want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want + 64) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        if (rl.rlim_cur < want + 64)
            fprintf(stderr, "loadgen: warning: open files limited to %lu\n",
                    (unsigned long)rl.rlim_cur);
    }
}

static void pump(int timeout_ms)
{
    struct epoll_event evs[256];
    int n = epoll_wait(L.ep, evs, 256, timeout_ms);
    for (int i = 0; i < n; i++) {
        if (evs[i].data.ptr == &L.tfd) {
            uint64_t expirations;
            if (read(L.tfd, &expirations, sizeof expirations) < 0)
                continue;
            continue;
        }
        on_conn_event(evs[i].data.ptr, evs[i].events);
    }
}

static void print_summary(double secs)
{
    if (tot.nlat)
        qsort(tot.lat, tot.nlat, sizeof *tot.lat, cmp_u64);
    double rps = secs > 0 ? (double)tot.measured / secs : 0;
    const char *unit = opt.pair == PAIR_GATED ? "gated pairs" : opt.pair ? "plain pairs" : "calls";
    fprintf(stderr, "loadgen: %s, %u connections%s: %lu %s measured in %.2f s = %.0f %s/s; "
                    "latency us p50 %.0f p90 %.0f p99 %.0f max %.0f; %lu good, %lu errors\n",
            opt.modern ? "2026-07-28" : "2025-11-25", L.nconn,
            opt.rate > 0 ? " (fixed rate)" : "", tot.measured, unit, secs, rps, unit,
            pct_us(0.50), pct_us(0.90), pct_us(0.99), tot.nlat ? pct_us(1.0) : 0, tot.good,
            tot.errors);
    if (opt.rate > 0)
        fprintf(stderr, "loadgen: fixed rate %.0f/s: latest send %.0f us after its scheduled "
                        "time; %lu calls sent over 1 ms late\n",
                opt.rate, (double)L.max_lag / 1000.0, L.late);
    /* A pair is counted (and its latency taken) as one unit: pairs=, pairs_per_s=. */
    const char *key = opt.pair ? "pairs" : "calls";
    printf("%s=%lu seconds=%.3f %s_per_s=%.0f p50_us=%.0f p90_us=%.0f p99_us=%.0f "
           "max_us=%.0f good=%lu errors=%lu max_lag_us=%.0f",
           key, tot.measured, secs, key, rps, pct_us(0.50), pct_us(0.90), pct_us(0.99),
           tot.nlat ? pct_us(1.0) : 0, tot.good, tot.errors, (double)L.max_lag / 1000.0);
    /* --arg-bytes/--result-bytes: the payload moved, counting the padded argument and result
     * (not the JSON-RPC and HTTP around them), in MB (10^6 bytes) per second */
    if (opt.arg_bytes || opt.result_bytes)
        printf(" arg_bytes=%zu result_bytes=%zu mb_per_s=%.2f", opt.arg_bytes, opt.result_bytes,
               rps * (double)(opt.arg_bytes + opt.result_bytes) / 1e6);
    printf("\n");
    fflush(stdout);
}

/* --held: on every ready session one call of the gated tool, at most HANDSHAKES_IN_FLIGHT not
 * yet held at a time; then they are held (never answered) until --hold or SIGTERM. */
static int run_held(uint64_t t0)
{
    uint64_t give_up = now_ns() + (uint64_t)(opt.timeout * 1e9) + (uint64_t)L.nconn * 2000000u;
    unsigned next = 0;
    while (L.held + L.dead < L.nconn && !g_stop && now_ns() < give_up) {
        unsigned pending = 0; /* sent, not yet held, not refused */
        for (unsigned i = 0; i < next; i++)
            pending += !L.conns[i].held && !L.conns[i].dead;
        for (; next < L.nconn && pending < HANDSHAKES_IN_FLIGHT; next++, pending++) {
            struct conn *c = &L.conns[next];
            if (c->ready && !c->dead)
                conn_send(c, K_HELD, 0);
        }
        pump(100);
    }
    uint64_t t_held = now_ns();
    if (L.held < L.nconn)
        fail("only %lu of %u calls held in time", L.held, L.nconn);
    printf("held=%lu held_ms=%.0f errors=%lu\n", L.held, (double)(t_held - t0) / 1e6, tot.errors);
    fflush(stdout);
    uint64_t until = now_ns() + (uint64_t)(opt.hold * 1e9);
    while (!g_stop && now_ns() < until)
        pump(200);
    unsigned still = 0;
    for (unsigned i = 0; i < L.nconn; i++)
        still += L.conns[i].held && !L.conns[i].dead;
    if (still != L.held)
        fail("%lu of %lu held calls ended while held", L.held - still, L.held);
    printf("held_still=%u errors=%lu\n", still, tot.errors);
    return tot.errors ? 1 : 0;
}

static int run_http(void)
{
    L.nconn = opt.sessions_only ? (unsigned)opt.sessions_only
              : opt.held        ? (unsigned)opt.held
                                : opt.connections;
    raise_nofile(L.nconn);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    int gai = getaddrinfo(opt.host, opt.port, &hints, &L.ai);
    if (gai) {
        fprintf(stderr, "loadgen: %s: %s\n", opt.host, gai_strerror(gai));
        return 2;
    }
    L.ep = epoll_create1(EPOLL_CLOEXEC);
    L.conns = calloc(L.nconn, sizeof *L.conns);
    L.idle = calloc(L.nconn, sizeof *L.idle);
    if (!L.conns || !L.idle)
        return 2;
    for (unsigned i = 0; i < L.nconn; i++) {
        L.conns[i].fd = -1;
        L.conns[i].idx = i;
    }
    if (opt.rate > 0) {
        L.interval_ns = (uint64_t)(1e9 / opt.rate);
        L.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &L.tfd};
        if (L.tfd < 0 || epoll_ctl(L.ep, EPOLL_CTL_ADD, L.tfd, &ev) < 0) {
            fprintf(stderr, "loadgen: timerfd: %s\n", strerror(errno));
            return 2;
        }
    }

    /* Sessions first: legacy initialize + initialized on each connection; modern has none. */
    uint64_t t0 = now_ns(), give_up = t0 + (uint64_t)(opt.timeout * 1e9) +
                                      (uint64_t)L.nconn * 2000000u;
    if (opt.modern && !opt.sessions_only) {
        for (unsigned i = 0; i < L.nconn; i++) {
            L.conns[i].ready = true;
            L.conns[i].busy = false;
            L.ready++;
        }
        L.opened_next = L.nconn;
    }
    open_more_sessions();
    while (L.ready + L.dead < L.nconn && !g_stop && now_ns() < give_up) {
        pump(100);
        open_more_sessions();
        check_timeouts();
    }
    uint64_t t_open = now_ns();
    if (L.ready + L.dead < L.nconn)
        fail("only %u of %u sessions ready in time", L.ready, L.nconn);
    if (opt.held)
        return run_held(t0);
    if (opt.sessions_only) {
        printf("sessions_open=%u open_ms=%.0f errors=%lu\n", L.ready, (double)(t_open - t0) / 1e6,
               tot.errors);
        fflush(stdout);
        uint64_t until = now_ns() + (uint64_t)(opt.hold * 1e9);
        while (!g_stop && now_ns() < until)
            pump(200);
        unsigned alive = 0;
        for (unsigned i = 0; i < L.nconn; i++)
            alive += L.conns[i].fd >= 0 && !L.conns[i].dead;
        if (alive != L.ready)
            fail("%u of %u idle sessions were closed by the server", L.ready - alive, L.ready);
        printf("sessions_still_open=%u errors=%lu\n", alive, tot.errors);
        return tot.errors ? 1 : 0;
    }
    for (unsigned i = 0; i < L.nconn; i++)
        if (L.conns[i].ready && !L.conns[i].dead && opt.rate > 0)
            L.idle[L.nidle++] = i;
    start_measuring();
    while (!g_stop && L.dead < L.nconn) {
        bool sending = may_send();
        if (!sending && !busy_count())
            break;
        if (opt.rate > 0 && sending && L.nidle) {
            uint64_t next = L.t_start + L.k_next * L.interval_ns;
            struct itimerspec its = {.it_value = {.tv_sec = (time_t)(next / 1000000000u),
                                                  .tv_nsec = (long)(next % 1000000000u)}};
            if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
                its.it_value.tv_nsec = 1;
            timerfd_settime(L.tfd, TFD_TIMER_ABSTIME, &its, NULL);
        }
        pump(100);
        if (opt.rate > 0)
            rate_tick();
        check_timeouts();
    }
    uint64_t t_last = now_ns();
    if (L.dead)
        fail("%u of %u connections failed", L.dead, L.nconn);
    double secs = opt.calls ? (double)(t_last - L.t_measure) / 1e9 : opt.duration;
    if (opt.calls && tot.measured < opt.calls)
        fail("only %lu of %lu %s completed", tot.measured, opt.calls, opt.pair ? "pairs" : "calls");
    print_summary(secs);
    return tot.errors ? 1 : 0;
}

/* ---- stdio mode ---------------------------------------------------------------------- */

static struct {
    pid_t pid;
    int to, from;
    struct buf in;
    struct buf state; /* --pair gated: round one's requestState */
} S;

static int stdio_write(const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(S.to, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads one line (without the newline) into *line; returns its length, or -1. */
static long stdio_line(const char **line, size_t *consumed)
{
    for (;;) {
        char *nl = S.in.len ? memchr(S.in.p, '\n', S.in.len) : NULL;
        if (nl) {
            *line = S.in.p;
            *consumed = (size_t)(nl - S.in.p) + 1;
            return nl - S.in.p;
        }
        struct pollfd pfd = {.fd = S.from, .events = POLLIN};
        int pr = poll(&pfd, 1, (int)(opt.timeout * 1000));
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            return -1;
        buf_reserve(&S.in, 65536);
        ssize_t n = read(S.from, S.in.p + S.in.len, S.in.cap - S.in.len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        S.in.len += (size_t)n;
    }
}

/* Sends one request line and waits for its response; checks it. Returns 0 when good. state:
 * a gated round two's (sent back); a round one's requestState goes to S.state. */
static int stdio_roundtrip(enum kind kind, uint64_t id, const char *text,
                           const struct buf *state, uint64_t *ns)
{
    static struct buf body;
    build_body(&body, kind, id, text, opt.modern, state);
    buf_add(&body, "\n", 1);
    uint64_t t0 = now_ns();
    if (stdio_write(body.p, body.len) < 0) {
        fail("stdio: write to the child failed");
        return -1;
    }
    if (kind == K_NOTIF)
        return 0;
    for (;;) {
        const char *line;
        size_t used;
        long len = stdio_line(&line, &used);
        if (len < 0) {
            fail("stdio: no reply to id %llu (child closed or %.0f s passed)",
                 (unsigned long long)id, opt.timeout);
            return -1;
        }
        struct jcheck j = {0};
        jcheck_run(&j, line, (size_t)len);
        uint64_t t1 = now_ns();
        bool notification = j.has_method && !j.has_id;
        const char *bad = NULL;
        char why[256];
        if (!notification) {
            struct expect e = {kind, id, text, text ? strlen(text) : 0, opt.modern};
            bad = j.has_method ? "the server sent a request" : check_response(&j, &e, why, sizeof why);
            if (!bad && kind == K_ASK)
                take_state(&j, &S.state);
        }
        jcheck_free(&j);
        memmove(S.in.p, S.in.p + used, S.in.len - used);
        S.in.len -= used;
        if (notification)
            continue;
        if (bad) {
            fail("stdio, id %llu: %s", (unsigned long long)id, bad);
            return -1;
        }
        *ns = t1 - t0;
        return 0;
    }
}

static int stdio_spawn(void)
{
    int in_pipe[2], out_pipe[2];
    if (pipe2(in_pipe, O_CLOEXEC) || pipe2(out_pipe, O_CLOEXEC))
        return -1;
    S.pid = fork();
    if (S.pid < 0)
        return -1;
    if (S.pid == 0) {
        dup2(in_pipe[0], 0);
        dup2(out_pipe[1], 1);
        execvp(opt.cmd[0], opt.cmd);
        fprintf(stderr, "loadgen: exec %s: %s\n", opt.cmd[0], strerror(errno));
        _exit(127);
    }
    close(in_pipe[0]);
    close(out_pipe[1]);
    S.to = in_pipe[1];
    S.from = out_pipe[0];
    return 0;
}

/* Closes the child's stdin and waits for it (bounded), then TERM, then KILL. */
static void stdio_reap(void)
{
    close(S.to);
    for (int sig = 0; sig < 3; sig++) {
        for (int i = 0; i < 50; i++) {
            if (waitpid(S.pid, NULL, WNOHANG) == S.pid)
                return;
            usleep(20000);
        }
        kill(S.pid, sig == 0 ? SIGTERM : SIGKILL);
    }
    waitpid(S.pid, NULL, 0);
}

static int run_stdio(void)
{
    unsigned long calls = opt.calls ? opt.calls : 20000, warm = calls / 10 + 100;
    if (stdio_spawn() < 0) {
        fprintf(stderr, "loadgen: cannot start %s\n", opt.cmd[0]);
        return 2;
    }
    uint64_t id = 0, ns;
    char text[96];
    int rc = 0;
    if (!opt.modern && (stdio_roundtrip(K_INIT, ++id, NULL, NULL, &ns) ||
                        stdio_roundtrip(K_NOTIF, 0, NULL, NULL, &ns)))
        rc = -1;
    for (unsigned long i = 0; rc == 0 && i < warm + calls && !g_stop; i++) {
        ++id;
        snprintf(text, sizeof text, "h\xc3\xa9llo \"bench\" %llu", (unsigned long long)id);
        uint64_t t0 = now_ns();
        rc = stdio_roundtrip(opt.pair == PAIR_GATED ? K_ASK : K_CALL, id, text, NULL, &ns);
        if (rc == 0 && opt.pair) { /* the pair's second request: a new id, the same arguments */
            rc = stdio_roundtrip(K_CALL, ++id, text, opt.pair == PAIR_GATED ? &S.state : NULL,
                                 &ns);
            ns = now_ns() - t0;
        }
        if (rc == 0) {
            tot.good++;
            if (i >= warm) {
                tot.measured++;
                record(ns);
            }
        }
    }
    stdio_reap();
    if (tot.nlat)
        qsort(tot.lat, tot.nlat, sizeof *tot.lat, cmp_u64);
    double sum = 0;
    for (size_t i = 0; i < tot.nlat; i++)
        sum += (double)tot.lat[i];
    double mean = tot.nlat ? sum / (double)tot.nlat / 1000.0 : 0;
    fprintf(stderr, "loadgen: stdio %s: %lu sequential %s: round trip us median %.1f p90 %.1f "
                    "p99 %.1f mean %.1f max %.1f; %lu errors\n",
            opt.modern ? "2026-07-28" : "2025-11-25", tot.measured,
            opt.pair == PAIR_GATED ? "gated pairs" : opt.pair ? "plain pairs" : "calls",
            pct_us(0.5), pct_us(0.9), pct_us(0.99), mean, tot.nlat ? pct_us(1.0) : 0, tot.errors);
    printf("%s=%lu median_us=%.1f p90_us=%.1f p99_us=%.1f mean_us=%.1f max_us=%.1f "
           "errors=%lu\n",
           opt.pair ? "pairs" : "calls", tot.measured, pct_us(0.5), pct_us(0.9), pct_us(0.99), mean,
           tot.nlat ? pct_us(1.0) : 0, tot.errors);
    return tot.errors || rc ? 1 : 0;
}

/* ---- command line ---------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fputs("usage: loadgen --url http://HOST:PORT/PATH [--connections N] [--duration S]\n"
          "               [--warmup S] [--rate N] [--calls N] [--era legacy|modern]\n"
          "               [--timeout S] [--pair gated|plain] [--principal-header NAME]\n"
          "               [--principals N]\n"
          "               [--arg-bytes N] [--result-bytes N]\n"
          "       loadgen --url URL --sessions-only N [--hold S]\n"
          "       loadgen --url URL --held N [--hold S] [--principal-header NAME]\n"
          "               [--principals N]\n"
          "       loadgen --stdio [--calls N] [--era legacy|modern] [--pair gated|plain]\n"
          "               -- CMD [ARG...]\n",
          f);
}

static int parse_url(char *url)
{
    static char host[256], port[16];
    if (strncmp(url, "http://", 7))
        return -1;
    char *h = url + 7, *slash = strchr(h, '/');
    opt.path = slash ? slash : "/";
    size_t hl = slash ? (size_t)(slash - h) : strlen(h);
    if (hl >= sizeof host)
        return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    char *colon = strrchr(host, ':');
    snprintf(port, sizeof port, "%s", colon ? colon + 1 : "80");
    if (colon)
        *colon = '\0';
    opt.host = host;
    opt.port = port;
    return 0;
}

int main(int argc, char **argv)
{
    bool stdio = false, era_given = false;
    char *url = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "--")) {
            opt.cmd = argv + i + 1;
            break;
        } else if (!strcmp(a, "--stdio")) {
            stdio = true;
        } else if (!strcmp(a, "--url") && has) {
            url = argv[++i];
        } else if (!strcmp(a, "--connections") && has) {
            opt.connections = (unsigned)atoi(argv[++i]);
        } else if (!strcmp(a, "--duration") && has) {
            opt.duration = atof(argv[++i]);
        } else if (!strcmp(a, "--warmup") && has) {
            opt.warmup = atof(argv[++i]);
        } else if (!strcmp(a, "--timeout") && has) {
            opt.timeout = atof(argv[++i]);
        } else if (!strcmp(a, "--rate") && has) {
            opt.rate = atof(argv[++i]);
        } else if (!strcmp(a, "--calls") && has) {
            opt.calls = strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(a, "--sessions-only") && has) {
            opt.sessions_only = strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(a, "--held") && has) {
            opt.held = strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(a, "--arg-bytes") && has) {
            opt.arg_bytes = strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(a, "--result-bytes") && has) {
            opt.result_bytes = strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(a, "--hold") && has) {
            opt.hold = atof(argv[++i]);
        } else if (!strcmp(a, "--era") && has) {
            const char *e = argv[++i];
            if (strcmp(e, "legacy") && strcmp(e, "modern")) {
                usage(stderr);
                return 2;
            }
            opt.modern = !strcmp(e, "modern");
            era_given = true;
        } else if (!strcmp(a, "--pair") && has) {
            const char *e = argv[++i];
            if (strcmp(e, "gated") && strcmp(e, "plain")) {
                usage(stderr);
                return 2;
            }
            opt.pair = !strcmp(e, "gated") ? PAIR_GATED : PAIR_PLAIN;
        } else if (!strcmp(a, "--principal-header") && has) {
            opt.principal_header = argv[++i];
        } else if (!strcmp(a, "--principals") && has) {
            opt.principals = (unsigned)atoi(argv[++i]);
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "loadgen: unknown or incomplete option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    /* A confirmation round is a 2026-07-28 exchange: pairs are modern (legacy would need
     * sluice's own elicitation/create on a held call). */
    if (opt.pair && era_given && !opt.modern) {
        fprintf(stderr, "loadgen: --pair needs --era modern\n");
        return 2;
    }
    if (opt.pair)
        opt.modern = true;
    if (opt.principals < 1 || (opt.pair && opt.sessions_only) ||
        (opt.held && (opt.pair || opt.sessions_only || opt.modern || stdio)) ||
        ((opt.arg_bytes || opt.result_bytes) && (stdio || opt.pair)) ||
        opt.arg_bytes > MAX_BODY / 2 || opt.result_bytes > MAX_BODY / 2) {
        usage(stderr);
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (stdio) {
        if (!opt.cmd || !opt.cmd[0]) {
            usage(stderr);
            return 2;
        }
        return run_stdio();
    }
    if (!url || parse_url(url) < 0 || opt.connections < 1 || opt.duration <= 0 ||
        (opt.sessions_only && opt.modern)) {
        usage(stderr);
        return 2;
    }
    return run_http();
}
