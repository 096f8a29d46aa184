/* fuzz_http1.c: the HTTP request path's parser, http1_parse_head, on any bytes.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t max_head = 64 + (size_t)data[0] * 64; /* 64 .. 16 KiB */
    const char *p = (const char *)data + 1;
    size_t len = size - 1;
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
