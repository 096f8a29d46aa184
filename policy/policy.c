/* policy.c: policy YAML (version 1) -> validated, immutable struct policy; lookup by tool name.
 *
 * Loading runs in two passes. ynode.c turns the bytes into a node tree, refusing YAML features
 * a policy has no use for (anchors, aliases, tags, directives, a second document, deep
 * nesting). This file then walks the tree level by level, each level with its own key table
 * (h2o's parse_mapping): a key not in the table, a key given twice and a missing required key
 * are errors at the offending node. The first error stops the load, so each error test asserts
 * exactly one file:line:col.
 *
 * Decisions where DESIGN.md §4 is silent (all strict, because a policy that means something
 * other than what its author thinks is worse than one that does not load):
 * - version is checked before any other key, so a future version-2 file says "unsupported
 *   policy version 2" rather than "unknown key" about a key version 2 added.
 * - Integers (version, confirm_ttl) are plain decimal: no quotes, no '+', no leading zeros, no
 *   0x, no 1_000, no units. YAML 1.1 reads 0120 as octal 80; refusing it keeps one meaning.
 * - Booleans are exactly plain true or false. YAML 1.1 also reads yes/no/on/off/y/n, and
 *   YAML 1.2 True/TRUE; each of those is an error, not a guess.
 * - "defaults:" or "tools:" with nothing after is an empty value, not an empty mapping: an
 *   error. Write "tools: {}" for no tools, or leave the key out.
 * - irreversible: true needs action confirm or deny. With allow the flag would promise a
 *   protection the call never gets.
 * - Tool names are non-empty strings without control characters (so without NUL, which also
 *   lets policy_tool_name return a C string), and without what no MCP tool name has: glob
 *   characters, whitespace, invisible or format characters (policy_name.h). Names are matched
 *   exactly, so "delete_*" would match no tool. Quoting does not matter: "write_file" and
 *   write_file are the same name. A plain null or 123 is the tool named "null" or "123".
 *
 * Lookup is an open-addressing hash on the name bytes, built at load time. Clients choose the
 * names they look up but cannot insert any, so probe lengths depend only on the operator's
 * policy. */
#include "policy.h"

#include "policy_name.h"
#include "ere.h"
#include "ynode.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct policy_tool {
    char *name;                 /* NUL-terminated; no control characters, never empty */
    size_t len;
    char *rule;                 /* "tools.<name>", handed out by policy_lookup */
    enum policy_action action;
    bool irreversible;
    bool token_fallback;
    bool strict_args;           /* refuse calls with an argument not under args: */
    enum policy_approval approval; /* approval: client | page | client-or-page */
    bool page_fallback;         /* fallback: page */
    bool self_approve;          /* the caller may approve its own call on the page */
    const char *const *approvers; /* approvers: principal globs; NULL: none named */
    size_t napprovers;
    bool has_pin;               /* pin: sha256:<hex> was given */
    uint8_t pin[POLICY_PIN_LEN];/* the digest of the definition the operator reviewed */
    unsigned line, col;         /* where its name is, for findings against a server */
    char *message;              /* template, NUL-terminated; NULL when none */
    struct policy_observe *observe; /* NULL when none; its strings are owned */
    const struct ynode *observe_node; /* during the load only: where observe.tool was */
    struct policy_arg *args;    /* in file order; every owned pointer NULL until set */
    size_t nargs;
};

struct policy {
    atomic_uint refs;           /* atomic: costs nothing, and a reload thread stays safe */
    enum policy_action default_action;
    unsigned confirm_ttl;       /* seconds, 1..POLICY_TTL_MAX */
    unsigned max_open, per_minute; /* approval fatigue limits, 1..POLICY_LIMIT_MAX */
    bool hide_denied;
    bool strict;                /* defaults.strict: refuse to serve on a lint finding */
    bool unpinned_deny;         /* defaults.unpinned: deny */
    char file[256];             /* the name it was loaded as, for findings */
    unsigned action_line, action_col; /* where defaults.action is; 0 when left out */
    struct policy_tool *tools;  /* in file order */
    size_t ntools;
    uint32_t *slots;            /* hash index: tool index + 1, or 0 for an empty slot */
    size_t nslots;              /* a power of two >= 2 * tools allocated; 0 with no tools */
    struct policy_error *warnings; /* in file order */
    size_t nwarnings;
    void *tools_view;           /* policy_set_tools_view's, or NULL */
};

/* One load in progress. */
struct load {
    struct policy *p;
    struct policy_error *err;
    const struct ynode *tools;  /* the tools mapping, to find where a duplicate was first seen */
};

/* Bytes of a user value echoed into a message; more is cut with "...". */
#define QUOTE_MAX 32

/* A value quoted for a message: every byte outside printable ASCII is \xHH, so a policy cannot
 * put terminal escapes or bidi overrides into `sluice check` output. */
struct quoted {
    char s[QUOTE_MAX * 4 + 32];
};

/* "tools.<quoted name>", for messages. */
#define PATH_LEN (sizeof(struct quoted) + 8)

static const char *const action_names[] = {
    [POLICY_ALLOW] = "allow",
    [POLICY_CONFIRM] = "confirm",
    [POLICY_DENY] = "deny",
};

/* ===== errors ===== */

static int fail(struct load *ld, const struct ynode *node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int warn(struct load *ld, const struct ynode *node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records a warning at node: the policy loads, and whoever loaded it reports the warning. */
static int warn(struct load *ld, const struct ynode *node, const char *fmt, ...)
{
    struct policy *p = ld->p;
    struct policy_error *w = realloc(p->warnings, (p->nwarnings + 1) * sizeof(*w));
    va_list ap;

    if (w == NULL)
        return fail(ld, NULL, "out of memory");
    p->warnings = w;
    w = &w[p->nwarnings++];
    memset(w, 0, sizeof(*w));
    snprintf(w->file, sizeof(w->file), "%s", ld->err->file);
    w->line = node->line;
    w->col = node->col;
    va_start(ap, fmt);
    vsnprintf(w->msg, sizeof(w->msg), fmt, ap);
    va_end(ap);
    return 0;
}

/* Fills ld->err at node (line 0 when node is NULL) and returns -1. */
static int fail(struct load *ld, const struct ynode *node, const char *fmt, ...)
{
    va_list ap;

    ld->err->line = node ? node->line : 0;
    ld->err->col = node ? node->col : 0;
    va_start(ap, fmt);
    vsnprintf(ld->err->msg, sizeof(ld->err->msg), fmt, ap);
    va_end(ap);
    return -1;
}

size_t policy_escape(char *dst, const char *p, size_t len, size_t max, bool quoted)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0, n = len < max ? len : max;

    if (quoted)
        dst[o++] = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\') {
            dst[o++] = '\\';
            dst[o++] = (char)c;
        } else if (c < 0x20 || c >= 0x7f) {
            dst[o++] = '\\';
            dst[o++] = 'x';
            dst[o++] = hex[c >> 4];
            dst[o++] = hex[c & 15];
        } else {
            dst[o++] = (char)c;
        }
    }
    if (n < len) {
        memcpy(dst + o, "...", 3);
        o += 3;
    }
    if (quoted)
        dst[o++] = '"';
    dst[o] = '\0';
    return o;
}

/* Writes p[0..len) into q->s quoted and escaped, and returns q->s; bare leaves the quotes out
 * (for paths such as tools.<name>). */
static const char *quote_bytes(struct quoted *q, const char *p, size_t len, bool bare)
{
    policy_escape(q->s, p, len, QUOTE_MAX, !bare);
    return q->s;
}

static const char *quote(struct quoted *q, const struct ynode *scalar)
{
    return quote_bytes(q, scalar->str, scalar->len, false);
}

/* What a node is, for "expected X, got Y" messages. */
static const char *describe(struct quoted *q, const struct ynode *n)
{
    struct quoted v;

    if (n->kind == YNODE_MAPPING)
        return "a mapping";
    if (n->kind == YNODE_SEQUENCE)
        return "a sequence";
    if (ynode_is_empty(n))
        return "an empty value";
    if (n->plain)
        return quote(q, n);
    snprintf(q->s, sizeof(q->s), "the quoted string %.*s", (int)sizeof(q->s) - 20, quote(&v, n));
    return q->s;
}

/* "defaults" + "action" -> "defaults.action"; "" + "version" -> "version". */
static const char *join(char *buf, size_t cap, const char *path, const char *key)
{
    snprintf(buf, cap, "%s%s%s", path, *path ? "." : "", key);
    return buf;
}

/* ===== scalars ===== */

static bool scalar_is(const struct ynode *n, const char *s)
{
    return n->kind == YNODE_SCALAR && n->len == strlen(s) && memcmp(n->str, s, n->len) == 0;
}

/* Plain decimal integers only (see the file comment). Returns false when n is not one; a value
 * too large for long long saturates, which every range check then rejects. */
static bool parse_int(const struct ynode *n, long long *out)
{
    const char *s = n->str;
    size_t len = n->len;
    bool neg = false;
    long long v = 0;

    if (n->kind != YNODE_SCALAR || !n->plain)
        return false;
    if (len > 0 && s[0] == '-') {
        neg = true;
        s++;
        len--;
    }
    if (len == 0 || (len > 1 && s[0] == '0'))
        return false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v <= (LLONG_MAX - 9) / 10 ? v * 10 + (s[i] - '0') : LLONG_MAX;
    }
    *out = neg ? -v : v;
    return true;
}

static int parse_action(struct load *ld, const struct ynode *n, const char *name,
                        enum policy_action *out)
{
    struct quoted q;

    if (n->kind != YNODE_SCALAR || ynode_is_empty(n))
        return fail(ld, n, "%s must be one of allow, confirm, deny, got %s", name,
                    describe(&q, n));
    for (size_t i = 0; i < sizeof(action_names) / sizeof(action_names[0]); i++) {
        if (scalar_is(n, action_names[i])) {
            *out = (enum policy_action)i;
            return 0;
        }
    }
    return fail(ld, n, "unknown action %s (expected: allow, confirm, deny)", quote(&q, n));
}

static int parse_bool(struct load *ld, const struct ynode *n, const char *name, bool *out)
{
    struct quoted q;

    if (n->kind == YNODE_SCALAR && n->plain && scalar_is(n, "true")) {
        *out = true;
        return 0;
    }
    if (n->kind == YNODE_SCALAR && n->plain && scalar_is(n, "false")) {
        *out = false;
        return 0;
    }
    return fail(ld, n, "%s must be true or false, got %s%s", name, describe(&q, n),
                n->kind == YNODE_SCALAR && n->plain && n->len > 0
                    ? " (yes, no, on, off and capitalised spellings are not booleans here)"
                    : "");
}

/* ===== mappings ===== */

struct key_slot {
    const struct ynode *key;    /* NULL when the key is absent */
    const struct ynode *value;
};

static int fail_unknown_key(struct load *ld, const struct ynode *key, const char *path,
                            const char *const names[], size_t n)
{
    char expected[160] = "";
    size_t o = 0;
    struct quoted q;

    for (size_t i = 0; i < n && o < sizeof(expected); i++)
        o += (size_t)snprintf(expected + o, sizeof(expected) - o, "%s%s", i ? ", " : "",
                              names[i]);
    return fail(ld, key, "unknown key %s %s%s (expected: %s)", quote(&q, key),
                *path ? "in " : "at top level", path, expected);
}

/* The key table for one mapping level (h2o's h2o_configurator_parse_mapping): slots[i] gets
 * the key and value named names[i], where i is the level's enum (enum tool_key, ...), so a
 * caller reads s[TOOL_FALLBACK]. A key outside the table or a key given twice is an error at
 * that key; required keys are the caller's to check, at the mapping. */
static int parse_mapping(struct load *ld, const struct ynode *map, const char *path,
                         const char *const names[], size_t n, struct key_slot slots[])
{
    struct quoted q;

    memset(slots, 0, n * sizeof(*slots));
    for (size_t i = 0; i < ynode_map_size(map); i++) {
        const struct ynode *key = ynode_map_key(map, i);
        size_t j = 0;
        while (j < n && !scalar_is(key, names[j]))
            j++;
        if (j == n)
            return fail_unknown_key(ld, key, path, names, n);
        if (slots[j].key != NULL)
            return fail(ld, key, "duplicate key %s %s%s (first defined at %u:%u)",
                        quote(&q, key), *path ? "in " : "at top level", path,
                        slots[j].key->line, slots[j].key->col);
        slots[j].key = key;
        slots[j].value = ynode_map_value(map, i);
    }
    return 0;
}

static int require_mapping(struct load *ld, const struct ynode *n, const char *name)
{
    struct quoted q;

    if (n->kind == YNODE_MAPPING)
        return 0;
    return fail(ld, n, "%s must be a mapping, got %s", name, describe(&q, n));
}

/* ===== the tool index ===== */

/* FNV-1a: short names, no adversary choosing what goes into the table. */
static uint64_t hash_name(const char *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325u;

    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)p[i]) * 0x100000001b3u;
    return h;
}

/* Returns the slot holding name, or the empty slot where it would go. nslots > 0. */
static size_t find_slot(const struct policy *p, const char *name, size_t len)
{
    size_t i = (size_t)hash_name(name, len) & (p->nslots - 1);

    for (;;) {
        uint32_t s = p->slots[i];
        if (s == 0)
            return i;
        if (p->tools[s - 1].len == len && memcmp(p->tools[s - 1].name, name, len) == 0)
            return i;
        i = (i + 1) & (p->nslots - 1);  /* the table is at most half full, so this ends */
    }
}

static const struct policy_tool *find_tool(const struct policy *p, const char *name, size_t len)
{
    uint32_t s;

    if (p->nslots == 0 || len == 0)  /* no tool has an empty name */
        return NULL;
    s = p->slots[find_slot(p, name, len)];
    return s ? &p->tools[s - 1] : NULL;
}

/* ===== numbers: JSON literals compared exactly ===== */

/* A JSON number as sign, significant digits and a decimal exponent: value = 0.D * 10^exp, with D
 * free of leading and trailing zeros (no digits: zero). */
struct decimal {
    bool neg;
    char d[POLICY_MAX_NUMBER];
    size_t nd;
    long long exp;
};

/* The exponent saturates far beyond any bound a policy can write (POLICY_MAX_BOUND characters),
 * so a saturated value still compares correctly against every policy literal. */
#define EXP_CAP 1000000000LL

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* RFC 8259 §6 grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool decimal_parse(const char *s, size_t len, struct decimal *out)
{
    size_t i = 0;
    long long e = 0, point;
    bool eneg = false;

    if (len == 0 || len > POLICY_MAX_NUMBER)
        return false;
    memset(out, 0, sizeof(*out));
    if (s[i] == '-') {
        out->neg = true;
        i++;
    }
    if (i == len || !is_digit(s[i]) || (s[i] == '0' && i + 1 < len && is_digit(s[i + 1])))
        return false;
    for (; i < len && is_digit(s[i]); i++)
        if (out->nd > 0 || s[i] != '0')
            out->d[out->nd++] = s[i];
    point = (long long)out->nd;  /* digits before the point, leading zeros dropped */
    if (i < len && s[i] == '.') {
        if (++i == len || !is_digit(s[i]))
            return false;
        for (; i < len && is_digit(s[i]); i++) {
            if (out->nd > 0 || s[i] != '0')
                out->d[out->nd++] = s[i];
            else
                point--;  /* 0.05: each zero after the point moves the first digit right */
        }
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        if (++i < len && (s[i] == '+' || s[i] == '-'))
            eneg = s[i++] == '-';
        if (i == len || !is_digit(s[i]))
            return false;
        for (; i < len && is_digit(s[i]); i++)
            e = e < EXP_CAP ? e * 10 + (s[i] - '0') : EXP_CAP;
    }
    if (i != len)
        return false;
    while (out->nd > 0 && out->d[out->nd - 1] == '0')
        out->nd--;
    out->exp = point + (eneg ? -e : e);  /* no digits: zero, whatever the sign (decimal_cmp) */
    return true;
}

/* Magnitudes of two non-zero decimals. */
static int decimal_cmp_abs(const struct decimal *a, const struct decimal *b)
{
    size_t n = a->nd < b->nd ? a->nd : b->nd;
    int c;

    if (a->exp != b->exp)
        return a->exp < b->exp ? -1 : 1;
    if ((c = memcmp(a->d, b->d, n)) != 0)
        return c < 0 ? -1 : 1;
    return (a->nd > b->nd) - (a->nd < b->nd);
}

static int decimal_cmp(const struct decimal *a, const struct decimal *b)
{
    int sa = a->nd == 0 ? 0 : a->neg ? -1 : 1;
    int sb = b->nd == 0 ? 0 : b->neg ? -1 : 1;

    if (sa != sb || sa == 0)
        return (sa > sb) - (sa < sb);
    return sa * decimal_cmp_abs(a, b);
}

int policy_number_cmp(const char *a, size_t alen, const char *b, size_t blen, int *cmp)
{
    struct decimal x, y;

    if (!decimal_parse(a, alen, &x) || !decimal_parse(b, blen, &y))
        return -1;
    *cmp = decimal_cmp(&x, &y);
    return 0;
}

/* ===== argument rules ===== */

static bool has_control(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return true;
    return false;
}

static char *dup_scalar(struct load *ld, const struct ynode *n)
{
    char *s = malloc(n->len + 1);

    if (s == NULL) {
        fail(ld, NULL, "out of memory");
        return NULL;
    }
    memcpy(s, n->str, n->len + 1);
    return s;
}

/* Glob syntax of shells and other tools that rules.c's matcher does not have: it knows '*', '**'
 * and '?', and every other byte is itself. A pattern ending in "*.{pem,key}", or "id_[rd]sa",
 * or one starting "~/.aws" would match only paths spelt that way, so a deny rule with one would
 * fail open. */
struct glob_foreign {
    const char *what, *instead;
};

/* The first foreign syntax in s[0..len) and *at its 0-based offset, or NULL when none. */
static const struct glob_foreign *glob_foreign(const char *s, size_t len, size_t *at)
{
    static const struct glob_foreign braces = {
        "braces are not alternatives here", "write one pattern per entry"
    }, brackets = {
        "brackets are not character classes here",
        "write one pattern per entry, or ? for any one character"
    }, backslash = {
        "a backslash escapes nothing here", "only *, ** and ? are special; ? matches any character"
    }, tilde = {
        "~ is not the home directory", "write the absolute path"
    };

    *at = 0;
    if (len > 0 && s[0] == '~')
        return &tilde;
    for (; *at < len; ++*at) {
        char c = s[*at];
        if (c == '{' || c == '}')
            return &braces;
        if (c == '[' || c == ']')
            return &brackets;
        if (c == '\\')
            return &backslash;
    }
    return NULL;
}

/* A pattern is written the way paths are normalized before matching (rules.c), so it cannot
 * mean something other than what it reads as: only the matcher's own syntax (glob_foreign),
 * segments separated by single '/', none of them "." or "..", no trailing '/', and "**" only
 * as a whole segment. */
static int check_glob(struct load *ld, const struct ynode *n, const char *name)
{
    const struct glob_foreign *foreign;
    const char *s = n->str;
    struct quoted q;
    size_t i = 0, at;

    if (n->kind != YNODE_SCALAR || n->len == 0)
        return fail(ld, n, "%s entries must be non-empty strings, got %s", name,
                    describe(&q, n));
    if (n->len > POLICY_MAX_PATTERN || has_control(s, n->len))
        return fail(ld, n, "%s pattern %s is longer than %u bytes or has a control character",
                    name, quote(&q, n), POLICY_MAX_PATTERN);
    if ((foreign = glob_foreign(s, n->len, &at)) != NULL)
        return fail(ld, n, "%s pattern %s: %s (character %zu): %s", name, quote(&q, n),
                    foreign->what, at + 1, foreign->instead);
    if (n->len == 1 && s[0] == '/')
        return 0;  /* the root itself */
    if (s[0] == '/')
        i = 1;
    while (i <= n->len) {
        size_t e = i;
        while (e < n->len && s[e] != '/')
            e++;
        const char *seg = s + i;
        size_t sl = e - i;
        if (sl == 0 || (sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.'))
            return fail(ld, n, "%s pattern %s is not a normalized path (empty, \".\" or \"..\" "
                        "segment, or a trailing /)", name, quote(&q, n));
        if (memmem(seg, sl, "**", 2) != NULL && sl != 2)
            return fail(ld, n, "%s pattern %s: ** must be a whole path segment", name,
                        quote(&q, n));
        i = e + 1;
    }
    return 0;
}

/* A non-empty sequence of glob patterns into *out (*count set first, so a failure midway
 * leaves only NULLs for policy_free). */
static int parse_globs(struct load *ld, const struct ynode *n, const char *name,
                       const char *const **out, size_t *count)
{
    const char **v;
    struct quoted q;

    if (n->kind != YNODE_SEQUENCE || n->nkids == 0)
        return fail(ld, n, "%s must be a non-empty list of patterns, got %s", name,
                    n->kind == YNODE_SEQUENCE ? "an empty list" : describe(&q, n));
    if (n->nkids > POLICY_MAX_LIST)
        return fail(ld, n->kids[POLICY_MAX_LIST], "%s has more than %d patterns", name,
                    POLICY_MAX_LIST);
    if ((v = calloc(n->nkids, sizeof(*v))) == NULL)
        return fail(ld, NULL, "out of memory");
    *out = v;
    *count = n->nkids;
    for (size_t i = 0; i < n->nkids; i++)
        if (check_glob(ld, n->kids[i], name) < 0 || (v[i] = dup_scalar(ld, n->kids[i])) == NULL)
            return -1;
    return 0;
}

/* Compiled by ere.c, which matches the whole value by construction: no anchoring is added to
 * the source, so a lone ')' (a literal, as glibc reads it) cannot break out of a group. */
static int parse_regex(struct load *ld, const struct ynode *n, const char *name,
                       struct policy_arg *a)
{
    struct ere_error err;
    struct quoted q;

    if (n->kind != YNODE_SCALAR || n->len == 0 || n->len > POLICY_MAX_PATTERN ||
        memchr(n->str, '\0', n->len) != NULL)
        return fail(ld, n, "%s must be a non-empty string of at most %u bytes without NUL, got %s",
                    name, POLICY_MAX_PATTERN, describe(&q, n));
    if ((a->regex_re = ere_compile(n->str, n->len, &err)) == NULL)
        return fail(ld, n, "%s %s does not compile (at character %zu): %s", name, quote(&q, n),
                    err.at + 1, err.msg);
    return (a->regex = dup_scalar(ld, n)) == NULL ? -1 : 0;
}

static bool is_json_number(const struct ynode *n)
{
    struct decimal d;

    return n->kind == YNODE_SCALAR && n->plain && decimal_parse(n->str, n->len, &d);
}

/* min and max: a plain JSON number, short enough that its exponent stays far from EXP_CAP. */
static int parse_bound(struct load *ld, const struct ynode *n, const char *name,
                       const char **out)
{
    struct quoted q;

    if (!is_json_number(n) || n->len > POLICY_MAX_BOUND)
        return fail(ld, n, "%s must be a plain number (JSON syntax, at most %u characters), got %s",
                    name, POLICY_MAX_BOUND, describe(&q, n));
    return (*out = dup_scalar(ld, n)) == NULL ? -1 : 0;
}

static bool looks_numeric(const struct ynode *n)
{
    char c = n->len ? n->str[0] : 'x';

    return is_digit(c) || c == '-' || c == '+' || c == '.';
}

/* One enum entry. A plain scalar is typed the way YAML would read it, but only in the forms a
 * JSON value can take; a plain value YAML would read as a number or null in some other form
 * (0x10, +1, .5, 1_000, ~, null) is an error rather than silently a string. */
static int parse_enum_value(struct load *ld, const struct ynode *n, const char *name,
                            struct policy_enum_value *v)
{
    struct quoted q;

    if (n->kind != YNODE_SCALAR || ynode_is_empty(n))
        return fail(ld, n, "%s entries must be strings, numbers or booleans, got %s", name,
                    describe(&q, n));
    if (!n->plain)
        v->type = POLICY_VALUE_STRING;
    else if (scalar_is(n, "true") || scalar_is(n, "false"))
        v->type = POLICY_VALUE_BOOL;
    else if (is_json_number(n))
        v->type = POLICY_VALUE_NUMBER;
    else if (looks_numeric(n) || scalar_is(n, "null") || scalar_is(n, "~") ||
             scalar_is(n, "Null") || scalar_is(n, "NULL"))
        return fail(ld, n, "%s entry %s is ambiguous: write a JSON number, or quote it for a "
                    "string", name, quote(&q, n));
    else
        v->type = POLICY_VALUE_STRING;
    v->len = n->len;
    return (v->text = dup_scalar(ld, n)) == NULL ? -1 : 0;
}

static bool enum_equal(const struct policy_enum_value *x, const struct policy_enum_value *y)
{
    int c;

    if (x->type != y->type)
        return false;
    if (x->type == POLICY_VALUE_NUMBER)
        return policy_number_cmp(x->text, x->len, y->text, y->len, &c) == 0 && c == 0;
    return x->len == y->len && memcmp(x->text, y->text, x->len) == 0;
}

static int parse_enum(struct load *ld, const struct ynode *n, const char *name,
                      struct policy_arg *a)
{
    struct policy_enum_value *v;
    struct quoted q;

    if (n->kind != YNODE_SEQUENCE || n->nkids == 0)
        return fail(ld, n, "%s must be a non-empty list of values, got %s", name,
                    n->kind == YNODE_SEQUENCE ? "an empty list" : describe(&q, n));
    if (n->nkids > POLICY_MAX_LIST)
        return fail(ld, n->kids[POLICY_MAX_LIST], "%s has more than %d values", name,
                    POLICY_MAX_LIST);
    if ((v = calloc(n->nkids, sizeof(*v))) == NULL)
        return fail(ld, NULL, "out of memory");
    a->enum_values = v;
    a->n_enum = n->nkids;
    for (size_t i = 0; i < n->nkids; i++) {
        if (parse_enum_value(ld, n->kids[i], name, &v[i]) < 0)
            return -1;
        for (size_t j = 0; j < i; j++)
            if (enum_equal(&v[i], &v[j]))
                return fail(ld, n->kids[i], "duplicate %s value %s (first at %u:%u)", name,
                            quote(&q, n->kids[i]), n->kids[j]->line, n->kids[j]->col);
    }
    return 0;
}

static int parse_max_length(struct load *ld, const struct ynode *n, const char *name,
                            struct policy_arg *a)
{
    struct quoted q;
    long long v;

    if (!parse_int(n, &v))
        return fail(ld, n, "%s must be a plain decimal integer (bytes), got %s", name,
                    describe(&q, n));
    if (v < 0 || v > POLICY_MAX_LENGTH)
        return fail(ld, n, "%s must be between 0 and %u bytes, got %.24s", name,
                    POLICY_MAX_LENGTH, n->str);
    a->has_max_length = true;
    a->max_length = (size_t)v;
    return 0;
}

/* The keys of tools.<tool>.args.<argument>, in the order they are parsed and "expected: ..."
 * lists them. */
enum rule_key {
    RULE_DENY_GLOB, RULE_ALLOW_GLOB, RULE_CONFIRM_GLOB, RULE_REGEX, RULE_MAX_LENGTH, RULE_ENUM,
    RULE_MIN, RULE_MAX, RULE_COUNT
};
static const char *const rule_keys[RULE_COUNT] = {
    [RULE_DENY_GLOB] = "deny_glob", [RULE_ALLOW_GLOB] = "allow_glob",
    [RULE_CONFIRM_GLOB] = "confirm_glob", [RULE_REGEX] = "regex", [RULE_MAX_LENGTH] = "max_length",
    [RULE_ENUM] = "enum", [RULE_MIN] = "min", [RULE_MAX] = "max",
};

/* A rule for strings next to one for numbers would refuse every value: an error, at the
 * second of the two keys in file order. */
static int check_rule_types(struct load *ld, const struct key_slot s[], const char *path)
{
    static const enum rule_key str_rules[] = { RULE_DENY_GLOB, RULE_ALLOW_GLOB,
                                               RULE_CONFIRM_GLOB, RULE_REGEX, RULE_MAX_LENGTH };
    const struct key_slot *str = NULL, *num = s[RULE_MIN].key ? &s[RULE_MIN] : &s[RULE_MAX];

    for (size_t i = 0; i < sizeof(str_rules) / sizeof(str_rules[0]) && str == NULL; i++)
        if (s[str_rules[i]].key)
            str = &s[str_rules[i]];
    if (str == NULL || num->key == NULL)
        return 0;
    const struct key_slot *later = str->key->line > num->key->line ||
                                   (str->key->line == num->key->line &&
                                    str->key->col > num->key->col) ? str : num;
    return fail(ld, later->key, "%s: %s applies to strings and %s to numbers, so no value "
                "could pass both", path, str->key->str, num->key->str);
}

/* The value v of rule key k into a; name is the rule's path, for messages. */
static int parse_arg_rule(struct load *ld, enum rule_key k, const struct ynode *v,
                          const char *name, struct policy_arg *a)
{
    switch (k) {
    case RULE_DENY_GLOB:
        return parse_globs(ld, v, name, &a->deny_glob, &a->n_deny_glob);
    case RULE_ALLOW_GLOB:
        return parse_globs(ld, v, name, &a->allow_glob, &a->n_allow_glob);
    case RULE_CONFIRM_GLOB:
        return parse_globs(ld, v, name, &a->confirm_glob, &a->n_confirm_glob);
    case RULE_REGEX:
        return parse_regex(ld, v, name, a);
    case RULE_MAX_LENGTH:
        return parse_max_length(ld, v, name, a);
    case RULE_ENUM:
        return parse_enum(ld, v, name, a);
    case RULE_MIN:
        return parse_bound(ld, v, name, &a->min);
    case RULE_MAX:
        return parse_bound(ld, v, name, &a->max);
    case RULE_COUNT:
        break;
    }
    return 0;
}

static int parse_arg_rules(struct load *ld, const struct ynode *map, const char *path,
                           struct policy_arg *a)
{
    struct key_slot s[RULE_COUNT];
    char name[sizeof(struct quoted) * 2 + 64];
    int c;

    if (require_mapping(ld, map, path) < 0 ||
        parse_mapping(ld, map, path, rule_keys, RULE_COUNT, s) < 0 ||
        check_rule_types(ld, s, path) < 0)
        return -1;
    for (enum rule_key k = 0; k < RULE_COUNT; k++)
        if (s[k].value && parse_arg_rule(ld, k, s[k].value,
                                         join(name, sizeof(name), path, rule_keys[k]), a) < 0)
            return -1;
    if (a->min && a->max && policy_number_cmp(a->min, strlen(a->min), a->max, strlen(a->max), &c)
        == 0 && c > 0)
        return fail(ld, s[RULE_MAX].value, "%s: max %s is less than min %s", path, a->max, a->min);
    return 0;
}

/* args: { <argument>: { rules } }. An argument may be declared with no rules (path: {}) so a
 * message template can name it. */
static int parse_args(struct load *ld, const struct ynode *map, const char *tool_path,
                      struct policy_tool *t)
{
    char path[PATH_LEN + 8], arg_path[PATH_LEN * 2 + 16];
    struct quoted q;
    size_t n;

    join(path, sizeof(path), tool_path, "args");
    if (require_mapping(ld, map, path) < 0)
        return -1;
    if ((n = ynode_map_size(map)) == 0)
        return fail(ld, map, "%s is empty (leave it out, or list the arguments)", path);
    if (n > POLICY_MAX_ARGS)
        return fail(ld, ynode_map_key(map, POLICY_MAX_ARGS), "%s has more than %d arguments",
                    path, POLICY_MAX_ARGS);
    if ((t->args = calloc(n, sizeof(*t->args))) == NULL)
        return fail(ld, NULL, "out of memory");
    t->nargs = n;
    for (size_t i = 0; i < n; i++) {
        const struct ynode *key = ynode_map_key(map, i);
        struct policy_arg *a = &t->args[i];
        char *rule;
        if (key->len == 0 || has_control(key->str, key->len))
            return fail(ld, key, "argument name %s in %s is empty or has a control character",
                        quote(&q, key), path);
        for (size_t j = 0; j < i; j++)
            if (scalar_is(ynode_map_key(map, j), key->str))
                return fail(ld, key, "duplicate argument %s in %s (first defined at %u:%u)",
                            quote(&q, key), path, ynode_map_key(map, j)->line,
                            ynode_map_key(map, j)->col);
        snprintf(arg_path, sizeof(arg_path), "%s.%s", path,
                 quote_bytes(&q, key->str, key->len, true));
        if (parse_arg_rules(ld, ynode_map_value(map, i), arg_path, a) < 0)
            return -1;
        /* the rule name handed out is the tool's real name, unquoted, as policy_lookup's is */
        a->len = key->len;
        a->name = dup_scalar(ld, key);
        rule = malloc(t->len + key->len + sizeof("tools..args."));
        if (a->name == NULL || rule == NULL) {
            free(rule);
            return fail(ld, NULL, "out of memory");
        }
        sprintf(rule, "tools.%s.args.%s", t->name, key->str);
        a->rule = rule;
    }
    return 0;
}

/* ===== message templates ===== */

static bool is_field_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_' ||
           c == '.' || c == '-';
}

static bool tool_has_arg(const struct policy_tool *t, const char *name, size_t len)
{
    for (size_t i = 0; i < t->nargs; i++)
        if (t->args[i].len == len && memcmp(t->args[i].name, name, len) == 0)
            return true;
    return false;
}

/* Errors are at the message node and name the character (1-based), because a quoted scalar's
 * escapes make a column inside it unreliable. */
static int parse_message(struct load *ld, const struct ynode *n, const char *tool_path,
                         struct policy_tool *t)
{
    const char *s = n->str;
    struct quoted q;

    if (n->kind != YNODE_SCALAR || n->len == 0 || n->len > POLICY_MAX_MESSAGE ||
        has_control(s, n->len))
        return fail(ld, n, "%s.message must be a non-empty string of at most %u bytes without "
                    "control characters, got %s", tool_path, POLICY_MAX_MESSAGE,
                    describe(&q, n));
    for (size_t i = 0; i < n->len; i++) {
        if (s[i] == '}' && (i + 1 == n->len || s[i + 1] != '}'))
            return fail(ld, n, "%s.message: unmatched } at character %zu (write }} for a "
                        "literal brace)", tool_path, i + 1);
        if (s[i] == '}' || (s[i] == '{' && i + 1 < n->len && s[i + 1] == '{')) {
            i++;
            continue;
        }
        if (s[i] != '{')
            continue;
        size_t e = i + 1;
        while (e < n->len && is_field_char(s[e]))
            e++;
        if (e == n->len || s[e] != '}' || e == i + 1)
            return fail(ld, n, "%s.message: { at character %zu does not start a {field} of "
                        "letters, digits, _ . - (write {{ for a literal brace)", tool_path, i + 1);
        if (!tool_has_arg(t, s + i + 1, e - i - 1))
            return fail(ld, n, "%s.message: field {%.*s} is not listed under %s.args (declare "
                        "it there, with {} if it needs no rules)", tool_path,
                        (int)(e - i - 1 < QUOTE_MAX ? e - i - 1 : QUOTE_MAX), s + i + 1,
                        tool_path);
        i = e;
    }
    return (t->message = dup_scalar(ld, n)) == NULL ? -1 : 0;
}

/* ===== levels: defaults, tools, one tool, the top ===== */

static int parse_limit(struct load *ld, const struct ynode *n, const char *name, unsigned *out)
{
    struct quoted q;
    long long v;
    if (!parse_int(n, &v))
        return fail(ld, n, "%s must be a plain decimal integer, got %s", name, describe(&q, n));
    if (v < 1 || v > POLICY_LIMIT_MAX)
        return fail(ld, n, "%s must be between 1 and %d, got %.24s", name, POLICY_LIMIT_MAX,
                    n->str);
    *out = (unsigned)v;
    return 0;
}

enum defaults_key {
    DEFAULTS_ACTION, DEFAULTS_CONFIRM_TTL, DEFAULTS_HIDE_DENIED, DEFAULTS_MAX_OPEN,
    DEFAULTS_PER_MINUTE, DEFAULTS_STRICT, DEFAULTS_UNPINNED, DEFAULTS_COUNT
};
static const char *const defaults_keys[DEFAULTS_COUNT] = {
    [DEFAULTS_ACTION] = "action", [DEFAULTS_CONFIRM_TTL] = "confirm_ttl",
    [DEFAULTS_HIDE_DENIED] = "hide_denied", [DEFAULTS_MAX_OPEN] = "max_open_confirmations",
    [DEFAULTS_PER_MINUTE] = "max_questions_per_minute", [DEFAULTS_STRICT] = "strict",
    [DEFAULTS_UNPINNED] = "unpinned",
};

/* defaults.unpinned: allow (the default) or deny, for tools the policy gives no pin. */
static int parse_unpinned(struct load *ld, const struct ynode *n)
{
    struct quoted q;

    if (n->kind == YNODE_SCALAR && scalar_is(n, "allow"))
        ld->p->unpinned_deny = false;
    else if (n->kind == YNODE_SCALAR && scalar_is(n, "deny"))
        ld->p->unpinned_deny = true;
    else
        return fail(ld, n, "defaults.unpinned must be allow or deny, got %s", describe(&q, n));
    return 0;
}

static int parse_defaults(struct load *ld, const struct ynode *map)
{
    struct key_slot s[DEFAULTS_COUNT];
    const struct ynode *ttl;
    struct quoted q;
    long long v;

    if (require_mapping(ld, map, "defaults") < 0 ||
        parse_mapping(ld, map, "defaults", defaults_keys, DEFAULTS_COUNT, s) < 0)
        return -1;
    if (s[DEFAULTS_MAX_OPEN].value &&
        parse_limit(ld, s[DEFAULTS_MAX_OPEN].value, "defaults.max_open_confirmations",
                    &ld->p->max_open) < 0)
        return -1;
    if (s[DEFAULTS_PER_MINUTE].value &&
        parse_limit(ld, s[DEFAULTS_PER_MINUTE].value, "defaults.max_questions_per_minute",
                    &ld->p->per_minute) < 0)
        return -1;
    if (s[DEFAULTS_ACTION].value &&
        parse_action(ld, s[DEFAULTS_ACTION].value, "defaults.action", &ld->p->default_action) < 0)
        return -1;
    if (s[DEFAULTS_ACTION].value) {
        ld->p->action_line = s[DEFAULTS_ACTION].value->line;
        ld->p->action_col = s[DEFAULTS_ACTION].value->col;
    }
    if (s[DEFAULTS_STRICT].value &&
        parse_bool(ld, s[DEFAULTS_STRICT].value, "defaults.strict", &ld->p->strict) < 0)
        return -1;
    if (s[DEFAULTS_UNPINNED].value && parse_unpinned(ld, s[DEFAULTS_UNPINNED].value) < 0)
        return -1;
    if (s[DEFAULTS_HIDE_DENIED].value &&
        parse_bool(ld, s[DEFAULTS_HIDE_DENIED].value, "defaults.hide_denied",
                   &ld->p->hide_denied) < 0)
        return -1;
    ttl = s[DEFAULTS_CONFIRM_TTL].value;
    if (ttl == NULL)
        return 0;
    if (!parse_int(ttl, &v))
        return fail(ld, ttl,
                    "defaults.confirm_ttl must be a plain decimal integer (seconds), got %s",
                    describe(&q, ttl));
    if (v < 1 || v > POLICY_TTL_MAX)
        return fail(ld, ttl, "defaults.confirm_ttl must be between 1 and %u seconds, got %.24s",
                    POLICY_TTL_MAX, ttl->str);
    ld->p->confirm_ttl = (unsigned)v;
    return 0;
}

/* The offending character of f for a message: "'*' (a glob character)", "U+200B (...)". */
static const char *flaw_char(char *ch, size_t size, const struct policy_name_flaw *f)
{
    if (f->cp == 0)
        snprintf(ch, size, "%s", f->what);
    else if (f->cp >= ' ' && f->cp < 0x7f)
        snprintf(ch, size, "'%c' (%s)", (char)f->cp, f->what);
    else
        snprintf(ch, size, "U+%04X (%s)", (unsigned)f->cp, f->what);
    return ch;
}

/* A name that no server's tool can have (policy_name.h) fails at n; what names it in the
 * message ("tool name", "tools.x.observe.tool"). */
static int check_name_plain(struct load *ld, const struct ynode *n, const char *what)
{
    struct policy_name_flaw f;
    struct quoted q;
    char ch[64];

    if (policy_name_plain(n->str, n->len, &f))
        return 0;
    return fail(ld, n, "%s %s has %s at character %zu: tool names are matched exactly, so it "
                "would never match a tool the server lists", what, quote(&q, n),
                flaw_char(ch, sizeof(ch), &f), f.at);
}

/* The name is the key under tools: non-empty, no control characters, nothing no real tool name
 * has, not seen before. */
static int check_tool_name(struct load *ld, const struct ynode *key)
{
    const struct ynode *first;
    struct quoted q;
    uint32_t s;

    if (key->len == 0)
        return fail(ld, key, "empty tool name");
    for (size_t i = 0; i < key->len; i++) {
        unsigned char c = (unsigned char)key->str[i];
        if (c < 0x20 || c == 0x7f)
            return fail(ld, key, "tool name %s contains a control character", quote(&q, key));
    }
    if (check_name_plain(ld, key, "tool name") < 0)
        return -1;
    s = ld->p->slots[find_slot(ld->p, key->str, key->len)];
    if (s == 0)
        return 0;
    first = ynode_map_key(ld->tools, s - 1);
    return fail(ld, key, "duplicate tool %s (first defined at %u:%u)", quote(&q, key), first->line,
                first->col);
}

/* observe: { tool: NAME, args: { OBSERVE_ARG: CALL_ARG, ... } } */
enum observe_key { OBSERVE_TOOL, OBSERVE_ARGS, OBSERVE_COUNT };
static const char *const observe_keys[OBSERVE_COUNT] = {
    [OBSERVE_TOOL] = "tool", [OBSERVE_ARGS] = "args",
};

/* Key i of observe.args names an argument of the observed call, under the rules of an args:
 * key. A key given twice must fail here: the call is built with json_set, where the last one
 * would silently win. */
static int check_observe_key(struct load *ld, const struct ynode *args, size_t i,
                             const char *path)
{
    const struct ynode *k = ynode_map_key(args, i);
    struct quoted q;

    if (k->len == 0 || has_control(k->str, k->len))
        return fail(ld, k, "argument name %s in %s is empty or has a control character",
                    quote(&q, k), path);
    for (size_t j = 0; j < i; j++)
        if (scalar_is(ynode_map_key(args, j), k->str))
            return fail(ld, k, "duplicate argument %s in %s (first defined at %u:%u)",
                        quote(&q, k), path, ynode_map_key(args, j)->line,
                        ynode_map_key(args, j)->col);
    return 0;
}

static int parse_observe(struct load *ld, const struct ynode *key, const struct ynode *map,
                         const char *path, struct policy_tool *t)
{
    struct key_slot s[OBSERVE_COUNT];
    char where[PATH_LEN + 16];
    struct quoted q;

    join(where, sizeof(where), path, "observe");
    /* A tool tightened to deny in a hurry keeps its leftover observe: nothing is observed for
     * a call that is refused anyway, and refusing the policy would keep the looser one. */
    if (t->action == POLICY_DENY &&
        warn(ld, key, "%s is ignored: %s is deny, nothing is observed", where, path) < 0)
        return -1;
    if (t->action == POLICY_ALLOW)
        return fail(ld, key, "observe needs action confirm (%s)", path);
    if (require_mapping(ld, map, where) < 0 ||
        parse_mapping(ld, map, where, observe_keys, OBSERVE_COUNT, s) < 0)
        return -1;
    const struct ynode *tool = s[OBSERVE_TOOL].value;
    if (tool == NULL)
        return fail(ld, map, "missing key \"tool\" in %s", where);
    if (tool->kind != YNODE_SCALAR || tool->len == 0 || has_control(tool->str, tool->len))
        return fail(ld, tool, "%s.tool must be a tool name, got %s", where, describe(&q, tool));
    char tool_where[PATH_LEN + 24];
    if (check_name_plain(ld, tool, join(tool_where, sizeof(tool_where), where, "tool")) < 0)
        return -1;
    struct policy_observe *o = calloc(1, sizeof(*o));
    if (o == NULL)
        return fail(ld, NULL, "out of memory");
    t->observe = o;
    t->observe_node = tool;
    if ((o->tool = dup_scalar(ld, tool)) == NULL)
        return -1;
    const struct ynode *args = s[OBSERVE_ARGS].value;
    if (args == NULL)
        return 0;
    char args_where[PATH_LEN + 24];
    join(args_where, sizeof(args_where), where, "args");
    if (require_mapping(ld, args, args_where) < 0)
        return -1;
    size_t n = ynode_map_size(args);
    if (n > POLICY_MAX_ARGS)
        return fail(ld, args, "%s.args has more than %d entries", where, POLICY_MAX_ARGS);
    const char **to = calloc(n ? n : 1, sizeof(*to)), **from = calloc(n ? n : 1, sizeof(*from));
    o->to = to;
    o->from = from;
    if (to == NULL || from == NULL)
        return fail(ld, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const struct ynode *k = ynode_map_key(args, i), *v = ynode_map_value(args, i);
        struct quoted q2;
        if (check_observe_key(ld, args, i, args_where) < 0)
            return -1;
        if (v->kind != YNODE_SCALAR || v->len == 0 || memchr(v->str, '\0', v->len))
            return fail(ld, v, "%s.args.%s must name an argument of the call, got %s", where,
                        quote(&q, k), describe(&q2, v));
        o->nargs = i + 1;
        if ((to[i] = dup_scalar(ld, k)) == NULL || (from[i] = dup_scalar(ld, v)) == NULL)
            return -1;
    }
    return 0;
}

/* After every tool is known: an observed tool must itself be allowed (it runs unasked). */
static int check_observers(struct load *ld)
{
    struct quoted q;
    for (size_t i = 0; i < ld->p->ntools; i++) {
        struct policy_tool *t = &ld->p->tools[i];
        if (t->observe == NULL || t->action == POLICY_DENY)
            continue;
        const struct policy_tool *o = find_tool(ld->p, t->observe->tool,
                                                strlen(t->observe->tool));
        enum policy_action a = o ? o->action : ld->p->default_action;
        if (a != POLICY_ALLOW)
            return fail(ld, t->observe_node,
                        "tools.%s.observe.tool %s must be an allow tool (observe calls run "
                        "without asking)", t->name, quote(&q, t->observe_node));
    }
    return 0;
}

enum tool_key {
    TOOL_ACTION, TOOL_IRREVERSIBLE, TOOL_FALLBACK, TOOL_ARGS, TOOL_MESSAGE, TOOL_OBSERVE,
    TOOL_STRICT_ARGS, TOOL_PIN, TOOL_APPROVAL, TOOL_APPROVERS, TOOL_SELF_APPROVE, TOOL_COUNT
};
static const char *const tool_keys[TOOL_COUNT] = {
    [TOOL_ACTION] = "action", [TOOL_IRREVERSIBLE] = "irreversible", [TOOL_FALLBACK] = "fallback",
    [TOOL_ARGS] = "args", [TOOL_MESSAGE] = "message", [TOOL_OBSERVE] = "observe",
    [TOOL_STRICT_ARGS] = "strict_args", [TOOL_PIN] = "pin", [TOOL_APPROVAL] = "approval",
    [TOOL_APPROVERS] = "approvers", [TOOL_SELF_APPROVE] = "self_approve",
};

/* Lowercase only, unlike base.h's sl_hex_digit: a pin has the one spelling `sluice pin` prints. */
static int lower_hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* pin: "sha256:" and 64 lowercase hex digits, the form `sluice pin` prints (one spelling, so
 * that a pin can be compared by eye with the tool's output). */
static int parse_pin(struct load *ld, const struct ynode *n, const char *path,
                     struct policy_tool *t)
{
    static const char prefix[] = "sha256:";
    const size_t plen = sizeof(prefix) - 1;
    struct quoted q;
    bool ok = n->kind == YNODE_SCALAR && n->len == plen + 2 * POLICY_PIN_LEN &&
              memcmp(n->str, prefix, plen) == 0;
    for (size_t i = 0; ok && i < POLICY_PIN_LEN; i++) {
        int hi = lower_hex_digit(n->str[plen + 2 * i]);
        int lo = lower_hex_digit(n->str[plen + 2 * i + 1]);
        ok = hi >= 0 && lo >= 0;
        if (ok)
            t->pin[i] = (uint8_t)(hi << 4 | lo);
    }
    if (!ok)
        return fail(ld, n, "%s.pin must be sha256: and 64 lowercase hex digits (as sluice pin "
                    "prints), got %s", path, describe(&q, n));
    t->has_pin = true;
    return 0;
}

/* fallback: token or page, once the tool's action, irreversible and observe are known. */
static int parse_fallback(struct load *ld, const struct key_slot *fb, const char *path,
                          struct policy_tool *t)
{
    struct quoted q;
    bool page = fb->value->kind == YNODE_SCALAR && scalar_is(fb->value, "page");

    if (fb->value->kind != YNODE_SCALAR || (!page && !scalar_is(fb->value, "token")))
        return fail(ld, fb->value, "%s.fallback must be token or page, got %s", path,
                    describe(&q, fb->value));
    if (t->action == POLICY_DENY)
        return warn(ld, fb->key, "%s.fallback is ignored: %s is deny, %s", path, path,
                    page ? "nobody is asked" : "no token is issued");
    if (t->action != POLICY_CONFIRM)
        return fail(ld, fb->key, "fallback: %s needs action confirm (%s)", page ? "page" : "token",
                    path);
    /* The page asks a person (sluice's own approval page), so an irreversible tool may use it. */
    if (page) {
        t->page_fallback = true;
        return 0;
    }
    /* The token asks nobody: a tool whose effect cannot be undone never gets it. */
    if (t->irreversible)
        return fail(ld, fb->key, "fallback: token is not allowed on an irreversible tool (%s)",
                    path);
    /* A token is redeemed without a question, so nothing would read the target first. */
    if (t->observe)
        return fail(ld, fb->key, "fallback: token cannot be combined with observe (%s)", path);
    t->token_fallback = true;
    return 0;
}

/* A principal pattern: '*' any run of bytes, '?' one byte (policy.h, policy_principal_match),
 * without the glob syntax of other tools, which would match only principals spelt that way so
 * that the person meant could never approve (policy_pattern_plain). */
static int check_principal_glob(struct load *ld, const struct ynode *n, const char *name)
{
    struct policy_name_flaw f;
    struct quoted q;
    char ch[96];

    if (n->kind != YNODE_SCALAR || n->len == 0)
        return fail(ld, n, "%s entries must be non-empty strings, got %s", name,
                    describe(&q, n));
    if (n->len > POLICY_MAX_PATTERN || has_control(n->str, n->len))
        return fail(ld, n, "%s pattern %s is longer than %u bytes or has a control character",
                    name, quote(&q, n), POLICY_MAX_PATTERN);
    if (!policy_pattern_plain(n->str, n->len, &f))
        return fail(ld, n, "%s pattern %s has %s at character %zu: %s", name, quote(&q, n),
                    flaw_char(ch, sizeof(ch), &f), f.at, f.instead);
    return 0;
}

/* The principal a bearer token becomes (proxy/http_principal.c): "bearer:" and 32 hex digits
 * of its SHA-256. */
#define BEARER_PREFIX "bearer:"
#define BEARER_HEX    32

/* Whether pattern matches every bearer principal. Exact for these globs: one that matches both
 * the all-'0' and the all-'f' principal has no literal '0' nor 'f' ('0' is in no part of the
 * latter, 'f' in none of the former), so in its match of the first no literal falls on a digit:
 * wildcards cover every digit, and any other digits match as well. */
static bool matches_every_bearer(const char *pattern)
{
    char s[sizeof(BEARER_PREFIX) - 1 + BEARER_HEX];
    memcpy(s, BEARER_PREFIX, sizeof(BEARER_PREFIX) - 1);
    memset(s + sizeof(BEARER_PREFIX) - 1, '0', BEARER_HEX);
    if (!policy_principal_match(pattern, s, sizeof(s)))
        return false;
    memset(s + sizeof(BEARER_PREFIX) - 1, 'f', BEARER_HEX);
    return policy_principal_match(pattern, s, sizeof(s));
}

/* Whether pattern matches more than one bearer principal, exactly: it does when some match of
 * some bearer principal lets a wildcard ('?' or '*') take one of its hex digits, as that digit
 * may then be any other. Conversely two matched principals differ at a digit, and a match that
 * takes every digit with a literal takes them with the last 32 literals of the pattern (nothing
 * but '*' may follow, matching nothing), the same 32 for both. So this runs the pattern over
 * every bearer principal at once, a set of pattern positions per byte, each marked by whether
 * a wildcard has taken a digit on the way (FREE) or not yet (PINNED). */
static bool matches_many_bearers(const char *pattern)
{
    enum { PINNED = 1, FREE = 2 };
    size_t n = strlen(pattern);
    unsigned char at[POLICY_MAX_PATTERN + 1] = { 0 }, next[POLICY_MAX_PATTERN + 1];
    const size_t plen = sizeof(BEARER_PREFIX) - 1;

    if (n > POLICY_MAX_PATTERN)
        return true; /* the loader refused it already; never say it is narrow */
    at[0] = PINNED;
    for (size_t i = 0; i <= plen + BEARER_HEX; i++) {
        for (size_t k = 0; k < n; k++) /* '*' may match nothing */
            if (pattern[k] == '*')
                at[k + 1] |= at[k];
        if (i == plen + BEARER_HEX)
            break;
        bool digit = i >= plen;
        memset(next, 0, n + 1);
        for (size_t k = 0; k < n; k++) {
            unsigned char m = at[k], c = (unsigned char)pattern[k];
            if (m == 0)
                continue;
            if (c == '*' || c == '?') {
                next[c == '*' ? k : k + 1] |= digit ? FREE : m;
            } else if (digit ? (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')
                             : c == (unsigned char)BEARER_PREFIX[i]) {
                next[k + 1] |= m;
            }
        }
        memcpy(at, next, n + 1);
    }
    return (at[n] & FREE) != 0;
}

/* sluice does not verify bearer tokens (it only tells them apart), so under --principal bearer
 * anyone can be any number of bearer principals: an approvers pattern that matches more than
 * one of them lets a caller approve its own call with a second token (any one when the pattern
 * matches them all, one of the tokens it mints until a digest matches otherwise), which
 * self_approve: false means to refuse. A warning, not an error: under --principal cert or
 * header:NAME (which the policy cannot know) no caller is a bearer principal. */
static int warn_bearer_approvers(struct load *ld, const struct ynode *who, const char *path,
                                 const struct policy_tool *t)
{
    struct quoted q;
    for (size_t i = 0; !t->self_approve && i < t->napprovers; i++) {
        if (!matches_many_bearers(t->approvers[i]))
            continue;
        bool every = matches_every_bearer(t->approvers[i]);
        if (warn(ld, who->kids[i],
                 "%s.approvers[%zu] %s matches %s bearer principal: sluice does not verify "
                 "bearer tokens, so under --principal bearer a caller approves its own call "
                 "with %s; name each approver (bearer:DIGEST)",
                 path, i, quote(&q, who->kids[i]), every ? "every" : "more than one",
                 every ? "another token"
                       : "another token it mints until one's digest matches the pattern") < 0)
            return -1;
    }
    return 0;
}

/* approval:, approvers: and self_approve:, once the tool's action is known. approvers implies
 * approval: page (and is an error with another approval). */
static int parse_approval(struct load *ld, const struct key_slot *s, const char *path,
                          struct policy_tool *t)
{
    char name[PATH_LEN + 16];
    struct quoted q;
    const struct ynode *ap = s[TOOL_APPROVAL].value, *who = s[TOOL_APPROVERS].value;

    if (ap) {
        if (ap->kind == YNODE_SCALAR && scalar_is(ap, "client"))
            t->approval = POLICY_APPROVAL_CLIENT;
        else if (ap->kind == YNODE_SCALAR && scalar_is(ap, "page"))
            t->approval = POLICY_APPROVAL_PAGE;
        else if (ap->kind == YNODE_SCALAR && scalar_is(ap, "client-or-page"))
            t->approval = POLICY_APPROVAL_CLIENT_OR_PAGE;
        else
            return fail(ld, ap, "%s.approval must be client, page or client-or-page, got %s",
                        path, describe(&q, ap));
    }
    if (who) {
        join(name, sizeof(name), path, "approvers");
        if (who->kind != YNODE_SEQUENCE || who->nkids == 0)
            return fail(ld, who, "%s must be a non-empty list of principal patterns, got %s",
                        name, who->kind == YNODE_SEQUENCE ? "an empty list" : describe(&q, who));
        if (who->nkids > POLICY_MAX_LIST)
            return fail(ld, who->kids[POLICY_MAX_LIST], "%s has more than %d patterns", name,
                        POLICY_MAX_LIST);
        if (ap && t->approval != POLICY_APPROVAL_PAGE)
            return fail(ld, s[TOOL_APPROVERS].key, "%s.approvers needs approval: page (approvers "
                        "approve on sluice's page), and %s.approval is %s", path, path,
                        quote(&q, ap));
        const char **v = calloc(who->nkids, sizeof(*v));
        if (v == NULL)
            return fail(ld, NULL, "out of memory");
        t->approvers = v;
        t->napprovers = who->nkids;
        for (size_t i = 0; i < who->nkids; i++)
            if (check_principal_glob(ld, who->kids[i], name) < 0 ||
                (v[i] = dup_scalar(ld, who->kids[i])) == NULL)
                return -1;
        t->approval = POLICY_APPROVAL_PAGE;
    }
    if (s[TOOL_SELF_APPROVE].value &&
        parse_bool(ld, s[TOOL_SELF_APPROVE].value, join(name, sizeof(name), path, "self_approve"),
                   &t->self_approve) < 0)
        return -1;
    bool any = ap || who || s[TOOL_SELF_APPROVE].value;
    if (any && t->action == POLICY_DENY)
        return warn(ld, (ap ? &s[TOOL_APPROVAL] : who ? &s[TOOL_APPROVERS]
                                                     : &s[TOOL_SELF_APPROVE])->key,
                    "%s: approval settings are ignored: %s is deny, nobody is asked", path, path);
    if (any && t->action != POLICY_CONFIRM)
        return fail(ld, (ap ? &s[TOOL_APPROVAL] : who ? &s[TOOL_APPROVERS]
                                                     : &s[TOOL_SELF_APPROVE])->key,
                    "%s: approval, approvers and self_approve need action confirm", path);
    return who ? warn_bearer_approvers(ld, who, path, t) : 0;
}

static int parse_tool_rule(struct load *ld, const struct ynode *map, const char *path,
                           struct policy_tool *t)
{
    struct key_slot s[TOOL_COUNT];
    char name[PATH_LEN + 16];

    if (require_mapping(ld, map, path) < 0 ||
        parse_mapping(ld, map, path, tool_keys, TOOL_COUNT, s) < 0)
        return -1;
    /* args before message: a template may name only the arguments listed under args. */
    if (s[TOOL_ARGS].value && parse_args(ld, s[TOOL_ARGS].value, path, t) < 0)
        return -1;
    if (s[TOOL_MESSAGE].value && parse_message(ld, s[TOOL_MESSAGE].value, path, t) < 0)
        return -1;
    if (s[TOOL_ACTION].value == NULL)
        return fail(ld, map, "missing key \"action\" in %s (expected: allow, confirm, deny)", path);
    if (parse_action(ld, s[TOOL_ACTION].value, join(name, sizeof(name), path, "action"),
                     &t->action) < 0)
        return -1;
    if (s[TOOL_IRREVERSIBLE].value &&
        parse_bool(ld, s[TOOL_IRREVERSIBLE].value,
                   join(name, sizeof(name), path, "irreversible"), &t->irreversible) < 0)
        return -1;
    /* irreversible means "never serve this to a client that cannot ask a person". An allowed
     * call asks nobody, so there the flag would read as a protection that does not exist. */
    if (t->irreversible && t->action == POLICY_ALLOW)
        return fail(ld, s[TOOL_IRREVERSIBLE].key,
                    "irreversible: true needs action confirm or deny (%s is allow)", path);
    if (s[TOOL_STRICT_ARGS].value &&
        parse_bool(ld, s[TOOL_STRICT_ARGS].value, join(name, sizeof(name), path, "strict_args"),
                   &t->strict_args) < 0)
        return -1;
    if (s[TOOL_PIN].value && parse_pin(ld, s[TOOL_PIN].value, path, t) < 0)
        return -1;
    /* A deny tool asks nobody: its message is never shown. Only a warning, so that tightening
     * a tool to deny in an emergency always loads. */
    if (s[TOOL_MESSAGE].value && t->action == POLICY_DENY &&
        warn(ld, s[TOOL_MESSAGE].key, "%s.message is ignored: %s is deny, nobody is asked", path,
             path) < 0)
        return -1;
    if (s[TOOL_OBSERVE].value &&
        parse_observe(ld, s[TOOL_OBSERVE].key, s[TOOL_OBSERVE].value, path, t) < 0)
        return -1;
    if (parse_approval(ld, s, path, t) < 0)
        return -1;
    if (s[TOOL_FALLBACK].value && parse_fallback(ld, &s[TOOL_FALLBACK], path, t) < 0)
        return -1;
    /* A page nobody may decide on would only ever refuse: say so at load time. */
    bool page = t->approval != POLICY_APPROVAL_CLIENT || t->page_fallback;
    if (page && t->action == POLICY_CONFIRM && t->napprovers == 0 && !t->self_approve)
        return fail(ld, map, "%s sends its question to the approval page, where nobody may "
                    "approve it: add approvers: [...] or self_approve: true", path);
    return 0;
}

/* Tool i of the tools mapping becomes ld->p->tools[i] and enters the index. */
static int parse_tool(struct load *ld, size_t i)
{
    const struct ynode *key = ynode_map_key(ld->tools, i);
    struct policy_tool *t = &ld->p->tools[i];
    char path[PATH_LEN];
    struct quoted q;

    if (check_tool_name(ld, key) < 0)
        return -1;
    snprintf(path, sizeof(path), "tools.%s", quote_bytes(&q, key->str, key->len, true));
    ld->p->ntools = i + 1;  /* from here policy_free owns whatever t holds, even on error */
    t->name = strdup(key->str);
    t->len = key->len;
    t->line = key->line;
    t->col = key->col;
    t->rule = malloc(key->len + sizeof("tools."));
    if (t->name == NULL || t->rule == NULL)
        return fail(ld, NULL, "out of memory");
    memcpy(t->rule, "tools.", 6);
    memcpy(t->rule + 6, key->str, key->len + 1);
    if (parse_tool_rule(ld, ynode_map_value(ld->tools, i), path, t) < 0)
        return -1;
    ld->p->slots[find_slot(ld->p, key->str, key->len)] = (uint32_t)(i + 1);
    return 0;
}

static int parse_tools(struct load *ld, const struct ynode *map)
{
    size_t n;

    if (require_mapping(ld, map, "tools") < 0)
        return -1;
    n = ynode_map_size(map);
    if (n == 0)
        return 0;
    if (n > POLICY_MAX_TOOLS)  /* the error itself comes in file order, at tool MAX + 1 */
        n = POLICY_MAX_TOOLS;
    ld->tools = map;
    ld->p->nslots = 1;
    while (ld->p->nslots < 2 * n)
        ld->p->nslots *= 2;
    ld->p->tools = calloc(n, sizeof(*ld->p->tools));
    ld->p->slots = calloc(ld->p->nslots, sizeof(*ld->p->slots));
    if (ld->p->tools == NULL || ld->p->slots == NULL)
        return fail(ld, NULL, "out of memory");
    for (size_t i = 0; i < ynode_map_size(map); i++) {
        if (i == POLICY_MAX_TOOLS)
            return fail(ld, ynode_map_key(map, i), "more than %d tools", POLICY_MAX_TOOLS);
        if (parse_tool(ld, i) < 0)
            return -1;
    }
    return 0;
}

/* version comes first, before the key table: a newer file should be told that its version is
 * unsupported, not that a key the newer version added is unknown. */
static int check_version(struct load *ld, const struct ynode *root)
{
    const struct ynode *v = NULL;
    struct quoted q;
    long long n;

    for (size_t i = 0; i < ynode_map_size(root) && v == NULL; i++)
        if (scalar_is(ynode_map_key(root, i), "version"))
            v = ynode_map_value(root, i);
    if (v == NULL)
        return fail(ld, root,
                    "missing key \"version\" at top level (a policy starts with version: 1)");
    if (!parse_int(v, &n))
        return fail(ld, v, "version must be the integer 1, got %s", describe(&q, v));
    if (n != 1)
        return fail(ld, v, "unsupported policy version %.24s (this sluice reads version 1)",
                    v->str);
    return 0;
}

enum root_key { ROOT_VERSION, ROOT_DEFAULTS, ROOT_TOOLS, ROOT_COUNT };
static const char *const root_keys[ROOT_COUNT] = {
    [ROOT_VERSION] = "version", [ROOT_DEFAULTS] = "defaults", [ROOT_TOOLS] = "tools",
};

static int parse_root(struct load *ld, const struct ynode *root)
{
    struct key_slot s[ROOT_COUNT];
    struct quoted q;

    if (root->kind != YNODE_MAPPING)
        return fail(ld, root, "a policy must be a mapping with version: 1, got %s",
                    describe(&q, root));
    if (check_version(ld, root) < 0 || parse_mapping(ld, root, "", root_keys, ROOT_COUNT, s) < 0)
        return -1;
    if (s[ROOT_DEFAULTS].value && parse_defaults(ld, s[ROOT_DEFAULTS].value) < 0)
        return -1;
    if (s[ROOT_TOOLS].value && parse_tools(ld, s[ROOT_TOOLS].value) < 0)
        return -1;
    return check_observers(ld);
}

/* ===== public ===== */

static void free_list(const char *const *v, size_t n)
{
    for (size_t i = 0; v != NULL && i < n; i++)
        free((void *)v[i]);
    free((void *)v);
}

static void free_arg(struct policy_arg *a)
{
    free((void *)a->name);
    free((void *)a->rule);
    free_list(a->deny_glob, a->n_deny_glob);
    free_list(a->allow_glob, a->n_allow_glob);
    free_list(a->confirm_glob, a->n_confirm_glob);
    free((void *)a->regex);
    ere_free((struct ere *)a->regex_re);
    for (size_t i = 0; a->enum_values != NULL && i < a->n_enum; i++)
        free((void *)a->enum_values[i].text);
    free((void *)a->enum_values);
    free((void *)a->min);
    free((void *)a->max);
}

static void policy_free(struct policy *p)
{
    for (size_t i = 0; i < p->ntools; i++) {
        free(p->tools[i].name);
        free(p->tools[i].rule);
        free(p->tools[i].message);
        free_list(p->tools[i].approvers, p->tools[i].napprovers);
        if (p->tools[i].observe) {
            struct policy_observe *o = p->tools[i].observe;
            for (size_t j = 0; j < o->nargs; j++) {
                free((char *)o->to[j]);
                free((char *)o->from[j]);
            }
            free((void *)o->to);
            free((void *)o->from);
            free((char *)o->tool);
            free(o);
        }
        for (size_t j = 0; j < p->tools[i].nargs; j++)
            free_arg(&p->tools[i].args[j]);
        free(p->tools[i].args);
    }
    free(p->tools);
    free(p->slots);
    free(p->warnings);
    free(p->tools_view);
    free(p);
}

static void set_file(struct policy_error *err, const char *name)
{
    memset(err, 0, sizeof(*err));
    snprintf(err->file, sizeof(err->file), "%s", name ? name : "<policy>");
}

int policy_load_buffer(const char *name, const char *buf, size_t len, struct policy **out,
                       struct policy_error *err)
{
    struct policy_error scratch;
    struct load ld = { .err = err ? err : &scratch };
    struct ynode_error yerr;
    struct ynode *root;
    int rc;

    *out = NULL;
    set_file(ld.err, name);
    if (len > POLICY_MAX_BYTES)
        return fail(&ld, NULL, "policy is larger than %u bytes", POLICY_MAX_BYTES);
    if (ynode_parse(buf, len, &root, &yerr) < 0) {
        ld.err->line = yerr.line;
        ld.err->col = yerr.col;
        snprintf(ld.err->msg, sizeof(ld.err->msg), "%s", yerr.msg);
        return -1;
    }
    ld.p = calloc(1, sizeof(*ld.p));
    if (ld.p == NULL) {
        ynode_free(root);
        return fail(&ld, NULL, "out of memory");
    }
    atomic_init(&ld.p->refs, 1);
    snprintf(ld.p->file, sizeof(ld.p->file), "%s", ld.err->file);
    ld.p->default_action = POLICY_ALLOW;
    ld.p->confirm_ttl = POLICY_TTL_DEFAULT;
    ld.p->max_open = POLICY_OPEN_DEFAULT;
    ld.p->per_minute = POLICY_RATE_DEFAULT;
    rc = parse_root(&ld, root);
    ynode_free(root);
    if (rc < 0) {
        policy_free(ld.p);
        return -1;
    }
    *out = ld.p;
    return 0;
}

/* Reads the whole file, at most POLICY_MAX_BYTES of it. Reading (not fstat) decides the size,
 * so a pipe or /dev/stdin works and a file growing under us cannot overrun the limit. */
static int read_file(const char *path, char **buf, size_t *len, struct load *ld)
{
    size_t cap = 0;
    char *p = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return fail(ld, NULL, "cannot open: %s", strerror(errno));
    *len = 0;
    for (;;) {
        if (*len == cap) {
            /* One byte past the limit is enough to know the file is too large. */
            size_t grown = cap ? cap * 2 : 4096;
            char *q;
            if (cap == POLICY_MAX_BYTES + 1) {
                fail(ld, NULL, "policy is larger than %u bytes", POLICY_MAX_BYTES);
                goto err;
            }
            if (grown > POLICY_MAX_BYTES + 1)
                grown = POLICY_MAX_BYTES + 1;
            if ((q = realloc(p, grown)) == NULL) {
                fail(ld, NULL, "out of memory");
                goto err;
            }
            p = q;
            cap = grown;
        }
        ssize_t n = read(fd, p + *len, cap - *len);
        if (n == 0)
            break;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fail(ld, NULL, "cannot read: %s", strerror(errno));
            goto err;
        }
        *len += (size_t)n;
    }
    close(fd);
    *buf = p;
    return 0;
err:
    close(fd);
    free(p);
    return -1;
}

int policy_load_file(const char *path, struct policy **out, struct policy_error *err)
{
    struct policy_error scratch;
    struct load ld = { .err = err ? err : &scratch };
    char *buf = NULL;
    size_t len = 0;
    int rc;

    *out = NULL;
    set_file(ld.err, path);
    if (read_file(path, &buf, &len, &ld) < 0)
        return -1;
    rc = policy_load_buffer(path, buf, len, out, ld.err);
    free(buf);
    return rc;
}

void policy_error_format(const struct policy_error *err, char *buf, size_t len)
{
    if (len == 0)
        return;
    if (err->line == 0)
        snprintf(buf, len, "%s: %s", err->file, err->msg);
    else
        snprintf(buf, len, "%s:%u:%u: %s", err->file, err->line, err->col, err->msg);
}

/* p must not be NULL: the proxy refuses to start without a policy, and a reload that fails
 * keeps the old one. */
void policy_lookup(const struct policy *p, const char *tool, size_t len,
                   struct policy_decision *out)
{
    const struct policy_tool *t = find_tool(p, tool, len);

    out->confirm_ttl = p->confirm_ttl;
    out->max_open = p->max_open;
    out->per_minute = p->per_minute;
    out->unpinned_deny = p->unpinned_deny;
    if (t != NULL) {
        out->action = t->action;
        out->irreversible = t->irreversible;
        out->token_fallback = t->token_fallback;
        out->strict_args = t->strict_args;
        out->approval = t->action == POLICY_CONFIRM ? t->approval : POLICY_APPROVAL_CLIENT;
        out->page_fallback = t->action == POLICY_CONFIRM && t->page_fallback;
        out->self_approve = t->self_approve;
        out->approvers = t->approvers;
        out->napprovers = t->napprovers;
        out->pin = t->has_pin ? t->pin : NULL;
        out->observe = t->action == POLICY_CONFIRM ? t->observe : NULL;
        out->rule = t->rule;
        out->named = true;
        out->args = t->nargs ? t->args : NULL;
        out->nargs = t->nargs;
    } else {
        out->action = p->default_action;
        out->irreversible = false;
        out->token_fallback = false;
        out->strict_args = false;
        out->approval = POLICY_APPROVAL_CLIENT;
        out->page_fallback = false;
        out->self_approve = false;
        out->approvers = NULL;
        out->napprovers = 0;
        out->pin = NULL;
        out->observe = NULL;
        out->rule = "defaults.action";
        out->named = false;
        out->args = NULL;
        out->nargs = 0;
    }
}

bool policy_hide_denied(const struct policy *p)
{
    return p->hide_denied;
}

struct policy *policy_ref(struct policy *p)
{
    atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
    return p;
}

void policy_unref(struct policy *p)
{
    if (p != NULL && atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1)
        policy_free(p);
}

const struct policy_arg *policy_tool_args(const struct policy *p, const char *tool, size_t len,
                                          size_t *count)
{
    const struct policy_tool *t = find_tool(p, tool, len);

    *count = t ? t->nargs : 0;
    return t && t->nargs ? t->args : NULL;
}

const char *policy_tool_message(const struct policy *p, const char *tool, size_t len)
{
    const struct policy_tool *t = find_tool(p, tool, len);

    return t ? t->message : NULL;
}

size_t policy_warning_count(const struct policy *p)
{
    return p->nwarnings;
}

const struct policy_error *policy_warning(const struct policy *p, size_t index)
{
    return index < p->nwarnings ? &p->warnings[index] : NULL;
}

void *policy_tools_view(const struct policy *p)
{
    return p->tools_view;
}

/* The view is a cache of what the tools already say, not part of the policy's meaning: setting
 * it on a policy passed as const changes nothing a reader of the policy sees. The first view
 * set stays; a later one is freed. */
void policy_set_tools_view(const struct policy *p, void *view)
{
    if (p->tools_view != NULL) {
        free(view);
        return;
    }
    ((struct policy *)p)->tools_view = view;
}

size_t policy_tool_count(const struct policy *p)
{
    return p->ntools;
}

const char *policy_tool_name(const struct policy *p, size_t index)
{
    return index < p->ntools ? p->tools[index].name : NULL;
}

struct policy_where policy_tool_where(const struct policy *p, size_t index)
{
    struct policy_where w = { p->file, 0, 0 };
    if (index < p->ntools) {
        w.line = p->tools[index].line;
        w.col = p->tools[index].col;
    }
    return w;
}

struct policy_where policy_default_where(const struct policy *p)
{
    return (struct policy_where){ p->file, p->action_line, p->action_col };
}

bool policy_strict(const struct policy *p)
{
    return p->strict;
}

bool policy_unpinned_deny(const struct policy *p)
{
    return p->unpinned_deny;
}

/* Iterative glob with one backtrack point ('*' extends): O(len(pattern) * len(s)) at worst. */
bool policy_principal_match(const char *pattern, const char *s, size_t len)
{
    const char *p = pattern, *star = NULL;
    size_t i = 0, mark = 0;

    while (i < len) {
        if (*p == '*') {
            star = p++;
            mark = i;
        } else if (*p != '\0' && (*p == '?' || *p == s[i])) {
            p++;
            i++;
        } else if (star != NULL) {
            p = star + 1;
            i = ++mark;
        } else {
            return false;
        }
    }
    while (*p == '*')
        p++;
    return *p == '\0';
}

bool policy_uses_page(const struct policy *p)
{
    for (size_t i = 0; i < p->ntools; i++) {
        const struct policy_tool *t = &p->tools[i];
        if (t->action == POLICY_CONFIRM &&
            (t->approval != POLICY_APPROVAL_CLIENT || t->page_fallback))
            return true;
    }
    return false;
}
