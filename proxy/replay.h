/* replay.h: at-most-once for sealed states, in one process's memory: the table behind the memory
 * store (store_memory.c). A nonce is recorded before its call is forwarded; a second record of
 * the same nonce is a replay. Each entry may carry a note (what became of it: store.h's record),
 * the notes of all entries bounded together.
 *
 * The table keeps each nonce until the expiry it was recorded with (the store adds the result
 * retention to the state's), and refuses new records when full rather than forgetting old
 * ones. */
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
    enum replay_status (*note)(void *self, const uint8_t nonce[REPLAY_NONCE_LEN], uint64_t now,
                               struct sl_str note);
    bool (*lookup)(void *self, const uint8_t nonce[REPLAY_NONCE_LEN], uint64_t now,
                   struct sl_str *note);
    void (*forget)(void *self, const uint8_t nonce[REPLAY_NONCE_LEN], uint64_t now);
    void (*free)(void *self);
};

struct replay {
    const struct replay_ops *ops;
    void *self;
};

/* In-memory store holding at most max_entries unexpired nonces, and notes of at most
 * max_note_bytes in all. */
struct replay *replay_memory_new(size_t max_entries, size_t max_note_bytes);
enum replay_status replay_record(struct replay *r, const uint8_t nonce[REPLAY_NONCE_LEN],
                                 uint64_t exp, uint64_t now);
/* Replaces the note of nonce's live entry: REPLAY_FRESH, or REPLAY_ERROR when there is no such
 * entry or the note does not fit in what is left of max_note_bytes (the old note stays). */
enum replay_status replay_note(struct replay *r, const uint8_t nonce[REPLAY_NONCE_LEN],
                               uint64_t now, struct sl_str note);
/* true with *note (valid until the next change to r) when nonce has a live entry. */
bool replay_lookup(struct replay *r, const uint8_t nonce[REPLAY_NONCE_LEN], uint64_t now,
                   struct sl_str *note);
/* Drops nonce's live entry and its note, if there is one. Only for an entry just recorded whose
 * note did not fit (a record that exists without its note would read as something it is not:
 * a page with no question, a decision nobody made); never for a spent nonce, which must stay. */
void replay_forget(struct replay *r, const uint8_t nonce[REPLAY_NONCE_LEN], uint64_t now);
void replay_free(struct replay *r); /* NULL is a no-op */

#endif /* SL_REPLAY_H */
