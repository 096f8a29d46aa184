/* seal.c: AES-256-GCM sealed request state (PROTOCOL.md §2.4, §2.8; DESIGN.md §5.6).
 *
 * Layout (seal.h): token = "s1." b64url(kid[4] | iv[12] | ciphertext | tag[16]).
 * Opening checks the cheap things first and the crypto last: prefix, length bounds, strict
 * base64url, key id, then GCM, then the payload shape, then the clock. Nothing decrypted leaves
 * this file unless the tag verified: OpenSSL writes plaintext before it checks the tag, so that
 * plaintext lives in a private buffer that is wiped on every path. */
#include "seal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#define KID_LEN     4
#define IV_LEN      12  /* 96 bits, as NIST SP 800-38D §5.2.1.1 recommends for GCM */
#define TAG_LEN     16
#define AES_KEY_LEN 32
#define PREFIX      "s1."
#define PREFIX_LEN  (sizeof(PREFIX) - 1)
#define AAD_LABEL   "sluice-state-v1"

/* plain = kind[1] | nonce[16] | origin[16] | iat[8] | exp[8] | args_digest[32] | def_digest[32]
 *         | inner_len[4] | inner */
#define AT_ORIGIN   (1 + SEAL_NONCE_LEN)
#define AT_IAT      (AT_ORIGIN + SEAL_ORIGIN_LEN)
#define AT_EXP      (AT_IAT + 8)
#define AT_DIGEST   (AT_EXP + 8)
#define AT_DEF      (AT_DIGEST + SEAL_DIGEST_LEN)
#define PLAIN_FIXED (AT_DEF + SEAL_DIGEST_LEN + 4)
#define RAW_FIXED   (KID_LEN + IV_LEN + PLAIN_FIXED + TAG_LEN)
#define RAW_MAX     (RAW_FIXED + SEAL_INNER_MAX)

/* Key material files are raw bytes (`openssl rand 32`); anything larger is not a key. */
#define KEY_FILE_MAX 4096

/* Each key keeps one context keyed for sealing and one for opening: keying AES-GCM (the cipher
 * fetch, the key schedule, the GHASH table) cost more than sealing a state, so a seal or an open
 * only sets a fresh IV on a context keyed once. Single-threaded, like the rest of sluice. */
struct seal_key {
    uint8_t aes[AES_KEY_LEN];
    uint8_t kid[KID_LEN];
    EVP_CIPHER_CTX *enc, *dec;
};

struct seal_keyring {
    struct seal_key key[2]; /* [0] current: seals and opens; [1] previous: opens only */
    size_t n;
};

/* Wipes secret bytes: OPENSSL_cleanse is a loop of a few instructions a byte, where
 * explicit_bzero is a memset the compiler may not drop (on the per-call paths, about 450
 * instructions a gated pair less, issue 24). */
static void wipe(void *p, size_t n)
{
    explicit_bzero(p, n);
}

/* ===== small encodings ===== */

static void put_be32(uint8_t *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get_be64(const uint8_t *p)
{
    return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

/* Unpadded base64url length of n bytes. */
static size_t b64_len(size_t n)
{
    return n / 3 * 4 + (n % 3 ? n % 3 + 1 : 0);
}

/* ===== digests ===== */

/* SHA-256 with the implementation fetched once: OpenSSL 3 looks it up on every one-shot call,
 * which cost more than hashing a tool call's arguments. */
void seal_sha256(const void *p, size_t len, uint8_t out[32])
{
    static EVP_MD *md;
    static EVP_MD_CTX *ctx;
    if (md == NULL) {
        md = EVP_MD_fetch(NULL, "SHA256", NULL);
        ctx = EVP_MD_CTX_new();
    }
    unsigned int n = 0;
    bool ok = md && ctx && EVP_DigestInit_ex2(ctx, md, NULL) == 1 &&
              EVP_DigestUpdate(ctx, p, len) == 1 && EVP_DigestFinal_ex(ctx, out, &n) == 1;
    SL_REQUIRE(ok && n == 32);
}

/* ===== keys ===== */

static int sha256_2(const void *a, size_t alen, const void *b, size_t blen, uint8_t out[32])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int len = 0;
    int ok = ctx != NULL && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
             EVP_DigestUpdate(ctx, a, alen) == 1 && EVP_DigestUpdate(ctx, b, blen) == 1 &&
             EVP_DigestFinal_ex(ctx, out, &len) == 1 && len == 32;
    EVP_MD_CTX_free(ctx);
    return ok ? 0 : -1;
}

/* The AES-256-GCM implementation, fetched once: OpenSSL 3 looks it up by name on every use of
 * EVP_aes_256_gcm() otherwise. */
static const EVP_CIPHER *gcm_cipher(void)
{
    static EVP_CIPHER *cipher;
    if (cipher == NULL)
        cipher = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
    return cipher;
}

/* Keys k's two contexts, with the 12-byte IV length set once. 0 or -1. */
static int key_contexts(struct seal_key *k)
{
    const EVP_CIPHER *gcm = gcm_cipher();
    k->enc = EVP_CIPHER_CTX_new();
    k->dec = EVP_CIPHER_CTX_new();
    if (gcm == NULL || k->enc == NULL || k->dec == NULL)
        return -1;
    for (int enc = 0; enc <= 1; enc++) {
        EVP_CIPHER_CTX *ctx = enc ? k->enc : k->dec;
        if (EVP_CipherInit_ex(ctx, gcm, NULL, NULL, NULL, enc) != 1 ||
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, IV_LEN, NULL) != 1 ||
            EVP_CipherInit_ex(ctx, NULL, NULL, k->aes, NULL, enc) != 1)
            return -1;
    }
    return 0;
}

/* AES key = SHA-256("sluice-seal-v1" | material): any material of >= 32 bytes (a raw file, a
 * hex string's bytes) becomes a uniform 256-bit key. The key id is a hash of the derived key, so
 * it names the key without revealing anything usable about it. */
static int key_derive(struct seal_key *k, const uint8_t *material, size_t len)
{
    static const char seal_label[] = "sluice-seal-v1", kid_label[] = "sluice-kid";
    uint8_t h[32];
    if (sha256_2(seal_label, sizeof(seal_label) - 1, material, len, k->aes) < 0 ||
        sha256_2(kid_label, sizeof(kid_label) - 1, k->aes, AES_KEY_LEN, h) < 0)
        return -1;
    memcpy(k->kid, h, KID_LEN);
    wipe(h, sizeof(h));
    return key_contexts(k);
}

struct seal_keyring *seal_keyring_new(const uint8_t *cur, size_t cur_len,
                                      const uint8_t *prev, size_t prev_len)
{
    if (cur == NULL || cur_len < SEAL_KEY_MIN || (prev != NULL && prev_len < SEAL_KEY_MIN))
        return NULL;
    struct seal_keyring *kr = sl_xcalloc(1, sizeof(*kr));
    kr->n = prev != NULL ? 2 : 1;
    if (key_derive(&kr->key[0], cur, cur_len) < 0 ||
        (prev != NULL && key_derive(&kr->key[1], prev, prev_len) < 0)) {
        seal_keyring_free(kr);
        return NULL;
    }
    return kr;
}

struct seal_keyring *seal_keyring_random(void)
{
    uint8_t material[AES_KEY_LEN];
    if (RAND_bytes(material, sizeof(material)) != 1)
        return NULL;
    struct seal_keyring *kr = seal_keyring_new(material, sizeof(material), NULL, 0);
    wipe(material, sizeof(material));
    return kr;
}

unsigned seal_keyring_len(const struct seal_keyring *kr)
{
    return (unsigned)kr->n;
}

void seal_keyring_free(struct seal_keyring *kr)
{
    if (kr == NULL)
        return;
    for (size_t i = 0; i < 2; i++) { /* freeing a context wipes its key schedule */
        EVP_CIPHER_CTX_free(kr->key[i].enc);
        EVP_CIPHER_CTX_free(kr->key[i].dec);
    }
    wipe(kr, sizeof(*kr));
    free(kr);
}


/* Random bytes drawn from OpenSSL's generator a pool at a time: each RAND_bytes call costs
 * about 6,600 instructions of locking and bookkeeping whatever its size, and a question needs two
 * draws (its nonce and its IV). Bytes handed out are wiped from the pool, so none is given twice.
 * Nothing forks and keeps running with the pool: a child of up_stdio execs at once. */
#define RANDOM_POOL 1024

static int random_bytes(uint8_t *out, size_t n)
{
    static uint8_t pool[RANDOM_POOL];
    static size_t left; /* unused bytes at the end of pool */
    SL_REQUIRE(n <= RANDOM_POOL);
    if (left < n) {
        if (RAND_bytes(pool, RANDOM_POOL) != 1)
            return -1;
        left = RANDOM_POOL;
    }
    uint8_t *p = pool + RANDOM_POOL - left;
    memcpy(out, p, n);
    wipe(p, n);
    left -= n;
    return 0;
}

int seal_random_nonce(uint8_t nonce[SEAL_NONCE_LEN])
{
    return random_bytes(nonce, SEAL_NONCE_LEN);
}

/* ===== key material from a file or hex ===== */


/* Reads the whole of fd into buf (cap bytes). Returns the count, cap + 1 if there is more, or -1. */
static ssize_t read_all(int fd, uint8_t *buf, size_t cap)
{
    size_t n = 0;
    for (;;) {
        uint8_t extra;
        ssize_t r = n < cap ? read(fd, buf + n, cap - n) : read(fd, &extra, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            return (ssize_t)n;
        if (n == cap)
            return (ssize_t)cap + 1;
        n += (size_t)r;
    }
}

/* Checks what fstat says about the opened file. We check the fd we will read, not the path, so
 * the answer cannot change between check and use. */
static int key_file_check(int fd, const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return sl_fail(err, errlen, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return sl_fail(err, errlen, "%s: not a regular file", path);
    if ((st.st_mode & 077) != 0)
        return sl_fail(err, errlen, "%s: is accessible by group or others (mode %03o); chmod 600",
                         path, (unsigned)(st.st_mode & 0777));
    return 0;
}

/* Symlinks are followed on purpose: Kubernetes mounts a Secret as a symlink chain
 * (key -> ..data/key -> ..2024_01_01/key), and refusing them would refuse the common deployment.
 * What matters is the file finally opened, which fstat checks. O_NONBLOCK keeps a FIFO planted at
 * the path from blocking the open; it is refused as not regular right after. */
int seal_key_from_file(const char *path, uint8_t **key, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return sl_fail(err, errlen, "%s: %s", path, strerror(errno));
    if (key_file_check(fd, path, err, errlen) < 0) {
        close(fd);
        return -1;
    }
    uint8_t *buf = sl_xmalloc(KEY_FILE_MAX);
    ssize_t n = read_all(fd, buf, KEY_FILE_MAX);
    int saved = errno;
    close(fd);
    int rc = 0;
    if (n < 0)
        rc = sl_fail(err, errlen, "%s: %s", path, strerror(saved));
    else if (n < SEAL_KEY_MIN)
        rc = sl_fail(err, errlen, "%s: holds %zd bytes; a key needs at least %d (openssl rand %d)",
                       path, n, SEAL_KEY_MIN, SEAL_KEY_MIN);
    else if (n > KEY_FILE_MAX)
        rc = sl_fail(err, errlen, "%s: larger than %d bytes; not a key file", path, KEY_FILE_MAX);
    if (rc < 0) {
        wipe(buf, KEY_FILE_MAX);
        free(buf);
        return -1;
    }
    *key = buf;
    *len = (size_t)n;
    return 0;
}

/* The hex form comes from the environment (SLUICE_STATE_KEY), so the messages name no file and
 * never echo the value. */
int seal_key_from_hex(const char *hex, uint8_t **key, size_t *len, char *err, size_t errlen)
{
    size_t hlen = hex != NULL ? strlen(hex) : 0;
    if (hlen < 2 * SEAL_KEY_MIN)
        return sl_fail(err, errlen, "hex state key: %zu digits; need at least %d", hlen,
                         2 * SEAL_KEY_MIN);
    if (hlen > 2 * KEY_FILE_MAX)
        return sl_fail(err, errlen, "hex state key: %zu digits; at most %d", hlen,
                         2 * KEY_FILE_MAX);
    if (hlen % 2 != 0)
        return sl_fail(err, errlen, "hex state key: odd number of digits (%zu)", hlen);
    uint8_t *buf = sl_xmalloc(hlen / 2);
    if (sl_hex_decode(hex, hlen, buf, hlen / 2) < 0) {
        wipe(buf, hlen / 2);
        free(buf);
        return sl_fail(err, errlen, "hex state key: not a hex digit in it");
    }
    *key = buf;
    *len = hlen / 2;
    return 0;
}

/* ===== associated data ===== */

/* Appends one binding field as len[4] | bytes, so that field boundaries are part of what is
 * authenticated: ("ab", "c") and ("a", "bc") give different AAD. */
static int aad_field(struct sl_buf *aad, struct sl_str f)
{
    uint8_t be[4];
    if (f.len > INT_MAX || (f.len > 0 && f.p == NULL)) /* EVP takes an int length */
        return -1;
    put_be32(be, (uint32_t)f.len);
    sl_buf_put(aad, be, sizeof(be));
    sl_buf_put(aad, f.p, f.len);
    return 0;
}

/* AAD = "sluice-state-v1" | kid | len-prefixed(method, tool, principal, upstream). The kid is in
 * it so that a token cannot be relabelled with another key id. It is fed to GCM in one update:
 * each EVP update call has a fixed cost larger than hashing these few bytes. */
static int aad_feed(EVP_CIPHER_CTX *ctx, const uint8_t kid[KID_LEN], const struct seal_binding *b)
{
    char room[256];
    struct sl_buf aad;
    int outl, rc = -1;
    sl_buf_on(&aad, room, sizeof(room));
    sl_buf_put(&aad, AAD_LABEL, sizeof(AAD_LABEL) - 1);
    sl_buf_put(&aad, kid, KID_LEN);
    bool bad = aad_field(&aad, b->method) < 0 || aad_field(&aad, b->tool) < 0 ||
               aad_field(&aad, b->principal) < 0 || aad_field(&aad, b->upstream) < 0;
    if (!bad && aad.len <= INT_MAX &&
        EVP_CipherUpdate(ctx, NULL, &outl, (const uint8_t *)aad.p, (int)aad.len) == 1)
        rc = 0;
    sl_buf_free(&aad);
    return rc;
}

/* Starts a seal (enc = 1) or an open (0) under k with this IV: the context was keyed once. */
static EVP_CIPHER_CTX *gcm_start(const struct seal_key *k, int enc, const uint8_t *iv)
{
    EVP_CIPHER_CTX *ctx = enc ? k->enc : k->dec;
    return ctx != NULL && EVP_CipherInit_ex(ctx, NULL, NULL, NULL, iv, enc) == 1 ? ctx : NULL;
}

/* ===== mint ===== */

/* A state without an inner state (a question's) is about 160 bytes: its buffers live on the
 * stack, and only a wrapped upstream state (up to SEAL_INNER_MAX) takes the heap. */
#define SMALL 512

static uint8_t *room_or_heap(uint8_t *room, size_t n)
{
    return n <= SMALL ? room : sl_xmalloc(n);
}

static size_t plain_encode(uint8_t *p, const struct seal_claims *c)
{
    p[0] = (uint8_t)c->kind;
    memcpy(p + 1, c->nonce, SEAL_NONCE_LEN);
    memcpy(p + AT_ORIGIN, c->origin, SEAL_ORIGIN_LEN);
    put_be64(p + AT_IAT, c->iat);
    put_be64(p + AT_EXP, c->exp);
    memcpy(p + AT_DIGEST, c->args_digest, SEAL_DIGEST_LEN);
    memcpy(p + AT_DEF, c->def_digest, SEAL_DIGEST_LEN);
    put_be32(p + PLAIN_FIXED - 4, (uint32_t)c->inner.len);
    if (c->inner.len > 0)
        memcpy(p + PLAIN_FIXED, c->inner.p, c->inner.len);
    return PLAIN_FIXED + c->inner.len;
}

/* Encrypts plain[0..plen) into raw = kid | iv | ciphertext | tag, with a fresh random IV. */
static int gcm_seal(const struct seal_key *k, const struct seal_binding *b, const uint8_t *plain,
                    size_t plen, uint8_t *raw)
{
    uint8_t *iv = raw + KID_LEN, *ct = iv + IV_LEN, *tag = ct + plen;
    memcpy(raw, k->kid, KID_LEN);
    /* A random 96-bit IV per token: the GCM bound of 2^32 messages per key (SP 800-38D §8.3) is
     * far beyond how many confirmations one key will ever seal. */
    if (random_bytes(iv, IV_LEN) != 0)
        return -1;
    EVP_CIPHER_CTX *ctx = gcm_start(k, 1, iv);
    int outl = 0, finl = 0;
    int ok = ctx != NULL && aad_feed(ctx, k->kid, b) == 0 &&
             EVP_EncryptUpdate(ctx, ct, &outl, plain, (int)plen) == 1 &&
             EVP_EncryptFinal_ex(ctx, ct + outl, &finl) == 1 && (size_t)(outl + finl) == plen &&
             EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG_LEN, tag) == 1;
    return ok ? 0 : -1;
}

int seal_mint(const struct seal_keyring *kr, const struct seal_binding *b,
              const struct seal_claims *c, struct sl_buf *out)
{
    SL_REQUIRE(kr != NULL && b != NULL && c != NULL && out != NULL);
    if (c->inner.len > SEAL_INNER_MAX || (c->inner.len > 0 && c->inner.p == NULL))
        return -1;
    if (SL_CHECK(SEAL_KIND_VALID(c->kind)))
        return -1; /* seal_open would refuse it: do not hand out a state that cannot come back */
    size_t plen = PLAIN_FIXED + c->inner.len;
    uint8_t plain_room[SMALL], raw_room[SMALL];
    uint8_t *plain = room_or_heap(plain_room, plen);
    uint8_t *raw = room_or_heap(raw_room, RAW_FIXED + c->inner.len);
    plain_encode(plain, c);
    int rc = gcm_seal(&kr->key[0], b, plain, plen, raw);
    if (rc == 0) {
        sl_buf_put(out, PREFIX, PREFIX_LEN);
        sl_b64url_encode(out, raw, RAW_FIXED + c->inner.len);
    }
    wipe(plain, plen);
    if (plain != plain_room)
        free(plain);
    if (raw != raw_room)
        free(raw);
    return rc;
}

/* ===== open ===== */

/* Decrypts and verifies raw[0..rlen) under k into plain (rlen - RAW_FIXED + PLAIN_FIXED bytes).
 * On failure plain is wiped: GCM has written unverified plaintext into it by then. */
static enum seal_status gcm_open(const struct seal_key *k, const struct seal_binding *b,
                                 const uint8_t *raw, size_t rlen, uint8_t *plain)
{
    const uint8_t *iv = raw + KID_LEN, *ct = iv + IV_LEN;
    size_t clen = rlen - KID_LEN - IV_LEN - TAG_LEN;
    uint8_t tag[TAG_LEN];
    memcpy(tag, ct + clen, TAG_LEN); /* the ctrl takes a non-const pointer */
    EVP_CIPHER_CTX *ctx = gcm_start(k, 0, iv);
    int outl = 0, finl = 0;
    int ok = ctx != NULL && aad_feed(ctx, raw, b) == 0 &&
             EVP_DecryptUpdate(ctx, plain, &outl, ct, (int)clen) == 1 &&
             EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG_LEN, tag) == 1 &&
             EVP_DecryptFinal_ex(ctx, plain + outl, &finl) == 1 && (size_t)(outl + finl) == clen;
    if (!ok)
        wipe(plain, clen);
    return ok ? SEAL_OK : SEAL_EAUTH;
}

/* Reads an authenticated payload. Authentic means we wrote it, so a bad shape here is a bug or a
 * compromised key; refuse it all the same. */
static enum seal_status plain_decode(const uint8_t *p, size_t plen, struct seal_claims *c)
{
    if (plen < PLAIN_FIXED)
        return SEAL_EFORMAT;
    uint32_t inner_len = get_be32(p + PLAIN_FIXED - 4);
    if (!SEAL_KIND_VALID(p[0]) || inner_len > SEAL_INNER_MAX ||
        plen != PLAIN_FIXED + (size_t)inner_len)
        return SEAL_EFORMAT;
    c->kind = (enum seal_kind)p[0];
    memcpy(c->nonce, p + 1, SEAL_NONCE_LEN);
    memcpy(c->origin, p + AT_ORIGIN, SEAL_ORIGIN_LEN);
    c->iat = get_be64(p + AT_IAT);
    c->exp = get_be64(p + AT_EXP);
    memcpy(c->args_digest, p + AT_DIGEST, SEAL_DIGEST_LEN);
    memcpy(c->def_digest, p + AT_DEF, SEAL_DIGEST_LEN);
    c->inner = SL_STR_NULL;
    return SEAL_OK;
}

/* Valid at now iff now < exp (seal.h) and iat <= now + SEAL_CLOCK_SKEW. A state whose exp is not
 * after its iat was never valid. All are SEAL_EEXPIRED: authentic, but not for this moment. */
static enum seal_status check_times(const struct seal_claims *c, uint64_t now)
{
    if (now >= c->exp || c->exp <= c->iat)
        return SEAL_EEXPIRED;
    if (c->iat > now && c->iat - now > SEAL_CLOCK_SKEW)
        return SEAL_EEXPIRED;
    return SEAL_OK;
}

/* Strict outer format: prefix, length within what a token of ours can be, canonical base64url
 * (sl_b64url_decode refuses padding, other alphabets and non-zero trailing bits, so each state has
 * exactly one spelling). Returns the decoded length or -1. Reads token[0..len) only; raw holds
 * at least len bytes, which is more than len characters of base64 decode to. */
static long token_decode(const char *token, size_t len, uint8_t *raw)
{
    if (token == NULL || len < PREFIX_LEN || memcmp(token, PREFIX, PREFIX_LEN) != 0)
        return -1;
    size_t blen = len - PREFIX_LEN;
    if (blen < b64_len(RAW_FIXED) || blen > b64_len(RAW_MAX))
        return -1;
    long n = sl_b64url_decode(token + PREFIX_LEN, blen, raw, len);
    if (n < (long)RAW_FIXED)
        return -1;
    return n;
}

/* Tries each key of the ring whose id matches (the current key first). Two keys share an id only
 * by a 2^-32 accident, and then both are tried, so rotation never strands a state. */
static enum seal_status open_raw(const struct seal_keyring *kr, const struct seal_binding *b,
                                 const uint8_t *raw, size_t rlen, uint8_t *plain, unsigned *key)
{
    enum seal_status st = SEAL_EKEY;
    for (size_t i = 0; i < kr->n; i++) {
        if (CRYPTO_memcmp(kr->key[i].kid, raw, KID_LEN) != 0)
            continue;
        st = gcm_open(&kr->key[i], b, raw, rlen, plain);
        if (st == SEAL_OK) {
            *key = (unsigned)i;
            break;
        }
    }
    return st;
}

enum seal_status seal_open(const struct seal_keyring *kr, const struct seal_binding *b,
                           uint64_t now, const char *token, size_t len,
                           struct seal_claims *c, struct sl_buf *inner_buf)
{
    SL_REQUIRE(kr != NULL && b != NULL && c != NULL && inner_buf != NULL);
    if (len > SEAL_TOKEN_MAX)
        return SEAL_EFORMAT; /* before any allocation */
    uint8_t raw_room[SMALL], plain_room[SMALL];
    uint8_t *raw = room_or_heap(raw_room, len), *plain = room_or_heap(plain_room, len);
    long rlen = token_decode(token, len, raw);
    enum seal_status st = SEAL_EFORMAT;
    size_t plen = 0;
    unsigned key = 0;
    if (rlen >= 0) {
        plen = (size_t)rlen - KID_LEN - IV_LEN - TAG_LEN;
        st = open_raw(kr, b, raw, (size_t)rlen, plain, &key);
    }
    if (st == SEAL_OK)
        st = plain_decode(plain, plen, c);
    if (st == SEAL_OK)
        c->key = key;
    if (st == SEAL_OK)
        st = check_times(c, now);
    if (st == SEAL_OK && plen > PLAIN_FIXED) {
        size_t at = inner_buf->len;
        sl_buf_put(inner_buf, plain + PLAIN_FIXED, plen - PLAIN_FIXED);
        c->inner = (struct sl_str){ inner_buf->p + at, plen - PLAIN_FIXED };
    }
    wipe(plain, plen);
    if (plain != plain_room)
        free(plain);
    if (raw != raw_room)
        free(raw);
    return st;
}

const char *seal_strerror(enum seal_status st)
{
    switch (st) {
    case SEAL_OK:       return "ok";
    case SEAL_EFORMAT:  return "not a sluice state (format)";
    case SEAL_EKEY:     return "state sealed under a key this deployment does not hold";
    case SEAL_EAUTH:    return "state failed authentication (tampered, or bound to another call)";
    case SEAL_EEXPIRED: return "state expired";
    }
    return "unknown seal status";
}

void seal_mac(const struct seal_keyring *kr, const char *label, const void *p, size_t len,
              uint8_t out[32])
{
    seal_mac_key(kr, 0, label, p, len, out);
}

void seal_mac_key(const struct seal_keyring *kr, unsigned key, const char *label, const void *p,
                  size_t len, uint8_t out[32])
{
    SL_REQUIRE(key < kr->n);
    size_t ll = strlen(label);
    uint8_t *msg = sl_xmalloc(ll + 1 + len);
    memcpy(msg, label, ll + 1);
    if (len)
        memcpy(msg + ll + 1, p, len);
    unsigned outlen = 32;
    SL_REQUIRE(HMAC(EVP_sha256(), kr->key[key].aes, AES_KEY_LEN, msg, ll + 1 + len, out,
                    &outlen) != NULL && outlen == 32);
    free(msg);
}
