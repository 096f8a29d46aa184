/* wout.c: direct writes at the end of a loop turn (see wout.h). */
#include "wout.h"

#include <event2/buffer.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "base.h"

static void on_turn_end(evutil_socket_t fd, short what, void *arg)
{
    struct wout *w = arg;
    (void)fd;
    (void)what;
    if (!w->direct)
        return;
    struct evbuffer *out = bufferevent_get_output(w->bev);
    if (evbuffer_get_length(out) == 0) { /* all sent at once (wout_send); see wout_kick */
        if (w->on_write)
            w->on_write(w->bev, w->arg);
        return;
    }
    /* A socket bufferevent keeps the start of its output frozen so that only it drains it;
     * while its write event is disabled, we are the one writer. */
    evbuffer_unfreeze(out, 1);
    (void)evbuffer_write(out, w->fd); /* errors: the bufferevent meets them */
    evbuffer_freeze(out, 1);
    size_t left = evbuffer_get_length(out);
    if (left > 0) {
        /* The kernel's buffer is full, or the write failed: the bufferevent writes the rest
         * when it can, or reports the error through the owner's event callback. */
        w->direct = false;
        bufferevent_enable(w->bev, EV_WRITE);
    }
    if (left <= w->low_water && w->on_write)
        w->on_write(w->bev, w->arg); /* last: it may detach w and free the bufferevent */
}

static void on_added(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    struct wout *w = arg;
    (void)buf;
    if (info->n_added > 0 && w->direct)
        event_active(&w->turn_end, EV_WRITE, 1); /* again while active: no effect */
}

void wout_attach(struct wout *w, struct bufferevent *bev, bufferevent_data_cb on_write,
                 size_t low_water, void *arg)
{
    struct evbuffer *out = bufferevent_get_output(bev);
    w->bev = bev;
    w->on_write = on_write;
    w->low_water = low_water;
    w->arg = arg;
    w->fd = bufferevent_getfd(bev);
    w->direct = false;
    event_assign(&w->turn_end, bufferevent_get_base(bev), -1, 0, on_turn_end, w);
    w->cb = evbuffer_add_cb(out, on_added, w);
    wout_written(w);
}

void wout_written(struct wout *w)
{
    if (w->bev == NULL || w->direct || evbuffer_get_length(bufferevent_get_output(w->bev)) > 0)
        return;
    /* The bufferevent deleted its write event when its output emptied, so this costs no
     * system call; it only keeps the next output from adding the event again. */
    bufferevent_disable(w->bev, EV_WRITE);
    w->direct = true;
}

/* Buys: the evbuffer chain's malloc and free, the output callbacks, the event activated for
 * the turn's end, writev's setup and the drain, about 1,100 instructions a message; two a
 * proxied HTTP call (callgrind, tests/bench). */
void wout_send(struct wout *w, struct bufferevent *bev, const char *p, size_t len)
{
    struct evbuffer *out = bufferevent_get_output(bev);
    if (w->bev == bev && w->direct && len > 0 && evbuffer_get_length(out) == 0) {
        ssize_t n = send(w->fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n == (ssize_t)len)
            return;
        /* The kernel took part (its buffer is full) or none: the rest is queued, and a failed
         * send is met again, and reported, by the write at the turn's end. */
        if (n > 0)
            p += n, len -= (size_t)n;
    }
    evbuffer_add(out, p, len);
}

void wout_kick(struct wout *w)
{
    if (w->bev != NULL && w->direct)
        event_active(&w->turn_end, EV_WRITE, 1);
}

void wout_detach(struct wout *w)
{
    if (w->bev == NULL)
        return;
    event_del(&w->turn_end);
    evbuffer_remove_cb_entry(bufferevent_get_output(w->bev), w->cb);
    w->bev = NULL;
    w->direct = false;
}

static void free_taken(const void *data, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    free((void *)data);
}

void wout_add(struct evbuffer *out, const char *p, size_t len)
{
    char *mem = sl_offer_take(p, len);
    if (mem == NULL || evbuffer_add_reference(out, mem, len, free_taken, NULL) != 0) {
        evbuffer_add(out, p, len); /* p is still valid: a failed reference frees nothing */
        free(mem);
    }
}
