/* argcheck.h: checks that a gated call's arguments read the same to every upstream as they read
 * to the person who approves them. Pure functions over a parsed tree (json.h); each is linear in
 * the size of the tree, but for a sort of each object's keys.
 *
 * A gated call whose arguments fail one is refused before anyone is asked (gate.c). */
#ifndef SL_ARGCHECK_H
#define SL_ARGCHECK_H

#include "json.h"

/* True iff no string in v, value or key, at any depth, holds U+0000. A C upstream reads such a
 * string only up to the NUL: "/tmp/ok\u0000/../../etc/passwd" would be shown whole and run
 * cut short (or the other way round). */
bool argcheck_no_nul(const struct json *v);

/* True iff no object in v, at any depth, has two keys equal under Unicode simple case folding
 * (fold.h) and canonical equivalence (NFD). Go's encoding/json matches keys by folding and keeps
 * the last match: of "size" and "\u017fize" the person would weigh one and the server would use
 * the other. "caf\u00e9" and "cafe\u0301" look alike to the person, and are one key to a peer
 * that compares strings by canonical equivalence (Swift's String and Dictionary). */
bool argcheck_keys_distinct(const struct json *v);

/* True iff every integer literal in v is within ±2^53, where every JSON peer reads the same
 * value. Beyond it, 9007199254740993 and 9007199254740992 hash alike as doubles while a
 * big-integer peer (Python, Go) would see two values: the person would approve one number and
 * another would run. Numbers with a fraction or an exponent are doubles to every peer. */
bool argcheck_integers_exact(const struct json *v);

#endif /* SL_ARGCHECK_H */
