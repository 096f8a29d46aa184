/* namefold.c: tool names compared as a loose server compares them (why: namefold.h). */
#include "namefold.h"

#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "unicode_hidden.h"

/* Code points lo..hi read as n code points (namefold_table.h, gen_namefold.py): none (a
 * combining mark), out[0] (same) or out[0] + (cp - lo), or out[0..n) for one code point. */
struct namefold_range {
    uint32_t lo, hi;
    uint8_t n, same;
    uint16_t out[3];
};

#include "namefold_table.h"

/* What a loose reader drops: whatever renders as nothing or as a blank, and the separators a
 * server that ignores them ("delete-file", "deletefile" for delete_file) skips. */
static bool dropped(uint32_t cp)
{
    if (cp < 0x80) /* no table search for ASCII: of it, unicode_hidden holds DEL alone */
        return cp <= 0x20 || cp == 0x7F || cp == '_' || cp == '-' || cp == '.';
    return unicode_hidden(cp);
}

/* The range of namefold_ranges holding cp, or NULL. */
static const struct namefold_range *find_range(uint32_t cp)
{
    size_t lo = 0, hi = SL_ARRAY_LEN(namefold_ranges);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (namefold_ranges[mid].hi < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < SL_ARRAY_LEN(namefold_ranges) && namefold_ranges[lo].lo <= cp
               ? &namefold_ranges[lo] : NULL;
}

/* A name read one code point of its key at a time: the code points one character of the name
 * stands for wait in pend (at most three: "ﬃ" is "ffi"). No allocation; each character of the
 * name costs one table lookup. */
struct reader {
    struct sl_str s;
    size_t i;
    uint32_t pend[3];
    uint8_t np, ip;
};

/* Puts what code point u reads as into r->pend: the table's code points, or u case folded (and
 * what that reads as, for a folding newer than the table). */
static void expand(struct reader *r, uint32_t u)
{
    const struct namefold_range *g = find_range(u);
    if (g == NULL) {
        uint32_t f = fold_rune(u);
        g = f != u ? find_range(f) : NULL;
        if (g == NULL) {
            r->pend[0] = f, r->np = 1, r->ip = 0;
            return;
        }
        u = f;
    }
    r->np = g->n, r->ip = 0;
    for (uint8_t k = 0; k < g->n; k++)
        r->pend[k] = g->out[k];
    if (g->n == 1 && !g->same)
        r->pend[0] += u - g->lo;
}

/* The next code point of r's key into *cp; false at the end. A byte that starts no well-formed
 * sequence stands for itself, above every code point, so it equals only the same byte. */
static bool next_kept(struct reader *r, uint32_t *cp)
{
    for (;;) {
        while (r->ip < r->np) {
            uint32_t u = r->pend[r->ip++];
            if (!dropped(u)) {
                *cp = u;
                return true;
            }
        }
        if (r->i >= r->s.len)
            return false;
        unsigned char c = (unsigned char)r->s.p[r->i];
        size_t n = c < 0x80 ? 1 : c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
        if (n > 1 && (n > r->s.len - r->i || !sl_utf8_valid(r->s.p + r->i, n)))
            n = 0;
        r->i += n ? n : 1;
        if (n == 0) {
            *cp = 0x110000u + c;
            return true;
        }
        if (n == 1) { /* ASCII, nearly every name: no lookup */
            if (dropped(c))
                continue;
            *cp = c >= 'A' && c <= 'Z' ? c + 32u : c;
            return true;
        }
        uint32_t u;
        sl_utf8_decode(r->s.p + r->i - n, n, &u);
        if (dropped(u))
            continue;
        expand(r, u);
    }
}

int namefold_compare(struct sl_str a, struct sl_str b)
{
    struct reader ra = { .s = a }, rb = { .s = b };
    for (;;) {
        uint32_t x = 0, y = 0;
        bool more_a = next_kept(&ra, &x), more_b = next_kept(&rb, &y);
        if (!more_a || !more_b)
            return (int)more_a - (int)more_b;
        if (x != y)
            return x < y ? -1 : 1;
    }
}

bool namefold_equal(struct sl_str a, struct sl_str b)
{
    return namefold_compare(a, b) == 0;
}

struct named {
    struct sl_str name;
    size_t k; /* its index in the policy */
};

/* qsort's order: by key, then in file order. */
static int by_key(const void *x, const void *y)
{
    const struct named *a = x, *b = y;
    int c = namefold_compare(a->name, b->name);
    return c ? c : (a->k > b->k) - (a->k < b->k);
}

static struct sl_str tool_name(const struct policy *p, size_t k)
{
    return sl_str_c(policy_tool_name(p, k));
}

/* The policy's tools (their indexes) by key, then in file order: sorted on first use and kept
 * with the policy. A policy may name POLICY_MAX_TOOLS tools, and a name it does not hold is
 * looked up on every call (the gate) and for every listed tool (hide_denied): a comparison
 * with each tool cost 59 us a call at 1,000 tools named alike. n > 0. */
static const uint32_t *loose_order(const struct policy *p, size_t n)
{
    const uint32_t *kept = policy_tools_view(p);
    if (kept != NULL)
        return kept;
    struct named *v = sl_xmalloc(n * sizeof(*v));
    for (size_t k = 0; k < n; k++)
        v[k] = (struct named){ tool_name(p, k), k };
    qsort(v, n, sizeof(*v), by_key);
    uint32_t *order = sl_xmalloc(n * sizeof(*order));
    for (size_t k = 0; k < n; k++)
        order[k] = (uint32_t)v[k].k;
    free(v);
    policy_set_tools_view(p, order);
    return order;
}

size_t namefold_policy_variant(const struct policy *p, struct sl_str tool)
{
    size_t n = policy_tool_count(p);
    if (n == 0)
        return 0;
    const uint32_t *o = loose_order(p, n);
    size_t lo = 0, hi = n; /* the first tool whose key is not below tool's */
    int at_hi = 1;         /* how the tool at hi compares with tool */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = namefold_compare(tool_name(p, o[mid]), tool);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid, at_hi = c;
    }
    if (at_hi != 0)
        return n; /* nearly every call: a name that reads as none of the policy's */
    /* Of the tools whose key is tool's, the first in the file; none when one of them is tool
     * itself (a name the policy holds exactly is its own, whichever stands first). */
    size_t first = n;
    for (size_t i = lo; i < n && (i == lo || namefold_equal(tool_name(p, o[i]), tool)); i++) {
        if (sl_str_eq(tool_name(p, o[i]), tool))
            return n;
        if (o[i] < first)
            first = o[i];
    }
    return first;
}

size_t namefold_policy_collisions(const struct policy *p, namefold_collision_cb *cb, void *arg)
{
    size_t n = policy_tool_count(p), found = 0;
    if (n < 2)
        return 0;
    const uint32_t *o = loose_order(p, n);
    for (size_t k = 1, first = 0; k < n; k++) {
        if (!namefold_equal(tool_name(p, o[first]), tool_name(p, o[k]))) {
            first = k;
            continue;
        }
        found++;
        if (cb)
            cb(arg, o[first], o[k]);
    }
    return found;
}
