/* fold.c: Unicode simple case folding from a generated range table (fold_table.h). */
#include "fold.h"

/* Code points lo, lo + stride, ... up to hi fold to themselves plus delta. */
struct fold_range {
    uint32_t lo, hi;
    uint8_t stride;
    int32_t delta;
};

#include "fold_table.h"

uint32_t fold_rune(uint32_t c)
{
    if (c < 0x80)
        return c >= 'A' && c <= 'Z' ? c + 32 : c;
    /* The last range that starts at or below c. */
    size_t lo = 0, hi = SL_ARRAY_LEN(fold_ranges);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (fold_ranges[mid].lo <= c)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return c;
    const struct fold_range *r = &fold_ranges[lo - 1];
    if (c > r->hi || (c - r->lo) % r->stride != 0)
        return c;
    return (uint32_t)((int32_t)c + r->delta);
}

static void put_rune(struct sl_buf *out, uint32_t c)
{
    char b[4];
    size_t n;
    if (c < 0x80) {
        b[0] = (char)c, n = 1;
    } else if (c < 0x800) {
        b[0] = (char)(0xC0 | c >> 6), b[1] = (char)(0x80 | (c & 0x3F)), n = 2;
    } else if (c < 0x10000) {
        b[0] = (char)(0xE0 | c >> 12), b[1] = (char)(0x80 | (c >> 6 & 0x3F));
        b[2] = (char)(0x80 | (c & 0x3F)), n = 3;
    } else {
        b[0] = (char)(0xF0 | c >> 18), b[1] = (char)(0x80 | (c >> 12 & 0x3F));
        b[2] = (char)(0x80 | (c >> 6 & 0x3F)), b[3] = (char)(0x80 | (c & 0x3F)), n = 4;
    }
    sl_buf_put(out, b, n);
}

/* The byte length of the well-formed UTF-8 sequence at p, or 0. */
static size_t seq_len(const char *p, size_t len)
{
    size_t n;
    unsigned char c = (unsigned char)*p;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4;
    else
        return 0;
    return n <= len && sl_utf8_valid(p, n) ? n : 0;
}

void fold_utf8(const char *p, size_t len, struct sl_buf *out)
{
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)p[i];
        if (c < 0x80) { /* ASCII, nearly every key: one byte in, one out */
            sl_buf_putc(out, (char)(c >= 'A' && c <= 'Z' ? c + 32 : c));
            i++;
            continue;
        }
        size_t n = seq_len(p + i, len - i);
        if (n == 0) {
            sl_buf_putc(out, p[i]);
            i++;
            continue;
        }
        uint32_t cp;
        sl_utf8_decode(p + i, n, &cp);
        put_rune(out, fold_rune(cp));
        i += n;
    }
}
