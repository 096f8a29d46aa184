/* policy_regex.h: the cost bound on a policy regex, checked before regcomp, and the
 * back-references it refuses. Private to policy/.
 *
 * Why it exists: glibc's regcomp copies a repeated atom once per count ({m,n}: n copies, {m,}:
 * m + 1, '+': 2), nested repeats multiply, and so does its memory. The fuzzer found
 * "[a-z]+++...+" (60 '+') taking over 2 GiB before regcomp answered, and "((a{99}){99}){99}"
 * is as bad: one line of a policy (or of a SIGHUP reload) would get the proxy killed. So the
 * loader refuses a pattern whose copies, counted by this upper bound, exceed
 * POLICY_REGEX_MAX_COPIES, before regcomp sees it.
 *
 * Pure: no allocation, no I/O, one pass over the pattern (a group is walked once, its count
 * multiplies what it returns). */
#ifndef SL_POLICY_REGEX_H
#define SL_POLICY_REGEX_H

#include <stdbool.h>
#include <stddef.h>

#define POLICY_REGEX_MAX_COPIES 500u

/* True when regcomp(src, REG_EXTENDED) could copy atoms of src[0..len) more than
 * POLICY_REGEX_MAX_COPIES times. '*' and '?' copy nothing. A malformed interval is counted as
 * a literal (regcomp refuses it afterwards); "{,n}" counts as "{0,n}", as glibc reads it. */
bool policy_regex_too_large(const char *src, size_t len);

/* The offset of the first back-reference (\1 to \9) in src[0..len), or len when there is none.
 *
 * Why: POSIX ERE has no back-references, but glibc's regcomp(REG_EXTENDED) accepts them, and
 * its matcher backtracks on them: "(.*)\1" against a 30 KB value kept the event loop (every
 * client, /healthz too) for 87 s. A '\' in a bracket expression is itself ("[\1]" is '\' or
 * '1'), and "\\1" is an escaped backslash and a '1'; neither is a back-reference. */
size_t policy_regex_backref(const char *src, size_t len);

#endif /* SL_POLICY_REGEX_H */
