/* http1.c: the head parsers and the chunked decoder. */
#include "http1.h"

#include <string.h>
#include <strings.h>

static bool is_tchar(unsigned char c)
{
    /* RFC 9110 §5.6.2 tchar, as a bit per character of 0x00..0x7f. */
    static const uint32_t bits[4] = { 0x00000000, 0x03ff6cfa, 0xc7fffffe, 0x57ffffff };
    return c < 0x80 && (bits[c >> 5] >> (c & 31) & 1);
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

/* One line without its terminator (CRLF, or a bare LF as RFC 9112 §2.2 allows). Returns the
 * length consumed, 0 if no terminator yet, -1 for a bare CR. */
static ssize_t line_end(const char *p, size_t len, size_t *line_len)
{
    const char *nl = memchr(p, '\n', len);
    if (nl == NULL)
        return 0;
    size_t n = (size_t)(nl - p);
    *line_len = (n > 0 && p[n - 1] == '\r') ? n - 1 : n;
    if (memchr(p, '\r', *line_len) != NULL)
        return -1;
    return (ssize_t)n + 1;
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
        return -502;
    for (size_t i = 12; i < n; i++)
        if (!is_vchar((unsigned char)p[i]))
            return -502;
    h->minor = p[7] - '0';
    h->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    return h->status < 100 ? -502 : 0;
}

static int parse_header(const char *p, size_t n, struct http1_head *h)
{
    if (n == 0 || p[0] == ' ' || p[0] == '\t')
        return -400; /* obs-fold */
    const char *colon = memchr(p, ':', n);
    if (colon == NULL || colon == p)
        return -400;
    for (const char *q = p; q < colon; q++)
        if (!is_tchar((unsigned char)*q))
            return -400; /* includes whitespace before the colon */
    for (const char *q = colon + 1; q < p + n; q++)
        if (!is_vchar((unsigned char)*q))
            return -400;
    if (h->nh == HTTP1_MAX_HEADERS)
        return -431;
    struct http1_header *f = &h->h[h->nh++];
    f->name = (struct sl_str){ p, (size_t)(colon - p) };
    f->value = trim(colon + 1, (size_t)(p + n - colon - 1));
    return 0;
}

static bool name_is(struct sl_str name, const char *want)
{
    return name.len == strlen(want) && strncasecmp(name.p, want, name.len) == 0;
}

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
        if (name_is(f->name, "transfer-encoding")) {
            if (!response)
                return -501;
            if (h->chunked || f->value.len != 7 || strncasecmp(f->value.p, "chunked", 7) != 0)
                return -502;
            h->chunked = true;
        }
        if (name_is(f->name, "content-length")) {
            size_t n;
            if (parse_length(f->value, &n) != 0 || (h->has_length && n != h->content_length))
                return bad;
            h->has_length = true;
            h->content_length = n;
        }
        if (name_is(f->name, "connection")) {
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
    size_t off = 0;
    /* RFC 9112 §2.2: ignore at least one empty line before the request line. */
    while (!response && off < len && off < 4 && (p[off] == '\r' || p[off] == '\n'))
        off++;
    bool first = true;
    for (;;) {
        size_t n;
        ssize_t used = line_end(p + off, len - off, &n);
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
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
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
        ssize_t used = line_end(p + off, len - off, &n);
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

int http1_header(const struct http1_head *h, const char *name, struct sl_str *value)
{
    int found = 0;
    for (size_t i = 0; i < h->nh; i++) {
        if (name_is(h->h[i].name, name)) {
            if (found)
                return -1;
            found = 1;
            *value = h->h[i].value;
        }
    }
    return found;
}

bool http1_is_token(struct sl_str s)
{
    for (size_t i = 0; i < s.len; i++)
        if (!is_tchar((unsigned char)s.p[i]))
            return false;
    return s.len > 0;
}

bool http1_list_has(struct sl_str v, const char *token)
{
    size_t tl = strlen(token);
    size_t i = 0;
    while (i < v.len) {
        while (i < v.len && (v.p[i] == ' ' || v.p[i] == '\t' || v.p[i] == ','))
            i++;
        size_t s = i;
        while (i < v.len && v.p[i] != ',' && v.p[i] != ';')
            i++;
        struct sl_str item = trim(v.p + s, i - s);
        if (item.len == tl && strncasecmp(item.p, token, tl) == 0)
            return true;
        while (i < v.len && v.p[i] != ',')
            i++;
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
