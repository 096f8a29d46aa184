/* fuzz_canon.c: RFC 8785 canonicalization of any JSON the project's reader accepts.
 *
 * Properties, for every text json_parse accepts:
 * - canon_write refuses exactly the trees holding a number that is not a finite double (the only
 *   value of a parsed tree without a canonical form);
 * - the canonical form parses again, to the same JSON value (numbers equal as doubles, strings
 *   byte for byte, objects as sets of members), and canonicalizing that gives the same bytes
 *   (idempotence);
 * - the tree written back with json_write and read again has the same canonical form (the
 *   digest binds the value, not the spelling);
 * - canon_digest is SHA-256 of those bytes.
 * - every finite number literal is written as the shortest form of its double (canon_number);
 * And for the first 8 input bytes read as a double: canon_number gives a JSON number of at most
 * 31 characters that reads back as exactly that double. */
#include "fuzz.h"

#include <math.h>

#include <openssl/sha.h>

#include "canon.h"
#include "jsonrpc.h"

static bool all_numbers_finite(const struct json *v)
{
    switch (v->type) {
    case JSON_NUMBER: {
        char text[SL_MAX_NUMBER + 1];
        FUZZ_CHECK(v->u.num.len <= SL_MAX_NUMBER);
        memcpy(text, v->u.num.p, v->u.num.len);
        text[v->u.num.len] = '\0';
        return isfinite(strtod(text, NULL));
    }
    case JSON_ARRAY:
        for (size_t i = 0; i < v->u.arr.n; i++)
            if (!all_numbers_finite(v->u.arr.v[i]))
                return false;
        return true;
    case JSON_OBJECT:
        for (size_t i = 0; i < v->u.obj.n; i++)
            if (!all_numbers_finite(v->u.obj.v[i].val))
                return false;
        return true;
    default:
        return true;
    }
}

/* Every finite number literal in v is written as the digit search writes its double: the
 * literals canon.c lays out from their own digits (at most 15 significant ones) included. */
static void check_literals(const struct json *v)
{
    if (v->type == JSON_ARRAY) {
        for (size_t i = 0; i < v->u.arr.n; i++)
            check_literals(v->u.arr.v[i]);
    } else if (v->type == JSON_OBJECT) {
        for (size_t i = 0; i < v->u.obj.n; i++)
            check_literals(v->u.obj.v[i].val);
    } else if (v->type == JSON_NUMBER) {
        char text[SL_MAX_NUMBER + 1], want[32];
        memcpy(text, v->u.num.p, v->u.num.len);
        text[v->u.num.len] = '\0';
        double d = strtod(text, NULL);
        if (!isfinite(d))
            return;
        struct sl_buf got = { 0 };
        FUZZ_CHECK(canon_write(&got, v) == 0);
        canon_number(d, want);
        if (strcmp(got.p, want) != 0) {
            fprintf(stderr, "literal %s: canonical %s, its double's shortest form %s\n", text,
                    got.p, want);
            FUZZ_CHECK(!"a literal's canonical form is not its double's shortest form");
        }
        sl_buf_free(&got);
    }
}

static void check_number(const uint8_t *data, size_t size)
{
    double d;
    if (size < sizeof(d))
        return;
    memcpy(&d, data, sizeof(d));
    if (!isfinite(d))
        return;
    char buf[32];
    canon_number(d, buf);
    size_t n = strnlen(buf, sizeof(buf));
    FUZZ_CHECK(n > 0 && n < sizeof(buf));
    struct sl_arena *a = sl_arena_new();
    struct json *v;
    char err[160];
    FUZZ_CHECK(json_parse(buf, n, a, &v, err, sizeof(err)) == 0 && v->type == JSON_NUMBER);
    sl_arena_free(a);
    double back = strtod(buf, NULL);
    FUZZ_CHECK(back == d);  /* -0 reads back as 0, which == -0 */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_number(data, size);

    struct sl_arena *a = sl_arena_new();
    struct json *v;
    char err[160];
    if (json_parse((const char *)data, size, a, &v, err, sizeof(err)) != 0) {
        sl_arena_free(a);
        return 0;
    }
    struct sl_buf c1 = { 0 }, c2 = { 0 }, c3 = { 0 }, w = { 0 };
    bool finite = all_numbers_finite(v);
    int rc = canon_write(&c1, v);
    FUZZ_CHECK((rc == 0) == finite);
    check_literals(v);
    if (rc == 0) {
        struct json *v2, *v3;
        if (json_parse(c1.p, c1.len, a, &v2, err, sizeof(err)) != 0) {
            fprintf(stderr, "canonical form %s does not parse: %s\n", c1.p, err);
            FUZZ_CHECK(!"canonical output is not JSON");
        }
        FUZZ_CHECK(canon_write(&c2, v2) == 0);
        FUZZ_CHECK(c1.len == c2.len && memcmp(c1.p, c2.p, c1.len) == 0);
        /* and it is the same value: nothing merged, dropped or rounded away */
        FUZZ_CHECK(fuzz_same_value(v, v2));

        json_write(&w, v);
        FUZZ_CHECK(json_parse(w.p, w.len, a, &v3, err, sizeof(err)) == 0);
        FUZZ_CHECK(canon_write(&c3, v3) == 0);
        FUZZ_CHECK(c1.len == c3.len && memcmp(c1.p, c3.p, c1.len) == 0);

        uint8_t d1[CANON_DIGEST_LEN], d2[SHA256_DIGEST_LENGTH];
        FUZZ_CHECK(canon_digest(v, d1) == 0);
        SHA256((const unsigned char *)c1.p, c1.len, d2);
        FUZZ_CHECK(memcmp(d1, d2, sizeof(d1)) == 0);
    } else {
        uint8_t d1[CANON_DIGEST_LEN];
        FUZZ_CHECK(canon_digest(v, d1) != 0);
    }
    sl_buf_free(&c1);
    sl_buf_free(&c2);
    sl_buf_free(&c3);
    sl_buf_free(&w);
    sl_arena_free(a);
    return 0;
}
