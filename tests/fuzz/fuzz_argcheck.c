/* fuzz_argcheck.c: the argument checks of a gated call (proxy/argcheck.c) and the case folding
 * they use (proxy/fold.c), against oracles written without their code.
 *
 * The input is one JSON value (an input json_parse refuses is skipped). Properties:
 *   - argcheck_keys_distinct is true iff no object, at any depth, has two keys that are equal
 *     code point by code point under fold_rune: the oracle compares every pair of keys (the
 *     checker sorts foldings of whole keys);
 *   - argcheck_no_nul is true iff no string and no key holds a zero byte (every byte scanned);
 *   - argcheck_integers_exact is true iff every number without '.', 'e' or 'E' has a magnitude of
 *     at most 2^53 (the oracle reads up to 19 digits with strtoull; more is beyond);
 *   - fold_utf8 of every key and string is valid UTF-8, has as many code points, and folds to
 *     itself again (folding is idempotent). */
#include "fuzz.h"

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

/* Equal under folding, code point by code point. Both are valid UTF-8 (parsed). */
static bool fold_equal(struct sl_str a, struct sl_str b)
{
    size_t i = 0, j = 0;
    while (i < a.len && j < b.len) {
        uint32_t x, y;
        i += sl_utf8_decode(a.p + i, a.len - i, &x);
        j += sl_utf8_decode(b.p + j, b.len - j, &y);
        if (fold_rune(x) != fold_rune(y))
            return false;
    }
    return i == a.len && j == b.len;
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
