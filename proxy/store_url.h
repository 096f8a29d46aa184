/* store_url.h: the text around the store, without the store: --store URLs, --store-prefix and
 * the Redis keys they give. Pure (part of libsluice_core): no event loop, no hiredis, so every
 * form and refusal is unit-tested on its own (tests/unit/test_store_url.c).
 *
 * Accepted URLs:
 *   memory
 *   redis://[USER@]HOST[:PORT][/DB]   HOST a name, an IPv4 address or [an IPv6 address];
 *                                     PORT 1-65535 (6379 when absent); DB 0-15 (0 when absent)
 * Refused, each with a message that says why: rediss:// (Debian's hiredis 0.14 has no TLS), a
 * password in the URL (it comes from SLUICE_STORE_PASSWORD only: argv is visible to every user
 * of the machine), and anything else. A message never repeats the URL's user-info part, which
 * may hold a password. */
#ifndef SL_STORE_URL_H
#define SL_STORE_URL_H

#include "base.h"

#define STORE_URL_HOST_MAX 253    /* a DNS name's longest text form */
#define STORE_URL_USER_MAX 64     /* a Redis ACL user name, as sluice accepts it */
#define STORE_PREFIX_MAX   64     /* bytes of --store-prefix */
#define STORE_REDIS_PORT   6379   /* when the URL names none */
#define STORE_REDIS_DBS    16     /* SELECT 0..15: Redis's default `databases` */

enum store_url_kind {
    STORE_URL_MEMORY,
    STORE_URL_REDIS,
};

struct store_url {
    enum store_url_kind kind;
    char host[STORE_URL_HOST_MAX + 1]; /* redis: a name or address; an IPv6 one without [] */
    unsigned port;                     /* redis: 1..65535 */
    char user[STORE_URL_USER_MAX + 1]; /* redis: the ACL user, "" for none (AUTH password) */
    unsigned db;                       /* redis: 0..15 */
};

/* Parses url into out. 0, or -1 with a message in err (out is then unspecified). */
int store_url_parse(const char *url, struct store_url *out, char *err, size_t errlen);

/* Whether prefix may namespace sluice's keys: printable ASCII without spaces, at most
 * STORE_PREFIX_MAX bytes (the empty prefix is allowed). False with a message in err. */
bool store_prefix_ok(const char *prefix, char *err, size_t errlen);

/* Appends the key of a nonce's record to out: prefix "nonce:" and the nonce in lowercase hex. */
void store_key_nonce(struct sl_buf *out, const char *prefix, const uint8_t nonce[16]);
/* Appends the key of the store's epoch to out: prefix "epoch". */
void store_key_epoch(struct sl_buf *out, const char *prefix);

/* Appends the key of the audit anchors' list to out: prefix "audit:anchors". */
void store_key_anchors(struct sl_buf *out, const char *prefix);
#endif /* SL_STORE_URL_H */
