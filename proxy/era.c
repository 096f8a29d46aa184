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

struct json *era_add_envelope(struct sl_arena *a, const struct json *params,
                              const struct json *caps)
{
    struct json *p = params && params->type == JSON_OBJECT ? json_copy_object(a, params)
                                                           : json_new_object(a);
    const struct json *old = json_get(p, "_meta");
    struct json *m = old && old->type == JSON_OBJECT ? json_copy_object(a, old)
                                                     : json_new_object(a);
    json_set(a, m, META_PROTOCOL_VERSION, json_new_string(a, ERA_MODERN_VERSION,
                                                          strlen(ERA_MODERN_VERSION)));
    json_set(a, m, META_CLIENT_CAPS, caps ? (struct json *)caps : json_new_object(a));
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

struct json *era_result_to_legacy(struct sl_arena *a, const struct json *res)
{
    if (res == NULL || res->type != JSON_OBJECT)
        return (struct json *)res;
    struct json *r = json_copy_object(a, res);
    json_del(r, "resultType");
    json_del(r, "ttlMs");
    json_del(r, "cacheScope");
    return r;
}

const char *era_negotiate_legacy(const struct json *requested)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(legacy_versions); i++)
        if (json_str_is(requested, legacy_versions[i]))
            return legacy_versions[i];
    return ERA_LEGACY_LATEST;
}
