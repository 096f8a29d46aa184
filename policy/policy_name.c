/* policy_name.c: the characters no MCP tool name has (why: policy_name.h). */
#include "policy_name.h"

struct cp_range {
    uint32_t lo, hi;
};

/* Sorted, non-overlapping: proxy/confirm.c's hidden ranges less the C0 controls (the caller's)
 * and the combining overlays (visible marks on a letter). Every entry renders as nothing or as
 * a blank, or reorders what is displayed. */
static const struct cp_range invisible[] = {
    { 0x007F, 0x009F },   /* DEL, C1 (NEL is whitespace) */
    { 0x00A0, 0x00A0 },   /* no-break space */
    { 0x00AD, 0x00AD },   /* soft hyphen */
    { 0x034F, 0x034F },   /* combining grapheme joiner */
    { 0x061C, 0x061C },   /* Arabic letter mark (bidi) */
    { 0x115F, 0x1160 },   /* Hangul choseong/jungseong fillers */
    { 0x1680, 0x1680 },   /* Ogham space mark */
    { 0x17B4, 0x17B5 },   /* Khmer inherent vowels */
    { 0x180B, 0x180F },   /* Mongolian variation selectors and vowel separator */
    { 0x2000, 0x200F },   /* en quad .. hair space; ZWSP, ZWNJ, ZWJ, LRM, RLM */
    { 0x2028, 0x202F },   /* line/paragraph separators, LRE RLE PDF LRO RLO, narrow nbsp */
    { 0x205F, 0x206F },   /* medium math space, word joiner, invisible operators, isolates */
    { 0x2800, 0x2800 },   /* braille pattern blank */
    { 0x3000, 0x3000 },   /* ideographic space */
    { 0x3164, 0x3164 },   /* Hangul filler */
    { 0xFE00, 0xFE0F },   /* variation selectors */
    { 0xFEFF, 0xFEFF },   /* BOM / zero width no-break space */
    { 0xFFA0, 0xFFA0 },   /* halfwidth Hangul filler */
    { 0xFFF0, 0xFFFB },   /* reserved default-ignorable, interlinear annotation */
    { 0x1BCA0, 0x1BCA3 }, /* shorthand format controls */
    { 0x1D173, 0x1D17A }, /* musical formatting controls */
    { 0xE0000, 0xE0FFF }, /* tags, variation selectors supplement, reserved default-ignorable */
};

static bool cp_invisible(uint32_t cp)
{
    size_t lo = 0, hi = sizeof(invisible) / sizeof(invisible[0]);

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < invisible[mid].lo)
            hi = mid;
        else if (cp > invisible[mid].hi)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

/* The code point at p (n > 0 bytes) into *cp, and its length; 0 when the bytes there are not
 * UTF-8 (a stray continuation, a cut sequence, an overlong form, a surrogate, past U+10FFFF). */
static size_t utf8_next(const unsigned char *p, size_t n, uint32_t *cp)
{
    static const uint32_t least[] = { 0, 0, 0x80, 0x800, 0x10000 };
    size_t k = p[0] < 0x80 ? 1 : p[0] >= 0xC2 && p[0] < 0xE0 ? 2 : p[0] >= 0xE0 && p[0] < 0xF0 ? 3
             : p[0] >= 0xF0 && p[0] < 0xF5 ? 4 : 0;
    uint32_t c;

    if (k == 0 || k > n)
        return 0;
    c = k == 1 ? p[0] : p[0] & (0x7F >> k);
    for (size_t i = 1; i < k; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        c = c << 6 | (p[i] & 0x3F);
    }
    if (c < least[k] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return k;
}

static const char *cp_flaw(uint32_t cp)
{
    if (cp == '*' || cp == '?' || cp == '[' || cp == ']' || cp == '{' || cp == '}')
        return "a glob character";
    if (cp == ' ')
        return "whitespace";
    return cp_invisible(cp) ? "an invisible or format character" : NULL;
}

bool policy_name_plain(const char *name, size_t len, struct policy_name_flaw *flaw)
{
    const unsigned char *p = (const unsigned char *)name;
    size_t i = 0, at = 1;

    for (; i < len; at++) {
        uint32_t cp = 0;
        size_t k = utf8_next(p + i, len - i, &cp);
        const char *what = k == 0 ? "bytes that are not UTF-8" : cp_flaw(cp);
        if (what != NULL) {
            *flaw = (struct policy_name_flaw){ .at = at, .cp = cp, .what = what };
            return false;
        }
        i += k;
    }
    return true;
}
