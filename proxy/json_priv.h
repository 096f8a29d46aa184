/* json_priv.h: the JSON reader's and writer's speed tricks, private to json.c and jsonrpc.c (the
 * reader), the two files that own them. Nothing else includes it. Each trick says what it buys,
 * measured as callgrind instructions per call of sluice with the trick written plainly instead
 * (`BUILD=<lto build> bash tests/bench/run.sh --only callgrind --rounds 1 --quiet-wait 0`,
 * tests/bench/README.md; 2 AMD EPYC CPUs, gcc -O3 with LTO, December 2026; noise there is about
 * 0.3%), and what it assumes. */
#ifndef SL_JSON_PRIV_H
#define SL_JSON_PRIV_H

#include <endian.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "json.h"

/* ===== the raw and plain flags (struct json) =====
 * Buys: 3.6% of a modern call (HTTP upstream 31,113 -> 30,022 instructions, stdio 26,896 ->
 * 25,963), nothing measurable on a legacy one (27,843 -> 27,881). A message is mostly relayed as it came: the writer copies a raw
 * container's text and a plain string's bytes instead of walking and escaping them.
 * Assumes: raw is set only by the reader on a container whose text had no whitespace (so the
 * text is what json_write would give, or with esc, what it would give but for the escapes kept
 * as sent), or by json_verbatim with the caller's text; every edit in json.c clears it on the container and each enclosing one (unraw), and
 * nobody changes a string in place. plain is set only by the reader on a string that had no
 * escape (the grammar refuses raw '"', '\\' and control bytes there).
 *
 * A raw container's text is kept by the reader just before its member (or item) array. It is
 * a slice of the arena's copy of the message, in which the closing quote of every string is a
 * NUL (see jsonrpc.c): the writer puts the quotes back. parent: the enclosing container, or
 * NULL for the root. A raw value that is not a container (json_verbatim only) keeps its text
 * just before the value itself. */
struct json_text {
    const char *p;
    size_t len;
    struct json *parent;
};

static inline struct json_text *json_text_of(const struct json *v)
{
    if (v->type == JSON_OBJECT)
        return (struct json_text *)(void *)v->u.obj.v - 1;
    if (v->type == JSON_ARRAY)
        return (struct json_text *)(void *)v->u.arr.v - 1;
    return (struct json_text *)(void *)v - 1;
}

/* ===== esc: relaying a text with escapes as it came =====
 * Buys: a legacy result of 1 MiB whose text has one escape (tests/bench sizes-callgrind) no
 * longer walked and escaped again by json_write_string (1.1 instructions per byte): the reader
 * keeps the container's text although a string in it had escapes, and json_write_relay copies
 * it. Assumes: the reader refused every escape it could not decode to valid UTF-8 (so the peer
 * decodes the value sluice checked) and nobody edits the value in place (see raw above). */

/* ===== eight bytes at a time =====
 * Buys: 1.5 to 1.8% of a modern call for scanning string text a word at a time (the reader's
 * read_string, the writer's plain_prefix and json_write_string; byte by byte instead: HTTP
 * upstream 30,572 -> 30,022, stdio 26,344 -> 25,963), 0.1 to 0.3% of a legacy one. (Keys
 * compared eight bytes a step in json_get_n bought 0.7% at most, so it is a memcmp now.)
 * Assumes: unaligned 8-byte loads through memcpy are cheap (x86-64, arm64), and the caller has
 * 8 readable bytes at p (every caller checks the length first). Where SSE2 is there, the scan
 * below takes sixteen bytes a step instead and these are left to the other readers. */

/* The 8 bytes at p as a word, byte i in bits 8i..8i+7 whatever the machine's byte order. */
static inline uint64_t json_load8(const void *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return le64toh(v);
}

/* Which of the 8 bytes at p a JSON string cannot hold as they are: '"', '\\' or a byte below
 * 0x20. The word-at-a-time tests ((v - n*ones) & ~v & highs flags a byte below n) set bit 7 of
 * such a byte. A borrow can also set bits above a flagged byte, never below the first one: the
 * mask is exact for "any", and __builtin_ctzll(mask) / 8 is the index of the first. 0: none. */
static inline uint64_t json_special_mask8(const void *p)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    uint64_t v = json_load8(p);
    uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');
    return (((v - ones * 0x20) & ~v) | ((q - ones) & ~q) | ((b - ones) & ~b)) & highs;
}

/* json_plain[c]: byte c can stand in a JSON string as it is (not '"', '\\' or below 0x20): the
 * byte-wise tail of the scans above. */
extern const bool json_plain[256];

/* ===== sixteen bytes at a time =====
 * Buys: a large string's scan, the reader's and the writer's, in about a third of the
 * instructions of the word-at-a-time one above: a legacy call with 1 MiB of arguments echoed
 * back, HTTP upstream, 18.4 -> 13.2 instructions per byte of arguments; a plain legacy call
 * 28,620 -> 28,088 (both callgrind, the -O3 LTO build with debug info, the first with a
 * driver of 12 calls minus 2, the second loadgen 3,000 minus 1,000). Assumes: SSE2, which
 * every x86-64 has; elsewhere the word loop does the same job. */

/* Skips the bytes from p that a JSON string holds as they are (json_plain). Returns the first
 * byte that is not one, or a point fewer than 16 bytes before end from which the caller goes on
 * byte by byte. *high gets bit 7 set when a byte skipped is not ASCII (the readers' UTF-8 check
 * hangs on that bit). */
static inline const unsigned char *json_skip_plain(const unsigned char *p,
                                                   const unsigned char *end, uint64_t *high)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i below = _mm_set1_epi8(0x1f);
    unsigned nonascii = 0;
    /* Long text: after a first 16 bytes with nothing special (most strings end within them),
     * 32 bytes a step, and which bytes are not ASCII kept as an OR of the bytes, looked at once
     * at the end, not a movemask a step. The step that holds the first special byte is left to
     * the 16-byte loop, which finds it. Buys: a 1 MiB string scanned in about 0.7 instead of
     * 1.2 instructions a byte (sizes-callgrind, results of 1 MiB); short strings pay nothing. */
    bool wide = false;
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i ctl = _mm_cmpeq_epi8(_mm_min_epu8(v, below), v); /* v <= 0x1f */
        __m128i bad = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), ctl),
                                   _mm_cmpeq_epi8(v, bslash));
        unsigned m = (unsigned)_mm_movemask_epi8(bad), top = (unsigned)_mm_movemask_epi8(v);
        if (m) {
            unsigned first = (unsigned)__builtin_ctz(m);
            *high |= (uint64_t)((nonascii | (top & ((1u << first) - 1))) != 0) << 7;
            return p + first;
        }
        nonascii |= top;
        p += 16;
        if (wide)
            continue;
        wide = true;
        __m128i seen = _mm_setzero_si128();
        for (; end - p >= 32; p += 32) {
            __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)p);
            __m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
            __m128i bad0 = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v0, quote),
                                                     _mm_cmpeq_epi8(_mm_min_epu8(v0, below), v0)),
                                        _mm_cmpeq_epi8(v0, bslash));
            __m128i bad1 = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v1, quote),
                                                     _mm_cmpeq_epi8(_mm_min_epu8(v1, below), v1)),
                                        _mm_cmpeq_epi8(v1, bslash));
            if (_mm_movemask_epi8(_mm_or_si128(bad0, bad1)))
                break;
            seen = _mm_or_si128(seen, _mm_or_si128(v0, v1));
        }
        nonascii |= (unsigned)_mm_movemask_epi8(seen);
    }
    *high |= (uint64_t)(nonascii != 0) << 7;
#else
    for (; end - p >= 8; p += 8) {
        uint64_t special = json_special_mask8(p);
        if (special) {
            unsigned first = (unsigned)__builtin_ctzll(special) / 8;
            *high |= json_load8(p) & ((UINT64_C(1) << (8 * first)) - 1);
            return p + first;
        }
        *high |= json_load8(p);
    }
#endif
    return p;
}

#endif /* SL_JSON_PRIV_H */
