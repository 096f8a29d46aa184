/* jsonrpc.c: strict JSON (RFC 8259) and JSON-RPC 2.0 message shape.
 *
 * The reader is a recursive descent over the bytes, at most SL_MAX_DEPTH deep, that builds the
 * tree straight into the message's arena. It accepts exactly RFC 8259 JSON text: JSON whitespace
 * only, no comments, no trailing commas or bytes, strict numbers, escapes that decode to valid
 * UTF-8 (a surrogate escape only as a proper high+low pair), raw bytes that are valid UTF-8, and
 * no raw control character in a string. On top of the grammar it refuses duplicate keys at any
 * depth, a NUL in a key, and anything past the limits in base.h.
 *
 * It replaced yajl (kept as the reference reader of tests/fuzz/fuzz_reader.c, which checks that
 * both accept the same texts and build the same trees): yajl needed patching on every side
 * (lone surrogates read as '?', form feed taken for whitespace, a second token's start accepted
 * at the end), allocated a dozen blocks per message, and reading JSON was a third of a proxied
 * call's cost. Containers collect their children in scratch vectors kept from one message to the
 * next and move them into the arena when they close, which is also where duplicate keys are
 * detected. */
#include "jsonrpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_priv.h"

/* ===== the tree builder ===== */

/* One open container. Its member and item arrays are scratch space that the next container at
 * the same depth reuses: a finished container is copied into the arena. */
struct frame {
    struct json *node;        /* the container being filled */
    struct json_member *mem;  /* objects: members so far */
    struct json **items;      /* arrays: items so far */
    size_t n, mem_cap, items_cap;
    const unsigned char *open;/* where its text starts: the '{' or '[' */
    size_t impure_at;         /* c->impure when it opened */
    size_t escaped_at;        /* c->escaped when it opened */
};

/* The decoding buffer is kept between messages up to this size, and a frame's scratch vectors
 * up to KEEP_MEMBERS entries (see ctx_give_back). */
#define DEC_KEEP (64u << 10)
#define KEEP_MEMBERS 256u

struct parse_ctx {
    struct sl_arena *arena;
    const unsigned char *p, *start, *end; /* the text being read: the arena's copy of it */
    struct frame stack[SL_MAX_DEPTH];
    size_t depth;
    size_t touched;           /* frames below this hold scratch arrays (maybe NULL) */
    bool oversized;           /* a scratch vector grew past KEEP_MEMBERS in this parse */
    size_t impure;            /* whitespace runs read so far: a container during which it did
                               * not grow is raw (json.h) */
    size_t escaped;           /* strings with escapes read so far: a raw container during
                               * which it grew is esc (json.h) */
    struct sl_buf dec;        /* a string with escapes, decoded (kept between parses) */
    char err[160];            /* why the text was refused */
};

static int refuse(struct parse_ctx *c, const char *msg)
{
    if (c->err[0] == '\0')
        snprintf(c->err, sizeof(c->err), "%s", msg);
    return 0;
}

/* A syntax error, with where it was found. */
static int syntax_error(struct parse_ctx *c, const char *what)
{
    if (c->err[0] == '\0')
        snprintf(c->err, sizeof(c->err), "invalid JSON at byte %zu: %s",
                 (size_t)(c->p - c->start), what);
    return 0;
}

/* A scratch vector with room for one more member or item (the new block: the caller stores it),
 * or NULL, with a refusal, past SL_MAX_MEMBERS; vec is then still the caller's. The vector never
 * grows past the limit, so the callers' one test (n == cap) covers the limit too. */
static void *grow(struct parse_ctx *c, void *vec, size_t *cap, size_t elem)
{
    if (*cap >= SL_MAX_MEMBERS) {
        refuse(c, "too many members in one object or array");
        return NULL;
    }
    size_t want = *cap ? *cap * 2 : 8;
    if (want > SL_MAX_MEMBERS)
        want = SL_MAX_MEMBERS;
    void *more = sl_xrealloc(vec, want * elem);
    *cap = want;
    if (want > KEEP_MEMBERS)
        c->oversized = true;
    return more;
}

static struct json *open_container(struct parse_ctx *c, enum json_type t)
{
    if (c->depth >= SL_MAX_DEPTH) {
        refuse(c, "nesting too deep");
        return NULL;
    }
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
    f->open = c->p;
    f->impure_at = c->impure;
    f->escaped_at = c->escaped;
    return v;
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
                if (m[i].key.len == m[j].key.len &&
                    (m[i].key.len == 0 || (m[i].key.p[0] == m[j].key.p[0] &&
                                           memcmp(m[i].key.p, m[j].key.p, m[i].key.len) == 0)))
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

/* The arena block for a container's children, after its text record when it is raw. */
static void *children(struct parse_ctx *c, const struct frame *f, size_t size, bool raw)
{
    size_t head = raw ? sizeof(struct json_text) : 0;
    char *p = sl_arena_alloc_raw(c->arena, head + (size ? size : 1));
    if (raw) {
        struct json_text *t = (struct json_text *)p;
        t->p = (const char *)f->open;
        t->len = (size_t)(c->p - f->open);
        t->parent = c->depth > 0 ? c->stack[c->depth - 1].node : NULL;
    }
    return p + head;
}

/* Moves the innermost container's children into the arena and closes it (c->p just past its
 * closing bracket). */
static int close_container(struct parse_ctx *c)
{
    struct frame *f = &c->stack[--c->depth];
    struct json *v = f->node;
    v->raw = c->impure == f->impure_at;
    v->esc = c->escaped != f->escaped_at;
    if (v->type == JSON_OBJECT) {
        if (has_duplicate_key(f->mem, f->n))
            return refuse(c, "duplicate key in object");
        v->u.obj.n = f->n;
        v->u.obj.v = children(c, f, f->n * sizeof(*f->mem), v->raw);
        if (f->n)
            memcpy(v->u.obj.v, f->mem, f->n * sizeof(*f->mem));
    } else {
        v->u.arr.n = f->n;
        v->u.arr.v = children(c, f, f->n * sizeof(*f->items), v->raw);
        if (f->n)
            memcpy(v->u.arr.v, f->items, f->n * sizeof(*f->items));
    }
    return 1;
}

/* ===== the reader ===== */

static inline bool is_ws(const struct parse_ctx *c)
{
    return c->p < c->end && *c->p <= ' ' &&
           (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t');
}

static inline void skip_ws(struct parse_ctx *c)
{
    if (!is_ws(c))
        return;
    c->impure++;
    do
        c->p++;
    while (is_ws(c));
}

/* Whether the next token is the byte ch, after any whitespace. Most tokens follow one another
 * without whitespace, so the byte expected is tested first and whitespace skipped only when it
 * is not there. */
static inline bool next_is(struct parse_ctx *c, unsigned char ch)
{
    if (c->p < c->end && *c->p == ch)
        return true;
    skip_ws(c);
    return c->p < c->end && *c->p == ch;
}

static int hex4(const unsigned char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int ch = p[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0'
              : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
              : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v << 4 | d;
    }
    return v;
}

static void put_utf8(struct sl_buf *b, uint32_t cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp, n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
    } else {
        u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
    }
    sl_buf_put(b, u, n);
}

/* sl_utf8_valid over p[0..len), but runs of ASCII, most of any text, are skipped 64 bytes a
 * step and only the pieces with other bytes in them go to sl_utf8_valid. Splitting before an
 * ASCII byte is exact: a valid text is valid pieces there, and a sequence cut short by one is
 * invalid in its piece too. Buys: the check of a 1 MiB result of ASCII with one "\xc3\xa9" in
 * it in 0.2 instead of 1.4 instructions per byte (sizes-callgrind, tests/bench/README.md).
 * Assumes SSE2 for the wide step; elsewhere sl_utf8_valid's own eight-byte step does it. */
static bool utf8_valid(const char *s, size_t len)
{
#ifdef __SSE2__
    if (len < 64) /* a short string (most): the wide step would not pay for its setup */
        return sl_utf8_valid(s, len);
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    for (;;) {
        while (end - p >= 64) {
            const __m128i *q = (const __m128i *)(const void *)p;
            __m128i any = _mm_or_si128(_mm_or_si128(_mm_loadu_si128(q), _mm_loadu_si128(q + 1)),
                                       _mm_or_si128(_mm_loadu_si128(q + 2),
                                                    _mm_loadu_si128(q + 3)));
            if (_mm_movemask_epi8(any))
                break;
            p += 64;
        }
        while (p < end && *p < 0x80)
            p++;
        if (p == end)
            return true;
        /* The piece ends before the next 16 ASCII bytes in a row (an ASCII byte is always
         * where a character starts), so text that is mostly not ASCII goes in long pieces. */
        const unsigned char *run = p;
        while (end - p >= 16 &&
               _mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(const void *)p)))
            p += 16;
        if (end - p < 16)
            p = end;
        if (!sl_utf8_valid((const char *)run, (size_t)(p - run)))
            return false;
    }
#else
    return sl_utf8_valid(s, len);
#endif
}

/* One escape after its backslash (c->p at the letter), decoded into c->dec. */
static int read_escape(struct parse_ctx *c)
{
    if (c->p >= c->end)
        return syntax_error(c, "unfinished escape");
    char to;
    switch (*c->p) {
    case '"': to = '"'; break;
    case '\\': to = '\\'; break;
    case '/': to = '/'; break;
    case 'b': to = '\b'; break;
    case 'f': to = '\f'; break;
    case 'n': to = '\n'; break;
    case 'r': to = '\r'; break;
    case 't': to = '\t'; break;
    default: to = 0; break;
    }
    if (to) {
        sl_buf_putc(&c->dec, to);
        c->p++;
        return 1;
    }
    if (*c->p != 'u')
        return syntax_error(c, "invalid escape");
    int u = c->end - c->p >= 5 ? hex4(c->p + 1) : -1;
    if (u < 0)
        return syntax_error(c, "invalid \\u escape");
    c->p += 5;
    if (u >= 0xDC00 && u <= 0xDFFF)
        return refuse(c, "lone or mismatched surrogate escape in string");
    if (u >= 0xD800 && u <= 0xDBFF) {
        int lo = c->end - c->p >= 6 && c->p[0] == '\\' && c->p[1] == 'u' ? hex4(c->p + 2) : -1;
        if (lo < 0xDC00 || lo > 0xDFFF)
            return refuse(c, "lone or mismatched surrogate escape in string");
        c->p += 6;
        put_utf8(&c->dec, 0x10000 + (((uint32_t)u - 0xD800) << 10) + ((uint32_t)lo - 0xDC00));
        return 1;
    }
    put_utf8(&c->dec, (uint32_t)u);
    return 1;
}

/* A string (c->p at its opening quote) into *out. Plain text is used where it is, in the
 * arena's copy of the message: its closing quote becomes its NUL. Text with escapes is decoded
 * and copied. *escaped: whether it had any (only then can it hold a NUL). Always inlined into
 * its two callers (keys, values): the call itself was a tenth of reading a short key. */
static inline __attribute__((always_inline)) int read_string(struct parse_ctx *c,
                                                            struct sl_str *out, bool *escaped)
{
    const unsigned char *run = ++c->p;
    uint64_t high = 0; /* the OR of the plain bytes: bit 7 set when one is not ASCII */
    *escaped = false;
    for (;;) {
        c->p = json_skip_plain(c->p, c->end, &high);
        while (c->p < c->end && json_plain[*c->p])
            high |= *c->p++;
        if (c->p >= c->end)
            return syntax_error(c, "unterminated string");
        if (*c->p == '"')
            break;
        if (*c->p != '\\')
            return syntax_error(c, "control character in string");
        if (!*escaped) {
            sl_buf_reset(&c->dec);
            *escaped = true;
            c->escaped++;
        }
        sl_buf_put(&c->dec, run, (size_t)(c->p - run));
        c->p++;
        if (!read_escape(c))
            return 0;
        run = c->p;
    }
    size_t len = (size_t)(c->p - run);
    if (*escaped) {
        sl_buf_put(&c->dec, run, len);
        len = c->dec.len;
        if (len > SL_MAX_STRING)
            return refuse(c, "string too long");
        /* Escapes decode to whole, valid sequences: only raw bytes can make it invalid. */
        if ((high & 0x8080808080808080u) != 0 && !utf8_valid(c->dec.p, len))
            return refuse(c, "invalid UTF-8 in string");
        /* A buffer that large would be given back after this message (ctx_give_back): the
         * arena takes it over instead of copying it. Buys one copy of a large escaped string,
         * 1.0 instruction a byte of a 1 MiB result (sizes-callgrind). */
        char *kept;
        if (c->dec.cap > DEC_KEEP) {
            kept = c->dec.p;
            sl_arena_own(c->arena, kept);
            c->dec = (struct sl_buf){ 0 };
        } else {
            kept = sl_arena_strndup(c->arena, c->dec.p, len);
        }
        *out = (struct sl_str){ kept, len };
        c->p++;
        return 1;
    }
    if (len > SL_MAX_STRING)
        return refuse(c, "string too long");
    if ((high & 0x8080808080808080u) && !utf8_valid((const char *)run, len))
        return refuse(c, "invalid UTF-8 in string");
    *(unsigned char *)c->p = '\0'; /* the closing quote, in our copy */
    c->p++;
    *out = (struct sl_str){ (const char *)run, len };
    return 1;
}

static bool is_digit(const unsigned char *p, const unsigned char *end)
{
    return p < end && *p >= '0' && *p <= '9';
}

/* One or more digits, or a syntax error saying what needed them. */
static int digits(struct parse_ctx *c, const char *what)
{
    if (!is_digit(c->p, c->end))
        return syntax_error(c, what);
    while (is_digit(c->p, c->end))
        c->p++;
    return 1;
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, kept as its text. */
static struct json *read_number(struct parse_ctx *c)
{
    const unsigned char *s = c->p;
    if (c->p < c->end && *c->p == '-')
        c->p++;
    if (!is_digit(c->p, c->end)) {
        syntax_error(c, "invalid number");
        return NULL;
    }
    if (*c->p++ != '0')
        while (is_digit(c->p, c->end))
            c->p++;
    if (c->p < c->end && *c->p == '.') {
        c->p++;
        if (!digits(c, "a fraction needs digits"))
            return NULL;
    }
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        c->p++;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
            c->p++;
        if (!digits(c, "an exponent needs digits"))
            return NULL;
    }
    size_t len = (size_t)(c->p - s);
    if (len > SL_MAX_NUMBER) {
        refuse(c, "number literal too long");
        return NULL;
    }
    struct json *v = sl_arena_alloc(c->arena, sizeof(*v));
    v->type = JSON_NUMBER;
    v->u.num = (struct sl_str){ (const char *)s, len }; /* in the arena's copy, no NUL after */
    return v;
}

static bool literal(struct parse_ctx *c, const char *word, size_t n)
{
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
        return false;
    c->p += n;
    return true;
}

static struct json *read_value(struct parse_ctx *c);

enum after { AFTER_BAD, AFTER_MORE, AFTER_CLOSED };

/* After a member or an item: ',' (another follows; the next token's test skips whitespace) or
 * the closing bracket, which closes the container. */
static inline enum after after_child(struct parse_ctx *c, unsigned char close)
{
    if (next_is(c, ',')) {
        c->p++;
        return AFTER_MORE;
    }
    if (c->p < c->end && *c->p == close) { /* next_is() skipped any whitespace */
        c->p++;
        return close_container(c) ? AFTER_CLOSED : AFTER_BAD;
    }
    return syntax_error(c, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'"), AFTER_BAD;
}

/* After '{': the members, up to the closing brace. Objects and arrays have a loop each: the
 * test of which one a value goes into was a tenth of reading a member. */
static struct json *read_object(struct parse_ctx *c)
{
    struct json *v = open_container(c, JSON_OBJECT);
    if (v == NULL)
        return NULL;
    struct frame *f = &c->stack[c->depth - 1];
    c->p++;
    if (next_is(c, '}')) {
        c->p++;
        return close_container(c) ? v : NULL;
    }
    for (;;) {
        struct sl_str key;
        bool escaped;
        if (!next_is(c, '"'))
            return syntax_error(c, "expected a key"), NULL;
        if (!read_string(c, &key, &escaped))
            return NULL;
        /* A key with NUL reads as a shorter key to C peers: "name\u0000" would be a second
         * "name". Only an escape can put one there. */
        if (escaped && memchr(key.p, '\0', key.len))
            return refuse(c, "NUL in an object key"), NULL;
        if (!next_is(c, ':'))
            return syntax_error(c, "expected ':'"), NULL;
        c->p++;
        struct json *val = read_value(c);
        if (val == NULL)
            return NULL;
        if (f->n == f->mem_cap) {
            struct json_member *more = grow(c, f->mem, &f->mem_cap, sizeof(*f->mem));
            if (more == NULL)
                return NULL;
            f->mem = more;
        }
        f->mem[f->n++] = (struct json_member){ key, val };
        enum after next = after_child(c, '}');
        if (next != AFTER_MORE)
            return next == AFTER_CLOSED ? v : NULL;
    }
}

/* After '[': the items, up to the closing bracket. */
static struct json *read_array(struct parse_ctx *c)
{
    struct json *v = open_container(c, JSON_ARRAY);
    if (v == NULL)
        return NULL;
    struct frame *f = &c->stack[c->depth - 1];
    c->p++;
    if (next_is(c, ']')) {
        c->p++;
        return close_container(c) ? v : NULL;
    }
    for (;;) {
        struct json *item = read_value(c);
        if (item == NULL)
            return NULL;
        if (f->n == f->items_cap) {
            struct json **more = grow(c, f->items, &f->items_cap, sizeof(*f->items));
            if (more == NULL)
                return NULL;
            f->items = more;
        }
        f->items[f->n++] = item;
        enum after next = after_child(c, ']');
        if (next != AFTER_MORE)
            return next == AFTER_CLOSED ? v : NULL;
    }
}

static struct json *read_value(struct parse_ctx *c)
{
again:
    if (c->p >= c->end)
        return syntax_error(c, "expected a value"), NULL;
    switch (*c->p) {
    case ' ':
    case '\t':
    case '\n':
    case '\r':
        skip_ws(c); /* stops at a byte that is not whitespace, or the end */
        goto again;
    case '{':
        return read_object(c);
    case '[':
        return read_array(c);
    case '"': {
        struct sl_str s;
        bool escaped;
        if (!read_string(c, &s, &escaped))
            return NULL;
        struct json *v = sl_arena_alloc(c->arena, sizeof(*v));
        v->type = JSON_STRING;
        v->plain = !escaped;
        v->u.str = s;
        return v;
    }
    case 't':
        if (literal(c, "true", 4))
            return json_new_bool(c->arena, true);
        break;
    case 'f':
        if (literal(c, "false", 5))
            return json_new_bool(c->arena, false);
        break;
    case 'n':
        if (literal(c, "null", 4))
            return json_new_null(c->arena);
        break;
    default:
        if (*c->p == '-' || (*c->p >= '0' && *c->p <= '9'))
            return read_number(c);
        break;
    }
    return syntax_error(c, "invalid value"), NULL;
}

/* ===== parsing ===== */

/* The parse context, with its frames' scratch vectors and decoding buffer, is kept from one
 * parse to the next: it is 4 KiB, and allocating it per message made glibc consolidate its free
 * lists every time. Scratch grown past KEEP_MEMBERS (or 64 KiB) by a large message is given
 * back after it; the frames are looked at only when one did (a loop over every frame any
 * message ever opened was about 120 instructions of each plain call, callgrind). */

static struct parse_ctx *ctx_kept;
static bool ctx_busy;

static struct parse_ctx *ctx_take(void)
{
    SL_REQUIRE(!ctx_busy); /* one parse at a time */
    if (ctx_kept == NULL)
        ctx_kept = sl_xcalloc(1, sizeof(*ctx_kept));
    ctx_busy = true;
    return ctx_kept;
}

/* Frees the scratch vectors a large message grew past KEEP_MEMBERS. */
static void drop_oversized(struct parse_ctx *c)
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
}

static void ctx_give_back(struct parse_ctx *c)
{
    if (c->oversized)
        drop_oversized(c);
    c->oversized = false;
    if (c->dec.cap > DEC_KEEP)
        sl_buf_free(&c->dec);
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
    struct parse_ctx *c = ctx_take();
    c->arena = a;
    c->depth = 0;
    c->err[0] = '\0';
    /* The tree's plain strings point into this copy (see read_string), or into the offered
     * buffer itself, which the arena takes over. */
    char *text = sl_offer_take(buf, len); /* buys a copy of a large body (base.h) */
    if (text != NULL)
        sl_arena_own(a, text);
    else
        text = sl_arena_strndup(a, buf, len);
    c->start = c->p = (const unsigned char *)text;
    c->end = c->p + len;
    struct json *root = read_value(c);
    if (root) {
        skip_ws(c);
        if (c->p != c->end) {
            refuse(c, "bytes after the JSON value");
            root = NULL;
        }
    }
    if (root == NULL)
        snprintf(err, errlen, "%s", c->err[0] ? c->err : "invalid JSON");
    else
        *out = root;
    ctx_give_back(c);
    return root ? 0 : -1;
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

/* The envelope's members, found in one pass over the message object rather than a lookup each
 * (keys are unique: the reader refused duplicates). */
struct envelope {
    struct json *jsonrpc, *id, *method, *params, *result, *error;
};

static void read_envelope(const struct json *root, struct envelope *e)
{
    *e = (struct envelope){ 0 };
    for (size_t i = 0; i < root->u.obj.n; i++) {
        const char *k = root->u.obj.v[i].key.p;
        struct json *v = root->u.obj.v[i].val;
        switch (root->u.obj.v[i].key.len) {
        case 2:
            if (memcmp(k, "id", 2) == 0)
                e->id = v;
            break;
        case 5:
            if (memcmp(k, "error", 5) == 0)
                e->error = v;
            break;
        case 6:
            if (memcmp(k, "method", 6) == 0)
                e->method = v;
            else if (memcmp(k, "params", 6) == 0)
                e->params = v;
            else if (memcmp(k, "result", 6) == 0)
                e->result = v;
            break;
        case 7:
            if (memcmp(k, "jsonrpc", 7) == 0)
                e->jsonrpc = v;
            break;
        }
    }
}

static int shape_request(struct jsonrpc_msg *m, const struct envelope *e,
                         struct jsonrpc_parse_error *err)
{
    if (e->method->type != JSON_STRING)
        return invalid(err, "method must be a string");
    if (e->result || e->error)
        return invalid(err, "a request cannot carry result or error");
    m->method = e->method->u.str;
    m->params = e->params;
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

static int shape_response(struct jsonrpc_msg *m, const struct envelope *e,
                          struct jsonrpc_parse_error *err)
{
    m->result = e->result;
    m->error = e->error;
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
    /* Only what a refusal reads: its parts are written when there is one. */
    err->code = 0;
    err->msg[0] = '\0';
    memcpy(err->id, "null", 5);
    /* The message lives in its own arena, with its text, its tree (about four times the text)
     * and, for a request that is forwarded, the forwarding state. */
    struct sl_arena *a = sl_arena_new_sized(len * 6 + 1024);
    struct jsonrpc_msg *m = sl_arena_alloc(a, sizeof(*m));
    m->arena = a;
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
        struct envelope e;
        read_envelope(m->root, &e);
        m->id = e.id;
        if (!json_str_is(e.jsonrpc, "2.0"))
            rc = invalid(err, "jsonrpc must be \"2.0\"");
        else if (e.method)
            rc = shape_request(m, &e, err);
        else
            rc = shape_response(m, &e, err);
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
    if (m != NULL)
        sl_arena_free(m->arena); /* m with it */
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

static void result_head(struct sl_buf *out, struct sl_str id_json)
{
    sl_buf_puts(out, "{\"jsonrpc\":\"2.0\",\"id\":");
    sl_buf_put(out, id_json.p, id_json.len);
    sl_buf_puts(out, ",\"result\":");
}

void jsonrpc_write_result(struct sl_buf *out, struct sl_str id_json, struct sl_str result_json)
{
    result_head(out, id_json);
    sl_buf_put(out, result_json.p, result_json.len);
    sl_buf_putc(out, '}');
}

void jsonrpc_write_result_value(struct sl_buf *out, struct sl_str id_json,
                                const struct json *result)
{
    result_head(out, id_json);
    json_write_relay(out, result); /* a peer's result: its text as sent, where unedited */
    sl_buf_putc(out, '}');
}

/* ===== the id of a message too large to read ===== */

/* A line over SL_MAX_MESSAGE is never parsed (chan.h): only its first and last bytes are kept.
 * What can be read there without the rest is the top-level object's members up to where the
 * head ends (a response says "result" or "error" before its large value, and the Python SDK
 * writes "id" before them) and, at the very end, a last member "id" (the TypeScript SDK writes
 * the result first and the id last). Nothing else of the text is trusted: a member in a nested
 * value or in a string is skipped as the grammar says, and anything unexpected ends the scan. */

struct cut_scan {
    bool response, request; /* a "result" or "error" member; a "method" member */
    int ids;                /* "id" members seen */
    bool id_ok;             /* the one "id" was an unsigned integer, in id */
    uint64_t id;
    bool id_plain;          /* ... or a string that may be echoed as it is (cut_plain_string) */
    struct sl_str id_text;  /* the one "id" as written, in head or tail */
};

static bool cut_is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t cut_ws(struct sl_str h, size_t i)
{
    while (i < h.len && cut_is_ws(h.p[i]))
        i++;
    return i;
}

/* Back over whitespace before i. */
static size_t cut_ws_back(struct sl_str t, size_t i)
{
    while (i > 0 && cut_is_ws(t.p[i - 1]))
        i--;
    return i;
}

/* The end of the string whose opening quote is at i (past its closing quote), or 0 when the head
 * ends first. */
static size_t cut_string(struct sl_str h, size_t i)
{
    for (i++; i < h.len; i++) {
        if (h.p[i] == '\\')
            i++;
        else if (h.p[i] == '"')
            return i + 1;
    }
    return 0;
}

/* The end of the value that starts at i, or 0 when the head ends first. */
static size_t cut_value(struct sl_str h, size_t i)
{
    if (i >= h.len)
        return 0;
    if (h.p[i] == '"')
        return cut_string(h, i);
    if (h.p[i] != '{' && h.p[i] != '[') {
        while (i < h.len && h.p[i] != ',' && h.p[i] != '}' && h.p[i] != ']' && !cut_is_ws(h.p[i]))
            i++;
        return i < h.len ? i : 0;
    }
    size_t depth = 0;
    for (; i < h.len; i++) {
        char c = h.p[i];
        if (c == '"') {
            size_t e = cut_string(h, i);
            if (e == 0)
                return 0;
            i = e - 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if ((c == '}' || c == ']') && --depth == 0) {
            return i + 1;
        }
    }
    return 0;
}

/* An unsigned integer as JSON writes it (no sign, fraction or leading zero). */
static bool cut_u64(struct sl_str v, uint64_t *out)
{
    return (v.len == 1 || (v.len > 1 && v.p[0] != '0')) && sl_u64_parse(v, out);
}

/* A string of printable ASCII without escapes, short enough to be in a head: its text is valid
 * JSON as it stands, so it can be echoed back without being decoded. Any other string id is not
 * guessed at. */
static bool cut_plain_string(struct sl_str v)
{
    if (v.len < 2 || v.len > CUT_ID_MAX || v.p[0] != '"' || v.p[v.len - 1] != '"')
        return false;
    for (size_t i = 1; i + 1 < v.len; i++) {
        unsigned char c = (unsigned char)v.p[i];
        if (c < 0x20 || c > 0x7e || c == '"' || c == '\\')
            return false;
    }
    return true;
}

static void cut_id(struct cut_scan *sc, struct sl_str v)
{
    sc->ids++;
    sc->id_ok = sc->ids == 1 && cut_u64(v, &sc->id);
    sc->id_plain = sc->ids == 1 && cut_plain_string(v);
    sc->id_text = v;
}

/* The top-level members in head, as far as they go. */
static void cut_head(struct sl_str h, struct cut_scan *sc)
{
    size_t i = cut_ws(h, 0);
    if (i >= h.len || h.p[i] != '{')
        return;
    for (i = cut_ws(h, i + 1); i < h.len && h.p[i] == '"';) {
        size_t ke = cut_string(h, i);
        if (ke == 0)
            return;
        struct sl_str key = { h.p + i + 1, ke - i - 2 };
        i = cut_ws(h, ke);
        if (i >= h.len || h.p[i] != ':')
            return;
        i = cut_ws(h, i + 1);
        if (sl_str_eq_c(key, "result") || sl_str_eq_c(key, "error"))
            sc->response = true;
        else if (sl_str_eq_c(key, "method"))
            sc->request = true;
        size_t ve = cut_value(h, i);
        if (ve == 0)
            return;
        if (sl_str_eq_c(key, "id"))
            cut_id(sc, (struct sl_str){ h.p + i, ve - i });
        i = cut_ws(h, ve);
        if (i >= h.len || h.p[i] != ',')
            return;
        i = cut_ws(h, i + 1);
    }
}

/* A last member "id" with an integer just before the closing brace at the end of tail. The
 * brace that ends the line closes the top-level object, and the quote of "id" follows a comma
 * (or the object's brace), so this member is the object's own: in a string, that quote would be
 * escaped. */
static void cut_tail(struct sl_str t, struct cut_scan *sc)
{
    size_t i = t.len;
    i = cut_ws_back(t, i);
    if (i == 0 || t.p[--i] != '}')
        return;
    i = cut_ws_back(t, i);
    size_t end = i;
    while (i > 0 && t.p[i - 1] >= '0' && t.p[i - 1] <= '9')
        i--;
    struct sl_str num = { t.p + i, end - i };
    i = cut_ws_back(t, i);
    if (i == 0 || t.p[--i] != ':')
        return;
    i = cut_ws_back(t, i);
    if (i < 4 || memcmp(t.p + i - 4, "\"id\"", 4) != 0)
        return;
    i -= 4;
    i = cut_ws_back(t, i);
    if (i == 0 || (t.p[i - 1] != ',' && t.p[i - 1] != '{'))
        return;
    cut_id(sc, num);
}

bool jsonrpc_cut_response_id(struct sl_str head, struct sl_str tail, uint64_t *id)
{
    struct cut_scan sc = { 0 };
    cut_head(head, &sc);
    cut_tail(tail, &sc); /* an "id" there as well is one too many: the text is not JSON-RPC */
    if (!sc.response || sc.request || sc.ids != 1 || !sc.id_ok)
        return false;
    *id = sc.id;
    return true;
}

bool jsonrpc_cut_request_id(struct sl_str head, struct sl_str tail, struct sl_buf *id_json)
{
    struct cut_scan sc = { 0 };
    cut_head(head, &sc);
    cut_tail(tail, &sc);
    if (!sc.request || sc.response || sc.ids != 1 || !(sc.id_ok || sc.id_plain))
        return false;
    sl_buf_put(id_json, sc.id_text.p, sc.id_text.len);
    return true;
}
