/* test_seal.c: sealed request state (proxy/seal.c).
 *
 * Every way a state can be wrong must fail closed with the right status: each byte of the token
 * flipped, each character of its text changed, every truncation, another key, each binding field,
 * the clock. One test re-implements opening from seal.h's format description alone, so the format
 * cannot drift from the header (replicas of different builds must agree on it). Run from tests/unit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "seal.h"
#include "sl_test.h"

#define NOW 1800000000u
#define TTL 120u

static const uint8_t key_a[32] = "0123456789abcdef0123456789abcdef";
static const uint8_t key_b[40] = "another key, longer than thirty-two byte";
static const uint8_t key_c[32] = "a third key for dropping rotated";

struct fx {
    struct seal_keyring *kr;
    struct seal_binding b;
    struct seal_claims c;
    struct sl_buf tok;      /* a token minted from b and c under kr */
    char dir[64];           /* a private temporary directory for key files, removed in teardown */
};

static int setup(void **state)
{
    struct fx *f = sl_xcalloc(1, sizeof(*f));
    f->kr = seal_keyring_new(key_a, sizeof(key_a), NULL, 0);
    f->b = (struct seal_binding){ SL_STR("tools/call"), SL_STR("delete_repo"),
                                  SL_STR("user:alice"), SL_STR("github") };
    f->c.kind = SEAL_KIND_CONFIRM;
    assert_int_equal(seal_random_nonce(f->c.nonce), 0);
    f->c.iat = NOW;
    f->c.exp = NOW + TTL;
    for (int i = 0; i < SEAL_DIGEST_LEN; i++)
        f->c.args_digest[i] = (uint8_t)(0xA0 + i);
    for (int i = 0; i < SEAL_DIGEST_LEN; i++)
        f->c.def_digest[i] = (uint8_t)(0x10 + i);
    for (int i = 0; i < SEAL_ORIGIN_LEN; i++)
        f->c.origin[i] = (uint8_t)(0x50 + i);
    assert_non_null(f->kr);
    assert_int_equal(seal_mint(f->kr, &f->b, &f->c, &f->tok), 0);
    strcpy(f->dir, "/tmp/sluice-test-seal-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    *state = f;
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    struct fx *f = *state;
    seal_keyring_free(f->kr);
    sl_buf_free(&f->tok);
    nftw(f->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS); /* also after a failed test */
    free(f);
    return 0;
}

/* Opens token[0..len) from an exactly sized heap copy, so that ASan reports any read past len. */
static enum seal_status open_at(const struct seal_keyring *kr, const struct seal_binding *b,
                                uint64_t now, const char *token, size_t len,
                                struct seal_claims *c, struct sl_buf *inner)
{
    char *copy = sl_xmalloc(len);
    if (len > 0)
        memcpy(copy, token, len);
    enum seal_status st = seal_open(kr, b, now, copy, len, c, inner);
    free(copy);
    return st;
}

static enum seal_status try_open(const struct seal_keyring *kr, const struct seal_binding *b,
                                 uint64_t now, const char *token, size_t len)
{
    struct seal_claims c;
    struct sl_buf inner = { 0 };
    memset(&c, 0, sizeof(c));
    enum seal_status st = open_at(kr, b, now, token, len, &c, &inner);
    sl_buf_free(&inner);
    return st;
}

static void assert_claims_equal(const struct seal_claims *got, const struct seal_claims *want)
{
    assert_int_equal(got->kind, want->kind);
    assert_memory_equal(got->nonce, want->nonce, SEAL_NONCE_LEN);
    assert_int_equal(got->iat, want->iat);
    assert_int_equal(got->exp, want->exp);
    assert_memory_equal(got->args_digest, want->args_digest, SEAL_DIGEST_LEN);
    assert_memory_equal(got->def_digest, want->def_digest, SEAL_DIGEST_LEN);
    assert_memory_equal(got->origin, want->origin, SEAL_ORIGIN_LEN);
    assert_int_equal(got->inner.len, want->inner.len);
    if (want->inner.len > 0)
        assert_memory_equal(got->inner.p, want->inner.p, want->inner.len);
}

/* The decoded bytes of a token (after "s1."). */
static size_t token_raw(const struct sl_buf *tok, uint8_t *raw, size_t cap)
{
    long n = sl_b64url_decode(tok->p + 3, tok->len - 3, raw, cap);
    assert_true(n > 0);
    return (size_t)n;
}

static void token_raw_kid(const struct sl_buf *tok, uint8_t kid[4])
{
    uint8_t raw[512];
    token_raw(tok, raw, sizeof(raw));
    memcpy(kid, raw, 4);
}

/* ===== round trips ===== */

static void test_round_trip(void **state)
{
    struct fx *f = *state;
    struct seal_claims got;
    struct sl_buf inner = { 0 };
    assert_true(f->tok.len > 3 && memcmp(f->tok.p, "s1.", 3) == 0);
    for (size_t i = 3; i < f->tok.len; i++)
        assert_non_null(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
                               f->tok.p[i]));
    assert_int_equal(open_at(f->kr, &f->b, NOW, f->tok.p, f->tok.len, &got, &inner), SEAL_OK);
    assert_claims_equal(&got, &f->c);
    assert_null(got.inner.p); /* no inner state: an empty slice */
    assert_int_equal(inner.len, 0);
    sl_buf_free(&inner);
}

static void test_round_trip_inner(void **state)
{
    struct fx *f = *state;
    static const size_t sizes[] = { 1, 2, 3, 100, SEAL_INNER_MAX - 1, SEAL_INNER_MAX };
    for (size_t s = 0; s < SL_ARRAY_LEN(sizes); s++) {
        char *bytes = sl_xmalloc(sizes[s]);
        for (size_t i = 0; i < sizes[s]; i++)
            bytes[i] = (char)(i * 7 + s); /* includes NULs */
        struct seal_claims c = f->c, got;
        c.kind = SEAL_KIND_TOKEN;
        c.inner = (struct sl_str){ bytes, sizes[s] };
        struct sl_buf tok = { 0 }, inner = { 0 };
        sl_buf_puts(&inner, "keep"); /* the inner state is appended, not written over this */
        assert_int_equal(seal_mint(f->kr, &f->b, &c, &tok), 0);
        assert_true(tok.len <= SEAL_TOKEN_MAX);
        assert_int_equal(open_at(f->kr, &f->b, NOW, tok.p, tok.len, &got, &inner), SEAL_OK);
        assert_claims_equal(&got, &c);
        assert_ptr_equal(got.inner.p, inner.p + 4);
        assert_memory_equal(inner.p, "keep", 4);
        free(bytes);
        sl_buf_free(&tok);
        sl_buf_free(&inner);
    }
}

static void test_mint_refuses(void **state)
{
    struct fx *f = *state;
    struct sl_buf tok = { 0 };
    struct seal_claims c = f->c;
    char *big = sl_xcalloc(1, SEAL_INNER_MAX + 1);
    c.inner = (struct sl_str){ big, SEAL_INNER_MAX + 1 };
    assert_int_equal(seal_mint(f->kr, &f->b, &c, &tok), -1);
    c.inner = SL_STR_NULL;
    c.kind = (enum seal_kind)7; /* logs an internal check: a state no one could open */
    assert_int_equal(seal_mint(f->kr, &f->b, &c, &tok), -1);
    assert_int_equal(tok.len, 0); /* nothing appended on failure */
    free(big);
}

/* A fresh IV per mint: the same claims never give the same token. */
static void test_mint_fresh_iv(void **state)
{
    struct fx *f = *state;
    struct sl_buf again = { 0 };
    assert_int_equal(seal_mint(f->kr, &f->b, &f->c, &again), 0);
    assert_int_equal(again.len, f->tok.len);
    assert_memory_not_equal(again.p, f->tok.p, again.len);
    uint8_t r1[256], r2[256];
    token_raw(&f->tok, r1, sizeof(r1));
    token_raw(&again, r2, sizeof(r2));
    assert_memory_equal(r1, r2, 4);              /* same key id */
    assert_memory_not_equal(r1 + 4, r2 + 4, 12); /* different IV */
    sl_buf_free(&again);
}

/* ===== the format, re-implemented from seal.h's description ===== */

static void sha256_cat(const char *label, const uint8_t *m, size_t mlen, uint8_t out[32])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int len;
    assert_int_equal(EVP_DigestInit_ex(ctx, EVP_sha256(), NULL), 1);
    assert_int_equal(EVP_DigestUpdate(ctx, label, strlen(label)), 1);
    assert_int_equal(EVP_DigestUpdate(ctx, m, mlen), 1);
    assert_int_equal(EVP_DigestFinal_ex(ctx, out, &len), 1);
    EVP_MD_CTX_free(ctx);
}

static void aad_put(struct sl_buf *aad, struct sl_str s)
{
    uint8_t be[4] = { (uint8_t)(s.len >> 24), (uint8_t)(s.len >> 16), (uint8_t)(s.len >> 8),
                      (uint8_t)s.len };
    sl_buf_put(aad, be, 4);
    sl_buf_put(aad, s.p, s.len);
}

/* The AES key and AAD as seal.h describes them, for key material m. */
static void header_key(const uint8_t *m, size_t mlen, uint8_t aes[32], uint8_t kid[4])
{
    uint8_t h[32];
    sha256_cat("sluice-seal-v1", m, mlen, aes);
    sha256_cat("sluice-kid", aes, 32, h);
    memcpy(kid, h, 4);
}

static void header_aad(struct sl_buf *aad, const uint8_t kid[4], const struct seal_binding *b)
{
    sl_buf_puts(aad, "sluice-state-v1");
    sl_buf_put(aad, kid, 4);
    aad_put(aad, b->method);
    aad_put(aad, b->tool);
    aad_put(aad, b->principal);
    aad_put(aad, b->upstream);
}

/* AES-256-GCM in either direction; tag is written (enc) or checked. Returns 1 if all went well. */
static int header_gcm(int enc, const uint8_t aes[32], const uint8_t iv[12], const struct sl_buf *aad,
                      const uint8_t *in, size_t len, uint8_t *out, uint8_t tag[16])
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int outl = 0, finl = 0;
    int ok = EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, aes, iv, enc) == 1 &&
             EVP_CipherUpdate(ctx, NULL, &outl, (const uint8_t *)aad->p, (int)aad->len) == 1 &&
             EVP_CipherUpdate(ctx, out, &outl, in, (int)len) == 1 &&
             (enc || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, tag) == 1) &&
             EVP_CipherFinal_ex(ctx, out + outl, &finl) == 1 && (size_t)(outl + finl) == len &&
             (!enc || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1);
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

/* Opens f->tok with nothing but the header's description and OpenSSL. */
static void test_format_matches_header(void **state)
{
    struct fx *f = *state;
    uint8_t aes[32], kid[4], raw[512], plain[512];
    header_key(key_a, sizeof(key_a), aes, kid);
    size_t n = token_raw(&f->tok, raw, sizeof(raw));
    assert_int_equal(n, 4 + 12 + 117 + 16);
    assert_memory_equal(raw, kid, 4);

    struct sl_buf aad = { 0 };
    header_aad(&aad, kid, &f->b);
    size_t clen = n - 4 - 12 - 16;
    assert_true(header_gcm(0, aes, raw + 4, &aad, raw + 16, clen, plain, raw + 16 + clen));
    sl_buf_free(&aad);

    uint8_t want[117] = { SEAL_KIND_CONFIRM };
    memcpy(want + 1, f->c.nonce, 16);
    memcpy(want + 17, f->c.origin, 16);
    for (int i = 0; i < 8; i++) {
        want[33 + i] = (uint8_t)(f->c.iat >> (56 - 8 * i));
        want[41 + i] = (uint8_t)(f->c.exp >> (56 - 8 * i));
    }
    memcpy(want + 49, f->c.args_digest, 32);
    memcpy(want + 81, f->c.def_digest, 32); /* then inner_len = 0 */
    assert_int_equal(clen, sizeof(want));
    assert_memory_equal(plain, want, sizeof(want));
}

/* Seals any plaintext under key_a the way seal.h says, so that authentic but malformed payloads
 * (which seal_mint never writes) can be presented. */
static void forge(struct sl_buf *tok, const struct seal_binding *b, const uint8_t *plain,
                  size_t plen)
{
    uint8_t aes[32], raw[256] = { 0 };
    header_key(key_a, sizeof(key_a), aes, raw);
    memset(raw + 4, 0x42, 12);
    struct sl_buf aad = { 0 };
    header_aad(&aad, raw, b);
    assert_true(plen + 32 <= sizeof(raw));
    assert_true(header_gcm(1, aes, raw + 4, &aad, plain, plen, raw + 16, raw + 16 + plen));
    sl_buf_free(&aad);
    sl_buf_puts(tok, "s1.");
    sl_b64url_encode(tok, raw, 16 + plen + 16);
}

/* Authentic means we wrote it; a payload of the wrong shape is refused all the same. */
static void test_authentic_but_malformed(void **state)
{
    struct fx *f = *state;
    struct row { const char *what; uint8_t kind; uint32_t inner_len; size_t extra; enum seal_status want; };
    static const struct row rows[] = {
        { "well formed", SEAL_KIND_CONFIRM, 0, 0, SEAL_OK },
        { "well formed, inner", SEAL_KIND_TOKEN, 5, 5, SEAL_OK },
        { "kind 0", 0, 0, 0, SEAL_EFORMAT },
        { "kind 3 (continue)", SEAL_KIND_CONTINUE, 0, 0, SEAL_OK },
        { "kind 5 (continue, ungated)", SEAL_KIND_CONTINUE_UNGATED, 0, 0, SEAL_OK },
        { "kind 6 (continue, observed)", SEAL_KIND_CONTINUE_OBSERVED, 0, 0, SEAL_OK },
        { "kind 7", 7, 0, 0, SEAL_EFORMAT },
        { "kind 255", 255, 0, 0, SEAL_EFORMAT },
        { "inner_len > bytes", SEAL_KIND_CONFIRM, 6, 5, SEAL_EFORMAT },
        { "inner_len < bytes", SEAL_KIND_CONFIRM, 4, 5, SEAL_EFORMAT },
        { "bytes, no inner_len", SEAL_KIND_CONFIRM, 0, 1, SEAL_EFORMAT },
        { "inner_len over max", SEAL_KIND_CONFIRM, SEAL_INNER_MAX + 1, 0, SEAL_EFORMAT },
        { "inner_len huge", SEAL_KIND_CONFIRM, UINT32_MAX, 0, SEAL_EFORMAT },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        uint8_t plain[117 + 8] = { rows[i].kind };
        memcpy(plain + 1, f->c.nonce, 16);
        plain[33 + 7] = 1;                        /* iat = 1 */
        memset(plain + 41, 0xff, 8);              /* exp = 2^64 - 1 */
        plain[113] = (uint8_t)(rows[i].inner_len >> 24);
        plain[114] = (uint8_t)(rows[i].inner_len >> 16);
        plain[115] = (uint8_t)(rows[i].inner_len >> 8);
        plain[116] = (uint8_t)rows[i].inner_len;
        memset(plain + 117, 'x', rows[i].extra);
        struct sl_buf tok = { 0 };
        forge(&tok, &f->b, plain, 117 + rows[i].extra);
        enum seal_status st = try_open(f->kr, &f->b, NOW, tok.p, tok.len);
        if (st != rows[i].want)
            fail_msg("%s: got %d, want %d", rows[i].what, st, rows[i].want);
        sl_buf_free(&tok);
    }
}

/* ===== tampering ===== */

/* Re-encodes tok with decoded byte i (negative: from the end) xored with x. */
static void flip_byte(struct sl_buf *tok, long i, uint8_t x)
{
    uint8_t *raw = sl_xmalloc(tok->len);
    size_t n = token_raw(tok, raw, tok->len);
    raw[i < 0 ? (long)n + i : i] ^= x;
    sl_buf_reset(tok);
    sl_buf_puts(tok, "s1.");
    sl_b64url_encode(tok, raw, n);
    free(raw);
}

/* Flip bits in every byte of the decoded token. A changed key id names no key in the ring; any
 * other change fails the GCM tag. */
static void test_tamper_every_byte(void **state)
{
    struct fx *f = *state;
    static const uint8_t flips[] = { 0x01, 0x80, 0xff };
    uint8_t raw[512];
    size_t n = token_raw(&f->tok, raw, sizeof(raw));
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < SL_ARRAY_LEN(flips); k++) {
            struct sl_buf t = { 0 };
            sl_buf_put(&t, f->tok.p, f->tok.len);
            flip_byte(&t, (long)i, flips[k]);
            enum seal_status st = try_open(f->kr, &f->b, NOW, t.p, t.len);
            enum seal_status want = i < 4 ? SEAL_EKEY : SEAL_EAUTH;
            if (st != want)
                fail_msg("byte %zu ^ 0x%02x: got %d, want %d", i, flips[k], st, want);
            sl_buf_free(&t);
        }
    }
}

/* A state that fails authentication gives nothing back: the claims and the inner buffer are
 * untouched, even though GCM decrypted the bytes before it checked the tag. */
static void test_failure_returns_nothing(void **state)
{
    struct fx *f = *state;
    struct seal_claims c = f->c;
    c.inner = SL_STR("upstream state bytes");
    struct sl_buf tok = { 0 };
    assert_int_equal(seal_mint(f->kr, &f->b, &c, &tok), 0);
    flip_byte(&tok, -1, 0x01); /* in the tag */
    struct seal_claims got, pattern;
    memset(&got, 0xee, sizeof(got));
    memset(&pattern, 0xee, sizeof(pattern));
    struct sl_buf inner = { 0 };
    assert_int_equal(open_at(f->kr, &f->b, NOW, tok.p, tok.len, &got, &inner), SEAL_EAUTH);
    assert_memory_equal(&got, &pattern, sizeof(got));
    assert_int_equal(inner.len, 0);
    flip_byte(&tok, -1, 0x01);
    struct seal_binding other = f->b;
    other.tool = SL_STR("other_tool");
    assert_int_equal(open_at(f->kr, &other, NOW, tok.p, tok.len, &got, &inner), SEAL_EAUTH);
    assert_memory_equal(&got, &pattern, sizeof(got));
    assert_int_equal(inner.len, 0);
    assert_int_equal(open_at(f->kr, &f->b, NOW, tok.p, tok.len, &got, &inner), SEAL_OK);
    assert_int_equal(inner.len, c.inner.len);
    sl_buf_free(&tok);
    sl_buf_free(&inner);
}

/* Change every character of the text to every other character of the alphabet, and to some that
 * are not in it. Nothing may open. */
static void test_tamper_text(void **state)
{
    struct fx *f = *state;
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/. \n\0\x80";
    char *t = sl_xstrndup(f->tok.p, f->tok.len);
    for (size_t i = 0; i < f->tok.len; i++) {
        char orig = t[i];
        for (size_t k = 0; k < sizeof(alphabet) - 1; k++) {
            if (alphabet[k] == orig)
                continue;
            t[i] = alphabet[k];
            enum seal_status st = try_open(f->kr, &f->b, NOW, t, f->tok.len);
            if (st == SEAL_OK)
                fail_msg("char %zu changed to 0x%02x opened", i, (unsigned char)alphabet[k]);
            /* outside the base64url alphabet, or in the prefix: refused before any crypto */
            if ((i < 3 || k >= 64) && st != SEAL_EFORMAT)
                fail_msg("char %zu changed to 0x%02x: got %d, want EFORMAT", i,
                         (unsigned char)alphabet[k], st);
        }
        t[i] = orig;
    }
    free(t);
}

/* Every proper prefix, and the token with bytes added. */
static void test_truncate_and_extend(void **state)
{
    struct fx *f = *state;
    for (size_t len = 0; len < f->tok.len; len++)
        if (try_open(f->kr, &f->b, NOW, f->tok.p, len) == SEAL_OK)
            fail_msg("prefix of %zu bytes opened", len);
    static const char *const tails[] = { "A", "AA", "AAA", "AAAA", "=", "==", ".", "\n", " " };
    for (size_t i = 0; i < SL_ARRAY_LEN(tails); i++) {
        struct sl_buf t = { 0 };
        sl_buf_put(&t, f->tok.p, f->tok.len);
        sl_buf_puts(&t, tails[i]);
        assert_int_not_equal(try_open(f->kr, &f->b, NOW, t.p, t.len), SEAL_OK);
        sl_buf_free(&t);
    }
    /* a token is read up to len only: what follows in memory does not matter */
    struct sl_buf t = { 0 };
    sl_buf_put(&t, f->tok.p, f->tok.len);
    sl_buf_puts(&t, "garbage");
    assert_int_equal(seal_open(f->kr, &f->b, NOW, t.p, f->tok.len, &(struct seal_claims){ 0 },
                               &(struct sl_buf){ 0 }), SEAL_OK);
    sl_buf_free(&t);
}

static void test_garbage(void **state)
{
    struct fx *f = *state;
    static const struct { const char *p; size_t len; } rows[] = {
        { "", 0 },
        { "s", 1 },
        { "s1", 2 },
        { "s1.", 3 },
        { "s1.A", 4 },
        { "s1.====", 7 },
        { "S1.AAAA", 7 },
        { "s1.\0AAA", 7 },
        { "v1.eyJwIjoxfQ.sig", 17 },   /* the SDK codec's shape (PROTOCOL.md §2.7) */
        { "null", 4 },
        { "\"s1.AAAA\"", 9 },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++)
        assert_int_equal(try_open(f->kr, &f->b, NOW, rows[i].p, rows[i].len), SEAL_EFORMAT);
    assert_int_equal(seal_open(f->kr, &f->b, NOW, NULL, 0, &(struct seal_claims){ 0 },
                               &(struct sl_buf){ 0 }), SEAL_EFORMAT);

    /* well-formed base64 of the right sizes, random bytes: a key id we do not hold */
    for (size_t n = 149; n < 149 + 64; n += 7) {
        uint8_t raw[256];
        struct sl_buf t = { 0 };
        for (size_t i = 0; i < n; i++)
            raw[i] = (uint8_t)(i * 31 + n);
        sl_buf_puts(&t, "s1.");
        sl_b64url_encode(&t, raw, n);
        assert_int_equal(try_open(f->kr, &f->b, NOW, t.p, t.len), SEAL_EKEY);
        sl_buf_free(&t);
    }

    /* decoded sizes around the smallest and largest state, with our key id: inside the bounds
     * they reach GCM (and fail it), outside they are refused before */
    static const struct { size_t n; enum seal_status want; } sizes[] = {
        { 4 + 12 + 117 + 16 - 1, SEAL_EFORMAT },
        { 4 + 12 + 117 + 16, SEAL_EAUTH },
        { 4 + 12 + 117 + 16 + SEAL_INNER_MAX, SEAL_EAUTH },
        { 4 + 12 + 117 + 16 + SEAL_INNER_MAX + 1, SEAL_EFORMAT },
        { 4 + 12 + 117 + 16 + SEAL_INNER_MAX + 3, SEAL_EFORMAT },
    };
    uint8_t kid[4];
    token_raw_kid(&f->tok, kid);
    for (size_t i = 0; i < SL_ARRAY_LEN(sizes); i++) {
        uint8_t *raw = sl_xcalloc(1, sizes[i].n);
        struct sl_buf t = { 0 };
        memcpy(raw, kid, 4);
        sl_buf_puts(&t, "s1.");
        sl_b64url_encode(&t, raw, sizes[i].n);
        assert_true(t.len <= SEAL_TOKEN_MAX);
        enum seal_status st = try_open(f->kr, &f->b, NOW, t.p, t.len);
        if (st != sizes[i].want)
            fail_msg("%zu bytes: got %d, want %d", sizes[i].n, st, sizes[i].want);
        sl_buf_free(&t);
        free(raw);
    }

    /* huge: over SEAL_TOKEN_MAX, and just under it but over the largest state */
    static const size_t huge[] = { SEAL_TOKEN_MAX + 1, SEAL_TOKEN_MAX, 1u << 24 };
    for (size_t i = 0; i < SL_ARRAY_LEN(huge); i++) {
        char *t = sl_xmalloc(huge[i]);
        memcpy(t, "s1.", 3);
        memset(t + 3, 'A', huge[i] - 3);
        assert_int_equal(seal_open(f->kr, &f->b, NOW, t, huge[i], &(struct seal_claims){ 0 },
                                   &(struct sl_buf){ 0 }), SEAL_EFORMAT);
        free(t);
    }
}

/* ===== keys and rotation ===== */

static void test_wrong_key(void **state)
{
    struct fx *f = *state;
    struct seal_keyring *other = seal_keyring_new(key_b, sizeof(key_b), NULL, 0);
    struct seal_keyring *rnd = seal_keyring_random();
    assert_non_null(rnd);
    assert_int_equal(try_open(other, &f->b, NOW, f->tok.p, f->tok.len), SEAL_EKEY);
    assert_int_equal(try_open(rnd, &f->b, NOW, f->tok.p, f->tok.len), SEAL_EKEY);
    seal_keyring_free(other);
    seal_keyring_free(rnd);
}

static void test_rotation(void **state)
{
    struct fx *f = *state;
    /* f->tok was sealed under key A (f->kr's current key) */
    struct seal_keyring *rotated = seal_keyring_new(key_b, sizeof(key_b), key_a, sizeof(key_a));
    struct seal_keyring *dropped = seal_keyring_new(key_c, sizeof(key_c), key_b, sizeof(key_b));
    struct seal_keyring *b_only = seal_keyring_new(key_b, sizeof(key_b), NULL, 0);
    assert_non_null(rotated);
    assert_non_null(dropped);
    struct seal_claims got;
    struct sl_buf inner = { 0 }, tok_b = { 0 };
    assert_int_equal(open_at(rotated, &f->b, NOW, f->tok.p, f->tok.len, &got, &inner), SEAL_OK);
    assert_claims_equal(&got, &f->c);
    assert_int_equal(try_open(dropped, &f->b, NOW, f->tok.p, f->tok.len), SEAL_EKEY);

    /* the previous key opens only: a new token is sealed under the current key B */
    assert_int_equal(seal_mint(rotated, &f->b, &f->c, &tok_b), 0);
    assert_int_equal(try_open(b_only, &f->b, NOW, tok_b.p, tok_b.len), SEAL_OK);
    assert_int_equal(try_open(f->kr, &f->b, NOW, tok_b.p, tok_b.len), SEAL_EKEY);
    assert_int_equal(try_open(dropped, &f->b, NOW, tok_b.p, tok_b.len), SEAL_OK);
    sl_buf_free(&inner);
    sl_buf_free(&tok_b);
    seal_keyring_free(rotated);
    seal_keyring_free(dropped);
    seal_keyring_free(b_only);
}

static void test_keyring_new_refuses(void **state)
{
    (void)state;
    assert_null(seal_keyring_new(key_a, SEAL_KEY_MIN - 1, NULL, 0));
    assert_null(seal_keyring_new(NULL, 0, NULL, 0));
    assert_null(seal_keyring_new(key_a, sizeof(key_a), key_b, SEAL_KEY_MIN - 1));
    seal_keyring_free(NULL);
}

/* ===== binding ===== */

static void test_binding(void **state)
{
    struct fx *f = *state;
    struct { const char *what; struct seal_binding b; } rows[] = {
        { "method", { SL_STR("prompts/get"), f->b.tool, f->b.principal, f->b.upstream } },
        { "tool", { f->b.method, SL_STR("delete_rep"), f->b.principal, f->b.upstream } },
        { "tool case", { f->b.method, SL_STR("Delete_repo"), f->b.principal, f->b.upstream } },
        { "principal", { f->b.method, f->b.tool, SL_STR("user:mallory"), f->b.upstream } },
        { "principal empty", { f->b.method, f->b.tool, SL_STR(""), f->b.upstream } },
        { "upstream", { f->b.method, f->b.tool, f->b.principal, SL_STR("gitlab") } },
        { "upstream null", { f->b.method, f->b.tool, f->b.principal, SL_STR_NULL } },
        /* the same bytes split differently across fields */
        { "tool|principal shift", { f->b.method, SL_STR("delete_repou"), SL_STR("ser:alice"),
                                    f->b.upstream } },
        { "method|tool shift", { SL_STR("tools/calld"), SL_STR("elete_repo"), f->b.principal,
                                 f->b.upstream } },
        { "with NUL", { f->b.method, { "delete_repo\0", 12 }, f->b.principal, f->b.upstream } },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        enum seal_status st = try_open(f->kr, &rows[i].b, NOW, f->tok.p, f->tok.len);
        if (st != SEAL_EAUTH)
            fail_msg("%s changed: got %d, want SEAL_EAUTH", rows[i].what, st);
    }
    assert_int_equal(try_open(f->kr, &f->b, NOW, f->tok.p, f->tok.len), SEAL_OK);
}

/* A field whose length does not fit the 4-byte prefix (or EVP's int) cannot be bound: mint
 * refuses, open fails authentication. The bytes are never read. */
static void test_binding_too_long(void **state)
{
    struct fx *f = *state;
    struct seal_binding b = f->b;
    struct sl_buf tok = { 0 };
    b.principal = (struct sl_str){ "x", (size_t)INT32_MAX + 1 };
    assert_int_equal(seal_mint(f->kr, &b, &f->c, &tok), -1);
    assert_int_equal(tok.len, 0);
    assert_int_equal(try_open(f->kr, &b, NOW, f->tok.p, f->tok.len), SEAL_EAUTH);
}

/* ===== time ===== */

static void test_expiry(void **state)
{
    struct fx *f = *state;
    static const struct { uint64_t iat, exp, now; enum seal_status want; } rows[] = {
        { NOW, NOW + TTL, NOW, SEAL_OK },
        { NOW, NOW + TTL, NOW + TTL - 1, SEAL_OK },
        { NOW, NOW + TTL, NOW + TTL, SEAL_EEXPIRED },          /* now == exp */
        { NOW, NOW + TTL, NOW + TTL + 1, SEAL_EEXPIRED },
        { NOW, NOW + TTL, UINT64_MAX, SEAL_EEXPIRED },
        { NOW, NOW + TTL, 0, SEAL_EEXPIRED },                  /* minted 57 years ahead */
        { NOW + 300, NOW + 400, NOW, SEAL_OK },                /* skew of 300 s tolerated */
        { NOW + 301, NOW + 400, NOW, SEAL_EEXPIRED },          /* beyond it: another clock */
        { NOW, NOW, NOW - 1, SEAL_EEXPIRED },                  /* exp == iat: never valid */
        { NOW, NOW - 10, NOW - 20, SEAL_EEXPIRED },            /* exp < iat */
        { 0, UINT64_MAX, NOW, SEAL_OK },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        struct seal_claims c = f->c;
        struct sl_buf tok = { 0 };
        c.iat = rows[i].iat;
        c.exp = rows[i].exp;
        assert_int_equal(seal_mint(f->kr, &f->b, &c, &tok), 0);
        enum seal_status st = try_open(f->kr, &f->b, rows[i].now, tok.p, tok.len);
        if (st != rows[i].want)
            fail_msg("row %zu: got %d, want %d", i, st, rows[i].want);
        sl_buf_free(&tok);
    }
}

/* ===== key material ===== */

struct tmpkey {
    char path[96];
};

static void tmpkey_write(const struct fx *f, struct tmpkey *t, const void *data, size_t len,
                         mode_t mode)
{
    snprintf(t->path, sizeof(t->path), "%s/key-XXXXXX", f->dir);
    int fd = mkstemp(t->path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
}

static void assert_key_file_refused(const char *path, const char *why)
{
    uint8_t *key = NULL;
    size_t len = 0;
    char err[256] = "";
    assert_int_equal(seal_key_from_file(path, &key, &len, err, sizeof(err)), -1);
    assert_null(key);
    if (strstr(err, path) == NULL || strstr(err, why) == NULL)
        fail_msg("message \"%s\" should name %s and say \"%s\"", err, path, why);
}

static void test_key_file(void **state)
{
    uint8_t data[4097];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 13);
    static const struct { size_t len; mode_t mode; const char *why; } rows[] = {
        { 32, 0600, NULL },
        { 32, 0400, NULL },
        { 4096, 0600, NULL },
        { 32, 0644, "chmod 600" },
        { 32, 0640, "chmod 600" },
        { 32, 0604, "chmod 600" },
        { 32, 0602, "chmod 600" },
        { 32, 0620, "chmod 600" },
        { 31, 0600, "at least 32" },
        { 0, 0600, "at least 32" },
        { 4097, 0600, "larger than" },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        struct tmpkey t;
        tmpkey_write(*state, &t, data, rows[i].len, rows[i].mode);
        if (rows[i].why) {
            assert_key_file_refused(t.path, rows[i].why);
        } else {
            uint8_t *key = NULL;
            size_t len = 0;
            char err[256] = "";
            assert_int_equal(seal_key_from_file(t.path, &key, &len, err, sizeof(err)), 0);
            assert_int_equal(len, rows[i].len);
            assert_memory_equal(key, data, len);
            free(key);
        }
        unlink(t.path);
    }
}

/* Symlinks are followed (a Kubernetes Secret mount is one); what is checked is the file at the
 * end. Directories, FIFOs and devices are refused, and a FIFO does not block the open. */
static void test_key_file_kinds(void **state)
{
    struct tmpkey t, bad;
    uint8_t data[32] = { 1 };
    tmpkey_write(*state, &t, data, sizeof(data), 0600);
    tmpkey_write(*state, &bad, data, sizeof(data), 0644);

    char link[128];
    snprintf(link, sizeof(link), "%s.link", t.path);
    assert_int_equal(symlink(t.path, link), 0);
    uint8_t *key = NULL;
    size_t len = 0;
    char err[256] = "";
    assert_int_equal(seal_key_from_file(link, &key, &len, err, sizeof(err)), 0);
    assert_int_equal(len, 32);
    free(key);
    unlink(link);
    assert_int_equal(symlink(bad.path, link), 0); /* the link's own mode (0777) is not what counts */
    assert_key_file_refused(link, "chmod 600");
    unlink(link);

    char dir[96];
    snprintf(dir, sizeof(dir), "%s/dir", ((struct fx *)*state)->dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(chmod(dir, 0700), 0);
    assert_key_file_refused(dir, "not a regular file");
    char fifo[128];
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_key_file_refused(fifo, "not a regular file");
    unlink(fifo);
    rmdir(dir);

    assert_key_file_refused("/dev/null", "not a regular file");
    assert_key_file_refused("/nonexistent/sluice-key", "No such file");
    snprintf(link, sizeof(link), "%s/dangling", ((struct fx *)*state)->dir);
    assert_int_equal(symlink("nowhere", link), 0);
    assert_key_file_refused(link, "No such file");
}

/* The layout a Kubernetes Secret volume has: key -> ..data/key, ..data -> ..<timestamp>/, and
 * the real file (defaultMode 0400) in the timestamped directory. */
static void test_key_file_kubernetes(void **state)
{
    struct fx *f = *state;
    char path[160], real[200];
    snprintf(path, sizeof(path), "%s/..2026_07_28_12_00_00.123", f->dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(real, sizeof(real), "%s/state-key", path);
    int fd = open(real, O_WRONLY | O_CREAT | O_EXCL, 0400);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, key_a, sizeof(key_a)), (ssize_t)sizeof(key_a));
    close(fd);
    snprintf(path, sizeof(path), "%s/..data", f->dir);
    assert_int_equal(symlink("..2026_07_28_12_00_00.123", path), 0);
    snprintf(path, sizeof(path), "%s/state-key", f->dir);
    assert_int_equal(symlink("..data/state-key", path), 0);

    uint8_t *key = NULL;
    size_t len = 0;
    char err[256] = "";
    assert_int_equal(seal_key_from_file(path, &key, &len, err, sizeof(err)), 0);
    assert_int_equal(len, sizeof(key_a));
    assert_memory_equal(key, key_a, len);
    free(key);
    assert_int_equal(chmod(real, 0644), 0); /* defaultMode left at 0644: refused */
    assert_key_file_refused(path, "chmod 600");
}

static void test_key_hex(void **state)
{
    (void)state;
    static const char good64[] =
        "000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1F";
    static const struct { const char *hex; const char *why; } rows[] = {
        { good64, NULL },
        { "000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1F2021", NULL },
        { "000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1", "at least 64" },
        { "000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E", "at least 64" },
        { "", "at least 64" },
        { "000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1F2", "odd" },
        { "000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1g", "hex digit" },
        { "000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1F\n", "odd" },
        { " 000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1F ", "hex digit" },
        { "0x0102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1F", "hex digit" },
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        uint8_t *key = NULL;
        size_t len = 0;
        char err[256] = "";
        int rc = seal_key_from_hex(rows[i].hex, &key, &len, err, sizeof(err));
        if (rows[i].why == NULL) {
            assert_int_equal(rc, 0);
            assert_int_equal(len, strlen(rows[i].hex) / 2);
            for (size_t k = 0; k < len; k++)
                assert_int_equal(key[k], k);
            free(key);
        } else {
            assert_int_equal(rc, -1);
            assert_null(key);
            if (strstr(err, rows[i].why) == NULL)
                fail_msg("row %zu: \"%s\" should say \"%s\"", i, err, rows[i].why);
        }
    }
    uint8_t *key = NULL;
    size_t len = 0;
    assert_int_equal(seal_key_from_hex(NULL, &key, &len, NULL, 0), -1);
}

/* A key read from a file seals and opens like the same bytes given directly. */
static void test_key_file_ring(void **state)
{
    struct fx *f = *state;
    struct tmpkey t;
    tmpkey_write(f, &t, key_a, sizeof(key_a), 0600);
    uint8_t *key = NULL;
    size_t len = 0;
    char err[256];
    assert_int_equal(seal_key_from_file(t.path, &key, &len, err, sizeof(err)), 0);
    struct seal_keyring *kr = seal_keyring_new(key, len, NULL, 0);
    free(key);
    assert_int_equal(try_open(kr, &f->b, NOW, f->tok.p, f->tok.len), SEAL_OK);
    seal_keyring_free(kr);
    unlink(t.path);
}

static void test_strerror(void **state)
{
    (void)state;
    static const enum seal_status all[] = { SEAL_OK, SEAL_EFORMAT, SEAL_EKEY, SEAL_EAUTH,
                                            SEAL_EEXPIRED };
    for (size_t i = 0; i < SL_ARRAY_LEN(all); i++) {
        assert_non_null(seal_strerror(all[i]));
        for (size_t k = 0; k < i; k++)
            assert_string_not_equal(seal_strerror(all[i]), seal_strerror(all[k]));
    }
    assert_non_null(seal_strerror((enum seal_status)-99));
}

/* Nonces come from a pool of random bytes refilled as it runs out: across several refills
 * (1 KiB each) no nonce is handed out twice, and two states of the same claims differ (a fresh
 * IV each). */
static void test_random_pool(void **state)
{
    struct fx *f = *state;
    enum { DRAWS = 300 };
    static uint8_t seen[DRAWS][SEAL_NONCE_LEN];
    for (size_t i = 0; i < DRAWS; i++) {
        assert_int_equal(seal_random_nonce(seen[i]), 0);
        for (size_t j = 0; j < i; j++)
            assert_memory_not_equal(seen[i], seen[j], SEAL_NONCE_LEN);
    }
    struct sl_buf a = { 0 }, b = { 0 };
    assert_int_equal(seal_mint(f->kr, &f->b, &f->c, &a), 0);
    assert_int_equal(seal_mint(f->kr, &f->b, &f->c, &b), 0);
    assert_true(a.len == b.len && memcmp(a.p, b.p, a.len) != 0);
    sl_buf_free(&a);
    sl_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
        T(test_round_trip),
        T(test_random_pool),
        T(test_round_trip_inner),
        T(test_mint_refuses),
        T(test_mint_fresh_iv),
        T(test_format_matches_header),
        T(test_authentic_but_malformed),
        T(test_tamper_every_byte),
        T(test_failure_returns_nothing),
        T(test_tamper_text),
        T(test_truncate_and_extend),
        T(test_garbage),
        T(test_wrong_key),
        T(test_rotation),
        T(test_keyring_new_refuses),
        T(test_binding),
        T(test_binding_too_long),
        T(test_expiry),
        T(test_key_file),
        T(test_key_file_kinds),
        T(test_key_file_kubernetes),
        T(test_key_hex),
        T(test_key_file_ring),
        T(test_strerror),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
