/* redis_io.h: a hiredis asynchronous context on sluice's libevent loop.
 *
 * In place of hiredis's own libevent adapter (adapters/libevent.h), which re-arms a one-shot
 * read event after every read and asks epoll to report the socket writable before every write:
 * 1.9 epoll_ctl calls a gated pair (three commands), measured. Here the read event persists,
 * and the commands are written in batches by a zero-delay timer, after the I/O callbacks of the
 * next loop pass (redis_io.c says why). Only a write the socket could not take whole, and the
 * connect, wait for the socket to report writable. */
#ifndef SLUICE_REDIS_IO_H
#define SLUICE_REDIS_IO_H

#include <event2/event.h>
#include <hiredis/async.h>

/* Attaches ac to base, as redisLibeventAttach does. REDIS_OK, or REDIS_ERR when ac already has
 * events attached or memory ran out. The events are freed with ac (redisAsyncFree, or when
 * hiredis frees it after a lost connection). */
int redis_io_attach(redisAsyncContext *ac, struct event_base *base);

#endif
