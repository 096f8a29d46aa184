/* store_redis.c: TEMPORARY lead stub until the redis branch lands the engine. */
#include "store_priv.h"

#include <stdio.h>

const struct store_ops store_redis_ops = { .kind = "redis", .shared = true };

void *store_redis_open(struct store *st, char *err, size_t errlen)
{
    (void)st;
    snprintf(err, errlen, "the Redis store is not built yet");
    return NULL;
}
