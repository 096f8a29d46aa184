/* redis_io.c: hiredis's event hooks (ac->ev) on libevent, written in batches without epoll_ctl.
 *
 * hiredis asks for events through five hooks: add/del read, add/del write, cleanup. It asks to
 * write after every command it queues; here that arms the flush, a timer of zero delay, instead
 * of asking epoll to report the socket writable (hiredis's own adapter: an epoll_ctl to ask, one
 * to stop asking, on every write). libevent runs due timers after the I/O callbacks of the next
 * pass, so a flush writes, in one write, the commands of the pass that armed it and of every
 * I/O callback of the next: Redis, whose one thread is the shared resource, wakes once for them
 * all. Measured (tests/bench/README.md): a fifth fewer reads by Redis per gated pair than both
 * hiredis's adapter and a flush in the same pass, and no epoll_ctl at all (1.9 a pair before).
 *
 * hiredis asks to write again from inside a write when the socket took only part of the
 * buffer; that request, and any before the connection is made, arms the one-shot write event,
 * as hiredis's own adapter does. Arming the flush there would write to a full socket at every
 * pass, a busy loop for as long as Redis does not read.
 *
 * The read event persists, so hiredis's request to read again after every read costs nothing.
 *
 * Ownership: the struct belongs to ac. hiredis calls cleanup when it frees ac, which may be
 * inside a call of redisAsyncHandleRead or redisAsyncHandleWrite made here (a lost
 * connection): nothing here touches io after those calls. */
#include "redis_io.h"

#include <stdbool.h>
#include <stdlib.h>

struct redis_io {
    redisAsyncContext *ac;
    struct event *rd;    /* persistent: the socket has something to read */
    struct event *wr;    /* one-shot: the socket can take more, or the connect finished */
    struct event *flush; /* a zero-delay timer: write after the next pass's I/O */
    bool writing;        /* in a write: a request to write again means the socket is full */
};

static const struct timeval zero = {0, 0};

static void write_now(struct redis_io *io)
{
    io->writing = true; /* cleared by add_read, which ends every write that keeps ac */
    redisAsyncHandleWrite(io->ac);
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    struct redis_io *io = arg;
    (void)fd;
    (void)what;
    redisAsyncHandleRead(io->ac);
}

/* wr (the socket can take more) and the flush timer alike */
static void on_write(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    write_now(arg);
}

static void add_read(void *arg)
{
    struct redis_io *io = arg;
    io->writing = false;
    event_add(io->rd, NULL); /* already pending: a no-op */
}

static void del_read(void *arg)
{
    struct redis_io *io = arg;
    event_del(io->rd);
}

static void add_write(void *arg)
{
    struct redis_io *io = arg;
    if (io->writing || !(io->ac->c.flags & REDIS_CONNECTED))
        event_add(io->wr, NULL);
    else if (!evtimer_pending(io->flush, NULL))
        evtimer_add(io->flush, &zero); /* once, however many commands come before it runs */
}

static void del_write(void *arg)
{
    struct redis_io *io = arg;
    event_del(io->wr);
}

/* hiredis's cleanup hook, also the undoing of a failed attach */
static void cleanup(void *arg)
{
    struct redis_io *io = arg;
    if (io->rd != NULL)
        event_free(io->rd);
    if (io->wr != NULL)
        event_free(io->wr);
    if (io->flush != NULL)
        event_free(io->flush); /* also cancels it */
    free(io);
}

int redis_io_attach(redisAsyncContext *ac, struct event_base *base)
{
    if (ac->ev.data != NULL)
        return REDIS_ERR;
    struct redis_io *io = calloc(1, sizeof(*io));
    if (io == NULL)
        return REDIS_ERR;
    io->ac = ac;
    io->rd = event_new(base, ac->c.fd, EV_READ | EV_PERSIST, on_readable, io);
    io->wr = event_new(base, ac->c.fd, EV_WRITE, on_write, io);
    io->flush = evtimer_new(base, on_write, io);
    /* wr waits for the non-blocking connect to finish */
    if (io->rd == NULL || io->wr == NULL || io->flush == NULL || event_add(io->rd, NULL) != 0 ||
        event_add(io->wr, NULL) != 0) {
        cleanup(io);
        return REDIS_ERR;
    }
    ac->ev.data = io;
    ac->ev.addRead = add_read;
    ac->ev.delRead = del_read;
    ac->ev.addWrite = add_write;
    ac->ev.delWrite = del_write;
    ac->ev.cleanup = cleanup;
    return REDIS_OK;
}
