/* session_listen.c: subscriptions/listen for 2026-07-28 clients in front of a legacy server.
 *
 * A 2026-07-28 client learns of changes only on a subscriptions/listen stream (PROTOCOL.md
 * §6.4); a handshake-era server has no such method and sends its list_changed and
 * resources/updated notifications to whoever initialized it. sluice answers the listen itself:
 *
 *   listen -> acknowledged (what the server declared it sends) -> the server's notifications,
 *   each tagged with this stream's subscriptionId -> the stream ends: the client closes it or
 *   cancels it (stdio), or sluice stops (a final "complete" result)
 *
 * Resource subscriptions are made upstream with resources/subscribe, and undone with
 * resources/unsubscribe when the last stream that asked for that URI ends. Every stream is on
 * one process-wide list, which the shared upstream's notifications walk (session_listen_notify).
 * Toward a 2026-07-28 server the listen is forwarded as any request. */
#include "session_priv.h"

#include <string.h>

#include "era.h"
#include "log.h"

#define LISTEN_MAX_URIS 64
#define META_SUBSCRIPTION_ID "io.modelcontextprotocol/subscriptionId"

struct listen {
    struct session *s;
    char *id;                   /* the listen request's id, JSON text: its subscriptionId */
    bool tools, prompts, resources; /* the list_changed kinds acknowledged */
    char *uris[LISTEN_MAX_URIS];    /* resource subscriptions acknowledged */
    size_t nuris;
    struct listen *prev, *next;
};

static struct listen *listens;

static bool declared(const struct json *caps, const char *cap, const char *flag)
{
    const struct json *v = json_get(json_get(caps, cap), flag);
    return v && v->type == JSON_BOOL && v->u.b;
}

static bool asked(const struct json *filter, const char *key)
{
    const struct json *v = json_get(filter, key);
    return v && v->type == JSON_BOOL && v->u.b;
}

static bool uri_held(const char *uri, const struct listen *except)
{
    for (const struct listen *l = listens; l; l = l->next)
        for (size_t i = 0; l != except && i < l->nuris; i++)
            if (strcmp(l->uris[i], uri) == 0)
                return true;
    return false;
}

static void on_sub_reply(struct jsonrpc_msg *msg, const char *why, void *arg)
{
    (void)arg;
    if (msg == NULL || msg->kind == JSONRPC_ERROR)
        sl_warn("a resource (un)subscription for a listen stream failed upstream%s%s",
                why ? ": " : "", why ? why : "");
}

static void sub_upstream(struct session *s, const char *method, const char *uri)
{
    struct sl_arena *a = sl_arena_new_small();
    struct json *p = json_new_object(a);
    json_set(a, p, "uri", json_new_string(a, uri, strlen(uri)));
    (void)upstream_request(session_up(s), sl_str_c(method), p, on_sub_reply, NULL);
    sl_arena_free(a);
}

/* The acknowledgement: the first message on the stream, naming what the server agreed to. */
static void send_ack(struct listen *l, struct sl_str rel)
{
    struct sl_buf b = { 0 };
    sl_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/"
                      "acknowledged\",\"params\":{\"_meta\":{\"" META_SUBSCRIPTION_ID
                      "\":%s},\"notifications\":{", l->id);
    const char *sep = "";
    if (l->tools)
        sl_buf_puts(&b, "\"toolsListChanged\":true"), sep = ",";
    if (l->prompts)
        sl_buf_printf(&b, "%s\"promptsListChanged\":true", sep), sep = ",";
    if (l->resources)
        sl_buf_printf(&b, "%s\"resourcesListChanged\":true", sep), sep = ",";
    if (l->nuris) {
        sl_buf_printf(&b, "%s\"resourceSubscriptions\":[", sep);
        for (size_t i = 0; i < l->nuris; i++) {
            if (i)
                sl_buf_putc(&b, ',');
            json_write_string(&b, l->uris[i], strlen(l->uris[i]));
        }
        sl_buf_putc(&b, ']');
    }
    sl_buf_puts(&b, "}}}");
    session_send_line(l->s, rel, false, sl_buf_str(&b));
    sl_buf_free(&b);
}

bool listen_start(struct session *s, struct jsonrpc_msg *m, struct sl_str id)
{
    const struct json *filter = json_get(m->params, "notifications");
    if (filter == NULL || filter->type != JSON_OBJECT) {
        session_reply_error(s, id, JSONRPC_INVALID_PARAMS,
                            "subscriptions/listen needs params.notifications (an object)", NULL);
        return false;
    }
    const struct json *caps = json_get(upstream_info(session_up(s)), "capabilities");
    struct listen *l = sl_xcalloc(1, sizeof(*l));
    l->s = s;
    l->id = sl_xstrndup(id.p, id.len);
    l->tools = asked(filter, "toolsListChanged") && declared(caps, "tools", "listChanged");
    l->prompts = asked(filter, "promptsListChanged") && declared(caps, "prompts", "listChanged");
    l->resources = asked(filter, "resourcesListChanged") &&
                   declared(caps, "resources", "listChanged");
    const struct json *uris = json_get(filter, "resourceSubscriptions");
    if (uris && uris->type == JSON_ARRAY && declared(caps, "resources", "subscribe")) {
        for (size_t k = 0; k < uris->u.arr.n && l->nuris < LISTEN_MAX_URIS; k++) {
            const struct json *u = uris->u.arr.v[k];
            if (u->type != JSON_STRING || memchr(u->u.str.p, '\0', u->u.str.len))
                continue;
            char *uri = sl_xstrndup(u->u.str.p, u->u.str.len);
            if (!uri_held(uri, NULL))
                sub_upstream(s, "resources/subscribe", uri);
            l->uris[l->nuris++] = uri;
        }
    }
    l->next = listens;
    if (listens)
        listens->prev = l;
    listens = l;
    s->nlistens++;
    sl_debug("listen stream %s opened (tools %d, prompts %d, resources %d, %zu URIs)", l->id,
             l->tools, l->prompts, l->resources, l->nuris);
    send_ack(l, id);
    return false; /* nothing of m is kept */
}

static void listen_free(struct listen *l)
{
    if (l->prev)
        l->prev->next = l->next;
    else
        listens = l->next;
    if (l->next)
        l->next->prev = l->prev;
    l->s->nlistens--;
    for (size_t i = 0; i < l->nuris; i++) {
        if (!l->s->stopping && session_up(l->s) && !uri_held(l->uris[i], l))
            sub_upstream(l->s, "resources/unsubscribe", l->uris[i]);
        free(l->uris[i]);
    }
    free(l->id);
    free(l);
}

bool listen_has_id(const struct session *s, struct sl_str id)
{
    if (s->nlistens == 0)
        return false;
    for (const struct listen *l = listens; l; l = l->next)
        if (l->s == s && sl_str_eq_c(id, l->id))
            return true;
    return false;
}

bool listen_cancel(struct session *s, const struct jsonrpc_msg *m)
{
    const struct json *rid = json_get(m->params, "requestId");
    if (rid == NULL || s->nlistens == 0)
        return false;
    struct sl_buf b = { 0 };
    json_write(&b, rid);
    for (struct listen *l = listens; l; l = l->next) {
        if (l->s == s && strlen(l->id) == b.len && memcmp(l->id, b.p, b.len) == 0) {
            sl_buf_free(&b);
            listen_free(l); /* a cancelled request gets no response */
            return true;
        }
    }
    sl_buf_free(&b);
    return false;
}

void listen_free_all(struct session *s)
{
    struct listen *l = listens;
    while (l && s->nlistens) {
        struct listen *next = l->next;
        if (l->s == s)
            listen_free(l);
        l = next;
    }
}

/* ===== for main ===== */

static bool wants(const struct listen *l, const struct jsonrpc_msg *n)
{
    if (sl_str_eq_c(n->method, "notifications/tools/list_changed"))
        return l->tools;
    if (sl_str_eq_c(n->method, "notifications/prompts/list_changed"))
        return l->prompts;
    if (sl_str_eq_c(n->method, "notifications/resources/list_changed"))
        return l->resources;
    if (sl_str_eq_c(n->method, "notifications/resources/updated")) {
        const struct json *uri = json_get(n->params, "uri");
        for (size_t i = 0; uri && uri->type == JSON_STRING && i < l->nuris; i++)
            if (sl_str_eq_c(uri->u.str, l->uris[i]))
                return true;
    }
    return false;
}

void session_listen_notify(const struct jsonrpc_msg *n)
{
    if (listens == NULL || n->kind != JSONRPC_NOTIFICATION)
        return;
    struct sl_buf b = { 0 };
    for (struct listen *l = listens; l; l = l->next) {
        if (!wants(l, n))
            continue;
        /* The upstream's params with _meta's subscriptionId set to this stream's. */
        b.len = 0;
        sl_buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"method\":");
        json_write_string(&b, n->method.p, n->method.len);
        sl_buf_printf(&b, ",\"params\":{\"_meta\":{\"" META_SUBSCRIPTION_ID "\":%s}", l->id);
        for (size_t i = 0; n->params && n->params->type == JSON_OBJECT &&
                           i < n->params->u.obj.n; i++) {
            const struct json_member *mb = &n->params->u.obj.v[i];
            if (sl_str_eq_c(mb->key, "_meta"))
                continue;
            sl_buf_putc(&b, ',');
            json_write_string(&b, mb->key.p, mb->key.len);
            sl_buf_putc(&b, ':');
            json_write(&b, mb->val);
        }
        sl_buf_puts(&b, "}}");
        session_send_line(l->s, sl_str_c(l->id), false, sl_buf_str(&b));
    }
    sl_buf_free(&b);
}

void session_listen_end_all(void)
{
    while (listens) {
        struct listen *l = listens;
        struct session *s = l->s;
        struct sl_buf rel = { 0 }, line = { 0 };
        sl_buf_puts(&rel, l->id);
        sl_buf_printf(&line, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"resultType\":"
                      "\"complete\",\"_meta\":{\"" META_SUBSCRIPTION_ID "\":%s}}}", l->id, l->id);
        listen_free(l);
        session_send_line(s, sl_buf_str(&rel), true, sl_buf_str(&line));
        sl_buf_free(&rel);
        sl_buf_free(&line);
    }
}

