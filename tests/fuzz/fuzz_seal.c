/* fuzz_seal.c: the sealed request state (seal.c). The first input byte picks one of three modes.
 *
 * 0  forgery: the rest of the input is a state, opened under a fixed key ring (two keys, so
 *    the previous-key path runs too) with a fixed binding. Nothing is ever minted under these
 *    keys for that binding, so the only correct answer is a refusal: SEAL_OK means a state was
 *    forged without the key (or a spelling of a real state that is not the one seal_mint
 *    writes). The seed corpus holds states minted under the same keys for other bindings, so
 *    the fuzzer starts from the right shape and key id.
 * 1  tamper: a state is minted now, under another key, and the fuzzer edits it (flip bytes,
 *    cut it short, append). It must open iff the edited bytes equal the minted ones, and then
 *    give back exactly the claims sealed.
 * 2  model: the fuzzer chooses the claims (kind, iat, exp, inner bytes), the binding it is
 *    minted for and the one it is opened with, the key rings and the clock. seal_open must
 *    answer what seal.h says: SEAL_EKEY when no key of the ring has its key id, SEAL_EAUTH when
 *    any binding field differs, SEAL_EEXPIRED unless iat <= now + 300 and now < exp and
 *    iat < exp, else SEAL_OK with the claims unchanged. */
#include "fuzz.h"

#include "seal.h"

#define NOW 1800000000u

static const uint8_t raw_key_cur[32] = "fuzz_seal: forgery current key.";
static const uint8_t raw_key_prev[32] = "fuzz_seal: forgery previous key";
static const uint8_t key_a[32] = "fuzz_seal: key A for minting...";
static const uint8_t key_b[32] = "fuzz_seal: key B for rotation..";

static struct seal_keyring *ring_raw, *ring_a, *ring_b, *ring_b_prev_a, *ring_a_prev_b;

static const struct seal_binding binding = {
    .method = SL_STR("tools/call"),
    .tool = SL_STR("write_file"),
    .principal = SL_STR("local"),
    .upstream = SL_STR("stdio:fuzz"),
};

int LLVMFuzzerInitialize(int *argc, char ***argv);

/* FUZZ_SEAL_WRITE_SEEDS=DIR writes seed inputs for the forgery mode into DIR: states minted
 * under the forgery ring's keys (current and previous) for other bindings, so they have the
 * right shape and key ids and still must not open. How tests/fuzz/corpus/seal/ was made. */
static void write_seeds(const char *dir)
{
    static const char *const tools[] = { "delete_file", "write_file ", "", "edit_file" };
    for (size_t i = 0; i < 8; i++) {
        struct seal_binding b = binding;
        b.tool = sl_str_c(tools[i % 4]);
        if (i >= 4)
            b.principal = SL_STR("remote");
        struct seal_claims c = { .kind = (enum seal_kind)(1 + i % 3), .iat = NOW, .exp = NOW + 60,
                                 .inner = i % 2 ? SL_STR("upstream-state") : SL_STR_NULL };
        FUZZ_CHECK(seal_random_nonce(c.nonce) == 0);
        struct seal_keyring *kr = i % 2 ? seal_keyring_new(raw_key_prev, 32, NULL, 0)
                                        : seal_keyring_new(raw_key_cur, 32, NULL, 0);
        struct sl_buf tok = { 0 };
        sl_buf_putc(&tok, '0'); /* mode 0: forgery */
        FUZZ_CHECK(seal_mint(kr, &b, &c, &tok) == 0);
        char path[4096];
        snprintf(path, sizeof(path), "%s/forgery-%zu", dir, i);
        FILE *f = fopen(path, "wb");
        FUZZ_CHECK(f != NULL && fwrite(tok.p, 1, tok.len, f) == tok.len && fclose(f) == 0);
        sl_buf_free(&tok);
        seal_keyring_free(kr);
    }
}
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    ring_raw = seal_keyring_new(raw_key_cur, 32, raw_key_prev, 32);
    ring_a = seal_keyring_new(key_a, 32, NULL, 0);
    ring_b = seal_keyring_new(key_b, 32, NULL, 0);
    ring_b_prev_a = seal_keyring_new(key_b, 32, key_a, 32);
    ring_a_prev_b = seal_keyring_new(key_a, 32, key_b, 32);
    FUZZ_CHECK(ring_raw && ring_a && ring_b && ring_b_prev_a && ring_a_prev_b);
    const char *dir = getenv("FUZZ_SEAL_WRITE_SEEDS");
    if (dir != NULL)
        write_seeds(dir);
    return 0;
}

static void forgery(struct fuzz_in *in)
{
    struct seal_claims c;
    struct sl_buf inner = { 0 };
    enum seal_status st = seal_open(ring_raw, &binding, NOW, (const char *)in->p, in->len, &c,
                                    &inner);
    FUZZ_CHECK(st != SEAL_OK);
    FUZZ_CHECK(st == SEAL_EFORMAT || st == SEAL_EKEY || st == SEAL_EAUTH);
    FUZZ_CHECK(inner.len == 0);
    sl_buf_free(&inner);
}

static void check_claims(const struct seal_claims *got, const struct seal_claims *want)
{
    FUZZ_CHECK(got->kind == want->kind);
    FUZZ_CHECK(memcmp(got->nonce, want->nonce, SEAL_NONCE_LEN) == 0);
    FUZZ_CHECK(memcmp(got->origin, want->origin, SEAL_ORIGIN_LEN) == 0);
    FUZZ_CHECK(got->iat == want->iat && got->exp == want->exp);
    FUZZ_CHECK(memcmp(got->args_digest, want->args_digest, SEAL_DIGEST_LEN) == 0);
    FUZZ_CHECK(got->inner.len == want->inner.len);
    FUZZ_CHECK(want->inner.len == 0 || memcmp(got->inner.p, want->inner.p, want->inner.len) == 0);
}

static void tamper(struct fuzz_in *in)
{
    struct seal_claims want = { .kind = SEAL_KIND_CONFIRM, .iat = NOW, .exp = NOW + 60 };
    const uint8_t *inner_src;
    want.inner.len = fuzz_bytes(in, 40, &inner_src);
    want.inner.p = (const char *)inner_src;
    memset(want.args_digest, 0xd1, sizeof(want.args_digest));
    FUZZ_CHECK(seal_random_nonce(want.nonce) == 0);
    struct sl_buf minted = { 0 }, edited = { 0 }, inner = { 0 };
    FUZZ_CHECK(seal_mint(ring_a, &binding, &want, &minted) == 0);
    sl_buf_put(&edited, minted.p, minted.len);
    /* Edits: (position, value) pairs. value 0 cuts the state there, 1 appends the next byte,
     * anything else is XORed into the byte at the position. */
    while (in->len >= 2 && edited.len > 0) {
        size_t at = fuzz_u16(in) % edited.len;
        uint8_t v = fuzz_u8(in);
        if (v == 0) {
            edited.len = at;
        } else if (v == 1) {
            sl_buf_putc(&edited, (char)fuzz_u8(in));
        } else {
            edited.p[at] = (char)(edited.p[at] ^ v);
        }
    }
    bool same = edited.len == minted.len && memcmp(edited.p, minted.p, minted.len) == 0;
    struct seal_claims got;
    enum seal_status st = seal_open(ring_a, &binding, NOW + 1, edited.p ? edited.p : "",
                                    edited.len, &got, &inner);
    if (same) {
        FUZZ_CHECK(st == SEAL_OK);
        check_claims(&got, &want);
    } else {
        FUZZ_CHECK(st != SEAL_OK);
    }
    sl_buf_free(&minted);
    sl_buf_free(&edited);
    sl_buf_free(&inner);
}

/* A binding field: the fuzzer's bytes (at most 12). */
static struct sl_str field(struct fuzz_in *in)
{
    const uint8_t *p;
    size_t n = fuzz_bytes(in, 12, &p);
    return (struct sl_str){ n ? (const char *)p : "", n };
}

static void model(struct fuzz_in *in)
{
    struct seal_binding mb = { field(in), field(in), field(in), field(in) };
    struct seal_binding ob = mb;
    uint8_t which = fuzz_u8(in);
    if (which & 1) ob.method = field(in);
    if (which & 2) ob.tool = field(in);
    if (which & 4) ob.principal = field(in);
    if (which & 8) ob.upstream = field(in);
    /* Times around NOW, in seconds; the clock-skew bound (300 s) is within reach. */
    struct seal_claims want = { .kind = (enum seal_kind)(1 + fuzz_u8(in) % 3) };
    want.iat = NOW + (uint64_t)(int64_t)(int16_t)fuzz_u16(in);
    want.exp = want.iat + (uint64_t)(int64_t)(int16_t)fuzz_u16(in);
    uint64_t now = NOW + (uint64_t)(int64_t)(int16_t)fuzz_u16(in);
    for (size_t i = 0; i < SEAL_NONCE_LEN; i++)
        want.nonce[i] = fuzz_u8(in);
    for (size_t i = 0; i < SEAL_DIGEST_LEN; i++)
        want.args_digest[i] = fuzz_u8(in);
    for (size_t i = 0; i < SEAL_ORIGIN_LEN; i++)
        want.origin[i] = fuzz_u8(in);
    /* Key rings: minted under A or B, opened with a ring that holds it as current or previous
     * key, or not at all. */
    uint8_t rings = fuzz_u8(in) % 6;
    const struct seal_keyring *mint_ring = rings < 3 ? ring_a : ring_b;
    const struct seal_keyring *open_ring[] = { ring_a, ring_b_prev_a, ring_b,
                                               ring_b, ring_a_prev_b, ring_a };
    bool has_key = rings != 2 && rings != 5;
    want.inner = (struct sl_str){ (const char *)in->p, in->len };
    struct sl_buf token = { 0 }, inner = { 0 };
    FUZZ_CHECK(seal_mint(mint_ring, &mb, &want, &token) == 0);
    struct seal_claims got;
    enum seal_status st = seal_open(open_ring[rings], &ob, now, token.p, token.len, &got, &inner);
    bool bound = sl_str_eq(mb.method, ob.method) && sl_str_eq(mb.tool, ob.tool) &&
                 sl_str_eq(mb.principal, ob.principal) && sl_str_eq(mb.upstream, ob.upstream);
    bool in_time = now < want.exp && want.iat < want.exp &&
                   !(want.iat > now && want.iat - now > 300);
    enum seal_status expect = !has_key ? SEAL_EKEY : !bound ? SEAL_EAUTH
                            : !in_time ? SEAL_EEXPIRED : SEAL_OK;
    if (st != expect) {
        fprintf(stderr, "seal_open gave %d, want %d (key %d bound %d iat %llu exp %llu now %llu)\n",
                st, expect, has_key, bound, (unsigned long long)want.iat,
                (unsigned long long)want.exp, (unsigned long long)now);
        FUZZ_CHECK(st == expect);
    }
    if (st == SEAL_OK)
        check_claims(&got, &want);
    sl_buf_free(&token);
    sl_buf_free(&inner);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_in in = { data, size };
    switch (fuzz_u8(&in) % 3) {
    case 0:
        forgery(&in);
        break;
    case 1:
        tamper(&in);
        break;
    default:
        model(&in);
        break;
    }
    return 0;
}
