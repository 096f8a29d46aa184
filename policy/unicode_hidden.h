/* unicode_hidden.h: the code points that render as nothing or as a blank, or reorder the text
 * around them. One table for the two places that must not let such a character pass unseen:
 * a policy's tool names (policy_name.c) and the confirmation text (proxy/confirm.c, which
 * hides a few more on top). It lives in policy/ because the policy library builds without
 * proxy/ on its include path, while proxy/ can include policy headers. */
#ifndef SL_UNICODE_HIDDEN_H
#define SL_UNICODE_HIDDEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Code points lo..hi, both included. */
struct unicode_range {
    uint32_t lo, hi;
};

/* True when cp is in one of r[0..n), which must be sorted and non-overlapping. */
bool unicode_range_has(const struct unicode_range *r, size_t n, uint32_t cp);

/* True when cp is DEL, a C1 control, or a character that renders as nothing or as a blank, or
 * reorders what is displayed (zero width, bidi controls, spaces other than U+0020, fillers,
 * variation selectors, tags; unicode_hidden.c lists them). C0 controls are not in the set:
 * each caller deals with them as it must. */
bool unicode_hidden(uint32_t cp);

#endif /* SL_UNICODE_HIDDEN_H */
