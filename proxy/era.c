/* era.c: envelope checks and result rewriting between MCP 2025-11-25 and 2026-07-28. */
#include "era.h"

#include <string.h>

#include "jsonrpc.h" /* the error codes */

/* The legacy versions sluice answers with. 2025-03-26 allowed JSON-RPC batches and
 * neither it nor 2024-11-05 has elicitation, so a client asking for them is offered 2025-11-25
 * (the spec's "another version it supports"): sluice never has to accept a batch. */
static const char *const legacy_versions[] = { "2025-11-25", "2025-06-18" };

int era_read_envelope(const struct json *params, struct era_envelope *env, int *code,
                      const char **message, struct sl_buf *data)
{
    memset(env, 0, sizeof(*env));
    const struct json *meta = json_get(params, "_meta");
    const struct json *ver = json_get(meta, META_PROTOCOL_VERSION);
    if (ver == NULL)
        return 0;
    env->modern = true;
    if (ver->type != JSON_STRING) {
        *code = JSONRPC_INVALID_PARAMS;
        *message = "Invalid _meta envelope: " META_PROTOCOL_VERSION " must be a string";
        return -1;
    }
    if (!json_str_is(ver, ERA_MODERN_VERSION)) {
        *code = MCP_UNSUPPORTED_VERSION;
        *message = "Unsupported protocol version";
        sl_buf_puts(data, "{\"supported\":[\"" ERA_MODERN_VERSION "\",\"" ERA_LEGACY_LATEST
                          "\"],\"requested\":");
        json_write(data, ver);
        sl_buf_putc(data, '}');
        return -1;
    }
    env->version = ERA_MODERN_VERSION;
    env->caps = json_get(meta, META_CLIENT_CAPS);
    if (env->caps == NULL || env->caps->type != JSON_OBJECT) {
        *code = JSONRPC_INVALID_PARAMS;
        *message = "Invalid _meta envelope for protocol revision " ERA_MODERN_VERSION ": "
                   META_CLIENT_CAPS ": missing";
        sl_buf_puts(data, "{\"envelope\":{\"key\":\"" META_CLIENT_CAPS "\",\"problem\":\"missing\"}}");
        return -1;
    }
    return 0;
}

bool era_caps_form_elicitation(const struct json *caps)
{
    const struct json *e = json_get(caps, "elicitation");
    if (e == NULL || e->type != JSON_OBJECT)
        return false;
    if (e->u.obj.n == 0) /* a bare {} means form mode (PROTOCOL.md §1.4) */
        return true;
    const struct json *form = json_get(e, "form");
    return form != NULL && form->type == JSON_OBJECT;
}

struct json *era_strip_envelope(struct sl_arena *a, const struct json *params)
{
    const struct json *meta = json_get(params, "_meta");
    if (meta == NULL || meta->type != JSON_OBJECT)
        return (struct json *)params;
    struct json *p = json_copy_object(a, params);
    struct json *m = json_new_object(a);
    static const char prefix[] = "io.modelcontextprotocol/";
    /* One pass, appending without a search: meta's keys are distinct (the reader refuses
     * duplicates), and a client controls how many there are (up to SL_MAX_MEMBERS). */
    for (size_t i = 0; i < meta->u.obj.n; i++) {
        struct sl_str k = meta->u.obj.v[i].key;
        if (k.len >= sizeof(prefix) - 1 && memcmp(k.p, prefix, sizeof(prefix) - 1) == 0)
            continue;
        json_append_key(a, m, k, meta->u.obj.v[i].val);
    }
    if (m->u.obj.n == 0)
        json_del(p, "_meta");
    else
        json_set(a, p, "_meta", m);
    return p;
}

/* {protocolVersion, clientCapabilities}, as a tree to edit. */
static struct json *envelope_tree(struct sl_arena *a, const struct json *caps)
{
    struct json *m = json_new_object(a);
    json_append_key(a, m, SL_STR(META_PROTOCOL_VERSION),
                    json_new_string(a, ERA_MODERN_VERSION, strlen(ERA_MODERN_VERSION)));
    json_append_key(a, m, SL_STR(META_CLIENT_CAPS), caps ? (struct json *)caps : json_new_object(a));
    return m;
}

struct json *era_envelope_new(struct sl_arena *a, const struct json *caps)
{
    struct json *m = envelope_tree(a, caps);
    /* Kept with its text, so each request's writer copies it in one piece instead of walking
     * and escaping the keys and capabilities again. With the one append below (no copy of a
     * new _meta, no searches) and era_result_to_legacy's one pass: a legacy call to a modern
     * upstream through --upstream URL 27,000 -> about 26,000 instructions, callgrind. */
    struct sl_buf b = { 0 };
    json_write(&b, m);
    struct json *v = json_verbatim(a, m, sl_buf_str(&b));
    sl_buf_free(&b);
    return v;
}

struct json *era_add_envelope(struct sl_arena *a, const struct json *params,
                              const struct json *envelope)
{
    bool obj = params && params->type == JSON_OBJECT;
    const struct json *old = json_get(params, "_meta");
    struct json *p = obj ? json_copy_object(a, params) : json_new_object(a);
    if (envelope == NULL) /* sluice's own requests, which add to it: a tree of its own */
        envelope = envelope_tree(a, NULL);
    if (old == NULL) { /* most requests: the envelope is the whole _meta, shared as it is */
        json_append_key(a, p, SL_STR("_meta"), (struct json *)envelope);
        return p;
    }
    struct json *m = old->type == JSON_OBJECT ? json_copy_object(a, old) : json_new_object(a);
    for (size_t i = 0; i < envelope->u.obj.n; i++)
        json_set_key(a, m, envelope->u.obj.v[i].key, envelope->u.obj.v[i].val);
    json_set(a, p, "_meta", m);
    return p;
}

static bool is_cacheable_method(struct sl_str m)
{
    static const char *const methods[] = { "tools/list", "prompts/list", "resources/list",
                                           "resources/templates/list", "resources/read" };
    for (size_t i = 0; i < SL_ARRAY_LEN(methods); i++)
        if (sl_str_eq_c(m, methods[i]))
            return true;
    return false;
}

struct json *era_result_to_modern(struct sl_arena *a, struct sl_str method, const struct json *res)
{
    if (res == NULL || res->type != JSON_OBJECT)
        return (struct json *)res;
    struct json *r = json_copy_object(a, res);
    if (json_get(r, "resultType") == NULL)
        json_set(a, r, "resultType", json_new_string(a, "complete", 8));
    if (is_cacheable_method(method)) {
        if (json_get(r, "ttlMs") == NULL)
            json_set(a, r, "ttlMs", json_new_number(a, "0"));
        if (json_get(r, "cacheScope") == NULL)
            json_set(a, r, "cacheScope", json_new_string(a, "private", 7));
    }
    return r;
}

/* The keys a legacy result must not carry (PROTOCOL.md §6.5). (SL_STR: lengths known when
 * compiled; sl_str_eq_c was left out of line, a strlen per key and name.) */
static bool is_modern_result_key(struct sl_str k)
{
    return sl_str_eq(k, SL_STR("resultType")) || sl_str_eq(k, SL_STR("ttlMs")) ||
           sl_str_eq(k, SL_STR("cacheScope"));
}

struct json *era_result_to_legacy(struct sl_arena *a, const struct json *res)
{
    if (res == NULL || res->type != JSON_OBJECT)
        return (struct json *)res;
    /* One pass over a copy, keeping the rest in order, where three json_del searched and moved
     * the members three times. A parsed object's keys are distinct, so each of the three goes
     * at most once either way. */
    struct json *r = json_copy_object(a, res);
    size_t k = 0;
    for (size_t i = 0; i < res->u.obj.n; i++)
        if (!is_modern_result_key(res->u.obj.v[i].key))
            r->u.obj.v[k++] = res->u.obj.v[i];
    r->u.obj.n = k;
    return r;
}

const char *era_negotiate_legacy(const struct json *requested)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(legacy_versions); i++)
        if (json_str_is(requested, legacy_versions[i]))
            return legacy_versions[i];
    return ERA_LEGACY_LATEST;
}

/* ===== logging ===== */

/* RFC 5424 order, as MCP's LoggingLevel lists it. */
static const char *const log_levels[] = { "debug", "info", "notice", "warning",
                                          "error", "critical", "alert", "emergency" };

int era_log_rank(const struct json *level)
{
    for (size_t i = 0; level && level->type == JSON_STRING && i < SL_ARRAY_LEN(log_levels); i++)
        if (json_str_is(level, log_levels[i]))
            return (int)i;
    return -1;
}

bool era_modern_note_wanted(const struct json *meta, const struct jsonrpc_msg *note)
{
    if (sl_str_eq_c(note->method, "notifications/progress"))
        return true;
    if (!sl_str_eq_c(note->method, "notifications/message"))
        return false;
    int asked = era_log_rank(json_get(meta, META_LOG_LEVEL));
    return asked >= 0 && era_log_rank(json_get(note->params, "level")) >= asked;
}
