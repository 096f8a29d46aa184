/* livetools.c: start a server, list its tools, stop it (the path of check --against). */
#include "livetools.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <event2/event.h>

#include "tls.h"
#include "upstream.h"

/* As for check --against: a command may take a while to install and start. */
#define LIVE_WAIT_CMD_S  60
#define LIVE_WAIT_HTTP_S 10

struct live {
    struct event_base *base;
    livetools_cb *cb;
    void *arg;
    int wait_s;
    bool http;
    bool listed;
    bool failed;    /* a reason was printed */
};

static void live_fail(struct live *l, const char *what, const char *why)
{
    if (!l->failed && !l->listed)
        fprintf(stderr, "sluice: error: %s%s\n", what, why ? why : "");
    l->failed = true;
}

static void on_tools(struct upstream *up, const struct json *tools, const char *why, void *arg)
{
    struct live *l = arg;
    if (tools == NULL) {
        live_fail(l, "cannot list the server's tools: ", why);
    } else {
        l->listed = true;
        l->cb(l->arg, tools, upstream_name(up));
    }
    upstream_terminate(up, 200);
    if (l->http) /* an HTTP upstream is let go, with no exit to wait for */
        event_base_loopbreak(l->base);
}

static void on_era(struct upstream *up, void *arg)
{
    (void)arg;
    upstream_initialize(up, NULL, NULL); /* no-op for a modern server */
}

static void on_ready(struct upstream *up, void *arg)
{
    upstream_list_tools(up, on_tools, arg);
}

static void on_exit_cb(struct upstream *up, const char *why, void *arg)
{
    struct live *l = arg;
    (void)up;
    live_fail(l, "the server stopped before listing its tools: ", why);
    event_base_loopbreak(l->base);
}

static void on_notification(struct upstream *up, struct jsonrpc_msg *m, void *arg) {}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct live *l = arg;
    char why[64];
    snprintf(why, sizeof(why), "%d s", l->wait_s);
    live_fail(l, "the server did not list its tools within ", why);
    event_base_loopbreak(l->base);
}

static struct upstream *live_start(const struct cli_opts *o, struct live *l, SSL_CTX **tls)
{
    static const struct upstream_cbs cbs = {
        .on_era = on_era, .on_ready = on_ready, .on_exit = on_exit_cb,
        .on_notification = on_notification,
    };
    char err[300];
    struct upstream *up = NULL;
    *tls = NULL;
    bool https = l->http && strncmp(o->upstream_url, "https:", 6) == 0;
    if (https && (*tls = tls_client_ctx(o->upstream_ca, err, sizeof(err))) == NULL)
        up = NULL;
    else if (l->http)
        up = upstream_connect(l->base, o->upstream_url, *tls, (int)o->upstream_timeout, &cbs, l,
                              err, sizeof(err));
    else
        up = upstream_spawn(l->base, o->upstream_argv, (int)o->upstream_timeout, &cbs, l, err,
                            sizeof(err));
    if (up == NULL) {
        fprintf(stderr, "sluice: error: cannot %s the server: %s\n", l->http ? "reach" : "start",
                err);
        l->failed = true;
    }
    return up;
}

int livetools_fetch(const struct cli_opts *o, livetools_cb *cb, void *arg)
{
    struct live l = { .cb = cb, .arg = arg, .http = o->upstream_url != NULL };
    SSL_CTX *tls;
    l.wait_s = l.http ? LIVE_WAIT_HTTP_S : LIVE_WAIT_CMD_S;
    l.base = event_base_new();
    SL_REQUIRE(l.base != NULL);
    signal(SIGPIPE, SIG_IGN);
    struct upstream *up = live_start(o, &l, &tls);
    if (up != NULL) {
        struct event *timer = evtimer_new(l.base, on_timeout, &l);
        struct timeval tv = { l.wait_s, 0 };
        evtimer_add(timer, &tv);
        event_base_dispatch(l.base);
        event_free(timer);
        upstream_free(up);
    }
    upstream_base_free(l.base);
    SSL_CTX_free(tls);
    return l.listed ? 0 : 1;
}
