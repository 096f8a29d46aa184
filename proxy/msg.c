/* msg.c: the messages sluice writes on its own account (see msg.h). */
#include "msg.h"

#include <string.h>
#include "jsonrpc.h"

static void frame_head(struct sl_buf *out)
{
    sl_buf_puts(out, "{\"jsonrpc\":\"2.0\"");
}

static void method_member(struct sl_buf *out, struct sl_str method)
{
    sl_buf_puts(out, ",\"method\":");
    json_write_string(out, method.p, method.len);
}

static void params_tail(struct sl_buf *out, struct sl_str params_json)
{
    if (params_json.p) {
        sl_buf_puts(out, ",\"params\":");
        sl_buf_put(out, params_json.p, params_json.len);
    }
    sl_buf_putc(out, '}');
}

static void params_tree_tail(struct sl_buf *out, const struct json *params)
{
    if (params) {
        sl_buf_puts(out, ",\"params\":");
        json_write(out, params);
    }
    sl_buf_putc(out, '}');
}

void msg_request(struct sl_buf *out, const char *id, struct sl_str method,
                 struct sl_str params_json)
{
    frame_head(out);
    sl_buf_puts(out, ",\"id\":");
    json_write_string(out, id, strlen(id));
    method_member(out, method);
    params_tail(out, params_json);
}

void msg_notification(struct sl_buf *out, const char *method, struct sl_str params_json)
{
    frame_head(out);
    method_member(out, sl_str_c(method));
    params_tail(out, params_json);
}

void msg_cancelled(struct sl_buf *out, const char *id, const char *reason)
{
    struct sl_buf params = { 0 };
    sl_buf_puts(&params, "{\"requestId\":");
    json_write_string(&params, id, strlen(id));
    sl_buf_puts(&params, ",\"reason\":");
    json_write_string(&params, reason, strlen(reason));
    sl_buf_putc(&params, '}');
    msg_notification(out, "notifications/cancelled", sl_buf_str(&params));
    sl_buf_free(&params);
}

void msg_up_request(struct sl_buf *out, const char *id_num, struct sl_str method,
                    const struct json *params)
{
    frame_head(out);
    sl_buf_puts(out, ",\"id\":");
    sl_buf_puts(out, id_num);
    method_member(out, method);
    params_tree_tail(out, params);
}

void msg_up_notification(struct sl_buf *out, struct sl_str method, const struct json *params)
{
    frame_head(out);
    method_member(out, method);
    params_tree_tail(out, params);
}

void msg_error_value(struct sl_buf *out, struct sl_str id_json, const struct json *error)
{
    frame_head(out);
    sl_buf_puts(out, ",\"id\":");
    sl_buf_put(out, id_json.p, id_json.len);
    sl_buf_puts(out, ",\"error\":");
    json_write_relay(out, error);
    sl_buf_putc(out, '}');
}

/* The tool error without its closing brace, so a member can follow. */
static void tool_error_open(struct sl_buf *out, bool modern, struct sl_str text)
{
    sl_buf_puts(out, modern ? "{\"resultType\":\"complete\"," : "{");
    sl_buf_puts(out, "\"isError\":true,\"content\":[{\"type\":\"text\",\"text\":");
    json_write_string(out, text.p, text.len);
    sl_buf_puts(out, "}]");
}

void msg_tool_error(struct sl_buf *out, bool modern, struct sl_str text)
{
    tool_error_open(out, modern, text);
    sl_buf_putc(out, '}');
}

/* The question goes in a fenced code block: a client that renders the message as Markdown (VS
 * Code's chat does) then shows it as written. Outside one, Markdown undoes the text's escapes (\"
 * reads as "), makes [text](url) a link that hides its target, and decodes &#x202e; into the
 * bidi control the text had neutralized (confirm.c). A fence is closed only by a line of as many
 * backticks or more: this one is one longer than the longest run of backticks in the text (and
 * three at least), so not even a policy's message of backticks alone closes it. Most questions
 * hold no backtick: memchr finds that without a pass of our own per byte (issue 24). */
static size_t fence_len(struct sl_str text)
{
    size_t longest = 2;
    const char *p = text.p, *end = text.p + text.len;
    while (p < end && (p = memchr(p, '`', (size_t)(end - p))) != NULL) {
        const char *run = p;
        while (p < end && *p == '`')
            p++;
        if ((size_t)(p - run) > longest)
            longest = (size_t)(p - run);
    }
    return longest + 1;
}

static void put_fence(struct sl_buf *out, size_t len)
{
    for (size_t i = 0; i < len; i++)
        sl_buf_putc(out, '`');
}

void msg_question_params(struct sl_buf *out, struct sl_str message, bool mode_field)
{
    char room[2048];
    struct sl_buf fenced;
    size_t fence = fence_len(message);
    sl_buf_on(&fenced, room, sizeof(room));
    put_fence(&fenced, fence);
    sl_buf_putc(&fenced, '\n');
    sl_buf_put(&fenced, message.p, message.len);
    sl_buf_putc(&fenced, '\n');
    put_fence(&fenced, fence);
    sl_buf_puts(out, mode_field ? "{\"mode\":\"form\",\"message\":" : "{\"message\":");
    json_write_string(out, fenced.p, fenced.len);
    sl_buf_free(&fenced);
    sl_buf_puts(out, ",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"approve\":"
                     "{\"type\":\"boolean\",\"title\":\"Approve this call\",\"description\":"
                     "\"Run this exact call once.\",\"default\":false}},"
                     "\"required\":[\"approve\"]}}");
}

void msg_question_result(struct sl_buf *out, struct sl_str message, struct sl_str state)
{
    sl_buf_puts(out, "{\"resultType\":\"input_required\",\"inputRequests\":{\"" GATE_CONFIRM_KEY
                     "\":{\"method\":\"elicitation/create\",\"params\":");
    msg_question_params(out, message, true);
    sl_buf_puts(out, "}},\"requestState\":");
    json_write_string(out, state.p, state.len);
    sl_buf_putc(out, '}');
}

void msg_verdict_result(struct sl_buf *out, const struct gate_verdict *v, bool modern)
{
    if (v->action == GATE_ASK)
        return msg_question_result(out, sl_buf_str(&v->text), sl_buf_str(&v->state));
    if (v->token.len == 0)
        return msg_tool_error(out, modern, sl_buf_str(&v->text));
    tool_error_open(out, modern, sl_buf_str(&v->text));
    sl_buf_puts(out, ",\"_meta\":{\"" GATE_TOKEN_META "\":");
    json_write_string(out, v->token.p, v->token.len); /* base64url: nothing to escape */
    sl_buf_puts(out, "}}");
}

int msg_replayed(struct sl_buf *out, struct sl_str id_json, struct sl_str kept)
{
    struct sl_arena *a = sl_arena_new();
    struct json *root, *id;
    char err[64];
    int rc = -1;
    if (json_parse(kept.p, kept.len, a, &root, err, sizeof(err)) != 0 ||
        root->type != JSON_OBJECT ||
        json_parse(id_json.p, id_json.len, a, &id, err, sizeof(err)) != 0)
        goto out;
    root = json_copy_object(a, root);
    json_set(a, root, "id", id);
    struct json *res = json_get(root, "result");
    if (res && res->type == JSON_OBJECT) {
        res = json_copy_object(a, res);
        struct json *meta = json_get(res, "_meta");
        meta = meta && meta->type == JSON_OBJECT ? json_copy_object(a, meta) : json_new_object(a);
        json_set(a, meta, MSG_REPLAYED_META, json_new_bool(a, true));
        json_set(a, res, "_meta", meta);
        json_set(a, root, "result", res);
    } else if (json_get(root, "error") == NULL) {
        goto out;
    }
    json_write(out, root);
    rc = 0;
out:
    sl_arena_free(a);
    return rc;
}
