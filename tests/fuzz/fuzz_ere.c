/* fuzz_ere.c: policy/ere.c, the policy's own POSIX ERE matcher, against glibc's regcomp
 * (REG_EXTENDED, C locale) and re_match(...) == len, which is what the regex rule meant before.
 *
 * Input: the pattern, a NUL byte, then values separated by NUL bytes (so a value never holds
 * NUL: glibc's '.' refuses NUL, RE_DOT_NOT_NULL, where ere takes it, and sluice refuses such
 * values before any regex). The pattern may hold '\n'.
 *
 * Properties:
 * - ere never takes a pattern glibc refuses;
 * - a pattern glibc takes and ere refuses is refused for a reason ere.h documents;
 * - on a pattern both take, both give the same answer on every value; except where glibc reads
 *   a '\n' of the value as a line end for a '^' or '$' inside the pattern (which it does
 *   without REG_NEWLINE: "x$\n.*" matches "x\nyz"; POSIX and ere read '\n' as any byte). Such a
 *   difference is let through only if renaming '\n' to a byte no class tells from it and that
 *   appears nowhere else ('\v', '\f' or '\r') makes glibc give ere's answer, and ere's answer
 *   does not change (or if all three appear, when there is no telling);
 * - ere_match stays within ere_size() steps per byte and an exhausted budget says so.
 *
 * glibc is kept from its own blowups (it copies a repeated group once per count, its closures
 * grow fast with repeats inside repeats, and its DFA with both): patterns over 64 bytes, values
 * over 256 bytes, and patterns whose repeat counts multiply to more than a few hundred copies,
 * that put more than 2 repeats on one atom (stacked, "a???", or nested, "((a?)*)+": glibc's
 * regcomp doubles its time with each count of "^T**{n}", n = 16 takes 0.07 s), or that
 * repeat many groups ("#((((((((())))))))*|b*|b){,2}{8})" took glibc over 10 s) are not given
 * to glibc. ere is always run. */
#include "fuzz.h"

#include <regex.h>

#include "ere.h"

#define MAX_PATTERN 64
#define MAX_VALUE   256
#define MAX_VALUES  16
#define MAX_COPIES  400 /* repeat counts multiplied through nested groups, for glibc */
#define MAX_LEVELS  2   /* repeats stacked or nested on one atom, for glibc */
#define MAX_GROUP_COPIES 200 /* groups times MAX_COPIES' count: each group is two empty moves */

/* The refusals ere.h documents, by their messages. */
static bool documented(const char *msg)
{
    static const char *const kinds[] = {
        "a back-reference",
        "a GNU operator",
        "which POSIX ERE reads as the letter or digit itself",
        "a repeat after an anchor",
        "with nothing before it to repeat",
        "a malformed interval",
        "a repeat of a group that holds an anchor",
        "a range that ends with a class",
        "too large",
        "an interval count over",
        "groups nested too deep",
    };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strstr(msg, kinds[i]) != NULL)
            return true;
    return false;
}

#define CAP 100000u

static size_t capped(size_t n)
{
    return n > CAP ? CAP : n;
}

/* A repeat's weight for glibc: the copies it makes of what it repeats, at most, and one more
 * level of repeats stacked or nested (glibc's closure of the empty moves, which it computes
 * recursively, grows fast with those: 12 stacked '?' with two loops around them took it more
 * than 10 s). */
struct weight {
    size_t copies;
    unsigned levels;
};

/* Past the repeat operators at p ("*", "{2,5}", "+{3}"...); *k: the copies they make at most
 * (conservative: '*', '+' and '?' count 2, {m,n} counts its largest number plus one), *ops: how
 * many there are. */
static const char *skip_repeats(const char *p, const char *end, size_t *k, unsigned *ops)
{
    *k = 1;
    *ops = 0;
    for (; p < end; ++*ops) {
        size_t most = 0, cur = 0;
        if (*p == '*' || *p == '+' || *p == '?') {
            *k = capped(*k * 2);
            p++;
            continue;
        }
        if (*p != '{')
            break;
        for (p++; p < end && *p != '}'; p++) {
            cur = *p >= '0' && *p <= '9' ? capped(cur * 10 + (size_t)(*p - '0')) : 0;
            most = cur > most ? cur : most;
        }
        p += p < end;
        *k = capped(*k * (most + 1));
    }
    return p;
}

/* Past one atom at p: an escape, a bracket expression (roughly as regcomp reads it) or a byte. */
static const char *skip_atom(const char *p, const char *end)
{
    if (*p == '\\')
        return p + 2 < end ? p + 2 : end;
    if (*p != '[')
        return p + 1;
    p++;
    if (p < end && *p == '^')
        p++;
    if (p < end && *p == ']')
        p++;
    while (p < end && *p != ']') {
        if (end - p >= 2 && p[0] == '[' && (p[1] == '.' || p[1] == '=' || p[1] == ':')) {
            const char *close = NULL;
            for (const char *q = p + 2; q + 1 < end && close == NULL; q++)
                if (q[0] == p[1] && q[1] == ']')
                    close = q + 2;
            p = close ? close : end;
        } else {
            p++;
        }
    }
    return p < end ? p + 1 : end;
}

/* Past the ')' that closes the group whose contents start at p (or the end). */
static const char *group_end(const char *p, const char *end)
{
    int level = 1;
    while (p < end && level > 0) {
        level += *p == '(' ? 1 : *p == ')' ? -1 : 0;
        p = *p == '(' || *p == ')' ? p + 1 : skip_atom(p, end);
    }
    return p;
}

/* Roughly the heaviest atom for glibc's regcomp: the product of the repeat counts on it and on
 * the groups around it, and how many repeats those are. src holds at most MAX_PATTERN bytes. */
static struct weight heaviest(const char *src, size_t len)
{
    const char *p = src, *end = src + len;
    struct weight outer[MAX_PATTERN + 1], cur = { 1, 0 }, worst = { 1, 0 };
    size_t depth = 0, k;
    unsigned ops;
    while (p < end) {
        struct weight w;
        if (*p == '(') { /* the group weighs what its repeats make, empty or not: "()+++" */
            skip_repeats(group_end(p + 1, end), end, &k, &ops);
            outer[depth++] = cur;
            w = cur = (struct weight){ capped(cur.copies * k), cur.levels + ops };
            p++;
        } else if (*p == ')' && depth > 0) {
            w = cur = outer[--depth];
            p = skip_repeats(p + 1, end, &k, &ops); /* counted at its '(' */
        } else {
            p = skip_repeats(skip_atom(p, end), end, &k, &ops);
            w = (struct weight){ capped(cur.copies * k), cur.levels + ops };
        }
        worst.copies = w.copies > worst.copies ? w.copies : worst.copies;
        worst.levels = w.levels > worst.levels ? w.levels : worst.levels;
    }
    return worst;
}

/* Whether glibc may take long on the pattern: kept out of the comparison. */
static bool heavy_for_glibc(const char *src, size_t len)
{
    if (len > MAX_PATTERN)
        return true;
    struct weight w = heaviest(src, len);
    size_t groups = 0;
    for (size_t i = 0; i < len; i++)
        groups += src[i] == '(';
    return w.copies > MAX_COPIES || w.levels > MAX_LEVELS || groups * w.copies > MAX_GROUP_COPIES;
}

static bool glibc_match(regex_t *r, const char *s, size_t len)
{
    return re_match((struct re_pattern_buffer *)r, s, (regoff_t)len, 0, NULL) == (regoff_t)len;
}

/* A byte that C-locale classes cannot tell from '\n' (cntrl and space, not blank) and that
 * neither the pattern nor the value holds, or 0. */
static char stand_in(const char *pat, size_t pn, const char *v, size_t vn)
{
    for (const char *c = "\v\f\r"; *c; c++)
        if (memchr(pat, *c, pn) == NULL && memchr(v, *c, vn) == NULL)
            return *c;
    return 0;
}

/* The newline exception (see the top of the file): true if glibc's match and ere's no match
 * on v come from glibc's reading of '\n' as a line end. */
static bool newline_quirk(const char *pat, size_t pn, const struct ere *re, const char *v,
                          size_t vn)
{
    char rp[MAX_PATTERN + 1], rv[MAX_VALUE];
    if (memchr(v, '\n', vn) == NULL ||
        (memchr(pat, '^', pn) == NULL && memchr(pat, '$', pn) == NULL))
        return false;
    char c = stand_in(pat, pn, v, vn);
    if (c == 0) /* '\v', '\f' and '\r' all taken: no renaming tells, let it through */
        return true;
    for (size_t i = 0; i < pn; i++)
        rp[i] = pat[i] == '\n' ? c : pat[i];
    rp[pn] = '\0';
    for (size_t i = 0; i < vn; i++)
        rv[i] = v[i] == '\n' ? c : v[i];
    regex_t r;
    if (regcomp(&r, rp, REG_EXTENDED) != 0)
        return false;
    bool glibc = glibc_match(&r, rv, vn);
    regfree(&r);
    size_t budget = SIZE_MAX;
    return !glibc && ere_match(re, rv, vn, &budget) == ERE_NOMATCH;
}

/* ere on v, with the cost checks; returns ERE_MATCH or ERE_NOMATCH. */
static enum ere_result ere_checked(const struct ere *re, const char *v, size_t n)
{
    size_t budget = SIZE_MAX;
    enum ere_result r = ere_match(re, v, n, &budget);
    FUZZ_CHECK(r == ERE_MATCH || r == ERE_NOMATCH);
    size_t used = SIZE_MAX - budget;
    FUZZ_CHECK(used <= ere_size(re) * (n + 1));
    if (used > 0) { /* one step fewer runs out, and leaves nothing */
        size_t less = used - 1;
        FUZZ_CHECK(ere_match(re, v, n, &less) == ERE_OVER_BUDGET);
        FUZZ_CHECK(less == 0);
    }
    size_t exact = used;
    FUZZ_CHECK(ere_match(re, v, n, &exact) == r && exact == 0);
    return r;
}

static void show(const char *label, const char *p, size_t n)
{
    fprintf(stderr, "%s \"", label);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        fprintf(stderr, c >= 0x20 && c < 0x7f && c != '"' && c != '\\' ? "%c" : "\\x%02x", c);
    }
    fprintf(stderr, "\"\n");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data, *end = in + size;
    const char *nul = memchr(in, '\0', size);
    size_t pn = nul ? (size_t)(nul - in) : size;
    struct ere_error err;
    struct ere *re = ere_compile(in, pn, &err);
    const char *values = nul ? nul + 1 : end;

    if (re == NULL && documented(err.msg)) /* glibc's view is not needed: skip its cost */
        return 0;
    if (heavy_for_glibc(in, pn)) {
        /* no glibc: still run ere on the values */
        for (const char *v = values; re != NULL && v < end;) {
            const char *e = memchr(v, '\0', (size_t)(end - v));
            size_t n = e ? (size_t)(e - v) : (size_t)(end - v);
            ere_checked(re, v, n);
            v += n + 1;
        }
        ere_free(re);
        return 0;
    }
    char pat[MAX_PATTERN + 1];
    memcpy(pat, in, pn);
    pat[pn] = '\0';
    regex_t r;
    int rc = regcomp(&r, pat, REG_EXTENDED);
    if (re != NULL && rc != 0) {
        show("pattern", pat, pn);
        fprintf(stderr, "glibc refuses it (%d), ere takes it\n", rc);
        FUZZ_CHECK(!"ere takes a pattern glibc refuses");
    }
    if (re == NULL && rc == 0) {
        show("pattern", pat, pn);
        fprintf(stderr, "ere refuses it at %zu: %s\n", err.at, err.msg);
        FUZZ_CHECK(!"ere refuses a pattern glibc takes, for no documented reason");
    }
    size_t count = 0;
    for (const char *v = values; re != NULL && v < end && count < MAX_VALUES; count++) {
        const char *e = memchr(v, '\0', (size_t)(end - v));
        size_t n = e ? (size_t)(e - v) : (size_t)(end - v);
        if (n <= MAX_VALUE) {
            bool ours = ere_checked(re, v, n) == ERE_MATCH, theirs = glibc_match(&r, v, n);
            if (ours != theirs && !(theirs && newline_quirk(pat, pn, re, v, n))) {
                show("pattern", pat, pn);
                show("value", v, n);
                fprintf(stderr, "glibc %s, ere %s\n", theirs ? "matches" : "does not match",
                        ours ? "matches" : "does not match");
                FUZZ_CHECK(!"ere and glibc differ");
            }
        }
        v += n + 1;
    }
    if (rc == 0)
        regfree(&r);
    ere_free(re);
    return 0;
}
