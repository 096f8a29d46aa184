/* test_pin.c: tool pins (pin.h): the definition digest against a vector computed outside sluice,
 * the registry, the verdict, the gate's refusal and its binding of the definition into the
 * sealed state, and the policy rewrite of `sluice pin --write` (pinyaml.h) on tricky layouts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate.h"
#include "jsonrpc.h"
#include "pin.h"
#include "pinyaml.h"

static struct sl_arena *arena;

static struct json *parse(const char *text)
{
    struct json *v;
    char err[160];
    if (json_parse(text, strlen(text), arena, &v, err, sizeof(err)) != 0)
        fail_msg("bad test JSON %s: %s", text, err);
    return v;
}

static struct policy *load(const char *text)
{
    struct policy *p;
    struct policy_error err;
    if (policy_load_buffer("t.yaml", text, strlen(text), &p, &err) != 0)
        fail_msg("policy: %u:%u: %s", err.line, err.col, err.msg);
    return p;
}

static void hex(const uint8_t d[32], char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* ===== the digest ===== */

/* The vector: sha256 of {"_meta":{"x":1},"annotations":{"readOnlyHint":true},"description":
 * "Echoes the text back","inputSchema":{"properties":{"text":{"type":"string"}},"required":
 * ["text"],"type":"object"},"name":"echo","outputSchema":{"type":"object"},"title":"Echo!"},
 * computed with Python's json.dumps(sort_keys=True, separators=(",",":")) and hashlib (the same
 * bytes as RFC 8785 for this value). Member order does not count. (Before title, _meta and
 * outputSchema were hashed, this tool's pin was 16cb2e8b...) */
static const char echo_tool[] =
    "{\"_meta\":{\"x\":1},\"title\":\"Echo!\",\"outputSchema\":{\"type\":\"object\"},"
    "\"inputSchema\":{\"type\":\"object\",\"required\":[\"text\"],"
    "\"properties\":{\"text\":{\"type\":\"string\"}}},\"name\":\"echo\","
    "\"annotations\":{\"readOnlyHint\":true},\"description\":\"Echoes the text back\"}";
static const char echo_pin[] = "1fb44478855397d954cc452df0da45500bc5211d3baaec4ccc4fb5c5dce6cbbf";

static void test_digest_vector(void **state)
{
    uint8_t d[PIN_LEN];
    char h[65];
    (void)state;
    assert_int_equal(pin_digest(parse(echo_tool), d), 0);
    hex(d, h);
    assert_string_equal(h, echo_pin);
    /* a bare name: sha256 of {"name":"echo"}; execution is never hashed */
    assert_int_equal(pin_digest(parse("{\"execution\":{\"taskSupport\":\"optional\"},"
                                      "\"name\":\"echo\"}"), d), 0);
    hex(d, h);
    assert_string_equal(h, "f7817751a90d6baf078dd0e2d98b278faa025d83ccee00eb9b60100ad65bdcb9");
    struct sl_buf b = { 0 };
    pin_format(&b, d);
    assert_int_equal(b.len, PIN_TEXT_LEN);
    assert_memory_equal(b.p, "sha256:f781", 11);
    sl_buf_free(&b);
}

/* Every member but execution changes the digest: what a client is served (a title it shows, an
 * MCP App under _meta) cannot change under a pin. */
static void test_digest_members(void **state)
{
    static const char *const same[] = {
        "{\"description\":\"d\",\"name\":\"t\"}",
        "{\"name\":\"t\",\"description\":\"d\",\"execution\":{\"taskSupport\":\"optional\"}}",
    };
    static const char *const differ[] = {
        "{\"name\":\"t\",\"description\":\"d\",\"title\":\"EVIL TITLE: delete everything\"}",
        "{\"name\":\"t\",\"description\":\"d\",\"_meta\":{\"ui/resourceUri\":\"ui://evil\"}}",
        "{\"name\":\"t\",\"description\":\"d\",\"outputSchema\":{\"type\":\"object\"}}",
        "{\"name\":\"t\",\"description\":\"d\",\"icons\":[{\"src\":\"https://x/i.png\"}]}",
        "{\"name\":\"t\",\"description\":\"d\",\"x-later-member\":1}",
        "{\"name\":\"t\",\"description\":\"d\",\"title\":\"T\",\"execution\":{}}",
        "{\"name\":\"t\",\"description\":\"d \"}",
        "{\"name\":\"t\",\"description\":\"d\",\"inputSchema\":{}}",
        "{\"name\":\"t\",\"description\":\"d\",\"annotations\":{}}",
        "{\"name\":\"u\",\"description\":\"d\"}",
        "{\"name\":\"t\"}",
    };
    uint8_t base[PIN_LEN], d[PIN_LEN];
    (void)state;
    assert_int_equal(pin_digest(parse("{\"name\":\"t\",\"description\":\"d\"}"), base), 0);
    for (size_t i = 0; i < SL_ARRAY_LEN(same); i++) {
        assert_int_equal(pin_digest(parse(same[i]), d), 0);
        assert_memory_equal(d, base, PIN_LEN);
    }
    for (size_t i = 0; i < SL_ARRAY_LEN(differ); i++) {
        assert_int_equal(pin_digest(parse(differ[i]), d), 0);
        if (memcmp(d, base, PIN_LEN) == 0)
            fail_msg("%s hashes as the base", differ[i]);
    }
    assert_int_equal(pin_digest(parse("[1]"), d), -1);
    assert_int_equal(pin_digest(parse("{\"name\":\"t\",\"inputSchema\":{\"max\":1e400}}"), d), -1);
}

/* ===== the registry and the verdict ===== */

static void test_registry_and_check(void **state)
{
    char text[600];
    (void)state;
    snprintf(text, sizeof(text),
             "version: 1\ndefaults: {unpinned: allow}\ntools:\n"
             "  echo: {action: allow, pin: \"sha256:%s\"}\n"
             "  gone: {action: allow, pin: \"sha256:%s\"}\n"
             "  free: {action: allow}\n", echo_pin, echo_pin);
    struct policy *p = load(text);
    struct pins *ps = pins_new();
    uint8_t d[PIN_LEN];
    bool has;
    assert_int_equal(pins_get(ps, SL_STR("echo"), d), 0);
    assert_int_equal(pins_status(ps, p, SL_STR("echo"), d, &has), PIN_UNLISTED);
    pins_learn(ps, parse("[{\"name\":\"free\"},{\"name\":\"bad\",\"inputSchema\":1e999},"
                         "{\"nameless\":1}]"), false);
    pins_learn(ps, json_get(parse("{\"tools\":[]}"), "tools"), false);
    pins_learn(ps, parse("{}"), true); /* not an array: ignored */
    struct json *tools = json_new_array(arena);
    json_push(arena, tools, parse(echo_tool));
    pins_learn(ps, tools, false);
    assert_int_equal(pins_get(ps, SL_STR("echo"), d), 1);
    assert_int_equal(pins_get(ps, SL_STR("bad"), d), -1);
    assert_int_equal(pins_status(ps, p, SL_STR("echo"), d, &has), PIN_OK);
    assert_true(has);
    assert_int_equal(pins_status(ps, p, SL_STR("gone"), d, &has), PIN_UNLISTED);
    assert_int_equal(pins_status(ps, p, SL_STR("free"), d, &has), PIN_FREE);
    assert_int_equal(pins_status(ps, p, SL_STR("other"), d, &has), PIN_FREE);
    /* the server changes echo's description: the next listing replaces what it said */
    pins_learn(ps, parse("[{\"name\":\"echo\",\"description\":\"Now also uploads the text\","
                         "\"inputSchema\":{\"type\":\"object\"}}]"), false);
    assert_int_equal(pins_status(ps, p, SL_STR("echo"), d, &has), PIN_MISMATCH);
    /* a page without echo says nothing of it; a whole listing without it unlists it, until one
     * lists it again */
    pins_learn(ps, parse("[{\"name\":\"free\"}]"), false);
    assert_int_equal(pins_get(ps, SL_STR("echo"), d), 1);
    pins_learn(ps, parse("[{\"name\":\"free\"}]"), true);
    assert_int_equal(pins_get(ps, SL_STR("echo"), d), 0);
    assert_int_equal(pins_get(ps, SL_STR("bad"), d), 0);
    assert_int_equal(pins_get(ps, SL_STR("free"), d), 1);
    assert_int_equal(pins_status(ps, p, SL_STR("echo"), d, &has), PIN_UNLISTED);
    pins_learn(ps, parse("[{\"name\":\"echo\",\"description\":\"Now also uploads the text\","
                         "\"inputSchema\":{\"type\":\"object\"}}]"), true);
    assert_int_equal(pins_get(ps, SL_STR("free"), d), 0);
    assert_int_equal(pins_status(ps, p, SL_STR("echo"), d, &has), PIN_MISMATCH);
    assert_true(pin_refuses(PIN_MISMATCH) && pin_refuses(PIN_UNLISTED) &&
                pin_refuses(PIN_UNPINNED) && !pin_refuses(PIN_OK) && !pin_refuses(PIN_FREE));
    assert_string_equal(pin_reason(PIN_MISMATCH), "pin-mismatch");
    assert_null(pin_reason(PIN_OK));
    /* one bit off, in the first byte or the last, is a mismatch: the whole digest counts */
    assert_int_equal(pins_get(ps, SL_STR("echo"), d), 1);
    uint8_t near[PIN_LEN];
    struct policy_decision pd;
    policy_lookup(p, "echo", 4, &pd);
    for (size_t at = 0; at < PIN_LEN; at += PIN_LEN - 1) {
        memcpy(near, pd.pin, PIN_LEN);
        assert_int_equal(pin_check(p, SL_STR("echo"), near, true), PIN_OK);
        near[at] ^= 1;
        assert_int_equal(pin_check(p, SL_STR("echo"), near, true), PIN_MISMATCH);
    }
    /* listed without a canonical form: a pinned tool mismatches */
    assert_int_equal(pin_check(p, SL_STR("echo"), NULL, true), PIN_MISMATCH);
    policy_unref(p);
    p = load("version: 1\ndefaults: {unpinned: deny}\ntools: {free: {action: allow}}\n");
    assert_int_equal(pins_status(ps, p, SL_STR("free"), d, &has), PIN_UNPINNED);
    assert_int_equal(pins_status(ps, p, SL_STR("never"), d, &has), PIN_UNPINNED);
    policy_unref(p);
    pins_free(ps);
}

/* Many names: every one up to PINS_MAX is found (through the index's growth), none beyond. */
static void test_registry_many(void **state)
{
    (void)state;
    struct pins *ps = pins_new();
    struct json *tools = json_new_array(arena);
    char name[32];
    for (int i = 0; i < PINS_MAX + 50; i++) {
        struct json *t = json_new_object(arena);
        snprintf(name, sizeof(name), "t%d", i);
        json_set(arena, t, "name", json_new_string(arena, name, strlen(name)));
        json_push(arena, tools, t);
    }
    pins_learn(ps, tools, true);
    pins_learn(ps, tools, true); /* again: replaced, not added */
    uint8_t d[PIN_LEN], want[PIN_LEN];
    for (int i = 0; i < PINS_MAX + 50; i += 7) {
        snprintf(name, sizeof(name), "t%d", i);
        int got = pins_get(ps, sl_str_c(name), d);
        assert_int_equal(got, i < PINS_MAX ? 1 : 0);
        if (got == 1) {
            assert_int_equal(pin_digest(tools->u.arr.v[i], want), 0);
            assert_memory_equal(d, want, PIN_LEN);
        }
    }
    assert_int_equal(pins_get(ps, SL_STR("t"), d), 0);
    pins_free(ps);
}

/* ===== the gate ===== */

struct gfx {
    struct policy *p;
    struct seal_keyring *keys;
    uint8_t origin[SEAL_ORIGIN_LEN];
    struct gate_ctx g;
    uint8_t def_a[32], def_b[32];
};

static void gfx_init(struct gfx *f, const char *policy_text)
{
    memset(f, 0, sizeof(*f));
    f->p = load(policy_text);
    f->keys = seal_keyring_random();
    f->g = (struct gate_ctx){ .keys = f->keys, .origin = f->origin,
                              .upstream_id = SL_STR("stdio:test"), .server_name = SL_STR("t") };
    memset(f->def_a, 0xaa, 32);
    memset(f->def_b, 0xbb, 32);
}

static void gfx_free(struct gfx *f)
{
    policy_unref(f->p);
    seal_keyring_free(f->keys);
}

static struct gate_input input(struct gfx *f, const char *tool, const uint8_t *def)
{
    struct gate_input in = {
        .policy = f->p, .principal = SL_STR("local"), .tool = sl_str_c(tool),
        .args = parse("{\"path\":\"/x\"}"), .can_elicit_form = true, .listed = def != NULL,
        .has_definition = def != NULL,
    };
    if (def)
        memcpy(in.definition, def, 32);
    return in;
}

static void test_gate_pin_refuses(void **state)
{
    struct gfx f;
    char text[600];
    struct gate_verdict v;
    (void)state;
    snprintf(text, sizeof(text),
             "version: 1\ndefaults: {unpinned: deny}\ntools:\n"
             "  read: {action: allow, pin: \"sha256:%s\"}\n"
             "  nopin: {action: allow}\n  denied: {action: deny}\n", "aa" "aaaaaaaaaaaaaaaaaaaaaa"
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    gfx_init(&f, text);
    struct { const char *tool; const uint8_t *def; enum gate_action action; const char *reason; }
        rows[] = {
        { "read", f.def_a, GATE_FORWARD, "policy" },
        { "read", f.def_b, GATE_REFUSE, "pin-mismatch" },
        { "read", NULL, GATE_REFUSE, "pin-unlisted" },
        { "nopin", f.def_a, GATE_REFUSE, "unpinned" },
        { "other", f.def_a, GATE_REFUSE, "unpinned" },
        { "denied", f.def_a, GATE_REFUSE, "policy" }, /* deny says so itself */
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        struct gate_input in = input(&f, rows[i].tool, rows[i].def);
        gate_decide(&f.g, &in, 1800000000u, &v);
        if (v.action != rows[i].action || strcmp(v.reason, rows[i].reason) != 0)
            fail_msg("row %zu (%s): action %d reason %s", i, rows[i].tool, v.action, v.reason);
        assert_int_equal(v.pin_refused, strncmp(rows[i].reason, "pin", 3) == 0 ||
                                            strcmp(rows[i].reason, "unpinned") == 0);
        if (v.pin_refused) {
            assert_int_equal(v.decision, AUDIT_DENY);
            assert_non_null(strstr(v.rule, rows[i].reason));
            assert_int_equal(v.args_json.len, 0);
        }
        gate_verdict_free(&v);
    }
    gfx_free(&f);
}

/* Round one under definition a; round two under a forwards, under b or unknown refuses (and
 * says which). */
static void test_gate_binds_definition(void **state)
{
    struct gfx f;
    (void)state;
    gfx_init(&f, "version: 1\ntools:\n  write: {action: confirm}\n"
                 "  tok: {action: confirm, fallback: token}\n");
    /* asked under first, answered under second; asked while no definition was known, one
     * learnt since is a change */
    struct {
        const uint8_t *first, *second;
        enum gate_action action;
        const char *reason;
    } rows[] = {
        { f.def_a, f.def_a, GATE_FORWARD, "accept" },
        { f.def_a, f.def_b, GATE_REFUSE, "definition-changed" },
        { f.def_a, NULL, GATE_REFUSE, "definition-unknown" },
        { NULL, NULL, GATE_FORWARD, "accept" },
        { NULL, f.def_a, GATE_REFUSE, "definition-changed" },
    };
    struct json *accept = parse("{\"sluice.confirm\":{\"action\":\"accept\","
                                "\"content\":{\"approve\":true}}}");
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        struct gate_verdict v;
        struct gate_input in = input(&f, "write", rows[i].first);
        gate_decide(&f.g, &in, 1800000000u, &v);
        assert_int_equal(v.action, GATE_ASK);
        struct json *st = json_new_string(arena, v.state.p, v.state.len);
        gate_verdict_free(&v);
        in = input(&f, "write", rows[i].second);
        in.request_state = st;
        in.input_responses = accept;
        gate_decide(&f.g, &in, 1800000001u, &v);
        if (v.action != rows[i].action || strcmp(v.reason, rows[i].reason) != 0)
            fail_msg("row %zu: action %d reason %s", i, v.action, v.reason);
        gate_verdict_free(&v);
    }
    /* the one-time token binds it too */
    struct gate_verdict v;
    struct gate_input in = input(&f, "tok", f.def_a);
    in.can_elicit_form = false;
    gate_decide(&f.g, &in, 1800000000u, &v);
    assert_int_equal(v.decision, AUDIT_TOKEN_ISSUED);
    struct json *tok = json_new_string(arena, v.token.p, v.token.len);
    gate_verdict_free(&v);
    in = input(&f, "tok", f.def_b);
    in.can_elicit_form = false;
    in.token = tok;
    gate_decide(&f.g, &in, 1800000001u, &v);
    assert_string_equal(v.reason, "definition-changed");
    gate_verdict_free(&v);
    in = input(&f, "tok", f.def_a);
    in.can_elicit_form = false;
    in.token = tok;
    gate_decide(&f.g, &in, 1800000001u, &v);
    assert_int_equal(v.action, GATE_FORWARD);
    gate_verdict_free(&v);
    gfx_free(&f);
}

/* ===== the rewrite ===== */

struct rewrite_row {
    const char *what;
    const char *before;
    const char *after;           /* NULL: the rewrite is refused */
};

#define P1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define P2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

static const struct rewrite_row rewrites[] = {
    { "added after action, comments kept",
      "version: 1\n# top\ntools:\n  # about a\n  a:   # trailing\n    action: allow  # why\n"
      "    strict_args: true\n\n  b:\n    action: deny\n",
      "version: 1\n# top\ntools:\n  # about a\n  a:   # trailing\n    action: allow  # why\n"
      "    pin: " P1 "\n    strict_args: true\n\n  b:\n    action: deny\n    pin: " P2 "\n" },
    { "replaced in place, its comment kept",
      "version: 1\ntools:\n  a:\n    pin: " P2 "   # reviewed\n    action: allow\n"
      "  b:\n      action: deny\n      pin: 'sha256:0000000000000000000000000000000000000000"
      "000000000000000000000000'\n",
      "version: 1\ntools:\n  a:\n    pin: " P1 "   # reviewed\n    action: allow\n"
      "  b:\n      action: deny\n      pin: " P2 "\n" },
    { "flow mappings, quoted names, CRLF",
      "version: 1\r\ntools:\r\n  \"a\": {action: allow}\r\n  'b': { action: deny, pin: " P1 " }\r\n",
      "version: 1\r\ntools:\r\n  \"a\": {action: allow, pin: " P1 "}\r\n  'b': { action: deny, "
      "pin: " P2 " }\r\n" },
    { "action's value on the next line, deeper nesting after it, no final newline",
      "version: 1\ntools:\n  a:\n    action:\n      allow\n  b:\n    action: confirm\n"
      "    args:\n      path:\n        deny_glob: [\"/etc/**\"]",
      "version: 1\ntools:\n  a:\n    pin: " P1 "\n    action:\n      allow\n  b:\n"
      "    action: confirm\n    pin: " P2 "\n    args:\n      path:\n        deny_glob: "
      "[\"/etc/**\"]" },
    { "two tools on one flow line",
      "version: 1\ntools: {a: {action: allow}, b: {action: deny}}\n", NULL },
    { "a flow mapping over two lines",
      "version: 1\ntools:\n  a: {action: allow,\n      strict_args: true}\n  b: {action: deny}\n",
      NULL },
};

static void test_rewrite(void **state)
{
    (void)state;
    for (size_t i = 0; i < SL_ARRAY_LEN(rewrites); i++) {
        const struct rewrite_row *r = &rewrites[i];
        struct policy *p = NULL;
        struct policy_error perr;
        if (policy_load_buffer("t.yaml", r->before, strlen(r->before), &p, &perr) != 0) {
            fail_msg("%s: before does not load: %u:%u %s", r->what, perr.line, perr.col,
                     perr.msg);
        }
        struct pinyaml_pin pins[2] = { { .tool = 0 }, { .tool = 1 } };
        memset(pins[0].digest, 0x11, 32);
        memset(pins[1].digest, 0x22, 32);
        struct sl_buf out = { 0 };
        char err[300] = "";
        int rc = pinyaml_rewrite("t.yaml", r->before, strlen(r->before), p, pins, 2, &out, err,
                                 sizeof(err));
        if (r->after == NULL) {
            if (rc == 0)
                fail_msg("%s: rewritten, want refused:\n%.*s", r->what, (int)out.len, out.p);
            assert_int_equal(out.len, 0);
            assert_non_null(strstr(err, "t.yaml:"));
        } else if (rc != 0 || out.len != strlen(r->after) ||
                   memcmp(out.p, r->after, out.len) != 0) {
            fail_msg("%s: rc %d (%s), got:\n%.*s\nwant:\n%s", r->what, rc, err, (int)out.len,
                     out.p ? out.p : "", r->after);
        }
        sl_buf_free(&out);
        policy_unref(p);
    }
}

/* The shipped example: every tool pinned, every comment line still there. */
static void test_rewrite_example(void **state)
{
    (void)state;
    FILE *fp = fopen("../../policy.example.yaml", "rb");
    assert_non_null(fp);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof(text) - 1, fp);
    fclose(fp);
    text[n] = '\0';
    struct policy *p = load(text);
    size_t count = policy_tool_count(p);
    struct pinyaml_pin *pins = calloc(count, sizeof(*pins));
    for (size_t i = 0; i < count; i++) {
        pins[i].tool = i;
        memset(pins[i].digest, (int)(0x30 + i), 32);
    }
    struct sl_buf out = { 0 };
    char err[300] = "";
    if (pinyaml_rewrite("example", text, n, p, pins, count, &out, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    /* the same lines plus one pin: line per tool */
    size_t lines_before = 0, lines_after = 0, pin_lines = 0;
    for (size_t i = 0; i < n; i++)
        lines_before += text[i] == '\n';
    for (size_t i = 0; i < out.len; i++)
        lines_after += out.p[i] == '\n';
    for (const char *s = out.p; (s = strstr(s, "pin: sha256:")) != NULL; s++)
        pin_lines++;
    assert_int_equal(lines_after, lines_before + count);
    assert_int_equal(pin_lines, count);
    /* pinned twice: the second rewrite replaces, adds nothing */
    struct policy *q;
    struct policy_error perr;
    assert_int_equal(policy_load_buffer("x", out.p, out.len, &q, &perr), 0);
    struct sl_buf again = { 0 };
    assert_int_equal(pinyaml_rewrite("x", out.p, out.len, q, pins, count, &again, err,
                                     sizeof(err)), 0);
    assert_int_equal(again.len, out.len);
    assert_memory_equal(again.p, out.p, out.len);
    sl_buf_free(&again);
    policy_unref(q);
    sl_buf_free(&out);
    free(pins);
    policy_unref(p);
}

static void test_yaml_key(void **state)
{
    static const struct { const char *name; const char *want; } rows[] = {
        { "read_file", "read_file" }, { "a.b-c", "a.b-c" }, { "true", "\"true\"" },
        { "No", "\"No\"" }, { "9lives", "\"9lives\"" }, { "has space", "\"has space\"" },
        { "q\"uote", "\"q\\\"uote\"" }, { "-dash", "\"-dash\"" }, { "_x", "_x" },
    };
    (void)state;
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        struct sl_buf b = { 0 };
        assert_true(pinyaml_key(&b, sl_str_c(rows[i].name)));
        assert_int_equal(b.len, strlen(rows[i].want));
        assert_memory_equal(b.p, rows[i].want, b.len);
        sl_buf_free(&b);
    }
    struct sl_buf b = { 0 };
    assert_false(pinyaml_key(&b, SL_STR("")));
    assert_false(pinyaml_key(&b, SL_STR("tab\there")));
    assert_false(pinyaml_key(&b, SL_STR("caf\xc3\xa9")));
    assert_int_equal(b.len, 0);
}

static int setup(void **state)
{
    (void)state;
    arena = sl_arena_new();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sl_arena_free(arena);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digest_vector),
        cmocka_unit_test(test_digest_members),
        cmocka_unit_test(test_registry_and_check),
        cmocka_unit_test(test_registry_many),
        cmocka_unit_test(test_gate_pin_refuses),
        cmocka_unit_test(test_gate_binds_definition),
        cmocka_unit_test(test_rewrite),
        cmocka_unit_test(test_rewrite_example),
        cmocka_unit_test(test_yaml_key),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
