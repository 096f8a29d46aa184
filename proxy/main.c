/* main.c: command line, keys, policy, the event loop, and an orderly stop. Nothing else.
 *
 * Stop paths (each ends with no upstream process left):
 *   client EOF        -> close the upstream's stdin, SIGTERM its group after 1 s, SIGKILL after
 *                        another 1 s; exit 0 once it is gone.
 *   SIGINT / SIGTERM  -> the same with 200 ms steps; a second signal kills the group at once.
 *   upstream exits    -> pending requests get errors, exit 1 with the reason logged.
 *   sluice is killed  -> the child has PR_SET_PDEATHSIG (see up_stdio.c). */
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <netdb.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/crypto.h>

#include "audit.h"
#include "audit_verify.h"
#include "cli.h"
#include "cmd_pin.h"
#include "gate.h"
#include "lint.h"
#include "log.h"
#include "policy.h"
#include "store.h"
#include "seal.h"
#include "front_http.h"
#include "front_stdio.h"
#include "metrics.h"
#include "namefold.h"
#include "notify.h"
#include "tls.h"
#include "approval.h"
#include "session.h"
#include "upstream.h"

#define REPLAY_MAX_ENTRIES 100000

extern const char sl_default_policy[];
extern const size_t sl_default_policy_len;

/* What a path names, to notice a change: a file edited in place changes its mtime or size, one
 * replaced (a rename, or a ConfigMap's ..data symlink swapped) its device and inode. */
struct file_id {
    bool exists;
    int err;                   /* errno of the stat that failed */
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
};

struct app {
    struct event_base *base;
    struct session_env env;
    struct front_stdio *stdio;
    struct session *session;   /* the stdio front's */
    struct front_http *http;
    const char *policy_path;
    time_t drain_grace;
    struct event *grace_ev;
    struct event *respawn_ev;   /* its own: freeing it cancels a restart still due at exit */
    struct event *list_ev;     /* bounds the wait for the listing before the fronts start */
    char **upstream_argv;
    const char *upstream_url;
    int restart_s;             /* the last restart delay of the child; 0 after a stable run */
    bool started_once;         /* a child has been ready before (so this one is a restart) */
    time_t ready_at;           /* when this child became ready (monotonic s), 0: not yet */
    bool stopping, draining, respawning;
    bool listing;              /* the fronts wait for the upstream's tools to be listed */
    bool listing_again;        /* ... of a restarted child */
    bool cli_strict;           /* --strict */
    bool strict;               /* --strict or the policy's defaults.strict (strict_check) */
    struct sl_arena *tools_arena;
    const struct json *tools;  /* a copy of the server's last listing, for a reload's check */
    bool tools_current;        /* ... and it is the running child's */
    char *refusal;             /* strict failed after a restart: what clients are told */
    struct session_opener opener; /* per-client upstreams (session_own.c), when they apply */
    SSL_CTX *up_tls;           /* the client context for an https upstream */
    struct front_http *approval_http; /* --approval-listen, or NULL */
    char *approval_base;       /* the approval page's base URL, or NULL: no page */
    int upstream_timeout_s;
    bool child_per_session;
    struct event *watch_ev;    /* --watch-policy: looks at the policy file every second */
    struct file_id watched;    /* what the policy path named when it was last acted on */
    struct file_id seen;       /* what it named at the last look, while a change settles */
    int exit_code;
};

/* ===== startup ===== */

/* Two tool names of the policy that read as one (namefold.h): both load, each decided by its
 * own entry, but a server that matches names loosely may run one tool for both, so the operator
 * is told at start, on SIGHUP and in check. */
struct collision_log {
    const struct policy *p;
    bool plain;
};

static void log_collision(void *arg, size_t first, size_t other)
{
    const struct collision_log *c = arg;
    struct policy_where a = policy_tool_where(c->p, first), b = policy_tool_where(c->p, other);
    char msg[1200];
    snprintf(msg, sizeof(msg), "%s:%u:%u: tools.%s reads as tools.%s (line %u) to a server that "
             "matches names loosely (case, width, accents, separators); each is decided by its "
             "own entry, but such a server may run one tool for both",
             b.file, b.line, b.col, policy_tool_name(c->p, other), policy_tool_name(c->p, first),
             a.line);
    if (c->plain)
        fprintf(stderr, "warning: %s\n", msg);
    else
        sl_warn("policy: %s", msg);
}

/* Errors go to the log (JSON lines with --log-format json) when running, plainly for check. */
static int load_policy(const char *path, struct policy **out, bool plain)
{
    struct policy_error err;
    int rc = path ? policy_load_file(path, out, &err)
                  : policy_load_buffer("(embedded policy.example.yaml)", sl_default_policy,
                                       sl_default_policy_len, out, &err);
    if (rc != 0) {
        char msg[600];
        policy_error_format(&err, msg, sizeof(msg));
        if (plain)
            fprintf(stderr, "%s\n", msg);
        else
            sl_error("%s", msg);
        return rc;
    }
    /* A policy that loads may still carry warnings (a deny tool's leftover keys): at start, on
     * SIGHUP and in check alike, each with its file:line:col. */
    for (size_t i = 0; i < policy_warning_count(*out); i++) {
        char msg[600];
        policy_error_format(policy_warning(*out, i), msg, sizeof(msg));
        if (plain)
            fprintf(stderr, "warning: %s\n", msg);
        else
            sl_warn("policy: %s", msg);
    }
    struct collision_log c = { *out, plain };
    namefold_policy_collisions(*out, log_collision, &c);
    return rc;
}

static int read_key(const char *file, const char *hex, uint8_t **key, size_t *len)
{
    char err[300];
    int rc = file ? seal_key_from_file(file, key, len, err, sizeof(err))
                  : seal_key_from_hex(hex, key, len, err, sizeof(err));
    if (rc != 0)
        sl_error("%s", err);
    return rc;
}

static struct seal_keyring *load_keys(const struct cli_opts *o)
{
    const char *hex = getenv("SLUICE_STATE_KEY");
    if (o->key_file == NULL && (hex == NULL || *hex == '\0')) {
        if (o->prev_key_file)
            sl_warn("--previous-state-key-file is ignored without a current key");
        sl_info("no --state-key-file or SLUICE_STATE_KEY: using a random key for this process "
                "(confirmations cannot cross a restart or another replica)");
        return seal_keyring_random();
    }
    uint8_t *cur = NULL, *prev = NULL;
    size_t cur_len = 0, prev_len = 0;
    struct seal_keyring *kr = NULL;
    if (read_key(o->key_file, hex, &cur, &cur_len) == 0 &&
        (o->prev_key_file == NULL || read_key(o->prev_key_file, NULL, &prev, &prev_len) == 0))
        kr = seal_keyring_new(cur, cur_len, prev, prev_len);
    if (cur)
        OPENSSL_cleanse(cur, cur_len);
    if (prev)
        OPENSSL_cleanse(prev, prev_len);
    free(cur);
    free(prev);
    return kr;
}

/* Binds states to the upstream they were minted for: the command line or URL, as typed. */
static void upstream_id(struct sl_buf *out, char **argv, const char *url)
{
    if (url) {
        sl_buf_printf(out, "http:%s", url);
        return;
    }
    sl_buf_puts(out, "stdio:");
    if (argv == NULL) {
        sl_buf_puts(out, "(built-in demo)");
        return;
    }
    for (size_t i = 0; argv[i]; i++) {
        if (i)
            sl_buf_putc(out, '\x1f');
        sl_buf_puts(out, argv[i]);
    }
}

/* ===== events ===== */

/* An upstream of one session's own (session_own.c): another session with the HTTP server, or
 * another child. */
static struct upstream *open_own(void *arg, const struct upstream_cbs *cbs, void *cbarg,
                                 char *err, size_t errlen)
{
    struct app *app = arg;
    if (app->upstream_url)
        return upstream_connect(app->base, app->upstream_url, app->up_tls,
                                app->upstream_timeout_s, cbs, cbarg, err, errlen);
    return upstream_spawn(app->base, app->upstream_argv, app->upstream_timeout_s, cbs, cbarg, err,
                          errlen);
}

static void on_era(struct upstream *up, void *arg)
{
    struct app *app = arg;
    if (app->session) {
        session_start(app->session);
        return;
    }
    /* Over HTTP the upstream is shared by every client: it is initialized declaring no client
     * capabilities, so a legacy server never asks sluice anything it would have to attribute
     * to one client (PROTOCOL.md §7.3). Each legacy client session gets an upstream of its own
     * instead, when the server is an HTTP one (a session there costs little) or with
     * --child-per-session; the shared one serves 2026-07-28 clients, the listing and the
     * policy check. */
    upstream_initialize(up, NULL, NULL);
    if (upstream_era(up) == ERA_LEGACY && (app->upstream_url || app->child_per_session) &&
        app->env.opener == NULL) {
        app->opener = (struct session_opener){
            .open = open_own, .arg = app, .base = app->base,
            .max = app->upstream_url ? 0 : app->opener.max,
            .what = app->upstream_url ? "upstream session" : "child",
        };
        app->env.opener = &app->opener;
        sl_info("each legacy client session gets its own %s%s", app->opener.what,
                app->opener.max ? " (--max-children)" : "");
    }
}

/* The fronts are told the upstream is ready only once its tools are listed (or the listing
 * failed, or took LIST_WAIT_SECONDS): each listing teaches the upstream its x-mcp-header marks
 * (params.h), so even the first calls to a modern server carry their Mcp-Param headers. */
#define LIST_WAIT_SECONDS 10

static void fronts_ready(struct app *app)
{
    if (!app->listing && app->refusal == NULL)
        return;
    app->listing = false;
    evtimer_del(app->list_ev);
    free(app->refusal);
    app->refusal = NULL;
    if (app->http)
        front_http_set_unready_reason(app->http, NULL);
    if (!upstream_ready(app->env.up)) /* it went away meanwhile; its exit is reported */
        return;
    sl_info("serving clients");
    if (app->session)
        session_upstream_ready(app->session);
    if (app->http)
        front_http_set_ready(app->http, true);
}

/* ===== the policy against the server's tools (lint.h) =====
 *
 * Without strict, the findings are logged and told once to each client (session_notice.c).
 * Strict (--strict or defaults.strict) checks at every listing and every reload:
 *   at start          a failure: clients are answered with the refusal, sluice exits 1;
 *   a restarted child a failure: sluice stops serving (/readyz 503, every request answered with
 *                     the refusal) and the child keeps running; a later restart, or a reloaded
 *                     policy, that passes serves again;
 *   a reload          a policy that fails against the last listing is refused; the one in force
 *                     stays. */

static void log_strict_finding(void *arg, const struct lint_finding *f)
{
    char at[300];
    (void)arg;
    lint_where_format(&f->where, at, sizeof(at));
    sl_error("policy check: %s: %s", at, f->message);
}

/* Policy p against tools (NULL: the listing failed, why says how), strict; each finding logged
 * at its place. */
static struct lint_verdict strict_check(const struct policy *p, const struct json *tools,
                                        const char *why)
{
    if (tools)
        return lint_strict(p, tools, log_strict_finding, NULL);
    struct lint_verdict v = { 0 };
    snprintf(v.summary, sizeof(v.summary), "cannot list the server's tools (%s)",
             why ? why : "no listing yet");
    return v;
}

/* What a refused client is told (a JSON-RPC error's message). */
static void refusal_text(const struct lint_verdict *v, char *buf, size_t len)
{
    snprintf(buf, len, "sluice refuses to serve: strict: %s%s%s", v->summary,
             v->first[0] ? "; " : "", v->first);
}

static void log_finding(void *arg, const struct lint_finding *f)
{
    char at[300];
    struct sl_buf line = { 0 };
    (void)arg;
    lint_where_format(&f->where, at, sizeof(at));
    sl_buf_printf(&line, "%s (at %s)", f->message, at);
    session_log_finding(NULL, f->missing, line.p);
    sl_buf_free(&line);
}

/* Without strict: the findings against the last listing, logged (each once per process) and
 * told to each client once (session_notice.c). */
static void tell_findings(struct app *app)
{
    struct sl_buf t = { 0 };
    lint_notice(app->env.policy, app->tools, log_finding, NULL, &t);
    sl_buf_putc(&t, '\0');
    session_set_notice(t.p);
    sl_buf_free(&t);
}

/* A copy of the listing, for the checks of later reloads; a failed listing keeps the last. */
static void keep_tools(struct app *app, const struct json *tools)
{
    if (tools == NULL)
        return;
    struct sl_arena *a = sl_arena_new();
    struct sl_buf b = { 0 };
    struct json *copy;
    char err[64];
    json_write(&b, tools);
    if (json_parse(b.p, b.len, a, &copy, err, sizeof(err)) == 0) {
        sl_arena_free(app->tools_arena);
        app->tools_arena = a;
        app->tools = copy;
        app->tools_current = true;
    } else {
        sl_arena_free(a);
    }
    sl_buf_free(&b);
}

static void stop(struct app *app, int grace_ms);

/* Strict at start: the client waiting (stdio) and every request until the exit (HTTP) are
 * answered with the refusal; sluice exits 1. The fronts never hear that the upstream is ready. */
static void refuse_to_serve(struct app *app, const struct lint_verdict *v)
{
    char text[900];
    app->listing = false;
    evtimer_del(app->list_ev);
    sl_error("strict: %s; sluice does not serve", v->summary);
    refusal_text(v, text, sizeof(text));
    if (app->session)
        session_refuse_all(app->session, text);
    if (app->http)
        front_http_set_unready_reason(app->http, text);
    app->exit_code = 1;
    stop(app, 200);
    if (app->upstream_url) { /* an HTTP upstream is let go, with no exit to wait for */
        if (app->stdio)
            front_stdio_flush(app->stdio, 1000);
        event_base_loopbreak(app->base);
    }
}

/* Strict after a restart (HTTP only: over stdio the upstream's exit ends sluice): the fronts
 * stop serving and answer every request with the refusal. The child keeps running; a later
 * restart or a reloaded policy that passes serves again (fronts_ready). */
static void stop_serving(struct app *app, const struct lint_verdict *v)
{
    char text[900];
    app->listing = false;
    evtimer_del(app->list_ev);
    refusal_text(v, text, sizeof(text));
    free(app->refusal);
    app->refusal = sl_xstrdup(text);
    sl_error("strict: %s; sluice stops serving clients until a restarted server or a reloaded "
             "policy passes the check", v->summary);
    if (app->http) {
        front_http_set_ready(app->http, false);
        front_http_set_unready_reason(app->http, text);
    }
    if (app->session)
        session_refuse_all(app->session, text);
}

static void strict_fails(struct app *app, const struct lint_verdict *v)
{
    if (app->listing_again)
        stop_serving(app, v);
    else
        refuse_to_serve(app, v);
}

static void on_list_wait_over(evutil_socket_t fd, short what, void *arg)
{
    struct app *app = arg;
    (void)fd, (void)what;
    if (app->strict) {
        struct lint_verdict v = { 0 };
        snprintf(v.summary, sizeof(v.summary), "the server has not listed its tools in %d s, so "
                 "the policy cannot be checked against them", LIST_WAIT_SECONDS);
        strict_fails(app, &v);
        return;
    }
    sl_warn("the server has not listed its tools after %d s; serving without its Mcp-Param "
            "marks until it does", LIST_WAIT_SECONDS);
    fronts_ready(app);
}

/* Every listing of a (re)started child: the policy is checked against it. */
static void on_tools(struct upstream *up, const struct json *tools, const char *why, void *arg)
{
    struct app *app = arg;
    (void)up;
    if (app->stopping)
        return;
    keep_tools(app, tools);
    if (app->strict) {
        struct lint_verdict v = strict_check(app->env.policy, tools, why);
        if (v.pass)
            fronts_ready(app);
        else
            strict_fails(app, &v);
        return;
    }
    if (tools)
        tell_findings(app); /* first: a request that waited for the server may hear them */
    else
        sl_warn("policy check: cannot list the %sserver's tools (%s)",
                app->listing_again ? "restarted " : "", why);
    fronts_ready(app);
}

static time_t mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1; /* never 0, which means "not ready" */
}

static void on_ready(struct upstream *up, void *arg)
{
    struct app *app = arg;
    app->env.gate->server_name = upstream_name(up);
    /* Listed on every start, the first for the policy check; a restarted child starts without
     * the marks, and a server may change its tools when it comes back. */
    app->listing = true;
    struct timeval wait = { LIST_WAIT_SECONDS, 0 };
    evtimer_add(app->list_ev, &wait);
    app->listing_again = app->started_once;
    app->tools_current = false;
    upstream_list_tools(up, on_tools, app);
    app->started_once = true;
    app->ready_at = mono_s();
}

static void on_request(struct upstream *up, struct jsonrpc_msg *msg,
                       const struct up_request *on, void *arg)
{
    struct app *app = arg;
    if (app->session) {
        session_upstream_request(app->session, msg, on);
        return;
    }
    upstream_refuse(up, msg, "sluice declared no client capabilities to this server");
}

static void on_notification(struct upstream *up, struct jsonrpc_msg *msg, void *arg)
{
    struct app *app = arg;
    (void)up;
    if (app->session)
        session_upstream_notification(app->session, msg);
    else if (app->http)
        front_http_broadcast(app->http, msg);
    session_listen_notify(msg); /* 2026-07-28 clients' listen streams */
}

/* An HTTP upstream's liveness: the HTTP front stops serving while it cannot be reached. */
static void on_reachable(struct upstream *up, bool reachable, void *arg)
{
    struct app *app = arg;
    (void)up;
    if (app->http)
        front_http_set_reachable(app->http, reachable);
}

static const struct upstream_cbs up_cbs;

/* Over HTTP the child serves many clients: it is started again, after 1 s, 2 s, 4 s ... 30 s.
 * The delay starts over only after a child ran UPSTREAM_STABLE_S: one that gets ready and then
 * dies on its first call is not restarted every second for ever, while one that served a while
 * before it died comes back after 1 s (a longer window kept a server that crashes now and then
 * mostly down: the soak saw five times the 503s with 60 s). What it had in flight was answered
 * with errors when it died; nothing is resent. */
static void on_respawn(evutil_socket_t fd, short what, void *arg)
{
    struct app *app = arg;
    char err[300];
    app->respawning = false;
    if (app->stopping)
        return;
    upstream_free(app->env.up);
    app->env.up = upstream_spawn(app->base, app->upstream_argv, app->upstream_timeout_s, &up_cbs,
                                 app, err, sizeof(err));
    if (app->env.up == NULL) {
        sl_error("cannot start the upstream again: %s; sluice stops", err);
        app->exit_code = 1;
        event_base_loopbreak(app->base);
    }
}

static void on_upstream_exit(struct upstream *up, const char *why, void *arg)
{
    struct app *app = arg;
    (void)up;
    if (app->http)
        front_http_set_ready(app->http, false);
    if (app->http && !app->stopping && !app->draining && app->upstream_url == NULL) {
        if (app->ready_at != 0 && mono_s() - app->ready_at >= UPSTREAM_STABLE_S)
            app->restart_s = 0;
        app->ready_at = 0;
        app->restart_s = app->restart_s ? (app->restart_s * 2 > 30 ? 30 : app->restart_s * 2) : 1;
        sl_error("the upstream server %s; starting it again in %d s", why, app->restart_s);
        struct timeval tv = { app->restart_s, 0 };
        app->respawning = true;
        if (app->respawn_ev == NULL)
            app->respawn_ev = evtimer_new(app->base, on_respawn, app);
        evtimer_add(app->respawn_ev, &tv);
        return;
    }
    if (!app->stopping) {
        sl_error("the upstream server %s; sluice stops", why);
        app->exit_code = 1;
    } else {
        sl_debug("the upstream server %s", why);
    }
    if (app->session && !app->stopping) /* stopping: the client left, or a signal said so */
        session_refuse_held(app->session, "upstream-gone",
                            "The server stopped before the person answered. The call was not run.");
    if (app->stdio)
        front_stdio_flush(app->stdio, 1000);
    event_base_loopbreak(app->base);
}

static void on_upstream_drained(struct upstream *up, void *arg)
{
    struct app *app = arg;
    (void)up;
    session_update_interest(app->session);
}

static void stop(struct app *app, int grace_ms)
{
    if (app->stopping)
        return;
    app->stopping = true;
    if (app->respawning) { /* the child is already gone */
        event_base_loopbreak(app->base);
        return;
    }
    upstream_terminate(app->env.up, grace_ms);
}

static void on_client_gone(void *arg)
{
    stop(arg, 1000);
}

static void on_drained(void *arg)
{
    struct app *app = arg;
    sl_info("nothing in flight any more; stopping the upstream");
    stop(app, 200);
}

static void on_grace_over(evutil_socket_t fd, short what, void *arg)
{
    struct app *app = arg;
    sl_warn("--drain-grace is over with calls still in flight; they are cancelled");
    front_http_free(app->http); /* cancels and audits what is left */
    app->http = NULL;
    stop(app, 200);
}

static void hard_stop(struct app *app)
{
    sl_info("second signal: stopping now");
    front_stdio_free(app->stdio); /* first: they cancel what they forwarded upstream */
    app->stdio = NULL;
    app->session = NULL;
    front_http_free(app->http);
    app->http = NULL;
    upstream_free(app->env.up);
    app->env.up = NULL;
    event_base_loopbreak(app->base);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct app *app = arg;
    (void)what;
    if (app->stopping || app->draining) {
        hard_stop(app);
        return;
    }
    sl_info("got %s, stopping", strsignal((int)sig));
    session_listen_end_all(); /* a listen stream would hold a drain to its grace */
    if (app->session) /* stdio: the client is still there to be told */
        session_refuse_held(app->session, "shutting-down",
                            "sluice is shutting down; the call was not run.");
    if (app->http) {
        /* Drain: no new connections, calls in flight finish (a person may still be
         * answering), then the upstream is stopped. */
        app->draining = true;
        struct timeval tv = { app->drain_grace, 0 };
        app->grace_ev = evtimer_new(app->base, on_grace_over, app);
        evtimer_add(app->grace_ev, &tv);
        sl_info("draining: up to %ld s for calls in flight", (long)app->drain_grace);
        front_http_drain(app->http, on_drained, app);
        return;
    }
    stop(app, 200);
}

/* A policy that loads but fails strict against the server's last listing: logged, and false.
 * Before the first listing there is nothing to check against: the start's check will be. */
static bool reload_passes_strict(struct app *app, const struct policy *p, const char *why)
{
    if (!(app->cli_strict || policy_strict(p)) || app->tools == NULL)
        return true;
    struct lint_verdict v = strict_check(p, app->tools, NULL);
    if (!v.pass)
        sl_error("%s: the policy in %s is refused: strict: %s against the server's tools (see "
                 "above); the previous one stays", why, app->policy_path, v.summary);
    return v.pass;
}

/* The new policy replaces the old one whole, or not at all. Calls already decided keep what they
 * were decided with; observations in flight hold a reference to their policy. why starts each
 * log line: "SIGHUP" or "policy file changed". */
static void reload_policy(struct app *app, const char *why)
{
    struct policy *p;
    if (app->policy_path == NULL) {
        sl_warn("%s: sluice runs the embedded example policy; nothing to reload", why);
        return;
    }
    if (load_policy(app->policy_path, &p, false) != 0) {
        sl_error("%s: the policy in %s is refused (see above); the previous one stays", why,
                 app->policy_path);
        metrics_reload(false);
        return;
    }
    if (!reload_passes_strict(app, p, why)) {
        policy_unref(p);
        metrics_reload(false);
        return;
    }
    struct policy *old = app->env.policy;
    app->env.policy = p;
    policy_unref(old);
    app->strict = app->cli_strict || policy_strict(p);
    metrics_reload(true);
    sl_info("%s: policy reloaded from %s (%zu tool%s named)", why, app->policy_path,
            policy_tool_count(p), policy_tool_count(p) == 1 ? "" : "s");
    held_warn_ttl(p);
    if (!app->strict && app->tools)
        tell_findings(app);
    /* Strict refused a restarted server's tools, and this policy passes against them. (When
     * they could not be listed, a policy can pass only against an older child's.) */
    if (app->refusal && app->tools_current)
        fronts_ready(app);
}

static void on_reload(evutil_socket_t sig, short what, void *arg)
{
    reload_policy(arg, "SIGHUP");
}

/* ===== --watch-policy =====
 * Polling, not inotify: a ConfigMap update swaps the ..data symlink in the file's directory, an
 * editor may write in place or rename over the file, and stat() through the path sees all three
 * the same way, once a second, with nothing to re-arm.
 *
 * A change is acted on only once the file has stayed the same for a whole look: a file written
 * in place in several pieces may, read halfway, be a valid policy that is looser than both the
 * old and the new one (its `defaults.action: allow` written, the tools it gates not yet). A
 * writer that pauses longer than a second can still be read halfway; README says to rename
 * over the file. */

static struct file_id file_id_of(const char *path)
{
    struct stat st;
    struct file_id id = { 0 };
    if (stat(path, &st) != 0) {
        id.err = errno;
        return id;
    }
    id.exists = true;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    id.size = st.st_size;
    id.mtime = st.st_mtim;
    return id;
}

static bool file_id_same(const struct file_id *a, const struct file_id *b)
{
    return a->exists == b->exists && a->dev == b->dev && a->ino == b->ino &&
           a->size == b->size && a->mtime.tv_sec == b->mtime.tv_sec &&
           a->mtime.tv_nsec == b->mtime.tv_nsec;
}

static void on_watch(evutil_socket_t fd, short what, void *arg)
{
    struct app *app = arg;
    struct file_id now = file_id_of(app->policy_path);
    bool settled = file_id_same(&now, &app->seen);
    app->seen = now;
    if (file_id_same(&now, &app->watched) || !settled)
        return;
    app->watched = now;
    if (!now.exists) { /* a swap in progress, or removed: the policy in force stays */
        sl_warn("policy file changed: %s is gone (%s); the previous policy stays",
                app->policy_path, strerror(now.err));
        return;
    }
    reload_policy(app, "policy file changed");
}

static void watch_policy(struct app *app)
{
    struct timeval second = { 1, 0 };
    app->watched = file_id_of(app->policy_path);
    app->seen = app->watched;
    app->watch_ev = event_new(app->base, -1, EV_PERSIST, on_watch, app);
    event_add(app->watch_ev, &second);
    sl_info("watching %s for changes", app->policy_path);
}

static const struct upstream_cbs up_cbs = {
    .on_era = on_era,
    .on_ready = on_ready,
    .on_request = on_request,
    .on_notification = on_notification,
    .on_exit = on_upstream_exit,
    .on_drained = on_upstream_drained,
    .on_reachable = on_reachable,
};

/* ===== commands ===== */

/* ===== check --against ===== */

struct against {
    struct event_base *base;
    struct policy *policy;
    const char *file;
    struct lint_counts counts;
    int wait_s;
    bool listed;
    bool http;
    bool strict;               /* loose defaults are errors too */
};

/* FILE:LINE:COL first, as the policy's own errors are, so an editor can jump to it. */
static void print_finding(void *arg, const struct lint_finding *f)
{
    const struct against *ag = arg;
    char at[300];
    lint_where_format(&f->where, at, sizeof(at));
    printf("%s: %s: %s\n", at, f->missing || ag->strict ? "error" : "warning", f->message);
}

static void against_tools(struct upstream *up, const struct json *tools, const char *why,
                          void *arg)
{
    struct against *ag = arg;
    if (tools == NULL) {
        printf("error: cannot list the server's tools: %s\n", why);
    } else {
        ag->listed = true;
        printf("%s: the server lists %zu tool%s\n", ag->file, tools->u.arr.n,
               tools->u.arr.n == 1 ? "" : "s");
        ag->counts = lint_run(ag->policy, tools, true, ag->strict, print_finding, ag);
    }
    upstream_terminate(up, 200);
    if (ag->http) /* an HTTP upstream is let go, with no exit to wait for */
        event_base_loopbreak(ag->base);
}

static void against_era(struct upstream *up, void *arg)
{
    (void)arg;
    upstream_initialize(up, NULL, NULL); /* no-op for a modern server */
}

static void against_ready(struct upstream *up, void *arg)
{
    upstream_list_tools(up, against_tools, arg);
}

static void against_exit(struct upstream *up, const char *why, void *arg)
{
    struct against *ag = arg;
    (void)up;
    if (!ag->listed)
        printf("error: the server %s before listing its tools\n", why);
    event_base_loopbreak(ag->base);
}

static void against_notification(struct upstream *up, struct jsonrpc_msg *m, void *arg) {}

static void against_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct against *ag = arg;
    printf("error: the server did not list its tools within %d s\n", ag->wait_s);
    event_base_loopbreak(ag->base);
}

/* An HTTP upstream that is not reachable is retried every second (upstream.h); check gives it a
 * shorter wait than a command, which may take a while to install and start. */
#define AGAINST_WAIT_CMD_S  60
#define AGAINST_WAIT_HTTP_S 10

static int check_against(const struct cli_opts *o, struct policy *p)
{
    struct against ag = { .policy = p, .file = o->policy, .http = o->upstream_url != NULL,
                          .strict = o->strict || policy_strict(p) };
    char err[300];
    SSL_CTX *tls = NULL;
    ag.wait_s = ag.http ? AGAINST_WAIT_HTTP_S : AGAINST_WAIT_CMD_S;
    ag.base = event_base_new();
    SL_REQUIRE(ag.base != NULL);
    signal(SIGPIPE, SIG_IGN);
    static const struct upstream_cbs cbs = {
        .on_era = against_era, .on_ready = against_ready, .on_exit = against_exit,
        .on_notification = against_notification,
    };
    struct upstream *up = NULL;
    bool https = ag.http && strncmp(o->upstream_url, "https:", 6) == 0;
    if (https && (tls = tls_client_ctx(o->upstream_ca, err, sizeof(err))) == NULL)
        up = NULL;
    else if (ag.http)
        up = upstream_connect(ag.base, o->upstream_url, tls, (int)o->upstream_timeout, &cbs, &ag,
                              err, sizeof(err));
    else
        up = upstream_spawn(ag.base, o->upstream_argv, (int)o->upstream_timeout, &cbs, &ag, err,
                            sizeof(err));
    if (up == NULL) {
        printf("error: cannot %s the server: %s\n", ag.http ? "reach" : "start", err);
        SSL_CTX_free(tls);
        event_base_free(ag.base);
        return 1;
    }
    struct event *timer = evtimer_new(ag.base, against_timeout, &ag);
    struct timeval tv = { ag.wait_s, 0 };
    evtimer_add(timer, &tv);
    event_base_dispatch(ag.base);
    event_free(timer);
    upstream_free(up);
    upstream_base_free(ag.base);
    SSL_CTX_free(tls);
    size_t errors = ag.counts.missing + ag.counts.unknown_args + !ag.listed +
                    (ag.strict ? ag.counts.risky : 0);
    size_t warnings = ag.strict ? 0 : ag.counts.risky;
    printf("%s: %zu error%s, %zu warning%s%s\n", o->policy, errors, errors == 1 ? "" : "s",
           warnings, warnings == 1 ? "" : "s", ag.strict ? " (strict)" : "");
    return errors == 0 ? 0 : 1;
}

static int cmd_check(const struct cli_opts *o)
{
    struct policy *p;
    if (load_policy(o->policy, &p, true) != 0)
        return 1;
    printf("%s: ok (%zu tool%s named)\n", o->policy, policy_tool_count(p),
           policy_tool_count(p) == 1 ? "" : "s");
    int rc = o->against ? check_against(o, p) : 0;
    policy_unref(p);
    return rc;
}

/* ===== probe ===== */

/* GET an http:// URL with a 5 s limit; 0 on a 2xx status. For HEALTHCHECK in an image that has
 * no shell and no curl. */
static int cmd_probe(const char *url)
{
    char host[256], path[512] = "/";
    int port = 80;
    if (strncmp(url, "http://", 7) != 0 ||
        sscanf(url + 7, "%255[^:/]:%d%511s", host, &port, path) < 1) {
        fprintf(stderr, "sluice probe: expected http://HOST[:PORT]/PATH, got %s\n", url);
        return 2;
    }
    if (strchr(url + 7, ':') == NULL)
        sscanf(url + 7, "%255[^/]%511s", host, path);
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", port);
    if (getaddrinfo(host, portstr, &hints, &ai) != 0) {
        fprintf(stderr, "sluice probe: cannot resolve %s\n", host);
        return 1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = { 5, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int rc = 1;
    char req[1024], resp[64] = { 0 };
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
                     path, host);
    /* Say why there is no answer: "connection refused" (nothing listens) reads differently
     * from a timeout (something listens and hangs). */
    const char *why = NULL;
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0)
        why = errno == ECONNREFUSED ? "connection refused" : strerror(errno);
    else if (write(fd, req, (size_t)n) != n)
        why = strerror(errno);
    else if ((errno = 0, read(fd, resp, sizeof(resp) - 1)) <= 12)
        why = errno == EAGAIN || errno == EWOULDBLOCK ? "no answer within 5 s" : "no answer";
    if (why == NULL) {
        int status = 0;
        if (sscanf(resp, "HTTP/1.%*d %d", &status) == 1 && status >= 200 && status < 300)
            rc = 0;
        printf("%s: %d\n", url, status);
    } else {
        printf("%s: %s\n", url, why);
    }
    if (fd >= 0)
        close(fd);
    freeaddrinfo(ai);
    return rc;
}

/* --principal's SOURCE (checked by cli.c); NULL: cert with a client CA, else anonymous. */
static enum principal_source principal_source(const char *p, bool client_ca, const char **header)
{
    *header = NULL;
    if (p == NULL)
        return client_ca ? PRINCIPAL_CERT : PRINCIPAL_ANONYMOUS;
    if (strcmp(p, "anonymous") == 0)
        return PRINCIPAL_ANONYMOUS;
    if (strcmp(p, "cert") == 0)
        return PRINCIPAL_CERT;
    if (strcmp(p, "bearer") == 0)
        return PRINCIPAL_BEARER;
    *header = p + 7;
    return PRINCIPAL_HEADER;
}

/* One HTTP listener: the front (--listen) or the approval page's own (--approval-listen). */
struct listener_opts {
    const char *listen, *tls_cert, *tls_key, *tls_client_ca, *principal;
    bool approval_only, approval_elsewhere;
};

static struct front_http *start_listener(struct app *app, const struct cli_opts *o,
                                         const struct listener_opts *l, SSL_CTX **tls)
{
    char err[300];
    if (l->tls_cert && (*tls = tls_server_ctx(l->tls_cert, l->tls_key, l->tls_client_ca, err,
                                              sizeof(err))) == NULL) {
        sl_error("%s", err);
        return NULL;
    }
    struct front_http_opts ho = {
        .listen = l->listen,
        .tls = *tls,
        .origins = o->origins,
        .norigins = o->norigins,
        .max_connections = (size_t)o->max_connections,
        .max_body = (size_t)o->max_body,
        .max_head = 16384,
        .max_sessions = (size_t)o->max_sessions,
        .max_sessions_per_principal = (size_t)o->max_sessions_per_principal,
        .request_timeout_s = (int)o->request_timeout,
        .idle_timeout_s = (int)o->idle_timeout,
        .session_idle_s = (int)o->session_idle,
        .upstream_wait_s = (int)o->upstream_wait,
        .approval_only = l->approval_only,
        .approval_elsewhere = l->approval_elsewhere,
    };
    ho.principal = principal_source(l->principal, l->tls_client_ca != NULL,
                                    &ho.principal_header);
    struct front_http *fh = front_http_new(app->base, &app->env, &ho, err, sizeof(err));
    if (fh == NULL) {
        sl_error("%s", err);
        return NULL;
    }
    static const char *const names[] = { "anonymous", "cert", "bearer", "header" };
    sl_info("listening on %s://%s%s (port %d), principal from %s%s%s", *tls ? "https" : "http",
            l->listen, l->approval_only ? APPROVAL_PATH : "/mcp", front_http_port(fh),
            names[ho.principal], ho.principal_header ? " " : "",
            ho.principal_header ? ho.principal_header : "");
    return fh;
}

static int start_http(struct app *app, const struct cli_opts *o, SSL_CTX **tls)
{
    struct listener_opts l = { o->listen, o->tls_cert, o->tls_key, o->tls_client_ca,
                               o->principal, false, o->approval_listen != NULL };
    app->http = start_listener(app, o, &l, tls);
    if (app->http == NULL)
        return -1;
    /* Each legacy session holds a child of its own, and one with a GET stream open is never
     * idle: the per-principal session cap is then each principal's share of the children. */
    const char *header;
    if (o->child_per_session && o->max_sessions_per_principal >= o->max_children &&
        principal_source(o->principal, o->tls_client_ca != NULL, &header) != PRINCIPAL_ANONYMOUS)
        sl_warn("--max-sessions-per-principal (%ld) is not below --max-children (%ld): one "
                "principal's busy sessions can hold every child, and every other principal's "
                "initialize then gets 503; set it to the share each principal may hold",
                o->max_sessions_per_principal, o->max_children);
    return 0;
}

/* The approval page: its own listener (--approval-listen) when asked for, and the address
 * people open it at: --approval-base-url, else the listener's own (which only reads right for
 * a listener on an address they can reach: set --approval-base-url behind a proxy). */
static int start_approval(struct app *app, const struct cli_opts *o, SSL_CTX **tls,
                          bool front_tls)
{
    if (o->approval_listen) {
        struct listener_opts l = { o->approval_listen, o->approval_tls_cert,
                                   o->approval_tls_key, o->approval_tls_client_ca,
                                   o->approval_principal, true, false };
        if ((app->approval_http = start_listener(app, o, &l, tls)) == NULL)
            return -1;
        /* Ready at once: it waits for no upstream (and serves nothing that would). */
        front_http_set_ready(app->approval_http, true);
    }
    struct sl_buf b = { 0 };
    if (o->approval_base_url) {
        sl_buf_puts(&b, o->approval_base_url);
    } else if (app->approval_http || app->http) {
        const char *listen = app->approval_http ? o->approval_listen : o->listen;
        const char *colon = strrchr(listen, ':');
        sl_buf_printf(&b, "%s://%.*s:%d", (app->approval_http ? *tls != NULL : front_tls)
                                              ? "https" : "http",
                      (int)(colon - listen), listen,
                      front_http_port(app->approval_http ? app->approval_http : app->http));
    } else {
        /* stdio without --approval-listen: no page; a call that needs it is refused */
        if (policy_uses_page(app->env.policy))
            sl_warn("policy: some tools ask on the approval page, and sluice serves none "
                    "(--approval-listen ADDR:PORT): their calls will be refused");
        return 0;
    }
    app->approval_base = sl_xstrndup(b.p, b.len);
    sl_buf_free(&b);
    app->env.approval_base_url = app->approval_base;
    if (policy_uses_page(app->env.policy))
        sl_info("approval page at %s%s<id>", app->approval_base, APPROVAL_PATH);
    else
        sl_debug("approval page at %s%s<id> (no tool asks there yet)", app->approval_base,
                 APPROVAL_PATH);
    return 0;
}

/* ===== the journal ===== */

#define AUDIT_ANCHORS_KEPT 100000 /* the store's list of anchors: about 70 days at one a minute */

static void on_audit_anchor(void *arg, const char *entry)
{
    struct app *app = arg;
    if (app->env.store) /* not yet open at the journal's first line, gone at its last */
        store_anchor_push(app->env.store, (struct sl_str){ entry, strlen(entry) },
                          AUDIT_ANCHORS_KEPT);
}

static void on_audit_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    audit_tick(arg);
}

static int open_audit(struct app *app, const struct cli_opts *o)
{
    char err[300];
    struct audit_opts ao = {
        .sync = o->audit_sync && strcmp(o->audit_sync, "always") == 0 ? AUDIT_SYNC_ALWAYS
                                                                      : AUDIT_SYNC_INTERVAL,
        .anchor_every = (unsigned)o->audit_anchor_every,
        .anchor_ms = (unsigned)o->audit_anchor_seconds * 1000u,
        .on_anchor = on_audit_anchor,
        .arg = app,
    };
    /* A journal that reaches the file size limit (RLIMIT_FSIZE) fails its write with EFBIG,
     * which refuses the call (session_call.c), instead of killing sluice. */
    signal(SIGXFSZ, SIG_IGN);
    if ((app->env.audit = audit_open(o->audit, &ao, err, sizeof(err))) == NULL) {
        sl_error("%s", err);
        return -1;
    }
    return 0;
}

#define MEMORY_STORE_BYTES ((size_t)64 << 20)

/* The memory store's budget for each of its tables (kept outcomes, approval page questions,
 * page decisions): 64 MiB, or SLUICE_MEMORY_STORE_BYTES, which tests set small to fill it
 * with a few calls (and a small host may too). */
static size_t memory_store_bytes(void)
{
    const char *env = getenv("SLUICE_MEMORY_STORE_BYTES");
    char *end = NULL;
    errno = 0; /* strtoull takes "-1" (as the largest number) and says ERANGE only in errno */
    unsigned long long n = env && *env >= '0' && *env <= '9' ? strtoull(env, &end, 10) : 0;
    if (n == 0 || *end != '\0' || errno != 0 || n > SIZE_MAX) {
        if (env)
            sl_warn("SLUICE_MEMORY_STORE_BYTES is not a positive number of bytes: using 64 MiB");
        return MEMORY_STORE_BYTES;
    }
    return (size_t)n;
}

/* The store of spent nonces and kept outcomes (--store). */
static int open_store(struct app *app, const struct cli_opts *o)
{
    char err[300];
    struct store_opts so = {
        .url = o->store ? o->store : "memory",
        .prefix = o->store_prefix ? o->store_prefix : "sluice:",
        .timeout_ms = (unsigned)o->store_timeout_ms,
        .replicas = (unsigned)o->store_replicas,
        .password = getenv("SLUICE_STORE_PASSWORD"),
        .retention_s = (unsigned)o->result_retention,
        .max_result = (size_t)o->max_stored_result,
        .max_total = memory_store_bytes(),
        .max_entries = REPLAY_MAX_ENTRIES,
    };
    app->env.store = store_open(app->base, &so, err, sizeof(err)); /* copies the password */
    /* The password is never passed on to a child (the upstream inherits the environment). */
    unsetenv("SLUICE_STORE_PASSWORD");
    if (app->env.store == NULL) {
        sl_error("--store: %s", err);
        return -1;
    }
    app->env.outcome_wait_s = (unsigned)o->upstream_timeout;
    app->env.relayed_wait_s = (unsigned)o->upstream_timeout;
    app->env.parks_per_principal = (size_t)o->max_sessions_per_principal;
    sl_info("store: %s%s", store_kind(app->env.store),
            store_shared(app->env.store) ? " (shared: confirmations are valid at every replica "
                                           "using it)" : " (this process only)");
    return 0;
}

/* The webhook's URL, or NULL: --notify-url, else $SLUICE_NOTIFY_URL, which keeps the URL (and
 * the secret in its path) out of ps and /proc/PID/cmdline. The option wins, as --state-key-file
 * does over $SLUICE_STATE_KEY; a variable set in vain is said at start. *from names the source,
 * for errors (which never show the URL's path: notify.h). */
static const char *notify_url(const struct cli_opts *o, const char **from)
{
    const char *env = getenv("SLUICE_NOTIFY_URL");
    if (env && *env == '\0')
        env = NULL;
    if (o->notify_url && env)
        sl_warn("--notify-url is given: SLUICE_NOTIFY_URL is ignored");
    *from = o->notify_url ? "--notify-url" : "SLUICE_NOTIFY_URL";
    return o->notify_url ? o->notify_url : env;
}

static int run(const struct cli_opts *o)
{
    struct app app = { 0 };
    struct gate_ctx gate = { 0 };
    struct sl_buf upid = { 0 };
    struct event *sigint = NULL, *sigterm = NULL, *sighup = NULL, *audit_ev = NULL;
    SSL_CTX *tls = NULL, *up_tls = NULL, *approval_tls = NULL;
    int rc = 1;
    char err[300];
    const char *notify_from, *notify = notify_url(o, &notify_from);

    if (notify && notify_url_check(notify, err, sizeof(err)) != 0) {
        sl_error("%s: %s", notify_from, err);
        return 1;
    }
    if (load_policy(o->policy, &app.env.policy, false) != 0)
        return 1;
    held_warn_ttl(app.env.policy);
    sl_info("policy: %s", o->policy ? o->policy : "embedded example policy");
    struct seal_keyring *keys = load_keys(o);
    if (keys == NULL)
        goto out;
    if (o->audit && open_audit(&app, o) != 0)
        goto out;
    upstream_id(&upid, o->upstream_argv, o->upstream_url);
    gate.keys = keys;
    gate.upstream_id = sl_buf_str(&upid);
    app.env.gate = &gate;
    app.base = event_base_new();
    SL_REQUIRE(app.base != NULL);
    if (open_store(&app, o) != 0)
        goto out;
    if (notify && notify_start(app.base, notify, err, sizeof(err)) != 0) {
        sl_error("%s: %s", notify_from, err);
        goto out;
    }
    if (notify)
        app.env.on_page_pending = notify_on_page_pending;
    if (app.env.audit) { /* the pending fsync, and the anchor by time */
        struct timeval tick = { 0, AUDIT_SYNC_INTERVAL_MS * 1000 };
        audit_ev = event_new(app.base, -1, EV_PERSIST, on_audit_tick, app.env.audit);
        event_add(audit_ev, &tick);
    }
    gate.origin = store_epoch(app.env.store);
    gate.shared_store = store_shared(app.env.store);
    signal(SIGPIPE, SIG_IGN);
    sigint = evsignal_new(app.base, SIGINT, on_signal, &app);
    sigterm = evsignal_new(app.base, SIGTERM, on_signal, &app);
    sighup = evsignal_new(app.base, SIGHUP, on_reload, &app);
    event_add(sigint, NULL);
    event_add(sigterm, NULL);
    event_add(sighup, NULL);
    app.list_ev = evtimer_new(app.base, on_list_wait_over, &app);
    app.policy_path = o->policy;
    app.drain_grace = (time_t)o->drain_grace;
    app.upstream_argv = o->upstream_argv;
    app.upstream_url = o->upstream_url;
    app.cli_strict = o->strict;
    app.strict = o->strict || policy_strict(app.env.policy);
    app.child_per_session = o->child_per_session;
    app.opener.max = (size_t)o->max_children;
    app.upstream_timeout_s = (int)o->upstream_timeout;
    if (o->watch_policy)
        watch_policy(&app);
    if (app.strict)
        sl_info("strict: sluice serves only if the policy matches the server's tools");
    if (o->listen) {
        if (start_http(&app, o, &tls) != 0)
            goto out;
    } else {
        app.stdio = front_stdio_new(app.base, &app.env, STDIN_FILENO, STDOUT_FILENO,
                                    on_client_gone, &app);
        app.session = front_stdio_session(app.stdio);
    }
    if (start_approval(&app, o, &approval_tls, tls != NULL) != 0)
        goto out;
    if (o->upstream_url && strncmp(o->upstream_url, "https:", 6) == 0 &&
        (up_tls = tls_client_ctx(o->upstream_ca, err, sizeof(err))) == NULL) {
        sl_error("%s", err);
        goto out;
    }
    app.up_tls = up_tls;
    app.env.up = o->upstream_url
                     ? upstream_connect(app.base, o->upstream_url, up_tls,
                                        (int)o->upstream_timeout, &up_cbs, &app, err, sizeof(err))
                     : upstream_spawn(app.base, o->upstream_argv, (int)o->upstream_timeout,
                                      &up_cbs, &app, err, sizeof(err));
    if (app.env.up == NULL) {
        sl_error("cannot start the upstream: %s", err);
        goto out;
    }
    event_base_dispatch(app.base);
    rc = app.exit_code;
out:
    front_stdio_free(app.stdio);
    front_http_free(app.http);
    front_http_free(app.approval_http);
    free(app.approval_base);
    session_stop_all();
    session_own_free_all();
    upstream_free(app.env.up);
    store_free(app.env.store);
    app.env.store = NULL;
    notify_stop();
    if (audit_ev)
        event_free(audit_ev);
    SSL_CTX_free(tls);
    SSL_CTX_free(up_tls);
    SSL_CTX_free(approval_tls);
    if (app.grace_ev)
        event_free(app.grace_ev);
    if (app.respawn_ev)
        event_free(app.respawn_ev);
    if (app.list_ev)
        event_free(app.list_ev);
    if (app.watch_ev)
        event_free(app.watch_ev);
    /* Freeing a signal event restores the default action; a late second SIGTERM must not kill
     * the process in the middle of its cleanup. */
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGHUP);
    sigprocmask(SIG_BLOCK, &stops, NULL);
    if (sighup)
        event_free(sighup);
    if (sigint)
        event_free(sigint);
    if (sigterm)
        event_free(sigterm);
    upstream_base_free(app.base);
    seal_keyring_free(keys);
    audit_close(app.env.audit);
    policy_unref(app.env.policy);
    sl_arena_free(app.tools_arena);
    free(app.refusal);
    session_notice_free();
    sl_buf_free(&upid);
    return rc;
}

/* libevent's own complaints go through our log, so JSON logs stay JSON. */
static void on_libevent_log(int severity, const char *msg)
{
    enum sl_log_level level = severity >= EVENT_LOG_ERR    ? SL_LOG_ERROR
                              : severity >= EVENT_LOG_WARN ? SL_LOG_WARN
                              : severity >= EVENT_LOG_MSG  ? SL_LOG_INFO
                                                           : SL_LOG_DEBUG;
    sl_log(level, "libevent: %s", msg);
}

/* Large messages reuse heap memory instead of fresh pages. glibc maps a block of 128 KiB or
 * more on its own and unmaps it on free (its dynamic threshold rises only so far), and gives
 * the heap's free top back past 128 KiB: every body or reply of 1 MiB then cost about 650
 * page faults, and a relayed result of 1 MiB spent 3.0 s of system time in 6 s (tests/bench
 * sizes: 333 calls/s, nginx about 510). Kept in the heap up to twice the largest message:
 * 474 calls/s and 2,700 faults in all. An operator's own glibc tuning wins. */
static void tune_malloc(void)
{
#ifdef __GLIBC__
    if (getenv("GLIBC_TUNABLES") || getenv("MALLOC_MMAP_THRESHOLD_") ||
        getenv("MALLOC_TRIM_THRESHOLD_"))
        return;
    mallopt(M_MMAP_THRESHOLD, (int)(2 * SL_MAX_MESSAGE));
    mallopt(M_TRIM_THRESHOLD, (int)(2 * SL_MAX_MESSAGE));
#endif
}

/* No other process of sluice's user may read its memory. A stdio upstream runs as that user, and
 * so does whatever its tools run: through /proc/PID/environ (SLUICE_STATE_KEY, the store's
 * password, the upstream's Authorization) or /proc/PID/mem (the key itself), a tool that reads
 * files would hand the model the key that mints approvals. Not dumpable, sluice's /proc files
 * belong to root and ptrace needs CAP_SYS_PTRACE, as ssh-agent does for its keys. The cost: no
 * core dump. The child gets its own setting back when it runs exec. */
static void deny_inspection(void)
{
#ifdef __linux__
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        fprintf(stderr, "sluice: cannot make the process non-dumpable: %s\n", strerror(errno));
#endif
}

int main(int argc, char **argv)
{
    struct cli_opts o;
    char err[256];
    deny_inspection();
    tune_malloc();
    if (cli_parse(argc, argv, &o, err, sizeof(err)) != 0) {
        /* One line: what was wrong and where the help is (a launcher shows stderr in a small
         * pane; 56 lines of help pushed the actual mistake out of it). */
        fprintf(stderr, "sluice: %s; see sluice --help\n", err);
        return 2;
    }
    if (o.log_level) {
        static const char *const names[] = { "debug", "info", "warning", "error" };
        size_t i = 0;
        while (i < SL_ARRAY_LEN(names) && strcmp(names[i], o.log_level) != 0)
            i++;
        if (i == SL_ARRAY_LEN(names)) {
            fprintf(stderr, "sluice: unknown log level \"%s\"; see sluice --help\n", o.log_level);
            return 2;
        }
        sl_log_set_level((enum sl_log_level)i);
    }
    if (o.log_format && strcmp(o.log_format, "json") == 0)
        sl_log_set_json(true);
    event_set_log_callback(on_libevent_log);
    switch (o.command) {
    case CLI_HELP:
        cli_usage(stdout);
        return 0;
    case CLI_VERSION:
        cli_version(stdout);
        return 0;
    case CLI_CHECK:
        return cmd_check(&o);
    case CLI_PROBE:
        return cmd_probe(o.probe_url);
    case CLI_AUDIT_VERIFY:
        return audit_verify_cmd(o.verify_files, o.nverify_files, o.anchors,
                                o.store_prefix ? o.store_prefix : "sluice:",
                                (unsigned)o.store_timeout_ms);
    case CLI_PIN:
        return cmd_pin(&o);
    case CLI_INIT:
        return cmd_init(&o);
    case CLI_RUN:
        break;
    }
    return run(&o);
}
