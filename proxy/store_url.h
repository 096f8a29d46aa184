/* store_url.h: TEMPORARY lead stub until the redis branch lands its version. */
#ifndef SL_STORE_URL_H
#define SL_STORE_URL_H
#include "base.h"
enum store_url_kind { STORE_URL_MEMORY, STORE_URL_REDIS };
struct store_url { enum store_url_kind kind; };
int store_url_parse(const char *url, struct store_url *out, char *err, size_t errlen);
bool store_prefix_ok(const char *prefix, char *err, size_t errlen);
#endif
