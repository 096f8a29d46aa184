/* cmd_init.c: `sluice init`: a commented starter policy from a live server's tools.
 *
 * The actions come from the server's own annotations, which are hints the server chooses
 * (PROTOCOL.md §6.2): the text says so, and a person reviews it before it is used. readOnlyHint:
 * true gives allow; destructiveHint: true (and not read-only) gives confirm with irreversible;
 * every other tool gets confirm. Each tool carries the first line of its description as a
 * comment and its pin. `sluice check --policy` loads the output as it is, and `check --against`
 * the same server finds nothing: every listed tool is named, and defaults.action is confirm. */
#include "cmd_pin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confirm.h"
#include "livetools.h"
#include "pin.h"
#include "pinyaml.h"

#define DESCRIPTION_SHOWN 100  /* bytes of a description's first line in its comment */

static bool hint(const struct json *tool, const char *name)
{
    return json_is_true(json_get(json_get(tool, "annotations"), name));
}

/* "# " and the description's first line, neutralized and cut. */
static void describe(struct sl_buf *b, const struct json *tool)
{
    const struct json *d = json_get(tool, "description");
    if (d == NULL || d->type != JSON_STRING)
        return;
    struct sl_str s = d->u.str;
    while (s.len && (s.p[0] == ' ' || s.p[0] == '\n' || s.p[0] == '\r' || s.p[0] == '\t')) {
        s.p++;
        s.len--;
    }
    size_t n = 0;
    while (n < s.len && s.p[n] != '\n' && s.p[n] != '\r')
        n++;
    while (n > 0 && (s.p[n - 1] == ' ' || s.p[n - 1] == '\t'))
        n--;
    if (n == 0)
        return;
    sl_buf_puts(b, "  # ");
    confirm_neutralize(b, (struct sl_str){ s.p, n }, DESCRIPTION_SHOWN);
    sl_buf_putc(b, '\n');
}

/* Duplicate names cannot both be keys: the first one listed is written. */
static bool seen_before(const struct json *tools, size_t i, struct sl_str name)
{
    for (size_t k = 0; k < i; k++) {
        const struct json *n = json_get(tools->u.arr.v[k], "name");
        if (n && n->type == JSON_STRING && sl_str_eq(n->u.str, name))
            return true;
    }
    return false;
}

/* One tool's entry, or a comment saying why it has none. Returns true when written. */
static bool write_tool(struct sl_buf *b, const struct json *tools, size_t i)
{
    const struct json *tool = tools->u.arr.v[i];
    const struct json *name = json_get(tool, "name");
    uint8_t d[PIN_LEN];
    if (name == NULL || name->type != JSON_STRING || seen_before(tools, i, name->u.str))
        return false;
    size_t at = b->len;
    describe(b, tool);
    sl_buf_puts(b, "  ");
    if (pin_digest(tool, d) != 0 || !pinyaml_key(b, name->u.str)) {
        b->len = at;
        sl_buf_puts(b, "  # left out: tool \"");
        confirm_neutralize(b, name->u.str, 128);
        sl_buf_puts(b, "\" (a name a policy cannot hold, or a definition with no pin)\n");
        return false;
    }
    sl_buf_puts(b, ":\n");
    if (hint(tool, "readOnlyHint"))
        sl_buf_puts(b, "    action: allow            # annotated readOnlyHint: true\n");
    else if (hint(tool, "destructiveHint"))
        sl_buf_puts(b, "    action: confirm          # annotated destructiveHint: true\n"
                       "    irreversible: true\n");
    else
        sl_buf_puts(b, "    action: confirm\n");
    sl_buf_puts(b, "    pin: ");
    pin_format(b, d);
    sl_buf_putc(b, '\n');
    return true;
}

static void on_tools(void *arg, const struct json *tools, struct sl_str server)
{
    struct sl_buf *b = arg;
    struct sl_buf body = { 0 };
    size_t written = 0;
    for (size_t i = 0; i < tools->u.arr.n; i++)
        written += write_tool(&body, tools, i);
    sl_buf_puts(b, "# A starter policy for the MCP server \"");
    confirm_neutralize(b, server, 128);
    sl_buf_printf(b, "\" (sluice init), %zu tool%s.\n", written, written == 1 ? "" : "s");
    sl_buf_puts(b,
        "#\n"
        "# Review it before use. The actions come from the server's own annotations, which the\n"
        "# server chooses: readOnlyHint: true is allowed, destructiveHint: true asks a person\n"
        "# and is irreversible (never served to a client that cannot ask), anything else asks.\n"
        "# Each pin is the digest of the tool's definition as listed now: if the server changes\n"
        "# a tool's description, schema or annotations, sluice denies and hides that tool until\n"
        "# the pin is reviewed (sluice pin --policy FILE --write -- SERVER).\n"
        "version: 1\n"
        "defaults:\n"
        "  action: confirm          # tools the server adds later ask first\n"
        "  unpinned: allow          # deny: refuse every tool without a pin until reviewed\n");
    if (written == 0) {
        sl_buf_puts(b, "tools: {}\n");
    } else {
        sl_buf_puts(b, "tools:\n");
        sl_buf_put(b, body.p, body.len);
    }
    sl_buf_free(&body);
}

int cmd_init(const struct cli_opts *o)
{
    struct sl_buf b = { 0 };
    int rc = livetools_fetch(o, on_tools, &b);
    if (rc == 0)
        fwrite(b.p, 1, b.len, stdout);
    sl_buf_free(&b);
    return rc;
}
