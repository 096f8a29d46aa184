/* demo.c: the demo upstream. One blocking loop: read bytes, cut lines, parse each line into a
 * fresh arena, answer requests, ignore notifications and responses. No libevent: it runs in its
 * own process or thread, on plain descriptors, exactly as an external upstream would. */
#include "demo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "jsonrpc.h"

#define DEMO_MAX_LINE  (1u << 20)  /* bytes in one request line, newline excluded */
#define DEMO_MAX_FILES 64
#define DEMO_MAX_FILE  (64u << 10) /* bytes of one file's content */
#define DEMO_MAX_PATH  1024
#define DEMO_READ_SIZE (64u << 10)

/* Latest first: the answer to a version we do not know (PROTOCOL §4.1: SHOULD be our latest). */
static const char *const demo_versions[] = { "2025-11-25", "2025-06-18", "2025-03-26" };

struct demo_file {
    char *path;
    size_t path_len;
    char *data;
    size_t len;
};

struct demo {
    int out_fd;
    struct demo_file files[DEMO_MAX_FILES]; /* in creation order */
    size_t nfiles;
    struct sl_buf line;  /* the line being read */
    bool skipping;       /* inside a line longer than DEMO_MAX_LINE, dropping bytes to its end */
    struct sl_buf reply; /* reused for every response */
};

/* ===== the file store ===== */

static int file_find(const struct demo *d, struct sl_str path)
{
    for (size_t i = 0; i < d->nfiles; i++)
        if (sl_str_eq((struct sl_str){ d->files[i].path, d->files[i].path_len }, path))
            return (int)i;
    return -1;
}

/* Creates or replaces; the caller has checked the limits. */
static void file_put(struct demo *d, struct sl_str path, struct sl_str data)
{
    int i = file_find(d, path);
    struct demo_file *f = &d->files[i >= 0 ? (size_t)i : d->nfiles++];
    if (i < 0) {
        f->path = sl_xstrndup(path.p, path.len);
        f->path_len = path.len;
    }
    free(f->data);
    f->data = sl_xstrndup(data.p, data.len);
    f->len = data.len;
}

static void file_remove(struct demo *d, size_t i)
{
    free(d->files[i].path);
    free(d->files[i].data);
    memmove(&d->files[i], &d->files[i + 1], (d->nfiles - i - 1) * sizeof(d->files[0]));
    d->nfiles--;
}

/* ===== output ===== */

static int write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "demo: write: %s\n", n < 0 ? strerror(errno) : "wrote nothing");
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Starts a response; id NULL is written as null (an id we could not read). Ids are echoed with
 * json_write, which keeps a number's literal text, so 1.0 stays 1.0 and big ids stay exact. */
static void reply_begin(struct demo *d, const struct json *id)
{
    sl_buf_reset(&d->reply);
    sl_buf_puts(&d->reply, "{\"jsonrpc\":\"2.0\",\"id\":");
    if (id)
        json_write(&d->reply, id);
    else
        sl_buf_puts(&d->reply, "null");
}

static int send_result(struct demo *d, const struct json *id, const struct json *result)
{
    reply_begin(d, id);
    sl_buf_puts(&d->reply, ",\"result\":");
    json_write(&d->reply, result);
    sl_buf_puts(&d->reply, "}\n");
    return write_all(d->out_fd, d->reply.p, d->reply.len);
}

static int send_error(struct demo *d, const struct json *id, int code, struct sl_str message)
{
    reply_begin(d, id);
    sl_buf_printf(&d->reply, ",\"error\":{\"code\":%d,\"message\":", code);
    json_write_string(&d->reply, message.p, message.len);
    sl_buf_puts(&d->reply, "}}\n");
    return write_all(d->out_fd, d->reply.p, d->reply.len);
}

/* ===== tools ===== */

/* Tool execution problems are results with isError (PROTOCOL §6.3), so the model can read them. */
struct tool_out {
    struct sl_buf text;
    bool is_error;
};

static const char tools_list_json[] =
    "{\"tools\":["
    "{\"name\":\"list_directory\","
    "\"description\":\"List every file in the demo store, with its size in bytes.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false},"
    "\"annotations\":{\"readOnlyHint\":true}},"
    "{\"name\":\"read_text_file\","
    "\"description\":\"Read one file from the demo store and return its text.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\",\"description\":\"Absolute path, e.g. /notes.txt\"}},"
    "\"required\":[\"path\"],\"additionalProperties\":false},"
    "\"annotations\":{\"readOnlyHint\":true}},"
    "{\"name\":\"write_file\","
    "\"description\":\"Create a file in the demo store, or replace its whole content.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\",\"description\":\"Absolute path, e.g. /notes.txt\"},"
    "\"content\":{\"type\":\"string\",\"description\":\"The new text of the file\"}},"
    "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}},"
    "{\"name\":\"delete_file\","
    "\"description\":\"Delete one file from the demo store. It cannot be undone.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\",\"description\":\"Absolute path, e.g. /notes.txt\"}},"
    "\"required\":[\"path\"],\"additionalProperties\":false},"
    "\"annotations\":{\"destructiveHint\":true}}"
    "]}";

/* Fetches a string argument, or says in out why it cannot. */
static bool arg_string(const struct json *args, const char *key, struct sl_str *val,
                       struct tool_out *out)
{
    const struct json *v = json_get(args, key);
    if (v == NULL || v->type != JSON_STRING) {
        sl_buf_printf(&out->text, "argument \"%s\" is required and must be a string", key);
        out->is_error = true;
        return false;
    }
    *val = v->u.str;
    return true;
}

static bool arg_path(const struct json *args, struct sl_str *path, struct tool_out *out)
{
    if (!arg_string(args, "path", path, out))
        return false;
    if (path->len == 0 || path->p[0] != '/' || path->len > DEMO_MAX_PATH) {
        sl_buf_printf(&out->text, "path must start with / and be at most %u bytes",
                      DEMO_MAX_PATH);
        out->is_error = true;
        return false;
    }
    return true;
}

static void not_found(struct sl_str path, struct tool_out *out)
{
    sl_buf_puts(&out->text, "no such file: ");
    sl_buf_put(&out->text, path.p, path.len);
    out->is_error = true;
}

static void tool_list_directory(struct demo *d, const struct json *args, struct tool_out *out)
{
    (void)args;
    if (d->nfiles == 0)
        sl_buf_puts(&out->text, "(no files)");
    for (size_t i = 0; i < d->nfiles; i++) {
        if (i)
            sl_buf_putc(&out->text, '\n');
        sl_buf_put(&out->text, d->files[i].path, d->files[i].path_len);
        sl_buf_printf(&out->text, " (%zu bytes)", d->files[i].len);
    }
}

static void tool_read_text_file(struct demo *d, const struct json *args, struct tool_out *out)
{
    struct sl_str path;
    if (!arg_path(args, &path, out))
        return;
    int i = file_find(d, path);
    if (i < 0)
        not_found(path, out);
    else
        sl_buf_put(&out->text, d->files[i].data, d->files[i].len);
}

static void tool_write_file(struct demo *d, const struct json *args, struct tool_out *out)
{
    struct sl_str path, content;
    if (!arg_path(args, &path, out) || !arg_string(args, "content", &content, out))
        return;
    out->is_error = true;
    if (content.len > DEMO_MAX_FILE) {
        sl_buf_printf(&out->text, "content is %zu bytes; the demo store keeps at most %u",
                      content.len, DEMO_MAX_FILE);
        return;
    }
    if (file_find(d, path) < 0 && d->nfiles == DEMO_MAX_FILES) {
        sl_buf_printf(&out->text, "the demo store is full (%d files)", DEMO_MAX_FILES);
        return;
    }
    out->is_error = false;
    file_put(d, path, content);
    sl_buf_printf(&out->text, "wrote %zu bytes to ", content.len);
    sl_buf_put(&out->text, path.p, path.len);
}

static void tool_delete_file(struct demo *d, const struct json *args, struct tool_out *out)
{
    struct sl_str path;
    if (!arg_path(args, &path, out))
        return;
    int i = file_find(d, path);
    if (i < 0) {
        not_found(path, out);
        return;
    }
    file_remove(d, (size_t)i);
    sl_buf_puts(&out->text, "deleted ");
    sl_buf_put(&out->text, path.p, path.len);
}

typedef void tool_fn(struct demo *d, const struct json *args, struct tool_out *out);

static const struct {
    const char *name;
    tool_fn *fn;
} demo_tools[] = {
    { "list_directory", tool_list_directory },
    { "read_text_file", tool_read_text_file },
    { "write_file", tool_write_file },
    { "delete_file", tool_delete_file },
};

/* ===== methods ===== */

/* Each method answers the request itself (result or error); returns -1 only if writing failed. */
typedef int method_fn(struct demo *d, struct sl_arena *a, const struct json *id,
                      const struct json *params);

static int m_initialize(struct demo *d, struct sl_arena *a, const struct json *id,
                        const struct json *params)
{
    const char *version = demo_versions[0];
    for (size_t i = 0; i < SL_ARRAY_LEN(demo_versions); i++)
        if (json_str_is(json_get(params, "protocolVersion"), demo_versions[i]))
            version = demo_versions[i];
    struct json *caps = json_new_object(a), *info = json_new_object(a), *r = json_new_object(a);
    json_set(a, caps, "tools", json_new_object(a));
    json_set(a, info, "name", json_new_string(a, "sluice-demo", 11));
    json_set(a, info, "version", json_new_string(a, SLUICE_VERSION, strlen(SLUICE_VERSION)));
    json_set(a, r, "protocolVersion", json_new_string(a, version, strlen(version)));
    json_set(a, r, "capabilities", caps);
    json_set(a, r, "serverInfo", info);
    static const char instr[] = "A toy in-memory file store for trying sluice.";
    json_set(a, r, "instructions", json_new_string(a, instr, sizeof(instr) - 1));
    return send_result(d, id, r);
}

static int m_ping(struct demo *d, struct sl_arena *a, const struct json *id,
                  const struct json *params)
{
    (void)params;
    return send_result(d, id, json_new_object(a));
}

static int m_tools_list(struct demo *d, struct sl_arena *a, const struct json *id,
                        const struct json *params)
{
    (void)params;
    /* Parsed rather than pasted, so a typo in the table fails loudly instead of going out. */
    struct json *r;
    char err[160];
    SL_REQUIRE(json_parse(tools_list_json, sizeof(tools_list_json) - 1, a, &r, err,
                          sizeof(err)) == 0);
    return send_result(d, id, r);
}

static struct json *tool_result(struct sl_arena *a, const struct tool_out *out)
{
    struct json *block = json_new_object(a), *content = json_new_array(a);
    struct json *r = json_new_object(a);
    json_set(a, block, "type", json_new_string(a, "text", 4));
    json_set(a, block, "text", json_new_string(a, out->text.p ? out->text.p : "", out->text.len));
    json_push(a, content, block);
    json_set(a, r, "content", content);
    json_set(a, r, "isError", json_new_bool(a, out->is_error));
    return r;
}

static int m_tools_call(struct demo *d, struct sl_arena *a, const struct json *id,
                        const struct json *params)
{
    const struct json *name = json_get(params, "name"), *args = json_get(params, "arguments");
    if (name == NULL || name->type != JSON_STRING)
        return send_error(d, id, JSONRPC_INVALID_PARAMS, SL_STR("params.name must be a string"));
    if (args != NULL && args->type != JSON_OBJECT)
        return send_error(d, id, JSONRPC_INVALID_PARAMS,
                          SL_STR("params.arguments must be an object"));
    for (size_t i = 0; i < SL_ARRAY_LEN(demo_tools); i++) {
        if (!json_str_is(name, demo_tools[i].name))
            continue;
        struct tool_out out = { { 0 }, false };
        demo_tools[i].fn(d, args, &out);
        int rc = send_result(d, id, tool_result(a, &out));
        sl_buf_free(&out.text);
        return rc;
    }
    /* An unknown tool is a protocol error, not a tool error (PROTOCOL §6.3). */
    struct sl_buf msg = { 0 };
    sl_buf_puts(&msg, "unknown tool: ");
    sl_buf_put(&msg, name->u.str.p, name->u.str.len);
    int rc = send_error(d, id, JSONRPC_INVALID_PARAMS, sl_buf_str(&msg));
    sl_buf_free(&msg);
    return rc;
}

static const struct {
    const char *name;
    method_fn *fn;
} demo_methods[] = {
    { "initialize", m_initialize },
    { "ping", m_ping },
    { "tools/list", m_tools_list },
    { "tools/call", m_tools_call },
};

/* ===== one message ===== */

static bool id_usable(const struct json *id)
{
    return id != NULL && (id->type == JSON_STRING || id->type == JSON_NUMBER);
}

/* Notifications are never answered, whatever their method; responses from the client (we send
 * no requests, so they answer nothing) are dropped. */
static int handle_message(struct demo *d, struct sl_arena *a, const struct json *msg)
{
    const struct json *id = msg->type == JSON_OBJECT ? json_get(msg, "id") : NULL;
    const struct json *method = json_get(msg, "method");
    const struct json *params = json_get(msg, "params");
    if (method == NULL && id != NULL && (json_get(msg, "result") || json_get(msg, "error")))
        return 0;
    if (method != NULL && method->type == JSON_STRING && id == NULL)
        return 0;
    const struct json *reply_id = id_usable(id) ? id : NULL;
    if (method == NULL || method->type != JSON_STRING || reply_id == NULL ||
        !json_str_is(json_get(msg, "jsonrpc"), "2.0"))
        return send_error(d, reply_id, JSONRPC_INVALID_REQUEST, SL_STR("Invalid Request"));
    if (params != NULL && params->type != JSON_OBJECT)
        return send_error(d, reply_id, JSONRPC_INVALID_PARAMS, SL_STR("params must be an object"));
    for (size_t i = 0; i < SL_ARRAY_LEN(demo_methods); i++)
        if (sl_str_eq_c(method->u.str, demo_methods[i].name))
            return demo_methods[i].fn(d, a, reply_id, params);
    return send_error(d, reply_id, JSONRPC_METHOD_NOT_FOUND, SL_STR("Method not found"));
}

static bool blank(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
            return false;
    return true;
}

static int handle_line(struct demo *d, const char *p, size_t len)
{
    if (len > 0 && p[len - 1] == '\r') /* tolerate CRLF, as the SDK readers do */
        len--;
    if (blank(p, len))
        return 0;
    struct sl_arena *a = sl_arena_new();
    struct json *msg;
    char err[160];
    int rc;
    if (json_parse(p, len, a, &msg, err, sizeof(err)) != 0) {
        fprintf(stderr, "demo: unreadable line: %s\n", err);
        rc = send_error(d, NULL, JSONRPC_PARSE_ERROR, SL_STR("Parse error"));
    } else {
        rc = handle_message(d, a, msg);
    }
    sl_arena_free(a);
    return rc;
}

/* ===== lines ===== */

/* The end of a line was reached: answer it, or, if it was too long, say so and resynchronize. */
static int line_end(struct demo *d)
{
    int rc;
    if (d->skipping) {
        fprintf(stderr, "demo: skipped a line over %u bytes\n", DEMO_MAX_LINE);
        rc = send_error(d, NULL, JSONRPC_PARSE_ERROR, SL_STR("Parse error: line too long"));
    } else {
        rc = handle_line(d, d->line.p, d->line.len);
    }
    d->skipping = false;
    sl_buf_reset(&d->line);
    return rc;
}

static int feed(struct demo *d, const char *p, size_t n)
{
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;
        if (!d->skipping && d->line.len + take > DEMO_MAX_LINE) {
            d->skipping = true;
            sl_buf_free(&d->line); /* give the megabyte back while we skip */
        }
        if (!d->skipping)
            sl_buf_put(&d->line, p, take);
        if (nl != NULL) {
            if (line_end(d) != 0)
                return -1;
            take++;
        }
        p += take;
        n -= take;
    }
    return 0;
}

static void demo_init(struct demo *d, int out_fd)
{
    memset(d, 0, sizeof(*d));
    d->out_fd = out_fd;
    file_put(d, SL_STR("/notes.txt"), SL_STR("hello from the sluice demo\n"));
}

static void demo_free(struct demo *d)
{
    while (d->nfiles > 0)
        file_remove(d, d->nfiles - 1);
    sl_buf_free(&d->line);
    sl_buf_free(&d->reply);
}

int demo_upstream_run(int in_fd, int out_fd)
{
    struct demo d;
    demo_init(&d, out_fd);
    char *chunk = sl_xmalloc(DEMO_READ_SIZE);
    int rc;
    for (;;) {
        ssize_t n = read(in_fd, chunk, DEMO_READ_SIZE);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf(stderr, "demo: read: %s\n", strerror(errno));
            rc = -1;
            break;
        }
        if (n == 0) { /* a last line without its newline still gets an answer */
            rc = (d.skipping || d.line.len > 0) ? line_end(&d) : 0;
            break;
        }
        if (feed(&d, chunk, (size_t)n) != 0) {
            rc = -1;
            break;
        }
    }
    free(chunk);
    demo_free(&d);
    return rc;
}
