/* seal.h: the sealed request state of a confirmation round (AES-256-GCM, OpenSSL EVP).
 *
 * A state is what sluice hands the client in round one and must get back, unchanged, in round two.
 * It is encrypted and authenticated; it carries ids, digests and times, never argument values.
 *
 *   token  = "s1." base64url( kid[4] | iv[12] | ciphertext | tag[16] )
 *   AAD    = "sluice-state-v1" | kid | len-prefixed(method, tool, principal, upstream)
 *   plain  = kind[1] | nonce[16] | origin[16] | iat[8] | exp[8] | args_digest[32]
 *            | def_digest[32] | inner_len[4] | inner
 *
 * The binding (method, tool, principal, upstream) is associated data: a state presented for
 * another tool, principal or upstream fails authentication. The argument digest travels inside the
 * authenticated payload instead, so that the gate can tell "the arguments changed" (a tool error
 * the model can act on) from "this state is not ours" (a JSON-RPC error); both fail closed.
 *
 * Key ring: the current key seals; the current and the previous key open, chosen by key id
 * (the first 4 bytes of SHA-256("sluice-kid" | derived key)). Key material of any length >= 32 is
 * turned into the AES key by SHA-256("sluice-seal-v1" | material). Keys are wiped on free. */
#ifndef SL_SEAL_H
#define SL_SEAL_H

#include "base.h"

#define SEAL_KEY_MIN      32
#define SEAL_NONCE_LEN    16
#define SEAL_ORIGIN_LEN   16
#define SEAL_DIGEST_LEN   32
#define SEAL_INNER_MAX    (64u << 10)  /* a wrapped upstream state, at most */
/* Seconds by which the clocks of replicas that share a key may differ: a state minted further
 * in this clock's future is refused (seal_open), and a shared store keeps a spent nonce at least
 * this long past its state's expiry (store_ttl), so a replica whose clock is behind never takes
 * it for fresh. */
#define SEAL_CLOCK_SKEW   300
#define SEAL_TOKEN_MAX    ((SEAL_INNER_MAX + 200) * 4 / 3 + 16)

enum seal_kind {
    SEAL_KIND_CONFIRM = 1, /* a confirmation round (elicitation) */
    SEAL_KIND_TOKEN = 2,   /* a one-time token fallback (no person asked) */
    SEAL_KIND_CONTINUE = 3, /* an approved call the upstream asked about: inner = its state */
    SEAL_KIND_PAGE = 4,    /* a question on sluice's approval page (approval.h) */
    SEAL_KIND_CONTINUE_UNGATED = 5, /* ... a call the policy did not gate: no approval in it */
    /* ... an approved call whose tool observes: inner = the observed digest[32], then the
     * upstream's state. Its own kind, so the state says how to read its inner whatever the
     * policy says when it comes back. */
    SEAL_KIND_CONTINUE_OBSERVED = 6,
};

#define SEAL_KIND_VALID(k) ((k) >= SEAL_KIND_CONFIRM && (k) <= SEAL_KIND_CONTINUE_OBSERVED)

enum seal_status {
    SEAL_OK = 0,
    SEAL_EFORMAT = -1,  /* not a state of ours: prefix, encoding, length */
    SEAL_EKEY = -2,     /* key id names no key in the ring */
    SEAL_EAUTH = -3,    /* authentication failed: tampered, or bound to another tool/principal/... */
    SEAL_EEXPIRED = -4, /* authentic but now >= exp */
};

struct seal_keyring;

/* What the state is bound to (associated data). Slices are borrowed for the call. */
struct seal_binding {
    struct sl_str method;    /* "tools/call" */
    struct sl_str tool;
    struct sl_str principal;
    struct sl_str upstream;  /* an id of the upstream this deployment fronts */
};

/* What the state carries (encrypted). */
struct seal_claims {
    enum seal_kind kind;
    uint8_t nonce[SEAL_NONCE_LEN];
    uint8_t origin[SEAL_ORIGIN_LEN];      /* the minting process (gate.h: gate_ctx.origin) */
    uint64_t iat, exp;                    /* unix seconds */
    uint8_t args_digest[SEAL_DIGEST_LEN];
    uint8_t def_digest[SEAL_DIGEST_LEN];  /* the tool's definition when minted (pin.h); zero:
                                           * not known then */
    struct sl_str inner;                  /* optional opaque bytes (a wrapped upstream state) */
    unsigned key;                         /* which key of the ring: seal_open sets the one that
                                           * opened the state (0 the current, 1 the previous);
                                           * seal_mint ignores it, as the current key seals */
};

/* New ring from key material (>= SEAL_KEY_MIN bytes each). prev may be NULL. Returns NULL if a
 * key is too short. The caller may wipe its copies afterwards. */
struct seal_keyring *seal_keyring_new(const uint8_t *cur, size_t cur_len,
                                      const uint8_t *prev, size_t prev_len);
/* New ring with a random current key and no previous key. */
struct seal_keyring *seal_keyring_random(void);
void seal_keyring_free(struct seal_keyring *kr); /* wipes; NULL is a no-op */

/* Reads key material from a file: refuses (returns -1, message in err) a file that others can
 * read or write (mode & 077), that is not a regular file, or that holds fewer than SEAL_KEY_MIN
 * bytes. On success *key is malloc'd (caller wipes and frees) and returns 0. */
int seal_key_from_file(const char *path, uint8_t **key, size_t *len, char *err, size_t errlen);
/* Decodes hex key material (at least 2*SEAL_KEY_MIN digits). Same contract. */
int seal_key_from_hex(const char *hex, uint8_t **key, size_t *len, char *err, size_t errlen);

/* Fills claims->nonce with random bytes. Returns 0, or -1 if the RNG failed. */
int seal_random_nonce(uint8_t nonce[SEAL_NONCE_LEN]);

/* Seals claims under the current key, bound to b; appends the token (ASCII) to out.
 * Returns 0, or -1 on a crypto failure or an inner state over SEAL_INNER_MAX. */
int seal_mint(const struct seal_keyring *kr, const struct seal_binding *b,
              const struct seal_claims *c, struct sl_buf *out);

/* Opens token under binding b at time now (unix seconds). On SEAL_OK fills *c; c->inner points
 * into inner_buf (which the caller owns and frees). Any other return leaves *c unspecified and
 * must be refused. Never reads past len. */
enum seal_status seal_open(const struct seal_keyring *kr, const struct seal_binding *b,
                           uint64_t now, const char *token, size_t len,
                           struct seal_claims *c, struct sl_buf *inner_buf);

const char *seal_strerror(enum seal_status st);

/* HMAC-SHA-256 under the ring's current key of label, a zero byte, then p[0..len): a tag
 * bound to this deployment (the approval page's ids and CSRF tokens). Labels keep uses apart. */
void seal_mac(const struct seal_keyring *kr, const char *label, const void *p, size_t len,
              uint8_t out[32]);

/* The same under key `key` of the ring (seal_claims.key: 0 the current, 1 the previous, which
 * the ring must hold): a tag tied to one state stays the same after a rotation. */
void seal_mac_key(const struct seal_keyring *kr, unsigned key, const char *label, const void *p,
                  size_t len, uint8_t out[32]);

/* How many keys the ring holds: 1, or 2 with a previous key. */
unsigned seal_keyring_len(const struct seal_keyring *kr);

/* SHA-256 of p[0..len). */
void seal_sha256(const void *p, size_t len, uint8_t out[32]);

#endif /* SL_SEAL_H */
