/* sl_test.h: the few cmocka helpers the unit tests share.
 *
 * Include after <cmocka.h> (which needs <stdarg.h>, <stddef.h>, <setjmp.h> and <stdint.h> first).
 * Helpers take the caller's __FILE__/__LINE__ through a macro, so a failure points at the test
 * line, not at this header. */
#ifndef SL_TEST_H
#define SL_TEST_H

#include <stdio.h>
#include <string.h>

#include "base.h"

/* Fails unless got[0..got_len) is exactly the C string want; prints both, escaped, if not. */
#define assert_bytes_equal(got, got_len, want) \
    sl_test_bytes_equal((got), (got_len), (want), __FILE__, __LINE__)

static inline void sl_test_print_escaped(const char *label, const char *p, size_t len)
{
    print_error("%s (%zu bytes): \"", label, len);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c >= 0x20 && c < 0x7f && c != '\\')
            print_error("%c", c);
        else
            print_error("\\x%02x", c);
    }
    print_error("\"\n");
}

static inline void sl_test_bytes_equal(const char *got, size_t got_len, const char *want,
                                       const char *file, int line)
{
    size_t want_len = strlen(want);
    if (got != NULL && got_len == want_len && memcmp(got, want, want_len) == 0)
        return;
    sl_test_print_escaped("got ", got ? got : "", got ? got_len : 0);
    sl_test_print_escaped("want", want, want_len);
    _fail(file, line);
}

/* Fails unless the sl_buf holds exactly the C string want. */
#define assert_buf_equal(buf, want) \
    sl_test_bytes_equal((buf).p, (buf).len, (want), __FILE__, __LINE__)

#endif /* SL_TEST_H */
