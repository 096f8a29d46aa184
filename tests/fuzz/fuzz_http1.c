/* fuzz_http1.c: the HTTP parsers on any bytes: http1_parse_head (the request path),
 * http1_parse_response_head and http1_dechunk (the upstream's replies).
 *
 * Properties: no crash, leak or undefined behaviour; a complete head ends where the blank line
 * ends and nowhere else (every shorter prefix is "need more" or a refusal, and bytes after it do
 * not change the answer); everything it hands out lies inside the head; the method is a token,
 * the path starts with '/', no name or value holds CR, LF or NUL; a request with
 * Transfer-Encoding or disagreeing Content-Lengths is never accepted; refusals are the statuses
 * the header promises. */
#include <strings.h>

#include "fuzz.h"

#include "http1.h"

static bool inside(struct sl_str s, const char *p, size_t n)
{
    return s.len == 0 || (s.p >= p && s.p + s.len <= p + n);
}

static bool no_ctl(struct sl_str s)
{
    for (size_t i = 0; i < s.len; i++)
        if (s.p[i] == '\r' || s.p[i] == '\n' || s.p[i] == '\0')
            return false;
    return true;
}

/* Responses: the same shape rules; a status of three digits, at least 100; never both a length
 * and chunked framing. */
static void response(const char *p, size_t len, size_t max_head)
{
    struct http1_head h;
    ssize_t n = http1_parse_response_head(p, len, max_head, &h);
    FUZZ_CHECK(n == 0 || n == -502 || n > 0);
    if (n <= 0)
        return;
    size_t hl = (size_t)n;
    FUZZ_CHECK(hl <= len && hl <= max_head && p[hl - 1] == '\n');
    FUZZ_CHECK(h.status >= 100 && h.status <= 999);
    FUZZ_CHECK(!(h.chunked && h.has_length));
    for (size_t i = 0; i < h.nh; i++)
        FUZZ_CHECK(inside(h.h[i].value, p, hl) && no_ctl(h.h[i].value) && no_ctl(h.h[i].name));
    struct http1_head h2;
    FUZZ_CHECK(http1_parse_response_head(p, hl > 0 ? hl - 1 : 0, max_head, &h2) <= 0);
}

/* Chunked bodies: the bytes arriving in two pieces (cut at `cut`) decode to exactly what they
 * decode to in one piece, and the data never outgrows its input. */
static void chunks(const char *p, size_t len, size_t cut)
{
    struct http1_chunks a = HTTP1_CHUNKS_INIT, b = HTTP1_CHUNKS_INIT;
    struct sl_buf oa = { 0 }, ob = { 0 };
    ssize_t na = http1_dechunk(&a, p, len, &oa);
    FUZZ_CHECK(na >= -1 && na <= (ssize_t)len);
    cut = cut < len ? cut : len;
    ssize_t nb = http1_dechunk(&b, p, cut, &ob);
    if (nb >= 0) {
        /* The rest, offered from where the decoder stopped (it keeps partial lines for later). */
        ssize_t more = http1_dechunk(&b, p + nb, len - (size_t)nb, &ob);
        nb = more < 0 ? -1 : nb + more;
    }
    if (na >= 0 && http1_dechunk_done(&a)) {
        FUZZ_CHECK(nb == na && http1_dechunk_done(&b));
        FUZZ_CHECK(oa.len == ob.len && (oa.len == 0 || memcmp(oa.p, ob.p, oa.len) == 0));
    }
    if (na < 0) /* malformed whole is malformed in pieces (or still incomplete) */
        FUZZ_CHECK(nb < 0 || !http1_dechunk_done(&b));
    FUZZ_CHECK(oa.len <= len);
    sl_buf_free(&oa);
    sl_buf_free(&ob);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t max_head = 64 + (size_t)data[0] * 64; /* 64 .. 16 KiB */
    const char *p = (const char *)data + 1;
    size_t len = size - 1;
    response(p, len, max_head);
    chunks(p, len, data[0]);
    struct http1_head h;
    ssize_t n = http1_parse_head(p, len, max_head, &h);
    FUZZ_CHECK(n == 0 || n == -400 || n == -431 || n == -501 || n == -505 || n > 0);
    if (n <= 0)
        return 0;
    size_t hl = (size_t)n;
    FUZZ_CHECK(hl <= len && hl <= max_head);
    FUZZ_CHECK(p[hl - 1] == '\n');
    FUZZ_CHECK(h.method.len > 0 && inside(h.method, p, hl) && no_ctl(h.method));
    FUZZ_CHECK(h.path.len > 0 && h.path.p[0] == '/' && inside(h.path, p, hl) && no_ctl(h.path));
    FUZZ_CHECK(h.minor >= 0 && h.minor <= 9);
    FUZZ_CHECK(h.nh <= HTTP1_MAX_HEADERS);
    bool has_cl = false;
    for (size_t i = 0; i < h.nh; i++) {
        FUZZ_CHECK(h.h[i].name.len > 0 && inside(h.h[i].name, p, hl) && no_ctl(h.h[i].name));
        FUZZ_CHECK(inside(h.h[i].value, p, hl) && no_ctl(h.h[i].value));
        if (h.h[i].value.len) /* trimmed */
            FUZZ_CHECK(h.h[i].value.p[0] != ' ' && h.h[i].value.p[h.h[i].value.len - 1] != '\t');
        struct sl_str v;
        FUZZ_CHECK(http1_header(&h, "transfer-encoding", &v) == 0);
        if (h.h[i].name.len == 14 && strncasecmp(h.h[i].name.p, "content-length", 14) == 0)
            has_cl = true;
    }
    FUZZ_CHECK(h.has_length == has_cl);
    if (has_cl) {
        struct sl_str v;
        int k = http1_header(&h, "content-length", &v);
        FUZZ_CHECK(k == 1 || k == -1); /* repeats are allowed only when they agree */
    }
    /* The end is where the blank line ends: a shorter prefix never completes, and more bytes
     * after it do not move it. */
    struct http1_head h2;
    for (size_t k = hl > 64 ? hl - 64 : 0; k < hl; k++)
        FUZZ_CHECK(http1_parse_head(p, k, max_head, &h2) <= 0);
    FUZZ_CHECK(http1_parse_head(p, hl, max_head, &h2) == n);
    return 0;
}
