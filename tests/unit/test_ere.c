/* test_ere.c: policy/ere.c, the policy's own POSIX ERE matcher, against glibc's.
 *
 * - Differential: a seeded PRNG builds random patterns from ERE tokens (well-formed ones and
 *   deliberately broken ones) and random values over a small alphabet. The reference is what the
 *   regex rule meant before ere: glibc regcomp(REG_EXTENDED) in the C locale and
 *   re_match(...) == len. Where both take a pattern they must agree on every value; ere must
 *   never take a pattern glibc refuses; where glibc takes one and ere refuses it, the refusal
 *   must be one ere.h documents.
 * - Tables: refusals with their offsets, and patterns with values that must (not) match.
 * - Cost: steps taken from the budget grow linearly with the value, and stay within
 *   ere_size() per byte; a budget that runs out says so and is left at 0.
 * - ERE_MAX_PROGRAM: patterns right at the limit and one instruction over it.
 *
 * The process stays in the C locale (nothing here calls setlocale), which is the locale the rule
 * is defined in. */
#ifndef _GNU_SOURCE /* re_match (the build defines it) */
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ere.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG_BUDGET ((size_t)1 << 40)

/* ===== a deterministic PRNG (xorshift64*) ===== */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32) % n;
}

/* ===== helpers ===== */

static void print_escaped(const char *label, const char *p, size_t len)
{
    print_error("%s \"", label);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"')
            print_error("%c", c);
        else
            print_error("\\x%02x", c);
    }
    print_error("\"");
}

static enum ere_result ere_run(const struct ere *re, const char *s, size_t len)
{
    size_t budget = BIG_BUDGET;
    return ere_match(re, s, len, &budget);
}

/* glibc's answer, as the rule used it: the longest match at offset 0 is the whole value. */
static bool glibc_match(regex_t *r, const char *s, size_t len)
{
    return re_match((struct re_pattern_buffer *)r, s, (regoff_t)len, 0, NULL) == (regoff_t)len;
}

/* The refusals ere.h documents, recognised by their messages. */
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
};
#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

/* Which of kinds msg is, or N_KINDS for none. */
static size_t documented_refusal(const char *msg)
{
    size_t i = 0;
    while (i < N_KINDS && strstr(msg, kinds[i]) == NULL)
        i++;
    return i;
}

/* ===== the differential test ===== */

/* Tokens of a pattern: atoms and repeats, then raw pieces that make broken patterns (or
 * patterns only glibc takes). Groups nest at most 3 deep, so glibc's regcomp stays fast. */
static const char *const atoms[] = {
    "a", "b", "-", ".", "a", "b", "[ab]", "[^a]", "[a-c]", "[]a]", "[a-]", "[[:alpha:]]",
    "[[:digit:]]", "[[.a.]-c]", "[[=a=]]", "\\.", "\\*", "\\\\", "\\(", "\\)", "\\[", "\\{",
    "\\|", "\\^", "\\$", "]", "}", "^", "$", "\xe9", "[^\n]", " ", "[.]", "[-a]", "\n",
    "[[:space:]]", "[[:cntrl:]]", "[[:punct:]]", "[[:upper:]]", "[^[:alnum:]]", "[\x80-\xff]",
    "[a\n]", "\\\n", "[[.-.]]", "[--a]", "[[.].]]", "\\}", "\\]", "\\-", "\\\xe9", "[*--]",
};
static const char *const repeats[] = {
    "*", "+", "?", "{0}", "{1}", "{2}", "{1,2}", "{,2}", "{2,}", "{0,0}", "{0,1}", "{3}", "{,}",
    "{0,}",
};
static const char *const raw[] = {
    "(", ")", "|", "*", "+", "?", "{", "[", "\\", "{1", "{,}", "{2,1}", "[a", "\\1", "\\w",
    "\\d", "[z-a]", "[a-c-e]", "[a-[=c=]]", "[[:alpha:]-c]", "[[:nope:]]", "[[.ab.]]", "{ 1}",
    "{1,2,3}", "[]", "[^]", "[[.", "[[:alpha:", "(*)", "{1\\,2}", "[a-c-]", "[[=a=]-]", "[[..]]",
    "\\<", "\\`", "[[:alpha:]-]",
};

struct pat {
    char s[256];
    size_t n;
};

static void put(struct pat *p, const char *tok)
{
    size_t n = strlen(tok);
    if (p->n + n < sizeof(p->s)) {
        memcpy(p->s + p->n, tok, n);
        p->n += n;
        p->s[p->n] = '\0';
    }
}

static void gen_alternation(struct pat *p, unsigned depth);

static void gen_piece(struct pat *p, unsigned depth)
{
    uint32_t k = rnd(20);
    if (k < 3 && depth < 3) {
        put(p, "(");
        gen_alternation(p, depth + 1);
        put(p, ")");
    } else if (k == 3) {
        put(p, raw[rnd(sizeof(raw) / sizeof(raw[0]))]);
    } else {
        put(p, atoms[rnd(sizeof(atoms) / sizeof(atoms[0]))]);
    }
    if (rnd(3) == 0)
        put(p, repeats[rnd(sizeof(repeats) / sizeof(repeats[0]))]);
    if (rnd(12) == 0)
        put(p, repeats[rnd(sizeof(repeats) / sizeof(repeats[0]))]);
}

static void gen_alternation(struct pat *p, unsigned depth)
{
    for (;;) {
        uint32_t n = rnd(4);
        for (uint32_t i = 0; i < n; i++)
            gen_piece(p, depth);
        if (rnd(4) != 0)
            return;
        put(p, "|");
    }
}

static void gen_pattern(struct pat *p)
{
    p->n = 0;
    p->s[0] = '\0';
    if (rnd(4) == 0) { /* a flat run of any tokens: mostly broken patterns */
        uint32_t n = 1 + rnd(6);
        for (uint32_t i = 0; i < n; i++) {
            uint32_t k = rnd(3);
            put(p, k == 0 ? atoms[rnd(sizeof(atoms) / sizeof(atoms[0]))]
                   : k == 1 ? repeats[rnd(sizeof(repeats) / sizeof(repeats[0]))]
                            : raw[rnd(sizeof(raw) / sizeof(raw[0]))]);
        }
        return;
    }
    gen_alternation(p, 0);
}

static size_t gen_value(char *v, size_t max)
{
    static const char alphabet[] = { 'a', 'b', 'c', '-', '.', '1', 'A', '\n', ' ', '\xe9',
                                     'a', 'b', ']', '\x01' };
    size_t n = rnd((uint32_t)max + 1);
    for (size_t i = 0; i < n; i++)
        v[i] = alphabet[rnd(sizeof(alphabet))];
    return n;
}

#define N_PATTERNS 25000
#define N_VALUES   40

struct tally {
    unsigned both, neither, glibc_only, matches, values;
    unsigned newline_quirk; /* glibc's '\n' as a line end: see renamed_no_match() */
    unsigned by_kind[N_KINDS]; /* ere's documented refusals of patterns glibc takes */
};

/* pattern and value with every '\n' turned into '\r': a renaming of one byte to another that no
 * class of the C locale tells apart (both are cntrl and space only), and that the generator
 * never writes itself */
static void rename_newlines(char *dst, const char *src, size_t len)
{
    for (size_t i = 0; i < len; i++)
        dst[i] = src[i] == '\n' ? '\r' : src[i];
}

/* Whether the pattern and value, renamed, match neither in glibc nor in ere. glibc reads '\n'
 * as a line end for a '$' that a byte follows and a '^' that a byte precedes, even without
 * REG_NEWLINE (its DFA moves to a "newline" context on every '\n': "a$\nb" matches "a\nb",
 * "x$\n.*" matches "x\nyz"); POSIX and ere read '\n' as any byte. Renamed, the difference goes:
 * a glibc match that ere does not share is that reading when this holds. */
static bool renamed_no_match(const struct pat *p, const char *v, size_t n)
{
    char src[sizeof(p->s)], val[16];
    struct ere_error err;
    regex_t r;
    rename_newlines(src, p->s, p->n + 1);
    rename_newlines(val, v, n);
    struct ere *re = ere_compile(src, p->n, &err);
    assert_non_null(re);
    assert_int_equal(regcomp(&r, src, REG_EXTENDED), 0);
    bool none = !glibc_match(&r, val, n) && ere_run(re, val, n) == ERE_NOMATCH;
    regfree(&r);
    ere_free(re);
    return none;
}

static bool differ_one(const struct pat *p, struct tally *t)
{
    struct ere_error err;
    regex_t r;
    struct ere *re = ere_compile(p->s, p->n, &err);
    int rc = regcomp(&r, p->s, REG_EXTENDED);
    bool ok = true;

    if (re != NULL && rc != 0) {
        print_escaped("ere takes a pattern glibc refuses:", p->s, p->n);
        print_error(" (glibc error %d)\n", rc);
        ok = false;
    } else if (re == NULL && rc != 0) {
        t->neither++;
    } else if (re == NULL) {
        size_t kind = documented_refusal(err.msg);
        if (kind == N_KINDS) {
            print_escaped("ere refuses a pattern glibc takes, for no documented reason:", p->s,
                          p->n);
            print_error(" at %zu: %s\n", err.at, err.msg);
            ok = false;
        } else {
            t->by_kind[kind]++;
        }
        t->glibc_only++;
    } else {
        t->both++;
        for (unsigned i = 0; i < N_VALUES && ok; i++) {
            char v[16];
            size_t n = gen_value(v, 10);
            enum ere_result got = ere_run(re, v, n);
            bool want = glibc_match(&r, v, n);
            t->values++;
            t->matches += want;
            if (got == (want ? ERE_MATCH : ERE_NOMATCH))
                continue;
            if (want && got == ERE_NOMATCH && memchr(v, '\n', n) != NULL &&
                renamed_no_match(p, v, n)) {
                t->newline_quirk++;
                continue;
            }
            print_escaped("pattern", p->s, p->n);
            print_escaped(", value", v, n);
            print_error(": glibc %s, ere %d\n", want ? "matches" : "does not match", got);
            ok = false;
        }
    }
    if (rc == 0)
        regfree(&r);
    ere_free(re);
    return ok;
}

/* ERE_TEST_PATTERNS and ERE_TEST_SEED run the same test longer or elsewhere, by hand. */
static unsigned long env_or(const char *name, unsigned long dflt)
{
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? strtoul(v, NULL, 0) : dflt;
}

static void test_differential(void **state)
{
    (void)state;
    struct tally t = { 0 };
    unsigned failures = 0;
    unsigned long n_patterns = env_or("ERE_TEST_PATTERNS", N_PATTERNS);
    rng_state = env_or("ERE_TEST_SEED", 0x5eed5eed12345678ul);
    if (rng_state == 0) /* xorshift's one stuck state */
        rng_state = 1;
    for (unsigned long i = 0; i < n_patterns && failures < 20; i++) {
        struct pat p;
        gen_pattern(&p);
        failures += !differ_one(&p, &t);
    }
    print_message("ere vs glibc: %u patterns both take (%u values, %u matching), %u both refuse, "
                  "%u only glibc takes; %u values differ by glibc's newline anchors\n", t.both,
                  t.values, t.matches, t.neither, t.glibc_only, t.newline_quirk);
    for (size_t k = 0; k < N_KINDS; k++)
        print_message("  ere refuses, glibc takes: %5u %s\n", t.by_kind[k], kinds[k]);
    assert_int_equal(failures, 0);
    /* the generator must exercise all three cases, and matches as well as non-matches */
    assert_true(t.both > n_patterns / 3);
    assert_true(t.neither > n_patterns / 20);
    assert_true(t.glibc_only > n_patterns / 100);
    assert_true(t.matches > t.values / 20 && t.matches < t.values - t.values / 20);
}

/* ===== tables ===== */

static const struct {
    const char *src;
    size_t len; /* 0: strlen */
    size_t at;
    const char *msg; /* a substring of err.msg */
} refused[] = {
    { "\\1", 0, 0, "back-reference" },
    { "(a)\\1", 0, 3, "back-reference" },
    { "\\w", 0, 0, "GNU operator" },
    { "ab\\b", 0, 2, "GNU operator" },
    { "a\\<", 0, 1, "GNU operator" },
    { "a\\'", 0, 1, "GNU operator" },
    { "\\d", 0, 0, "letter or digit" },
    { "x\\n", 0, 1, "letter or digit" },
    { "\\0", 0, 0, "letter or digit" },
    { "*a", 0, 0, "nothing before it" },
    { "a|*b", 0, 2, "nothing before it" },
    { "(+a)", 0, 1, "nothing before it" },
    { "{1}", 0, 0, "nothing before it" },
    { "^*", 0, 1, "after an anchor" },
    { "a$+", 0, 2, "after an anchor" },
    { "x^{2}", 0, 2, "after an anchor" },
    { "a{1", 0, 1, "malformed interval" },
    { "a{}", 0, 1, "malformed interval" },
    { "a{x}", 0, 1, "malformed interval" },
    { "a{1\\,2}", 0, 1, "malformed interval" },
    { "ab{2,1}", 0, 2, "below its minimum" },
    { "a{32768}", 0, 1, "over 32767" },
    { "a{0,99999}", 0, 1, "over 32767" },
    { "(^a)*", 0, 4, "holds an anchor" },
    { "(a$|b){2}", 0, 6, "holds an anchor" },
    { "((^)b)?", 0, 6, "holds an anchor" },
    { "[a-[=c=]]", 0, 1, "ends with a class" },
    { "[a-[:alpha:]]", 0, 1, "ends with a class" },
    { "[[:alpha:]-c]", 0, 1, "starts with a class" },
    { "[[=a=]-c]", 0, 1, "starts with a class" },
    { "a{2000}", 0, 0, "too large" },
    { "(a", 0, 0, "unmatched '('" },
    { "a(b|(c)", 0, 1, "unmatched '('" },
    { "[a", 0, 0, "unclosed bracket" },
    { "x[]", 0, 1, "unclosed bracket" },
    { "[[:alpha:]", 0, 0, "unclosed bracket" },
    { "[[.a]", 0, 1, "unclosed \"[.\"" },
    { "a\\", 0, 1, "trailing backslash" },
    { "[z-a]", 0, 1, "before its start" },
    { "[a-c-e]", 0, 4, "right after a range" },
    { "[[:foo:]]", 0, 1, "unknown character class" },
    { "[[.ab.]]", 0, 1, "more than one byte" },
    { "[[==]]", 0, 1, "more than one byte" },
    { "a\0b", 3, 1, "NUL" },
};

static void test_refused(void **state)
{
    (void)state;
    bool ok = true;
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        size_t len = refused[i].len ? refused[i].len : strlen(refused[i].src);
        struct ere_error err;
        struct ere *re = ere_compile(refused[i].src, len, &err);
        if (re != NULL || err.at != refused[i].at || strstr(err.msg, refused[i].msg) == NULL) {
            print_escaped("pattern", refused[i].src, len);
            print_error(": want refused at %zu (%s), got %s at %zu: %s\n", refused[i].at,
                        refused[i].msg, re ? "loaded" : "refused", err.at, err.msg);
            ok = false;
        }
        ere_free(re);
    }
    assert_true(ok);
}

/* Too deep a nesting of groups is refused where the group that is one too deep opens. */
static void test_nesting(void **state)
{
    (void)state;
    char src[2 * 257 + 1];
    struct ere_error err;
    for (int depth = 256; depth <= 257; depth++) {
        memset(src, '(', (size_t)depth);
        memset(src + depth, ')', (size_t)depth);
        struct ere *re = ere_compile(src, 2 * (size_t)depth, &err);
        if (depth == 256) {
            assert_non_null(re);
            assert_int_equal(ere_run(re, "", 0), ERE_MATCH);
        } else {
            assert_null(re);
            assert_int_equal(err.at, 256);
            assert_non_null(strstr(err.msg, "nested too deep"));
        }
        ere_free(re);
    }
    /* longer than ERE_MAX_SOURCE: refused before it is read */
    char *big = malloc(ERE_MAX_SOURCE + 1);
    assert_non_null(big);
    memset(big, 'a', ERE_MAX_SOURCE + 1);
    assert_null(ere_compile(big, ERE_MAX_SOURCE + 1, &err));
    assert_int_equal(err.at, 0);
    free(big);
}

struct val {
    const char *s;
    size_t len; /* 0: strlen (so "" is written with len 0 too) */
    bool match;
};

static const struct {
    const char *src;
    struct val v[6];
} loads[] = {
    { "^a$", { { "a", 0, true }, { "", 0, false }, { "aa", 0, false }, { "ba", 0, false } } },
    { "a|^b", { { "a", 0, true }, { "b", 0, true }, { "ab", 0, false }, { "", 0, false } } },
    { "a||b", { { "", 0, true }, { "a", 0, true }, { "b", 0, true }, { "c", 0, false } } },
    { "|", { { "", 0, true }, { "|", 0, false } } },
    { "()", { { "", 0, true }, { "a", 0, false }, { "()", 0, false } } },
    { "a{0}", { { "", 0, true }, { "a", 0, false } } },
    { "a{0}b", { { "b", 0, true }, { "ab", 0, false } } },
    { "()*", { { "", 0, true }, { "a", 0, false } } },
    { "(a*)*b", { { "b", 0, true }, { "aaab", 0, true }, { "aaa", 0, false } } },
    { "(|a)+", { { "", 0, true }, { "aaa", 0, true }, { "ab", 0, false } } },
    { "a$b", { { "ab", 0, false }, { "a", 0, false }, { "a$b", 0, false } } },
    { "x*^a", { { "a", 0, true }, { "xa", 0, false } } },
    { "a$()", { { "a", 0, true }, { "a$", 0, false } } },
    { "$^", { { "", 0, true }, { "a", 0, false } } },
    { "a)", { { "a)", 0, true }, { "a", 0, false } } },
    { "a}|]", { { "a}", 0, true }, { "]", 0, true }, { "a", 0, false } } },
    { "[]a]+", { { "]a]", 0, true }, { "b", 0, false } } },
    { "[^]a]", { { "b", 0, true }, { "]", 0, false }, { "a", 0, false } } },
    { "[a-]", { { "-", 0, true }, { "a", 0, true }, { "b", 0, false } } },
    { "[--/]", { { "-", 0, true }, { ".", 0, true }, { "/", 0, true }, { ",", 0, false } } },
    { "[[.a.]-c]", { { "b", 0, true }, { "d", 0, false } } },
    { "[[=a=]]", { { "a", 0, true }, { "=", 0, false } } },
    { "[[:alpha:]_]*", { { "aZ_", 0, true }, { "\xe9", 0, false }, { "1", 0, false } } },
    { "[\\]", { { "\\", 0, true }, { "]", 0, false } } },
    { "\\.\\*\\{", { { ".*{", 0, true }, { "a*{", 0, false } } },
    { "a{,2}", { { "", 0, true }, { "aa", 0, true }, { "aaa", 0, false } } },
    { "a{,}", { { "", 0, true }, { "aaaa", 0, true } } },
    { "a{2,}", { { "aa", 0, true }, { "aaaaa", 0, true }, { "a", 0, false } } },
    { "a*+?{2}", { { "", 0, true }, { "aaa", 0, true } } },
    { "\xe9+", { { "\xe9\xe9", 0, true }, { "e", 0, false }, { "", 0, false } } },
    { "[^a]", { { "\xff", 0, true }, { "\n", 0, true }, { "\0", 1, true }, { "a", 0, false } } },
    { ".", { { "\x80", 0, true }, { "\n", 0, true }, { "\0", 1, true }, { "ab", 0, false } } },
    /* NUL is an ordinary byte of the value (glibc's '.' would not take it: RE_DOT_NOT_NULL) */
    { "a.b", { { "a\0b", 3, true }, { "a\0", 2, false } } },
    { "a*", { { "a\0", 2, false }, { "aaa", 0, true } } },
    { "[[:cntrl:]]", { { "\0", 1, true }, { "\x7f", 0, true }, { "\x80", 0, false } } },
    /* '\n' is an ordinary byte: '$' is only the value's end and '^' only its start (glibc's
     * re_match without REG_NEWLINE matches the first three: test_differential) */
    { "x$\n.*", { { "x\nyz", 0, false }, { "x\n", 0, false }, { "x", 0, false } } },
    { "a\n^b", { { "a\nb", 0, false } } },
    { "$[^a]", { { "\n", 0, false } } },
    { "a$|\n", { { "a", 0, true }, { "\n", 0, true }, { "a\n", 0, false } } },
    { "a.*", { { "a\nb", 0, true } } },
};

static void test_loads(void **state)
{
    (void)state;
    bool ok = true;
    for (size_t i = 0; i < sizeof(loads) / sizeof(loads[0]); i++) {
        struct ere_error err;
        struct ere *re = ere_compile(loads[i].src, strlen(loads[i].src), &err);
        if (re == NULL) {
            print_error("\"%s\" refused at %zu: %s\n", loads[i].src, err.at, err.msg);
            ok = false;
            continue;
        }
        for (size_t k = 0; k < 6 && loads[i].v[k].s != NULL; k++) {
            const struct val *v = &loads[i].v[k];
            size_t len = v->len ? v->len : strlen(v->s);
            enum ere_result got = ere_run(re, v->s, len);
            if (got != (v->match ? ERE_MATCH : ERE_NOMATCH)) {
                print_escaped("pattern", loads[i].src, strlen(loads[i].src));
                print_escaped(", value", v->s, len);
                print_error(": want %s, got %d\n", v->match ? "a match" : "no match", got);
                ok = false;
            }
        }
        ere_free(re);
    }
    assert_true(ok);
}

/* ===== cost ===== */

static size_t steps(const struct ere *re, const char *s, size_t len, enum ere_result *r)
{
    size_t budget = BIG_BUDGET;
    *r = ere_match(re, s, len, &budget);
    return BIG_BUDGET - budget;
}

/* Steps for a value of n and of 4n bytes, filled by fill(): each within ere_size() per byte,
 * and the second at most ~4.5 times the first (linear, not quadratic). */
static void check_linear(const char *src, void (*fill)(char *, size_t), size_t n, bool match)
{
    struct ere_error err;
    struct ere *re = ere_compile(src, strlen(src), &err);
    assert_non_null(re);
    char *v = malloc(4 * n);
    assert_non_null(v);
    size_t cost[2];
    for (int k = 0; k < 2; k++) {
        size_t len = k == 0 ? n : 4 * n;
        enum ere_result r;
        fill(v, len);
        cost[k] = steps(re, v, len, &r);
        assert_int_equal(r, match ? ERE_MATCH : ERE_NOMATCH);
        if (cost[k] > ere_size(re) * (len + 1)) {
            print_error("%s on %zu bytes: %zu steps, over %zu instructions per byte\n", src, len,
                        cost[k], ere_size(re));
            fail();
        }
    }
    print_message("%s: %zu steps for %zu bytes, %zu for %zu (program %zu)\n", src, cost[0], n,
                  cost[1], 4 * n, ere_size(re));
    assert_true(cost[0] > n); /* the run did real work */
    assert_true(cost[1] * 2 <= cost[0] * 9);
    free(v);
    ere_free(re);
}

/* "a-a-a-...": every '-' may be the one before the last 20, and all of them are live. */
static void fill_dashes(char *v, size_t len)
{
    for (size_t i = 0; i < len; i++)
        v[i] = i % 2 ? '-' : 'a';
}

static void fill_ab(char *v, size_t len)
{
    rng_state = 0xabcdefull;
    for (size_t i = 0; i < len; i++)
        v[i] = rnd(2) ? 'a' : 'b';
    if (len > 21)
        v[len - 21] = 'a';
}

static void test_linear(void **state)
{
    (void)state;
    check_linear("[a-z0-9_-]+-[a-z0-9_-]{20}", fill_dashes, 25000, true);
    check_linear("(a|b)*a(a|b){20}", fill_ab, 25000, true);
    check_linear("(a*b*)*c", fill_ab, 25000, false);
}

static void test_budget(void **state)
{
    (void)state;
    struct ere_error err;
    struct ere *re = ere_compile("(a|b)*a(a|b){20}", 16, &err);
    assert_non_null(re);
    char v[1000];
    fill_ab(v, sizeof(v));
    size_t budget = 50;
    assert_int_equal(ere_match(re, v, sizeof(v), &budget), ERE_OVER_BUDGET);
    assert_int_equal(budget, 0);
    budget = 0;
    assert_int_equal(ere_match(re, v, sizeof(v), &budget), ERE_OVER_BUDGET);
    assert_int_equal(budget, 0);
    /* exactly the steps it needs is enough, one fewer is not */
    enum ere_result r;
    size_t need = steps(re, v, sizeof(v), &r);
    assert_int_equal(r, ERE_MATCH);
    budget = need;
    assert_int_equal(ere_match(re, v, sizeof(v), &budget), ERE_MATCH);
    assert_int_equal(budget, 0);
    budget = need - 1;
    assert_int_equal(ere_match(re, v, sizeof(v), &budget), ERE_OVER_BUDGET);
    assert_int_equal(budget, 0);
    budget = need + 7;
    assert_int_equal(ere_match(re, v, sizeof(v), &budget), ERE_MATCH);
    assert_int_equal(budget, 7);
    v[sizeof(v) - 21] = 'b';
    budget = BIG_BUDGET;
    assert_int_equal(ere_match(re, v, sizeof(v), &budget), ERE_NOMATCH);
    ere_free(re);
}

/* ===== the program's size ===== */

static const struct {
    const char *src;
    size_t size; /* ere_size(), MATCH included; 0: refused as too large */
} sizes[] = {
    { "", 1 },
    { "a", 2 },
    { "ab", 3 },
    { "a*", 4 },         /* SPLIT a JMP */
    { "a+", 3 },         /* a SPLIT */
    { "a?", 3 },         /* SPLIT a */
    { "a|b", 5 },        /* SPLIT a JMP b */
    { "a{2,5}", 9 },     /* a a (SPLIT a) x3 */
    { "a{0}", 1 },
    { "^a$", 4 },
    { "(a{0}){2000}", 1 },
    { "((a{8}){8}){8}", 513 },
    { "a{1999}", 2000 }, /* at the limit */
    { "a{2000}", 0 },    /* one over */
    { "a{1998}b", 2000 },
    { "a{1998}bc", 0 },
    { "(ab){999}a", 2000 },
    { "(ab){1000}", 0 },
    { "(a|b){499}ab", 1999 },
    { "(a|b){500}", 0 },
    { "a{,999}", 1999 },
    { "a{,1000}", 0 },
    { "a{1998,}", 2000 },
    { "a{1999,}", 0 },
    { "a{1000}{2}", 0 },
    { "(a{1000}){0}", 1 },
    { "x|a{1996}", 2000 },
    { "x|a{1997}", 0 },
};

static void test_sizes(void **state)
{
    (void)state;
    bool ok = true;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        struct ere_error err;
        struct ere *re = ere_compile(sizes[i].src, strlen(sizes[i].src), &err);
        size_t got = re ? ere_size(re) : 0;
        if (got != sizes[i].size ||
            (re == NULL && (strstr(err.msg, "too large") == NULL || err.at != 0))) {
            print_error("\"%s\": want size %zu, got %zu (%s)\n", sizes[i].src, sizes[i].size, got,
                        re ? "loaded" : err.msg);
            ok = false;
        }
        ere_free(re);
    }
    assert_true(ok);
}

/* A program at the limit still matches, within its budget per byte. */
static void test_limit_matches(void **state)
{
    (void)state;
    struct ere_error err;
    struct ere *re = ere_compile("a{1999}", 7, &err);
    assert_non_null(re);
    char v[2000];
    memset(v, 'a', sizeof(v));
    assert_int_equal(ere_run(re, v, 1999), ERE_MATCH);
    assert_int_equal(ere_run(re, v, 1998), ERE_NOMATCH);
    assert_int_equal(ere_run(re, v, 2000), ERE_NOMATCH);
    ere_free(re);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_differential),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_nesting),
        cmocka_unit_test(test_loads),
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_limit_matches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
