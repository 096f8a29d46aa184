/* base.c: slices, buffers, the arena, UTF-8 and the encodings every module shares. */
#include "base.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ===== allocation ===== */

static void oom(void)
{
    static const char msg[] = "sluice: out of memory\n";
    fwrite(msg, 1, sizeof(msg) - 1, stderr);
    abort();
}

void *sl_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        oom();
    return p;
}

/* sl_xmalloc out of sight of the optimizer: GCC rewrites malloc followed by a memset of zero
 * into calloc, which is what sl_xcalloc below avoids. */
__attribute__((noinline)) static void *xmalloc_opaque(size_t n)
{
    return sl_xmalloc(n);
}

void *sl_xcalloc(size_t n, size_t size)
{
    /* glibc's calloc (2.36) bypasses its per-thread cache and takes the slow path every time:
     * a small block is cheaper malloc'd and cleared here. Large ones keep calloc, which can
     * skip clearing pages fresh from the kernel. */
    if (size != 0 && n != 0 && n <= 1024 / size) {
        void *q = xmalloc_opaque(n * size);
        memset(q, 0, n * size);
        return q;
    }
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        oom();
    return p;
}

void *sl_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (q == NULL)
        oom();
    return q;
}

char *sl_xstrndup(const char *s, size_t len)
{
    char *p = sl_xmalloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *sl_xstrdup(const char *s)
{
    return sl_xstrndup(s, strlen(s));
}

/* ===== buffers ===== */

void sl_buf_reserve(struct sl_buf *b, size_t extra)
{
    SL_REQUIRE(extra < SIZE_MAX / 4 - b->len); /* no size that wraps; malloc fails long before */
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256; /* most messages fit without a realloc */
    while (cap < need)
        cap *= 2;
    if (b->lent) {
        char *p = sl_xmalloc(cap);
        memcpy(p, b->p, b->len + 1);
        b->p = p;
        b->lent = false;
    } else {
        b->p = sl_xrealloc(b->p, cap);
    }
    b->cap = cap;
}

uint64_t sl_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

bool sl_u64_parse(struct sl_str s, uint64_t *out)
{
    if (s.len == 0 || s.len > 20)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < s.len; i++) {
        unsigned d = (unsigned)(unsigned char)s.p[i] - '0';
        /* 19 digits cannot overflow: only the 20th needs the check (and its division). */
        if (d > 9 || (i == 19 && v > (UINT64_MAX - d) / 10))
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

size_t sl_u64_dec(char out[21], uint64_t v)
{
    char tmp[20], *e = tmp + sizeof(tmp);
    do
        *--e = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    size_t n = (size_t)(tmp + sizeof(tmp) - e);
    memcpy(out, e, n);
    out[n] = '\0';
    return n;
}

void sl_buf_printf(struct sl_buf *b, const char *fmt, ...)
{
    /* Once into the room there is (usually enough), twice only when it was not. */
    sl_buf_reserve(b, 128);
    size_t room = b->cap - b->len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->p[b->len] = '\0';
        return;
    }
    if ((size_t)n >= room) {
        sl_buf_reserve(b, (size_t)n);
        va_start(ap, fmt);
        vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

void sl_buf_reset(struct sl_buf *b)
{
    b->len = 0;
    if (b->p)
        b->p[0] = '\0';
}

void sl_buf_free(struct sl_buf *b)
{
    if (!b->lent)
        free(b->p);
    *b = (struct sl_buf){ 0 };
}

struct sl_str sl_buf_str(const struct sl_buf *b)
{
    return (struct sl_str){ b->p ? b->p : "", b->len };
}

/* ===== arena ===== */

/* Chunks are linked newest first. A request larger than a chunk gets a chunk of its own. */
struct arena_chunk {
    struct arena_chunk *next;
    size_t used, size;
    _Alignas(max_align_t) unsigned char data[];
};

/* A heap block an arena took over (sl_arena_own), freed with it. */
struct arena_owned {
    struct arena_owned *next;
    void *block;
};

struct sl_arena {
    struct arena_chunk *head;
    size_t next_chunk;
    struct arena_owned *owned;
};

#define ARENA_CHUNK 8192u
#define ARENA_SMALL_CHUNK 256u

/* First chunks are kept when their arena is freed, for the next arena of the same size: a
 * proxied call makes two arenas of a few KiB, a size malloc serves from its slow path. First
 * chunks are powers of two from ARENA_SMALL_CHUNK to ARENA_CHUNK, a few kept per size. Under
 * ASan a kept chunk is poisoned, so a use after sl_arena_free is still caught. Buys 2.2 to 3.7%
 * of a call (callgrind, tests/bench/README.md: without it 28,494 instead of 27,881 instructions
 * per legacy call through an HTTP upstream, 24,606 instead of 23,720 through a stdio one).
 * Assumes one thread (sluice is: the cache needs no lock) and that freed arenas are reused
 * soon, so at most ARENA_KEEP chunks per size stay idle. */
#define ARENA_CLASSES 6 /* 256, 512, ..., 8192 */
#define ARENA_KEEP 16 /* requests come in bursts: at most 252 KiB kept in all */

static struct arena_chunk *kept[ARENA_CLASSES][ARENA_KEEP];
static unsigned nkept[ARENA_CLASSES];

#if defined(__SANITIZE_ADDRESS__)
#define ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_ASAN 1
#endif
#endif
#ifdef ARENA_ASAN
#include <sanitizer/asan_interface.h>
#define chunk_poison(c) ASAN_POISON_MEMORY_REGION((c), sizeof(*(c)) + (c)->size)
#define chunk_unpoison(c, size) ASAN_UNPOISON_MEMORY_REGION((c), sizeof(*(c)) + (size))
#else
#define chunk_poison(c) ((void)(c))
#define chunk_unpoison(c, size) ((void)(c), (void)(size))
#define ASAN_POISON_MEMORY_REGION(p, size) ((void)(p), (void)(size))
#define ASAN_UNPOISON_MEMORY_REGION(p, size) ((void)(p), (void)(size))
#endif

static unsigned arena_class(size_t first) /* first: a power of two, 256 to 8192 */
{
    return (unsigned)__builtin_ctzll(first) - 8;
}

/* A first chunk of size first: a kept one or a new one. Chunks are not zeroed: sl_arena_alloc
 * zeroes what it hands out, and sl_arena_alloc_raw's callers write all of it. */
static struct arena_chunk *first_chunk(size_t first)
{
    unsigned k = arena_class(first);
    if (nkept[k] == 0)
        return sl_xmalloc(sizeof(struct arena_chunk) + first);
    struct arena_chunk *c = kept[k][--nkept[k]];
    chunk_unpoison(c, first);
    return c;
}

/* An arena is born with its first chunk, and lives at the start of it: one allocation. */
static struct sl_arena *arena_new(size_t first)
{
    struct arena_chunk *c = first_chunk(first);
    c->next = NULL;
    c->size = first;
    c->used = (sizeof(struct sl_arena) + _Alignof(max_align_t) - 1) &
              ~(_Alignof(max_align_t) - 1);
    struct sl_arena *a = (struct sl_arena *)(void *)c->data;
    a->head = c;
    a->next_chunk = first < ARENA_CHUNK ? first * 2 : ARENA_CHUNK;
    a->owned = NULL;
    return a;
}

struct sl_arena *sl_arena_new(void)
{
    return arena_new(ARENA_CHUNK);
}

struct sl_arena *sl_arena_new_small(void)
{
    return arena_new(ARENA_SMALL_CHUNK);
}

struct sl_arena *sl_arena_new_sized(size_t expect)
{
    size_t first = ARENA_SMALL_CHUNK;
    while (first < expect && first < ARENA_CHUNK)
        first *= 2;
    return arena_new(first);
}

void sl_arena_free(struct sl_arena *a)
{
    if (a == NULL)
        return;
    for (struct arena_owned *o = a->owned; o; o = o->next) /* the records are in the chunks */
        free(o->block);
    struct arena_chunk *c = a->head; /* a itself is in the last (first made) chunk */
    while (c->next) {
        struct arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    unsigned k = arena_class(c->size);
    if (nkept[k] == ARENA_KEEP) {
        free(c);
        return;
    }
    kept[k][nkept[k]++] = c;
    chunk_poison(c);
}

/* n (aligned) bytes from a new chunk, which becomes the head. Out of line, so that the common
 * path below is small enough for LTO to inline into every caller. */
__attribute__((noinline)) static void *arena_grow(struct sl_arena *a, size_t n)
{
    size_t size = n > a->next_chunk ? n : a->next_chunk;
    if (a->next_chunk < ARENA_CHUNK)
        a->next_chunk *= 2;
    struct arena_chunk *c = sl_xmalloc(sizeof(*c) + size);
    c->used = n;
    c->size = size;
    c->next = a->head;
    a->head = c;
    return c->data;
}

void *sl_arena_alloc_raw(struct sl_arena *a, size_t n)
{
    const size_t align = _Alignof(max_align_t);
    n = n ? (n + align - 1) & ~(align - 1) : align;
    struct arena_chunk *c = a->head;
    if (__builtin_expect(c->size - c->used < n, 0))
        return arena_grow(a, n);
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

void sl_arena_own(struct sl_arena *a, void *block)
{
    struct arena_owned *o = sl_arena_alloc_raw(a, sizeof(*o));
    *o = (struct arena_owned){ a->owned, block };
    a->owned = o;
}

/* ===== offered buffers ===== */

static struct sl_buf *offered;

void sl_offer(struct sl_buf *b)
{
    offered = b != NULL && !b->lent && b->p != NULL ? b : NULL;
}

char *sl_offer_take(const char *p, size_t len)
{
    if (offered == NULL || offered->p != p || offered->len != len)
        return NULL;
    char *mem = offered->p;
    *offered = (struct sl_buf){ 0 };
    offered = NULL;
    return mem;
}

char *sl_arena_strndup(struct sl_arena *a, const char *p, size_t len)
{
    char *s = sl_arena_alloc_raw(a, len + 1);
    if (len)
        memcpy(s, p, len);
    s[len] = '\0';
    return s;
}

/* ===== spare blocks ===== */

/* The link to the next kept block is in a kept block's first word. */
void *sl_spare_take(struct sl_spare *s, size_t size)
{
    void *p = s->top;
    if (p == NULL)
        return NULL;
    ASAN_UNPOISON_MEMORY_REGION(p, size);
    memcpy(&s->top, p, sizeof(void *));
    s->n--;
    return p;
}

bool sl_spare_keep(struct sl_spare *s, void *p, size_t size)
{
    SL_REQUIRE(size >= sizeof(void *));
    if (s->n >= SL_SPARE_MAX)
        return false;
    memcpy(p, &s->top, sizeof(void *));
    s->top = p;
    s->n++;
    ASAN_POISON_MEMORY_REGION(p, size);
    return true;
}

void sl_spare_clear(struct sl_spare *s, size_t size)
{
    void *p;
    while ((p = sl_spare_take(s, size)) != NULL)
        free(p);
}

/* ===== UTF-8 ===== */

bool sl_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        uint64_t w;
        if (i + 8 <= len && (memcpy(&w, p + i, 8), (w & 0x8080808080808080u) == 0)) {
            i += 8; /* eight ASCII bytes */
            continue;
        }
        unsigned c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp, min;
        if (c >= 0xC2 && c <= 0xDF) {
            n = 1; cp = c & 0x1F; min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2; cp = c & 0x0F; min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3; cp = c & 0x07; min = 0x10000;
        } else {
            return false;
        }
        if (len - i - 1 < n)
            return false;
        for (size_t k = 1; k <= n; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n + 1;
    }
    return true;
}

size_t sl_utf8_decode(const char *s, size_t len, uint32_t *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned c = p[0];
    size_t n = c < 0x80 ? 0 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
    if (n >= len)
        n = len - 1;
    uint32_t v = n == 0 ? c : n == 1 ? (c & 0x1F) : n == 2 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k <= n; k++)
        v = (v << 6) | (p[k] & 0x3F);
    *cp = v;
    return n + 1;
}

/* ===== hex and base64url ===== */

/* Eight bytes a step, where OpenSSL's CRYPTO_memcmp takes one: 234 instructions for a 32-byte
 * digest there, about 30 here, and a gated pair compares two (issue 24). No branch depends on
 * the bytes. */
bool sl_ct_equal(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    uint64_t acc = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t u, v;
        memcpy(&u, x + i, 8);
        memcpy(&v, y + i, 8);
        acc |= u ^ v;
    }
    for (; i < n; i++)
        acc |= (uint64_t)(x[i] ^ y[i]);
    return acc == 0;
}

/* Reserved once and written in place: a store key or an audit digest is hex-encoded on every
 * gated call, and a checked put per digit cost 25 instructions a byte (issue 24). */
void sl_hex_encode(struct sl_buf *out, const uint8_t *data, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    if (len == 0)
        return;
    sl_buf_reserve(out, 2 * len);
    char *w = out->p + out->len;
    for (size_t i = 0; i < len; i++) {
        *w++ = digits[data[i] >> 4];
        *w++ = digits[data[i] & 15];
    }
    out->len += 2 * len;
    out->p[out->len] = '\0';
}

long sl_hex_decode(const char *hex, size_t len, uint8_t *out, size_t cap)
{
    if (len % 2 != 0 || len / 2 > cap)
        return -1;
    for (size_t i = 0; i < len; i += 2) {
        int hi = sl_hex_digit(hex[i]), lo = sl_hex_digit(hex[i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return (long)(len / 2);
}

static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Eight bytes at p as one big-endian word: a single load where six byte loads and their shifts
 * were. */
static inline uint64_t load_be64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline void store_be64(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, sizeof(v));
}

/* Writes straight into room reserved once: a state is encoded on every question, and a put per
 * four characters cost more than the encoding. Six bytes (eight letters) a step while eight
 * can be read, then three at a time: about a quarter fewer instructions (issue 24). */
void sl_b64url_encode(struct sl_buf *out, const uint8_t *d, size_t len)
{
    size_t n = len / 3 * 4 + (len % 3 ? len % 3 + 1 : 0);
    sl_buf_reserve(out, n);
    char *o = out->p + out->len;
    size_t i = 0;
    for (; i + 8 <= len; i += 6, o += 8) {
        uint64_t v = load_be64(d + i); /* the top 48 bits are the six bytes */
        o[0] = b64url[v >> 58];
        o[1] = b64url[(v >> 52) & 63];
        o[2] = b64url[(v >> 46) & 63];
        o[3] = b64url[(v >> 40) & 63];
        o[4] = b64url[(v >> 34) & 63];
        o[5] = b64url[(v >> 28) & 63];
        o[6] = b64url[(v >> 22) & 63];
        o[7] = b64url[(v >> 16) & 63];
    }
    for (; i + 3 <= len; i += 3, o += 4) {
        uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
        o[0] = b64url[v >> 18];
        o[1] = b64url[(v >> 12) & 63];
        o[2] = b64url[(v >> 6) & 63];
        o[3] = b64url[v & 63];
    }
    if (len - i >= 1) {
        uint32_t v = (uint32_t)d[i] << 16 | (len - i == 2 ? (uint32_t)d[i + 1] << 8 : 0);
        *o++ = b64url[v >> 18];
        *o++ = b64url[(v >> 12) & 63];
        if (len - i == 2)
            *o++ = b64url[(v >> 6) & 63];
    }
    out->len += n;
    out->p[out->len] = '\0';
}

/* The value of each base64url letter, -1 for every other byte: a table filled on first use
 * (sluice is single-threaded), where a memchr over the alphabet per letter cost ten times as
 * much. */
static const int8_t *b64_values(void)
{
    static int8_t val[256];
    static bool filled;
    if (!filled) {
        memset(val, -1, sizeof(val));
        for (int i = 0; i < 64; i++)
            val[(unsigned char)b64url[i]] = (int8_t)i;
        filled = true;
    }
    return val;
}

/* Eight letters, then four (24 bits) at a time, then the two or three of a short tail; any
 * letter outside the alphabet makes the sum negative. */
long sl_b64url_decode(const char *in, size_t len, uint8_t *out, size_t cap)
{
    if (len % 4 == 1)
        return -1;
    size_t n = len / 4 * 3 + (len % 4 ? len % 4 - 1 : 0);
    if (n > cap)
        return -1;
    const int8_t *val = b64_values();
    const unsigned char *u = (const unsigned char *)in;
    size_t i = 0, o = 0;
    /* Eight letters (six bytes) a step while a whole word fits in the n bytes decoded: one
     * store, not three shifts and stores per four letters; the word's last two bytes are
     * written over by the next step. */
    for (; i + 8 <= len && o + 8 <= n; i += 8, o += 6) {
        int64_t a = val[u[i]], b = val[u[i + 1]], c = val[u[i + 2]], d = val[u[i + 3]],
                e = val[u[i + 4]], f = val[u[i + 5]], g = val[u[i + 6]], h = val[u[i + 7]];
        if ((a | b | c | d | e | f | g | h) < 0)
            return -1;
        store_be64(out + o, (uint64_t)a << 58 | (uint64_t)b << 52 | (uint64_t)c << 46 |
                                (uint64_t)d << 40 | (uint64_t)e << 34 | (uint64_t)f << 28 |
                                (uint64_t)g << 22 | (uint64_t)h << 16);
    }
    for (; i + 4 <= len; i += 4) {
        int a = val[u[i]], b = val[u[i + 1]], c = val[u[i + 2]], d = val[u[i + 3]];
        if ((a | b | c | d) < 0)
            return -1;
        uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
        out[o++] = (uint8_t)(v >> 16);
        out[o++] = (uint8_t)(v >> 8);
        out[o++] = (uint8_t)v;
    }
    if (i == len)
        return (long)o;
    int a = val[u[i]], b = val[u[i + 1]], c = len - i == 3 ? val[u[i + 2]] : 0;
    if ((a | b | c) < 0)
        return -1;
    uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6;
    /* non-canonical unless the bits past the last whole byte are zero */
    if (len - i == 2 ? (v & 0xFFFF) != 0 : (v & 0xFF) != 0)
        return -1;
    out[o++] = (uint8_t)(v >> 16);
    if (len - i == 3)
        out[o++] = (uint8_t)(v >> 8);
    return (long)o;
}

/* ===== assertions ===== */

void sl_require_failed(const char *expr, const char *file, int line)
{
    fprintf(stderr, "sluice: fatal: %s:%d: requirement failed: %s\n", file, line, expr);
    abort();
}

void sl_check_failed(const char *expr, const char *file, int line)
{
    fprintf(stderr, "sluice: internal check failed at %s:%d: %s (refusing)\n", file, line, expr);
}

int sl_fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err != NULL && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}
