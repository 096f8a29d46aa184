/* observe.c: arguments, digest and summary of an observation. */
#include "observe.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "seal.h"

#include "canon.h"
#include "confirm.h"

#define ELLIPSIS "\xE2\x80\xA6" /* U+2026, which starts each of sluice's marks ("…[") */

struct json *observe_args(struct sl_arena *a, const struct policy_observe *o,
                          const struct json *call_args, const char **why)
{
    struct json *args = json_new_object(a);
    for (size_t i = 0; i < o->nargs; i++) {
        struct json *v = json_get(call_args, o->from[i]);
        if (v == NULL) {
            *why = "an argument the observe tool needs is missing from the call";
            return NULL;
        }
        json_set(a, args, o->to[i], v);
    }
    return args;
}

int observe_digest(const struct json *result, uint8_t out[OBSERVE_DIGEST_LEN])
{
    static const char *const keys[] = { "content", "structuredContent", "isError" };
    struct json_member m[3];
    struct json view = { .type = JSON_OBJECT, .u.obj = { m, 0 } };
    for (size_t i = 0; i < 3; i++) {
        struct json *v = json_get(result, keys[i]);
        if (v)
            m[view.u.obj.n++] = (struct json_member){ sl_str_c(keys[i]), v };
    }
    struct sl_buf b = { 0 };
    int rc = canon_write(&b, &view);
    if (rc == 0)
        seal_sha256(b.p, b.len, out);
    sl_buf_free(&b);
    return rc;
}

/* The text of the first text content block, or NULL. */
static const struct json *first_text(const struct json *result)
{
    const struct json *content = json_get(result, "content");
    if (content == NULL || content->type != JSON_ARRAY)
        return NULL;
    for (size_t i = 0; i < content->u.arr.n; i++) {
        const struct json *c = content->u.arr.v[i];
        const struct json *t = json_get(c, "text");
        if (json_str_is(json_get(c, "type"), "text") && t && t->type == JSON_STRING)
            return t;
    }
    return NULL;
}

struct lines {
    struct sl_str *v;
    size_t n;
};

static struct lines split(struct sl_arena *a, struct sl_str s)
{
    struct lines l = { NULL, 0 };
    size_t n = 0;
    for (size_t i = 0; i < s.len; i++)
        n += s.p[i] == '\n';
    l.v = sl_arena_alloc(a, (n + 1) * sizeof(*l.v));
    size_t start = 0;
    for (size_t i = 0; i <= s.len; i++) {
        if (i == s.len || s.p[i] == '\n') {
            if (i > start || i < s.len)
                l.v[l.n++] = (struct sl_str){ s.p + start, i - start };
            start = i + 1;
        }
    }
    return l;
}

/* One line of text the server (or the call's content) wrote, neutralized with each of its own
 * backslashes shown as "\\" (as a value's are: values are JSON first). confirm_neutralize takes
 * text as JSON and leaves a backslash escape as it is, so a server's literal "\u202e" or
 * "\[1100 × U+0020]" would read as sluice's own notation inside the block. It shows a server's
 * ellipsis as "\u2026" itself, so every "…[" in the block is sluice's. */
static void put_text(struct sl_buf *out, struct sl_str line, size_t max)
{
    struct sl_buf esc = { 0 };
    for (size_t i = 0; i < line.len; i++) {
        if (line.p[i] == '\\')
            sl_buf_puts(&esc, "\\\\");
        else
            sl_buf_putc(&esc, line.p[i]);
    }
    confirm_neutralize(out, sl_buf_str(&esc), max);
    sl_buf_free(&esc);
}

/* The result as JSON text, neutralized. Its backslashes need nothing more (json_write writes a
 * string's own as "\\"), nor its ellipses (confirm_neutralize shows them as "\u2026"). */
static void put_json(struct sl_buf *out, const struct json *v, size_t max)
{
    struct sl_buf j = { 0 };
    json_write(&j, v);
    confirm_neutralize(out, sl_buf_str(&j), max);
    sl_buf_free(&j);
}

static void diff_line(struct sl_buf *out, char sign, struct sl_str line)
{
    sl_buf_printf(out, "\n%c ", sign);
    put_text(out, line, 160);
}

/* Common head and tail are skipped; what is left in the middle is removed and added. Not a
 * minimal diff, but exact about what changes and cheap on any input. */
static void write_diff(struct sl_buf *out, struct sl_str old, struct sl_str new_text)
{
    struct sl_arena *a = sl_arena_new();
    struct lines o = split(a, old), n = split(a, new_text);
    size_t head = 0, tail = 0;
    while (head < o.n && head < n.n && sl_str_eq(o.v[head], n.v[head]))
        head++;
    while (tail < o.n - head && tail < n.n - head &&
           sl_str_eq(o.v[o.n - 1 - tail], n.v[n.n - 1 - tail]))
        tail++;
    size_t removed = o.n - head - tail, added = n.n - head - tail;
    sl_buf_puts(out, "The file now has ");
    confirm_count(out, o.n, "line", "lines");
    sl_buf_printf(out, "; this call removes %zu and adds %zu", removed, added);
    if (removed == 0 && added == 0) {
        sl_buf_puts(out, " (no change).");
        sl_arena_free(a);
        return;
    }
    sl_buf_printf(out, ", from line %zu:", head + 1);
    size_t shown = 0;
    for (size_t i = 0; i < removed && shown < OBSERVE_DIFF_LINES; i++, shown++)
        diff_line(out, '-', o.v[head + i]);
    for (size_t i = 0; i < added && shown < OBSERVE_DIFF_LINES; i++, shown++)
        diff_line(out, '+', n.v[head + i]);
    if (removed + added > shown) {
        sl_buf_puts(out, "\n" ELLIPSIS "[");
        confirm_count(out, removed + added - shown, "more changed line", "more changed lines");
        sl_buf_putc(out, ']');
    }
    sl_arena_free(a);
}

/* The first lines of a text, each neutralized, with a count of what was left out. */
static void write_lines(struct sl_buf *out, struct sl_str text)
{
    struct sl_arena *a = sl_arena_new();
    struct lines l = split(a, text);
    for (size_t i = 0; i < l.n && i < OBSERVE_DIFF_LINES; i++) {
        sl_buf_puts(out, "\n  ");
        put_text(out, l.v[i], 160);
    }
    if (l.n > OBSERVE_DIFF_LINES) {
        sl_buf_puts(out, "\n  " ELLIPSIS "[");
        confirm_count(out, l.n - OBSERVE_DIFF_LINES, "more line", "more lines");
        sl_buf_putc(out, ']');
    }
    sl_arena_free(a);
}

/* True when an error text says the target does not exist: Node's "ENOENT: no such file or
 * directory, open ..." (server-filesystem), or a plain "no such file". Anything else stays an
 * error the person reads as the server wrote it. */
static bool says_missing(struct sl_str t)
{
    static const char *const words[] = { "enoent", "no such file" };
    for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
        size_t n = strlen(words[w]);
        for (size_t i = 0; i + n <= t.len; i++)
            if (strncasecmp(t.p + i, words[w], n) == 0)
                return true;
    }
    return false;
}

bool observe_ok(const struct json *result)
{
    if (result == NULL || result->type != JSON_OBJECT)
        return false;
    /* A reading must say something: a complete result with a content array. Anything else
     * (input_required, no content) would hash alike every time and make the recheck vacuous. */
    const struct json *rt = json_get(result, "resultType");
    const struct json *content = json_get(result, "content");
    if (!(rt == NULL || json_str_is(rt, "complete")) || content == NULL ||
        content->type != JSON_ARRAY)
        return false;
    if (!json_is_true(json_get(result, "isError")))
        return true;
    /* A tool error is a reading only when it says the target is missing: that is a state of the
     * target, and it changes when the target appears. Any other error (denied, a failing disk)
     * says nothing about the target and can repeat word for word while the target changes, so
     * two equal errors would pass the recheck and let a write through (fail closed). */
    const struct json *t = first_text(result);
    return t != NULL && says_missing(t->u.str);
}

/* "This call writes N lines." for the content a write brings. */
static void write_written(struct sl_buf *out, struct sl_str content)
{
    struct sl_arena *a = sl_arena_new();
    sl_buf_puts(out, "\nThis call writes ");
    confirm_count(out, split(a, content).n, "line", "lines");
    sl_buf_putc(out, '.');
    sl_arena_free(a);
}

void observe_summary(struct sl_buf *out, const char *observe_tool, const struct json *result,
                     const struct json *call_args)
{
    struct sl_buf s = { 0 };
    const struct json *text = first_text(result);
    const struct json *content = json_get(call_args, "content");
    bool failed = json_is_true(json_get(result, "isError"));
    bool missing = failed && text && says_missing(text->u.str);
    sl_buf_puts(&s, "What ");
    confirm_neutralize(&s, sl_str_c(observe_tool), 64);
    if (missing)
        sl_buf_puts(&s, " shows now: no such file (new file).");
    else
        sl_buf_puts(&s, failed ? " shows now (it answered with an error):" : " shows now:");
    if (missing && content && content->type == JSON_STRING) {
        write_written(&s, content->u.str);
    } else if (missing) {
        /* nothing more to say: the call's content is not a text sluice can count */
    } else if (failed && text) {
        write_lines(&s, text->u.str);
        if (content && content->type == JSON_STRING)
            write_written(&s, content->u.str);
    } else if (text && content && content->type == JSON_STRING) {
        sl_buf_putc(&s, ' ');
        write_diff(&s, text->u.str, content->u.str);
    } else if (text) {
        write_lines(&s, text->u.str);
    } else {
        sl_buf_putc(&s, ' ');
        put_json(&s, result, 400);
    }
    /* Cut visibly, between whole units of the text as shown: a cut inside "\u2026" or a
     * server's "\\" would leave "\u2" or "\" before the mark, which reads as another escape. */
    if (s.len > OBSERVE_SUMMARY_MAX) {
        s.len = confirm_cut_point(sl_buf_str(&s), OBSERVE_SUMMARY_MAX);
        sl_buf_puts(&s, ELLIPSIS "[summary truncated]");
    }
    sl_buf_put(out, s.p, s.len);
    sl_buf_free(&s);
}
