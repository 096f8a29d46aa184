/* namefold.c: tool names compared as a loose server compares them (why: namefold.h). */
#include "namefold.h"

#include <string.h>

#include "fold.h"
#include "unicode_hidden.h"

/* What a loose reader drops: whatever renders as nothing or as a blank. */
static bool dropped(uint32_t cp)
{
    return cp <= 0x20 || unicode_hidden(cp);
}

/* The next code point of s from *i that is not dropped, folded, into *cp; false at the end. A
 * byte that starts no well-formed sequence stands for itself, above every code point, so it
 * equals only the same byte. */
static bool next_kept(struct sl_str s, size_t *i, uint32_t *cp)
{
    while (*i < s.len) {
        unsigned char c = (unsigned char)s.p[*i];
        size_t n = c < 0x80 ? 1 : c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
        uint32_t u = 0x110000u + c;
        if (n > 1 && (n > s.len - *i || !sl_utf8_valid(s.p + *i, n)))
            n = 0;
        if (n == 1)
            u = c;
        else if (n > 1)
            sl_utf8_decode(s.p + *i, n, &u);
        *i += n ? n : 1;
        if (u < 0x110000u && dropped(u))
            continue;
        *cp = u < 0x110000u ? fold_rune(u) : u;
        return true;
    }
    return false;
}

bool namefold_equal(struct sl_str a, struct sl_str b)
{
    size_t i = 0, j = 0;
    for (;;) {
        uint32_t x = 0, y = 0;
        bool more_a = next_kept(a, &i, &x), more_b = next_kept(b, &j, &y);
        if (!more_a || !more_b)
            return more_a == more_b;
        if (x != y)
            return false;
    }
}

size_t namefold_policy_variant(const struct policy *p, struct sl_str tool)
{
    /* One pass, no lookup of its own: the gate asks only after its lookup found no entry, and a
     * name the policy holds exactly is its own wherever it stands in the list. */
    size_t n = policy_tool_count(p), first = n;
    for (size_t k = 0; k < n; k++) {
        struct sl_str name = sl_str_c(policy_tool_name(p, k));
        if (sl_str_eq(name, tool))
            return n;
        if (first == n && namefold_equal(tool, name))
            first = k;
    }
    return first;
}
