/* front_stdio.c: a chan on stdin/stdout feeding one session.
 *
 * The end of the client's input is not the end of the client: a file of requests
 * (`sluice < requests.jsonl > out.jsonl`) ends long before its calls are answered. So at the end
 * of input the client is reported gone only once every call it sent has its answer, or after
 * EOF_WAIT_S. Unless something waits for the client's own answer (a held call's question, a
 * relayed request), which can no longer come: then, and on a broken output, it is gone at once,
 * and what it left is cancelled as when a client disconnects. */
#include "front_stdio.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "chan.h"
#include "log.h"

#define EOF_WAIT_S 30  /* the longest sluice waits for answers after the end of input */

struct front_stdio {
    struct chan *ch;
    struct session *s;
    void (*gone)(void *arg);
    void *arg;
    bool gone_reported;
    bool input_ended;      /* the answers to what was read are still coming */
    struct event *eof_ev;  /* EOF_WAIT_S after the end of input; then, an idle check */
};

static void report_gone(struct front_stdio *f, const char *why)
{
    if (f->gone_reported)
        return;
    f->gone_reported = true;
    sl_info("client closed the connection (%s)", why);
    f->gone(f->arg);
}

static void on_eof_wait(evutil_socket_t fd, short what, void *arg)
{
    struct front_stdio *f = arg;
    (void)fd;
    if (what & EV_TIMEOUT && session_busy(f->s) > 0)
        sl_warn("end of input: calls still unanswered after %d s are cancelled", EOF_WAIT_S);
    report_gone(f, "end of file");
}

static void io_send(void *arg, struct sl_str rel, bool final, int code, struct sl_str line)
{
    struct front_stdio *f = arg;
    (void)rel;
    (void)code;
    chan_send(f->ch, line);
    /* The last answer after the end of input: report from the loop, not from inside the
     * session that is writing. */
    if (final && f->input_ended && !f->gone_reported)
        event_active(f->eof_ev, EV_READ, 0);
}

static size_t io_out_len(void *arg)
{
    struct front_stdio *f = arg;
    return chan_out_len(f->ch);
}

static void io_pause(void *arg, bool paused)
{
    struct front_stdio *f = arg;
    chan_pause(f->ch, paused);
}

static const struct session_io stdio_io = {
    .send = io_send, .out_len = io_out_len, .pause = io_pause,
};

static void on_line(struct chan *ch, struct sl_str line, void *arg)
{
    struct front_stdio *f = arg;
    (void)ch;
    session_input_line(f->s, line);
}

static void on_oversize(struct chan *ch, struct sl_str head, struct sl_str tail, void *arg)
{
    struct front_stdio *f = arg;
    (void)ch, (void)head, (void)tail;
    session_input_oversize(f->s);
}

static void on_eof(struct chan *ch, const char *why, void *arg)
{
    struct front_stdio *f = arg;
    (void)ch;
    if (f->gone_reported || f->input_ended)
        return;
    /* A broken pipe or a read error: nobody is there. */
    if (strcmp(why, "end of file") != 0 || session_busy(f->s) == 0 ||
        session_awaits_client(f->s))
        return report_gone(f, why);
    f->input_ended = true;
    sl_info("end of input: answering the %zu call%s still in flight first",
            session_busy(f->s), session_busy(f->s) == 1 ? "" : "s");
    struct timeval tv = { EOF_WAIT_S, 0 };
    evtimer_add(f->eof_ev, &tv);
}

static void on_drained(struct chan *ch, void *arg)
{
    struct front_stdio *f = arg;
    (void)ch;
    session_update_interest(f->s);
}

/* Activated after each answer once the input ended (and by the timer): gone when idle. */
static void on_answered(evutil_socket_t fd, short what, void *arg)
{
    struct front_stdio *f = arg;
    if ((what & EV_TIMEOUT) || session_busy(f->s) == 0)
        on_eof_wait(fd, what, arg);
}

static const struct chan_cbs stdio_cbs = {
    .on_line = on_line, .on_oversize = on_oversize, .on_eof = on_eof, .on_drained = on_drained,
};

struct front_stdio *front_stdio_new(struct event_base *base, struct session_env *env, int in_fd,
                                    int out_fd, void (*gone)(void *arg), void *arg)
{
    struct front_stdio *f = sl_xcalloc(1, sizeof(*f));
    f->gone = gone;
    f->arg = arg;
    f->ch = chan_new(base, in_fd, out_fd, &stdio_cbs, f);
    f->eof_ev = evtimer_new(base, on_answered, f);
    SL_REQUIRE(f->eof_ev != NULL);
    chan_pause(f->ch, true);
    f->s = session_new(base, env, &stdio_io, f, SL_STR("local"));
    return f;
}

void front_stdio_free(struct front_stdio *f)
{
    if (f == NULL)
        return;
    session_free(f->s); /* first: it may still write (cancellations) */
    event_free(f->eof_ev);
    chan_free(f->ch);
    free(f);
}

struct session *front_stdio_session(struct front_stdio *f)
{
    return f->s;
}

void front_stdio_flush(struct front_stdio *f, int timeout_ms)
{
    chan_flush_blocking(f->ch, timeout_ms);
}
