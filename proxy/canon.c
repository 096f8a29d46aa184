/* canon.c: RFC 8785 (JCS) canonical JSON and its SHA-256.
 *
 * The writer walks the value tree once. The only memory it takes besides the output buffer is the
 * index an object's members are sorted through: on the stack for small objects, on the heap
 * (freed before returning) for large ones, because the tree is const and sorting in place would
 * change the order json_write forwards.
 *
 * This writer has its own string escaper on purpose: json_write's escaping is a wire choice that
 * may change, while the canonical form is a hash contract that must not. */
#include "canon.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

static int write_value(struct sl_buf *out, const struct json *v);

/* ===== numbers (RFC 8785 §3.2.2.3, ECMAScript Number::toString) ===== */

static size_t skip_digits(const char *s, size_t len, size_t i)
{
    while (i < len && s[i] >= '0' && s[i] <= '9')
        i++;
    return i;
}

/* True iff s[0..len) is a JSON number (RFC 8259 §6):
 *   -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
 * A parsed tree only holds such text; a built one is checked too, because strtod would also take
 * "nan", "inf", "0x1p3" and leading blanks, none of which are JSON. */
static bool number_grammar_ok(const char *s, size_t len)
{
    size_t i = 0, j;
    if (i < len && s[i] == '-')
        i++;
    j = skip_digits(s, len, i);
    if (j == i || (s[i] == '0' && j > i + 1)) /* no digits, or a leading zero */
        return false;
    i = j;
    if (i < len && s[i] == '.') {
        j = skip_digits(s, len, i + 1);
        if (j == i + 1)
            return false;
        i = j;
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-'))
            i++;
        j = skip_digits(s, len, i);
        if (j == i)
            return false;
        i = j;
    }
    return i == len;
}

/* Parses a number literal to a double. Returns -1 for text that is not a JSON number, or whose
 * value is not a finite double (I-JSON, RFC 7493 §2.2: 1e400 has no canonical form). Underflow
 * to 0 or a subnormal is fine: that is the double the text denotes. */
static int number_value(struct sl_str num, double *d)
{
    char text[SL_MAX_NUMBER + 1];
    if (num.len == 0 || num.len > SL_MAX_NUMBER || !number_grammar_ok(num.p, num.len))
        return -1;
    memcpy(text, num.p, num.len); /* strtod needs a NUL; the slice has none */
    text[num.len] = '\0';
    char *end;
    *d = strtod(text, &end);
    /* A partial parse can only mean a locale whose decimal point is not '.': refuse, never guess. */
    if (end != text + num.len || !isfinite(*d))
        return -1;
    return 0;
}

/* A decimal d[0].d[1]...d[k-1] x 10^e, at most 17 significant digits. */
struct decimal {
    char d[18];
    int k, e;
};

/* Reads the digits and exponent out of printf's "%.*e" text, whatever the locale's decimal point. */
static void decimal_from_sci(struct decimal *x, const char *sci)
{
    x->k = 0;
    for (; *sci != 'e'; sci++)
        if (*sci >= '0' && *sci <= '9')
            x->d[x->k++] = *sci;
    x->e = atoi(sci + 1);
}

/* True iff x reads back as d. Written as an integer mantissa ("12345e-10") so that no decimal
 * point, and so no locale, is involved. */
static bool decimal_reads_as(const struct decimal *x, double d)
{
    char text[40];
    snprintf(text, sizeof(text), "%.*se%d", x->k, x->d, x->e - x->k + 1);
    return strtod(text, NULL) == d;
}

/* Moves x to the next k-digit decimal up (dir > 0) or down (dir < 0). */
static void decimal_step(struct decimal *x, int dir)
{
    int i = x->k - 1;
    if (dir > 0) {
        while (i >= 0 && x->d[i] == '9')
            x->d[i--] = '0';
        if (i >= 0) {
            x->d[i]++;
        } else {                    /* 999 -> 1000: "100" one decade up */
            x->d[0] = '1';
            x->e++;
        }
    } else {
        while (i >= 0 && x->d[i] == '0')
            x->d[i--] = '9';
        x->d[i]--;                  /* x->d[0] is never '0', so i >= 0 here */
        if (x->d[0] == '0') {       /* 100 -> 099: "999" one decade down */
            memset(x->d, '9', (size_t)x->k);
            x->e--;
        }
    }
}

/* The k-digit decimal that ECMAScript would pick for d, if one reads back as d (true, in *x).
 * printf's "%.*e" gives the closest k-digit decimal (glibc rounds correctly). When it does not
 * read back, the next k-digit decimal towards d still may: at a power of two the doubles below
 * are twice as dense as above, so the interval that reads back as d is lopsided. 2^-1017 is
 * 7.120236347223045e-307, although 7.120236347223044e-307 is nearer (it reads back as the double
 * below). Only those two k-digit decimals can be inside the interval. */
static bool decimal_try(double d, int k, struct decimal *x)
{
    char sci[40];
    snprintf(sci, sizeof(sci), "%.*e", k - 1, d);
    decimal_from_sci(x, sci);
    double back = strtod(sci, NULL);
    if (back == d)
        return true;
    struct decimal y = *x;
    decimal_step(&y, back < d ? 1 : -1);
    if (!decimal_reads_as(&y, d))
        return false;
    *x = y;
    return true;
}

/* The digits printed for the search: 19, so that the printed value is within 1/200 of a unit of
 * the 17th digit of d, and the distances measured on it are that close to d's own. (19 digits
 * fit a uint64_t; 20 would not.) */
#define SEARCH_DIGITS 19

/* Distance, in units of the last of the SEARCH_DIGITS digits, from that decimal to the nearest
 * decimal of k digits: its last SEARCH_DIGITS - k digits, or what they lack to the next step up. */
static double decimal_gap(const char *digits, int k)
{
    uint64_t tail = 0, span = 1;
    for (int i = k; i < SEARCH_DIGITS; i++) {
        tail = tail * 10 + (uint64_t)(digits[i] - '0');
        span *= 10;
    }
    return (double)(tail < span - tail ? tail : span - tail);
}

/* The next double towards 0 from d > 0 (dir -1), or away from it (dir 1): for positive doubles,
 * the bit patterns order as the values do (IEEE 754 §3.4). Away from the largest double is
 * infinity. */
static double double_next(double d, int dir)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof(bits));
    bits = dir < 0 ? bits - 1 : bits + 1;
    memcpy(&d, &bits, sizeof(d));
    return d;
}

/* Shortest decimal that reads back as d (d > 0, finite), as ECMAScript Number::toString step 5
 * asks: the fewest digits k, then the k-digit decimal closest to d.
 * Trying every k with printf and strtod costs some 15 us for a 17-digit double, and a client can
 * send a message full of them. So d is printed once, to SEARCH_DIGITS digits, and a k is tried
 * only if a k-digit decimal lies within reach of them. A decimal reads back as d only if it is
 * within half the gap between d and the double on its side, so no further than half the larger
 * of the two gaps (at a power of two, the gap above is twice the one below). Reach is that, in
 * units of the last digit printed, plus one unit for the printing's rounding, plus 1% for the
 * float arithmetic. The reach of the gap below in units of the 17th digit plus one unit, as it
 * was, let 0.30000000000000004 and 100.00000000000001 try every k (their digits are a run of
 * zeros and one more), about 19 us each, where most doubles take under 2 us. */
static void shortest_decimal(double d, struct decimal *x)
{
    char sci[48];
    snprintf(sci, sizeof(sci), "%.*e", SEARCH_DIGITS - 1, d);
    char digits[SEARCH_DIGITS];
    int n = 0;
    for (const char *p = sci; *p != 'e' && n < SEARCH_DIGITS; p++)
        if (*p >= '0' && *p <= '9')
            digits[n++] = *p;
    uint64_t m = 0;
    for (int i = 0; i < SEARCH_DIGITS; i++)
        m = m * 10 + (uint64_t)(digits[i] - '0');
    /* The larger gap, halved only after the division: half the gap of a subnormal can be
     * below the smallest double. */
    double below = d - double_next(d, -1), above = double_next(d, 1) - d;
    double gap = isfinite(above) && above > below ? above : below;
    double reach = (double)m * (gap / d) / 2 * 1.01 + 1;
    int k = 1;
    for (; k < 17; k++)
        if (decimal_gap(digits, k) <= reach && decimal_try(d, k, x))
            break;
    if (k == 17) { /* 17 digits always read back: the closest of them */
        snprintf(sci, sizeof(sci), "%.16e", d);
        decimal_from_sci(x, sci);
    }
    while (x->k > 1 && x->d[x->k - 1] == '0') /* a step up from 9..9 leaves 10..0 */
        x->k--;
}

/* Lays out k digits with exponent n as ECMAScript Number::toString steps 6-10 (PROTOCOL.md §8.3). */
static void layout_number(char *o, const char *digits, size_t k, int n)
{
    int ki = (int)k;
    if (ki <= n && n <= 21) {                  /* 1e20 -> "100000000000000000000" */
        memcpy(o, digits, k);
        memset(o + k, '0', (size_t)(n - ki));
        o[n] = '\0';
    } else if (0 < n && n <= 21) {             /* 4.5 */
        memcpy(o, digits, (size_t)n);
        o[n] = '.';
        memcpy(o + n + 1, digits + n, k - (size_t)n);
        o[k + 1] = '\0';
    } else if (-6 < n && n <= 0) {             /* 0.000001 */
        o[0] = '0';
        o[1] = '.';
        memset(o + 2, '0', (size_t)-n);
        memcpy(o + 2 - n, digits, k);
        o[2 - n + ki] = '\0';
    } else {                                   /* 1e+21, 9.999999999999997e-7 */
        size_t i = 0;
        o[i++] = digits[0];
        if (k > 1) {
            o[i++] = '.';
            memcpy(o + i, digits + 1, k - 1);
            i += k - 1;
        }
        int e = n - 1; /* |e| <= 324 for a double */
        o[i++] = 'e';
        o[i++] = e < 0 ? '-' : '+';
        e = abs(e);
        if (e >= 100)
            o[i++] = (char)('0' + e / 100);
        if (e >= 10)
            o[i++] = (char)('0' + e / 10 % 10);
        o[i++] = (char)('0' + e % 10);
        o[i] = '\0';
    }
}

/* Integers below 2^53 are exact, and no shorter decimal is within half a unit of them, so their
 * shortest form is their own digits (which the layout's first case prints in full). The common
 * case, so it skips the search. */
static bool small_integer(double d)
{
    return d < 9007199254740992.0 && d == (double)(uint64_t)d;
}

static void integer_digits(char *o, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    for (size_t i = 0; i < n; i++)
        o[i] = tmp[n - 1 - i];
    o[n] = '\0';
}

void canon_number(double d, char buf[32])
{
    SL_REQUIRE(isfinite(d));
    if (d == 0) { /* both zeros: Number::toString(-0) is "0" */
        strcpy(buf, "0");
        return;
    }
    char *o = buf;
    if (d < 0) {
        *o++ = '-';
        d = -d;
    }
    if (small_integer(d)) {
        integer_digits(o, (uint64_t)d);
        return;
    }
    struct decimal x;
    shortest_decimal(d, &x);
    /* Longest outputs: "-0.00000" + 17 digits = 25, "-" + 21 digits = 22,
     * "-d." + 16 digits + "e-324" = 24; all fit in 32 with the NUL. */
    layout_number(o, x.d, (size_t)x.k, x.e + 1);
}

/* True iff num is an integer literal of at most 15 digits ("-12", "0"; not "-0", "1e2", "012"):
 * below 2^53, and already in canonical form. */
static bool canonical_integer_text(struct sl_str num)
{
    size_t i = num.len > 0 && num.p[0] == '-';
    size_t digits = num.len - i;
    if (digits == 0 || digits > 15 || (num.p[i] == '0' && (digits > 1 || i == 1)))
        return false;
    return skip_digits(num.p, num.len, i) == num.len;
}

/* The canonical form of a literal of at most DBL_DIG (15) significant digits whose value lies
 * well inside the normal doubles (10^-291 to 10^290), written into o (32 bytes), without strtod
 * or the digit search; false for any other literal (or text that is not a JSON number). Such a
 * decimal D reads as the double d nearest it, and every decimal of at most 15 digits survives the
 * trip to a normal double and back to 15 digits (C11 5.2.4.2.2, DBL_DIG). So no other decimal
 * of at most 15 digits reads as d: one that did would come back from d as itself and as D. The
 * shortest decimal that reads as d is D's own digits, without its leading and trailing zeros,
 * and ECMAScript lays them out (layout_number). The search costs about 1.3 us a number and a
 * client chooses how many a call holds: 1 MiB of "1.1," held sluice's one thread 0.6 s. */
static bool short_decimal(struct sl_str num, char o[32])
{
    if (num.len == 0 || num.len > SL_MAX_NUMBER || !number_grammar_ok(num.p, num.len))
        return false;
    const char *p = num.p, *end = num.p + num.len;
    bool neg = *p == '-';
    p += neg;
    char digits[SL_MAX_NUMBER];
    int nd = 0, point = -1, first = -1, last = -1; /* point: digits before the '.' */
    for (; p < end && *p != 'e' && *p != 'E'; p++) {
        if (*p == '.') {
            point = nd;
            continue;
        }
        if (*p != '0') {
            if (first < 0)
                first = nd;
            last = nd;
        }
        digits[nd++] = *p;
    }
    if (point < 0)
        point = nd;
    long exp = 0;
    if (p < end) { /* grammar-checked: [eE] [+-]? [0-9]+ */
        bool eneg = *++p == '-';
        p += *p == '+' || *p == '-';
        for (; p < end; p++)
            if ((exp = exp * 10 + (*p - '0')) > 100000)
                return false;
        exp = eneg ? -exp : exp;
    }
    if (first < 0) { /* every digit 0: both zeros are "0" */
        strcpy(o, "0");
        return true;
    }
    long n = point - first + exp; /* the value is 0.d1d2... x 10^n */
    int k = last - first + 1;
    if (k > 15 || n < -290 || n > 290)
        return false;
    if (neg)
        *o++ = '-';
    layout_number(o, digits + first, (size_t)k, (int)n);
    return true;
}

static int write_number(struct sl_buf *out, struct sl_str num)
{
    if (canonical_integer_text(num)) { /* most numbers: counts, ids, sizes */
        sl_buf_put(out, num.p, num.len);
        return 0;
    }
    char text[32];
    if (!short_decimal(num, text)) {
        double d;
        if (number_value(num, &d) < 0)
            return -1;
        canon_number(d, text);
    }
    sl_buf_puts(out, text);
    return 0;
}

/* ===== strings (RFC 8785 §3.2.2.2, JSON.stringify) ===== */

/* JSON.stringify escapes '"', '\\', the five short forms and the other C0 controls as \u00xx
 * in lowercase hex, and nothing else: '/', DEL, U+2028/9 and all non-ASCII go out as they are,
 * in UTF-8. That is exactly json_write_string's minimal escaping (json.h), whose 16-byte scan
 * also makes an escape cheap: one writer for both, not a second one to keep in step (a gated
 * pair canonicalizes its arguments twice, issue 24). */
static int write_string(struct sl_buf *out, struct sl_str s)
{
    json_write_string(out, s.p, s.len);
    /* RFC 8785 §3.2.2.2: I-JSON strings only (on -1 what was appended is unspecified) */
    return sl_utf8_valid(s.p, s.len) ? 0 : -1;
}

/* ===== objects (RFC 8785 §3.2.3) ===== */

/* Compares two valid UTF-8 keys as arrays of UTF-16 code units (RFC 8785 §3.2.3).
 * UTF-8 byte order is code point order, and that is UTF-16 order except between a supplementary
 * character (UTF-16 surrogates 0xD800-0xDBFF first) and one in U+E000-U+FFFF: U+1F602 comes
 * before U+FB33 in UTF-16, after it in bytes. The bytes before the first difference are equal,
 * so that difference is at the same offset in two code points of the same kind (then byte order
 * holds), or at their lead bytes. Only the lead bytes F0-F4 (supplementary) against EE-EF
 * (U+E000-U+FFFF) need turning round. Comparing bytes keeps the sort fast on large objects. */
static int key_cmp(struct sl_str a, struct sl_str b)
{
    size_t n = a.len < b.len ? a.len : b.len, i = 0;
    while (i < n && a.p[i] == b.p[i])
        i++;
    if (i == n)
        return a.len < b.len ? -1 : a.len > b.len;
    unsigned ca = (unsigned char)a.p[i], cb = (unsigned char)b.p[i];
    if (ca >= 0xF0 && (cb == 0xEE || cb == 0xEF))
        return -1;
    if (cb >= 0xF0 && (ca == 0xEE || ca == 0xEF))
        return 1;
    return ca < cb ? -1 : 1;
}

static int member_cmp(const void *x, const void *y)
{
    const struct json_member *a = *(const struct json_member *const *)x;
    const struct json_member *b = *(const struct json_member *const *)y;
    return key_cmp(a->key, b->key);
}

/* Writes members in sorted order. -1 on an invalid key, an invalid value, or two equal keys
 * (I-JSON, RFC 7493 §2.3: such an object has no canonical form, and either member could win). */
static int write_sorted_members(struct sl_buf *out, const struct json_member **m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!sl_utf8_valid(m[i]->key.p, m[i]->key.len)) /* key_cmp relies on it */
            return -1;
    qsort(m, n, sizeof(*m), member_cmp);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && key_cmp(m[i - 1]->key, m[i]->key) == 0)
            return -1;
        if (i > 0)
            sl_buf_putc(out, ',');
        json_write_string(out, m[i]->key.p, m[i]->key.len); /* validated above */
        sl_buf_putc(out, ':');
        if (write_value(out, m[i]->val) < 0)
            return -1;
    }
    return 0;
}

#define SMALL_OBJECT 32

static int write_object(struct sl_buf *out, const struct json *v)
{
    size_t n = v->u.obj.n;
    const struct json_member *small[SMALL_OBJECT];
    const struct json_member **m = n <= SMALL_OBJECT ? small : sl_xcalloc(n, sizeof(*m));
    for (size_t i = 0; i < n; i++)
        m[i] = &v->u.obj.v[i];
    sl_buf_putc(out, '{');
    int rc = write_sorted_members(out, m, n);
    sl_buf_putc(out, '}');
    if (m != small)
        free(m);
    return rc;
}

static int write_array(struct sl_buf *out, const struct json *v)
{
    sl_buf_putc(out, '[');
    for (size_t i = 0; i < v->u.arr.n; i++) {
        if (i > 0)
            sl_buf_putc(out, ',');
        if (write_value(out, v->u.arr.v[i]) < 0)
            return -1;
    }
    sl_buf_putc(out, ']');
    return 0;
}

/* Recursion depth is the tree's depth, which the parser bounds (SL_MAX_DEPTH). */
static int write_value(struct sl_buf *out, const struct json *v)
{
    if (SL_CHECK(v != NULL))
        return -1;
    switch (v->type) {
    case JSON_NULL:
        sl_buf_puts(out, "null");
        return 0;
    case JSON_BOOL:
        sl_buf_puts(out, v->u.b ? "true" : "false");
        return 0;
    case JSON_NUMBER:
        return write_number(out, v->u.num);
    case JSON_STRING:
        return write_string(out, v->u.str);
    case JSON_ARRAY:
        return write_array(out, v);
    case JSON_OBJECT:
        return write_object(out, v);
    }
    return -1; /* not a type we know: no canonical form */
}

/* ===== API ===== */

int canon_write(struct sl_buf *out, const struct json *v)
{
    return write_value(out, v);
}

int canon_digest(const struct json *v, uint8_t out[CANON_DIGEST_LEN])
{
    struct sl_buf b = { 0 };
    int rc = write_value(&b, v);
    unsigned int mdlen = 0;
    if (rc == 0 &&
        (EVP_Digest(b.p, b.len, out, &mdlen, EVP_sha256(), NULL) != 1 ||
         mdlen != CANON_DIGEST_LEN))
        rc = -1;
    sl_buf_free(&b);
    return rc;
}
