/* canon_driver.c: sluice's JSON reader and RFC 8785 canonicalizer as a filter, for the
 * differential tests (canon.test.mjs, reader.test.mjs).
 *
 * Input, on stdin, is a sequence of records: the byte count in decimal, a newline, then exactly
 * that many bytes (any bytes: raw newlines, NUL and invalid UTF-8 included). For each record one
 * line goes to stdout:
 *   OK <canonical JSON>        json_parse accepted the bytes and canon_write wrote them
 *   CANON_ERROR                json_parse accepted, canon_write refused (no canonical form)
 *   PARSE_ERROR <message>      json_parse refused (the message has no newline)
 * Canonical JSON never holds a raw newline (RFC 8785 escapes U+000A), so one line is one answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "jsonrpc.h"

static void answer(const char *buf, size_t len)
{
    struct sl_arena *a = sl_arena_new();
    struct json *v;
    char err[200];
    if (json_parse(buf, len, a, &v, err, sizeof(err)) != 0) {
        for (char *p = err; *p; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' ';
        printf("PARSE_ERROR %s\n", err);
    } else {
        struct sl_buf out = { 0 };
        if (canon_write(&out, v) != 0) {
            puts("CANON_ERROR");
        } else {
            fputs("OK ", stdout);
            fwrite(out.p, 1, out.len, stdout);
            putchar('\n');
        }
        sl_buf_free(&out);
    }
    sl_arena_free(a);
}

int main(void)
{
    size_t cap = 1 << 16;
    char *buf = sl_xmalloc(cap);
    unsigned long long len;
    while (scanf("%llu", &len) == 1) {
        if (getchar() != '\n' || len > (64ull << 20)) {
            fprintf(stderr, "canon_driver: bad record header\n");
            return 2;
        }
        if (len + 1 > cap) {
            cap = (size_t)len + 1;
            buf = sl_xrealloc(buf, cap);
        }
        if (fread(buf, 1, (size_t)len, stdin) != (size_t)len) {
            fprintf(stderr, "canon_driver: short record\n");
            return 2;
        }
        answer(buf, (size_t)len);
    }
    free(buf);
    if (fflush(stdout) != 0 || ferror(stdin)) {
        perror("canon_driver");
        return 2;
    }
    return 0;
}
