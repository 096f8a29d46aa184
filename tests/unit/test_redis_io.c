/* test_redis_io.c: hiredis on the loop through redis_io.c, against a fake Redis (a loopback
 * socket this test reads and writes itself, so every byte and its timing is the test's).
 *
 * What must hold: the commands a loop pass makes leave together in the next pass, after its I/O
 * (the batch that spares Redis wake-ups); commands queued before the connection is made leave
 * once it is; a command larger than the socket can take leaves whole, the loop waiting for the
 * socket meanwhile instead of trying it again at every pass (a busy loop for as long as Redis
 * does not read); replies reach their callbacks in order; a lost connection fails what is
 * pending and frees the events (the ASan build checks the freeing). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "redis_io.h"

#define PASSES_MAX 10000 /* every loop below is bounded by this many passes */

struct fake {
    struct event_base *base;
    int listener, srv;  /* the fake Redis's ends */
    redisAsyncContext *ac;
    int connected;      /* 1 ok, -1 failed */
    int disconnected;
    char replies[8][32]; /* what the callbacks got, in order; "(null)" for none */
    int nreplies;
};

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct fake *f = ac->data;
    f->connected = status == REDIS_OK ? 1 : -1;
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct fake *f = ac->data;
    (void)status;
    f->disconnected++;
    f->ac = NULL; /* hiredis frees it */
}

static void on_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    struct fake *f = privdata;
    redisReply *reply = r;
    (void)ac;
    if (f->nreplies < 8)
        snprintf(f->replies[f->nreplies], sizeof(f->replies[0]), "%s",
                 reply == NULL ? "(null)" : reply->str);
    f->nreplies++;
}

/* Runs the loop one pass at a time until *flag reaches want. */
static void loop_until(struct fake *f, const int *flag, int want)
{
    for (int i = 0; i < PASSES_MAX && *flag < want; i++)
        event_base_loop(f->base, EVLOOP_NONBLOCK);
    assert_int_equal(*flag, want);
}

static struct fake *fake_open(void)
{
    struct fake *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->base = event_base_new();
    assert_non_null(f->base);
    f->listener = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(f->listener >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    /* small buffers, so that a big command cannot fit in them (test_big_command) */
    int small = 16 << 10;
    assert_int_equal(setsockopt(f->listener, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
    assert_int_equal(bind(f->listener, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(f->listener, 1), 0);
    assert_int_equal(getsockname(f->listener, (struct sockaddr *)&sa, &len), 0);
    f->ac = redisAsyncConnect("127.0.0.1", ntohs(sa.sin_port));
    assert_non_null(f->ac);
    assert_int_equal(f->ac->err, 0);
    f->ac->data = f;
    assert_int_equal(setsockopt(f->ac->c.fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
    assert_int_equal(redis_io_attach(f->ac, f->base), REDIS_OK);
    assert_int_equal(redis_io_attach(f->ac, f->base), REDIS_ERR); /* attached once only */
    redisAsyncSetConnectCallback(f->ac, on_connect);
    redisAsyncSetDisconnectCallback(f->ac, on_disconnect);
    /* the kernel completes the handshake on the listener's backlog: accept does not wait */
    f->srv = accept(f->listener, NULL, NULL);
    assert_true(f->srv >= 0);
    return f;
}

static void fake_close(struct fake *f)
{
    if (f->ac != NULL)
        redisAsyncFree(f->ac);
    close(f->srv);
    close(f->listener);
    event_base_free(f->base);
    free(f);
}

/* Everything the fake Redis has been sent until now, without waiting. */
static size_t srv_take(struct fake *f, char *buf, size_t cap)
{
    size_t n = 0;
    while (n < cap) {
        ssize_t r = recv(f->srv, buf + n, cap - n, MSG_DONTWAIT);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    return n;
}

static void srv_say(struct fake *f, const char *s)
{
    assert_int_equal(send(f->srv, s, strlen(s), 0), (ssize_t)strlen(s));
}

static void issue_three(evutil_socket_t fd, short what, void *arg)
{
    struct fake *f = arg;
    (void)fd;
    (void)what;
    assert_int_equal(redisAsyncCommand(f->ac, on_reply, f, "PING"), REDIS_OK);
    assert_int_equal(redisAsyncCommand(f->ac, on_reply, f, "ECHO a"), REDIS_OK);
    assert_int_equal(redisAsyncCommand(f->ac, on_reply, f, "ECHO %s", "bc"), REDIS_OK);
}

static const char THREE[] = "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$1\r\na\r\n"
                            "*2\r\n$4\r\nECHO\r\n$2\r\nbc\r\n";

/* Commands made by a callback wait for the end of the next pass, and are on the wire then. */
static void test_written_by_the_next_pass(void **state)
{
    (void)state;
    struct fake *f = fake_open();
    loop_until(f, &f->connected, 1);
    char buf[256];
    assert_int_equal(srv_take(f, buf, sizeof(buf)), 0);

    struct timeval now = {0, 0};
    assert_int_equal(event_base_once(f->base, -1, EV_TIMEOUT, issue_three, f, &now), 0);
    event_base_loop(f->base, EVLOOP_ONCE); /* the pass that makes them */
    assert_int_equal(srv_take(f, buf, sizeof(buf)), 0);
    event_base_loop(f->base, EVLOOP_NONBLOCK); /* the next */
    size_t n = srv_take(f, buf, sizeof(buf));
    assert_int_equal(n, strlen(THREE));
    assert_memory_equal(buf, THREE, n);

    srv_say(f, "+PONG\r\n$1\r\na\r\n$2\r\nbc\r\n");
    loop_until(f, &f->nreplies, 3);
    assert_string_equal(f->replies[0], "PONG");
    assert_string_equal(f->replies[1], "a");
    assert_string_equal(f->replies[2], "bc");
    fake_close(f);
}

/* Commands made before the connection is up leave when it is, in order. */
static void test_queued_before_connect(void **state)
{
    (void)state;
    struct fake *f = fake_open();
    issue_three(-1, 0, f);
    char buf[256];
    size_t n = 0;
    for (int i = 0; i < PASSES_MAX && n < strlen(THREE); i++) {
        event_base_loop(f->base, EVLOOP_NONBLOCK);
        n += srv_take(f, buf + n, sizeof(buf) - n);
    }
    assert_int_equal(f->connected, 1);
    assert_int_equal(n, strlen(THREE));
    assert_memory_equal(buf, THREE, n);
    srv_say(f, "+PONG\r\n$1\r\na\r\n$2\r\nbc\r\n");
    loop_until(f, &f->nreplies, 3);
    assert_string_equal(f->replies[2], "bc");
    fake_close(f);
}

#define BIG (4u << 20) /* far more than a loopback socket takes before it is read */

static void on_guard(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    *(int *)arg = 1;
}

/* A command the socket cannot take at once leaves whole, over many passes; while the socket is
 * full, the loop sleeps. */
static void test_big_command_waits_for_the_socket(void **state)
{
    (void)state;
    struct fake *f = fake_open();
    loop_until(f, &f->connected, 1);
    char *value = malloc(BIG);
    assert_non_null(value);
    memset(value, 'v', BIG);
    assert_int_equal(redisAsyncCommand(f->ac, on_reply, f, "SET k %b", value, (size_t)BIG),
                     REDIS_OK);
    free(value);
    char head[64];
    int hlen = snprintf(head, sizeof(head), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%u\r\n", BIG);
    size_t want = (size_t)hlen + BIG + 2, got = 0;

    /* The first passes write what fits. Then nothing is read, and the loop must wait for
     * the socket: only the guard timer ends its wait, after a handful of passes at most. A
     * write tried at every pass would run thousands of them in those 100 ms. */
    int guard = 0, passes = 0;
    struct event *ev = evtimer_new(f->base, on_guard, &guard);
    assert_non_null(ev);
    struct timeval ms100 = {0, 100 * 1000};
    evtimer_add(ev, &ms100);
    while (!guard && passes < PASSES_MAX) {
        event_base_loop(f->base, EVLOOP_ONCE);
        passes++;
    }
    event_free(ev);
    assert_true(guard);
    assert_in_range(passes, 1, 10);

    char *buf = malloc(1 << 16);
    assert_non_null(buf);
    char first[64];
    size_t nfirst = 0;
    for (int i = 0; i < PASSES_MAX && got < want; i++) {
        size_t n = srv_take(f, buf, 1 << 16);
        if (nfirst < (size_t)hlen) {
            size_t k = n < (size_t)hlen - nfirst ? n : (size_t)hlen - nfirst;
            memcpy(first + nfirst, buf, k);
            nfirst += k;
        }
        got += n;
        event_base_loop(f->base, EVLOOP_NONBLOCK);
    }
    free(buf);
    assert_int_equal(got, want);
    assert_memory_equal(first, head, (size_t)hlen);
    srv_say(f, "+OK\r\n");
    loop_until(f, &f->nreplies, 1);
    assert_string_equal(f->replies[0], "OK");
    fake_close(f);
}

/* The fake Redis goes away: the pending command gets no reply, the disconnect is reported,
 * and hiredis frees the context and, through cleanup, the events (ASan: no leak). */
static void test_lost_connection(void **state)
{
    (void)state;
    struct fake *f = fake_open();
    loop_until(f, &f->connected, 1);
    assert_int_equal(redisAsyncCommand(f->ac, on_reply, f, "PING"), REDIS_OK);
    event_base_loop(f->base, EVLOOP_NONBLOCK);
    close(f->srv);
    f->srv = -1;
    loop_until(f, &f->disconnected, 1);
    assert_int_equal(f->nreplies, 1);
    assert_string_equal(f->replies[0], "(null)");
    assert_null(f->ac);
    fake_close(f);
}

int main(void)
{
    alarm(10); /* a pass that never returns (writing to a full socket forever) fails here */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_written_by_the_next_pass),
        cmocka_unit_test(test_queued_before_connect),
        cmocka_unit_test(test_big_command_waits_for_the_socket),
        cmocka_unit_test(test_lost_connection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
