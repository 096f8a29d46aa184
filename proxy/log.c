/* log.c: stderr logging. Each line is formatted whole and written with one call so that lines
 * from sluice and the upstream's passed-through stderr do not interleave mid-line. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static enum sl_log_level min_level = SL_LOG_INFO;

void sl_log_set_level(enum sl_log_level min)
{
    min_level = min;
}

void sl_log(enum sl_log_level level, const char *fmt, ...)
{
    static const char *const names[] = { "debug", "info", "warning", "error" };
    if (level < min_level)
        return;
    char line[1024];
    int n = snprintf(line, sizeof(line), "sluice: %s: ", names[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof(line) - 2)
        len = sizeof(line) - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}
