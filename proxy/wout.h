/* wout.h: writes a plain socket's or pipe's bufferevent output at the end of the loop turn that
 * queued it, instead of waiting for the poller to say the descriptor is writable.
 *
 * libevent's socket bufferevent adds its write event when output is queued and deletes it once
 * that output is written: two epoll_ctl calls and one more loop turn for every message, four
 * calls per proxied request (half of sluice's system calls, where nginx makes none). Nearly every
 * message fits in the kernel's buffer at once. So while a wout is attached, the bufferevent's
 * write event stays disabled; what a loop turn queued is written with one writev when the turn's
 * callbacks are done (so a head and a body queued apart still go out together), and only what
 * the kernel does not take is left to the bufferevent, which writes it when it can and reports
 * errors through its event callback as before. A message built whole (an HTTP response, an
 * upstream request) skips even that: wout_send() hands it to the kernel at once when nothing is
 * queued before it, so it never becomes an evbuffer chain.
 *
 * The owner's write callback is called after a direct write as the bufferevent would call it
 * (output at or below its low water mark), and must call wout_written() itself, which returns
 * the bufferevent to direct writing once its output is empty. Not for TLS bufferevents: their
 * bytes must go through OpenSSL. */
#ifndef SL_WOUT_H
#define SL_WOUT_H

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <stdbool.h>

struct wout {
    struct bufferevent *bev;
    struct evbuffer_cb_entry *cb;
    struct event turn_end;       /* activated when output is queued; writes it */
    bufferevent_data_cb on_write;
    size_t low_water;            /* on_write fires at or below this, as the bufferevent's does */
    void *arg;
    evutil_socket_t fd;          /* bev's, looked up once */
    bool direct;                 /* the bufferevent's write event is disabled; we write */
};

/* Attaches to bev (connected, plain). on_write (may be NULL) and arg are the owner's bufferevent
 * write callback and argument; low_water is the bufferevent's write low water mark. */
void wout_attach(struct wout *w, struct bufferevent *bev, bufferevent_data_cb on_write,
                 size_t low_water, void *arg);
/* Call from the owner's bufferevent write callback. */
void wout_written(struct wout *w);
/* Detaches (before bufferevent_free); a wout never attached (zeroed) is a no-op. */
void wout_detach(struct wout *w);

/* Sends p[0..len) to bev's peer: at once, with one send(), when w is attached to bev, writing
 * directly, and nothing is queued before it (the usual case: a whole response or request); the
 * rest, or all of it otherwise (a TLS bufferevent, output still queued), is appended to the
 * output as before. The owner's write callback is not called for bytes sent at once: an owner
 * that waits for its output to drain (to close after it) calls wout_kick(). */
void wout_send(struct wout *w, struct bufferevent *bev, const char *p, size_t len);
/* Has the owner's write callback called at the end of this loop turn (after any queued output
 * is written), as if output had drained. */
void wout_kick(struct wout *w);

/* Appends p[0..len) to out. When those are exactly the bytes of an offered buffer (sl_offer,
 * base.h), out takes that memory by reference and frees it once written, instead of copying. */
void wout_add(struct evbuffer *out, const char *p, size_t len);

#endif
