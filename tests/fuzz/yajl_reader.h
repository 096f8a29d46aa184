/* yajl_reader.h: the yajl-based JSON reader sluice used before its own (the reference of
 * fuzz_reader.c). Same contract as json_parse in jsonrpc.h. */
#ifndef SL_YAJL_READER_H
#define SL_YAJL_READER_H

#include "json.h"

int yajl_json_parse(const char *buf, size_t len, struct sl_arena *a, struct json **out,
                    char *err, size_t errlen);

#endif
