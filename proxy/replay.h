/* replay.h: at-most-once for sealed states. The gate records a state's nonce before it forwards
 * the call; a second record of the same nonce is a replay and is refused.
 *
 * An ops table, so a shared store (Redis, for replicas) can be added without touching the gate.
 * The in-memory store keeps each nonce until its state's expiry (after which the seal itself
 * refuses the state), and refuses new records when full rather than forgetting old ones. */
#ifndef SL_REPLAY_H
#define SL_REPLAY_H

#include "base.h"

#define REPLAY_NONCE_LEN 16

enum replay_status {
    REPLAY_FRESH = 0,   /* recorded now: the caller may proceed */
    REPLAY_SEEN = 1,    /* already recorded: refuse */
    REPLAY_ERROR = -1,  /* store full or unavailable: refuse (fail closed) */
};

struct replay_ops {
    enum replay_status (*record)(void *self, const uint8_t nonce[REPLAY_NONCE_LEN],
                                 uint64_t exp, uint64_t now);
    void (*free)(void *self);
    /* Every process that opens our states records into this same store (Redis): a state may be
     * spent at any of them. False for a store of one process's own. */
    bool shared;
};

struct replay {
    const struct replay_ops *ops;
    void *self;
};

/* In-memory store holding at most max_entries unexpired nonces. */
struct replay *replay_memory_new(size_t max_entries);
enum replay_status replay_record(struct replay *r, const uint8_t nonce[REPLAY_NONCE_LEN],
                                 uint64_t exp, uint64_t now);
void replay_free(struct replay *r); /* NULL is a no-op */
/* True iff the store is shared between processes (replay_ops.shared). */
bool replay_shared(const struct replay *r);

#endif /* SL_REPLAY_H */
