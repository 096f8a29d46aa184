/* policy_name.c: the characters no MCP tool name has, and the syntax an approvers: pattern
 * does not have (why: policy_name.h). */
#include "policy_name.h"

#include <string.h>

#include "unicode_hidden.h"

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
    /* NEL (U+0085) is whitespace too, but reported with the C1 controls around it. */
    return unicode_hidden(cp) ? "an invisible or format character" : NULL;
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

static bool hex_upper(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

/* The length of the RFC 2253 escape at p (p[0] is '\\'), as OpenSSL writes a subject
 * (XN_FLAG_RFC2253), or 0 when it is none. */
static size_t rfc2253_escape(const unsigned char *p, size_t n)
{
    if (n >= 2 && p[1] != '\0' && strchr(",+\"\\<>;=# ", p[1]) != NULL)
        return 2;
    return n >= 3 && hex_upper(p[1]) && hex_upper(p[2]) ? 3 : 0;
}

static const char *pattern_flaw(uint32_t cp, const char **instead)
{
    if (cp == '{' || cp == '}') {
        *instead = "write one pattern per entry";
        return "braces are not alternatives here";
    }
    if (cp == '[' || cp == ']') {
        *instead = "write one pattern per entry, or ? for any one character";
        return "brackets are not character classes here";
    }
    if (cp == '\\') {
        *instead = "only * and ? are special (? is any one character); a backslash may only "
                   "start a cert: subject's own escape as sluice shows it: \\, for a comma, \\C3 for "
                   "a byte";
        return "a backslash escapes nothing here";
    }
    if (!unicode_hidden(cp))
        return NULL;
    *instead = "write the principal as sluice names it (the journal's principal field)";
    return "an invisible or format character";
}

bool policy_pattern_plain(const char *pat, size_t len, struct policy_name_flaw *flaw)
{
    const unsigned char *p = (const unsigned char *)pat;
    const unsigned char *colon = memchr(p, ':', len);
    size_t i = 0, at = 1;

    for (; i < len; at++) {
        uint32_t cp = 0;
        size_t k = utf8_next(p + i, len - i, &cp);
        const char *what, *instead = NULL;
        size_t esc = k == 1 && cp == '\\' ? rfc2253_escape(p + i, len - i) : 0;
        if (esc > 0) {
            at += esc - 1;
            i += esc;
            continue;
        }
        if (k == 0) {
            what = "bytes that are not UTF-8";
            instead = "write the principal as sluice names it (the journal's principal field)";
        } else if (cp == ' ' && (i == 0 || i + 1 == len || (colon && p + i == colon + 1))) {
            what = "whitespace";
            instead = "remove it: no principal has a space at either end or after its source's "
                      "':' (a cert: subject escapes a leading or trailing one as \\ )";
        } else {
            what = pattern_flaw(cp, &instead);
        }
        if (what != NULL) {
            *flaw = (struct policy_name_flaw){ .at = at, .cp = cp, .what = what, .instead = instead };
            return false;
        }
        i += k;
    }
    return true;
}
