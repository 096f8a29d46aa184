/* test_upstream.c: freeing the event base after the upstreams (upstream_base_free).
 *
 * What must hold: a connection made as up_http makes them (deferred callbacks, closed on free)
 * and freed while one of its callbacks is still scheduled is really freed, its socket closed,
 * when the base is freed. event_base_free alone cancels that callback, and the reference it
 * holds keeps the connection (and its socket) forever: `sluice check --against` leaked one
 * under ASan when the answer it waited for and a connect completed in the same loop pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

#include "sl_test.h"
#include "upstream.h"

static int events_seen;

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev, (void)what, (void)arg;
    events_seen++;
}

static bool fd_open(int fd)
{
    return fcntl(fd, F_GETFD) != -1 || errno != EBADF;
}

/* A connection with a deferred event callback scheduled (as a connect that completed in the
 * loop pass that breaks the loop leaves it), freed by its owner before the base. */
static void scheduled_callback_does_not_keep_the_connection(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct bufferevent *bev =
        bufferevent_socket_new(base, sv[0], BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    assert_non_null(bev);
    bufferevent_setcb(bev, NULL, NULL, on_event, NULL);
    events_seen = 0;
    bufferevent_trigger_event(bev, BEV_EVENT_CONNECTED, 0); /* deferred: scheduled, not run */
    assert_int_equal(events_seen, 0);
    bufferevent_free(bev);
    assert_true(fd_open(sv[0])); /* the scheduled callback still holds it */
    upstream_base_free(base);
    assert_false(fd_open(sv[0]));
    assert_int_equal(events_seen, 0); /* freed: the owner's callback is not called any more */
    close(sv[1]);
}

static void no_base_is_a_no_op(void **state)
{
    (void)state;
    upstream_base_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scheduled_callback_does_not_keep_the_connection),
        cmocka_unit_test(no_base_is_a_no_op),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
