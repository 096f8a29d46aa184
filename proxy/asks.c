/* asks.c: a small table of recent questions, scanned linearly (it is bounded and a question is
 * rare next to a tools/call: a person answers at most a few per minute). */
#include "asks.h"

#include <stdlib.h>
#include <string.h>

#include "seal.h"

struct ask {
    uint8_t who[16];      /* hash of the principal */
    uint8_t what[16];     /* hash of principal, tool and argument digest */
    uint8_t nonce[16];
    uint64_t iat, exp;
    bool answered;
    char *question;       /* the result JSON sent, for an identical call */
    size_t qlen;
};

struct asks {
    struct ask v[ASKS_MAX];
    size_t n;
};

struct asks *asks_new(void)
{
    return sl_xcalloc(1, sizeof(struct asks));
}

void asks_free(struct asks *a)
{
    if (a == NULL)
        return;
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i].question);
    free(a);
}

static void hash_who(struct sl_str principal, uint8_t out[16])
{
    uint8_t h[SEAL_DIGEST_LEN];
    seal_sha256(principal.p, principal.len, h);
    memcpy(out, h, 16);
}

/* Length-prefixed, so no two (principal, tool) pairs hash the same input. */
static void hash_what(struct sl_str principal, struct sl_str tool, const uint8_t digest[32],
                      uint8_t out[16])
{
    uint8_t h[SEAL_DIGEST_LEN];
    uint64_t pl = principal.len, tl = tool.len;
    struct sl_buf b = { 0 };
    sl_buf_put(&b, &pl, sizeof(pl));
    sl_buf_put(&b, principal.p, principal.len);
    sl_buf_put(&b, &tl, sizeof(tl));
    sl_buf_put(&b, tool.p, tool.len);
    sl_buf_put(&b, digest, 32);
    seal_sha256(b.p, b.len, h);
    sl_buf_free(&b);
    memcpy(out, h, 16);
}

/* An entry matters while its question can be answered, or while it counts for the rate. */
static void sweep(struct asks *a, uint64_t now)
{
    size_t j = 0;
    for (size_t i = 0; i < a->n; i++) {
        struct ask *e = &a->v[i];
        if (now < e->exp || now < e->iat + 60) {
            a->v[j++] = *e;
        } else {
            free(e->question);
        }
    }
    a->n = j;
}

static bool open_at(const struct ask *e, uint64_t now)
{
    return !e->answered && now < e->exp;
}

enum asks_status asks_check(struct asks *a, struct sl_str principal, struct sl_str tool,
                            const uint8_t digest[32], uint64_t now, unsigned max_open,
                            unsigned per_minute, struct sl_str *question)
{
    uint8_t who[16], what[16];
    hash_who(principal, who);
    hash_what(principal, tool, digest, what);
    sweep(a, now);
    unsigned open = 0, recent = 0;
    for (size_t i = 0; i < a->n; i++) {
        const struct ask *e = &a->v[i];
        if (memcmp(e->who, who, 16) != 0)
            continue;
        if (open_at(e, now) && memcmp(e->what, what, 16) == 0) {
            *question = (struct sl_str){ e->question, e->qlen };
            return ASKS_SAME;
        }
        open += open_at(e, now);
        recent += now < e->iat + 60;
    }
    if (open >= max_open)
        return ASKS_OPEN;
    if (recent >= per_minute)
        return ASKS_RATE;
    return a->n >= ASKS_MAX ? ASKS_FULL : ASKS_OK;
}

void asks_record(struct asks *a, struct sl_str principal, struct sl_str tool,
                 const uint8_t digest[32], const uint8_t nonce[16], uint64_t now, uint64_t exp,
                 struct sl_str question)
{
    if (a->n >= ASKS_MAX)
        return; /* asks_check said FULL first; nothing to record */
    struct ask *e = &a->v[a->n++];
    memset(e, 0, sizeof(*e));
    hash_who(principal, e->who);
    hash_what(principal, tool, digest, e->what);
    memcpy(e->nonce, nonce, 16);
    e->iat = now;
    e->exp = exp;
    e->question = sl_xstrndup(question.p, question.len);
    e->qlen = question.len;
}

void asks_withdrawn(struct asks *a, struct sl_str principal, struct sl_str tool,
                    const uint8_t digest[32])
{
    uint8_t what[16];
    hash_what(principal, tool, digest, what);
    for (size_t i = 0; i < a->n; i++)
        if (memcmp(a->v[i].what, what, 16) == 0)
            a->v[i].answered = true;
}

void asks_answered(struct asks *a, const uint8_t nonce[16])
{
    for (size_t i = 0; i < a->n; i++)
        if (memcmp(a->v[i].nonce, nonce, 16) == 0)
            a->v[i].answered = true;
}
