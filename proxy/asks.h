/* asks.h: approval fatigue. The questions sluice has put to each principal, so that
 *   - an identical question (same principal, tool and argument digest) still open is asked once:
 *     the same question and state are handed out again instead of stacking another;
 *   - a principal has at most max_open unanswered, unexpired questions;
 *   - and at most per_minute new questions in any 60 seconds.
 * Beyond a limit the call is refused with a clear message. Memory is bounded (ASKS_MAX entries;
 * when full of live entries, new questions are refused, never the limits forgotten). */
#ifndef SL_ASKS_H
#define SL_ASKS_H

#include "base.h"

#define ASKS_MAX 4096

enum asks_status {
    ASKS_OK,        /* ask a new question */
    ASKS_SAME,      /* an identical question is open: *question is it */
    ASKS_OPEN,      /* too many open questions */
    ASKS_RATE,      /* too many questions in the last minute */
    ASKS_FULL,      /* the table is full */
};

struct asks;

struct asks *asks_new(void);
void asks_free(struct asks *a); /* NULL is a no-op */

/* Before asking principal about tool with these arguments at now (unix seconds). On ASKS_SAME
 * *question points at the stored question (result JSON), valid until the next call. */
enum asks_status asks_check(struct asks *a, struct sl_str principal, struct sl_str tool,
                            const uint8_t digest[32], uint64_t now, unsigned max_open,
                            unsigned per_minute, struct sl_str *question);
/* Records a question just asked (nonce of its state, its expiry, the result JSON sent). */
void asks_record(struct asks *a, struct sl_str principal, struct sl_str tool,
                 const uint8_t digest[32], const uint8_t nonce[16], uint64_t now, uint64_t exp,
                 struct sl_str question);
/* The state with this nonce was answered: its question is no longer open. */
void asks_answered(struct asks *a, const uint8_t nonce[16]);
/* The call that asked was withdrawn (cancelled, or its client went away) before an answer: its
 * question is no longer open either (it still counts toward the rate of the last minute). */
void asks_withdrawn(struct asks *a, struct sl_str principal, struct sl_str tool,
                    const uint8_t digest[32]);

#endif /* SL_ASKS_H */
