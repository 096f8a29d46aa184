/* asks.h: approval fatigue. The questions sluice has put to each principal, so that
 *   - an identical question (same principal, tool and argument digest) still open is asked once:
 *     the same question and state are handed out again instead of stacking another;
 *   - a principal has at most max_open unanswered, unexpired questions;
 *   - and at most per_minute new questions in any 60 seconds.
 * Beyond a limit the call is refused with a clear message.
 *
 * One principal cannot crowd out another. Memory is bounded: at most ASKS_PRINCIPALS principals
 * have a question open or asked one in the last minute, and at most ASKS_MAX questions are open
 * in all. Each of those principals holds ASKS_RESERVED of the ASKS_MAX places whether it uses
 * them or not (ASKS_PRINCIPALS * ASKS_RESERVED == ASKS_MAX), so a flood of new principals is
 * refused (ASKS_PRINCIPALS) before it can take a place another principal may need, and nothing
 * is ever evicted: a pending question stays answerable until it expires. Questions beyond the
 * reserve (a policy with max_open above it) come from what no principal holds (else ASKS_FULL).
 * An answered or withdrawn question frees its place at once; it still counts toward the rate. */
#ifndef SL_ASKS_H
#define SL_ASKS_H

#include "base.h"

/* 16,384 questions open at once (issue 24: 10,000 calls held for a person in one process), for
 * about 4 MiB of fixed tables: a place is ~112 bytes, a principal ~1 KiB (its 60 s of rates). */
#define ASKS_MAX 16384
#define ASKS_PRINCIPALS 2048
#define ASKS_RESERVED 8     /* POLICY_OPEN_DEFAULT: the default policy never needs the pool */

enum asks_status {
    ASKS_OK,         /* ask a new question */
    ASKS_SAME,       /* an identical question is open: *question is it */
    ASKS_OPEN,       /* too many open questions */
    ASKS_RATE,       /* too many questions in the last minute */
    ASKS_FULL,       /* beyond its reserve, and the shared places are taken */
    ASKS_PRINCIPALS_FULL, /* a principal new to the table, and the table has no room for it */
};

struct asks;

struct asks *asks_new(void);
void asks_free(struct asks *a); /* NULL is a no-op */

/* Before asking principal about tool with these arguments at now (unix seconds). On ASKS_SAME
 * *question points at the stored question (result JSON), valid until the next call. */
enum asks_status asks_check(struct asks *a, struct sl_str principal, struct sl_str tool,
                            const uint8_t digest[32], uint64_t now, unsigned max_open,
                            unsigned per_minute, struct sl_str *question);
/* Records a question just asked (nonce of its state, its expiry, the result JSON sent). Call it
 * only after asks_check said ASKS_OK in the same second. */
void asks_record(struct asks *a, struct sl_str principal, struct sl_str tool,
                 const uint8_t digest[32], const uint8_t nonce[16], uint64_t now, uint64_t exp,
                 struct sl_str question);
/* asks_check and, on ASKS_OK, asks_record at once, hashing principal, tool and digest once.
 * Returns what asks_check would; on ASKS_SAME *same is the open question. */
enum asks_status asks_ask(struct asks *a, struct sl_str principal, struct sl_str tool,
                          const uint8_t digest[32], const uint8_t nonce[16], uint64_t now,
                          uint64_t exp, unsigned max_open, unsigned per_minute,
                          struct sl_str question, struct sl_str *same);
/* SipHash-2-4 of data[0..len) under key k (little-endian words, as the reference code). For the
 * table's chains; exposed for its test vectors. */
uint64_t asks_siphash(const uint8_t k[16], const void *data, size_t len);
/* The state with this nonce was answered: its question is no longer open. */
void asks_answered(struct asks *a, const uint8_t nonce[16]);
/* The call that asked was withdrawn (cancelled, or its client went away) before an answer: its
 * question is no longer open either (it still counts toward the rate of the last minute). */
void asks_withdrawn(struct asks *a, struct sl_str principal, struct sl_str tool,
                    const uint8_t digest[32]);

#endif /* SL_ASKS_H */
