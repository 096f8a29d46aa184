/* confirm.c: the confirmation text a person reads before a gated call runs (DESIGN §5 inv. 5).
 *
 * The text is built in four steps:
 *   1. every untrusted piece (tool, server, value, any key that is not a plain identifier) is
 *      first written as JSON text, so quotes, backslashes and C0 controls are already escaped and
 *      one value can never span two lines;
 *   2. that text is neutralized: each code point that a terminal or a form could hide, reorder or
 *      act on is replaced by a visible escape; in a value, a run of 16 or more of one character
 *      is then shown as its count;
 *   3. the budget is laid out (confirm.h): the fixed parts, the room of the operator's sentence
 *      and every key first, and if they do not fit there is no question; then one share per
 *      value, the largest that fits;
 *   4. each value is shown whole, or its start, a marker with its length and digest, and its end;
 *      the sentence's fields as their lines show them, or cut the same way to fit its room.
 * Declared arguments come in policy order; the others, and nested members at every depth, in
 * sorted key order, so the same value (the one the digest binds, whatever order the client sent
 * its keys in) always gives the same text. */
#include "confirm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "canon.h"
#include "seal.h"
#include "unicode_hidden.h"

#define ELLIPSIS "\xE2\x80\xA6" /* U+2026, the mark of every cut */

/* U+2022, the mark before every argument. It keeps the listing readable where a client collapses
 * newlines into one paragraph (MCP Inspector's form does): "arguments? • path: "/a" • mode: 1".
 * sluice alone writes it raw; in any text from the client, the upstream or the policy it is
 * shown as the escape \u2022, so a value can never pose as one more argument line. */
#define BULLET    "\xE2\x80\xA2"
#define BULLET_CP 0x2022
#define ELLIPSIS_CP 0x2026

#define CONFIRM_MAX_NAME 256   /* bytes shown of the tool or server name (a 128-char name + quotes
                                * fits, so only names the spec already calls odd are cut) */

/* ===== which code points are shown as escapes ===== */

/* Shown as escapes: unicode_hidden.h's set (DEL, C1, and every character that renders as
 * nothing or as a blank, or reorders the text), which policy/policy_name.c shares, and on top
 * of it the ranges below, which are this text's alone. Sorted, non-overlapping.
 * - The C0 controls: ESC starts a terminal sequence (policy_name.c leaves them to policy.c,
 *   which refuses them first).
 * - The combining marks that overlay or enclose the letter before them (strokes, slashes,
 *   circles, keycaps, the enclosing marks of Cyrillic numbers, and the overlays of Vedic,
 *   Kharoshthi, Bassa Vah, Duployan and musical notation), which can make a character read as
 *   struck out or as another. A tool name may hold them: they are visible. Other combining
 *   marks (accents, Thai and Indic vowels) are left alone: they are how much text is written.
 * - The format characters that are visible but span or mark the characters after them (Arabic
 *   and Kaithi number signs, Syriac abbreviation, Egyptian hieroglyph format controls): a sign
 *   drawn over "123" can make it read as another number.
 * - Dots and bullets that look like sluice's own bullet (U+2022): where a client collapses
 *   the newlines, "x \u2219 path: y" must not read as one more argument.
 * - The ellipsis (U+2026) that starts sluice's own cut marker ("…[N bytes, sha256 H]"): a value
 *   must not show a cut that sluice did not make, nor pass its own text off as a cut's end.
 * They are this text's alone, not unicode_hidden.c's: policy_name.c refuses a tool name that
 * holds a code point of that set, and these are no reason to refuse one. */
static const struct unicode_range hidden_extra[] = {
    { 0x0000, 0x001F },   /* C0, ESC included */
    { 0x00B7, 0x00B7 },   /* middle dot (a bullet lookalike) */
    { 0x0334, 0x0338 },   /* combining overlays: tilde, strokes, solidi */
    { 0x0488, 0x0489 },   /* combining Cyrillic hundred thousands, millions signs (enclosing) */
    { 0x0600, 0x0605 },   /* Arabic number signs (span the digits after them) */
    { 0x06DD, 0x06DD },   /* Arabic end of ayah (encloses the digits after it) */
    { 0x070F, 0x070F },   /* Syriac abbreviation mark */
    { 0x0890, 0x0891 },   /* Arabic pound, piastre mark above */
    { 0x08E2, 0x08E2 },   /* Arabic disputed end of ayah */
    { 0x1ABE, 0x1ABE },   /* combining parentheses overlay (enclosing) */
    { 0x1CD4, 0x1CD4 },   /* Vedic tone yajurvedic midline svarita (an overlay) */
    { 0x1CE2, 0x1CE8 },   /* Vedic sign visarga overlays */
    { 0x2023, 0x2023 },   /* triangular bullet */
    { 0x2026, 0x2026 },   /* horizontal ellipsis (sluice's cut marker starts with it) */
    { 0x2043, 0x2043 },   /* hyphen bullet */
    { 0x204C, 0x204D },   /* black leftwards, rightwards bullets */
    { 0x20D2, 0x20D3 },   /* combining long vertical line overlays */
    { 0x20D8, 0x20DA },   /* combining ring overlays */
    { 0x20DD, 0x20E0 },   /* combining enclosing circle, square, diamond, circle backslash */
    { 0x20E2, 0x20E6 },   /* combining enclosing screen, keycap, triangle; overlays */
    { 0x20EA, 0x20EB },   /* combining leftwards arrow overlay, long double solidus overlay */
    { 0x2219, 0x2219 },   /* bullet operator */
    { 0x25CF, 0x25CF },   /* black circle */
    { 0x25E6, 0x25E6 },   /* white bullet */
    { 0x2981, 0x2981 },   /* Z notation spot */
    { 0x29BE, 0x29BF },   /* circled white bullet, circled bullet */
    { 0x30FB, 0x30FB },   /* katakana middle dot */
    { 0xA670, 0xA672 },   /* combining Cyrillic ten millions, hundred millions, thousand
                           * millions signs (enclosing) */
    { 0xFF65, 0xFF65 },   /* halfwidth katakana middle dot */
    { 0x10A39, 0x10A39 }, /* Kharoshthi cross overlay */
    { 0x110BD, 0x110BD }, /* Kaithi number sign */
    { 0x110CD, 0x110CD }, /* Kaithi number sign above */
    { 0x13430, 0x1343F }, /* Egyptian hieroglyph format controls */
    { 0x16AF0, 0x16AF4 }, /* Bassa Vah combining overlays */
    { 0x1BC9E, 0x1BC9E }, /* Duployan double mark overlay */
    { 0x1D167, 0x1D169 }, /* musical tremolo overlays */
};

static bool cp_hidden(uint32_t cp)
{
    return unicode_hidden(cp) || unicode_range_has(hidden_extra, SL_ARRAY_LEN(hidden_extra), cp);
}

/* The visible form of a hidden code point: the JSON short escapes for the common C0 controls,
 * else \uXXXX, or \u{XXXXX} above the BMP (JSON would need a surrogate pair, which reads worse
 * and could be mistaken for two characters). Returns the length written to e. */
static size_t cp_escape(uint32_t cp, char e[16])
{
    static const char shortesc[] = { ['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n', ['\f'] = 'f',
                                     ['\r'] = 'r' };
    if (cp < sizeof(shortesc) && shortesc[cp]) {
        e[0] = '\\';
        e[1] = shortesc[cp];
        return 2;
    }
    int n = cp <= 0xFFFF ? snprintf(e, 16, "\\u%04x", (unsigned)cp)
                         : snprintf(e, 16, "\\u{%x}", (unsigned)cp);
    return (size_t)n;
}

/* Length of the well-formed UTF-8 sequence at p, decoded into *cp, or 0 if p does not start
 * one. Parsed input is always valid; this keeps hand-built or corrupt input from producing
 * invalid output. */
static size_t utf8_next(const char *p, size_t len, uint32_t *cp)
{
    unsigned char c = (unsigned char)p[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t n = c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
    if (n == 0 || n > len || !sl_utf8_valid(p, n))
        return 0;
    return sl_utf8_decode(p, n, cp);
}

/* ===== neutralize with a byte limit ===== */

/* Output is produced in units (one raw code point, one whole escape of ours, or one whole JSON
 * escape of the text's own) so a cut never splits a character or leaves half an escape that
 * reads as something else. Once one unit does not fit, every later unit is counted as omitted
 * too: showing a later, shorter unit would hide a gap. */
struct sink {
    struct sl_buf *out;
    size_t max;      /* 0 = no limit */
    size_t shown;    /* bytes appended */
    size_t omitted;  /* bytes of neutralized text left out */
};

static void sink_unit(struct sink *k, const char *p, size_t n)
{
    if (k->omitted == 0 && (k->max == 0 || k->shown + n <= k->max)) {
        sl_buf_put(k->out, p, n);
        k->shown += n;
    } else {
        k->omitted += n;
    }
}

/* Printable ASCII (space to '~') is never hidden: the length of the run of it at p. Most text
 * is such runs, and taking them whole skips the decoding and range search per character. A
 * backslash ends the run: it starts an escape (escape_len). */
static size_t printable_run(const char *p, size_t len)
{
    size_t n = 0;
    while (n < len && p[n] >= 0x20 && p[n] < 0x7F && p[n] != '\\')
        n++;
    return n;
}

/* The length of the JSON escape at p (p[0] is a backslash): "\uXXXX", or a backslash and one
 * printable ASCII character ("\n", "\\", "\""), else the backslash alone. One unit: a cut
 * inside "\u0000" would leave "\u00" before the marker, which is no escape, or one of a
 * character that is not there. Most text cut is JSON (values, keys, names, each written as
 * JSON first); in other text this only moves a cut before a backslash pair. */
static size_t escape_len(const char *p, size_t len)
{
    if (len >= 6 && p[1] == 'u' && sl_hex_digit(p[2]) >= 0 && sl_hex_digit(p[3]) >= 0 &&
        sl_hex_digit(p[4]) >= 0 && sl_hex_digit(p[5]) >= 0)
        return 6;
    return len >= 2 && p[1] >= 0x20 && p[1] < 0x7F ? 2 : 1;
}

/* n units of one byte each: what sink_unit would do with them one at a time. */
static void sink_run(struct sink *k, const char *p, size_t n)
{
    size_t fit = n;
    if (k->omitted != 0)
        fit = 0;
    else if (k->max != 0 && k->max - k->shown < n)
        fit = k->max - k->shown;
    sl_buf_put(k->out, p, fit);
    k->shown += fit;
    k->omitted += n - fit;
}

/* Appends at most max bytes (0 = no limit) of s neutralized, whole units only, and returns how
 * many bytes of the neutralized text were left out. marks: s is text observe.c wrote, whose
 * only raw ellipses are sluice's own marks (it shows a server's as "\u2026"), kept as they are. */
static size_t neutralize_cut(struct sl_buf *out, struct sl_str s, size_t max, bool marks)
{
    struct sink k = { out, max, 0, 0 };
    size_t i = 0;
    while (i < s.len) {
        size_t run = printable_run(s.p + i, s.len - i);
        if (run > 0) { /* units of one byte each, shown as they are */
            sink_run(&k, s.p + i, run);
            i += run;
            continue;
        }
        if (s.p[i] == '\\') {
            size_t n = escape_len(s.p + i, s.len - i);
            sink_unit(&k, s.p + i, n);
            i += n;
            continue;
        }
        uint32_t cp;
        size_t n = utf8_next(s.p + i, s.len - i, &cp);
        if (n == 0) {
            sink_unit(&k, "\xEF\xBF\xBD", 3); /* U+FFFD for one bad byte */
            i++;
            continue;
        }
        if ((cp_hidden(cp) || cp == BULLET_CP) && !(marks && cp == ELLIPSIS_CP)) {
            char e[16];
            sink_unit(&k, e, cp_escape(cp, e));
        } else {
            sink_unit(&k, s.p + i, n);
        }
        i += n;
    }
    return k.omitted;
}

/* The marker's N is measured on the neutralized text (escapes counted at their shown length), so
 * N is exactly how many more bytes the person would have read without the cut. The marker itself
 * is not counted against max. */
static void neutralize_marked(struct sl_buf *out, struct sl_str s, size_t max, bool marks)
{
    size_t omitted = neutralize_cut(out, s, max, marks);
    if (omitted) {
        sl_buf_puts(out, ELLIPSIS "[+");
        confirm_count(out, omitted, "byte", "bytes");
        sl_buf_putc(out, ']');
    }
}

void confirm_neutralize(struct sl_buf *out, struct sl_str s, size_t max)
{
    neutralize_marked(out, s, max, false);
}

void confirm_count(struct sl_buf *out, size_t n, const char *one, const char *many)
{
    sl_buf_printf(out, "%zu %s", n, n == 1 ? one : many);
}

/* ===== units of shown text, and runs ===== */

/* Text already neutralized (a value as shown) is cut by units too, and has two more kinds: the
 * escapes of code points above the BMP ("\u{1f600}") and the count of a run ("\[1100 × U+0020]",
 * put_run). A unit holds a backslash only as its first byte or as the second of "\\": every
 * backslash of the text's own is written "\\" (values and keys are JSON first), so neither
 * escape can be faked by a value, and a backslash after a byte that is not one starts a unit
 * (tail_start relies on it). */
#define UNIT_MAX 48 /* the longest unit: "\[" 20 digits " × U+10FFFF]" is 37 bytes */
#define TIMES "\xC3\x97" /* U+00D7, in the count of a run */

static size_t shown_unit_len(const char *p, size_t len)
{
    if (p[0] == '\\') {
        size_t lim = len < UNIT_MAX ? len : UNIT_MAX;
        if (lim > 2 && p[1] == '[') {
            const char *e = memchr(p + 2, ']', lim - 2);
            if (e != NULL)
                return (size_t)(e - p) + 1;
        } else if (lim > 3 && p[1] == 'u' && p[2] == '{') {
            size_t n = 3;
            while (n < lim && sl_hex_digit(p[n]) >= 0)
                n++;
            if (n > 3 && n < lim && p[n] == '}')
                return n + 1;
        }
        return escape_len(p, len);
    }
    uint32_t cp;
    size_t n = utf8_next(p, len, &cp);
    return n ? n : 1;
}

/* The code point one unit of shown text stands for: itself, or what its escape writes. */
static uint32_t unit_cp(const char *p, size_t n)
{
    uint32_t cp = (unsigned char)p[0];
    if (p[0] != '\\' || n == 1) {
        if (n > 1 && utf8_next(p, n, &cp) == 0)
            cp = 0xFFFD;
        return cp;
    }
    if (n == 2) {
        switch (p[1]) {
        case 'b': return '\b';
        case 't': return '\t';
        case 'n': return '\n';
        case 'f': return '\f';
        case 'r': return '\r';
        default: return (unsigned char)p[1]; /* \" \\ \/ */
        }
    }
    cp = 0;
    for (size_t i = p[2] == '{' ? 3 : 2; i < n && sl_hex_digit(p[i]) >= 0; i++)
        cp = cp << 4 | (uint32_t)sl_hex_digit(p[i]);
    return cp;
}

/* Runs of RUN_MIN or more of one unit (padding: 1,100 spaces, or "\u200b" a thousand times) are
 * shown as their count, so they cost a few bytes of the room instead of pushing the rest of a
 * value (what a padded path comes to) past its cut, and the person sees how much there is.
 * Shorter runs read as written: a UUID's "00000000", a line of "========". */
#define RUN_MIN 16

static void put_run(struct sl_buf *t, uint32_t cp, size_t count)
{
    sl_buf_printf(t, "\\[%zu " TIMES " U+%04X]", count, (unsigned)cp);
}

/* The units equal to the one at s.p[i] that follow it: their number, the first included, and
 * where they end (*end). A run's count is never counted again. */
static size_t run_at(struct sl_str s, size_t i, size_t *unit, size_t *end)
{
    size_t n = shown_unit_len(s.p + i, s.len - i), j = i + n, count = 1;
    *unit = n;
    if (n > 2 && s.p[i] == '\\' && s.p[i + 1] == '[') {
        *end = j;
        return 1;
    }
    while (j < s.len && shown_unit_len(s.p + j, s.len - j) == n &&
           memcmp(s.p + j, s.p + i, n) == 0) {
        j += n;
        count++;
    }
    *end = j;
    return count;
}

/* text (neutralized) with every run of RUN_MIN units or more shown as its count. Left as it is,
 * with no copy, when it has none: most values. */
static void fold_runs(struct sl_buf *text)
{
    struct sl_str s = sl_buf_str(text);
    struct sl_buf folded = { 0 };
    size_t i = 0, copied = 0;
    while (i + RUN_MIN <= s.len) { /* a run takes RUN_MIN bytes at least */
        size_t unit, end, count = run_at(s, i, &unit, &end);
        if (count >= RUN_MIN) {
            sl_buf_put(&folded, s.p + copied, i - copied);
            put_run(&folded, unit_cp(s.p + i, unit), count);
            copied = end;
        }
        i = end;
    }
    if (copied > 0) {
        sl_buf_put(&folded, s.p + copied, s.len - copied);
        sl_buf_reset(text);
        sl_buf_put(text, folded.p, folded.len);
    }
    sl_buf_free(&folded);
}

/* ===== cutting shown text: its start and its end ===== */

/* Where the whole units at the start of s that fit in room bytes end. */
static size_t head_end(struct sl_str s, size_t room)
{
    size_t i = 0;
    while (i < s.len) {
        size_t n = shown_unit_len(s.p + i, s.len - i);
        if (n > room - i)
            break;
        i += n;
    }
    return i;
}

size_t confirm_cut_point(struct sl_str shown, size_t max)
{
    return head_end(shown, max);
}

static bool utf8_continuation(char c)
{
    return ((unsigned char)c & 0xC0) == 0x80;
}

/* Where the whole units at the end of s that fit in room bytes start: the first unit boundary at
 * or after t = s.len - room. Units can only be told apart from their start, and a value may be
 * megabytes long, so the search starts close to t: with no backslash in the UNIT_MAX bytes
 * before t, no escape reaches t and the units around it are characters; else at the first of
 * the row of backslashes before t, which starts a unit (see shown_unit_len). */
static size_t tail_start(struct sl_str s, size_t room)
{
    size_t t = room < s.len ? s.len - room : 0, back = 0;
    while (back < UNIT_MAX && back < t && s.p[t - back - 1] != '\\')
        back++;
    if (back == UNIT_MAX) {
        while (t < s.len && utf8_continuation(s.p[t]))
            t++;
        return t;
    }
    size_t i = t - back;
    while (i > 0 && s.p[i - 1] == '\\')
        i--;
    while (i < t)
        i += shown_unit_len(s.p + i, s.len - i);
    return i;
}

/* ===== compact JSON in sorted key order ===== */

static int member_cmp(const void *a, const void *b)
{
    const struct json_member *x = *(const struct json_member *const *)a;
    const struct json_member *y = *(const struct json_member *const *)b;
    size_t n = x->key.len < y->key.len ? x->key.len : y->key.len;
    int c = n ? memcmp(x->key.p, y->key.p, n) : 0;
    if (c)
        return c;
    return (x->key.len > y->key.len) - (x->key.len < y->key.len);
}

/* Members of o sorted by key bytes (UTF-8 byte order is code point order). Not RFC 8785's UTF-16
 * order: the text only needs to be deterministic, it is not hashed. In room when they fit
 * (room_n of them), else on the heap: the caller frees the result unless it is room. */
static const struct json_member **sorted_members(const struct json *o,
                                                 const struct json_member **room, size_t room_n)
{
    size_t n = o->u.obj.n;
    const struct json_member **m = n <= room_n ? room : sl_xcalloc(n ? n : 1, sizeof(*m));
    for (size_t i = 0; i < n; i++)
        m[i] = &o->u.obj.v[i];
    if (n > 1)
        qsort(m, n, sizeof(*m), member_cmp);
    return m;
}

/* json_write, but objects in sorted key order. Recursion depth is the tree's depth, which the
 * parser bounds at SL_MAX_DEPTH. */
static void write_sorted(struct sl_buf *out, const struct json *v)
{
    if (v->type == JSON_ARRAY) {
        sl_buf_putc(out, '[');
        for (size_t i = 0; i < v->u.arr.n; i++) {
            if (i)
                sl_buf_putc(out, ',');
            write_sorted(out, v->u.arr.v[i]);
        }
        sl_buf_putc(out, ']');
    } else if (v->type == JSON_OBJECT) {
        const struct json_member **m = sorted_members(v, NULL, 0);
        sl_buf_putc(out, '{');
        for (size_t i = 0; i < v->u.obj.n; i++) {
            if (i)
                sl_buf_putc(out, ',');
            json_write_string(out, m[i]->key.p, m[i]->key.len);
            sl_buf_putc(out, ':');
            write_sorted(out, m[i]->val);
        }
        sl_buf_putc(out, '}');
        free(m);
    } else {
        json_write(out, v);
    }
}

/* ===== the pieces of the message ===== */

/* s as a JSON string literal, neutralized and cut at max. */
static void put_quoted(struct sl_buf *t, struct sl_str s, size_t max)
{
    char room[256]; /* a tool or server name: no heap buffer for each (issue 24) */
    struct sl_buf q;
    sl_buf_on(&q, room, sizeof(room));
    json_write_string(&q, s.p, s.len);
    confirm_neutralize(t, sl_buf_str(&q), max);
    sl_buf_free(&q);
}

/* A key made only of [A-Za-z0-9_.-] is shown bare, as in `path: "..."`. Any other key is shown
 * quoted, so a key such as `a: "x"  b` or one with a colon or spaces cannot pose as part of the
 * layout, nor as a key followed by the undeclared marker. */
static bool key_is_plain(struct sl_str k)
{
    if (k.len == 0)
        return false;
    for (size_t i = 0; i < k.len; i++) {
        unsigned char c = (unsigned char)k.p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}

#define MARK_OPEN  ELLIPSIS "["
#define MARK_BYTES " bytes, sha256 "

/* "…[L bytes, sha256 HEX]": what an abbreviation stands for. whole is the exact text digested
 * (a key's bytes, a value's canonical JSON), so the same marker means the same whole. */
static void put_digest_mark(struct sl_buf *t, struct sl_str whole)
{
    static const char hex[] = "0123456789abcdef";
    uint8_t d[32];
    char dec[21];
    seal_sha256(whole.p, whole.len, d);
    sl_buf_puts(t, MARK_OPEN);
    sl_buf_put(t, dec, sl_u64_dec(dec, whole.len));
    sl_buf_puts(t, MARK_BYTES);
    for (size_t i = 0; i < CONFIRM_DIGEST_HEX / 2; i++) {
        sl_buf_putc(t, hex[d[i] >> 4]);
        sl_buf_putc(t, hex[d[i] & 15]);
    }
    sl_buf_putc(t, ']');
}

/* The length of put_digest_mark's marker for a whole of len bytes, without hashing: the
 * listing needs every marker's length to share out the room, but a marker's text only for a
 * value it cuts, and most values are shown whole. */
static size_t digest_mark_len(size_t len)
{
    char dec[21];
    return sizeof(MARK_OPEN) - 1 + sl_u64_dec(dec, len) + sizeof(MARK_BYTES) - 1 +
           CONFIRM_DIGEST_HEX + 1;
}

/* The key as shown: bare or quoted, and when longer than CONFIRM_MAX_KEY its start and a digest
 * marker, so two long keys that start alike still read differently. */
static void put_key(struct sl_buf *t, struct sl_str k)
{
    char room[256];
    struct sl_buf q;
    sl_buf_on(&q, room, sizeof(room));
    if (key_is_plain(k))
        sl_buf_put(&q, k.p, k.len);
    else
        json_write_string(&q, k.p, k.len);
    if (neutralize_cut(t, sl_buf_str(&q), CONFIRM_MAX_KEY, false))
        put_digest_mark(t, k);
    sl_buf_free(&q);
}

static bool has_arguments(const struct json *args)
{
    return args != NULL && !(args->type == JSON_OBJECT && args->u.obj.n == 0);
}

static void put_header(struct sl_buf *t, const struct confirm_call *c)
{
    sl_buf_puts(t, "Allow tool ");
    put_quoted(t, c->tool, CONFIRM_MAX_NAME);
    if (c->server.len) {
        sl_buf_puts(t, " on server ");
        put_quoted(t, c->server, CONFIRM_MAX_NAME);
    }
    sl_buf_puts(t, has_arguments(c->args) ? " to run with these arguments?"
                                          : " to run with no arguments?");
}

/* What sluice itself says about the call, after the listing. */
/* "YYYY-MM-DDTHH:MM:SSZ" of tm into out (NUL-terminated), or false for a year beyond four
 * digits. By hand: strftime and printf cost more than the rest of the facts together. */
static bool iso_utc(char out[21], const struct tm *tm)
{
    int year = tm->tm_year + 1900;
    if (year < 0 || year > 9999)
        return false;
    int f[6] = { year, tm->tm_mon + 1, tm->tm_mday, tm->tm_hour, tm->tm_min, tm->tm_sec };
    static const char after[6] = { '-', '-', 'T', ':', ':', 'Z' };
    char *o = out;
    for (int i = 0; i < 6; i++) {
        if (i == 0) {
            *o++ = (char)('0' + f[0] / 1000);
            *o++ = (char)('0' + f[0] / 100 % 10);
        }
        *o++ = (char)('0' + f[i] / 10 % 10);
        *o++ = (char)('0' + f[i] % 10);
        *o++ = after[i];
    }
    *o = '\0';
    return true;
}

/* The expiry as text, kept for the second it names: the questions of one second share it, and
 * gmtime_r and the formatting cost about 450 instructions a question (issue 24). sluice is
 * single-threaded. */
static const char *expiry_text(uint64_t expires)
{
    static uint64_t last;
    static char when[21];
    if (expires != last || when[0] == '\0') {
        time_t at = (time_t)expires;
        struct tm tm;
        if (gmtime_r(&at, &tm) == NULL || !iso_utc(when, &tm))
            sl_u64_dec(when, expires);
        last = expires;
    }
    return when;
}

static void put_facts(struct sl_buf *t, const struct confirm_call *c)
{
    if (c->irreversible)
        sl_buf_puts(t, "\nThis cannot be undone.");
    if (c->expires != 0) {
        const char *when = expiry_text(c->expires);
        char ttl[21];
        sl_buf_puts(t, "\nThis question expires in ");
        sl_buf_put(t, ttl, sl_u64_dec(ttl, c->ttl));
        sl_buf_puts(t, " s (at ");
        sl_buf_puts(t, when);
        sl_buf_puts(t, ").");
    }
}

/* ===== the listing ===== */

/* What a usual line's head and value take: they start in the line itself, so a question costs
 * no heap buffer per argument (issue 24). */
#define LINE_HEAD_ROOM  64
#define LINE_VALUE_ROOM 128

/* One argument line: "\n• " + head + ": " + the value as shown. */
struct line {
    const struct json_member *m;   /* NULL for arguments that are not an object */
    struct sl_buf head;            /* key as shown, and the undeclared marker */
    struct sl_buf json;            /* the whole value as JSON text, members sorted */
    struct sl_buf full;            /* the same, neutralized */
    struct sl_buf whole;           /* what the abbreviation marker digests */
    size_t mark_len;               /* the length of that marker, made only to cut the value; for
                                    * a value shorter than any marker, the shortest length */
    struct sl_buf mark;            /* the marker, once made (the sentence may cut it again) */
    size_t share;                  /* the share the line is shown at (SIZE_MAX until then) */
    struct sl_buf shown;           /* the value cut to the chosen share, with its marker */
    struct sl_str view;            /* the value as shown: full itself when it fits whole (no
                                    * copy of it: about 300 instructions a question, issue 24),
                                    * else shown */
    char head_room[LINE_HEAD_ROOM], json_room[LINE_VALUE_ROOM], full_room[LINE_VALUE_ROOM];
};

/* The lines of a usual call live on confirm_question's stack. */
#define LINES_ROOM 4

/* A line for m (NULL: arguments that are not an object), its buffers in its own rooms: lines
 * never move once made. */
static void line_init(struct line *l, const struct json_member *m)
{
    *l = (struct line){ .m = m, .share = SIZE_MAX };
    sl_buf_on(&l->head, l->head_room, sizeof(l->head_room));
    sl_buf_on(&l->json, l->json_room, sizeof(l->json_room));
    sl_buf_on(&l->full, l->full_room, sizeof(l->full_room));
}

#define LINE_FRAME 7 /* "\n• " and ": " */
#define LINE_MIN   9 /* the shortest line: "\n• a: 0" */

static void line_value(struct line *l, const struct json *v)
{
    write_sorted(&l->json, v);
    neutralize_cut(&l->full, sl_buf_str(&l->json), 0, false);
    fold_runs(&l->full);
    /* Shorter than the shortest marker: always shown whole (line_cost never falls below its
     * length), so its marker is never made and its canonical text is not needed. */
    if (l->full.len < digest_mark_len(0)) {
        l->mark_len = digest_mark_len(0);
        return;
    }
    /* The digest is over the canonical text, the bytes forwarded for this value; the shown
     * text differs from it only in member order of non-BMP keys. */
    if (canon_write(&l->whole, v) != 0) {
        sl_buf_reset(&l->whole);
        sl_buf_put(&l->whole, l->json.p, l->json.len);
    }
    l->mark_len = digest_mark_len(l->whole.len);
}

/* The fewest bytes the value can take, and what it takes when every value may use share. */
static size_t line_min(const struct line *l)
{
    return l->full.len < l->mark_len ? l->full.len : l->mark_len;
}

static size_t line_cost(const struct line *l, size_t share)
{
    size_t cap = share > l->mark_len ? share : l->mark_len;
    return l->full.len <= cap ? l->full.len : cap;
}

/* The share of a cut value's room (what its marker leaves of its share) its start gets, in
 * percent; its end gets the rest. Both ends matter: padding pushed what a path comes to
 * ("/../../root/.bashrc") past a cut that kept only the start, and a command's start says
 * what runs. */
#define HEAD_SHARE 60

/* The value cut to share bytes, appended to t: its start, the marker, its end, each end whole
 * units only (a character, an escape, a run's count), so a cut never leaves half an escape. */
static void line_cut(struct line *l, size_t share, struct sl_buf *t)
{
    struct sl_str s = sl_buf_str(&l->full);
    size_t room = share > l->mark_len ? share - l->mark_len : 0, head = room * HEAD_SHARE / 100;
    sl_buf_put(t, s.p, head_end(s, head));
    if (l->mark.len == 0)
        put_digest_mark(&l->mark, sl_buf_str(&l->whole));
    SL_REQUIRE(l->mark.len == l->mark_len); /* the room was shared out by that length */
    sl_buf_put(t, l->mark.p, l->mark.len);
    size_t from = tail_start(s, room - head);
    sl_buf_put(t, s.p + from, s.len - from);
}

/* Returns whether the value was cut. */
static bool line_show(struct line *l, size_t share)
{
    sl_buf_reset(&l->shown);
    l->share = share;
    if (l->full.len <= line_cost(l, share)) {
        l->view = sl_buf_str(&l->full);
        return false;
    }
    line_cut(l, share, &l->shown);
    l->view = sl_buf_str(&l->shown);
    return true;
}

static void lines_free(struct line *lines, size_t n, struct line *room)
{
    for (size_t i = 0; i < n; i++) {
        sl_buf_free(&lines[i].head);
        sl_buf_free(&lines[i].json);
        sl_buf_free(&lines[i].full);
        sl_buf_free(&lines[i].whole);
        sl_buf_free(&lines[i].mark);
        sl_buf_free(&lines[i].shown);
    }
    if (lines != room)
        free(lines);
}

static int key_cmp(struct sl_str a, struct sl_str b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.p, b.p, n) : 0;
    return c ? c : (a.len > b.len) - (a.len < b.len);
}

/* The member of sorted m[0..n) whose key is name, or n. */
static size_t find_sorted(const struct json_member **m, size_t n, struct sl_str name)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = key_cmp(m[mid]->key, name);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return n;
}

/* The lines in listing order: declared arguments the call sends, in policy order, then every
 * other key sorted, marked. Sets *n, and *nd to how many of them come first as declared. In
 * room (LINES_ROOM lines) when they fit, else on the heap (lines_free tells them apart). */
static struct line *make_lines(const struct confirm_call *c, struct line *room, size_t *n,
                               size_t *nd)
{
    *nd = 0;
    const struct json *args = c->args;
    if (args == NULL || (args->type == JSON_OBJECT && args->u.obj.n == 0)) {
        *n = 0;
        return NULL;
    }
    if (args->type != JSON_OBJECT) {
        /* Not an object: the gate refuses it first, but if it ever gets here the person still
         * sees exactly what would be sent. */
        struct line *l = room;
        line_init(l, NULL);
        sl_buf_puts(&l->head, "(arguments are not an object)");
        line_value(l, args);
        *n = 1;
        return l;
    }
    size_t count = args->u.obj.n, k = 0;
    const struct json_member *m_room[64]; /* a usual call's keys: no heap arrays (issue 24) */
    bool used_room[SL_ARRAY_LEN(m_room)];
    const struct json_member **m = sorted_members(args, m_room, SL_ARRAY_LEN(m_room));
    bool *used = count <= SL_ARRAY_LEN(used_room) ? used_room : sl_xcalloc(count, sizeof(*used));
    if (used == used_room)
        memset(used_room, 0, sizeof(used_room));
    struct line *lines = count <= LINES_ROOM ? room : sl_xmalloc(count * sizeof(*lines));
    for (size_t d = 0; c->declared != NULL && d < c->ndeclared; d++) {
        size_t i = find_sorted(m, count, c->declared[d]);
        if (i < count && !used[i]) {
            used[i] = true;
            line_init(&lines[k++], m[i]);
        }
    }
    size_t declared = k;
    for (size_t i = 0; i < count; i++)
        if (!used[i])
            line_init(&lines[k++], m[i]);
    for (size_t i = 0; i < count; i++) {
        put_key(&lines[i].head, lines[i].m->key);
        if (c->declared != NULL && i >= declared)
            sl_buf_puts(&lines[i].head, CONFIRM_UNDECLARED);
        line_value(&lines[i], lines[i].m->val);
    }
    if (used != used_room)
        free(used);
    if (m != m_room)
        free(m);
    *n = count;
    *nd = declared;
    return lines;
}

/* The largest share in [0, max] for which every value fits in avail bytes (costs only grow with
 * the share, so a binary search finds it); the caller has checked that share 0 fits. */
static size_t choose_share(const struct line *lines, size_t n, size_t avail, size_t max)
{
    size_t lo = 0, hi = max;
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2, total = 0;
        for (size_t i = 0; i < n && total <= avail; i++)
            total += line_cost(&lines[i], mid);
        if (total <= avail)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Whether share cuts one of lines[0..n) to less than CONFIRM_MIN_SHOWN: the client, which
 * chooses how many keys there are, would choose how little of a value the person sees. */
static bool cuts_short(const struct line *lines, size_t n, size_t share)
{
    for (size_t i = 0; i < n && share < CONFIRM_MIN_SHOWN; i++)
        if (lines[i].full.len > line_cost(&lines[i], share))
            return true;
    return false;
}

/* The share of the declared values (lines[0..nd)) and of the others, within avail bytes. The
 * declared ones are what the operator said matters, so keys the client added must not squeeze
 * them: they get the largest share, CONFIRM_MAX_VALUE, and the others share what is left. When
 * the others cannot fit beside them even at their shortest, there is no question (-1): else 170
 * junk keys would cut a declared path down to its first two bytes and a digest. Without
 * undeclared keys, every value gets the same share. No share may cut a value below
 * CONFIRM_MIN_SHOWN either (-1): a tool with no declared arguments has only shared ones. */
static int choose_shares(const struct line *lines, size_t n, size_t nd, size_t avail,
                         size_t *share_declared, size_t *share_rest)
{
    size_t first = 0, rest_least = 0;
    if (n == 0) { /* no arguments: lines is NULL, and there is nothing to share */
        *share_declared = *share_rest = 0;
        return 0;
    }
    for (size_t i = 0; i < nd; i++)
        first += line_cost(&lines[i], CONFIRM_MAX_VALUE);
    for (size_t i = nd; i < n; i++)
        rest_least += line_min(&lines[i]);
    if (first <= avail && rest_least <= avail - first) {
        *share_declared = CONFIRM_MAX_VALUE;
        *share_rest = choose_share(lines + nd, n - nd, avail - first, CONFIRM_MAX_VALUE);
        return cuts_short(lines + nd, n - nd, *share_rest) ? -1 : 0;
    }
    if (nd < n)
        return -1;
    *share_declared = *share_rest = choose_share(lines, n, avail, CONFIRM_MAX_VALUE);
    return cuts_short(lines, n, *share_declared) ? -1 : 0;
}

/* Said under a page question whose values did not all fit: the page is read as showing every
 * argument exactly as it will be forwarded, so it must say which ones it does not show whole. */
#define PAGE_CUT_NOTE                                                                            \
    "\nA value with " ELLIPSIS "[N bytes, sha256 H] in it is too long for this page: only its "    \
    "start and its end are shown, around that mark. N is the length of the whole value as "     \
    "forwarded, H the start of its SHA-256."

/* The page's one share, the largest for which the listing fits in CONFIRM_MAX_PAGE_TEXT (so most
 * calls are shown whole): it bounds what one question's record costs the store, where the records
 * of every principal share one budget. Unlike the form, declared values need no room of their
 * own and no share is too small: the keys must fit in CONFIRM_MAX_TEXT (fixed), which leaves room
 * for at most about 270 values long enough to be cut, so each keeps over 400 bytes, above
 * CONFIRM_MIN_SHOWN, of the more than 110 KiB they share. */
static size_t choose_page_share(const struct line *lines, size_t n, size_t fixed)
{
    size_t avail = CONFIRM_MAX_PAGE_TEXT - fixed - (sizeof(PAGE_CUT_NOTE) - 1);
    return n ? choose_share(lines, n, avail, avail) : 0;
}

/* ===== the observation ===== */

/* Room kept at the end of the block for its last line when the text is longer than the block. */
#define OBSERVED_TAIL 48

/* Text the upstream sent: a header line sluice writes, then each line of the text indented and
 * after "| ", neutralized. A line of the listing starts with the bullet, which neutralized text
 * never holds raw; sluice's own lines start with a letter. */
static void put_observed(struct sl_buf *t, struct sl_str text)
{
    size_t start = t->len, i = 0, left = 0;
    sl_buf_puts(t, "\n\nRead from the server just now (the server's text, not arguments of this "
                   "call):");
    while (i <= text.len) {
        const char *nl = memchr(text.p + i, '\n', text.len - i);
        size_t end = nl ? (size_t)(nl - text.p) : text.len;
        struct sl_buf one = { 0 };
        sl_buf_puts(&one, "\n  | ");
        neutralize_marked(&one, (struct sl_str){ text.p + i, end - i }, 256, true);
        if (left == 0 && t->len - start + one.len <= CONFIRM_MAX_OBSERVED - OBSERVED_TAIL)
            sl_buf_put(t, one.p, one.len);
        else
            left++;
        sl_buf_free(&one);
        i = end + 1;
    }
    if (left) {
        sl_buf_puts(t, "\n  | " ELLIPSIS "[");
        confirm_count(t, left, "more line", "more lines");
        sl_buf_puts(t, " not shown]");
    }
}

/* ===== message templates ===== */

static bool is_field_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
}

/* A field shows its value as its line does, or cut further the same way (start, marker, end)
 * when the sentence has no room for that: at share, or at the line's own share if that is less.
 * Before the lines are shown, at share alone. */
static void put_field(struct sl_buf *t, struct line *lines, size_t n, struct sl_str name,
                      size_t share)
{
    for (size_t i = 0; i < n; i++) {
        struct line *l = &lines[i];
        if (l->m != NULL && key_cmp(l->m->key, name) == 0) {
            size_t at = share < l->share ? share : l->share;
            if (l->full.len <= line_cost(l, at))
                sl_buf_put(t, l->full.p, l->full.len);
            else
                line_cut(l, at, t);
            return;
        }
    }
    sl_buf_puts(t, "(missing)");
}

/* The operator's text of the sentence neutralized, run by run: the fields between the runs are
 * values as shown (already neutralized, their cut markers sluice's own, which a second pass
 * would escape). The grammar policy.c validates. Anything else that gets here (a stray brace
 * from a policy built by hand) is shown literally rather than trusted. */
static void flush_literal(struct sl_buf *t, struct sl_buf *lit)
{
    confirm_neutralize(t, sl_buf_str(lit), 0);
    sl_buf_reset(lit);
}

static void put_sentence(struct sl_buf *t, const char *tmpl, struct line *lines, size_t n,
                         size_t share)
{
    struct sl_buf lit = { 0 };
    const char *s = tmpl;

    while (*s) {
        if ((s[0] == '{' && s[1] == '{') || (s[0] == '}' && s[1] == '}')) {
            sl_buf_putc(&lit, s[0]);
            s += 2;
            continue;
        }
        if (s[0] == '{') {
            const char *e = s + 1;
            while (is_field_char(*e))
                e++;
            if (*e == '}' && e > s + 1) {
                flush_literal(t, &lit);
                put_field(t, lines, n, (struct sl_str){ s + 1, (size_t)(e - s - 1) }, share);
                s = e + 1;
                continue;
            }
        }
        sl_buf_putc(&lit, *s++);
    }
    flush_literal(t, &lit);
    sl_buf_free(&lit);
}

/* The sentence with each field at share (put_field) in place of what sentence held. */
static void sentence_at(struct sl_buf *sentence, const char *tmpl, struct line *lines, size_t n,
                        size_t share)
{
    sl_buf_reset(sentence);
    put_sentence(sentence, tmpl, lines, n, share);
}

/* What the operator's sentence is kept before the values share the room: what it takes with each
 * field at CONFIRM_MIN_SHOWN (the least a cut value shows), at most CONFIRM_MAX_SENTENCE. Keys a
 * client adds then cannot push it out of the question, as they cannot squeeze a declared value. */
static size_t sentence_room(const char *tmpl, struct line *lines, size_t n)
{
    struct sl_buf sentence = { 0 };
    sentence_at(&sentence, tmpl, lines, n, CONFIRM_MIN_SHOWN);
    size_t room = sentence.len < CONFIRM_MAX_SENTENCE ? sentence.len : CONFIRM_MAX_SENTENCE;
    sl_buf_free(&sentence);
    return room;
}

/* The sentence within room bytes: its fields as their lines show them, or each cut to the
 * largest share that fits (a field longer than CONFIRM_MAX_SENTENCE never fits whole, so the
 * search starts there). Never cut through its own text, never left out: -1 when it does not fit
 * even with every field at its shortest. The length only grows with the share. */
static int sentence_within(struct sl_buf *sentence, const char *tmpl, struct line *lines,
                           size_t n, size_t room)
{
    size_t lo = 0, hi = CONFIRM_MAX_SENTENCE;
    sentence_at(sentence, tmpl, lines, n, hi);
    if (sentence->len <= room) /* the usual case: every field as its line shows it */
        return 0;
    sentence_at(sentence, tmpl, lines, n, 0);
    if (sentence->len > room)
        return -1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        sentence_at(sentence, tmpl, lines, n, mid);
        if (sentence->len <= room)
            lo = mid;
        else
            hi = mid - 1;
    }
    sentence_at(sentence, tmpl, lines, n, lo);
    return 0;
}

/* ===== the question ===== */

static bool has_sentence(const struct confirm_call *c)
{
    return c->tmpl != NULL && *c->tmpl != '\0';
}

int confirm_question(struct sl_buf *out, const struct confirm_call *c)
{
    struct sl_buf head, facts, list, sentence = { 0 };
    char head_room[256], facts_room[256], list_room[1024]; /* a usual question's sizes */
    size_t n = 0, nd = 0, fixed, least = 0, share_declared, share_rest;
    struct line *lines = NULL, lines_room[LINES_ROOM];
    int rc = -1;
    bool cut = false;
    sl_buf_on(&head, head_room, sizeof(head_room));
    sl_buf_on(&facts, facts_room, sizeof(facts_room));
    sl_buf_on(&list, list_room, sizeof(list_room));

    /* More members than even the shortest lines could show: refused before any work per member,
     * so a call with a hundred thousand keys costs no more than a count. */
    if (c->args != NULL && c->args->type == JSON_OBJECT &&
        c->args->u.obj.n > CONFIRM_MAX_TEXT / LINE_MIN)
        return -1;
    lines = make_lines(c, lines_room, &n, &nd);

    put_header(&head, c);
    put_facts(&facts, c);
    /* observed without observes: a read made before a reload took observe: off the tool */
    fixed = head.len + facts.len + (c->observes || c->observed.len ? CONFIRM_MAX_OBSERVED : 0);
    /* The form keeps the sentence's room ("\n\n" after it) first; the page has it on top of its
     * bound (confirm_call's whole). */
    if (has_sentence(c) && !c->whole)
        fixed += sentence_room(c->tmpl, lines, n) + 2;
    for (size_t i = 0; i < n; i++) {
        fixed += LINE_FRAME + lines[i].head.len;
        least += line_min(&lines[i]);
    }
    /* Every key must be shown: if not even the keys with the shortest values fit, no question. */
    if (fixed > CONFIRM_MAX_TEXT || least > CONFIRM_MAX_TEXT - fixed)
        goto out;
    if (c->whole)
        share_declared = share_rest = choose_page_share(lines, n, fixed);
    else if (choose_shares(lines, n, nd, CONFIRM_MAX_TEXT - fixed, &share_declared,
                           &share_rest) != 0)
        goto out;
    sl_buf_put(&list, head.p, head.len);
    for (size_t i = 0; i < n; i++) {
        cut |= line_show(&lines[i], i < nd ? share_declared : share_rest);
        sl_buf_puts(&list, "\n" BULLET " ");
        sl_buf_put(&list, lines[i].head.p, lines[i].head.len);
        sl_buf_puts(&list, ": ");
        sl_buf_put(&list, lines[i].view.p, lines[i].view.len);
    }
    sl_buf_put(&list, facts.p, facts.len);
    if (c->whole && cut)
        sl_buf_puts(&list, PAGE_CUT_NOTE);
    if (c->observed.len)
        put_observed(&list, c->observed);
    SL_REQUIRE(list.len <= (c->whole ? CONFIRM_MAX_PAGE_TEXT : CONFIRM_MAX_TEXT));
    if (has_sentence(c)) {
        /* the form's sentence takes what the values left: its kept room at least */
        size_t room = CONFIRM_MAX_SENTENCE;
        SL_REQUIRE(c->whole || list.len + 2 <= CONFIRM_MAX_TEXT);
        if (!c->whole && CONFIRM_MAX_TEXT - list.len - 2 < room)
            room = CONFIRM_MAX_TEXT - list.len - 2;
        if (sentence_within(&sentence, c->tmpl, lines, n, room) != 0)
            goto out;
    }
    sl_buf_reserve(out, sentence.len + 2 + list.len); /* one allocation, not a realloc or two */
    if (has_sentence(c)) {
        sl_buf_put(out, sentence.p, sentence.len);
        sl_buf_puts(out, "\n\n");
    }
    sl_buf_put(out, list.p, list.len);
    rc = 0;
out:
    lines_free(lines, n, lines_room);
    sl_buf_free(&head);
    sl_buf_free(&facts);
    sl_buf_free(&list);
    sl_buf_free(&sentence);
    return rc;
}

int confirm_render(struct sl_buf *out, struct sl_str tool, const struct json *args,
                   struct sl_str server)
{
    struct confirm_call c = { .tool = tool, .server = server, .args = args };
    return confirm_question(out, &c);
}

int confirm_render_message(struct sl_buf *out, const char *tmpl, struct sl_str tool,
                           const struct json *args, struct sl_str server)
{
    struct confirm_call c = { .tool = tool, .server = server, .args = args, .tmpl = tmpl };
    return confirm_question(out, &c);
}
