/* unicode_hidden.c: the invisible and reordering code points (why: unicode_hidden.h). */
#include "unicode_hidden.h"

/* Sorted, non-overlapping. DEL and C1; the Unicode Default_Ignorable_Code_Point set (zero
 * width, joiners, invisible operators, fillers, variation selectors, tags: all render as
 * nothing, so they can hide or disguise text); every bidi control (they reorder what is
 * displayed, e.g. "invoice\u202efdp.exe" displays as "invoiceexe.pdf"); U+2028/2029, which
 * some renderers break lines on; U+FFF9-FFFB, interlinear annotations, whose annotation text a
 * renderer may hide; every space but U+0020 (the Zs separators, and U+2800, the blank braille
 * pattern), which read as a plain space: "/tmp/my\u00a0file" is another path than
 * "/tmp/my file". Private-use and unassigned code points are left out: they are visible (as
 * boxes, at worst). */
static const struct unicode_range hidden[] = {
    { 0x007F, 0x009F },   /* DEL, C1 (CSI U+009B acts like ESC [ on some terminals) */
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

bool unicode_range_has(const struct unicode_range *r, size_t n, uint32_t cp)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid].lo)
            hi = mid;
        else if (cp > r[mid].hi)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

bool unicode_hidden(uint32_t cp)
{
    return unicode_range_has(hidden, sizeof(hidden) / sizeof(hidden[0]), cp);
}
