/* json.c: reading, building and writing the value tree. Parsing lives in jsonrpc.c. */
#include "json.h"

#include <string.h>

#include "json_priv.h"

const bool json_plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

struct json *json_get_n(const struct json *v, const char *key, size_t len)
{
    if (v == NULL || v->type != JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < v->u.obj.n; i++) {
        const struct sl_str *k = &v->u.obj.v[i].key;
        if (k->len == len && memcmp(k->p, key, len) == 0)
            return v->u.obj.v[i].val;
    }
    return NULL;
}

bool json_is_true(const struct json *v)
{
    return v != NULL && v->type == JSON_BOOL && v->u.b;
}

static struct json *new_value(struct sl_arena *a, enum json_type t)
{
    struct json *v = sl_arena_alloc(a, sizeof(*v));
    v->type = t;
    return v;
}

struct json *json_new_null(struct sl_arena *a)
{
    return new_value(a, JSON_NULL);
}

struct json *json_new_bool(struct sl_arena *a, bool b)
{
    struct json *v = new_value(a, JSON_BOOL);
    v->u.b = b;
    return v;
}

struct json *json_new_number(struct sl_arena *a, const char *text)
{
    struct json *v = new_value(a, JSON_NUMBER);
    size_t len = strlen(text);
    v->u.num = (struct sl_str){ sl_arena_strndup(a, text, len), len };
    return v;
}

struct json *json_new_string(struct sl_arena *a, const char *p, size_t len)
{
    struct json *v = new_value(a, JSON_STRING);
    v->u.str = (struct sl_str){ sl_arena_strndup(a, p, len), len };
    return v;
}

struct json *json_new_object(struct sl_arena *a)
{
    return new_value(a, JSON_OBJECT);
}

struct json *json_new_array(struct sl_arena *a)
{
    return new_value(a, JSON_ARRAY);
}

/* An edit makes the container's text, and that of every container around it, stale. A container
 * that is not raw has none that is around it (the reader gives a container with whitespace or an
 * escape inside it none, and an edit clears up to the root), so the walk stops there. */
static void unraw(struct json *v)
{
    while (v != NULL && v->raw) {
        struct json *up = json_text_of(v)->parent;
        v->raw = false;
        v = up;
    }
}

/* The array v of container c (n entries of `size` bytes), with room for one more. Arena arrays
 * cannot be resized in place: a full one is copied into one twice as large (the old one is
 * abandoned to the arena), so n appends copy fewer than 2n entries and leave fewer than 4n
 * entries of arena behind. Growing by one entry at a time instead made every append copy the
 * whole array: a 10,000-member _meta rebuilt member by member cost seconds and a gigabyte. */
static void *room_for_one(struct sl_arena *a, struct json *c, void *v, size_t n, size_t size)
{
    if (c->cap_log2 != 0 && n < ((size_t)1 << c->cap_log2))
        return v;
    unsigned log2 = c->cap_log2 != 0 ? c->cap_log2 + 1u : 2u;
    while (((size_t)1 << log2) < n + 1)
        log2++;
    void *m = sl_arena_alloc_raw(a, ((size_t)1 << log2) * size);
    if (n)
        memcpy(m, v, n * size);
    c->cap_log2 = (uint8_t)log2;
    return m;
}

void json_append_key(struct sl_arena *a, struct json *o, struct sl_str k, struct json *val)
{
    SL_REQUIRE(o->type == JSON_OBJECT);
    unraw(o);
    struct json_member *m = room_for_one(a, o, o->u.obj.v, o->u.obj.n, sizeof(*m));
    m[o->u.obj.n].key = (struct sl_str){ sl_arena_strndup(a, k.p, k.len), k.len };
    m[o->u.obj.n].val = val;
    o->u.obj.v = m;
    o->u.obj.n++;
}

void json_set_key(struct sl_arena *a, struct json *o, struct sl_str k, struct json *val)
{
    SL_REQUIRE(o->type == JSON_OBJECT);
    for (size_t i = 0; i < o->u.obj.n; i++) {
        if (sl_str_eq(o->u.obj.v[i].key, k)) {
            unraw(o);
            o->u.obj.v[i].val = val;
            return;
        }
    }
    json_append_key(a, o, k, val);
}

bool json_del_key(struct json *o, struct sl_str k)
{
    if (o == NULL || o->type != JSON_OBJECT)
        return false;
    unraw(o);
    for (size_t i = 0; i < o->u.obj.n; i++) {
        if (sl_str_eq(o->u.obj.v[i].key, k)) {
            memmove(&o->u.obj.v[i], &o->u.obj.v[i + 1],
                    (o->u.obj.n - i - 1) * sizeof(o->u.obj.v[0]));
            o->u.obj.n--;
            return true;
        }
    }
    return false;
}

void json_push(struct sl_arena *a, struct json *arr, struct json *val)
{
    SL_REQUIRE(arr->type == JSON_ARRAY);
    unraw(arr);
    struct json **v = room_for_one(a, arr, arr->u.arr.v, arr->u.arr.n, sizeof(*v));
    v[arr->u.arr.n++] = val;
    arr->u.arr.v = v;
}

struct json *json_copy_object(struct sl_arena *a, const struct json *o)
{
    SL_REQUIRE(o->type == JSON_OBJECT);
    struct json *c = json_new_object(a);
    c->u.obj.n = o->u.obj.n;
    c->u.obj.v = sl_arena_alloc_raw(a, (o->u.obj.n ? o->u.obj.n : 1) * sizeof(*o->u.obj.v));
    if (o->u.obj.n)
        memcpy(c->u.obj.v, o->u.obj.v, o->u.obj.n * sizeof(*o->u.obj.v));
    return c;
}

struct json *json_verbatim(struct sl_arena *a, const struct json *v, struct sl_str text)
{
    static const struct json empty = { .type = JSON_OBJECT };
    SL_REQUIRE(text.len > 0 && memchr(text.p, '\0', text.len) == NULL);
    if (v == NULL)
        v = &empty;
    size_t n = v->type == JSON_OBJECT  ? v->u.obj.n * sizeof(*v->u.obj.v)
               : v->type == JSON_ARRAY ? v->u.arr.n * sizeof(*v->u.arr.v)
                                       : sizeof(*v);
    /* The text, then what json_text_of finds after it: the member or item array, or the value. */
    struct json_text *t = sl_arena_alloc_raw(a, sizeof(*t) + n);
    *t = (struct json_text){ sl_arena_strndup(a, text.p, text.len), text.len, NULL };
    struct json *c;
    if (v->type == JSON_OBJECT || v->type == JSON_ARRAY) {
        c = new_value(a, v->type);
        c->u = v->u;
        if (n)
            memcpy(t + 1, v->type == JSON_OBJECT ? (void *)v->u.obj.v : (void *)v->u.arr.v, n);
        if (v->type == JSON_OBJECT)
            c->u.obj.v = (struct json_member *)(void *)(t + 1);
        else
            c->u.arr.v = (struct json **)(void *)(t + 1);
    } else {
        c = (struct json *)(void *)(t + 1);
        *c = *v;
    }
    c->esc = false; /* the caller's text is what json_write gives */
    c->raw = true;
    c->cap_log2 = 0;
    return c;
}

/* The index of the first byte of p[0..len) that needs an escape, or len. */
static inline size_t plain_prefix(const char *p, size_t len)
{
    uint64_t high = 0; /* not needed here */
    const unsigned char *u = (const unsigned char *)p, *q = json_skip_plain(u, u + len, &high);
    while (q < u + len && json_plain[*q])
        q++;
    return (size_t)(q - u);
}

/* p[0..len) quoted as it is, with one copy: it needs no escape. */
static void write_quoted(struct sl_buf *out, const char *p, size_t len)
{
    if (out->len + len + 3 > out->cap)
        sl_buf_reserve(out, len + 2);
    char *d = out->p + out->len;
    d[0] = '"';
    memcpy(d + 1, p, len);
    d[len + 1] = '"';
    d[len + 2] = '\0';
    out->len += len + 2;
}

/* A string shorter than SHORT_STRING (keys, most of all) quoted in one pass that checks each
 * byte as it copies it, where the general path scans it and then copies it with a call: a legacy
 * call through --upstream URL 25,287 -> 25,070 instructions (callgrind, -O3 LTO, debug info).
 * Returns false, with out as it was, when a byte needs an escape. */
#define SHORT_STRING 16
static bool write_short_plain(struct sl_buf *out, const char *p, size_t len)
{
    if (out->len + len + 3 > out->cap)
        sl_buf_reserve(out, len + 2);
    char *d = out->p + out->len;
    d[0] = '"';
    for (size_t i = 0; i < len; i++) {
        if (!json_plain[(unsigned char)p[i]]) {
            d[0] = '\0'; /* out as it was: its text ends at out->len */
            return false;
        }
        d[i + 1] = p[i];
    }
    d[len + 1] = '"';
    d[len + 2] = '\0';
    out->len += len + 2;
    return true;
}

/* The letter of a two-character escape (\" \\ \b \f \n \r \t) of each byte that needs one, 0
 * for the other C0 controls (\u00xx). Only bytes json_plain refuses are looked up, but the
 * table covers every byte, so no byte can index past it. */
static const char short_escape[256] = {
    ['"'] = '"', ['\\'] = '\\', ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r',
    ['\t'] = 't',
};

/* The escape of c, a byte json_plain refuses, into e; returns its length. */
static size_t escape_of(unsigned char c, char e[6])
{
    static const char hex[] = "0123456789abcdef";
    e[0] = '\\';
    if (short_escape[c]) {
        e[1] = short_escape[c];
        return 2;
    }
    memcpy(e + 1, "u00", 3);
    e[4] = hex[c >> 4];
    e[5] = hex[c & 15];
    return 6;
}

/* Strings with escapes: each plain run and the escape after it go out with one reserve, and
 * the 16-byte scan finds the next escape (a question's text has one per line). */
void json_write_string(struct sl_buf *out, const char *p, size_t len)
{
    if (len < SHORT_STRING && write_short_plain(out, p, len))
        return;
    size_t i = plain_prefix(p, len);
    if (i == len) /* most strings */
        return write_quoted(out, p, len);
    sl_buf_putc(out, '"');
    size_t run = 0; /* start of the pending run of bytes that need no escape */
    while (i < len) { /* p[i] needs an escape */
        char e[6];
        size_t n = escape_of((unsigned char)p[i], e);
        if (i - run + n >= out->cap - out->len) /* as sl_buf_put: a question has ~50 escapes */
            sl_buf_reserve(out, i - run + n);
        char *d = out->p + out->len;
        memcpy(d, p + run, i - run);
        memcpy(d + (i - run), e, n);
        out->len += i - run + n;
        run = ++i;
        i += plain_prefix(p + i, len - i);
    }
    sl_buf_put(out, p + run, len - run);
    sl_buf_putc(out, '"');
}

size_t json_write_bound(const struct json *v)
{
    /* Exact: its text is what json_write gives; with esc, what json_write_relay gives, and no
     * less than json_write's (an escape as sent is never shorter than json_write's for it). */
    if (v->raw)
        return json_text_of(v)->len;
    switch (v->type) {
    case JSON_NULL:
    case JSON_BOOL:
        return 5;
    case JSON_NUMBER:
        return v->u.num.len;
    case JSON_STRING:
        return 6 * v->u.str.len + 2;
    case JSON_ARRAY: {
        size_t n = 2 + v->u.arr.n;
        for (size_t i = 0; i < v->u.arr.n; i++)
            n += json_write_bound(v->u.arr.v[i]);
        return n;
    }
    case JSON_OBJECT: {
        size_t n = 2 + v->u.obj.n;
        for (size_t i = 0; i < v->u.obj.n; i++)
            n += 6 * v->u.obj.v[i].key.len + 3 + json_write_bound(v->u.obj.v[i].val);
        return n;
    }
    }
    return 0;
}

/* A raw container's text, with the quotes the reader turned into NULs put back. In that text a
 * NUL can be nothing else: the grammar allows no raw control byte, an escaped "\u0000" is six
 * ASCII bytes there (its decoded NUL is in a copy of its own), and an escaped string's closing
 * quote is left as it is. (memchr finds them faster than a loop of our own: it takes 32 bytes a
 * step, and there is about one per ten bytes.) */
static void write_text(struct sl_buf *out, const struct json_text *t)
{
    size_t from = out->len;
    sl_buf_put(out, t->p, t->len);
    char *end = out->p + out->len;
    for (char *z = memchr(out->p + from, '\0', t->len); z != NULL;
         z = memchr(z + 1, '\0', (size_t)(end - z - 1)))
        *z = '"';
}

/* relay: json_write_relay (copies a raw text with escapes too), else json_write. */
static void write_value(struct sl_buf *out, const struct json *v, bool relay)
{
    if (v->raw && (relay || !v->esc))
        return write_text(out, json_text_of(v));
    switch (v->type) {
    case JSON_NULL:
        sl_buf_puts(out, "null");
        return;
    case JSON_BOOL:
        sl_buf_puts(out, v->u.b ? "true" : "false");
        return;
    case JSON_NUMBER:
        sl_buf_put(out, v->u.num.p, v->u.num.len);
        return;
    case JSON_STRING:
        if (v->plain)
            write_quoted(out, v->u.str.p, v->u.str.len);
        else
            json_write_string(out, v->u.str.p, v->u.str.len);
        return;
    case JSON_ARRAY:
        sl_buf_putc(out, '[');
        for (size_t i = 0; i < v->u.arr.n; i++) {
            if (i)
                sl_buf_putc(out, ',');
            write_value(out, v->u.arr.v[i], relay);
        }
        sl_buf_putc(out, ']');
        return;
    case JSON_OBJECT:
        sl_buf_putc(out, '{');
        for (size_t i = 0; i < v->u.obj.n; i++) {
            if (i)
                sl_buf_putc(out, ',');
            json_write_string(out, v->u.obj.v[i].key.p, v->u.obj.v[i].key.len);
            sl_buf_putc(out, ':');
            write_value(out, v->u.obj.v[i].val, relay);
        }
        sl_buf_putc(out, '}');
        return;
    }
}

void json_write(struct sl_buf *out, const struct json *v)
{
    write_value(out, v, false);
}

void json_write_relay(struct sl_buf *out, const struct json *v)
{
    write_value(out, v, true);
}
