/* params.c: x-mcp-header marks, learned per tool; Mcp-Param-* written and checked. */
#include "params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "canon.h"
#include "http1.h"

#define PARAMS_BUCKETS 256
#define MARK_NAME_MAX 64
#define MARK_DEPTH_MAX 8
#define MARKS_MAX 32      /* per tool */

struct mark {
    char name[MARK_NAME_MAX];       /* after "Mcp-Param-" */
    char *path[MARK_DEPTH_MAX];     /* property names from inputSchema down */
    size_t depth;
};

struct tool_marks {
    struct tool_marks *next;
    char *tool;
    size_t n;
    struct mark marks[];
};

struct params {
    struct tool_marks *buckets[PARAMS_BUCKETS];
};

static size_t hash(struct sl_str s)
{
    size_t h = 5381;
    for (size_t i = 0; i < s.len; i++)
        h = h * 33 + (unsigned char)s.p[i];
    return h % PARAMS_BUCKETS;
}

static void marks_free(struct tool_marks *t)
{
    for (size_t i = 0; i < t->n; i++)
        for (size_t d = 0; d < t->marks[i].depth; d++)
            free(t->marks[i].path[d]);
    free(t->tool);
    free(t);
}

struct params *params_new(void)
{
    return sl_xcalloc(1, sizeof(struct params));
}

void params_free(struct params *ps)
{
    if (ps == NULL)
        return;
    for (size_t b = 0; b < PARAMS_BUCKETS; b++) {
        while (ps->buckets[b]) {
            struct tool_marks *t = ps->buckets[b];
            ps->buckets[b] = t->next;
            marks_free(t);
        }
    }
    free(ps);
}

static struct tool_marks **find(const struct params *ps, struct sl_str tool)
{
    struct tool_marks **pp = (struct tool_marks **)&ps->buckets[hash(tool)];
    for (; *pp; pp = &(*pp)->next)
        if (sl_str_eq_c(tool, (*pp)->tool))
            return pp;
    return pp;
}

/* ===== learning ===== */

/* Walks "properties" chains below schema, collecting marks. Returns false on an invalid mark. */
static bool collect(const struct json *schema, char **path, size_t depth, struct mark *out,
                    size_t *n)
{
    const struct json *props = json_get(schema, "properties");
    if (props == NULL || props->type != JSON_OBJECT)
        return true;
    for (size_t i = 0; i < props->u.obj.n; i++) {
        const struct json *prop = props->u.obj.v[i].val;
        struct sl_str key = props->u.obj.v[i].key;
        const struct json *mark = json_get(prop, "x-mcp-header");
        if (mark) {
            const struct json *type = json_get(prop, "type");
            if (mark->type != JSON_STRING || !http1_is_token(mark->u.str) ||
                mark->u.str.len >= MARK_NAME_MAX || *n == MARKS_MAX || depth == MARK_DEPTH_MAX ||
                !(json_str_is(type, "string") || json_str_is(type, "integer") ||
                  json_str_is(type, "boolean")))
                return false;
            for (size_t k = 0; k < *n; k++)
                if (strlen(out[k].name) == mark->u.str.len &&
                    strncasecmp(out[k].name, mark->u.str.p, mark->u.str.len) == 0)
                    return false;
            struct mark *m = &out[(*n)++];
            memcpy(m->name, mark->u.str.p, mark->u.str.len);
            m->name[mark->u.str.len] = '\0';
            for (size_t d = 0; d < depth; d++)
                m->path[d] = sl_xstrdup(path[d]);
            m->path[depth] = sl_xstrndup(key.p, key.len);
            m->depth = depth + 1;
        }
        if (depth + 1 < MARK_DEPTH_MAX && json_get(prop, "properties")) {
            path[depth] = sl_xstrndup(key.p, key.len);
            bool ok = collect(prop, path, depth + 1, out, n);
            free(path[depth]);
            if (!ok)
                return false;
        }
    }
    return true;
}

/* Every x-mcp-header anywhere in v: more than collect() found means one off a properties chain
 * (under items, anyOf, the root...), which makes the tool's marks invalid. */
static size_t count_marks(const struct json *v)
{
    size_t n = 0;
    if (v && v->type == JSON_OBJECT) {
        for (size_t i = 0; i < v->u.obj.n; i++)
            n += sl_str_eq_c(v->u.obj.v[i].key, "x-mcp-header") + count_marks(v->u.obj.v[i].val);
    } else if (v && v->type == JSON_ARRAY) {
        for (size_t i = 0; i < v->u.arr.n; i++)
            n += count_marks(v->u.arr.v[i]);
    }
    return n;
}

static void learn_one(struct params *ps, const struct json *tool)
{
    const struct json *name = json_get(tool, "name");
    if (name == NULL || name->type != JSON_STRING)
        return;
    struct tool_marks **pp = find(ps, name->u.str);
    if (*pp) {
        struct tool_marks *old = *pp;
        *pp = old->next;
        marks_free(old);
    }
    struct mark marks[MARKS_MAX];
    char *path[MARK_DEPTH_MAX];
    size_t n = 0;
    const struct json *schema = json_get(tool, "inputSchema");
    bool ok = collect(schema, path, 0, marks, &n) && count_marks(schema) == n;
    if (ok && n > 0) {
        struct tool_marks *t = sl_xmalloc(sizeof(*t) + n * sizeof(struct mark));
        t->tool = sl_xstrndup(name->u.str.p, name->u.str.len);
        t->n = n;
        memcpy(t->marks, marks, n * sizeof(struct mark));
        t->next = *pp;
        *pp = t;
        return;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t d = 0; d < marks[i].depth; d++)
            free(marks[i].path[d]);
}

void params_learn(struct params *ps, const struct json *tools)
{
    if (tools == NULL || tools->type != JSON_ARRAY)
        return;
    for (size_t i = 0; i < tools->u.arr.n; i++)
        learn_one(ps, tools->u.arr.v[i]);
}

/* ===== values ===== */

static const struct json *arg_at(const struct json *args, const struct mark *m)
{
    const struct json *v = args;
    for (size_t d = 0; d < m->depth && v; d++)
        v = v->type == JSON_OBJECT ? json_get(v, m->path[d]) : NULL;
    return v && v->type != JSON_NULL ? v : NULL;
}

/* The header text of a value: false for a value no header can carry (an object, a fraction). */
static bool value_text(const struct json *v, struct sl_buf *out)
{
    switch (v->type) {
    case JSON_STRING:
        sl_buf_put(out, v->u.str.p, v->u.str.len);
        return true;
    case JSON_BOOL:
        sl_buf_puts(out, v->u.b ? "true" : "false");
        return true;
    case JSON_NUMBER: {
        /* Integers within ±(2^53-1), written shortest (42.0 and 4.2e1 are 42). */
        size_t start = out->len;
        if (canon_write(out, v) != 0)
            return false;
        size_t digits = out->len - start - (out->p[start] == '-');
        bool integral = digits > 0 && digits <= 16;
        for (size_t i = start + (out->p[start] == '-'); i < out->len && integral; i++)
            integral = out->p[i] >= '0' && out->p[i] <= '9';
        if (integral && digits == 16)
            integral = strtod(out->p + start, NULL) <= 9007199254740991.0 &&
                       strtod(out->p + start, NULL) >= -9007199254740991.0;
        if (!integral)
            out->len = start;
        return integral;
    }
    default:
        return false;
    }
}

void params_header_value(struct sl_buf *out, struct sl_str v)
{
    bool plain = v.len > 0 && v.p[0] != ' ' && v.p[0] != '\t' && v.p[v.len - 1] != ' ' &&
                 v.p[v.len - 1] != '\t' && !(v.len >= 9 && memcmp(v.p, "=?base64?", 9) == 0);
    for (size_t i = 0; i < v.len && plain; i++)
        plain = v.p[i] >= 0x20 && v.p[i] < 0x7f;
    if (plain) {
        sl_buf_put(out, v.p, v.len);
        return;
    }
    sl_buf_puts(out, "=?base64?");
    size_t start = out->len;
    sl_b64url_encode(out, (const uint8_t *)v.p, v.len);
    for (size_t i = start; i < out->len; i++)
        out->p[i] = out->p[i] == '-' ? '+' : out->p[i] == '_' ? '/' : out->p[i];
    while ((out->len - start) % 4)
        sl_buf_putc(out, '=');
    sl_buf_puts(out, "?=");
}

/* Canonical padded base64 only (as SDK2 accepts): the length a multiple of 4, at most two '='
 * at the end, zero trailing bits. Appends the bytes; -1 when it is not that. */
static int b64_canonical(const char *in, size_t len, struct sl_buf *out)
{
    if (len % 4 != 0)
        return -1;
    size_t pads = 0;
    while (pads < 2 && pads < len && in[len - 1 - pads] == '=')
        pads++;
    size_t n = len - pads;
    char *tmp = sl_xmalloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        char ch = in[i];
        tmp[i] = ch == '+' ? '-' : ch == '/' ? '_' : (ch == '-' || ch == '_' || ch == '=') ? '!' : ch;
    }
    size_t cap = len / 4 * 3 + 1;
    uint8_t *dec = sl_xmalloc(cap);
    long got = sl_b64url_decode(tmp, n, dec, cap);
    if (got >= 0)
        sl_buf_put(out, dec, (size_t)got);
    free(tmp);
    free(dec);
    return got >= 0 ? 0 : -1;
}

static bool is_encoded(struct sl_str v)
{
    return v.len >= 11 && memcmp(v.p, "=?base64?", 9) == 0 && memcmp(v.p + v.len - 2, "?=", 2) == 0;
}

bool params_header_equals(struct sl_str v, struct sl_str want)
{
    if (!is_encoded(v))
        return sl_str_eq(v, want); /* what decoding would copy */
    char store[256];
    struct sl_buf dec;
    sl_buf_on(&dec, store, sizeof(store));
    bool same = params_header_decode(v, &dec) == 0 && sl_str_eq(sl_buf_str(&dec), want);
    sl_buf_free(&dec);
    return same;
}

int params_header_decode(struct sl_str v, struct sl_buf *out)
{
    if (is_encoded(v)) {
        size_t start = out->len;
        if (b64_canonical(v.p + 9, v.len - 11, out) != 0 ||
            !sl_utf8_valid(out->p + start, out->len - start)) {
            out->len = start;
            return -1;
        }
        return 0;
    }
    sl_buf_put(out, v.p, v.len);
    return 0;
}

/* ===== writing and checking ===== */

void params_write(const struct params *ps, struct sl_str tool, const struct json *args,
                  struct sl_buf *out)
{
    const struct tool_marks *t = *find(ps, tool);
    struct sl_buf text = { 0 };
    for (size_t i = 0; t && i < t->n; i++) {
        const struct json *v = arg_at(args, &t->marks[i]);
        sl_buf_reset(&text);
        if (v == NULL || !value_text(v, &text))
            continue;
        sl_buf_puts(out, "Mcp-Param-");
        sl_buf_puts(out, t->marks[i].name);
        sl_buf_puts(out, ": ");
        params_header_value(out, sl_buf_str(&text));
        sl_buf_puts(out, "\r\n");
    }
    sl_buf_free(&text);
}

/* Whether header text h stands for value v: strings byte for byte after decoding, integers by
 * value ("42" and "42.0"), booleans exactly. */
static bool agrees(const struct json *v, struct sl_str h)
{
    struct sl_buf want = { 0 }, got = { 0 };
    bool ok = value_text(v, &want) && params_header_decode(h, &got) == 0;
    if (ok && v->type == JSON_NUMBER) {
        struct json num = { .type = JSON_NUMBER, .u.num = sl_buf_str(&got) };
        bool digits = got.len > 0 && got.len < 32;
        for (size_t i = 0; i < got.len && digits; i++)
            digits = strchr("0123456789-+.eE", got.p[i]) != NULL;
        struct sl_buf canon = { 0 };
        ok = digits && canon_write(&canon, &num) == 0 && sl_str_eq(sl_buf_str(&canon),
                                                                   sl_buf_str(&want));
        sl_buf_free(&canon);
    } else if (ok) {
        ok = sl_str_eq(sl_buf_str(&want), sl_buf_str(&got));
    }
    sl_buf_free(&want);
    sl_buf_free(&got);
    return ok;
}

const char *params_check(const struct params *ps, struct sl_str tool, const struct json *args,
                         int (*get)(const char *name, struct sl_str *value, void *arg),
                         void *arg)
{
    const struct tool_marks *t = *find(ps, tool);
    for (size_t i = 0; t && i < t->n; i++) {
        char name[MARK_NAME_MAX + 16];
        snprintf(name, sizeof(name), "mcp-param-%s", t->marks[i].name);
        struct sl_str h = SL_STR_NULL;
        int has = get(name, &h, arg);
        const struct json *v = arg_at(args, &t->marks[i]);
        if (has < 0)
            return "Header mismatch: an Mcp-Param header is repeated";
        if (v == NULL && has == 1)
            return "Header mismatch: an Mcp-Param header has no argument in the body";
        if (v != NULL && has == 0)
            return "Header mismatch: an Mcp-Param header the tool's schema asks for is missing";
        if (v != NULL && !agrees(v, h))
            return "Header mismatch: an Mcp-Param header does not match the body's argument";
    }
    return NULL;
}
