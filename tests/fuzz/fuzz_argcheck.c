/* fuzz_argcheck.c: the argument checks of a gated call (proxy/argcheck.c) and the case folding
 * they use (proxy/fold.c), against oracles written without their code.
 *
 * The input is one JSON value (an input json_parse refuses is skipped). Properties:
 *   - argcheck_keys_distinct is true iff no object, at any depth, has two keys that are one
 *     under Unicode's canonical caseless match, NFD(fold(NFD(k))) with fold_rune's simple
 *     folding: the oracle builds each key's form with libunistring's own decoder, encoder and
 *     normalizer and compares every pair (the checker sorts the forms of whole keys);
 *   - argcheck_no_nul is true iff no string and no key holds a zero byte (every byte scanned);
 *   - argcheck_integers_exact is true iff every number without '.', 'e' or 'E' has a magnitude of
 *     at most 2^53 (the oracle reads up to 19 digits with strtoull; more is beyond);
 *   - fold_utf8 of every key and string is valid UTF-8, has as many code points, and folds to
 *     itself again (folding is idempotent). */
#include "fuzz.h"

#include <stdlib.h>
#include <uninorm.h>
#include <unistr.h>

#include "argcheck.h"
#include "fold.h"
#include "jsonrpc.h"

static size_t code_points(const char *p, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)p[i] & 0xC0) != 0x80;
    return n;
}

/* NFD of p (valid UTF-8: parsed), malloc'ed; *n its length. */
static uint8_t *nfd(const uint8_t *p, size_t len, size_t *n)
{
    *n = 0;
    uint8_t *d = u8_normalize(UNINORM_NFD, len ? p : (const uint8_t *)"", len, NULL, n);
    FUZZ_CHECK(d != NULL || len == 0);
    return d;
}

/* k's canonical caseless form, NFD(fold(NFD(k))), malloc'ed; *n its length. */
static uint8_t *caseless(struct sl_str k, size_t *n)
{
    size_t n1;
    uint8_t *d = nfd((const uint8_t *)k.p, k.len, &n1);
    size_t cap = n1 * 2 + 4; /* a simple folding at most doubles a rune's UTF-8 (2 -> 3 bytes) */
    uint8_t *f = malloc(cap);
    FUZZ_CHECK(f != NULL);
    size_t m = 0;
    for (size_t i = 0; i < n1;) {
        ucs4_t c;
        int len = u8_mbtouc(&c, d + i, n1 - i);
        FUZZ_CHECK(len > 0);
        i += (size_t)len;
        int out = u8_uctomb(f + m, fold_rune(c), (int)(cap - m));
        FUZZ_CHECK(out > 0);
        m += (size_t)out;
    }
    uint8_t *r = nfd(f, m, n);
    free(d);
    free(f);
    return r;
}

/* Equal under the canonical caseless match. */
static bool fold_equal(struct sl_str a, struct sl_str b)
{
    size_t na, nb;
    uint8_t *x = caseless(a, &na), *y = caseless(b, &nb);
    bool eq = na == nb && (na == 0 || memcmp(x, y, na) == 0);
    free(x);
    free(y);
    return eq;
}

static void check_fold(struct sl_str s)
{
    struct sl_buf once = { 0 }, twice = { 0 };
    fold_utf8(s.p, s.len, &once);
    FUZZ_CHECK(sl_utf8_valid(once.p ? once.p : "", once.len));
    FUZZ_CHECK(code_points(once.p ? once.p : "", once.len) == code_points(s.p, s.len));
    fold_utf8(once.p ? once.p : "", once.len, &twice);
    FUZZ_CHECK(once.len == twice.len && (once.len == 0 || memcmp(once.p, twice.p, once.len) == 0));
    sl_buf_free(&once);
    sl_buf_free(&twice);
}

struct oracle {
    bool distinct, no_nul, exact;
};

static bool exact_integer(struct sl_str n)
{
    if (memchr(n.p, '.', n.len) || memchr(n.p, 'e', n.len) || memchr(n.p, 'E', n.len))
        return true;
    size_t neg = n.p[0] == '-';
    if (n.len - neg > 19)
        return false;
    char text[24];
    memcpy(text, n.p + neg, n.len - neg);
    text[n.len - neg] = '\0';
    return strtoull(text, NULL, 10) <= 9007199254740992ull;
}

static void walk(const struct json *v, struct oracle *o)
{
    switch (v->type) {
    case JSON_STRING:
        o->no_nul &= memchr(v->u.str.p, '\0', v->u.str.len) == NULL;
        check_fold(v->u.str);
        break;
    case JSON_NUMBER:
        o->exact &= exact_integer(v->u.num);
        break;
    case JSON_ARRAY:
        for (size_t i = 0; i < v->u.arr.n; i++)
            walk(v->u.arr.v[i], o);
        break;
    case JSON_OBJECT:
        for (size_t i = 0; i < v->u.obj.n; i++) {
            struct sl_str k = v->u.obj.v[i].key;
            o->no_nul &= memchr(k.p, '\0', k.len) == NULL;
            check_fold(k);
            for (size_t j = i + 1; j < v->u.obj.n; j++)
                o->distinct &= !fold_equal(k, v->u.obj.v[j].key);
            walk(v->u.obj.v[i].val, o);
        }
        break;
    default:
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sl_arena *a = sl_arena_new();
    struct json *v;
    char err[160];
    if (json_parse((const char *)data, size, a, &v, err, sizeof(err)) == 0) {
        struct oracle o = { true, true, true };
        walk(v, &o);
        FUZZ_CHECK(argcheck_keys_distinct(v) == o.distinct);
        FUZZ_CHECK(argcheck_no_nul(v) == o.no_nul);
        FUZZ_CHECK(argcheck_integers_exact(v) == o.exact);
    }
    sl_arena_free(a);
    return 0;
}
