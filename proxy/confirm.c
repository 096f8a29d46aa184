/* confirm.c: the confirmation text a person reads before a gated call runs (DESIGN §5 inv. 5).
 *
 * The text is built in three steps:
 *   1. every untrusted piece (tool, server, value, any key that is not a plain identifier) is
 *      first written as JSON text, so quotes, backslashes and C0 controls are already escaped and
 *      one value can never span two lines;
 *   2. that text is neutralized: each code point that a terminal or a form could hide, reorder or
 *      act on is replaced by a visible escape, and the piece is cut at its own limit with a marker;
 *   3. the lines are joined and the whole message is cut at CONFIRM_MAX_TEXT on a line boundary,
 *      with a last line saying how much was left out.
 * Members are listed in sorted key order at every depth, so the same value (the one the digest
 * binds, whatever order the client sent its keys in) always gives the same text. */
#include "confirm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ELLIPSIS "\xE2\x80\xA6" /* U+2026, the mark of every cut */

#define CONFIRM_MAX_KEY  128   /* bytes shown of one argument name */
#define CONFIRM_MAX_NAME 256   /* bytes shown of the tool or server name (a 128-char name + quotes
                                * fits, so only names the spec already calls odd are cut) */

/* ===== which code points are shown as escapes ===== */

struct cp_range {
    uint32_t lo, hi;
};

/* Sorted, non-overlapping. C0, DEL and C1; the Unicode Default_Ignorable_Code_Point set (zero
 * width, joiners, invisible operators, fillers, variation selectors, tags: all render as nothing,
 * so they can hide or disguise text); every bidi control (they reorder what is displayed, e.g.
 * "invoice\u202efdp.exe" displays as "invoiceexe.pdf"); U+2028/2029, which some renderers break
 * lines on; U+FFF9-FFFB, interlinear annotations, whose annotation text a renderer may hide.
 * Private-use and unassigned code points are left alone: they are visible (as boxes, at worst). */
static const struct cp_range hidden_ranges[] = {
    { 0x0000, 0x001F },   /* C0, ESC included */
    { 0x007F, 0x009F },   /* DEL, C1 (CSI U+009B acts like ESC [ on some terminals) */
    { 0x00AD, 0x00AD },   /* soft hyphen */
    { 0x034F, 0x034F },   /* combining grapheme joiner */
    { 0x061C, 0x061C },   /* Arabic letter mark (bidi) */
    { 0x115F, 0x1160 },   /* Hangul choseong/jungseong fillers */
    { 0x17B4, 0x17B5 },   /* Khmer inherent vowels */
    { 0x180B, 0x180F },   /* Mongolian variation selectors and vowel separator */
    { 0x200B, 0x200F },   /* ZWSP, ZWNJ, ZWJ, LRM, RLM */
    { 0x2028, 0x202E },   /* line/paragraph separators, LRE RLE PDF LRO RLO */
    { 0x2060, 0x206F },   /* word joiner, invisible operators, LRI RLI FSI PDI, deprecated */
    { 0x3164, 0x3164 },   /* Hangul filler */
    { 0xFE00, 0xFE0F },   /* variation selectors */
    { 0xFEFF, 0xFEFF },   /* BOM / zero width no-break space */
    { 0xFFA0, 0xFFA0 },   /* halfwidth Hangul filler */
    { 0xFFF0, 0xFFFB },   /* reserved default-ignorable, interlinear annotation */
    { 0x1BCA0, 0x1BCA3 }, /* shorthand format controls */
    { 0x1D173, 0x1D17A }, /* musical formatting controls */
    { 0xE0000, 0xE0FFF }, /* tags, variation selectors supplement, reserved default-ignorable */
};

static bool cp_hidden(uint32_t cp)
{
    size_t lo = 0, hi = SL_ARRAY_LEN(hidden_ranges);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < hidden_ranges[mid].lo)
            hi = mid;
        else if (cp > hidden_ranges[mid].hi)
            lo = mid + 1;
        else
            return true;
    }
    return false;
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

/* Output is produced in units (one raw code point, or one whole escape) so a cut never splits a
 * character or leaves half an escape that reads as something else. Once one unit does not fit,
 * every later unit is counted as omitted too: showing a later, shorter unit would hide a gap. */
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

/* The marker's N is measured on the neutralized text (escapes counted at their shown length), so
 * N is exactly how many more bytes the person would have read without the cut. The marker itself
 * is not counted against max. */
void confirm_neutralize(struct sl_buf *out, struct sl_str s, size_t max)
{
    struct sink k = { out, max, 0, 0 };
    size_t i = 0;
    while (i < s.len) {
        uint32_t cp;
        size_t n = utf8_next(s.p + i, s.len - i, &cp);
        if (n == 0) {
            sink_unit(&k, "\xEF\xBF\xBD", 3); /* U+FFFD for one bad byte */
            i++;
            continue;
        }
        if (cp_hidden(cp)) {
            char e[16];
            sink_unit(&k, e, cp_escape(cp, e));
        } else {
            sink_unit(&k, s.p + i, n);
        }
        i += n;
    }
    if (k.omitted)
        sl_buf_printf(out, ELLIPSIS "[+%zu bytes]", k.omitted);
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
 * order: the text only needs to be deterministic, it is not hashed. Caller frees. */
static const struct json_member **sorted_members(const struct json *o)
{
    size_t n = o->u.obj.n;
    const struct json_member **m = sl_xcalloc(n ? n : 1, sizeof(*m));
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
        const struct json_member **m = sorted_members(v);
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
    struct sl_buf q = { 0 };
    json_write_string(&q, s.p, s.len);
    confirm_neutralize(t, sl_buf_str(&q), max);
    sl_buf_free(&q);
}

static void put_value(struct sl_buf *t, const struct json *v)
{
    struct sl_buf j = { 0 };
    write_sorted(&j, v);
    confirm_neutralize(t, sl_buf_str(&j), CONFIRM_MAX_VALUE);
    sl_buf_free(&j);
}

/* A key made only of [A-Za-z0-9_.-] is shown bare, as in `path: "..."`. Any other key is shown
 * quoted, so a key such as `a: "x"  b` or one with a colon or spaces cannot pose as part of the
 * layout. */
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

static void put_key(struct sl_buf *t, struct sl_str k)
{
    if (key_is_plain(k))
        confirm_neutralize(t, k, CONFIRM_MAX_KEY);
    else
        put_quoted(t, k, CONFIRM_MAX_KEY);
}

static bool has_arguments(const struct json *args)
{
    return args != NULL && !(args->type == JSON_OBJECT && args->u.obj.n == 0);
}

static void put_header(struct sl_buf *t, struct sl_str tool, const struct json *args,
                       struct sl_str server)
{
    sl_buf_puts(t, "Allow tool ");
    put_quoted(t, tool, CONFIRM_MAX_NAME);
    if (server.len) {
        sl_buf_puts(t, " on server ");
        put_quoted(t, server, CONFIRM_MAX_NAME);
    }
    sl_buf_puts(t, has_arguments(args) ? " to run with these arguments?"
                                       : " to run with no arguments?");
}

static void put_members(struct sl_buf *t, const struct json *args)
{
    size_t n = args->u.obj.n;
    size_t shown = n < CONFIRM_MAX_ARGS ? n : CONFIRM_MAX_ARGS;
    const struct json_member **m = sorted_members(args);
    for (size_t i = 0; i < shown; i++) {
        sl_buf_puts(t, "\n  ");
        put_key(t, m[i]->key);
        sl_buf_puts(t, ": ");
        put_value(t, m[i]->val);
    }
    free(m);
    if (n > shown)
        sl_buf_printf(t, "\n  " ELLIPSIS "and %zu more argument%s", n - shown,
                      n - shown == 1 ? "" : "s");
}

/* Where to cut text so that it fits in budget bytes: after the last whole line that fits, so
 * no argument is shown half. Only if the first line alone is too long (it cannot be, given the
 * name limits) is it cut inside the line, still on a UTF-8 boundary. */
static size_t cut_point(struct sl_str text, size_t budget)
{
    const char *nl = memrchr(text.p, '\n', budget + 1);
    if (nl != NULL && nl > text.p)
        return (size_t)(nl - text.p);
    size_t k = budget;
    while (k > 0 && ((unsigned char)text.p[k] & 0xC0) == 0x80)
        k--;
    return k;
}

/* Appends text to out within CONFIRM_MAX_TEXT. N in the marker is the number of bytes of the
 * untruncated message left out (counting the newline that ended the last line shown). The budget
 * reserves room for a marker carrying the largest possible N, so the result always fits. */
static void put_bounded(struct sl_buf *out, struct sl_str text)
{
    if (text.len <= CONFIRM_MAX_TEXT) {
        sl_buf_put(out, text.p, text.len);
        return;
    }
    static const char fmt[] = "\n" ELLIPSIS "[message truncated: %zu more bytes]";
    int worst = snprintf(NULL, 0, fmt, text.len);
    SL_REQUIRE(worst > 0 && (size_t)worst < CONFIRM_MAX_TEXT);
    size_t keep = cut_point(text, CONFIRM_MAX_TEXT - (size_t)worst);
    sl_buf_put(out, text.p, keep);
    sl_buf_printf(out, fmt, text.len - keep);
}

void confirm_render(struct sl_buf *out, struct sl_str tool, const struct json *args,
                    struct sl_str server)
{
    struct sl_buf t = { 0 };
    put_header(&t, tool, args, server);
    if (args != NULL && args->type == JSON_OBJECT) {
        put_members(&t, args);
    } else if (args != NULL) {
        /* Not an object: the gate should have refused it, but if it ever gets here the person
         * still sees exactly what would be sent. */
        sl_buf_puts(&t, "\n  (arguments are not an object): ");
        put_value(&t, args);
    }
    put_bounded(out, sl_buf_str(&t));
    sl_buf_free(&t);
}

/* ===== message templates ===== */

/* Room kept for the marker confirm_neutralize adds after a cut: the ellipsis, "[+", 20 digits
 * and " bytes]". */
#define MARKER_ROOM 32

static bool is_field_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
}

static void put_field(struct sl_buf *t, const struct json *args, const char *name, size_t len)
{
    for (size_t i = 0; args != NULL && args->type == JSON_OBJECT && i < args->u.obj.n; i++) {
        const struct json_member *m = &args->u.obj.v[i];
        if (m->key.len == len && memcmp(m->key.p, name, len) == 0) {
            put_value(t, m->val);
            return;
        }
    }
    sl_buf_puts(t, "(missing)");
}

/* The grammar policy.c validates. Anything else that gets here (a stray brace from a policy
 * built by hand) is shown literally rather than trusted. */
static void put_sentence(struct sl_buf *t, const char *tmpl, const struct json *args)
{
    const char *s = tmpl;

    while (*s) {
        if ((s[0] == '{' && s[1] == '{') || (s[0] == '}' && s[1] == '}')) {
            sl_buf_putc(t, s[0]);
            s += 2;
            continue;
        }
        if (s[0] == '{') {
            const char *e = s + 1;
            while (is_field_char(*e))
                e++;
            if (*e == '}' && e > s + 1) {
                put_field(t, args, s + 1, (size_t)(e - s - 1));
                s = e + 1;
                continue;
            }
        }
        sl_buf_putc(t, *s++);
    }
}

void confirm_render_message(struct sl_buf *out, const char *tmpl, struct sl_str tool,
                            const struct json *args, struct sl_str server)
{
    struct sl_buf list = { 0 }, raw = { 0 }, sentence = { 0 };
    size_t room;

    confirm_render(&list, tool, args, server);
    room = CONFIRM_MAX_TEXT - list.len;  /* confirm_render never exceeds CONFIRM_MAX_TEXT */
    room = room > 2 ? room - 2 : 0;      /* the blank line */
    if (room > CONFIRM_MAX_SENTENCE)
        room = CONFIRM_MAX_SENTENCE;
    if (tmpl != NULL && *tmpl != '\0') {
        /* Values are already neutralized by put_value; neutralizing them again changes nothing,
         * and it catches whatever the operator's own text holds. */
        put_sentence(&raw, tmpl, args);
        confirm_neutralize(&sentence, sl_buf_str(&raw), 0);
        if (sentence.len > room) {
            sl_buf_reset(&sentence);
            if (room > MARKER_ROOM)
                confirm_neutralize(&sentence, sl_buf_str(&raw), room - MARKER_ROOM);
        }
    }
    if (sentence.len > 0) {
        sl_buf_put(out, sentence.p, sentence.len);
        sl_buf_puts(out, "\n\n");
    }
    sl_buf_put(out, list.p, list.len);
    sl_buf_free(&list);
    sl_buf_free(&raw);
    sl_buf_free(&sentence);
}
