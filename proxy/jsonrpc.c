/* jsonrpc.c: strict JSON (yajl streaming callbacks) and JSON-RPC 2.0 message shape.
 *
 * The tree is built from yajl's callbacks into an arena. Containers collect their children in a
 * malloc'd vector while open and move them into the arena when they close, which is also where
 * duplicate keys are detected. Any refusal cancels the parse (a callback returns 0) with the reason
 * kept in the parse context. */
#include "jsonrpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

/* ===== the tree builder ===== */

/* One open container. Its member and item arrays are scratch space that the next container at
 * the same depth reuses: a finished container is copied into the arena, so one message costs
 * a few allocations rather than one per object. */
struct frame {
    struct json *node;        /* the container being filled */
    struct json_member *mem;  /* objects: members so far */
    struct json **items;      /* arrays: items so far */
    size_t n, mem_cap, items_cap;
    struct sl_str key;        /* objects: the key awaiting its value */
};

struct parse_ctx {
    struct sl_arena *arena;
    yajl_handle h;
    size_t end;               /* where the top-level value ended */
    size_t len;               /* of the input; a value yajl finishes at completion ends there */
    bool completing;
    struct frame stack[SL_MAX_DEPTH];
    size_t depth;
    size_t touched;           /* frames below this hold scratch arrays (maybe NULL) */
    struct json *root;
    char err[160];            /* our own refusal; empty when yajl found the problem */
};

static int refuse(struct parse_ctx *c, const char *msg)
{
    if (c->err[0] == '\0')
        snprintf(c->err, sizeof(c->err), "%s", msg);
    return 0;
}

static int grow(struct parse_ctx *c, struct frame *f, size_t elem)
{
    if (f->n >= SL_MAX_MEMBERS)
        return refuse(c, "too many members in one object or array");
    bool obj = f->node->type == JSON_OBJECT;
    size_t *cap = obj ? &f->mem_cap : &f->items_cap;
    if (f->n < *cap)
        return 1;
    size_t want = *cap ? *cap * 2 : 8;
    void **vec = obj ? (void **)&f->mem : (void **)&f->items;
    *vec = sl_xrealloc(*vec, want * elem);
    *cap = want;
    return 1;
}

/* Attach a finished value to the open container, or make it the root. */
static int attach(struct parse_ctx *c, struct json *v)
{
    if (c->depth == 0) {
        c->root = v;
        c->end = c->completing ? c->len : yajl_get_bytes_consumed(c->h);
        return 1;
    }
    struct frame *f = &c->stack[c->depth - 1];
    if (f->node->type == JSON_ARRAY) {
        if (!grow(c, f, sizeof(*f->items)))
            return 0;
        f->items[f->n++] = v;
    } else {
        if (!grow(c, f, sizeof(*f->mem)))
            return 0;
        f->mem[f->n].key = f->key;
        f->mem[f->n++].val = v;
    }
    return 1;
}

static int check_text(struct parse_ctx *c, const unsigned char *s, size_t len)
{
    if (len > SL_MAX_STRING)
        return refuse(c, "string too long");
    if (!sl_utf8_valid((const char *)s, len))
        return refuse(c, "invalid UTF-8 in string");
    return 1;
}

static int on_null(void *ctx)
{
    struct parse_ctx *c = ctx;
    return attach(c, json_new_null(c->arena));
}

static int on_bool(void *ctx, int b)
{
    struct parse_ctx *c = ctx;
    return attach(c, json_new_bool(c->arena, b != 0));
}

static int on_number(void *ctx, const char *s, size_t len)
{
    struct parse_ctx *c = ctx;
    if (len > SL_MAX_NUMBER)
        return refuse(c, "number literal too long");
    struct json *v = sl_arena_alloc(c->arena, sizeof(*v));
    v->type = JSON_NUMBER;
    v->u.num = (struct sl_str){ sl_arena_strndup(c->arena, s, len), len };
    return attach(c, v);
}

static int on_string(void *ctx, const unsigned char *s, size_t len)
{
    struct parse_ctx *c = ctx;
    if (!check_text(c, s, len))
        return 0;
    return attach(c, json_new_string(c->arena, (const char *)s, len));
}

static int open_container(struct parse_ctx *c, enum json_type t)
{
    if (c->depth >= SL_MAX_DEPTH)
        return refuse(c, "nesting too deep");
    struct json *v = sl_arena_alloc(c->arena, sizeof(*v));
    v->type = t;
    struct frame *f = &c->stack[c->depth];
    if (c->depth == c->touched) {
        f->mem = NULL, f->items = NULL;
        f->mem_cap = f->items_cap = 0;
        c->touched++;
    }
    c->depth++;
    f->node = v;
    f->n = 0;
    f->key = SL_STR_NULL;
    return 1;
}

static int on_start_map(void *ctx)
{
    return open_container(ctx, JSON_OBJECT);
}

static int on_start_array(void *ctx)
{
    return open_container(ctx, JSON_ARRAY);
}

static int on_key(void *ctx, const unsigned char *s, size_t len)
{
    struct parse_ctx *c = ctx;
    if (!check_text(c, s, len))
        return 0;
    /* A key with NUL reads as a shorter key to C peers: "name\u0000" would be a second "name". */
    if (memchr(s, '\0', len))
        return refuse(c, "NUL in an object key");
    c->stack[c->depth - 1].key =
        (struct sl_str){ sl_arena_strndup(c->arena, (const char *)s, len), len };
    return 1;
}

static int key_cmp(const void *a, const void *b)
{
    const struct sl_str *x = &((const struct json_member *)a)->key;
    const struct sl_str *y = &((const struct json_member *)b)->key;
    size_t n = x->len < y->len ? x->len : y->len;
    int r = n ? memcmp(x->p, y->p, n) : 0;
    return r ? r : (x->len > y->len) - (x->len < y->len);
}

/* Duplicate keys are a policy-bypass vector (PROTOCOL.md §8.5): refuse them at any depth.
 * Small objects (most of them) compare pairwise; larger ones sort a scratch copy so they cost
 * n log n, not n². */
static bool has_duplicate_key(const struct json_member *m, size_t n)
{
    if (n < 2)
        return false;
    if (n <= 16) {
        for (size_t i = 1; i < n; i++)
            for (size_t j = 0; j < i; j++)
                if (key_cmp(&m[i], &m[j]) == 0)
                    return true;
        return false;
    }
    struct json_member *tmp = sl_xmalloc(n * sizeof(*tmp));
    memcpy(tmp, m, n * sizeof(*tmp));
    qsort(tmp, n, sizeof(*tmp), key_cmp);
    bool dup = false;
    for (size_t i = 1; i < n && !dup; i++)
        dup = key_cmp(&tmp[i - 1], &tmp[i]) == 0;
    free(tmp);
    return dup;
}

static int close_container(void *ctx)
{
    struct parse_ctx *c = ctx;
    struct frame *f = &c->stack[--c->depth];
    struct json *v = f->node;
    int ok = 1;
    if (v->type == JSON_OBJECT) {
        if (has_duplicate_key(f->mem, f->n)) {
            ok = refuse(c, "duplicate key in object");
        } else {
            v->u.obj.n = f->n;
            v->u.obj.v = sl_arena_alloc(c->arena, (f->n ? f->n : 1) * sizeof(*f->mem));
            if (f->n)
                memcpy(v->u.obj.v, f->mem, f->n * sizeof(*f->mem));
        }
    } else {
        v->u.arr.n = f->n;
        v->u.arr.v = sl_arena_alloc(c->arena, (f->n ? f->n : 1) * sizeof(*f->items));
        if (f->n)
            memcpy(v->u.arr.v, f->items, f->n * sizeof(*f->items));
    }
    return ok ? attach(c, v) : 0;
}

static const yajl_callbacks callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_bool,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_key,
    .yajl_end_map = close_container,
    .yajl_start_array = on_start_array,
    .yajl_end_array = close_container,
};

/* ===== surrogate escapes ===== */

static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0'
              : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
              : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v << 4 | d;
    }
    return v;
}

/* yajl turns a lone high surrogate escape into '?' and pairs a high surrogate with any following
 * \u escape, so "\ud800" and "?" would parse alike. Scan the escapes ourselves and refuse any
 * surrogate escape that is not a proper high+low pair. Other syntax is left to yajl. */
static bool surrogates_ok(const char *s, size_t len)
{
    if (memmem(s, len, "\\u", 2) == NULL)
        return true; /* no \u escape at all (the usual case): nothing to check */
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        if (!in_str) {
            in_str = s[i] == '"';
            continue;
        }
        if (s[i] == '"') {
            in_str = false;
        } else if (s[i] == '\\' && i + 1 < len) {
            if (s[i + 1] != 'u' || i + 6 > len) {
                i++;
                continue;
            }
            int u = hex4(s + i + 2);
            if (u >= 0xDC00 && u <= 0xDFFF)
                return false;
            if (u >= 0xD800 && u <= 0xDBFF) {
                if (i + 12 > len || s[i + 6] != '\\' || s[i + 7] != 'u')
                    return false;
                int lo = hex4(s + i + 8);
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return false;
                i += 6;
            }
            i += 5;
        }
    }
    return true;
}

/* ===== parsing ===== */

/* yajl allocates a handle, a lexer, buffers and a byte stack for every parse and has no reset:
 * a dozen malloc/free pairs per message, a tenth of a proxied call's cost. Its allocations come
 * from this block instead, emptied when a parse begins; what does not fit goes to the heap.
 * Under AddressSanitizer yajl keeps the heap, so its buffers stay checked. */
#if defined(__SANITIZE_ADDRESS__)
#define YSCRATCH 0u
#else
#define YSCRATCH (16u << 10)
#endif

struct yblock {
    size_t size;                 /* what was asked for */
    size_t pad;                  /* keeps the data 16-byte aligned */
};

static _Alignas(16) unsigned char yscratch[YSCRATCH + 16];
static size_t yused;

static bool in_yscratch(const void *p)
{
    uintptr_t u = (uintptr_t)p, lo = (uintptr_t)yscratch;
    return u >= lo && u < lo + YSCRATCH;
}

static void *y_malloc(void *ctx, size_t n)
{
    (void)ctx;
    size_t need = sizeof(struct yblock) + ((n + 15) & ~(size_t)15);
    if (n > YSCRATCH || need > YSCRATCH - yused)
        return sl_xmalloc(n ? n : 1);
    struct yblock *b = (struct yblock *)(void *)(yscratch + yused);
    b->size = n;
    yused += need;
    return b + 1;
}

static void *y_realloc(void *ctx, void *p, size_t n)
{
    if (p == NULL)
        return y_malloc(ctx, n);
    if (!in_yscratch(p))
        return sl_xrealloc(p, n ? n : 1);
    struct yblock *b = (struct yblock *)p - 1;
    if (n <= b->size)
        return p;
    void *q = y_malloc(ctx, n);
    memcpy(q, p, b->size);
    return q;
}

static void y_free(void *ctx, void *p)
{
    (void)ctx;
    if (!in_yscratch(p))
        free(p);
}

static yajl_alloc_funcs yfuncs = { y_malloc, y_realloc, y_free, NULL };

/* The parse context, with its frames' scratch vectors, is kept from one parse to the next: it is
 * 4 KiB, and allocating it per message made glibc consolidate its free lists every time. Vectors
 * grown past KEEP_MEMBERS by a large message are given back after it. */
#define KEEP_MEMBERS 256u

static struct parse_ctx *ctx_kept;
static bool ctx_busy;

static struct parse_ctx *ctx_take(void)
{
    SL_REQUIRE(!ctx_busy); /* one parse at a time: no callback parses */
    if (ctx_kept == NULL) {
        ctx_kept = sl_xmalloc(sizeof(*ctx_kept));
        ctx_kept->touched = 0;
    }
    ctx_busy = true;
    yused = 0;
    return ctx_kept;
}

static void ctx_give_back(struct parse_ctx *c)
{
    for (size_t i = 0; i < c->touched; i++) {
        struct frame *f = &c->stack[i];
        if (f->mem_cap > KEEP_MEMBERS) {
            free(f->mem);
            f->mem = NULL;
            f->mem_cap = 0;
        }
        if (f->items_cap > KEEP_MEMBERS) {
            free(f->items);
            f->items = NULL;
            f->items_cap = 0;
        }
    }
    c->depth = 0;
    ctx_busy = false;
}

int json_parse(const char *buf, size_t len, struct sl_arena *a, struct json **out,
               char *err, size_t errlen)
{
    if (len > SL_MAX_MESSAGE) {
        snprintf(err, errlen, "message too large (%zu bytes, limit %u)", len, SL_MAX_MESSAGE);
        return -1;
    }
    if (!surrogates_ok(buf, len)) {
        snprintf(err, errlen, "lone or mismatched surrogate escape in string");
        return -1;
    }
    /* Not cleared: the frame stack (64 frames) is written frame by frame as containers open. */
    struct parse_ctx *c = ctx_take();
    c->arena = a;
    c->depth = 0;
    c->root = NULL;
    c->err[0] = '\0';
    yajl_handle h = yajl_alloc(&callbacks, &yfuncs, c);
    SL_REQUIRE(h != NULL);
    c->h = h;
    c->end = 0;
    c->len = len;
    c->completing = false;
    /* yajl takes form feed and vertical tab for whitespace, and accepts the start of a second
     * token after the value ("1\"", "{}\"") when the input ends inside it. RFC 8259 does
     * neither: a raw FF or VT is never valid JSON, and only JSON whitespace may follow. */
    if (memchr(buf, '\f', len) || memchr(buf, '\v', len))
        refuse(c, "form feed or vertical tab outside a string");
    yajl_status st = c->err[0] ? yajl_status_error : yajl_parse(h, (const unsigned char *)buf, len);
    if (st == yajl_status_ok) {
        c->completing = true;
        st = yajl_complete_parse(h);
    }
    if (st == yajl_status_ok && c->root) {
        for (size_t i = c->end; i < len; i++) {
            if (buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\r' && buf[i] != '\n') {
                refuse(c, "bytes after the JSON value");
                st = yajl_status_error;
                break;
            }
        }
    }
    int rc = 0;
    if (st != yajl_status_ok || c->root == NULL) {
        if (c->err[0]) {
            snprintf(err, errlen, "%s", c->err);
        } else {
            unsigned char *m = yajl_get_error(h, 0, (const unsigned char *)buf, len);
            snprintf(err, errlen, "%s", m ? (const char *)m : "invalid JSON");
            size_t n = strlen(err);
            while (n > 0 && (err[n - 1] == '\n' || err[n - 1] == ' '))
                err[--n] = '\0';
            yajl_free_error(h, m);
        }
        rc = -1;
    }
    yajl_free(h);
    if (rc == 0)
        *out = c->root;
    ctx_give_back(c);
    return rc;
}

/* ===== JSON-RPC shape ===== */

static bool is_id(const struct json *v)
{
    return v != NULL && (v->type == JSON_STRING || v->type == JSON_NUMBER);
}

static int invalid(struct jsonrpc_parse_error *err, const char *msg)
{
    err->code = JSONRPC_INVALID_REQUEST;
    snprintf(err->msg, sizeof(err->msg), "%s", msg);
    return -1;
}

static int shape_request(struct jsonrpc_msg *m, struct jsonrpc_parse_error *err)
{
    struct json *method = json_get(m->root, "method");
    if (method->type != JSON_STRING)
        return invalid(err, "method must be a string");
    if (json_get(m->root, "result") || json_get(m->root, "error"))
        return invalid(err, "a request cannot carry result or error");
    m->method = method->u.str;
    m->params = json_get(m->root, "params");
    if (m->params && m->params->type != JSON_OBJECT && m->params->type != JSON_ARRAY)
        return invalid(err, "params must be an object or an array");
    if (m->id == NULL) {
        m->kind = JSONRPC_NOTIFICATION;
        return 0;
    }
    if (!is_id(m->id))
        return invalid(err, "id must be a string or a number");
    m->kind = JSONRPC_REQUEST;
    return 0;
}

static int shape_response(struct jsonrpc_msg *m, struct jsonrpc_parse_error *err)
{
    m->result = json_get(m->root, "result");
    m->error = json_get(m->root, "error");
    if ((m->result != NULL) == (m->error != NULL))
        return invalid(err, "a response carries exactly one of result and error");
    if (m->id == NULL || !(is_id(m->id) || (m->error && m->id->type == JSON_NULL)))
        return invalid(err, "a response needs a string or number id");
    if (m->result) {
        m->kind = JSONRPC_RESULT;
        return 0;
    }
    struct json *code = json_get(m->error, "code"), *msg = json_get(m->error, "message");
    if (code == NULL || code->type != JSON_NUMBER || msg == NULL || msg->type != JSON_STRING)
        return invalid(err, "error needs an integer code and a string message");
    m->kind = JSONRPC_ERROR;
    return 0;
}

int jsonrpc_parse(const char *buf, size_t len, struct jsonrpc_msg **out,
                  struct jsonrpc_parse_error *err)
{
    memset(err, 0, sizeof(*err));
    snprintf(err->id, sizeof(err->id), "null");
    struct jsonrpc_msg *m = sl_xcalloc(1, sizeof(*m));
    m->arena = sl_arena_new_sized(len * 4); /* the tree takes about four times the text */
    if (json_parse(buf, len, m->arena, &m->root, err->msg, sizeof(err->msg)) != 0) {
        err->code = JSONRPC_PARSE_ERROR;
        jsonrpc_msg_free(m);
        return -1;
    }
    int rc;
    if (m->root->type == JSON_ARRAY) {
        rc = invalid(err, "batches are not supported");
    } else if (m->root->type != JSON_OBJECT) {
        rc = invalid(err, "a message must be a JSON object");
    } else {
        m->id = json_get(m->root, "id");
        if (!json_str_is(json_get(m->root, "jsonrpc"), "2.0"))
            rc = invalid(err, "jsonrpc must be \"2.0\"");
        else if (json_get(m->root, "method"))
            rc = shape_request(m, err);
        else
            rc = shape_response(m, err);
    }
    if (rc != 0) {
        /* The refusal answers the message's id when it has a usable one. */
        if (is_id(m->id)) {
            struct sl_buf b = { 0 };
            json_write(&b, m->id);
            if (b.len < sizeof(err->id))
                memcpy(err->id, b.p, b.len + 1);
            sl_buf_free(&b);
        }
        jsonrpc_msg_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

void jsonrpc_msg_free(struct jsonrpc_msg *m)
{
    if (m == NULL)
        return;
    sl_arena_free(m->arena);
    free(m);
}

/* ===== writers ===== */

void jsonrpc_write_error(struct sl_buf *out, struct sl_str id_json, int code, const char *message,
                         const char *data_json)
{
    sl_buf_puts(out, "{\"jsonrpc\":\"2.0\",\"id\":");
    sl_buf_put(out, id_json.p, id_json.len);
    sl_buf_printf(out, ",\"error\":{\"code\":%d,\"message\":", code);
    json_write_string(out, message, strlen(message));
    if (data_json) {
        sl_buf_puts(out, ",\"data\":");
        sl_buf_puts(out, data_json);
    }
    sl_buf_puts(out, "}}");
}

void jsonrpc_write_result(struct sl_buf *out, struct sl_str id_json, struct sl_str result_json)
{
    sl_buf_puts(out, "{\"jsonrpc\":\"2.0\",\"id\":");
    sl_buf_put(out, id_json.p, id_json.len);
    sl_buf_puts(out, ",\"result\":");
    sl_buf_put(out, result_json.p, result_json.len);
    sl_buf_putc(out, '}');
}
