/* chan.h: a channel of newline-delimited JSON-RPC over a read fd and a write fd (MCP stdio
 * framing, PROTOCOL.md §5.1). Used for the client on our stdin/stdout and for a child upstream.
 *
 * Framing: one message per line; a trailing "\r" is dropped. A line longer than SL_MAX_MESSAGE is
 * discarded up to its newline and reported once through on_oversize, with its first
 * CHAN_OVERSIZE_HEAD and last CHAN_OVERSIZE_TAIL bytes (whose reply it was may be read there: it
 * is never parsed whole), and reading goes on: one bad message never costs the next one. Backpressure: the owner pauses reading (chan_pause) while its
 * peer's output is above CHAN_HIGH_WATER, and on_drained fires when this channel's own output has
 * fallen below half of that. */
#ifndef SL_CHAN_H
#define SL_CHAN_H

#include <event2/event.h>

#include "base.h"

#define CHAN_HIGH_WATER (8u << 20)
#define CHAN_OVERSIZE_HEAD 1024
#define CHAN_OVERSIZE_TAIL 256

struct chan;

struct chan_cbs {
    void (*on_line)(struct chan *ch, struct sl_str line, void *arg);
    /* head, tail: the dropped line's first and last bytes (without its line break); valid
     * during the call only. */
    void (*on_oversize)(struct chan *ch, struct sl_str head, struct sl_str tail, void *arg);
    void (*on_eof)(struct chan *ch, const char *why, void *arg); /* read side ended */
    void (*on_drained)(struct chan *ch, void *arg);              /* output fell below low water */
    /* The write side failed (the peer stopped reading). Unset: the conversation ends there
     * (on_eof). Set: reading goes on to the read side's own end. */
    void (*on_write_closed)(struct chan *ch, void *arg);
};

/* Takes ownership of both fds (closed by chan_free). They are made non-blocking. */
struct chan *chan_new(struct event_base *base, int rfd, int wfd, const struct chan_cbs *cbs,
                      void *arg);
void chan_free(struct chan *ch); /* NULL is a no-op */

/* Queues line + "\n". Returns -1 if the write side is closed. */
int chan_send(struct chan *ch, struct sl_str line);
size_t chan_out_len(const struct chan *ch);
void chan_pause(struct chan *ch, bool paused);
/* Stops reading for good (no more callbacks for input). */
void chan_stop_reading(struct chan *ch);
/* Closes the write fd once everything queued has been written. */
void chan_close_write(struct chan *ch);
/* Tries to write everything queued right now, blocking up to timeout_ms. For exit paths. */
void chan_flush_blocking(struct chan *ch, int timeout_ms);

#endif /* SL_CHAN_H */
