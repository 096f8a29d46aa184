/* http1.c: the head parsers and the chunked decoder. */
#include "http1.h"

#include <arpa/inet.h>
#include <endian.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* RFC 9110 §5.6.2 tchar, one entry per byte (0x80 and up are not). */
static const bool tchar[256] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 1, 0, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 1, 1, 0,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0,
        0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1, 0,
};

static inline bool is_tchar(unsigned char c)
{
    return tchar[c];
}

/* Field values: VCHAR, SP, HTAB, obs-text. No CR, LF, NUL or other controls. */
static bool is_vchar(unsigned char c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static struct sl_str trim(const char *p, size_t len)
{
    while (len && (*p == ' ' || *p == '\t'))
        p++, len--;
    while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
        len--;
    return (struct sl_str){ p, len };
}

/* Whether any of the 8 bytes at p is a control character (below 0x20, or DEL): the
 * word-at-a-time test of json.h ((v - n*ones) & ~v & highs flags a byte below n). */
static inline bool ctl_in8(const char *p)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    uint64_t v;
    memcpy(&v, p, 8);
    uint64_t d = v ^ (ones * 0x7f);
    return (((v - ones * 0x20) & ~v) | ((d - ones) & ~d)) & highs;
}

/* Looks for the first control character other than HTAB in whole blocks of 16 bytes from p
 * (SSE2, which every x86-64 has: a header line in one or two steps where words take four; a
 * legacy call through --upstream URL 28,100 -> 27,790 instructions, callgrind). Returns whether
 * it found one, with *at its index; else *at is a point fewer than 16 bytes before len (0
 * without SSE2) from which the caller goes on. */
static inline bool ctl_find16(const char *p, size_t len, size_t *at)
{
    size_t i = 0;
#ifdef __SSE2__
    const __m128i below = _mm_set1_epi8(0x1f), del = _mm_set1_epi8(0x7f), tab = _mm_set1_epi8('\t');
    for (; len - i >= 16; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i ctl = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(v, below), v), /* v <= 0x1f */
                                   _mm_cmpeq_epi8(v, del));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_andnot_si128(_mm_cmpeq_epi8(v, tab), ctl));
        if (m)
            return *at = i + (unsigned)__builtin_ctz(m), true;
    }
#endif
    (void)p;
    *at = i;
    return false;
}

/* One line without its terminator, found by the first control character other than HTAB, in
 * one pass. The terminator is CRLF; a bare LF too when bare_lf (RFC 9112 §2.2 allows a recipient
 * to accept it). Returns the length consumed, 0 if no terminator yet, -1 for a bare CR, a bare LF
 * unless bare_lf, or any other control character (NUL, DEL, ...): so the line's bytes are all
 * VCHAR, SP, HTAB or obs-text. The word and byte loops only see what the 16-byte step left: the
 * step's find is final (it skips HTAB itself), so it is not looked at again (with name_skip's
 * 16-byte step: a legacy call through --upstream URL 25,966 -> 25,489 instructions, callgrind of
 * the -O3 LTO build with debug info). */
static ssize_t line_end(const char *p, size_t len, size_t *line_len, bool bare_lf)
{
    size_t i;
    if (!ctl_find16(p, len, &i)) {
        for (;;) {
            while (len - i >= 8 && !ctl_in8(p + i))
                i += 8;
            while (i < len && (unsigned char)p[i] >= 0x20 && p[i] != 0x7f)
                i++;
            if (i >= len)
                return 0;
            if (p[i] != '\t')
                break;
            i++;
        }
    }
    *line_len = i;
    if (p[i] == '\n')
        return bare_lf ? (ssize_t)i + 1 : -1;
    if (p[i] != '\r')
        return -1;
    if (i + 1 == len)
        return 0;
    return p[i + 1] == '\n' ? (ssize_t)i + 2 : -1;
}

static int parse_request_line(const char *p, size_t n, struct http1_head *h)
{
    const char *sp1 = memchr(p, ' ', n);
    if (sp1 == NULL || sp1 == p)
        return -400;
    for (const char *q = p; q < sp1; q++)
        if (!is_tchar((unsigned char)*q))
            return -400;
    const char *t = sp1 + 1;
    const char *sp2 = memchr(t, ' ', (size_t)(p + n - t));
    if (sp2 == NULL || sp2 == t || *t != '/')
        return -400;
    for (const char *q = t; q < sp2; q++)
        if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f)
            return -400;
    const char *v = sp2 + 1;
    size_t vlen = (size_t)(p + n - v);
    if (vlen != 8 || memcmp(v, "HTTP/1.", 7) != 0 || v[7] < '0' || v[7] > '9')
        return vlen >= 5 && memcmp(v, "HTTP/", 5) == 0 ? -505 : -400;
    h->method = (struct sl_str){ p, (size_t)(sp1 - p) };
    const char *qm = memchr(t, '?', (size_t)(sp2 - t));
    h->path = (struct sl_str){ t, (size_t)((qm ? qm : sp2) - t) };
    h->minor = v[7] - '0';
    return 0;
}

static int parse_status_line(const char *p, size_t n, struct http1_head *h)
{
    /* HTTP/1.x SP 3DIGIT SP reason (the reason may be empty; its SP is then often missing). */
    if (n < 12 || memcmp(p, "HTTP/1.", 7) != 0 || p[7] < '0' || p[7] > '9' || p[8] != ' ')
        return -502;
    for (int i = 9; i < 12; i++)
        if (p[i] < '0' || p[i] > '9')
            return -502;
    if (n > 12 && p[12] != ' ')
        return -502; /* the reason's bytes: line_end refused control characters */
    h->minor = p[7] - '0';
    h->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    return h->status < 100 ? -502 : 0;
}

/* Up to 8 bytes of p as one word, zero-padded (the same bytes give the same word). */
static inline uint64_t load8(const char *p, size_t len)
{
    uint64_t v = 0;
    if (len >= 8) {
        memcpy(&v, p, 8);
        v = le64toh(v); /* byte i at bits 8i, as below */
    } else {
        for (size_t i = 0; i < len; i++)
            v |= (uint64_t)(unsigned char)p[i] << (8 * i);
    }
    return v;
}

/* ASCII 'A'..'Z' to lowercase in each byte of v; other bytes (obs-text too) unchanged. */
static inline uint64_t lower8(uint64_t v)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    uint64_t h = v & ~highs;
    uint64_t upper = ((h + ones * (0x80 - 'A')) ^ (h + ones * (0x80 - 'Z' - 1))) & ~v & highs;
    return v | upper >> 2;
}

/* The first 8 bytes of a name lowercased: most lookups are settled by it. */
static inline uint64_t name_key(const char *p, size_t len)
{
    return lower8(load8(p, len));
}

/* ASCII case-insensitive equality: field names are tokens, compared without the locale. */
static inline bool name_eq(struct sl_str name, const char *want, size_t len)
{
    if (name.len != len)
        return false;
    for (size_t off = 0; off < len; off += 8)
        if (name_key(name.p + off, len - off) != name_key(want + off, len - off))
            return false;
    return true;
}

/* enum http1_field's names, lowercase, and their keys (made once: C cannot fold them). */
static const char *const field_name[HTTP1_FIELDS] = {
    [HTTP1_ACCEPT] = "accept",
    [HTTP1_AUTHORIZATION] = "authorization",
    [HTTP1_CONNECTION] = "connection",
    [HTTP1_CONTENT_LENGTH] = "content-length",
    [HTTP1_CONTENT_TYPE] = "content-type",
    [HTTP1_EXPECT] = "expect",
    [HTTP1_MCP_METHOD] = "mcp-method",
    [HTTP1_MCP_NAME] = "mcp-name",
    [HTTP1_MCP_PROTOCOL_VERSION] = "mcp-protocol-version",
    [HTTP1_MCP_SESSION_ID] = "mcp-session-id",
    [HTTP1_ORIGIN] = "origin",
    [HTTP1_TRANSFER_ENCODING] = "transfer-encoding",
};

#define FIELD_MAX_LEN 20
static uint64_t field_key[HTTP1_FIELDS];
static uint64_t field_key2[HTTP1_FIELDS]; /* the second 8 bytes' key (0: a name of 8 or fewer) */
static uint32_t field_by_len[FIELD_MAX_LEN + 1]; /* bit per field of that name length */

/* The key of a name's bytes 8 to 15 (len > 8). line_len: the bytes readable from p, at least
 * len; with 16 of them the word is read at once and cut to the name (most names end early in
 * a longer line), instead of a byte at a time. */
static inline uint64_t name_key2(const char *p, size_t len, size_t line_len)
{
    size_t t = len - 8 < 8 ? len - 8 : 8;
    if (line_len < 16)
        return name_key(p + 8, t);
    uint64_t mask = t == 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * t)) - 1;
    return lower8(load8(p + 8, 8) & mask);
}

static void fields_init(void)
{
    if (field_by_len[6] != 0)
        return;
    for (int f = 0; f < HTTP1_FIELDS; f++) {
        size_t len = strlen(field_name[f]);
        field_key[f] = name_key(field_name[f], len);
        field_key2[f] = len > 8 ? name_key2(field_name[f], len, len) : 0;
        field_by_len[len] |= UINT32_C(1) << f;
    }
}

/* Which field a header is, or -1. line_len: the bytes of its line (the name and more). */
static int field_of(struct sl_str name, uint64_t key, size_t line_len)
{
    uint32_t cand = name.len <= FIELD_MAX_LEN ? field_by_len[name.len] : 0;
    while (cand) {
        int f = __builtin_ctz(cand);
        cand &= cand - 1;
        if (field_key[f] != key)
            continue;
        if (name.len <= 8)
            return f;
        if (name_key2(name.p, name.len, line_len) != field_key2[f])
            continue;
        if (name.len <= 16 || name_eq((struct sl_str){ name.p + 16, name.len - 16 },
                                      field_name[f] + 16, name.len - 16))
            return f;
    }
    return -1;
}

/* Skips the start of a header name cheaply: returns i such that p[0..i) are all tchar; the
 * caller goes on byte by byte from there (to the colon, or to a tchar this left). With SSE2, 16
 * bytes a step of letters, digits and '-' (every name sluice reads is made of them: one step
 * for most, two for Mcp-Protocol-Version); without, four tchar a step and one branch (&, not
 * &&). The 16-byte step: see line_end (four a step had bought 26,240 -> 25,930 instructions).
 * It reads p[i..i+16) only while n - i >= 16, so never past the line. */
static inline size_t name_skip(const unsigned char *p, size_t n)
{
    size_t i = 0;
#ifdef __SSE2__
    /* Signed compares: a byte of 0x80 or more is negative, so it is none of the three. */
    const __m128i before_a = _mm_set1_epi8('a' - 1), after_z = _mm_set1_epi8('z' + 1);
    const __m128i before_0 = _mm_set1_epi8('0' - 1), after_9 = _mm_set1_epi8('9' + 1);
    const __m128i dash = _mm_set1_epi8('-'), fold = _mm_set1_epi8(0x20);
    for (; n - i >= 16; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i lc = _mm_or_si128(v, fold); /* 'A'..'Z' to 'a'..'z' (and no other byte there) */
        __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(lc, before_a), _mm_cmplt_epi8(lc, after_z));
        __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, before_0), _mm_cmplt_epi8(v, after_9));
        __m128i ok = _mm_or_si128(_mm_or_si128(letter, digit), _mm_cmpeq_epi8(v, dash));
        unsigned m = ~(unsigned)_mm_movemask_epi8(ok) & 0xffffu;
        if (m)
            return i + (unsigned)__builtin_ctz(m);
    }
#else
    while (n - i >= 4 && (tchar[p[i]] & tchar[p[i + 1]] & tchar[p[i + 2]] & tchar[p[i + 3]]))
        i += 4;
#endif
    return i;
}

static int parse_header(const char *p, size_t n, struct http1_head *h)
{
    if (n == 0 || p[0] == ' ' || p[0] == '\t')
        return -400; /* obs-fold */
    const unsigned char *u = (const unsigned char *)p;
    size_t i = name_skip(u, n);
    while (i < n && tchar[u[i]])
        i++;
    if (i == n || i == 0 || p[i] != ':')
        return -400; /* includes whitespace before the colon */
    /* the value's bytes: line_end refused control characters */
    if (h->nh == HTTP1_MAX_HEADERS)
        return -431;
    struct http1_header *f = &h->h[h->nh++];
    f->name = (struct sl_str){ p, i };
    f->value = trim(p + i + 1, n - i - 1);
    /* a line of 8 bytes or more can be read a word at a time, then cut to the name */
    f->key = n >= 8 && i < 8 ? lower8(load8(p, 8) & ((UINT64_C(1) << (8 * i)) - 1))
                             : name_key(p, i);
    f->field = field_of(f->name, f->key, n);
    if (f->field >= 0) {
        if (h->at[f->field])
            h->repeated |= UINT32_C(1) << f->field;
        else
            h->at[f->field] = (uint8_t)h->nh; /* 1 + its index */
    }
    return 0;
}

#define name_is(name, lit) name_eq((name), (lit), sizeof(lit) - 1)

static int parse_length(struct sl_str v, size_t *out)
{
    if (v.len == 0 || v.len > 15)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < v.len; i++) {
        if (v.p[i] < '0' || v.p[i] > '9')
            return -1;
        n = n * 10 + (size_t)(v.p[i] - '0');
    }
    *out = n;
    return 0;
}

/* Content-Length once (repeats must agree, RFC 9110 §8.6), keep-alive, and Transfer-Encoding:
 * refused on requests, only "chunked" and without a length on responses. */
static int finish_head(struct http1_head *h, bool response)
{
    h->keep_alive = h->minor >= 1;
    int bad = response ? -502 : -400;
    for (size_t i = 0; i < h->nh; i++) {
        struct http1_header *f = &h->h[i];
        if (f->field == HTTP1_TRANSFER_ENCODING) {
            if (!response)
                return -501;
            if (h->chunked || !name_is(f->value, "chunked"))
                return -502;
            h->chunked = true;
        }
        if (f->field == HTTP1_CONTENT_LENGTH) {
            size_t n;
            if (parse_length(f->value, &n) != 0 || (h->has_length && n != h->content_length))
                return bad;
            h->has_length = true;
            h->content_length = n;
        }
        if (f->field == HTTP1_CONNECTION) {
            if (http1_list_has(f->value, "close"))
                h->keep_alive = false;
            else if (http1_list_has(f->value, "keep-alive"))
                h->keep_alive = true;
        }
    }
    return h->chunked && h->has_length ? -502 : 0;
}

static ssize_t parse_head(const char *p, size_t len, size_t max_head, struct http1_head *h,
                          bool response)
{
    /* Not the header array (2 KiB): nh says how much of it is valid. */
    h->method = h->path = SL_STR_NULL;
    h->minor = h->status = 0;
    h->keep_alive = h->has_length = h->chunked = false;
    h->content_length = 0;
    h->nh = 0;
    memset(h->at, 0, sizeof(h->at));
    h->repeated = 0;
    fields_init();
    size_t off = 0;
    /* RFC 9112 §2.2: ignore at least one empty line (CRLF) before the request line. */
    while (!response && off < 4 && len - off >= 2 && p[off] == '\r' && p[off + 1] == '\n')
        off += 2;
    bool first = true;
    for (;;) {
        size_t n;
        /* A request line ends in CRLF only: a proxy in front of sluice that splits lines at
         * bare LFs differently would see other headers than we do (request smuggling). An HTTP
         * upstream is the operator's own server: its responses may end lines in a bare LF. */
        ssize_t used = line_end(p + off, len - off, &n, response);
        if (used < 0)
            return response ? -502 : -400;
        if (used == 0)
            return len > max_head ? (response ? -502 : -431) : 0;
        if (off + (size_t)used > max_head)
            return response ? -502 : -431;
        int rc;
        if (first) {
            rc = response ? parse_status_line(p + off, n, h) : parse_request_line(p + off, n, h);
            first = false;
        } else if (n == 0) {
            rc = finish_head(h, response);
            return rc ? rc : (ssize_t)(off + (size_t)used);
        } else {
            rc = parse_header(p + off, n, h);
            if (rc && response)
                rc = -502;
        }
        if (rc)
            return rc;
        off += (size_t)used;
    }
}

ssize_t http1_parse_head(const char *p, size_t len, size_t max_head, struct http1_head *h)
{
    return parse_head(p, len, max_head, h, false);
}

ssize_t http1_parse_response_head(const char *p, size_t len, size_t max_head,
                                  struct http1_head *h)
{
    return parse_head(p, len, max_head, h, true);
}

/* ===== chunked bodies ===== */

enum { CH_SIZE, CH_DATA, CH_DATA_END, CH_TRAILER, CH_DONE };
#define CH_MAX_LINE 4096 /* a size line with extensions, or one trailer field */

/* A size line: hex digits, then optional whitespace and ";ext". */
static int chunk_size(const char *p, size_t n, size_t *out)
{
    size_t v = 0, i = 0;
    for (; i < n; i++) {
        int d = sl_hex_digit(p[i]);
        if (d < 0)
            break;
        if (v > (SIZE_MAX >> 4))
            return -1;
        v = v << 4 | (size_t)d;
    }
    if (i == 0)
        return -1;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    if (i < n && p[i] != ';')
        return -1;
    for (; i < n; i++)
        if (!is_vchar((unsigned char)p[i]))
            return -1;
    *out = v;
    return 0;
}

ssize_t http1_dechunk(struct http1_chunks *c, const char *p, size_t len, struct sl_buf *out)
{
    size_t off = 0;
    while (off < len && c->state != CH_DONE) {
        if (c->state == CH_DATA) {
            size_t take = len - off < c->left ? len - off : c->left;
            sl_buf_put(out, p + off, take);
            off += take;
            c->left -= take;
            if (c->left == 0)
                c->state = CH_DATA_END;
            continue;
        }
        size_t n;
        ssize_t used = line_end(p + off, len - off, &n, true); /* responses only: lenient */
        if (used < 0 || (used == 0 && len - off > CH_MAX_LINE) || (size_t)used > CH_MAX_LINE + 2)
            return -1;
        if (used == 0)
            break;
        if (c->state == CH_DATA_END) {
            if (n != 0)
                return -1;
            c->state = CH_SIZE;
        } else if (c->state == CH_SIZE) {
            if (chunk_size(p + off, n, &c->left) != 0)
                return -1;
            c->state = c->left ? CH_DATA : CH_TRAILER;
        } else if (n == 0) { /* CH_TRAILER: the blank line ends the body */
            c->state = CH_DONE;
        }
        off += (size_t)used;
    }
    return (ssize_t)off;
}

bool http1_dechunk_done(const struct http1_chunks *c)
{
    return c->state == CH_DONE;
}

int http1_header_n(const struct http1_head *h, const char *name, size_t len,
                   struct sl_str *value)
{
    uint64_t key = name_key(name, len);
    int found = 0;
    for (size_t i = 0; i < h->nh; i++) {
        const struct http1_header *f = &h->h[i];
        if (f->key != key || f->name.len != len)
            continue;
        if (len > 8 && !name_eq((struct sl_str){ f->name.p + 8, len - 8 }, name + 8, len - 8))
            continue; /* the rest of the name differs */
        if (found)
            return -1;
        found = 1;
        *value = f->value;
    }
    return found;
}

int http1_field(const struct http1_head *h, enum http1_field f, struct sl_str *value)
{
    if (h->repeated & (UINT32_C(1) << f))
        return -1;
    if (h->at[f] == 0)
        return 0;
    *value = h->h[h->at[f] - 1].value;
    return 1;
}

/* What follows an authority's host: nothing, or ":" and 1 to 5 digits. */
static bool port_ok(struct sl_str rest)
{
    if (rest.len == 0)
        return true;
    if (rest.p[0] != ':' || rest.len < 2 || rest.len > 6)
        return false;
    for (size_t k = 1; k < rest.len; k++)
        if (rest.p[k] < '0' || rest.p[k] > '9')
            return false;
    return true;
}

bool http1_authority_is_local(struct sl_str auth)
{
    static const char *const hosts[] = { "localhost", "127.0.0.1", "[::1]" };
    for (size_t j = 0; j < SL_ARRAY_LEN(hosts); j++) {
        size_t hl = strlen(hosts[j]);
        if (auth.len >= hl && strncasecmp(auth.p, hosts[j], hl) == 0)
            return port_ok((struct sl_str){ auth.p + hl, auth.len - hl });
    }
    return false;
}

/* auth is "[IPv6]" or "[IPv6]:port" (1 to 5 digits): the address into *addr and ":port" (or
 * nothing) into *port. Only hex digits, ':' and '.' reach inet_pton, which reads up to a NUL:
 * no zone ("%eth0"), and nothing it would stop short of. */
static bool ipv6_literal(struct sl_str auth, struct in6_addr *addr, struct sl_str *port)
{
    char text[INET6_ADDRSTRLEN];
    if (auth.len < 2 || auth.p[0] != '[')
        return false;
    const char *close = memchr(auth.p, ']', auth.len);
    size_t n = close ? (size_t)(close - auth.p) - 1 : 0;
    if (n == 0 || n >= sizeof(text))
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = auth.p[1 + i];
        if (sl_hex_digit(ch) < 0 && ch != ':' && ch != '.')
            return false;
    }
    memcpy(text, auth.p + 1, n);
    text[n] = '\0';
    if (inet_pton(AF_INET6, text, addr) != 1)
        return false;
    *port = (struct sl_str){ close + 1, auth.len - n - 2 };
    return port_ok(*port);
}

bool http1_authority_same(struct sl_str a, struct sl_str b)
{
    if (a.len == b.len && strncasecmp(a.p, b.p, a.len) == 0)
        return true;
    struct in6_addr x, y;
    struct sl_str xport, yport;
    return ipv6_literal(a, &x, &xport) && ipv6_literal(b, &y, &yport) &&
           memcmp(&x, &y, sizeof(x)) == 0 && xport.len == yport.len &&
           memcmp(xport.p, yport.p, xport.len) == 0;
}

bool http1_is_token(struct sl_str s)
{
    for (size_t i = 0; i < s.len; i++)
        if (!is_tchar((unsigned char)s.p[i]))
            return false;
    return s.len > 0;
}

/* Each element is matched where it starts, without cutting it out first (no strlen, no copy):
 * the token then OWS, and the element's end, a ';' (its parameters) or the value's end. The same
 * answer as trimming [start, ';' or ','), since a token holds none of those bytes. The next
 * element is found by memchr, not a byte loop (the three calls of a plain call 713 -> 595
 * instructions, callgrind: "text/event-stream" is the second element of the usual Accept).
 * Three calls a
 * POST (Content-Type, Accept twice); with parse_header's four-byte name scan, a legacy call
 * through --upstream URL 27,450 -> 27,000 instructions, callgrind. */
bool http1_list_has_n(struct sl_str v, const char *token, size_t tl)
{
    size_t i = 0;
    while (i < v.len) {
        while (i < v.len && (v.p[i] == ' ' || v.p[i] == '\t'))
            i++;
        /* the spelling of the token itself first (tokens are given lowercase, and clients
         * send them so): one memcmp, where folding both sides cost about 100 instructions a
         * token (issue 24) */
        if (v.len - i >= tl && (memcmp(v.p + i, token, tl) == 0 ||
                                name_eq((struct sl_str){ v.p + i, tl }, token, tl))) {
            size_t j = i + tl;
            while (j < v.len && (v.p[j] == ' ' || v.p[j] == '\t'))
                j++;
            if (j == v.len || v.p[j] == ',' || v.p[j] == ';')
                return true;
        }
        const char *comma = memchr(v.p + i, ',', v.len - i); /* the next element */
        if (comma == NULL)
            break;
        i = (size_t)(comma - v.p) + 1;
    }
    return false;
}

const char *http1_reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}
