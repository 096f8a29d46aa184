/* argcheck.c: what a gated call's arguments must be before a person is asked about them. */
#include "argcheck.h"

#include <stdlib.h>
#include <string.h>

#include <uninorm.h>

#include "fold.h"

/* ===== NUL ===== */

bool argcheck_no_nul(const struct json *v)
{
    switch (v->type) {
    case JSON_STRING: /* a plain string had no escape, so no \u0000 (the reader refuses raw NUL) */
        return v->plain || memchr(v->u.str.p, '\0', v->u.str.len) == NULL;
    case JSON_ARRAY:
        for (size_t i = 0; i < v->u.arr.n; i++)
            if (!argcheck_no_nul(v->u.arr.v[i]))
                return false;
        return true;
    case JSON_OBJECT:
        /* The reader already refuses a key with NUL; a tree built by code is checked all the
         * same. */
        for (size_t i = 0; i < v->u.obj.n; i++) {
            struct sl_str k = v->u.obj.v[i].key;
            if ((k.len && memchr(k.p, '\0', k.len)) || !argcheck_no_nul(v->u.obj.v[i].val))
                return false;
        }
        return true;
    default:
        return true;
    }
}

/* ===== keys equal under folding ===== */

static int str_cmp(const void *a, const void *b)
{
    const struct sl_str *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->p, y->p, n) : 0;
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* s in Unicode's canonical decomposition (NFD), appended to out: "\u00e9" and "e\u0301" are
 * one text to a peer that compares strings by canonical equivalence (Swift's String does), and
 * look alike to the person. */
static void decompose(const char *p, size_t len, struct sl_buf *out)
{
    size_t n = 0;
    uint8_t *d = u8_normalize(UNINORM_NFD, (const uint8_t *)p, len, NULL, &n);
    if (d != NULL)
        sl_buf_put(out, (const char *)d, n);
    else /* out of memory: compared as it is (bad UTF-8 is U+FFFD to it, and the reader lets
          * none through) */
        sl_buf_put(out, p, len);
    free(d);
}

static bool is_ascii(struct sl_str k)
{
    for (size_t i = 0; i < k.len; i++)
        if ((unsigned char)k.p[i] >= 0x80)
            return false;
    return true;
}

/* The key a lax peer reads: folded for case (fold.h) and decomposed, before and after the
 * folding, as Unicode's canonical caseless match does (NFD(fold(NFD(k)))). ASCII has no
 * decomposition, and the keys of most calls are ASCII: folded alone, without a copy. */
static void key_as_read(struct sl_str k, struct sl_buf *all)
{
    if (is_ascii(k)) {
        fold_utf8(k.p, k.len, all);
        return;
    }
    struct sl_buf a = { 0 }, b = { 0 };
    decompose(k.p, k.len, &a);
    fold_utf8(a.p ? a.p : "", a.len, &b);
    decompose(b.p ? b.p : "", b.len, all);
    sl_buf_free(&a);
    sl_buf_free(&b);
}

/* Reads every key of o once and sorts the readings: two equal ones end up side by side, so a
 * 10,000-key object costs a sort, not 50 million comparisons. */
static bool object_keys_distinct(const struct json *o)
{
    size_t n = o->u.obj.n;
    if (n < 2)
        return true;
    struct sl_buf all = { 0 };
    size_t *end = sl_xmalloc(n * sizeof(*end));
    for (size_t i = 0; i < n; i++) {
        key_as_read(o->u.obj.v[i].key, &all);
        end[i] = all.len;
    }
    struct sl_str *folded = sl_xmalloc(n * sizeof(*folded));
    for (size_t i = 0, start = 0; i < n; start = end[i], i++)
        folded[i] = (struct sl_str){ all.p ? all.p + start : "", end[i] - start };
    qsort(folded, n, sizeof(*folded), str_cmp);
    bool ok = true;
    for (size_t i = 1; i < n && ok; i++)
        ok = str_cmp(&folded[i - 1], &folded[i]) != 0;
    free(folded);
    free(end);
    sl_buf_free(&all);
    return ok;
}

bool argcheck_keys_distinct(const struct json *v)
{
    if (v->type == JSON_ARRAY) {
        for (size_t i = 0; i < v->u.arr.n; i++)
            if (!argcheck_keys_distinct(v->u.arr.v[i]))
                return false;
        return true;
    }
    if (v->type != JSON_OBJECT)
        return true;
    if (!object_keys_distinct(v))
        return false;
    for (size_t i = 0; i < v->u.obj.n; i++)
        if (!argcheck_keys_distinct(v->u.obj.v[i].val))
            return false;
    return true;
}

/* ===== integers ===== */

/* n is a JSON number literal, so an integer has no leading zero: its digit count orders it. */
static bool integer_exact(struct sl_str n)
{
    if (memchr(n.p, '.', n.len) || memchr(n.p, 'e', n.len) || memchr(n.p, 'E', n.len))
        return true;
    bool neg = n.p[0] == '-';
    size_t digits = n.len - neg;
    if (digits < 16)
        return true;
    if (digits > 16)
        return false;
    return memcmp(n.p + neg, "9007199254740992", 16) <= 0;
}

bool argcheck_integers_exact(const struct json *v)
{
    switch (v->type) {
    case JSON_NUMBER:
        return integer_exact(v->u.num);
    case JSON_ARRAY:
        for (size_t i = 0; i < v->u.arr.n; i++)
            if (!argcheck_integers_exact(v->u.arr.v[i]))
                return false;
        return true;
    case JSON_OBJECT:
        for (size_t i = 0; i < v->u.obj.n; i++)
            if (!argcheck_integers_exact(v->u.obj.v[i].val))
                return false;
        return true;
    default:
        return true;
    }
}
