/* rules.c: the argument rules of tools.<tool>.args, matched against one call (see rules.h).
 *
 * The policy has already validated every rule (policy.c): patterns are normalized, regexes
 * compile, bounds are JSON numbers with min <= max. So every failure here is about the call,
 * and each one becomes a DENY that names the rule, never a pass.
 *
 * Globs are matched segment by segment with the classic one-backtrack-point wildcard loop, once
 * over segments ("**" is the star) and once inside a segment ('*' is the star). Each star
 * subsumes the ones before it, so remembering only the last one is exact and keeps matching
 * O(n*m): an agent cannot make a path that blows up the matcher. */
#include "rules.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <unicase.h>
#include <unistr.h>
#include <uninorm.h>

#include "ere.h"
#include "fold.h"
#include "unicode_hidden.h"

#define SHOW_MAX 40   /* bytes of a value or pattern quoted in why */

/* ===== paths ===== */

/* Start of the last segment of the path being built in b (after its '/', or 0). */
static size_t last_seg(const struct sl_buf *b)
{
    const char *slash = b->len ? memrchr(b->p, '/', b->len) : NULL;
    return slash ? (size_t)(slash - b->p) + 1 : 0;
}

static void truncate_to(struct sl_buf *b, size_t len)
{
    b->len = len;
    if (b->p)
        b->p[len] = '\0';
}

int rules_normalize_path(const char *in, size_t len, struct sl_buf *out)
{
    bool abs = len > 0 && in[0] == '/';

    if (len == 0)
        return -1;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)in[i] < 0x20 || in[i] == 0x7f)
            return -1;
    /* While building, an absolute path is "/a/b" with the root as "", a relative one "a/b". */
    sl_buf_reset(out);
    for (size_t i = 0; i < len;) {
        size_t e = i;
        while (e < len && in[e] != '/')
            e++;
        const char *seg = in + i;
        size_t n = e - i;
        i = e + 1;
        if (n == 0 || (n == 1 && seg[0] == '.'))
            continue;
        if (n == 2 && seg[0] == '.' && seg[1] == '.') {
            size_t last = last_seg(out);
            bool up = out->len > 0 && !(out->len - last == 2 && out->p[last] == '.' &&
                                        out->p[last + 1] == '.');
            if (up)
                truncate_to(out, last ? last - 1 : 0);
            else if (!abs)
                sl_buf_puts(out, out->len ? "/.." : "..");
            /* else: ".." at the root stays at the root, as the kernel does */
            continue;
        }
        if (abs || out->len)
            sl_buf_putc(out, '/');
        sl_buf_put(out, seg, n);
    }
    if (out->len == 0)
        sl_buf_puts(out, abs ? "/" : ".");
    return 0;
}

/* ===== globs ===== */

#define END SIZE_MAX

/* Offset of the segment after the one at off in s, or END. "/" is one empty segment (the root
 * of "/"), "/a" is "" then "a", so an absolute pattern only matches an absolute path. */
static size_t seg_next(const char *s, size_t off)
{
    const char *slash = strchr(s + off, '/');
    return slash && slash[1] != '\0' ? (size_t)(slash - s) + 1 : END;
}

static size_t seg_len(const char *s, size_t off)
{
    return strcspn(s + off, "/");
}

/* Bytes of the UTF-8 character at p (at most n): '?' and the '*' backtrack step over whole
 * characters. */
static size_t char_len(const char *p, size_t n)
{
    size_t k = 1;
    while (k < n && ((unsigned char)p[k] & 0xC0) == 0x80)
        k++;
    return k;
}

/* One segment: '*' any run of characters, '?' one character, anything else itself. */
static bool seg_match(const char *p, size_t pn, const char *s, size_t sn)
{
    size_t pi = 0, si = 0, star = END, mark = 0;

    while (si < sn) {
        if (pi < pn && p[pi] == '*') {
            star = pi++;
            mark = si;
        } else if (pi < pn && p[pi] == '?') {
            pi++;
            si += char_len(s + si, sn - si);
        } else if (pi < pn && p[pi] == s[si]) {
            pi++;
            si++;
        } else if (star != END) {
            pi = star + 1;
            mark += char_len(s + mark, sn - mark);
            si = mark;
        } else {
            return false;
        }
    }
    while (pi < pn && p[pi] == '*')
        pi++;
    return pi == pn;
}

/* The root's empty segment matches only an empty pattern segment (or "**"): "*" must not
 * match "/". */
static bool seg_at_match(const char *pat, size_t pi, const char *path, size_t si)
{
    size_t pn = seg_len(pat, pi), sn = seg_len(path, si);

    if (sn == 0 || pn == 0)
        return sn == pn;
    return seg_match(pat + pi, pn, path + si, sn);
}

static bool seg_is_globstar(const char *pat, size_t pi)
{
    return seg_len(pat, pi) == 2 && pat[pi] == '*' && pat[pi + 1] == '*';
}

bool rules_glob_match(const char *pattern, const char *path)
{
    size_t pi = 0, si = 0, star = END, mark = 0;

    while (si != END) {
        if (pi != END && seg_is_globstar(pattern, pi)) {
            star = pi;
            pi = seg_next(pattern, pi);
            mark = si;
        } else if (pi != END && seg_at_match(pattern, pi, path, si)) {
            pi = seg_next(pattern, pi);
            si = seg_next(path, si);
        } else if (star != END) {
            pi = seg_next(pattern, star);
            mark = seg_next(path, mark);
            si = mark;
        } else {
            return false;
        }
    }
    while (pi != END && seg_is_globstar(pattern, pi))
        pi = seg_next(pattern, pi);
    return pi == END;
}

/* ===== spellings ===== */

static bool is_ascii(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] >= 0x80)
            return false;
    return true;
}

static bool has_upper_ascii(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] >= 'A' && s[i] <= 'Z')
            return true;
    return false;
}

/* The length of the code point at p if HFS+ ignores it in a name (3 bytes), else 0: U+200C to
 * U+200F, U+202A to U+202E, U+206A to U+206F and U+FEFF, the list git checks ".git" against
 * since macOS opened ".g\u200cit" as .git (CVE-2014-9390). */
static size_t hfs_ignorable(const unsigned char *p, size_t left)
{
    if (left < 3)
        return 0;
    if (p[0] == 0xef)
        return p[1] == 0xbb && p[2] == 0xbf ? 3 : 0;
    if (p[0] != 0xe2)
        return 0;
    if (p[1] == 0x80)
        return (p[2] >= 0x8c && p[2] <= 0x8f) || (p[2] >= 0xaa && p[2] <= 0xae) ? 3 : 0;
    return p[1] == 0x81 && p[2] >= 0xaa && p[2] <= 0xaf ? 3 : 0;
}

/* s[0..len) as file systems read a name beyond its case, into out (which it resets): without
 * the code points HFS+ ignores (hfs_ignorable), and with every dotless i (U+0131) as "i" (NTFS,
 * exFAT and FAT on Windows, ZFS and Samba told to ignore case compare names by their capitals,
 * and the dotless i's is "I", as "i"'s is; case folding keeps the two apart, as Unicode folds
 * "I" only to "i"). NULL when s has neither, so the caller reads s itself. */
static const char *unquirked(const char *s, size_t len, struct sl_buf *out)
{
    const unsigned char *u = (const unsigned char *)s;
    bool any = false;
    for (size_t i = 0; i < len && !any; i++)
        any = u[i] == 0xc4 || u[i] == 0xe2 || u[i] == 0xef;
    if (!any)
        return NULL;
    sl_buf_reset(out);
    for (size_t i = 0; i < len;) {
        size_t skip = hfs_ignorable(u + i, len - i);
        if (skip) {
            i += skip;
        } else if (i + 1 < len && u[i] == 0xc4 && u[i + 1] == 0xb1) {
            sl_buf_putc(out, 'i');
            i += 2;
        } else {
            sl_buf_putc(out, s[i++]);
        }
    }
    return out->p ? out->p : "";
}

/* s[0..len) into out (which it resets) as file systems that ignore case and Unicode's spelling
 * compare names, all of them at once: Unicode's canonical caseless match, composed (NFC of the
 * full case folding of the decomposed text), read as unquirked reads it. "\u00e4",
 * "a\u0308", "\u00c4" and "A\u0308" are one name to macOS's file systems (and the reference
 * filesystem server finds "a\u0308" as "\u00e4"); ".ssh" and ".SSH" are one directory on macOS
 * and Windows; "K", "k" and the Kelvin sign are one letter; "\u00df" is "ss" and "\ufb01" is "fi"
 * as Linux's case-insensitive directories (ext4, f2fs) fold them; "\u0131d_rsa" is "id_rsa" on
 * NTFS, ".s\u200csh" is .ssh on HFS+. ASCII folds to its lowercase. Nothing here touches '/',
 * '.', '*' or '?', so the segments of a normalized path and of a pattern stay what they were.
 * false when it cannot tell (out of memory; bad UTF-8, which the JSON reader and the YAML loader
 * let none of through). */
static bool loosen(const char *s, size_t len, bool ascii, struct sl_buf *out)
{
    sl_buf_reset(out);
    if (ascii) {
        sl_buf_put(out, s, len);
        for (size_t i = 0; i < len; i++)
            if (out->p[i] >= 'A' && out->p[i] <= 'Z')
                out->p[i] = (char)(out->p[i] - 'A' + 'a');
        return true;
    }
    struct sl_buf plain = { 0 };
    const char *u = unquirked(s, len, &plain);
    size_t n = 0;
    uint8_t *f = u8_casefold((const uint8_t *)(u ? u : s), u ? plain.len : len, NULL,
                             UNINORM_NFC, NULL, &n);
    sl_buf_free(&plain);
    if (f == NULL)
        return false;
    sl_buf_put(out, f, n);
    free(f);
    return true;
}

/* A normalized path as written and loosened (loose.p is NULL until a pattern needs it). */
struct spelt_path {
    const struct sl_buf *norm;
    bool ascii, upper; /* all ASCII; holds an ASCII capital */
    bool unsure;       /* it could not be loosened */
    struct sl_buf loose;
};

/* Whether pattern matches the path as written, or once both are loosened: a deny or confirm
 * rule that a second spelling of the same name slipped past would fail open, on any server
 * whose file system (or lookup) reads that spelling as the name. A path or pattern that cannot
 * be loosened counts as a match: the deny refuses, the confirm asks. */
static bool glob_match_loose(const char *pattern, struct spelt_path *sp)
{
    if (rules_glob_match(pattern, sp->norm->p))
        return true;
    size_t plen = strlen(pattern);
    bool ascii = is_ascii(pattern, plen);
    /* both ASCII without capitals: loosening changes neither, and they did not match */
    if (sp->ascii && ascii && !sp->upper && !has_upper_ascii(pattern, plen))
        return false;
    if (sp->loose.p == NULL && !sp->unsure) /* once per value, however many patterns */
        sp->unsure = !loosen(sp->norm->p, sp->norm->len, sp->ascii, &sp->loose);
    struct sl_buf lp = { 0 };
    bool m = sp->unsure || !loosen(pattern, plen, ascii, &lp) ||
             rules_glob_match(lp.p ? lp.p : "", sp->loose.p ? sp->loose.p : "");
    sl_buf_free(&lp);
    return m;
}

/* ===== results ===== */

struct shown {
    char s[SHOW_MAX * 4 + 8];
};

/* p[0..len) for why: printable ASCII as is, '"' and '\\' escaped, every other byte \xHH, cut at
 * SHOW_MAX bytes with "...". quoted adds the quotes. */
static const char *show(struct shown *q, const char *p, size_t len, bool quoted)
{
    policy_escape(q->s, p, len, SHOW_MAX, quoted);
    return q->s;
}

static const char *show_str(struct shown *q, const char *cstr)
{
    return show(q, cstr, strlen(cstr), true);
}

/* The checks of one value: the argument, the label for why ("path" or "paths[2]"), and where
 * the outcome goes. */
struct check {
    const struct policy_arg *a;
    char label[SHOW_MAX * 4 + 32];
    struct rules_result *out;   /* DENY lands here */
    struct rules_result *esc;   /* the first ESCALATE lands here */
    size_t *regex_steps;        /* left of the call's RULES_REGEX_STEPS */
};

/* Rule names come from the policy (the operator's bytes); a cut must not split a character. */
static void set_rule(struct rules_result *r, const char *base, const char *kind, size_t index)
{
    int n = index == END ? snprintf(r->rule, sizeof(r->rule), "%s.%s", base, kind)
                         : snprintf(r->rule, sizeof(r->rule), "%s.%s[%zu]", base, kind, index);
    if (n >= (int)sizeof(r->rule)) {
        size_t k = sizeof(r->rule) - 1;
        while (k > 0 && ((unsigned char)r->rule[k] & 0xC0) == 0x80)
            k--;
        r->rule[k] = '\0';
    }
}

static void set_result(struct rules_result *r, enum rules_outcome o, const char *base,
                       const char *kind, size_t index, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static void set_result(struct rules_result *r, enum rules_outcome o, const char *base,
                       const char *kind, size_t index, const char *fmt, ...)
{
    va_list ap;

    r->outcome = o;
    set_rule(r, base, kind, index);
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof(r->why), fmt, ap);
    va_end(ap);
}

static const char *type_name(const struct json *v)
{
    static const char *const names[] = {
        [JSON_NULL] = "null", [JSON_BOOL] = "a boolean", [JSON_NUMBER] = "a number",
        [JSON_STRING] = "a string", [JSON_ARRAY] = "an array", [JSON_OBJECT] = "an object",
    };
    return names[v->type];
}

/* ===== the rules ===== */

static bool has_string_rules(const struct policy_arg *a)
{
    return a->n_deny_glob || a->n_allow_glob || a->n_confirm_glob || a->regex_re ||
           a->has_max_length;
}

static const char *first_string_rule(const struct policy_arg *a)
{
    return a->has_max_length ? "max_length" : a->n_deny_glob ? "deny_glob"
         : a->n_allow_glob ? "allow_glob" : a->n_confirm_glob ? "confirm_glob" : "regex";
}

static const char *first_glob_rule(const struct policy_arg *a)
{
    return a->n_deny_glob ? "deny_glob" : a->n_allow_glob ? "allow_glob" : "confirm_glob";
}

/* Returns true when it denied. */
static bool has_absolute_glob(const struct policy_arg *a)
{
    for (size_t i = 0; i < a->n_deny_glob; i++)
        if (a->deny_glob[i][0] == '/')
            return true;
    for (size_t i = 0; i < a->n_allow_glob; i++)
        if (a->allow_glob[i][0] == '/')
            return true;
    for (size_t i = 0; i < a->n_confirm_glob; i++)
        if (a->confirm_glob[i][0] == '/')
            return true;
    return false;
}

static bool is_ascii_letter(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

/* One segment of a path as Win32 opens it (seg[0..n) into out): from a colon on is a stream of
 * the file ("id_rsa::$DATA" is id_rsa's content, ".ssh:$I30:$INDEX_ALLOCATION" the directory),
 * and trailing dots and spaces are dropped (".ssh." is .ssh). "." and ".." stay what they are,
 * after their trailing spaces (".. " is read as ".."), and so does a drive ("C:"), the path's
 * first segment. */
static void windows_segment(const char *seg, size_t n, bool first, struct sl_buf *out)
{
    bool drive = first && n >= 2 && seg[1] == ':' && is_ascii_letter(seg[0]);
    if (drive) {
        sl_buf_put(out, seg, 2);
        sl_buf_putc(out, '/'); /* "C:x" is x in C:'s directory: read as under C: */
        seg += 2;
        n -= 2;
    }
    const char *colon = memchr(seg, ':', n);
    size_t keep = colon ? (size_t)(colon - seg) : n;
    while (keep > 0 && seg[keep - 1] == ' ')
        keep--;
    bool dots = (keep == 1 && seg[0] == '.') || (keep == 2 && seg[0] == '.' && seg[1] == '.');
    while (!dots && keep > 0 && (seg[keep - 1] == '.' || seg[keep - 1] == ' '))
        keep--;
    sl_buf_put(out, seg, keep);
}

static bool is_separator(char c)
{
    return c == '/' || c == '\\';
}

/* s read as Windows reads a path, normalized into out: "\\" is a separator too, and each
 * segment is what windows_segment opens. Two separators first ("\\\\host\\share", "//host",
 * "\\\\?\\C:") name a network share or a device, not a directory under the root: that is read
 * as "UNC/host/share", a relative path, which no absolute allow_glob holds. -1 when nothing is
 * left of it. */
static int windows_reading(struct sl_str s, struct sl_buf *out)
{
    struct sl_buf w = { 0 };
    size_t start = 0;
    if (s.len >= 2 && is_separator(s.p[0]) && is_separator(s.p[1])) {
        sl_buf_puts(&w, "UNC/");
        start = 2;
    }
    for (size_t i = start; i <= s.len;) {
        size_t e = i;
        while (e < s.len && !is_separator(s.p[e]))
            e++;
        windows_segment(s.p + i, e - i, i == 0, &w);
        if (e < s.len)
            sl_buf_putc(&w, '/');
        i = e + 1;
    }
    int rc = w.len ? rules_normalize_path(w.p, w.len, out) : -1;
    sl_buf_free(&w);
    return rc;
}

/* The path a URL parser finds in s, into out (which it resets): without leading spaces (and
 * trailing ones, to WHATWG), after a "file:" scheme, without an empty authority ("//" before
 * the path: names_host refuses a value with a name there), and without a query or fragment
 * (from the first "?" or "#"). WHATWG (python false, as fileURLToPath(new URL(v, "file:///")))
 * reads "\\" as "/"; Python's urlparse (python) keeps it, and drops each segment's parameters
 * (from a ";"), as servlet containers do too. So "/etc/passwd#/../../srv/x" is /etc/passwd,
 * "////etc/shadow " //etc/shadow to WHATWG, and "/srv/a\\...\\/pub" /srv/a/.../pub. false when
 * that is s, or nothing. */
static bool url_path(struct sl_str s, bool python, struct sl_buf *out)
{
    size_t i = 0, stop = s.len;
    while (i < stop && s.p[i] == ' ')
        i++;
    while (!python && stop > i && s.p[stop - 1] == ' ')
        stop--;
    if (stop - i >= 5 && strncasecmp(s.p + i, "file:", 5) == 0)
        i += 5;
    size_t end = i;
    while (end < stop && s.p[end] != '?' && s.p[end] != '#')
        end++;
    if (end - i >= 2 && (python ? s.p[i] == '/' && s.p[i + 1] == '/'
                                : is_separator(s.p[i]) && is_separator(s.p[i + 1])))
        i += 2; /* "file:///srv/x" */
    bool changed = i > 0 || end < s.len, param = false;
    if (!changed && memchr(s.p, python ? ';' : '\\', s.len) == NULL) /* most values: no copy */
        return false;
    sl_buf_reset(out);
    for (; i < end; i++) {
        bool sep = python ? s.p[i] == '/' : is_separator(s.p[i]);
        param = sep ? false : param || (python && s.p[i] == ';');
        changed |= param || (!python && s.p[i] == '\\');
        if (!param)
            sl_buf_putc(out, sep ? '/' : s.p[i]);
    }
    return changed && out->len > 0;
}

/* s with every "%XX" (two hex digits) as the byte it encodes, into out (which it resets); false
 * when s has none, so out would be s. A "%" not followed by two hex digits stays as it is.
 * *bounds is set when an escape was a byte that can move a segment's bounds or make it a dot
 * segment: a separator ("%2f", "%5c"), a dot ("%2e") or a space (Windows reads ".. " as ".."). */
static bool percent_decoded(struct sl_str s, struct sl_buf *out, bool *bounds)
{
    if (memchr(s.p, '%', s.len) == NULL)
        return false;
    bool any = false;
    sl_buf_reset(out);
    *bounds = false;
    for (size_t i = 0; i < s.len; i++) {
        int hi = s.p[i] == '%' && i + 2 < s.len ? sl_hex_digit(s.p[i + 1]) : -1;
        int lo = hi >= 0 ? sl_hex_digit(s.p[i + 2]) : -1;
        if (lo >= 0) {
            char b = (char)(hi << 4 | lo);
            *bounds |= b == '/' || b == '\\' || b == '.' || b == ' ';
            sl_buf_putc(out, b);
            i += 2;
            any = true;
        } else {
            sl_buf_putc(out, s.p[i]);
        }
    }
    return any;
}

static bool any_allow_glob(const struct policy_arg *a, const char *path)
{
    for (size_t i = 0; i < a->n_allow_glob; i++)
        if (rules_glob_match(a->allow_glob[i], path))
            return true;
    return false;
}

/* The names a server may open for one value, normalized, each once: the value as written and
 * percent-decoded once and twice; the path a URL parser finds in each of these (url_path, with
 * and without ";params"), and that path decoded further, as a server that decodes, parses a URL
 * and decodes its path does; each read as POSIX and as Windows read it. A value with an escape
 * left after two decodings is refused (undecodable). */
#define DECODINGS 2  /* "%252e" is "." to a server that decodes twice (as a proxy and its app) */
/* the value's DECODINGS + 1; two URL paths of each, each with the decodings left; both OSes */
#define READINGS (2 * (DECODINGS + 1) * (DECODINGS + 3))

/* not a URL; its path to WHATWG; to Python (without ";params", see url_path) */
enum url_kind { URL_NONE, URL_KEPT, URL_CUT };

/* How a reading was made, for why: decoded before times, cut as a URL, decoded after times. */
struct kind {
    unsigned before;
    enum url_kind url;
    unsigned after;
    bool windows;
};

struct reading {
    struct sl_buf norm;
    struct spelt_path sp;
    struct kind kind;
    bool as_written;     /* the value itself: why shows no reading */
};

struct readings {
    size_t n;
    struct reading r[READINGS];
};

/* Adds norm (taken, and reset) as a reading of kind k, unless an earlier one is the same name. */
static void add_reading(struct readings *rs, struct sl_buf *norm, struct kind k, struct sl_str s)
{
    for (size_t i = 0; i < rs->n; i++)
        if (rs->r[i].norm.len == norm->len && memcmp(rs->r[i].norm.p, norm->p, norm->len) == 0) {
            sl_buf_reset(norm);
            return;
        }
    SL_REQUIRE(rs->n < READINGS);
    struct reading *r = &rs->r[rs->n++];
    r->norm = *norm;
    *norm = (struct sl_buf){ 0 };
    r->sp = (struct spelt_path){ .norm = &r->norm };
    r->sp.ascii = is_ascii(r->norm.p, r->norm.len);
    r->sp.upper = r->sp.ascii && has_upper_ascii(r->norm.p, r->norm.len);
    r->kind = k;
    r->as_written = k.before == 0 && k.url == URL_NONE && !k.windows && r->norm.len == s.len &&
                    memcmp(r->norm.p, s.p, s.len) == 0;
}

/* t read as POSIX and as Windows read it, into rs as kind k (and k on Windows); -1 when t has
 * no POSIX reading (empty, or a control character). */
static int add_both(struct readings *rs, struct sl_str t, struct kind k, struct sl_str s)
{
    struct sl_buf norm = { 0 };
    int rc = rules_normalize_path(t.p, t.len, &norm);
    if (rc == 0)
        add_reading(rs, &norm, k, s);
    k.windows = true;
    if (windows_reading(t, &norm) == 0)
        add_reading(rs, &norm, k, s);
    sl_buf_free(&norm);
    return rc;
}

static void readings_free(struct readings *rs)
{
    for (size_t i = 0; i < rs->n; i++) {
        sl_buf_free(&rs->r[i].norm);
        sl_buf_free(&rs->r[i].sp.loose);
    }
}

/* Whether s holds a "%XX" that percent_decoded would decode. */
static bool has_escape(struct sl_str s)
{
    const char *end = s.p + s.len;
    for (const char *p = memchr(s.p, '%', s.len); p; p = memchr(p + 1, '%', (size_t)(end - p - 1)))
        if (end - p > 2 && sl_hex_digit(p[1]) >= 0 && sl_hex_digit(p[2]) >= 0)
            return true;
    return false;
}

/* How servers may read seg[0..n), a segment between separators. *dot_dot: some server reads
 * it as "..": two dots or more, and nothing but dots and spaces up to its end, a ":" (Windows
 * opens ".. " and "..:x" as "..") or a ";" (servlet containers open "..;x" as ".."); *param:
 * such a run ends at a ";". "notes..txt" is a name to every server. Returns whether the
 * segment is unsure, one that some server drops or resolves and another keeps as a name:
 * empty (a URL parser keeps "" as a segment, so "/etc//../x" is /etc/x to it and /x to the
 * kernel), or nothing but dots and spaces up to a ":" or ";" and not exactly "." or ".."
 * (Windows drops "...", ". " and ".:s" and reads ".. " as "..", which path.win32 keeps as
 * names; a servlet container reads ".;x" as "."; urlparse keeps ";x" where the others drop
 * its parameters). */
static bool read_segment(const char *seg, size_t n, bool *dot_dot, bool *param)
{
    size_t dots = 0, i = 0;
    for (; i < n && (seg[i] == '.' || seg[i] == ' '); i++)
        dots += seg[i] == '.';
    bool cut = i < n && (seg[i] == ':' || seg[i] == ';');
    *dot_dot = dots >= 2 && (i == n || cut);
    *param = *dot_dot && cut && seg[i] == ';';
    if (i < n && !cut)
        return false; /* a name to every server */
    return !((n == 1 && dots == 1) || (n == 2 && dots == 2));
}

/* Whether d has a segment that some server reads as ".." (read_segment); *param is set when
 * one is a "..;x". */
static bool has_dot_dot(struct sl_str d, bool *param)
{
    bool found = false;
    *param = false;
    for (size_t i = 0; i <= d.len;) {
        size_t e = i;
        while (e < d.len && !is_separator(d.p[e]))
            e++;
        bool dot_dot, p;
        (void)read_segment(d.p + i, e - i, &dot_dot, &p);
        found |= dot_dot;
        *param |= p;
        i = e + 1;
    }
    return found;
}

/* Whether a ".." of t (to some server) climbs out of an unsure segment, read as a server that
 * keeps unsure segments as names: one that drops them climbs one directory further there,
 * so the two open different files ("/etc//../passwd"). A ".." that climbs out of a name does
 * not care ("/srv//a/b/.." is /srv/a to both). The root's (or a host's) leading separators are
 * no segments, and ".." at the root stays there. */
static bool unsure_climbed(struct sl_str t)
{
    if (memmem(t.p, t.len, "..", 2) == NULL) /* most values */
        return false;
    size_t i = t.len >= 5 && strncasecmp(t.p, "file:", 5) == 0 ? 5 : 0;
    while (i < t.len && is_separator(t.p[i]))
        i++;
    size_t depth = 0, unsure_at = 0; /* the depth of the newest unsure segment; 0: none */
    while (i < t.len) {
        size_t e = i;
        while (e < t.len && !is_separator(t.p[e]))
            e++;
        bool dot_dot, param, unsure = read_segment(t.p + i, e - i, &dot_dot, &param);
        if (dot_dot && depth > 0 && depth == unsure_at)
            return true;
        if (unsure) /* a name to the servers that keep it */
            unsure_at = ++depth;
        else if (dot_dot) /* exactly "..": unsure otherwise */
            depth -= depth > 0;
        else if (!(e - i == 1 && t.p[i] == '.'))
            depth++;
        i = e + 1;
    }
    return false;
}

/* Whether t names a host: two separators first (after a "file:" scheme), then a name.
 * "//etc/shadow" is a host to WHATWG and urlsplit, a share on Windows, and /etc/shadow to
 * Python's http.server and the kernel; "/\\etc/passwd" is a host to WHATWG and //etc/passwd to
 * Node's url.parse. "///srv/x" names none. */
static bool names_host(struct sl_str t)
{
    size_t i = 0;
    while (i < t.len && t.p[i] == ' ') /* URL parsers drop them */
        i++;
    if (t.len - i >= 5 && strncasecmp(t.p + i, "file:", 5) == 0)
        i += 5;
    return t.len - i >= 3 && is_separator(t.p[i]) && is_separator(t.p[i + 1]) &&
           !is_separator(t.p[i + 2]);
}

/* Whether a ";" parameter of t runs into a "\\" before the next "/": urlparse cuts only the
 * last segment's parameters and the others cut each one's, to a "/" or a "\\"; a server on
 * Windows then opens different names ("/data/x;\\..\\id_rsa/;z" is \\data\\id_rsa to
 * ntpath.normpath(urlparse(v).path)). */
static bool param_backslash(struct sl_str t)
{
    const char *end = t.p + t.len;
    for (const char *p = memchr(t.p, ';', t.len); p; p = memchr(p, ';', (size_t)(end - p)))
        for (p++; p < end && *p != '/' && *p != ';'; p++)
            if (*p == '\\')
                return true;
    return false;
}

/* Whether t has an ASCII letter and a ":" or "|" that a reader takes for a drive or a URL scheme
 * where sluice does not: nturl2path.url2pathname (Python's url2pathname on Windows) makes the
 * letter before the one ":" or "|" of a value a drive and drops all before it
 * ("/tmp/demo/c:/etc/passwd" is C:\etc\passwd); ntpath.normpath makes "./c:.ssh/k" the drive
 * c: with .ssh\k; URL parsers drop any scheme ("ab:.ssh/k" is .ssh/k) and Node's url.parse
 * reads a host after one it does not know ("x:y%2essh/k" is host y, path .ssh/k). The one
 * drive sluice reads is a letter at the start (after a "/", or after a lowercase "file:" and
 * its slashes) with ":" or "|" and then a separator or the end. */
static bool drive_elsewhere(struct sl_str t)
{
    size_t i = 0;
    while (i < t.len && t.p[i] == ' ')
        i++;
    if (t.len - i >= 5 && memcmp(t.p + i, "file:", 5) == 0)
        for (i += 5; i < t.len && is_separator(t.p[i]);)
            i++;
    else if (i < t.len && is_separator(t.p[i]))
        i++;
    for (size_t j = i + 1; j < t.len; j++) {
        if ((t.p[j] != ':' && t.p[j] != '|') || !is_ascii_letter(t.p[j - 1]))
            continue;
        bool sure = j == i + 1 && (j + 1 == t.len || is_separator(t.p[j + 1]));
        if (!sure)
            return true;
    }
    return false;
}

/* Whether t starts or ends with a space outside ASCII or another character that renders as
 * nothing (unicode_hidden): JavaScript's trim(), Python's strip() and Node's url.parse drop
 * U+00A0, U+0085, U+3000 and the like ("/data/id_rsa\u00a0" is /data/id_rsa), the kernel
 * keeps them, and none belongs at the edge of a name a person reads. */
static bool edge_hidden(struct sl_str t)
{
    ucs4_t first = 0, last = 0;
    if (t.len == 0)
        return false;
    u8_mbtouc(&first, (const uint8_t *)t.p, t.len);
    u8_prev(&last, (const uint8_t *)t.p + t.len, (const uint8_t *)t.p);
    return unicode_hidden(first) || unicode_hidden(last);
}

/* Why t, a reading of a value decoded or not (decoded: whether it is), is no name every server
 * reads alike, or NULL. A "..;x" segment is ".." to a servlet container and a name to others
 * (and to a URL parser that drops only the last segment's parameters), so no reading is sure;
 * nor is one whose ".." climbs out of a segment that some servers drop (unsure_climbed).
 * A decoding that is not UTF-8 is no name; after the last decoding sluice reads (last), an
 * escape is a name it did not read. In a path with a ".." segment, an escape that moves a
 * segment's bounds or makes a dot segment (bounds, see percent_decoded) leads where the
 * server's order of decoding and resolving ".." says: "/srv/a%2fb/%2e%2e/%2e%2e/etc" is
 * /srv/etc decoded first, /etc to a URL parser (it resolves "%2e%2e" before it decodes "%2f"),
 * and "/srv/%2essh/k/%2e%2e/.." is /srv/.ssh/k to a server that resolves ".." first and decodes
 * after. Without such an escape, decoding keeps every segment's bounds and kind, and the order
 * changes nothing. */
static const char *unclear(struct sl_str t, bool decoded, bool bounds, bool last)
{
    bool param = false;
    bool dot_dot = (bounds || memchr(t.p, ';', t.len) != NULL) && has_dot_dot(t, &param);
    if (param)
        return "has a \"..;\" segment: servers differ on whether it is \"..\"";
    if (unsure_climbed(t))
        return "has a \"..\" out of a segment that some servers drop and others keep (empty, or "
               "only dots and spaces, before any \";\"): servers differ on where it leads";
    if (names_host(t))
        return "names a host (\"//host\"): servers differ on whether it is a host, a share or "
               "a directory";
    if (param_backslash(t))
        return "has a \";\" parameter with a \"\\\": servers differ on where it ends";
    if (drive_elsewhere(t))
        return "has a letter and \":\" or \"|\" that servers read as a drive, a URL scheme or "
               "a name";
    if (edge_hidden(t))
        return "starts or ends with a space outside ASCII or an invisible character: servers "
               "differ on whether it is part of the name";
    if (!decoded)
        return NULL;
    if (u8_check((const uint8_t *)t.p, t.len) != NULL)
        return "is not UTF-8";
    if (last && has_escape(t))
        return "still has an escape: a server that decodes again reads another name";
    if (bounds && dot_dot)
        return "has \"..\" and an escaped \"/\", \"\\\", \".\" or \" \": servers differ on where "
               "it leads";
    return NULL;
}

/* Reads t, of kind *k (its decodings made so far), into rs, and t decoded further while
 * DECODINGS allows, each decoding into text[] (DECODINGS buffers). NULL, or why the value is
 * refused, at the kind *k then says. */
static const char *read_decodings(struct sl_str s, struct sl_str t, struct kind *k,
                                  struct readings *rs, struct sl_buf *text)
{
    for (size_t n = 0;; n++) {
        bool bounds = false;
        if (n > 0) {
            if (k->before + k->after == DECODINGS || !percent_decoded(t, &text[n - 1], &bounds))
                return NULL;
            t = sl_buf_str(&text[n - 1]);
            *(k->url == URL_NONE ? &k->before : &k->after) += 1;
        }
        const char *why = unclear(t, n > 0, bounds, k->before + k->after == DECODINGS);
        if (why)
            return why;
        if (add_both(rs, t, *k, s) < 0)
            return k->before + k->after ? "has a control character"
                                        : "is empty or has a control character";
    }
}

/* How k reads a value, for why: "percent-decoded, as a URL, then percent-decoded, on Windows";
 * "" for the value normalized. */
static const char *describe(char *out, size_t size, const struct kind *k)
{
    static const char *const times[] = { "", "percent-decoded", "percent-decoded twice" };
    static const char *const url[] = { "", "as a URL", "as a URL without ;params" };
    const char *part[] = { times[k->before], url[k->url], times[k->after],
                           k->windows ? "on Windows" : "" };
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof(part) / sizeof(part[0]) && n < size; i++)
        if (*part[i])
            n += (size_t)snprintf(out + n, size - n, "%s%s%s", n ? ", " : "",
                                  i == 2 ? "then " : "", part[i]);
    return out;
}

#define HOW_MAX 80  /* describe's longest is 75 bytes and its NUL */

/* Reads s into rs; false (and a DENY in c) when a reading is no name: empty, with a control
 * character, or a decoding undecodable refuses. "/srv/%2e%2e/etc" is /etc to a server that
 * decodes it. A URL parser cuts "?" and "#" before it decodes, so each URL path is decoded on
 * its own too: "/srv/a%23/../.ssh/k#/../../x" is /srv/.ssh/k to it, and
 * "/srv/q%2523/id_rs%2561%23z" /srv/q#/id_rsa to one that decodes, parses and decodes again. */
static bool read_value(struct check *c, struct sl_str s, struct readings *rs)
{
    struct sl_buf text[DECODINGS] = { { 0 } }, again[DECODINGS] = { { 0 } }, path = { 0 };
    struct kind k = { 0 };
    const char *why = read_decodings(s, s, &k, rs, text);

    for (unsigned l = 0, levels = k.before; why == NULL && l <= levels; l++) {
        struct sl_str t = l ? sl_buf_str(&text[l - 1]) : s;
        for (enum url_kind u = URL_KEPT; why == NULL && u <= URL_CUT; u++)
            if (url_path(t, u == URL_CUT, &path)) {
                k = (struct kind){ .before = l, .url = u };
                why = read_decodings(s, sl_buf_str(&path), &k, rs, again);
            }
    }
    if (why) {
        struct shown v;
        char how[HOW_MAX];
        describe(how, sizeof(how), &k);
        set_result(c->out, RULES_DENY, c->a->rule, first_glob_rule(c->a), END, "%s %s%s%s %s",
                   c->label, show(&v, s.p, s.len, true), *how ? " " : "", how, why);
    }
    sl_buf_free(&path);
    for (size_t i = 0; i < DECODINGS; i++) {
        sl_buf_free(&text[i]);
        sl_buf_free(&again[i]);
    }
    return why == NULL;
}

#define SHOWN_READING (2 * sizeof(struct shown) + HOW_MAX + 8)

/* The value for why, with the reading that met (or missed) the rule when it is not the value. */
static const char *show_reading(char *out, size_t size, struct sl_str s, const struct reading *r)
{
    struct shown v, n;
    char how[HOW_MAX];
    if (!r->as_written)
        snprintf(out, size, "%s (%s %s)", show(&v, s.p, s.len, true),
                 *describe(how, sizeof(how), &r->kind) ? how : "normalized",
                 show(&n, r->norm.p, r->norm.len, true));
    else
        snprintf(out, size, "%s", show(&v, s.p, s.len, true));
    return out;
}

/* The first reading of rs that pattern meets, or NULL. */
static const struct reading *loose_match(const char *pattern, struct readings *rs)
{
    for (size_t i = 0; i < rs->n; i++)
        if (glob_match_loose(pattern, &rs->r[i].sp))
            return &rs->r[i];
    return NULL;
}

/* A value is read as every name a server may open for it (read_value): as POSIX and Windows
 * read it ("\\srv\\.ssh\\id" is /srv/.ssh/id on Windows, "/srv/..\\etc" is /etc, "id_rsa." is
 * id_rsa), percent-decoded ("%2essh" is .ssh to a server that takes URIs), and as a URL parser
 * finds its path ("/etc/passwd#/../../srv/x" is /etc/passwd to it). It meets a
 * deny_glob or confirm_glob by any reading, and the allow_globs only when every reading is
 * under them (a name with a backslash or a "%41" in it stays allowed where all are). */
static bool check_globs(struct check *c, struct sl_str s)
{
    const struct policy_arg *a = c->a;
    struct readings rs = { 0 };
    const struct reading *r;
    struct shown v, g;
    bool denied = true;
    char shown[SHOWN_READING]; /* the value, the reading and its label */

    if (!read_value(c, s, &rs))
        goto done;
    /* Against absolute patterns, only absolute paths: a server resolves "../../etc/x" from its
     * own directory and expands "~/", which no lexical check can see. */
    if (s.p[0] != '/' && has_absolute_glob(a)) {
        set_result(c->out, RULES_DENY, a->rule, first_glob_rule(a), END,
                   "%s %s is not an absolute path", c->label, show(&v, s.p, s.len, true));
        goto done;
    }
    for (size_t i = 0; i < a->n_deny_glob; i++) {
        if ((r = loose_match(a->deny_glob[i], &rs)) != NULL) {
            set_result(c->out, RULES_DENY, a->rule, "deny_glob", i, "%s %s matches deny_glob %s",
                       c->label, show_reading(shown, sizeof(shown), s, r),
                       show_str(&g, a->deny_glob[i]));
            goto done;
        }
    }
    /* allow_glob stays exact: a second spelling of an allowed path is refused, which is safe */
    for (size_t i = 0; a->n_allow_glob && i < rs.n; i++) {
        if (!any_allow_glob(a, rs.r[i].norm.p)) {
            set_result(c->out, RULES_DENY, a->rule, "allow_glob", END,
                       "%s %s matches no allow_glob", c->label,
                       show_reading(shown, sizeof(shown), s, &rs.r[i]));
            goto done;
        }
    }
    denied = false;
    for (size_t i = 0; i < a->n_confirm_glob && c->esc->outcome == RULES_PASS; i++)
        if ((r = loose_match(a->confirm_glob[i], &rs)) != NULL)
            set_result(c->esc, RULES_ESCALATE, a->rule, "confirm_glob", i,
                       "%s %s matches confirm_glob %s", c->label,
                       show_reading(shown, sizeof(shown), s, r),
                       show_str(&g, a->confirm_glob[i]));
done:
    readings_free(&rs);
    return denied;
}

static bool check_regex(struct check *c, struct sl_str s)
{
    struct shown v, r;

    /* a server written in C would read only the bytes before a NUL: no regex vouches for them */
    if (memchr(s.p, '\0', s.len) != NULL) {
        set_result(c->out, RULES_DENY, c->a->rule, "regex", END, "%s %s holds a NUL byte",
                   c->label, show(&v, s.p, s.len, true));
        return true;
    }
    switch (ere_match(c->a->regex_re, s.p, s.len, c->regex_steps)) {
    case ERE_MATCH:
        return false;
    case ERE_NOMATCH:
        set_result(c->out, RULES_DENY, c->a->rule, "regex", END, "%s %s does not match regex %s",
                   c->label, show(&v, s.p, s.len, true), show_str(&r, c->a->regex));
        break;
    case ERE_OVER_BUDGET:
        set_result(c->out, RULES_DENY, c->a->rule, "regex", END,
                   "%s (%zu bytes) takes more than the %u steps a call's regex checks may take "
                   "(regex %s)", c->label, s.len, RULES_REGEX_STEPS, show_str(&r, c->a->regex));
        break;
    case ERE_NOMEM:
        set_result(c->out, RULES_DENY, c->a->rule, "regex", END,
                   "%s could not be checked against regex %s: out of memory", c->label,
                   show_str(&r, c->a->regex));
        break;
    }
    return true;
}

static bool check_string(struct check *c, const struct json *v)
{
    struct sl_str s = v->u.str;

    if (c->a->has_max_length && s.len > c->a->max_length) {
        set_result(c->out, RULES_DENY, c->a->rule, "max_length", END,
                   "%s is %zu bytes, more than max_length %zu", c->label, s.len, c->a->max_length);
        return true;
    }
    if ((c->a->n_deny_glob || c->a->n_allow_glob || c->a->n_confirm_glob) && check_globs(c, s))
        return true;
    return c->a->regex_re && check_regex(c, s);
}

/* A bound broken: which (min or max) and the comparison that shows it. */
static bool check_bounds(struct check *c, const struct json *v)
{
    const struct policy_arg *a = c->a;
    struct sl_str n = v->u.num;
    struct shown s;
    int lo = 0, hi = 0;

    if ((a->min && policy_number_cmp(n.p, n.len, a->min, strlen(a->min), &lo) < 0) ||
        (a->max && policy_number_cmp(n.p, n.len, a->max, strlen(a->max), &hi) < 0)) {
        set_result(c->out, RULES_DENY, a->rule, a->min ? "min" : "max", END,
                   "%s %s is not a number this check can compare", c->label,
                   show(&s, n.p, n.len, false));
        return true;
    }
    if (lo < 0 || hi > 0) {
        set_result(c->out, RULES_DENY, a->rule, lo < 0 ? "min" : "max", END, "%s %s is %s %s %s",
                   c->label, show(&s, n.p, n.len, false), lo < 0 ? "below" : "above",
                   lo < 0 ? "min" : "max", lo < 0 ? a->min : a->max);
        return true;
    }
    return false;
}

static bool enum_has(const struct policy_arg *a, const struct json *v)
{
    for (size_t i = 0; i < a->n_enum; i++) {
        const struct policy_enum_value *e = &a->enum_values[i];
        int c;
        if ((e->type == POLICY_VALUE_STRING && v->type == JSON_STRING &&
             v->u.str.len == e->len && memcmp(v->u.str.p, e->text, e->len) == 0) ||
            (e->type == POLICY_VALUE_BOOL && v->type == JSON_BOOL &&
             v->u.b == (e->text[0] == 't')) ||
            (e->type == POLICY_VALUE_NUMBER && v->type == JSON_NUMBER &&
             policy_number_cmp(v->u.num.p, v->u.num.len, e->text, e->len, &c) == 0 && c == 0))
            return true;
    }
    return false;
}

/* One value (the argument, or one element of an array argument). Returns true when denied. */
static bool check_value(struct check *c, const struct json *v)
{
    const struct policy_arg *a = c->a;
    struct sl_buf text = { 0 };
    struct shown s;

    if (has_string_rules(a) && v->type != JSON_STRING) {
        set_result(c->out, RULES_DENY, a->rule, first_string_rule(a), END,
                   "%s must be a string, got %s", c->label, type_name(v));
        return true;
    }
    if ((a->min || a->max) && v->type != JSON_NUMBER) {
        set_result(c->out, RULES_DENY, a->rule, a->min ? "min" : "max", END,
                   "%s must be a number, got %s", c->label, type_name(v));
        return true;
    }
    if (v->type == JSON_STRING && check_string(c, v))
        return true;
    if (v->type == JSON_NUMBER && check_bounds(c, v))
        return true;
    if (a->n_enum == 0 || enum_has(a, v))
        return false;
    if (v->type == JSON_STRING) {
        show(&s, v->u.str.p, v->u.str.len, true);
    } else {
        json_write(&text, v);
        show(&s, text.p, text.len, false);
    }
    set_result(c->out, RULES_DENY, a->rule, "enum", END, "%s %s is not one of the enum values",
               c->label, s.s);
    sl_buf_free(&text);
    return true;
}

static const struct json *find_member(const struct json *o, const char *name, size_t len)
{
    for (size_t i = 0; i < o->u.obj.n; i++)
        if (o->u.obj.v[i].key.len == len && memcmp(o->u.obj.v[i].key.p, name, len) == 0)
            return o->u.obj.v[i].val;
    return NULL;
}

/* Folds a key for comparison the way Go's encoding/json matches keys: Unicode simple case
 * folding (fold.h), so "PATH", "pa\u017fs" (long s) and "\u212aey" (Kelvin sign) meet "path",
 * "pass" and "key". */
static void fold_key(struct sl_str k, struct sl_buf *out)
{
    fold_utf8(k.p, k.len, out);
}

/* A key that is not an argument with rules but folds onto one ("PATH", "paſs") would be read as
 * that argument by some servers (Go's encoding/json) while the rules never saw it: refused. */
static bool key_lookalike(const struct json *args, const struct policy_arg *a, size_t n,
                          struct rules_result *out)
{
    struct sl_buf fk = { 0 }, fa = { 0 };
    bool refused = false;
    for (size_t k = 0; k < args->u.obj.n && !refused; k++) {
        struct sl_str key = args->u.obj.v[k].key;
        sl_buf_reset(&fk);
        fold_key(key, &fk);
        for (size_t i = 0; i < n && !refused; i++) {
            if (key.len == a[i].len && memcmp(key.p, a[i].name, key.len) == 0)
                continue;
            sl_buf_reset(&fa);
            fold_key((struct sl_str){ a[i].name, a[i].len }, &fa);
            if (fa.len == fk.len && memcmp(fa.p, fk.p, fk.len) == 0) {
                struct shown v;
                set_result(out, RULES_DENY, a[i].rule, "name", END,
                           "argument key %s differs from %s only in letter case",
                           show(&v, key.p, key.len, true), a[i].name);
                refused = true;
            }
        }
    }
    sl_buf_free(&fk);
    sl_buf_free(&fa);
    return refused;
}

/* An array argument is checked element by element (an empty one has nothing to check); an
 * array inside it is a wrong type for every rule. */
static bool check_arg(struct check *c, const struct json *v)
{
    struct shown n;

    show(&n, c->a->name, c->a->len, false);
    if (v->type != JSON_ARRAY) {
        snprintf(c->label, sizeof(c->label), "%s", n.s);
        return check_value(c, v);
    }
    for (size_t i = 0; i < v->u.arr.n; i++) {
        snprintf(c->label, sizeof(c->label), "%s[%zu]", n.s, i);
        if (check_value(c, v->u.arr.v[i]))
            return true;
    }
    return false;
}

void rules_check(const struct policy *p, const char *tool, size_t len, const struct json *args,
                 struct rules_result *out)
{
    struct policy_decision d;
    policy_lookup(p, tool, len, &d);
    rules_check_decided(&d, args, out);
}

void rules_check_decided(const struct policy_decision *d, const struct json *args,
                         struct rules_result *out)
{
    size_t n = d->nargs;
    const struct policy_arg *a = d->args;

    memset(out, 0, sizeof(*out));
    out->outcome = RULES_PASS;
    if (n == 0 || args == NULL)
        return;
    struct rules_result esc = { .outcome = RULES_PASS }; /* only a tool with rules needs it */
    if (args->type != JSON_OBJECT) {
        set_result(out, RULES_DENY, d->rule, "args", END, "the arguments are %s, not an object",
                   type_name(args));
        return;
    }
    if (key_lookalike(args, a, n, out))
        return;
    size_t regex_steps = RULES_REGEX_STEPS;
    for (size_t i = 0; i < n; i++) {
        const struct json *v = find_member(args, a[i].name, a[i].len);
        struct check c = { .a = &a[i], .out = out, .esc = &esc, .regex_steps = &regex_steps };
        if (v != NULL && check_arg(&c, v))
            return;
    }
    if (esc.outcome == RULES_ESCALATE)
        *out = esc;
}
