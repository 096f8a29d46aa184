/* store_url.c: TEMPORARY lead stub until the redis branch lands its version. */
#include "store_url.h"
#include <stdio.h>
#include <string.h>
int store_url_parse(const char *url, struct store_url *out, char *err, size_t errlen)
{
    if (strcmp(url, "memory") == 0) {
        out->kind = STORE_URL_MEMORY;
        return 0;
    }
    snprintf(err, errlen, "unsupported store \"%s\"", url);
    return -1;
}
bool store_prefix_ok(const char *prefix, char *err, size_t errlen)
{
    (void)prefix;
    (void)err;
    (void)errlen;
    return true;
}
