/* yajl_reader.c: sluice's JSON reader as it was on yajl (proxy/jsonrpc.c before 2026-11-30),
 * kept as the reference for fuzz_reader.c: the hand-written reader that replaced it must accept
 * exactly the texts this one accepts and build the same trees. Not part of sluice. */
#include "yajl_reader.h"

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

static void free_frames(struct parse_ctx *c)
{
    for (size_t i = 0; i < c->touched; i++) {
        free(c->stack[i].mem);
        free(c->stack[i].items);
    }
}

int yajl_json_parse(const char *buf, size_t len, struct sl_arena *a, struct json **out,
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
    struct parse_ctx *c = sl_xmalloc(sizeof(*c));
    c->arena = a;
    c->depth = c->touched = 0;
    c->root = NULL;
    c->err[0] = '\0';
    yajl_handle h = yajl_alloc(&callbacks, NULL, c);
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
    free_frames(c);
    free(c);
    return rc;
}

