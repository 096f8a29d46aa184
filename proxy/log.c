/* log.c: stderr logging. Each line is formatted whole and written with one call so that lines
 * from sluice and the upstream's passed-through stderr do not interleave mid-line. */
#include "log.h"

#include "base.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static enum sl_log_level min_level = SL_LOG_INFO;
static bool json_lines;
static char request_id[32];

void sl_log_set_request(const char *rid)
{
    size_t n = 0; /* not strnlen: rid may be shorter than request_id (LTO sees that) */
    while (rid && n < sizeof(request_id) - 1 && rid[n])
        n++;
    memcpy(request_id, rid ? rid : "", n);
    request_id[n] = '\0';
}

void sl_log_set_level(enum sl_log_level min)
{
    min_level = min;
}

void sl_log_set_json(bool on)
{
    json_lines = on;
}

bool sl_log_enabled(enum sl_log_level level)
{
    return level >= min_level;
}

bool sl_log_json(void)
{
    return json_lines;
}

/* {"ts":"2026-11-29T17:00:00.123Z","level":"info","msg":"..."}: the message escaped as JSON
 * strings are (quote, backslash, control characters). */
static size_t json_line(char *out, size_t cap, const char *level, const char *source,
                        const char *msg)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    int n = snprintf(out, cap, "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\",\"level\":\"%s\","
                               "%s%s%s%s%s%s\"msg\":\"", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000), level,
                     source ? "\"source\":\"" : "", source ? source : "", source ? "\"," : "",
                     request_id[0] ? "\"request_id\":\"" : "", request_id,
                     request_id[0] ? "\"," : "");
    size_t len = n < 0 ? 0 : (size_t)n;
    for (const unsigned char *p = (const unsigned char *)msg; *p && len + 8 < cap; p++) {
        if (*p == '"' || *p == '\\') {
            out[len++] = '\\';
            out[len++] = (char)*p;
        } else if (*p < 0x20) {
            len += (size_t)snprintf(out + len, cap - len, "\\u%04x", *p);
        } else {
            out[len++] = (char)*p;
        }
    }
    memcpy(out + len, "\"}", 2);
    return len + 2;
}

static void vlog(enum sl_log_level level, const char *fmt, va_list ap)
{
    static const char *const names[] = { "debug", "info", "warning", "error" };
    char msg[1024], line[2200];
    int m = vsnprintf(msg, sizeof(msg), fmt, ap);
    if (m < 0)
        msg[0] = '\0';
    size_t len;
    if (json_lines) {
        len = json_line(line, sizeof(line) - 1, names[level], NULL, msg);
    } else {
        int n = snprintf(line, sizeof(line) - 1, "sluice: %s: %s", names[level], msg);
        len = n < 0 ? 0 : (size_t)n;
        if (len > sizeof(line) - 2)
            len = sizeof(line) - 2;
    }
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void sl_log(enum sl_log_level level, const char *fmt, ...)
{
    if (level < min_level)
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

void sl_log_always(enum sl_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

/* The length of the well-formed UTF-8 sequence at p, or 0. */
static size_t utf8_seq(const unsigned char *p, size_t len)
{
    size_t k = p[0] < 0x80 ? 1 : p[0] >= 0xc2 && p[0] < 0xe0 ? 2 : p[0] >= 0xe0 && p[0] < 0xf0 ? 3
             : p[0] >= 0xf0 && p[0] < 0xf5 ? 4 : 0;
    return k && k <= len && sl_utf8_valid((const char *)p, k) ? k : 0;
}

void sl_log_child(const char *text, size_t len)
{
    do {
        char msg[900], line[2200];
        size_t n = 0, i = 0;
        while (i < len && n + 4 < sizeof(msg)) {
            size_t k = utf8_seq((const unsigned char *)text + i, len - i);
            if (k == 0) { /* JSON text must be UTF-8 */
                msg[n++] = '?';
                i++;
            } else {
                memcpy(msg + n, text + i, k);
                n += k, i += k;
            }
        }
        msg[n] = '\0';
        size_t ll = json_line(line, sizeof(line) - 1, "info", "upstream", msg);
        line[ll++] = '\n';
        ssize_t w = write(STDERR_FILENO, line, ll);
        (void)w;
        text += i, len -= i;
    } while (len > 0);
}
