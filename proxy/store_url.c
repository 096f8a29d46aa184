/* store_url.c: --store URLs, --store-prefix and Redis keys (see store_url.h). */
#include "store_url.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

#define FORM "memory or redis://[USER@]HOST[:PORT][/DB]"


static bool has_scheme(const char *url, const char *scheme)
{
    return strncasecmp(url, scheme, strlen(scheme)) == 0; /* RFC 3986 3.1: case-insensitive */
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alnum(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Digits only, at most maxdigits of them, value at most max. */
static bool parse_small(const char *p, size_t len, size_t maxdigits, unsigned max, unsigned *out)
{
    if (len == 0 || len > maxdigits)
        return false;
    unsigned v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!is_digit(p[i]))
            return false;
        v = v * 10 + (unsigned)(p[i] - '0');
    }
    if (v > max)
        return false;
    *out = v;
    return true;
}

/* Neither URL nor scheme is known. The URL is repeated only when it has no user-info part, the
 * one place a password could hide. */
static int fail_unknown(const char *url, char *err, size_t errlen)
{
    if (strchr(url, '@') != NULL)
        return sl_fail(err, errlen, "store URL not understood: expected " FORM);
    return sl_fail(err, errlen, "store URL \"%.80s\" not understood: expected " FORM, url);
}

static int parse_user(const char *p, size_t len, struct store_url *out, char *err, size_t errlen)
{
    if (len == 0)
        return sl_fail(err, errlen, "redis URL: the user before '@' is empty (leave out the '@')");
    if (len > STORE_URL_USER_MAX)
        return sl_fail(err, errlen, "redis URL: the user is over %d bytes", STORE_URL_USER_MAX);
    for (size_t i = 0; i < len; i++)
        if (!is_alnum(p[i]) && strchr("-._~", p[i]) == NULL)
            return sl_fail(err, errlen,
                        "redis URL: the user may hold only letters, digits and - . _ ~");
    memcpy(out->user, p, len);
    out->user[len] = '\0';
    return 0;
}

/* [IPv6]: the text between the brackets must be an IPv6 address. */
static int parse_ipv6(const char *p, size_t len, struct store_url *out, char *err, size_t errlen)
{
    char text[INET6_ADDRSTRLEN];
    unsigned char bin[16];
    if (len == 0 || len >= sizeof(text))
        return sl_fail(err, errlen, "redis URL: no IPv6 address between '[' and ']'");
    memcpy(text, p, len);
    text[len] = '\0';
    if (inet_pton(AF_INET6, text, bin) != 1)
        return sl_fail(err, errlen, "redis URL: \"%s\" between '[' and ']' is not an IPv6 address",
                    text);
    memcpy(out->host, text, len + 1);
    return 0;
}

/* A DNS name or an IPv4 address: letters, digits, '-', '.', and '_' (compose service names). */
static int parse_name(const char *p, size_t len, struct store_url *out, char *err, size_t errlen)
{
    if (len == 0)
        return sl_fail(err, errlen, "redis URL: the host is missing");
    if (len > STORE_URL_HOST_MAX)
        return sl_fail(err, errlen, "redis URL: the host is over %d bytes", STORE_URL_HOST_MAX);
    for (size_t i = 0; i < len; i++)
        if (!is_alnum(p[i]) && strchr("-._", p[i]) == NULL)
            return sl_fail(err, errlen, "redis URL: the host \"%.*s\" may hold only letters, "
                        "digits, '-', '.' and '_' (an IPv6 address goes in brackets)",
                        (int)len, p);
    if (p[0] == '-' || p[0] == '.')
        return sl_fail(err, errlen, "redis URL: the host \"%.*s\" starts with '%c'", (int)len, p,
                    p[0]);
    memcpy(out->host, p, len);
    out->host[len] = '\0';
    return 0;
}

static int parse_port(const char *p, size_t len, struct store_url *out, char *err, size_t errlen)
{
    if (len == 0)
        return sl_fail(err, errlen, "redis URL: the port after ':' is empty");
    if (memchr(p, ':', len) != NULL)
        return sl_fail(err, errlen, "redis URL: an IPv6 address goes in brackets: "
                    "redis://[::1]:6379");
    if (!parse_small(p, len, 5, 65535, &out->port) || out->port == 0)
        return sl_fail(err, errlen, "redis URL: the port \"%.*s\" is not a number from 1 to 65535",
                    (int)(len > 16 ? 16 : len), p);
    return 0;
}

/* HOST[:PORT] or [IPv6][:PORT], in p[0..len). */
static int parse_hostport(const char *p, size_t len, struct store_url *out, char *err,
                          size_t errlen)
{
    const char *end = p + len, *colon;
    if (len > 0 && p[0] == '[') {
        const char *close = memchr(p, ']', len);
        if (close == NULL)
            return sl_fail(err, errlen, "redis URL: '[' without ']' around the IPv6 address");
        if (parse_ipv6(p + 1, (size_t)(close - p - 1), out, err, errlen) != 0)
            return -1;
        if (close + 1 == end)
            return 0;
        if (close[1] != ':')
            return sl_fail(err, errlen, "redis URL: expected ':' or '/' after ']'");
        colon = close + 1;
    } else {
        colon = memchr(p, ':', len);
        if (parse_name(p, colon ? (size_t)(colon - p) : len, out, err, errlen) != 0)
            return -1;
        if (colon == NULL)
            return 0;
    }
    return parse_port(colon + 1, (size_t)(end - colon - 1), out, err, errlen);
}

static int parse_db(const char *p, struct store_url *out, char *err, size_t errlen)
{
    size_t len = strlen(p);
    if (len == 0)
        return sl_fail(err, errlen, "redis URL: the database after '/' is missing "
                    "(leave out the '/' for database 0)");
    if (strpbrk(p, "?#") != NULL)
        return sl_fail(err, errlen, "redis URL: options after '?' or '#' are not supported");
    if (!parse_small(p, len, 2, STORE_REDIS_DBS - 1, &out->db))
        return sl_fail(err, errlen, "redis URL: the database \"%.*s\" is not a number from 0 to %d",
                    (int)(len > 16 ? 16 : len), p, STORE_REDIS_DBS - 1);
    return 0;
}

static int parse_redis(const char *rest, struct store_url *out, char *err, size_t errlen)
{
    out->kind = STORE_URL_REDIS;
    out->port = STORE_REDIS_PORT;
    /* The last '@' ends the user-info part: a password may itself hold '@', ':' or '/'. */
    const char *at = strrchr(rest, '@');
    if (at != NULL) {
        if (memchr(rest, ':', (size_t)(at - rest)) != NULL)
            return sl_fail(err, errlen, "redis URL: no password in the URL: the password comes "
                        "from SLUICE_STORE_PASSWORD, never the command line");
        if (parse_user(rest, (size_t)(at - rest), out, err, errlen) != 0)
            return -1;
        rest = at + 1;
    }
    size_t hostlen = strcspn(rest, "/?#");
    if (rest[hostlen] == '?' || rest[hostlen] == '#')
        return sl_fail(err, errlen, "redis URL: options after '?' or '#' are not supported");
    if (parse_hostport(rest, hostlen, out, err, errlen) != 0)
        return -1;
    return rest[hostlen] == '/' ? parse_db(rest + hostlen + 1, out, err, errlen) : 0;
}

int store_url_parse(const char *url, struct store_url *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (url == NULL || url[0] == '\0')
        return sl_fail(err, errlen, "the store URL is empty: expected " FORM);
    if (strcmp(url, "memory") == 0) {
        out->kind = STORE_URL_MEMORY;
        return 0;
    }
    if (has_scheme(url, "rediss://"))
        return sl_fail(err, errlen, "rediss:// is not supported: Debian's hiredis 0.14 has no TLS; "
                    "run Redis on the pod network or behind a TLS sidecar and use redis://");
    if (has_scheme(url, "redis://"))
        return parse_redis(url + strlen("redis://"), out, err, errlen);
    return fail_unknown(url, err, errlen);
}

bool store_prefix_ok(const char *prefix, char *err, size_t errlen)
{
    if (prefix == NULL) {
        sl_fail(err, errlen, "the store prefix is missing");
        return false;
    }
    size_t len = strlen(prefix);
    if (len > STORE_PREFIX_MAX) {
        sl_fail(err, errlen, "the store prefix is %zu bytes; at most %d", len, STORE_PREFIX_MAX);
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)prefix[i];
        if (c <= 0x20 || c >= 0x7f) {
            sl_fail(err, errlen, "the store prefix may hold only printable ASCII without spaces "
                 "(byte %zu is 0x%02x)", i, c);
            return false;
        }
    }
    return true;
}

void store_key_nonce(struct sl_buf *out, const char *prefix, const uint8_t nonce[16])
{
    sl_buf_puts(out, prefix);
    sl_buf_puts(out, "nonce:");
    sl_hex_encode(out, nonce, 16);
}

void store_key_epoch(struct sl_buf *out, const char *prefix)
{
    sl_buf_puts(out, prefix);
    sl_buf_puts(out, "epoch");
}

void store_key_anchors(struct sl_buf *out, const char *prefix)
{
    sl_buf_puts(out, prefix);
    sl_buf_puts(out, "audit:anchors");
}
