/* pinyaml.c: the line edit behind `sluice pin --write` (pinyaml.h). */
#include "pinyaml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json.h"
#include "pin.h"

struct line {
    const char *p;
    size_t len;                  /* without the line ending */
    size_t end;                  /* with it */
};

/* One edit: line `at` is replaced by `text` (replace) or `text` is added after it. */
struct edit {
    size_t at;
    bool replace;
    struct sl_buf text;          /* without a line ending (added as the file's own) */
};

struct job {
    struct line *lines;
    size_t nlines;
    struct edit *edits;
    size_t nedits;
    const char *eol;             /* "\n" or "\r\n", as the file has it */
    const char *name;
    char *err;
    size_t errlen;
};

static int job_fail(struct job *j, size_t line, const char *why)
{
    snprintf(j->err, j->errlen, "%s:%zu: %s", j->name, line + 1, why);
    return -1;
}

static void split_lines(struct job *j, const char *text, size_t len)
{
    size_t cap = 16;
    j->lines = sl_xmalloc(cap * sizeof(*j->lines));
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) + 1 : len;
        size_t l = (nl ? (size_t)(nl - text) : len) - i;
        if (l > 0 && text[i + l - 1] == '\r')
            l--;
        if (j->nlines == cap)
            j->lines = sl_xrealloc(j->lines, (cap *= 2) * sizeof(*j->lines));
        j->lines[j->nlines++] = (struct line){ text + i, l, end - i };
        i = end;
    }
    j->eol = j->nlines && j->lines[0].end > j->lines[0].len + 1 ? "\r\n" : "\n";
}

static size_t indent_of(const struct line *l)
{
    size_t i = 0;
    while (i < l->len && l->p[i] == ' ')
        i++;
    return i;
}

/* Blank, or only a comment: no content for the mapping's shape. */
static bool is_blank(const struct line *l)
{
    size_t i = indent_of(l);
    return i == l->len || l->p[i] == '#';
}

static struct edit *add_edit(struct job *j, size_t at, bool replace)
{
    j->edits = sl_xrealloc(j->edits, (j->nedits + 1) * sizeof(*j->edits));
    struct edit *e = &j->edits[j->nedits++];
    *e = (struct edit){ .at = at, .replace = replace };
    return e;
}

/* Byte offset of 1-based character column col in l (libyaml counts characters). */
static size_t col_offset(const struct line *l, unsigned col)
{
    size_t i = 0;
    for (unsigned c = 1; c < col && i < l->len; c++) {
        i++;
        while (i < l->len && ((unsigned char)l->p[i] & 0xC0) == 0x80)
            i++;
    }
    return i;
}

/* The end of a scalar that starts at i (quoted or plain, as a key): the offset just after it. */
static size_t scalar_end(const char *p, size_t len, size_t i)
{
    if (i < len && (p[i] == '"' || p[i] == '\'')) {
        char q = p[i++];
        while (i < len) {
            if (q == '"' && p[i] == '\\' && i + 1 < len) {
                i += 2;
                continue;
            }
            if (p[i] == q) {
                if (q == '\'' && i + 1 < len && p[i + 1] == '\'') {
                    i += 2;
                    continue;
                }
                return i + 1;
            }
            i++;
        }
        return len;
    }
    while (i < len && p[i] != ':' && p[i] != ',' && p[i] != '}' && p[i] != '#')
        i++;
    while (i > 0 && p[i - 1] == ' ')
        i--;
    return i;
}

static bool key_is_pin(const char *p, size_t len)
{
    return (len == 3 && memcmp(p, "pin", 3) == 0) || (len == 5 && memcmp(p, "\"pin\"", 5) == 0) ||
           (len == 5 && memcmp(p, "'pin'", 5) == 0);
}

static void pin_value(struct sl_buf *b, const uint8_t d[32])
{
    pin_format(b, d);
}

/* ===== a flow mapping on the name's line ===== */

/* The closing brace of the flow mapping opened at p[open], or 0 when not on this line. */
static size_t flow_close(const char *p, size_t len, size_t open)
{
    int depth = 0;
    for (size_t i = open; i < len; i++) {
        if (p[i] == '"' || p[i] == '\'') {
            i = scalar_end(p, len, i) - 1;
        } else if (p[i] == '{' || p[i] == '[') {
            depth++;
        } else if (p[i] == '}' || p[i] == ']') {
            if (--depth == 0)
                return p[i] == '}' ? i : 0;
        } else if (p[i] == '#' && i > 0 && p[i - 1] == ' ') {
            return 0;
        }
    }
    return 0;
}

static int edit_flow(struct job *j, size_t ln, size_t open, const uint8_t d[32])
{
    const struct line *l = &j->lines[ln];
    size_t close = flow_close(l->p, l->len, open);
    if (close == 0)
        return job_fail(j, ln, "the tool's flow mapping goes on past this line; add its pin by "
                               "hand or write it as a block mapping");
    struct edit *e = add_edit(j, ln, true);
    /* Walk the members at depth one: a pin member gets its value replaced. */
    size_t i = open + 1;
    while (i < close) {
        while (i < close && (l->p[i] == ' ' || l->p[i] == ','))
            i++;
        size_t kend = scalar_end(l->p, close, i);
        size_t v = kend;
        while (v < close && l->p[v] == ' ')
            v++;
        size_t next = v;
        int depth = 0;
        for (; next < close && (depth > 0 || l->p[next] != ','); next++) {
            if (l->p[next] == '"' || l->p[next] == '\'')
                next = scalar_end(l->p, close, next) - 1;
            else if (l->p[next] == '{' || l->p[next] == '[')
                depth++;
            else if (l->p[next] == '}' || l->p[next] == ']')
                depth--;
        }
        if (key_is_pin(l->p + i, kend - i) && v < close && l->p[v] == ':') {
            size_t vs = v + 1, ve = next;
            while (ve > vs && l->p[ve - 1] == ' ')
                ve--;
            sl_buf_put(&e->text, l->p, vs);
            sl_buf_putc(&e->text, ' ');
            pin_value(&e->text, d);
            sl_buf_put(&e->text, l->p + ve, l->len - ve);
            return 0;
        }
        i = next;
    }
    size_t before = close;
    while (before > open + 1 && l->p[before - 1] == ' ')
        before--;
    sl_buf_put(&e->text, l->p, before);
    sl_buf_puts(&e->text, before > open + 1 ? ", pin: " : "pin: ");
    pin_value(&e->text, d);
    sl_buf_put(&e->text, l->p + before, l->len - before);
    return 0;
}

/* ===== a block mapping under the name ===== */

/* The offset after a key "word:" at i of l, or 0 when the line's key there is not key. */
static size_t block_key(const struct line *l, size_t i, const char *key)
{
    size_t kend = scalar_end(l->p, l->len, i);
    bool same = strcmp(key, "pin") == 0 ? key_is_pin(l->p + i, kend - i)
                                        : kend - i == strlen(key) &&
                                              memcmp(l->p + i, key, kend - i) == 0;
    return same && kend < l->len && l->p[kend] == ':' ? kend + 1 : 0;
}

/* Where a value that starts at v ends, a comment after it left out. */
static size_t value_end(const struct line *l, size_t v)
{
    size_t e = v;
    while (e < l->len && !(l->p[e] == '#' && e > 0 && l->p[e - 1] == ' ')) {
        if (l->p[e] == '"' || l->p[e] == '\'')
            e = scalar_end(l->p, l->len, e);
        else
            e++;
    }
    while (e > v && l->p[e - 1] == ' ')
        e--;
    return e;
}

static int edit_block(struct job *j, size_t ln, size_t key_indent, const uint8_t d[32])
{
    size_t child = 0, after = ln, k = ln + 1;
    for (; k < j->nlines; k++) {
        const struct line *l = &j->lines[k];
        if (is_blank(l))
            continue;
        size_t ind = indent_of(l);
        if (ind <= key_indent)
            break;
        if (child == 0)
            child = ind;
        if (ind != child)
            continue;
        size_t v = block_key(l, ind, "pin");
        if (v) { /* replace the value, keep what follows it */
            while (v < l->len && l->p[v] == ' ')
                v++;
            size_t ve = value_end(l, v);
            struct edit *e = add_edit(j, k, true);
            sl_buf_put(&e->text, l->p, ind);
            sl_buf_puts(&e->text, "pin: ");
            pin_value(&e->text, d);
            sl_buf_put(&e->text, l->p + ve, l->len - ve);
            return 0;
        }
        size_t a = block_key(l, ind, "action");
        if (a && value_end(l, a) > a)
            after = k;
    }
    if (child == 0)
        return job_fail(j, ln, "the tool has no keys below its name to add a pin beside");
    struct edit *e = add_edit(j, after, false);
    for (size_t i = 0; i < child; i++)
        sl_buf_putc(&e->text, ' ');
    sl_buf_puts(&e->text, "pin: ");
    pin_value(&e->text, d);
    return 0;
}

static int edit_tool(struct job *j, const struct policy *p, const struct pinyaml_pin *pin)
{
    struct policy_where w = policy_tool_where(p, pin->tool);
    if (w.line == 0 || w.line > j->nlines)
        return job_fail(j, 0, "the policy's tools are not where the file has them");
    size_t ln = w.line - 1;
    const struct line *l = &j->lines[ln];
    size_t at = col_offset(l, w.col);
    size_t kend = scalar_end(l->p, l->len, at);
    if (kend >= l->len || l->p[kend] != ':')
        return job_fail(j, ln, "cannot find the colon after the tool's name");
    size_t v = kend + 1;
    while (v < l->len && l->p[v] == ' ')
        v++;
    if (v < l->len && l->p[v] == '{')
        return edit_flow(j, ln, v, pin->digest);
    if (v < l->len && l->p[v] != '#')
        return job_fail(j, ln, "the tool's value is not a mapping sluice can edit");
    if (at != indent_of(l))
        return job_fail(j, ln, "the tool's name is inside a flow mapping that goes on past this "
                               "line; add its pin by hand");
    return edit_block(j, ln, at, pin->digest);
}

static int cmp_edit(const void *a, const void *b)
{
    const struct edit *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at ? 1 : x->replace ? -1 : y->replace ? 1 : 0;
}

/* Applies the edits in line order: a line's replacement, then what is added after it. Two
 * replacements of one line (two tools in one flow line) cannot be combined: refused. */
static int apply(struct job *j, struct sl_buf *out)
{
    qsort(j->edits, j->nedits, sizeof(*j->edits), cmp_edit);
    size_t e = 0;
    for (size_t i = 0; i < j->nlines; i++) {
        const struct line *l = &j->lines[i];
        struct sl_str eol = { l->p + l->len, l->end - l->len };
        size_t first = e;
        while (e < j->nedits && j->edits[e].at == i)
            e++;
        if (e - first > 1 && j->edits[first + 1].replace)
            return job_fail(j, i, "two tools to pin on one line; add their pins by hand");
        bool replace = e > first && j->edits[first].replace;
        if (replace)
            sl_buf_put(out, j->edits[first].text.p, j->edits[first].text.len);
        else
            sl_buf_put(out, l->p, l->len);
        for (size_t k = first + replace; k < e; k++) {
            sl_buf_puts(out, j->eol);
            sl_buf_put(out, j->edits[k].text.p, j->edits[k].text.len);
        }
        sl_buf_put(out, eol.p, eol.len);
    }
    return 0;
}

/* The rewrite must load and give exactly the requested pins. */
static int verify(struct job *j, const struct policy *p, const struct pinyaml_pin *pins, size_t n,
                  const struct sl_buf *out)
{
    struct policy *q;
    struct policy_error perr;
    if (policy_load_buffer(j->name, out->p ? out->p : "", out->len, &q, &perr) != 0) {
        char msg[600];
        policy_error_format(&perr, msg, sizeof(msg));
        snprintf(j->err, j->errlen, "the rewritten policy does not load (%s); nothing written",
                 msg);
        return -1;
    }
    bool ok = policy_tool_count(q) == policy_tool_count(p);
    for (size_t i = 0; ok && i < n; i++) {
        const char *name = policy_tool_name(p, pins[i].tool);
        struct policy_decision d;
        policy_lookup(q, name, strlen(name), &d);
        ok = d.pin != NULL && memcmp(d.pin, pins[i].digest, 32) == 0;
    }
    policy_unref(q);
    if (!ok)
        snprintf(j->err, j->errlen, "%s: the rewritten policy does not hold the new pins (a "
                 "layout sluice cannot edit); nothing written", j->name);
    return ok ? 0 : -1;
}

int pinyaml_rewrite(const char *name, const char *text, size_t len, const struct policy *p,
                    const struct pinyaml_pin *pins, size_t n, struct sl_buf *out, char *err,
                    size_t errlen)
{
    struct job j = { .name = name, .err = err, .errlen = errlen };
    split_lines(&j, text, len);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = edit_tool(&j, p, &pins[i]);
    size_t start = out->len;
    if (rc == 0)
        rc = apply(&j, out);
    if (rc == 0) {
        struct sl_buf mine = { 0 };
        sl_buf_put(&mine, out->p + start, out->len - start);
        rc = verify(&j, p, pins, n, &mine);
        sl_buf_free(&mine);
    }
    if (rc != 0)
        out->len = start;
    for (size_t i = 0; i < j.nedits; i++)
        sl_buf_free(&j.edits[i].text);
    free(j.edits);
    free(j.lines);
    return rc;
}

bool pinyaml_key(struct sl_buf *out, struct sl_str name)
{
    /* Words YAML 1.1 or 1.2 reads as booleans or null: quoted, though the policy would take
     * them as names either way. */
    static const char *const special[] = { "true", "false", "null", "yes", "no", "on", "off",
                                           "y", "n" };
    unsigned char first = name.len ? (unsigned char)(name.p[0] | 0x20) : 0;
    bool plain = name.len > 0 && (name.p[0] == '_' || (first >= 'a' && first <= 'z'));
    if (name.len == 0)
        return false;
    for (size_t i = 0; i < name.len; i++) {
        unsigned char c = (unsigned char)name.p[i];
        if (c < 0x20 || c > 0x7e)
            return false;
        if (!((c | 0x20) >= 'a' && (c | 0x20) <= 'z') && !(c >= '0' && c <= '9') && c != '_' &&
            c != '-' && c != '.')
            plain = false;
    }
    for (size_t i = 0; plain && i < SL_ARRAY_LEN(special); i++)
        if (name.len == strlen(special[i]) && strncasecmp(name.p, special[i], name.len) == 0)
            plain = false;
    if (plain)
        sl_buf_put(out, name.p, name.len);
    else
        json_write_string(out, name.p, name.len);
    return true;
}
