/* lint.c: compare the policy with a server's tools/list. */
#include "lint.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "confirm.h"
#include "pin.h"

static bool lists(const struct json *tools, const char *name)
{
    for (size_t i = 0; i < tools->u.arr.n; i++)
        if (json_str_is(json_get(tools->u.arr.v[i], "name"), name))
            return true;
    return false;
}

/* MCP 2025-11-25 §tools: readOnlyHint defaults to false, destructiveHint to true. */
static bool may_destroy(const struct json *tool)
{
    const struct json *ann = json_get(tool, "annotations");
    if (json_is_true(json_get(ann, "readOnlyHint")))
        return false;
    const struct json *d = json_get(ann, "destructiveHint");
    return !(d && d->type == JSON_BOOL && !d->u.b);
}

static bool read_only(const struct json *tool)
{
    return json_is_true(json_get(json_get(tool, "annotations"), "readOnlyHint"));
}

#define NEAR_MAX_LEN 64  /* longer names are compared for case only */

/* Levenshtein distance of a and b, or NEAR_MAX_LEN when either is longer than that. */
static size_t distance(const char *a, size_t al, const char *b, size_t bl)
{
    size_t row[NEAR_MAX_LEN + 1];
    if (al > NEAR_MAX_LEN || bl > NEAR_MAX_LEN)
        return NEAR_MAX_LEN;
    for (size_t j = 0; j <= bl; j++)
        row[j] = j;
    for (size_t i = 1; i <= al; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= bl; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[bl];
}

/* How near name is to cand: 0 for the same name in another case, else the edit distance + 1;
 * anything above 3 is not near. */
static size_t nearness(const char *name, size_t nl, const char *cand, size_t cl)
{
    if (nl == cl && strncasecmp(name, cand, nl) == 0 && memchr(cand, '\0', cl) == NULL)
        return 0;
    return distance(name, nl, cand, cl) + 1;
}

/* The server tool nearest to a policy name, or NULL. */
static const struct json *near_server_tool(const struct json *tools, const char *name)
{
    const struct json *best = NULL;
    size_t best_n = 4;
    for (size_t i = 0; i < tools->u.arr.n; i++) {
        const struct json *n = json_get(tools->u.arr.v[i], "name");
        if (n == NULL || n->type != JSON_STRING)
            continue;
        size_t d = nearness(name, strlen(name), n->u.str.p, n->u.str.len);
        if (d < best_n) {
            best_n = d;
            best = n;
        }
    }
    return best;
}

/* The policy tool nearest to a server name that the server does not list itself, or SIZE_MAX. */
static size_t near_policy_tool(const struct policy *p, const struct json *tools, struct sl_str n)
{
    size_t best = SIZE_MAX, best_n = 4;
    for (size_t i = 0; i < policy_tool_count(p); i++) {
        const char *t = policy_tool_name(p, i);
        size_t d = nearness(t, strlen(t), n.p, n.len);
        if (d < best_n && !lists(tools, t)) {
            best_n = d;
            best = i;
        }
    }
    return best;
}

static void report_missing(const struct policy *p, const struct json *tools, size_t i,
                           lint_finding_cb *cb, void *arg)
{
    struct sl_buf msg = { 0 };
    sl_buf_puts(&msg, "the policy names tool \"");
    confirm_neutralize(&msg, sl_str_c(policy_tool_name(p, i)), 128);
    sl_buf_puts(&msg, "\", which the server does not list");
    const struct json *n = near_server_tool(tools, policy_tool_name(p, i));
    if (n) {
        sl_buf_puts(&msg, "; did you mean \"");
        confirm_neutralize(&msg, n->u.str, 128);
        sl_buf_puts(&msg, "\"?");
    }
    struct lint_finding f = { true, policy_tool_where(p, i), msg.p };
    cb(arg, &f);
    sl_buf_free(&msg);
}

static void report_loose(const struct policy *p, const struct json *tools, struct sl_str name,
                         bool strict, lint_finding_cb *cb, void *arg)
{
    struct sl_buf msg = { 0 };
    struct policy_where w = policy_default_where(p);
    sl_buf_puts(&msg, "server tool \"");
    confirm_neutralize(&msg, name, 128);
    sl_buf_puts(&msg, strict ? "\" is not annotated readOnlyHint: true"
                             : "\" may change or destroy data (its annotations do not say "
                               "read-only)");
    sl_buf_puts(&msg, " and the policy allows it by default");
    if (w.line == 0)
        sl_buf_puts(&msg, " (defaults.action is allow when left out)");
    sl_buf_puts(&msg, "; name it under tools:");
    size_t k = near_policy_tool(p, tools, name);
    if (k != SIZE_MAX) {
        sl_buf_puts(&msg, " (did you mean it by \"");
        confirm_neutralize(&msg, sl_str_c(policy_tool_name(p, k)), 128);
        sl_buf_printf(&msg, "\" at line %u?)", policy_tool_where(p, k).line);
    }
    struct lint_finding f = { false, w, msg.p };
    cb(arg, &f);
    sl_buf_free(&msg);
}

/* The index of the policy's tool name (policy_tool_count when it names none). */
static size_t tool_index(const struct policy *p, struct sl_str name)
{
    size_t k = 0;
    while (k < policy_tool_count(p) && !sl_str_eq_c(name, policy_tool_name(p, k)))
        k++;
    return k;
}

/* A pinned tool whose listed definition is not the pinned one (pin.h): said at start, in
 * check --against, and once in the log when a listing shows it. */
static bool report_pin(const struct policy *p, const struct json *tool, struct sl_str name,
                       lint_finding_cb *cb, void *arg)
{
    struct policy_decision d;
    uint8_t live[PIN_LEN];
    policy_lookup(p, name.p, name.len, &d);
    if (d.pin == NULL) /* unpinned tools are the runtime's to refuse (unpinned: deny) */
        return false;
    bool ok = pin_digest(tool, live) == 0;
    if (pin_check(p, name, ok ? live : NULL, true) == PIN_OK)
        return false;
    size_t k = tool_index(p, sl_str_c(d.rule + 6));
    struct sl_buf msg = { 0 };
    sl_buf_puts(&msg, "server tool \"");
    confirm_neutralize(&msg, name, 128);
    sl_buf_puts(&msg, "\" does not match its pin (its description, input schema or annotations "
                      "changed since it was pinned): sluice denies it and leaves it out of "
                      "tools/list until the pin is reviewed (sluice pin --write)");
    struct lint_finding f = { false, policy_tool_where(p, k), msg.p };
    cb(arg, &f);
    sl_buf_free(&msg);
    return true;
}

/* Whether one of a and b holds the other, the shorter at least 3 bytes ("filepath", "path"). */
static bool holds(const char *a, size_t al, const struct sl_str *b)
{
    if (al < b->len)
        return al >= 3 && memmem(b->p, b->len, a, al) != NULL;
    return b->len >= 3 && memmem(a, al, b->p, b->len) != NULL;
}

/* The property of schema nearest to name (an edit or two, another case, or one inside the
 * other), or NULL. */
static const struct sl_str *near_property(const struct json *props, const char *name)
{
    const struct sl_str *best = NULL;
    size_t best_n = 5, nl = strlen(name);
    for (size_t i = 0; i < props->u.obj.n; i++) {
        const struct sl_str *k = &props->u.obj.v[i].key;
        size_t d = nearness(name, nl, k->p, k->len);
        if (d > 3)
            d = holds(name, nl, k) ? 4 : d;
        if (d < best_n) {
            best_n = d;
            best = k;
        }
    }
    return best;
}

/* Argument rules on names the tool's input schema does not list. A rule skips an argument the
 * call does not send, so a typo ("filepath" for "path") leaves the rule on nothing, and a
 * deny_glob that was meant to guard path lets every path through. Only a schema that lists
 * its properties can say this. Returns how many. */
static size_t report_unknown_args(const struct policy *p, const struct json *tool,
                                  struct sl_str name, lint_finding_cb *cb, void *arg)
{
    const struct json *props = json_get(json_get(tool, "inputSchema"), "properties");
    size_t count = 0, found = 0;
    const struct policy_arg *args = policy_tool_args(p, name.p, name.len, &count);
    if (props == NULL || props->type != JSON_OBJECT)
        return 0;
    for (size_t i = 0; i < count; i++) {
        if (json_get_n(props, args[i].name, args[i].len) != NULL)
            continue;
        struct sl_buf msg = { 0 };
        sl_buf_puts(&msg, "the rule ");
        confirm_neutralize(&msg, sl_str_c(args[i].rule), 300);
        sl_buf_puts(&msg, " names an argument the server's input schema for \"");
        confirm_neutralize(&msg, name, 128);
        sl_buf_puts(&msg, "\" does not list, so it checks nothing (a rule skips an argument the "
                          "call does not send)");
        const struct sl_str *near = near_property(props, args[i].name);
        if (near) {
            sl_buf_puts(&msg, "; did you mean \"");
            confirm_neutralize(&msg, *near, 128);
            sl_buf_puts(&msg, "\"?");
        }
        struct lint_finding f = { true, policy_tool_where(p, tool_index(p, name)), msg.p };
        cb(arg, &f);
        sl_buf_free(&msg);
        found++;
    }
    return found;
}

struct lint_counts lint_run(const struct policy *p, const struct json *tools, bool complete,
                            bool strict, lint_finding_cb *cb, void *arg)
{
    struct lint_counts n = { 0, 0, 0 };
    if (tools == NULL || tools->type != JSON_ARRAY)
        return n;
    for (size_t i = 0; complete && i < policy_tool_count(p); i++) {
        if (lists(tools, policy_tool_name(p, i)))
            continue;
        n.missing++;
        report_missing(p, tools, i, cb, arg);
    }
    for (size_t i = 0; i < tools->u.arr.n; i++) {
        const struct json *tool = tools->u.arr.v[i];
        const struct json *name = json_get(tool, "name");
        if (name && name->type == JSON_STRING && report_pin(p, tool, name->u.str, cb, arg))
            n.risky++;
        if (name && name->type == JSON_STRING && complete)
            n.unknown_args += report_unknown_args(p, tool, name->u.str, cb, arg);
        if (name == NULL || name->type != JSON_STRING ||
            (strict ? read_only(tool) : !may_destroy(tool)))
            continue;
        struct policy_decision d;
        policy_lookup(p, name->u.str.p, name->u.str.len, &d);
        if (d.action != POLICY_ALLOW || strcmp(d.rule, "defaults.action") != 0)
            continue;
        n.risky++;
        report_loose(p, tools, name->u.str, strict, cb, arg);
    }
    return n;
}

void lint_where_format(const struct policy_where *w, char *buf, size_t len)
{
    if (w->line)
        snprintf(buf, len, "%s:%u:%u", w->file, w->line, w->col);
    else
        snprintf(buf, len, "%s", w->file);
}

void lint_where_short(const struct policy_where *w, char *buf, size_t len)
{
    const char *slash = strrchr(w->file, '/');
    struct policy_where base = *w;
    base.file = slash ? slash + 1 : w->file;
    lint_where_format(&base, buf, len);
}

/* The caller's callback, and what the client is told. */
struct gather {
    lint_finding_cb *cb;
    void *arg;
    struct lint_verdict *v;    /* lint_strict: the first finding goes here */
    struct sl_buf lines;       /* lint_notice: one line each */
    size_t n;
};

static void gather_finding(void *arg, const struct lint_finding *f)
{
    struct gather *g = arg;
    char at[300];
    if (g->cb)
        g->cb(g->arg, f);
    lint_where_short(&f->where, at, sizeof(at));
    if (g->v && g->v->first[0] == '\0')
        snprintf(g->v->first, sizeof(g->v->first), "%s: %s", at, f->message);
    if (!g->v && g->n < LINT_NOTICE_MAX)
        sl_buf_printf(&g->lines, "\n%s: %s", at, f->message);
    g->n++;
}

struct lint_verdict lint_strict(const struct policy *p, const struct json *tools,
                                lint_finding_cb *cb, void *arg)
{
    struct lint_verdict v = { 0 };
    struct gather g = { cb, arg, &v, { 0 }, 0 };
    struct lint_counts n = lint_run(p, tools, true, true, gather_finding, &g);
    int len = snprintf(v.summary, sizeof(v.summary), "%zu tool%s named but not listed, %zu not "
                       "read-only allowed by default", n.missing, n.missing == 1 ? "" : "s",
                       n.risky);
    if (n.unknown_args && len > 0 && (size_t)len < sizeof(v.summary))
        snprintf(v.summary + len, sizeof(v.summary) - (size_t)len, ", %zu argument rule%s on "
                 "names the schema does not list", n.unknown_args,
                 n.unknown_args == 1 ? "" : "s");
    v.pass = n.missing + n.risky + n.unknown_args == 0;
    return v;
}

size_t lint_notice(const struct policy *p, const struct json *tools, lint_finding_cb *cb,
                   void *arg, struct sl_buf *out)
{
    struct gather g = { cb, arg, NULL, { 0 }, 0 };
    lint_run(p, tools, true, false, gather_finding, &g);
    if (g.n) {
        sl_buf_printf(out, "sluice: the policy does not match the server's tools (%zu finding%s; "
                      "--strict would refuse to serve):", g.n, g.n == 1 ? "" : "s");
        sl_buf_put(out, g.lines.p, g.lines.len);
        if (g.n > LINT_NOTICE_MAX)
            sl_buf_printf(out, "\n... and %zu more in sluice's log", g.n - LINT_NOTICE_MAX);
    }
    sl_buf_free(&g.lines);
    return g.n;
}

struct plain {
    lint_cb *cb;
    void *arg;
};

static void plain_finding(void *arg, const struct lint_finding *f)
{
    struct plain *pl = arg;
    char at[300];
    struct sl_buf msg = { 0 };
    lint_where_format(&f->where, at, sizeof(at));
    sl_buf_printf(&msg, "%s (at %s)", f->message, at);
    pl->cb(pl->arg, f->missing, msg.p);
    sl_buf_free(&msg);
}

struct lint_counts lint_check(const struct policy *p, const struct json *tools, bool complete,
                              lint_cb *cb, void *arg)
{
    struct plain pl = { cb, arg };
    return lint_run(p, tools, complete, false, plain_finding, &pl);
}
