/* test_own.c: a session's own upstream (session_own.c) that is gone when sluice stops.
 *
 * A legacy client's initialize opens an upstream of its own: here a child that exits at once.
 * Its exit is seen; then the session ends, which schedules the record's freeing from the loop,
 * and sluice stops before the loop runs again: session_own_free_all frees the record, and
 * upstream_base_free's last pass must then find nothing of it to run. With the freeing once
 * scheduled by event_base_once (which cannot be cancelled), that pass ran it on freed memory:
 * the ASan build of this test fails on it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <string.h>

#include <event2/event.h>

#include "jsonrpc.h"
#include "session.h"
#include "upstream.h"

struct harness {
    struct event_base *base;
    struct session_env env;
    struct gate_ctx gate;
    struct session_opener opener;
    const struct upstream_cbs *own_cbs; /* session_own.c's, wrapped to see the exit */
    void *own_arg;
    int opened, exited;
};

static struct harness *the; /* the wrapped callbacks find the harness here */

static void w_era(struct upstream *up, void *arg)
{
    the->own_cbs->on_era(up, arg);
}

static void w_ready(struct upstream *up, void *arg)
{
    the->own_cbs->on_ready(up, arg);
}

static void w_request(struct upstream *up, struct jsonrpc_msg *m, const struct up_request *on,
                      void *arg)
{
    the->own_cbs->on_request(up, m, on, arg);
}

static void w_notification(struct upstream *up, struct jsonrpc_msg *m, void *arg)
{
    the->own_cbs->on_notification(up, m, arg);
}

static void w_drained(struct upstream *up, void *arg)
{
    the->own_cbs->on_drained(up, arg);
}

static void w_exit(struct upstream *up, const char *why, void *arg)
{
    the->own_cbs->on_exit(up, why, arg);
    the->exited++;
    event_base_loopbreak(the->base);
}

static const struct upstream_cbs wrapped = {
    .on_era = w_era, .on_ready = w_ready, .on_request = w_request,
    .on_notification = w_notification, .on_exit = w_exit, .on_drained = w_drained,
};

/* The opener: a child that exits before it says anything. */
static struct upstream *open_exiting(void *arg, const struct upstream_cbs *cbs, void *cbarg,
                                     char *err, size_t errlen)
{
    struct harness *h = arg;
    static char sh[] = "/bin/sh", c[] = "-c", script[] = "exit 0";
    static char *const argv[] = { sh, c, script, NULL };
    h->own_cbs = cbs;
    h->own_arg = cbarg;
    h->opened++;
    return upstream_spawn(h->base, argv, 0, &wrapped, cbarg, err, errlen);
}

/* The client's side: what it is sent is not looked at. */
static void io_send(void *arg, struct sl_str rel, bool final, int code, struct sl_str line)
{
    (void)arg, (void)rel, (void)final, (void)code, (void)line;
}

static size_t io_out_len(void *arg)
{
    (void)arg;
    return 0;
}

static const struct session_io io = { .send = io_send, .out_len = io_out_len };

static void on_late(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    event_base_loopbreak(arg);
}

static void test_gone_upstream_freed_at_stop(void **state)
{
    static const char policy_text[] = "version: 1\n";
    static const char init[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        "\"2025-11-25\",\"capabilities\":{\"elicitation\":{}},\"clientInfo\":{\"name\":\"t\","
        "\"version\":\"1\"}}}";
    struct harness h = { 0 };
    struct policy_error perr;
    (void)state;
    the = &h;
    signal(SIGPIPE, SIG_IGN);
    assert_int_equal(policy_load_buffer("t", policy_text, sizeof(policy_text) - 1,
                                        &h.env.policy, &perr), 0);
    h.gate.keys = seal_keyring_random();
    static const uint8_t origin[SEAL_ORIGIN_LEN];
    h.gate.origin = origin;
    h.gate.upstream_id = SL_STR("test");
    h.env.gate = &h.gate;
    h.base = event_base_new();
    h.opener = (struct session_opener){ .open = open_exiting, .arg = &h, .base = h.base,
                                        .what = "child" };
    h.env.opener = &h.opener;

    struct session *s = session_new(h.base, &h.env, &io, NULL, SL_STR("p"));
    session_start(s);
    struct jsonrpc_msg *m;
    struct jsonrpc_parse_error jerr;
    assert_int_equal(jsonrpc_parse(init, strlen(init), &m, &jerr), 0);
    session_input(s, m); /* opens its own upstream */

    struct event *late = evtimer_new(h.base, on_late, h.base);
    struct timeval tv = { 10, 0 };
    evtimer_add(late, &tv);
    event_base_dispatch(h.base); /* until the child's exit is seen (or 10 s) */
    event_free(late);
    assert_int_equal(h.opened, 1);
    assert_int_equal(h.exited, 1);
    /* It went before it ever served, so it is given up: no process runs for it and none will,
     * so it no longer counts against --max-children, though its session lives. */
    assert_int_equal(session_own_count(), 0);
    assert_int_equal(session_own_dying(), 0);
    assert_false(session_has_own(s));

    /* The session ends: its gone upstream is due to be freed from the loop, which never runs
     * again. Then what main does when it stops. */
    session_free(s);
    assert_int_equal(session_own_count(), 0);
    assert_int_equal(session_own_dying(), 0);
    session_own_free_all();
    assert_int_equal(session_own_count(), 0);
    assert_int_equal(session_own_dying(), 0);
    upstream_base_free(h.base);

    seal_keyring_free((struct seal_keyring *)h.gate.keys);
    policy_unref(h.env.policy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gone_upstream_freed_at_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
