/* shares.h: how many bytes and pieces each principal holds of a budget shared by all, each piece
 * until its own expiry, so that one principal cannot take more than its share of either (the
 * memory store's page questions, store_memory.c: their bytes, and their entries in a table of
 * bounded size). It only counts: what the bytes are is kept elsewhere, under the same expiry.
 *
 * Memory is bounded by what is held: a principal is known only while it holds bytes, and a
 * piece is one small entry in a heap ordered by expiry, dropped (its bytes given back) by the
 * first shares_fits or shares_take at or after its expiry. */
#ifndef SL_SHARES_H
#define SL_SHARES_H

#include "base.h"

struct shares;

/* Each principal may hold at most cap bytes, in at most max_pieces pieces (0: none). NULL when
 * the random key cannot be had. */
struct shares *shares_new(size_t cap, size_t max_pieces);
void shares_free(struct shares *sh); /* NULL is a no-op */

/* Whether principal may take one piece of bytes more at now: what it holds (pieces expired by
 * now given back first) plus bytes is at most cap, and it holds fewer than max_pieces pieces. */
bool shares_fits(struct shares *sh, struct sl_str principal, size_t bytes, uint64_t now);
/* principal holds bytes more until exp (> now). Call it only when shares_fits said so, at the
 * same now. */
void shares_take(struct shares *sh, struct sl_str principal, size_t bytes, uint64_t exp,
                 uint64_t now);
/* What principal holds at now (for tests). */
size_t shares_held(struct shares *sh, struct sl_str principal, uint64_t now);

#endif /* SL_SHARES_H */
