/* test_relay.c: two clients share one upstream and use the same request ids; each gets its own
 * answers. The upstream is sluice's built-in demo server (a forked child); the clients are two
 * sessions on socketpairs, driven from the test's side of each pair. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "front_stdio.h"
#include "session.h"

#define NCLIENTS 2

struct harness {
    struct event_base *base;
    struct session_env env;
    struct gate_ctx gate;
    struct front_stdio *f[NCLIENTS];
    struct session *s[NCLIENTS];
    int peer[NCLIENTS];            /* the test's end of each client's socketpair */
    struct sl_buf got[NCLIENTS];   /* what each client received */
    struct event *tick;
    int ticks;
};

static void on_era(struct upstream *up, void *arg)
{
    struct harness *h = arg;
    for (int i = 0; i < NCLIENTS; i++)
        session_start(h->s[i]);
}

static void on_ready(struct upstream *up, void *arg)
{
    struct harness *h = arg;
    for (int i = 0; i < NCLIENTS; i++)
        session_upstream_ready(h->s[i]);
}

static void on_notification(struct upstream *up, struct jsonrpc_msg *m, void *arg) {}
static void on_request(struct upstream *up, struct jsonrpc_msg *m, const struct up_request *on,
                       void *arg) {}
static void on_exit_cb(struct upstream *up, const char *why, void *arg) {}
static void on_gone(void *arg) {}

static int lines(const struct sl_buf *b)
{
    int n = 0;
    for (size_t i = 0; i < b->len; i++)
        n += b->p[i] == '\n';
    return n;
}

/* Collects what the clients got; stops when each has its two answers, or after 10 s. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct harness *h = arg;
    bool done = true;
    for (int i = 0; i < NCLIENTS; i++) {
        char buf[65536];
        ssize_t n;
        while ((n = recv(h->peer[i], buf, sizeof(buf), MSG_DONTWAIT)) > 0)
            sl_buf_put(&h->got[i], buf, (size_t)n);
        done = done && lines(&h->got[i]) >= 2;
    }
    if (done || ++h->ticks > 1000)
        event_base_loopbreak(h->base);
}

static void send_str(int fd, const char *s)
{
    size_t len = strlen(s);
    assert_int_equal(write(fd, s, len), (ssize_t)len);
}

static void test_colliding_ids(void **state)
{
    static const char policy_text[] = "version: 1\n";
    static const char init[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n";
    static const char *const calls[NCLIENTS] = {
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
        "\"read_text_file\",\"arguments\":{\"path\":\"/notes.txt\"}}}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
        "\"list_directory\",\"arguments\":{}}}\n",
    };
    struct harness h = { 0 };
    struct policy_error perr;
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    assert_int_equal(policy_load_buffer("t", policy_text, sizeof(policy_text) - 1,
                                        &h.env.policy, &perr), 0);
    h.gate.keys = seal_keyring_random();
    static const uint8_t origin[SEAL_ORIGIN_LEN];
    h.gate.origin = origin;
    h.gate.upstream_id = SL_STR("test");
    h.env.gate = &h.gate;
    h.base = event_base_new();
    for (int i = 0; i < NCLIENTS; i++) {
        int sp[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        h.peer[i] = sp[0];
        h.f[i] = front_stdio_new(h.base, &h.env, sp[1], dup(sp[1]), on_gone, &h);
        h.s[i] = front_stdio_session(h.f[i]);
        send_str(h.peer[i], init);
        send_str(h.peer[i], calls[i]);
    }
    static const struct upstream_cbs cbs = {
        .on_era = on_era, .on_ready = on_ready, .on_request = on_request,
        .on_notification = on_notification, .on_exit = on_exit_cb,
    };
    char err[128];
    h.env.up = upstream_spawn(h.base, NULL, 0, &cbs, &h, err, sizeof(err));
    assert_non_null(h.env.up);
    h.tick = event_new(h.base, -1, EV_PERSIST, on_tick, &h);
    struct timeval tv = { 0, 10000 };
    event_add(h.tick, &tv);
    event_base_dispatch(h.base);

    /* Each client got its own answer under its own id 7, and not the other's. */
    assert_non_null(strstr(h.got[0].p, "\"id\":7,\"result\":{\"content\":[{\"type\":\"text\","
                                       "\"text\":\"hello from the sluice demo"));
    assert_null(strstr(h.got[0].p, "bytes"));
    assert_non_null(strstr(h.got[1].p, "\"id\":7,\"result\""));
    assert_non_null(strstr(h.got[1].p, "/notes.txt"));
    assert_null(strstr(h.got[1].p, "hello from the sluice demo"));

    for (int i = 0; i < NCLIENTS; i++) {
        front_stdio_free(h.f[i]);
        close(h.peer[i]);
        sl_buf_free(&h.got[i]);
    }
    upstream_free(h.env.up);
    event_free(h.tick);
    event_base_free(h.base);
    seal_keyring_free((struct seal_keyring *)h.gate.keys);
    policy_unref(h.env.policy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_colliding_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
