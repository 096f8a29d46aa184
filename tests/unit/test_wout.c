/* test_wout.c: direct writes at the end of a loop turn (proxy/wout.c), over a real socketpair.
 *
 * What must hold: output queued in one turn goes out at its end, in order and in one piece,
 * without the bufferevent's write event; what the kernel does not take is handed back to the
 * bufferevent and arrives whole; a write error still reaches the owner's event callback; after
 * detaching nothing is written behind the owner's back. wout_send() writes at once only when
 * nothing is queued before it, never out of order, and queues what the kernel does not take. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "sl_test.h"
#include "wout.h"

struct rig {
    struct event_base *base;
    struct bufferevent *bev;
    struct wout w;
    int peer;
    int writes;    /* on_write calls */
    short events;  /* what the event callback saw */
};

static void on_write(struct bufferevent *bev, void *arg)
{
    struct rig *r = arg;
    (void)bev;
    r->writes++;
    wout_written(&r->w);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct rig *r = arg;
    (void)bev;
    r->events |= what;
}

static int setup_with(void **state, size_t low_water)
{
    struct rig *r = calloc(1, sizeof(*r));
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    evutil_make_socket_nonblocking(sv[0]);
    evutil_make_socket_nonblocking(sv[1]);
    r->peer = sv[1];
    r->base = event_base_new();
    r->bev = bufferevent_socket_new(r->base, sv[0], BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(r->bev, NULL, on_write, on_event, r);
    bufferevent_enable(r->bev, EV_WRITE);
    wout_attach(&r->w, r->bev, on_write, low_water, r);
    *state = r;
    return 0;
}

static int setup(void **state)
{
    return setup_with(state, 0);
}

/* As a channel has it (chan.c): the owner hears of every write below a high low-water mark,
 * so wout_written() is called while output is still queued. */
static int setup_high_low_water(void **state)
{
    return setup_with(state, 8u << 20);
}

static int teardown(void **state)
{
    struct rig *r = *state;
    wout_detach(&r->w);
    bufferevent_free(r->bev);
    close(r->peer);
    event_base_free(r->base);
    free(r);
    return 0;
}

static void turn(struct rig *r)
{
    event_base_loop(r->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

/* Reads what the peer has now (non-blocking) into b. */
static size_t drain_peer(struct rig *r, struct sl_buf *b)
{
    char tmp[65536];
    size_t got = 0;
    for (;;) {
        ssize_t n = read(r->peer, tmp, sizeof(tmp));
        if (n <= 0)
            break;
        sl_buf_put(b, tmp, (size_t)n);
        got += (size_t)n;
    }
    return got;
}

static void test_written_at_turn_end(void **state)
{
    struct rig *r = *state;
    assert_true(r->w.direct);
    assert_false(bufferevent_get_enabled(r->bev) & EV_WRITE);
    struct evbuffer *out = bufferevent_get_output(r->bev);
    evbuffer_add(out, "HTTP/1.1 200 OK\r\n\r\n", 19);
    evbuffer_add(out, "{\"a\":1}", 7);
    struct sl_buf got = { 0 };
    assert_int_equal(drain_peer(r, &got), 0); /* nothing before the turn ends */
    turn(r);
    drain_peer(r, &got);
    assert_bytes_equal(got.p, got.len, "HTTP/1.1 200 OK\r\n\r\n{\"a\":1}");
    assert_int_equal(evbuffer_get_length(out), 0);
    assert_int_equal(r->writes, 1);
    /* Still direct, and the bufferevent never armed its write event. */
    assert_true(r->w.direct);
    assert_false(bufferevent_get_enabled(r->bev) & EV_WRITE);
    sl_buf_free(&got);
}

static void test_kernel_full_hands_back(void **state)
{
    struct rig *r = *state;
    struct evbuffer *out = bufferevent_get_output(r->bev);
    const size_t total = 1u << 20;
    char *data = malloc(total);
    for (size_t i = 0; i < total; i++)
        data[i] = (char)('a' + (i * 7 + i / 4096) % 26);
    evbuffer_add(out, data, total);
    turn(r);
    /* The socket took only part: the bufferevent has the rest, and its write event is on. */
    assert_false(r->w.direct);
    assert_true(bufferevent_get_enabled(r->bev) & EV_WRITE);
    assert_true(evbuffer_get_length(out) > 0);
    struct sl_buf got = { 0 };
    for (int i = 0; i < 100000 && got.len < total; i++) {
        drain_peer(r, &got);
        turn(r);
    }
    drain_peer(r, &got);
    assert_int_equal(got.len, total);
    assert_memory_equal(got.p, data, total);
    assert_true(r->writes >= 1);
    /* Drained: back to direct writes. */
    assert_true(r->w.direct);
    assert_false(bufferevent_get_enabled(r->bev) & EV_WRITE);
    evbuffer_add(out, "next", 4);
    turn(r);
    sl_buf_reset(&got);
    drain_peer(r, &got);
    assert_bytes_equal(got.p, got.len, "next");
    sl_buf_free(&got);
    free(data);
}

static void test_write_error_reported(void **state)
{
    struct rig *r = *state;
    close(r->peer);
    r->peer = open("/dev/null", O_RDONLY); /* so teardown closes something */
    evbuffer_add(bufferevent_get_output(r->bev), "lost?", 5);
    for (int i = 0; i < 10 && r->events == 0; i++)
        turn(r);
    assert_true(r->events & BEV_EVENT_ERROR);
    assert_true(r->events & BEV_EVENT_WRITING);
}

static void test_detached_writes_nothing(void **state)
{
    struct rig *r = *state;
    wout_detach(&r->w);
    wout_detach(&r->w); /* twice is fine */
    bufferevent_disable(r->bev, EV_WRITE);
    evbuffer_add(bufferevent_get_output(r->bev), "x", 1);
    turn(r);
    struct sl_buf got = { 0 };
    assert_int_equal(drain_peer(r, &got), 0);
    assert_int_equal(r->writes, 0);
    sl_buf_free(&got);
}

/* Sent at once: the peer has the bytes before the loop turns, nothing was queued, and the
 * owner hears of it only when it asks (wout_kick). */
static void test_send_at_once(void **state)
{
    struct rig *r = *state;
    struct evbuffer *out = bufferevent_get_output(r->bev);
    wout_send(&r->w, r->bev, "HTTP/1.1 200 OK\r\n\r\n{}", 21);
    assert_int_equal(evbuffer_get_length(out), 0);
    struct sl_buf got = { 0 };
    drain_peer(r, &got);
    assert_bytes_equal(got.p, got.len, "HTTP/1.1 200 OK\r\n\r\n{}");
    turn(r);
    assert_int_equal(r->writes, 0);
    wout_kick(&r->w);
    turn(r);
    assert_int_equal(r->writes, 1);
    assert_true(r->w.direct);
    assert_false(bufferevent_get_enabled(r->bev) & EV_WRITE);
    sl_buf_free(&got);
}

/* Output queued earlier in the turn goes first: a send behind it is queued after it, not sent
 * ahead of it. */
static void test_send_behind_queued(void **state)
{
    struct rig *r = *state;
    struct evbuffer *out = bufferevent_get_output(r->bev);
    evbuffer_add(out, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    wout_send(&r->w, r->bev, "HTTP/1.1 200 OK\r\n\r\n", 19);
    struct sl_buf got = { 0 };
    assert_int_equal(drain_peer(r, &got), 0);
    turn(r);
    drain_peer(r, &got);
    assert_bytes_equal(got.p, got.len, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n");
    sl_buf_free(&got);
}

/* More than the kernel takes: the rest is queued and arrives whole and in order, and sends
 * after it queue behind it until it is out. */
static void test_send_rest_queued(void **state)
{
    struct rig *r = *state;
    const size_t total = 1u << 20;
    char *data = malloc(total);
    for (size_t i = 0; i < total; i++)
        data[i] = (char)('a' + (i * 7 + i / 4096) % 26);
    wout_send(&r->w, r->bev, data, total);
    struct evbuffer *out = bufferevent_get_output(r->bev);
    assert_true(evbuffer_get_length(out) > 0);
    assert_true(evbuffer_get_length(out) < total);
    wout_send(&r->w, r->bev, "tail", 4);
    struct sl_buf got = { 0 };
    for (int i = 0; i < 100000 && got.len < total + 4; i++) {
        drain_peer(r, &got);
        turn(r);
    }
    drain_peer(r, &got);
    assert_int_equal(got.len, total + 4);
    assert_memory_equal(got.p, data, total);
    assert_memory_equal(got.p + total, "tail", 4);
    assert_true(r->w.direct);
    sl_buf_free(&got);
    free(data);
}

/* A send to a peer that left is not lost silently: the error reaches the event callback. */
static void test_send_error_reported(void **state)
{
    struct rig *r = *state;
    close(r->peer);
    r->peer = open("/dev/null", O_RDONLY); /* so teardown closes something */
    wout_send(&r->w, r->bev, "lost?", 5);
    for (int i = 0; i < 10 && r->events == 0; i++)
        turn(r);
    assert_true(r->events & BEV_EVENT_ERROR);
    assert_true(r->events & BEV_EVENT_WRITING);
}

/* Not attached (a TLS connection): queued for the bufferevent, which writes it. */
static void test_send_detached_queues(void **state)
{
    struct rig *r = *state;
    wout_detach(&r->w);
    wout_send(&r->w, r->bev, "x", 1);
    assert_int_equal(evbuffer_get_length(bufferevent_get_output(r->bev)), 1);
    wout_kick(&r->w); /* no effect */
}

/* An offered buffer of exactly the bytes added is taken by reference (the buffer is left empty
 * and the evbuffer frees the memory: ASan sees a leak or a double free otherwise); any other
 * bytes, or the same once the offer ended, are copied. */
static void test_add_takes_offered(void **state)
{
    (void)state;
    struct evbuffer *out = evbuffer_new();
    struct sl_buf b = { 0 }, other = { 0 };
    sl_buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
    sl_buf_puts(&other, "[1]");
    sl_offer(&b);
    wout_add(out, other.p, other.len); /* not the offered bytes */
    assert_non_null(b.p);
    wout_add(out, b.p, b.len - 1); /* a prefix of them: not exactly */
    assert_non_null(b.p);
    size_t len = b.len;
    wout_add(out, b.p, b.len);
    assert_null(b.p);
    sl_offer(NULL);
    assert_int_equal(evbuffer_get_length(out), other.len + 2 * len - 1);
    const char *all = (const char *)evbuffer_pullup(out, -1);
    assert_memory_equal(all + other.len + len - 1, "{\"jsonrpc\"", 10);
    sl_buf_puts(&b, "again");
    sl_offer(&b);
    sl_offer(NULL);
    wout_add(out, b.p, b.len); /* the offer ended: copied */
    assert_non_null(b.p);
    evbuffer_free(out);
    sl_buf_free(&b);
    sl_buf_free(&other);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_written_at_turn_end, setup, teardown),
        cmocka_unit_test(test_add_takes_offered),
        cmocka_unit_test_setup_teardown(test_kernel_full_hands_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kernel_full_hands_back, setup_high_low_water,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_write_error_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_detached_writes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_send_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_send_behind_queued, setup, teardown),
        cmocka_unit_test_setup_teardown(test_send_rest_queued, setup, teardown),
        cmocka_unit_test_setup_teardown(test_send_error_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_send_detached_queues, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
