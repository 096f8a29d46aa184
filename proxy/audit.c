/* audit.c: the decision journal. One JSON object per line. Each line is formatted whole first and
 * appended with one write(2) on an O_APPEND descriptor: every record goes to the current end of
 * the file (even after logrotate's copytruncate), and on Linux another appender (a second sluice)
 * cannot land inside it. Nothing is buffered in user space, so nothing is lost if we crash. */
#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json.h"

/* ===== the names ===== */

static const char *const decision_names[AUDIT_DECISION_COUNT] = {
    [AUDIT_ALLOW] = "allow",
    [AUDIT_DENY] = "deny",
    [AUDIT_ASKED] = "asked",
    [AUDIT_CLIENT_ACCEPTED] = "client-accepted",
    [AUDIT_DECLINED] = "declined",
    [AUDIT_CANCELLED] = "cancelled",
    [AUDIT_REFUSED] = "refused",
    [AUDIT_TOKEN_ISSUED] = "token-issued",
    [AUDIT_TOKEN_REDEEMED] = "token-redeemed",
    [AUDIT_REPLAYED_RESULT] = "replayed-result",
    [AUDIT_OBSERVE] = "observe",
    [AUDIT_OBSERVING] = "observing",
};

static const char *const upstream_names[AUDIT_UPSTREAM_COUNT] = {
    [AUDIT_UP_OK] = "ok",
    [AUDIT_UP_TOOL_ERROR] = "tool-error",
    [AUDIT_UP_ERROR] = "error",
    [AUDIT_UP_INPUT_REQUIRED] = "input-required",
    [AUDIT_UP_NO_RESPONSE] = "no-response",
    [AUDIT_UP_CANCELLED] = "cancelled",
    [AUDIT_UP_NOT_FORWARDED] = "not-forwarded",
};

const char *audit_decision_name(enum audit_decision d)
{
    return (unsigned)d < AUDIT_DECISION_COUNT ? decision_names[d] : NULL;
}

const char *audit_upstream_name(enum audit_upstream u)
{
    return (unsigned)u < AUDIT_UPSTREAM_COUNT ? upstream_names[u] : NULL;
}

/* ===== the file ===== */

struct audit {
    int fd;
    struct sl_buf line; /* reused for every record */
};

struct audit *audit_open(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "open(%s): %s", path, strerror(errno));
        return NULL;
    }
    struct audit *a = sl_xcalloc(1, sizeof(*a));
    a->fd = fd;
    return a;
}

void audit_close(struct audit *a)
{
    if (a == NULL)
        return;
    close(a->fd);
    sl_buf_free(&a->line);
    free(a);
}

/* ===== formatting ===== */

/* RFC 3339 UTC with milliseconds: "2026-11-29T14:00:00.123Z". A time gmtime cannot represent
 * (far outside any real clock) is written as null rather than as a wrong date. */
static void put_time(struct sl_buf *out, uint64_t ms)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    char date[64];
    if ((uint64_t)secs != ms / 1000 || gmtime_r(&secs, &tm) == NULL ||
        strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
        sl_buf_puts(out, "null");
        return;
    }
    sl_buf_printf(out, "\"%s.%03uZ\"", date, (unsigned)(ms % 1000));
}

/* A C string field: JSON-escaped (so quotes and newlines in untrusted text cannot break the line),
 * or null when absent. */
static void put_cstr(struct sl_buf *out, const char *s)
{
    if (s == NULL)
        sl_buf_puts(out, "null");
    else
        json_write_string(out, s, strlen(s));
}

static void put_digest(struct sl_buf *out, const uint8_t *digest)
{
    if (digest == NULL) {
        sl_buf_puts(out, "null");
        return;
    }
    sl_buf_putc(out, '"');
    sl_hex_encode(out, digest, 32);
    sl_buf_putc(out, '"');
}

/* request_id comes from our own writer, so it should always be a JSON string or number. It is
 * still checked, cheaply, because a bad one would corrupt the line (and with a newline, forge the
 * next one): a string must be quoted with no raw control byte and no unescaped quote inside; a
 * number may only use number characters. Anything else is left out of the record. */
static bool id_string_ok(const char *s, size_t len)
{
    if (len < 2 || s[0] != '"' || s[len - 1] != '"')
        return false;
    for (size_t i = 1; i < len - 1; i++) {
        if ((unsigned char)s[i] < 0x20 || s[i] == '"')
            return false;
        if (s[i] == '\\' && ++i == len - 1)
            return false; /* the closing quote was escaped */
    }
    return true;
}

static bool id_ok(const char *s)
{
    size_t len = strlen(s);
    if (len == 0)
        return false;
    if (s[0] == '"')
        return id_string_ok(s, len);
    return strspn(s, "0123456789-+.eE") == len;
}

void audit_format(struct sl_buf *out, const struct audit_record *r)
{
    sl_buf_puts(out, "{\"time\":");
    put_time(out, r->time_ms);
    sl_buf_puts(out, ",\"principal\":");
    put_cstr(out, r->principal);
    sl_buf_puts(out, ",\"tool\":");
    if (r->tool.p == NULL)
        sl_buf_puts(out, "null");
    else
        json_write_string(out, r->tool.p, r->tool.len);
    sl_buf_puts(out, ",\"args_sha256\":");
    put_digest(out, r->args_digest);
    sl_buf_puts(out, ",\"decision\":");
    put_cstr(out, audit_decision_name(r->decision));
    sl_buf_puts(out, ",\"reason\":");
    put_cstr(out, r->reason);
    sl_buf_puts(out, ",\"upstream\":");
    put_cstr(out, audit_upstream_name(r->upstream));
    if (r->request_id != NULL && id_ok(r->request_id)) {
        sl_buf_puts(out, ",\"id\":");
        sl_buf_puts(out, r->request_id);
    }
    sl_buf_puts(out, "}\n");
}

/* ===== writing ===== */

/* One write(2) normally carries the whole line; the loop only finishes a short write or retries
 * after a signal, it never splits a line on purpose. */
static int write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0)
            errno = EIO; /* cannot happen for len > 0; do not spin on it */
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int audit_write(struct audit *a, const struct audit_record *r)
{
    if (a == NULL)
        return 0;
    sl_buf_reset(&a->line);
    audit_format(&a->line, r);
    return write_all(a->fd, a->line.p, a->line.len);
}
