/* canon.h: RFC 8785 (JCS) canonical JSON of a parsed value, and its SHA-256.
 *
 * The digest of the canonical arguments is what a confirmation binds: a client may re-serialize the
 * arguments between rounds (key order, whitespace, 1.0 vs 1), and the same value must give the same
 * digest, while any other value must not. Pure: no I/O, no allocation beyond the output buffer. */
#ifndef SL_CANON_H
#define SL_CANON_H

#include "json.h"

#define CANON_DIGEST_LEN 32

/* Appends the canonical form of v to out. Returns 0, or -1 if v has no canonical form (a number
 * that is not a finite IEEE-754 double, e.g. 1e400; invalid UTF-8 in a string or key). On -1 the
 * contents appended to out are unspecified. Object members are sorted by their keys compared as
 * UTF-16 code units (RFC 8785 §3.2.3); numbers use the ECMAScript Number::toString form (§3.2.2.3);
 * strings use the JSON.stringify escapes (§3.2.2.2). */
int canon_write(struct sl_buf *out, const struct json *v);

/* SHA-256 of canon_write(v). Returns 0, or -1 as canon_write does. */
int canon_digest(const struct json *v, uint8_t out[CANON_DIGEST_LEN]);

/* The ECMAScript Number::toString form of d (shortest round-trip digits). d must be finite.
 * -0 gives "0". Writes at most 32 bytes including the NUL into buf. */
void canon_number(double d, char buf[32]);

#endif /* SL_CANON_H */
