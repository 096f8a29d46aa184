/* chan.c: newline framing over two bufferevents (one reads, one writes).
 *
 * A regular file or a device such as /dev/null (`sluice < requests.jsonl > out.jsonl`) cannot be
 * polled: epoll refuses it, so a bufferevent on it never reads and never writes. Such a side gets
 * a bufferevent without a descriptor, used only for its buffer: input is read with plain reads,
 * one chunk per loop turn (resume_ev, activated again while reading goes on, so the session's
 * backpressure and other events still take turns), and output is written with blocking writes
 * as it is queued. */
#include "chan.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "wout.h"

struct chan {
    struct bufferevent *rbev, *wbev;
    struct wout wout;          /* lines written in the loop turn that queued them */
    struct event *resume_ev;   /* processes lines left in the buffer after a pause */
    struct chan_cbs cbs;
    void *arg;
    bool paused;
    bool skipping;             /* discarding an oversized line up to its newline */
    size_t scanned;            /* input bytes already searched for a newline, without one */
    /* An oversized line's first and last bytes, for on_oversize (whose reply it was). */
    char head[CHAN_OVERSIZE_HEAD], tail[CHAN_OVERSIZE_TAIL];
    size_t head_len, tail_len;
    bool closing_write;        /* close wfd once output is empty */
    bool read_done;
    bool eof_pending;          /* the read side ended while paused: finish once resumed */
    const char *eof_why;
    bool in_read;              /* inside process_input (no re-entry) */
    int rfile, wfile;          /* a descriptor that cannot be polled (a file), or -1 */
    bool wfailed;              /* a write to wfile failed: reported from resume_ev */
};

static void process_input(struct chan *ch);

static void emit_line(struct chan *ch, struct evbuffer *in, size_t len, size_t eol)
{
    char *p = (char *)evbuffer_pullup(in, (ev_ssize_t)(len + eol));
    size_t n = len;
    if (n > 0 && p[n - 1] == '\r')
        n--;
    /* The callback must not keep the slice: the bytes are drained right after. */
    ch->cbs.on_line(ch, (struct sl_str){ p, n }, ch->arg);
    evbuffer_drain(in, len + eol);
    ch->scanned = 0;
}

/* The first bytes of an oversized line, still at the start of in. */
static void keep_head(struct chan *ch, struct evbuffer *in)
{
    ch->head_len = evbuffer_copyout(in, ch->head, sizeof(ch->head));
    ch->tail_len = 0;
}

/* The line's n bytes at the start of in go: its last bytes are kept, after those kept before. */
static void drain_keep_tail(struct chan *ch, struct evbuffer *in, size_t n)
{
    size_t take = n < sizeof(ch->tail) ? n : sizeof(ch->tail);
    size_t keep = sizeof(ch->tail) - take;
    if (keep > ch->tail_len)
        keep = ch->tail_len;
    memmove(ch->tail, ch->tail + ch->tail_len - keep, keep);
    evbuffer_drain(in, n - take);
    evbuffer_remove(in, ch->tail + keep, take);
    ch->tail_len = keep + take;
}

/* One framing step. Returns false when no complete line (or oversize) is available. */
static bool frame_step(struct chan *ch, struct evbuffer *in)
{
    size_t eol_len = 0;
    /* The search resumes where the last one ended: a long line arriving in many reads is not
     * searched from its start each time. */
    struct evbuffer_ptr from;
    size_t have = evbuffer_get_length(in);
    evbuffer_ptr_set(in, &from, ch->scanned <= have ? ch->scanned : 0, EVBUFFER_PTR_SET);
    struct evbuffer_ptr pos = evbuffer_search_eol(in, &from, &eol_len, EVBUFFER_EOL_LF);
    if (pos.pos < 0) {
        ch->scanned = have;
        if (have > SL_MAX_MESSAGE) {
            if (!ch->skipping)
                keep_head(ch, in);
            drain_keep_tail(ch, in, have);
            ch->scanned = 0;
            ch->skipping = true;
        }
        return false;
    }
    ch->scanned = 0; /* the line (and what follows it) is consumed or searched afresh */
    size_t len = (size_t)pos.pos;
    if (ch->skipping || len > SL_MAX_MESSAGE) {
        if (!ch->skipping)
            keep_head(ch, in);
        drain_keep_tail(ch, in, len);
        evbuffer_drain(in, eol_len);
        ch->skipping = false;
        size_t tl = ch->tail_len;
        if (tl > 0 && ch->tail[tl - 1] == '\r')
            tl--;
        ch->cbs.on_oversize(ch, (struct sl_str){ ch->head, ch->head_len },
                            (struct sl_str){ ch->tail, tl }, ch->arg);
        return true;
    }
    emit_line(ch, in, len, eol_len);
    return true;
}

static void process_input(struct chan *ch)
{
    if (ch->in_read || ch->rbev == NULL)
        return;
    ch->in_read = true;
    struct evbuffer *in = bufferevent_get_input(ch->rbev);
    while (!ch->paused && !ch->read_done && frame_step(ch, in))
        ;
    ch->in_read = false;
}

static void on_read(struct bufferevent *bev, void *arg)
{
    (void)bev;
    process_input(arg);
}

/* The read side ended. Lines still buffered are delivered first, in order and respecting a
 * pause (the owner may be waiting to process them), then a last line without its newline, then
 * on_eof. */
static void finish_eof(struct chan *ch)
{
    process_input(ch);
    if (ch->paused || ch->read_done) {
        ch->eof_pending = !ch->read_done;
        return;
    }
    ch->eof_pending = false;
    struct evbuffer *in = bufferevent_get_input(ch->rbev);
    size_t left = evbuffer_get_length(in);
    if (!ch->skipping && left > 0 && left <= SL_MAX_MESSAGE)
        emit_line(ch, in, left, 0);
    if (ch->paused && !ch->read_done) { /* the last line paused us: come back for on_eof */
        ch->eof_pending = true;
        return;
    }
    if (ch->read_done)
        return;
    ch->read_done = true;
    ch->cbs.on_eof(ch, ch->eof_why, ch->arg);
}

static void on_read_event(struct bufferevent *bev, short what, void *arg)
{
    struct chan *ch = arg;
    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
        return;
    bufferevent_disable(bev, EV_READ);
    ch->eof_why = (what & BEV_EVENT_ERROR) ? strerror(EVUTIL_SOCKET_ERROR()) : "end of file";
    finish_eof(ch);
}

static void close_wbev(struct chan *ch)
{
    if (ch->wbev) {
        wout_detach(&ch->wout);
        bufferevent_free(ch->wbev);
        ch->wbev = NULL;
    }
    if (ch->wfile >= 0) {
        close(ch->wfile);
        ch->wfile = -1;
    }
}

/* Writes everything queued to the file wfile now (blocking: a file takes it at once). A failure
 * (disk full) drops the output and is reported from resume_ev, outside the caller's stack. */
static void file_write_all(struct chan *ch)
{
    struct evbuffer *out = bufferevent_get_output(ch->wbev);
    evbuffer_unfreeze(out, 1);
    while (evbuffer_get_length(out) > 0) {
        if (evbuffer_write(out, ch->wfile) > 0 || errno == EINTR)
            continue;
        if (errno == EAGAIN) { /* a device opened non-blocking by someone else: wait for it */
            struct pollfd p = { .fd = ch->wfile, .events = POLLOUT };
            if (poll(&p, 1, 1000) > 0 && !(p.revents & (POLLERR | POLLHUP | POLLNVAL)))
                continue;
        }
        evbuffer_drain(out, evbuffer_get_length(out));
        ch->wfailed = true;
        event_active(ch->resume_ev, 0, 0);
    }
    evbuffer_freeze(out, 1);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct chan *ch = arg;
    wout_written(&ch->wout);
    if (ch->closing_write && evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
        close_wbev(ch);
        return;
    }
    if (ch->cbs.on_drained)
        ch->cbs.on_drained(ch, ch->arg);
}

static void on_write_event(struct bufferevent *bev, short what, void *arg)
{
    struct chan *ch = arg;
    (void)bev;
    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
        return;
    close_wbev(ch);
    if (ch->cbs.on_write_closed)
        return ch->cbs.on_write_closed(ch, ch->arg);
    /* The peer stopped reading (EPIPE): treat it as the end of the conversation. */
    if (!ch->read_done) {
        ch->read_done = true;
        if (ch->rbev)
            bufferevent_disable(ch->rbev, EV_READ);
        ch->cbs.on_eof(ch, "write side closed", ch->arg);
    }
}

/* Reads one chunk of the file rfile into the input and frames it; comes back next turn while
 * reading goes on. The input is bounded as a bufferevent's is: framing drains each line, and a
 * line over SL_MAX_MESSAGE is dropped as it grows. */
static void file_read_step(struct chan *ch)
{
    if (ch->paused || ch->read_done || ch->eof_pending || ch->rbev == NULL)
        return;
    struct evbuffer *in = bufferevent_get_input(ch->rbev);
    evbuffer_unfreeze(in, 0); /* a socket bufferevent keeps its input's end frozen for itself */
    int n = evbuffer_read(in, ch->rfile, 65536);
    evbuffer_freeze(in, 0);
    if (n < 0 && errno != EINTR && errno != EAGAIN) {
        ch->eof_why = strerror(errno);
        return finish_eof(ch);
    }
    if (n == 0) {
        ch->eof_why = "end of file";
        return finish_eof(ch);
    }
    process_input(ch);
    if (!ch->paused && !ch->read_done)
        event_active(ch->resume_ev, 0, 0);
}

static void on_write_event(struct bufferevent *bev, short what, void *arg);

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    struct chan *ch = arg;
    (void)fd;
    (void)what;
    if (ch->wfailed) {
        ch->wfailed = false;
        on_write_event(ch->wbev, BEV_EVENT_ERROR, ch);
    }
    if (ch->eof_pending) {
        finish_eof(ch);
    } else {
        process_input(ch);
        if (ch->rfile >= 0)
            file_read_step(ch);
    }
}

/* Whether fd can be watched by the event loop: not a regular file, a directory, or a device
 * other than a terminal (/dev/null), which epoll refuses. */
static bool fd_pollable(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return true; /* the bufferevent reports the error */
    if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) || S_ISBLK(st.st_mode))
        return false;
    return !S_ISCHR(st.st_mode) || isatty(fd);
}

struct chan *chan_new(struct event_base *base, int rfd, int wfd, const struct chan_cbs *cbs,
                      void *arg)
{
    struct chan *ch = sl_xcalloc(1, sizeof(*ch));
    ch->cbs = *cbs;
    ch->arg = arg;
    ch->rfile = fd_pollable(rfd) ? -1 : rfd;
    ch->wfile = fd_pollable(wfd) ? -1 : wfd;
    if (ch->rfile < 0)
        evutil_make_socket_nonblocking(rfd);
    if (ch->wfile < 0)
        evutil_make_socket_nonblocking(wfd);
    ch->rbev = bufferevent_socket_new(base, ch->rfile < 0 ? rfd : -1, BEV_OPT_CLOSE_ON_FREE);
    ch->wbev = bufferevent_socket_new(base, ch->wfile < 0 ? wfd : -1, BEV_OPT_CLOSE_ON_FREE);
    SL_REQUIRE(ch->rbev && ch->wbev);
    bufferevent_setcb(ch->rbev, on_read, NULL, on_read_event, ch);
    bufferevent_setcb(ch->wbev, NULL, on_write, on_write_event, ch);
    bufferevent_setwatermark(ch->rbev, EV_READ, 0, SL_MAX_MESSAGE + 65536);
    bufferevent_setwatermark(ch->wbev, EV_WRITE, CHAN_HIGH_WATER / 2, 0);
    if (ch->rfile < 0)
        bufferevent_enable(ch->rbev, EV_READ);
    if (ch->wfile < 0) {
        bufferevent_enable(ch->wbev, EV_WRITE);
        wout_attach(&ch->wout, ch->wbev, on_write, CHAN_HIGH_WATER / 2, ch);
    }
    ch->resume_ev = event_new(base, -1, 0, on_resume, ch);
    if (ch->rfile >= 0)
        event_active(ch->resume_ev, 0, 0);
    return ch;
}

void chan_free(struct chan *ch)
{
    if (ch == NULL)
        return;
    if (ch->rbev)
        bufferevent_free(ch->rbev);
    if (ch->rfile >= 0)
        close(ch->rfile);
    close_wbev(ch);
    event_free(ch->resume_ev);
    free(ch);
}

int chan_send(struct chan *ch, struct sl_str line)
{
    if (ch->wbev == NULL || ch->closing_write)
        return -1;
    struct evbuffer *out = bufferevent_get_output(ch->wbev);
    wout_add(out, line.p, line.len);
    evbuffer_add(out, "\n", 1);
    if (ch->wfile >= 0)
        file_write_all(ch);
    return 0;
}

size_t chan_out_len(const struct chan *ch)
{
    return ch->wbev ? evbuffer_get_length(bufferevent_get_output(ch->wbev)) : 0;
}

void chan_pause(struct chan *ch, bool paused)
{
    if (ch->paused == paused || ch->read_done || ch->rbev == NULL)
        return;
    ch->paused = paused;
    if (paused) {
        bufferevent_disable(ch->rbev, EV_READ);
    } else {
        if (!ch->eof_pending && ch->rfile < 0)
            bufferevent_enable(ch->rbev, EV_READ);
        event_active(ch->resume_ev, 0, 0);
    }
}

void chan_stop_reading(struct chan *ch)
{
    ch->read_done = true;
    if (ch->rbev)
        bufferevent_disable(ch->rbev, EV_READ);
}

void chan_close_write(struct chan *ch)
{
    if (ch->wbev == NULL)
        return;
    ch->closing_write = true;
    if (evbuffer_get_length(bufferevent_get_output(ch->wbev)) == 0)
        close_wbev(ch);
}

void chan_flush_blocking(struct chan *ch, int timeout_ms)
{
    if (ch->wbev == NULL)
        return;
    struct evbuffer *out = bufferevent_get_output(ch->wbev);
    int fd = bufferevent_getfd(ch->wbev);
    /* A socket bufferevent keeps the start of its output frozen (only it may drain it), and
     * evbuffer_write on a frozen buffer writes nothing: thaw it for this last flush. */
    evbuffer_unfreeze(out, 1);
    while (evbuffer_get_length(out) > 0 && timeout_ms > 0) {
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        if (poll(&p, 1, 50) < 0 && errno != EINTR)
            break;
        timeout_ms -= 50;
        if (p.revents & (POLLERR | POLLHUP))
            break;
        if ((p.revents & POLLOUT) && evbuffer_write(out, fd) < 0 && errno != EAGAIN &&
            errno != EINTR)
            break;
    }
    evbuffer_freeze(out, 1);
}
