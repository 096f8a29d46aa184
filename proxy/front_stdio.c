/* front_stdio.c: a chan on stdin/stdout feeding one session. */
#include "front_stdio.h"

#include <stdlib.h>

#include "chan.h"
#include "log.h"

struct front_stdio {
    struct chan *ch;
    struct session *s;
    void (*gone)(void *arg);
    void *arg;
    bool gone_reported;
};

static void io_send(void *arg, struct sl_str rel, bool final, int code, struct sl_str line)
{
    struct front_stdio *f = arg;
    (void)rel;
    (void)final;
    (void)code;
    chan_send(f->ch, line);
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

static void on_oversize(struct chan *ch, void *arg)
{
    struct front_stdio *f = arg;
    (void)ch;
    session_input_oversize(f->s);
}

static void on_eof(struct chan *ch, const char *why, void *arg)
{
    struct front_stdio *f = arg;
    (void)ch;
    if (f->gone_reported)
        return;
    f->gone_reported = true;
    sl_info("client closed the connection (%s)", why);
    f->gone(f->arg);
}

static void on_drained(struct chan *ch, void *arg)
{
    struct front_stdio *f = arg;
    (void)ch;
    session_update_interest(f->s);
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
    chan_pause(f->ch, true);
    f->s = session_new(base, env, &stdio_io, f, SL_STR("local"));
    return f;
}

void front_stdio_free(struct front_stdio *f)
{
    if (f == NULL)
        return;
    session_free(f->s); /* first: it may still write (cancellations) */
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
