/* base.h: the few things every sluice module shares.
 *
 * - struct sl_str: a slice of bytes (pointer + length), passed by value. Wire data is never
 *   NUL-terminated C text; a slice cannot be cut short by an embedded NUL.
 * - struct sl_buf: a growable byte buffer the caller owns (sl_buf_free releases it).
 * - struct sl_arena: a bump allocator. Everything parsed from one message lives in one arena and
 *   dies with it, so error paths cannot leak.
 * - SL_MAX_*: every input limit, named once.
 * - SL_REQUIRE (abort: a state that cannot happen) and SL_CHECK (log file:line, let the caller
 *   fail closed).
 *
 * Allocation failure aborts the process (sl_x*): a proxy that cannot allocate cannot keep any of
 * its promises, and dying takes the child along (see up_stdio). */
#ifndef SL_BASE_H
#define SL_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ===== limits (checked where bytes arrive) ===== */
#define SL_MAX_MESSAGE   (16u << 20) /* bytes in one JSON-RPC message (one stdio line) */
#define SL_MAX_DEPTH     64          /* nesting of arrays and objects */
#define SL_MAX_STRING    SL_MAX_MESSAGE /* a string is bounded by its message */
#define SL_MAX_MEMBERS   10000       /* members of one object or elements of one array */
#define SL_MAX_NUMBER    64          /* characters in one number literal */

/* SLUICE_VERSION comes from meson.build's project version (the one place it is written). */
#ifndef SLUICE_VERSION
#error "SLUICE_VERSION is defined by the build (meson.build; tests/fuzz/run.sh reads it there)"
#endif

/* ===== slices ===== */
struct sl_str {
    const char *p;
    size_t len;
};

#define SL_STR(lit) ((struct sl_str){ (lit), sizeof(lit) - 1 })
#define SL_STR_NULL ((struct sl_str){ NULL, 0 })

/* Inline: the message code compares keys and method names all the time, mostly with literals,
 * whose length the compiler then knows. */
static inline struct sl_str sl_str_c(const char *cstr) /* NULL gives SL_STR_NULL */
{
    return cstr == NULL ? SL_STR_NULL : (struct sl_str){ cstr, strlen(cstr) };
}

static inline bool sl_str_eq(struct sl_str a, struct sl_str b) /* byte equality */
{
    return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

static inline bool sl_str_eq_c(struct sl_str a, const char *cstr)
{
    return sl_str_eq(a, sl_str_c(cstr));
}

/* ===== growable buffer ===== */
struct sl_buf {
    char *p;     /* always NUL-terminated after the first put (p[len] == 0), or NULL */
    size_t len;
    size_t cap;
    bool lent;   /* p is the caller's storage (sl_buf_on): never freed, left when outgrown */
};

/* A buffer that starts in storage[0..cap) (a stack array, say) and moves to the heap only if it
 * outgrows it: a message built and sent within one function costs no allocation. sl_buf_free
 * is still required. */
static inline void sl_buf_on(struct sl_buf *b, char *storage, size_t cap)
{
    *b = (struct sl_buf){ .p = storage, .cap = cap, .lent = true };
    storage[0] = '\0';
}

/* Makes room for extra more bytes and the NUL. Out of line: the puts below are inline because
 * writing JSON calls them for every token, and the call cost more than the copy. The tests below
 * subtract (len < cap, or both are 0) so that no length, however large, wraps them. */
void sl_buf_reserve(struct sl_buf *b, size_t extra);

static inline void sl_buf_put(struct sl_buf *b, const void *data, size_t len)
{
    if (len >= b->cap - b->len)
        sl_buf_reserve(b, len);
    if (len)
        memcpy(b->p + b->len, data, len);
    b->len += len;
    b->p[b->len] = '\0';
}

static inline void sl_buf_putc(struct sl_buf *b, char c)
{
    if (b->cap - b->len < 2)
        sl_buf_reserve(b, 1);
    b->p[b->len++] = c;
    b->p[b->len] = '\0';
}

static inline void sl_buf_puts(struct sl_buf *b, const char *cstr)
{
    sl_buf_put(b, cstr, strlen(cstr));
}
/* v in decimal into out (NUL-terminated); returns its length. For hot paths, instead of printf. */
size_t sl_u64_dec(char out[21], uint64_t v);
/* Microseconds on the monotonic clock: for deadlines and latencies, never for dates. */
uint64_t sl_mono_us(void);
/* s as a decimal number: 1 to 20 digits and nothing else, not over UINT64_MAX. */
bool sl_u64_parse(struct sl_str s, uint64_t *out);
void sl_buf_printf(struct sl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Formats an error message into err (errlen bytes; err may be NULL) and returns -1, for the
 * "return sl_fail(err, errlen, ...)" of functions that report why they failed. */
int sl_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void sl_buf_reset(struct sl_buf *b);                /* len = 0, keeps the memory */
void sl_buf_free(struct sl_buf *b);                 /* releases; the struct can be reused */
struct sl_str sl_buf_str(const struct sl_buf *b);

/* ===== arena ===== */
struct sl_arena;

struct sl_arena *sl_arena_new(void);
/* For small values kept long (a session's capabilities): chunks start at 256 bytes and double. */
struct sl_arena *sl_arena_new_small(void);
/* For a value of about `expect` bytes (a parsed message's tree): the first chunk is that size
 * rounded up to a power of two, within 256 bytes..8 KiB, and later ones double. An 8 KiB block
 * for a 300-byte message made glibc consolidate its free lists. */
struct sl_arena *sl_arena_new_sized(size_t expect);
void sl_arena_free(struct sl_arena *a);                 /* NULL is a no-op */
void *sl_arena_alloc_raw(struct sl_arena *a, size_t n); /* aligned for any type, NOT zeroed */
/* Zeroed, aligned for any type. Inline: n is most often a constant (sizeof a node), and then
 * the zeroing is a few stores rather than a call to memset. */
static inline void *sl_arena_alloc(struct sl_arena *a, size_t n)
{
    void *p = sl_arena_alloc_raw(a, n);
    memset(p, 0, n);
    return p;
}
char *sl_arena_strndup(struct sl_arena *a, const char *p, size_t len); /* NUL-terminated copy */
/* block (from malloc) is freed with a: a large value built in a buffer becomes the arena's
 * without the copy sl_arena_strndup would make. */
void sl_arena_own(struct sl_arena *a, void *block);

/* ===== offered buffers =====
 * A buffer handed on as a slice, through callbacks that take a struct sl_str, whose owner drops
 * it afterwards: the one receiver that would copy exactly those bytes (a parse into its arena,
 * a write into an evbuffer) may take the memory instead. Buys one copy of a large message at
 * each end of a relayed result (tests/bench/README.md, sizes-callgrind). One offer at a time
 * (sluice has one thread); the offerer ends it with sl_offer(NULL) as soon as the handing on
 * returns, before b can be freed or reused. */
/* Offers b's memory (ignored when b is NULL, empty or lent: sl_buf_on). NULL ends an offer. */
void sl_offer(struct sl_buf *b);
/* The offered buffer's memory when p[0..len) is exactly its bytes: the caller owns it now (free
 * it with free(); it stays NUL-terminated at len), the buffer is left empty and the offer ends.
 * Else NULL, and the caller copies. */
char *sl_offer_take(const char *p, size_t len);

/* ===== spare blocks =====
 * A stack of released structs of one type, kept for the next of that type. A proxied call makes
 * a few per-request structs, and requests come in bursts of one per connection: glibc's cache
 * holds 7 blocks of a size, and the rest of a burst goes through its slow bins. Buys 2.2 to
 * 5.7% of a call (callgrind, tests/bench/README.md: with take and keep always failing, 29,028
 * instead of 27,881 instructions per legacy call through an HTTP upstream). Assumes one thread
 * and one block size per stack. Under ASan a kept block is poisoned, so a use after release is
 * still reported. The owner clears its stack when it goes (sl_spare_clear). */
struct sl_spare {
    void *top;
    unsigned n;
};
#define SL_SPARE_MAX 32 /* kept per stack; more are freed */
/* A kept block of size bytes, its contents left as they were; NULL when none is kept. */
void *sl_spare_take(struct sl_spare *s, size_t size);
/* Keeps p (size bytes) and returns true, or returns false when SL_SPARE_MAX are kept already:
 * then p is still the caller's to free. */
bool sl_spare_keep(struct sl_spare *s, void *p, size_t size);
/* Frees every kept block. Blocks that own memory are the owner's to strip first: take them
 * one by one instead. */
void sl_spare_clear(struct sl_spare *s, size_t size);

/* ===== allocation that cannot fail (aborts) ===== */
void *sl_xmalloc(size_t n);
void *sl_xcalloc(size_t n, size_t size);
void *sl_xrealloc(void *p, size_t n);
char *sl_xstrdup(const char *s);
char *sl_xstrndup(const char *s, size_t len);

/* ===== text helpers ===== */
/* True iff p[0..len) is well-formed UTF-8 (RFC 3629): no overlong forms, no surrogates,
 * nothing above U+10FFFF. */
bool sl_utf8_valid(const char *p, size_t len);
/* Decode one code point at p (len > 0, valid UTF-8 assumed). Returns its byte length. */
size_t sl_utf8_decode(const char *p, size_t len, uint32_t *cp);

void sl_hex_encode(struct sl_buf *out, const uint8_t *data, size_t len); /* lowercase */
/* c's value as a hex digit of either case, or -1: one spelling of the digit test for the
 * parsers that read hex (JSON escapes, chunk sizes, IPv6 literals, percent escapes,
 * sl_hex_decode). */
static inline int sl_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}
/* a[0..n) == b[0..n), in a time that depends on n only (digests, nonces, key ids). */
bool sl_ct_equal(const void *a, const void *b, size_t n);
/* Decodes hex into out (cap bytes). Returns the byte count, or -1 on a bad digit, odd length or
 * overflow. */
long sl_hex_decode(const char *hex, size_t len, uint8_t *out, size_t cap);
void sl_b64url_encode(struct sl_buf *out, const uint8_t *data, size_t len); /* no padding */
/* Strict unpadded base64url: returns the byte count, or -1 on any bad character, bad length,
 * non-zero trailing bits, or overflow of cap. */
long sl_b64url_decode(const char *in, size_t len, uint8_t *out, size_t cap);

/* ===== assertions ===== */
void sl_require_failed(const char *expr, const char *file, int line) __attribute__((noreturn));
void sl_check_failed(const char *expr, const char *file, int line);

/* A state that cannot happen: abort with a message. */
#define SL_REQUIRE(x) \
    do { if (!(x)) sl_require_failed(#x, __FILE__, __LINE__); } while (0)
/* A state that should not happen but can be survived: logs and evaluates to true when x is
 * false, so the caller can refuse: `if (SL_CHECK(p != NULL)) return refuse(...);` */
#define SL_CHECK(x) \
    (!(x) ? (sl_check_failed(#x, __FILE__, __LINE__), true) : false)

#define SL_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif /* SL_BASE_H */
