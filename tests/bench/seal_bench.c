/* seal_bench: what the gate's canonicalize-and-seal costs per byte of arguments. Not part of
 * sluice; links its pure core (libsluice_core) and calls what sluice calls on round one.
 *
 *   seal_bench --policy FILE [--sizes 1024,65536,1048576] [--rounds 5] [--min-seconds 0.3]
 *   seal_bench --policy FILE --size N --iterations I --phase parse|digest|decide
 *
 * For each size N the arguments are {"pad":"<letters>"}, N bytes in canonical form (the largest
 * is GATE_MAX_ARGS, the most a gated call may carry). Three phases, each timed alone:
 *   parse   json_parse of the arguments' text (sluice parses the whole message once anyway);
 *   digest  gate_args_digest: the RFC 8785 canonical form and its SHA-256;
 *   decide  gate_decide on a round one (form elicitation declared, echo gated by the policy):
 *           the canonical form, the digest, the question's text and the sealed requestState.
 * A phase repeats until it has run --min-seconds (at least 3 times); a round gives MB/s
 * (10^6 bytes of arguments per second); the line per size and phase is the median of the
 * rounds. The second form runs one phase I times and prints nothing but a check line, for
 * callgrind (instructions per byte = the difference of two iteration counts / bytes).
 *
 * Output: one line per size and phase, key=value pairs:
 *   phase=decide bytes=65536 mb_per_s=... us_per_call=... rounds="r1 r2 ..." */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base.h"
#include "gate.h"
#include "json.h"
#include "jsonrpc.h"
#include "policy.h"
#include "seal.h"

#define PAD_OVERHEAD 10 /* {"pad":""} */
#define MAX_ROUNDS 64

enum phase { PH_PARSE, PH_DIGEST, PH_DECIDE, PH_COUNT };
static const char *const phase_name[PH_COUNT] = {"parse", "digest", "decide"};

struct bench {
    struct policy *policy;
    struct seal_keyring *keys;
    uint8_t origin[SEAL_ORIGIN_LEN];
    struct gate_ctx gate;
    char *text;   /* the arguments' JSON text */
    size_t len;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* {"pad":"abc...."} of exactly n bytes (n > PAD_OVERHEAD). Already canonical. */
static char *make_args(size_t n)
{
    char *t = malloc(n + 1);
    if (!t)
        exit(2);
    memcpy(t, "{\"pad\":\"", 8);
    for (size_t i = 8; i < n - 2; i++)
        t[i] = (char)('a' + i % 26);
    memcpy(t + n - 2, "\"}", 3);
    return t;
}

/* One run of the phase; returns false when it did not do what sluice does (a parse error, no
 * digest, or a verdict other than the question). */
static bool run_once(struct bench *b, enum phase ph)
{
    struct sl_arena *a = sl_arena_new();
    struct json *args;
    char err[128];
    bool ok = json_parse(b->text, b->len, a, &args, err, sizeof err) == 0;
    if (ok && ph == PH_DIGEST) {
        uint8_t d[32];
        ok = gate_args_digest(args, d);
    } else if (ok && ph == PH_DECIDE) {
        struct gate_input in = {
            .policy = b->policy,
            .principal = SL_STR("bench"),
            .tool = SL_STR("echo"),
            .args = args,
            .can_elicit_form = true,
        };
        struct gate_verdict v;
        gate_decide(&b->gate, &in, 1800000000u, &v);
        ok = v.action == GATE_ASK && v.state.len > 0 && v.has_digest;
        gate_verdict_free(&v);
    }
    sl_arena_free(a);
    return ok;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static int bench_size(struct bench *b, size_t n, int rounds, double min_s)
{
    b->text = make_args(n);
    b->len = n;
    for (int ph = 0; ph < PH_COUNT; ph++) {
        double mbs[MAX_ROUNDS], us[MAX_ROUNDS];
        char list[MAX_ROUNDS * 12] = "";
        for (int r = 0; r < rounds; r++) {
            unsigned long it = 0;
            double t0 = now_s(), t;
            do {
                if (!run_once(b, (enum phase)ph)) {
                    fprintf(stderr, "seal_bench: %s of %zu bytes failed\n", phase_name[ph], n);
                    return 1;
                }
                it++;
                t = now_s() - t0;
            } while (t < min_s || it < 3);
            mbs[r] = (double)n * (double)it / t / 1e6;
            us[r] = t / (double)it * 1e6;
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%.1f", r ? " " : "",
                     mbs[r]);
        }
        qsort(mbs, (size_t)rounds, sizeof *mbs, cmp_double);
        qsort(us, (size_t)rounds, sizeof *us, cmp_double);
        printf("phase=%s bytes=%zu mb_per_s=%.1f us_per_call=%.1f rounds=\"%s\"\n",
               phase_name[ph], n, mbs[rounds / 2], us[rounds / 2], list);
        fflush(stdout);
    }
    free(b->text);
    return 0;
}

static int usage(void)
{
    fputs("usage: seal_bench --policy FILE [--sizes N,N,...] [--rounds R] [--min-seconds S]\n"
          "       seal_bench --policy FILE --size N --iterations I --phase parse|digest|decide\n",
          stderr);
    return 2;
}

int main(int argc, char **argv)
{
    const char *policy = NULL, *sizes = "1024,65536,1048576", *phase = NULL;
    int rounds = 5;
    double min_s = 0.3;
    size_t size = 0;
    unsigned long iterations = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--policy"))
            policy = argv[i + 1];
        else if (!strcmp(argv[i], "--sizes"))
            sizes = argv[i + 1];
        else if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--min-seconds"))
            min_s = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--size"))
            size = strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--iterations"))
            iterations = strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--phase"))
            phase = argv[i + 1];
        else
            return usage();
    }
    if (!policy || rounds < 1 || rounds > MAX_ROUNDS || (argc - 1) % 2)
        return usage();
    struct bench b = {0};
    struct policy_error perr;
    if (policy_load_file(policy, &b.policy, &perr) != 0) {
        char msg[300];
        policy_error_format(&perr, msg, sizeof msg);
        fprintf(stderr, "seal_bench: %s\n", msg);
        return 1;
    }
    b.keys = seal_keyring_random();
    b.gate = (struct gate_ctx){.keys = b.keys, .origin = b.origin,
                               .upstream_id = SL_STR("http://127.0.0.1/mcp"),
                               .server_name = SL_STR("bench")};
    int rc = 0;
    if (size) { /* the callgrind form */
        int ph = -1;
        for (int k = 0; k < PH_COUNT; k++)
            if (phase && !strcmp(phase, phase_name[k]))
                ph = k;
        if (ph < 0 || size <= PAD_OVERHEAD || size > GATE_MAX_ARGS)
            return usage();
        b.text = make_args(size);
        b.len = size;
        for (unsigned long k = 0; k < iterations && rc == 0; k++)
            rc = run_once(&b, (enum phase)ph) ? 0 : 1;
        printf("phase=%s bytes=%zu iterations=%lu ok=%d\n", phase, size, iterations, rc == 0);
        free(b.text);
    } else {
        for (const char *p = sizes; *p && rc == 0;) {
            size_t n = strtoul(p, NULL, 10);
            if (n <= PAD_OVERHEAD || n > GATE_MAX_ARGS)
                return usage();
            rc = bench_size(&b, n, rounds, min_s);
            p += strcspn(p, ",");
            p += *p == ',';
        }
    }
    seal_keyring_free(b.keys);
    policy_unref(b.policy);
    return rc;
}
