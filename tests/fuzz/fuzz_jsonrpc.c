/* fuzz_jsonrpc.c: jsonrpc_parse on any bytes.
 *
 * Properties: no crash, leak or undefined behaviour; a refusal says why (code, message, an id
 * that is JSON); an accepted message keeps the guarantees json.h promises for a parsed tree
 * (valid UTF-8 everywhere, no duplicate keys, depth and sizes within base.h's limits) and the
 * JSON-RPC shape its kind says; the input is that one object and JSON whitespace around it
 * (RFC 8259: space, tab, CR, LF; nothing trailing); and writing it back with json_write gives one line that parses
 * again to a message of the same kind, which writes back to the same bytes (stable). */
#include "fuzz.h"

#include "jsonrpc.h"

static void check_tree(const struct json *v, size_t depth)
{
    FUZZ_CHECK(v != NULL);
    switch (v->type) {
    case JSON_NULL:
    case JSON_BOOL:
        break;
    case JSON_NUMBER:
        FUZZ_CHECK(v->u.num.len > 0 && v->u.num.len <= SL_MAX_NUMBER);
        break;
    case JSON_STRING:
        FUZZ_CHECK(sl_utf8_valid(v->u.str.p, v->u.str.len));
        break;
    case JSON_ARRAY:
        FUZZ_CHECK(depth < SL_MAX_DEPTH && v->u.arr.n <= SL_MAX_MEMBERS);
        for (size_t i = 0; i < v->u.arr.n; i++)
            check_tree(v->u.arr.v[i], depth + 1);
        break;
    case JSON_OBJECT:
        FUZZ_CHECK(depth < SL_MAX_DEPTH && v->u.obj.n <= SL_MAX_MEMBERS);
        for (size_t i = 0; i < v->u.obj.n; i++) {
            struct sl_str k = v->u.obj.v[i].key;
            FUZZ_CHECK(sl_utf8_valid(k.p, k.len));
            FUZZ_CHECK(k.len == 0 || memchr(k.p, '\0', k.len) == NULL);
            for (size_t j = 0; j < i; j++) /* quadratic, but fuzz inputs are small */
                FUZZ_CHECK(!sl_str_eq(k, v->u.obj.v[j].key));
            check_tree(v->u.obj.v[i].val, depth + 1);
        }
        break;
    default:
        FUZZ_CHECK(!"unknown JSON type");
    }
}

static void check_shape(const struct jsonrpc_msg *m)
{
    FUZZ_CHECK(m->root != NULL && m->root->type == JSON_OBJECT);
    FUZZ_CHECK(json_str_is(json_get(m->root, "jsonrpc"), "2.0"));
    switch (m->kind) {
    case JSONRPC_REQUEST:
        FUZZ_CHECK(m->id && (m->id->type == JSON_STRING || m->id->type == JSON_NUMBER));
        /* fall through */
    case JSONRPC_NOTIFICATION:
        FUZZ_CHECK(json_get(m->root, "method") && json_get(m->root, "method")->type == JSON_STRING);
        FUZZ_CHECK(!json_get(m->root, "result") && !json_get(m->root, "error"));
        FUZZ_CHECK(!m->params || m->params->type == JSON_OBJECT || m->params->type == JSON_ARRAY);
        break;
    case JSONRPC_RESULT:
        FUZZ_CHECK(m->result && !m->error && m->id);
        break;
    case JSONRPC_ERROR:
        FUZZ_CHECK(m->error && !m->result && m->id);
        FUZZ_CHECK(json_get(m->error, "code")->type == JSON_NUMBER);
        FUZZ_CHECK(json_get(m->error, "message")->type == JSON_STRING);
        break;
    default:
        FUZZ_CHECK(!"unknown kind");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct jsonrpc_msg *m = NULL;
    struct jsonrpc_parse_error err;
    if (jsonrpc_parse((const char *)data, size, &m, &err) != 0) {
        FUZZ_CHECK(m == NULL);
        FUZZ_CHECK(err.code == JSONRPC_PARSE_ERROR || err.code == JSONRPC_INVALID_REQUEST);
        FUZZ_CHECK(err.msg[0] != '\0' && memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
        /* err.id goes into the error response as JSON text: it must be JSON. */
        FUZZ_CHECK(memchr(err.id, '\0', sizeof(err.id)) != NULL);
        struct sl_arena *a = sl_arena_new();
        struct json *id;
        char e[160];
        FUZZ_CHECK(json_parse(err.id, strlen(err.id), a, &id, e, sizeof(e)) == 0);
        FUZZ_CHECK(id->type == JSON_NULL || id->type == JSON_STRING || id->type == JSON_NUMBER);
        sl_arena_free(a);
        return 0;
    }
    check_tree(m->root, 0);
    check_shape(m);
    size_t first = 0, last = size;
    while (first < size && strchr(" \t\r\n", data[first]) && data[first] != '\0')
        first++;
    while (last > first && strchr(" \t\r\n", data[last - 1]) && data[last - 1] != '\0')
        last--;
    if (!(last - first >= 2 && data[first] == '{' && data[last - 1] == '}')) {
        fprintf(stderr, "accepted a message with bytes around the object: %.*s\n", (int)size,
                (const char *)data);
        FUZZ_CHECK(!"only JSON whitespace may surround the message");
    }

    struct sl_buf w1 = { 0 }, w2 = { 0 };
    json_write(&w1, m->root);
    FUZZ_CHECK(memchr(w1.p, '\n', w1.len) == NULL); /* one stdio frame */
    FUZZ_CHECK(sl_utf8_valid(w1.p, w1.len));
    struct jsonrpc_msg *m2 = NULL;
    struct jsonrpc_parse_error err2;
    if (jsonrpc_parse(w1.p, w1.len, &m2, &err2) != 0) {
        fprintf(stderr, "written back: %s\nrefused: %s\n", w1.p, err2.msg);
        FUZZ_CHECK(!"json_write output does not parse again");
    }
    FUZZ_CHECK(m2->kind == m->kind);
    FUZZ_CHECK(sl_str_eq(m2->method, m->method));
    json_write(&w2, m2->root);
    FUZZ_CHECK(w1.len == w2.len && memcmp(w1.p, w2.p, w1.len) == 0);
    sl_buf_free(&w1);
    sl_buf_free(&w2);
    jsonrpc_msg_free(m2);
    jsonrpc_msg_free(m);
    return 0;
}
