/* fuzz.h: what the libFuzzer targets share: a reader that takes typed values off the front of the
 * fuzz input (like LLVM's FuzzedDataProvider, in C), and the check that aborts.
 *
 * fuzz_same_value compares two parsed values as JSON values, for the oracles.
 *
 * A target's oracle must abort() when a property fails: libFuzzer reports the abort as a crash
 * and keeps the input. FUZZ_CHECK prints what failed first, so the crash report says why. */
#ifndef SL_FUZZ_H
#define SL_FUZZ_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

#define FUZZ_CHECK(x)                                                                          \
    do {                                                                                       \
        if (!(x)) {                                                                            \
            fprintf(stderr, "fuzz property failed at %s:%d: %s\n", __FILE__, __LINE__, #x);    \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

struct fuzz_in {
    const uint8_t *p;
    size_t len;
};

static inline uint8_t fuzz_u8(struct fuzz_in *in)
{
    if (in->len == 0)
        return 0;
    in->len--;
    return *in->p++;
}

static inline uint16_t fuzz_u16(struct fuzz_in *in)
{
    uint16_t hi = fuzz_u8(in);
    return (uint16_t)(hi << 8 | fuzz_u8(in));
}

/* Up to max bytes: a length byte, then that many bytes (fewer at the end of the input). */
static inline size_t fuzz_bytes(struct fuzz_in *in, size_t max, const uint8_t **out)
{
    size_t n = fuzz_u8(in) % (max + 1);
    if (n > in->len)
        n = in->len;
    *out = in->p;
    in->p += n;
    in->len -= n;
    return n;
}

/* The bytes up to the next '\n' (not included), or to the end. */
static inline size_t fuzz_line(struct fuzz_in *in, const uint8_t **out)
{
    *out = in->p;
    if (in->len == 0)
        return 0;
    const uint8_t *nl = memchr(in->p, '\n', in->len);
    size_t n = nl ? (size_t)(nl - in->p) : in->len;
    in->p += n + (nl != NULL);
    in->len -= n + (nl != NULL);
    return n;
}

/* ===== JSON values compared as values (written without the code under test) ===== */

static inline double fuzz_number(const struct json *v)
{
    char text[SL_MAX_NUMBER + 1];
    size_t n = v->u.num.len < SL_MAX_NUMBER ? v->u.num.len : SL_MAX_NUMBER;
    memcpy(text, v->u.num.p, n);
    text[n] = '\0';
    return strtod(text, NULL);
}

/* Equal as JSON values: the same type; numbers equal as finite doubles; strings byte for byte;
 * arrays element by element; objects with the same keys holding equal values, in any order. */
static inline bool fuzz_same_value(const struct json *a, const struct json *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case JSON_NULL:
        return true;
    case JSON_BOOL:
        return a->u.b == b->u.b;
    case JSON_NUMBER: {
        double x = fuzz_number(a), y = fuzz_number(b);
        return isfinite(x) && isfinite(y) && x == y;
    }
    case JSON_STRING:
        return sl_str_eq(a->u.str, b->u.str);
    case JSON_ARRAY:
        if (a->u.arr.n != b->u.arr.n)
            return false;
        for (size_t i = 0; i < a->u.arr.n; i++)
            if (!fuzz_same_value(a->u.arr.v[i], b->u.arr.v[i]))
                return false;
        return true;
    case JSON_OBJECT:
        if (a->u.obj.n != b->u.obj.n)
            return false;
        for (size_t i = 0; i < a->u.obj.n; i++) {
            const struct json *bv = NULL;
            for (size_t j = 0; j < b->u.obj.n && bv == NULL; j++)
                if (sl_str_eq(a->u.obj.v[i].key, b->u.obj.v[j].key))
                    bv = b->u.obj.v[j].val;
            if (bv == NULL || !fuzz_same_value(a->u.obj.v[i].val, bv))
                return false;
        }
        return true;
    }
    return false;
}

#endif /* SL_FUZZ_H */

