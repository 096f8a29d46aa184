/* fuzz_ere.c: policy/ere.c, the policy's own POSIX ERE matcher, against glibc's regcomp
 * (REG_EXTENDED, C locale) and re_match(...) == len, which is what the regex rule meant before.
 *
 * Input: the pattern, a NUL byte, then values separated by NUL bytes (so a value never holds
 * NUL: glibc's '.' refuses NUL, RE_DOT_NOT_NULL, where ere takes it, and sluice refuses such
 * values before any regex). The pattern may hold '\n'.
 *
 * Properties:
 * - ere never takes a pattern glibc refuses;
 * - a pattern glibc takes and ere refuses is refused for a reason ere.h documents;
 * - on a pattern both take, both give the same answer on every value; except where glibc reads
 *   a '\n' of the value as a line end for a '^' or '$' inside the pattern (which it does
 *   without REG_NEWLINE: "x$\n.*" matches "x\nyz"; POSIX and ere read '\n' as any byte). Such a
 *   difference is let through only if renaming '\n' to a byte no class tells from it and that
 *   appears nowhere else ('\v', '\f' or '\r') makes glibc give ere's answer, and ere's answer
 *   does not change (or if all three appear, when there is no telling);
 * - ere_match stays within ere_size() steps per byte and an exhausted budget says so.
 *
 * glibc takes exponential time on some short patterns, so it runs in a child process, and an
 * input whose answer takes it longer than GLIBC_DEADLINE_MS is not compared (the child is
 * killed and a new one started). No weighing of a pattern finds all of them: "(a||){88}*"
 * took glibc's regcomp over 10 s (a CI run timed out on one such pattern), a loop around parts
 * that can each be empty in two ways, "((a?|)(b?|)(c?|)(d?|)(e?|)(f?|)(g?|)(h?|)(i?|)(j?|))+",
 * 1.4 s, and about four times that for each part more. The deadline is the guarantee; the
 * weighing below only keeps the shapes known to be slow away from glibc, so that the fuzzer
 * does not wait out a deadline on each of them: patterns over 64 bytes, values over 256 bytes,
 * and patterns whose repeat counts multiply to more than a few hundred copies, that put more
 * than 2 repeats on one atom (stacked, "a???", or nested, "((a?)*)+": glibc's regcomp doubles
 * its time with each count of "^T**{n}", n = 16 takes 0.07 s), that repeat many groups
 * ("#((((((((())))))))*|b*|b){,2}{8})" took glibc over 10 s) or that put "{m,}" (m > 1) on a
 * group are not given to glibc. ere is always run. */
#include "fuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ere.h"

#define MAX_PATTERN 64
#define MAX_VALUE   256
#define MAX_VALUES  16
#define MAX_COPIES  400 /* repeat counts multiplied through nested groups, for glibc */
#define MAX_LEVELS  2   /* repeats stacked or nested on one atom, for glibc */
#define MAX_GROUP_COPIES 200 /* groups times MAX_COPIES' count: each group is two empty moves */
#define GLIBC_DEADLINE_MS 200 /* glibc's usual answer takes well under 10 ms, under ASan too */

/* The refusals ere.h documents, by their messages. */
static bool documented(const char *msg)
{
    static const char *const kinds[] = {
        "a back-reference",
        "a GNU operator",
        "which POSIX ERE reads as the letter or digit itself",
        "a repeat after an anchor",
        "with nothing before it to repeat",
        "a malformed interval",
        "a repeat of a group that holds an anchor",
        "a range that ends with a class",
        "too large",
        "an interval count over",
        "groups nested too deep",
    };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strstr(msg, kinds[i]) != NULL)
            return true;
    return false;
}

#define CAP 100000u

static size_t capped(size_t n)
{
    return n > CAP ? CAP : n;
}

/* A repeat's weight for glibc: the copies it makes of what it repeats, at most, and one more
 * level of repeats stacked or nested (glibc's closure of the empty moves, which it computes
 * recursively, grows fast with those: 12 stacked '?' with two loops around them took it more
 * than 10 s). */
struct weight {
    size_t copies;
    unsigned levels;
};

/* Past the repeat operators at p ("*", "{2,5}", "+{3}"...); *k: the copies they make at most
 * (conservative: '*', '+' and '?' count 2, {m,n} counts its largest number plus one), *ops: how
 * many there are, *open: whether one is "{m,}" with m of 2 or more (on a group, glibc's closures
 * take time exponential in m: "(a?|){20,}" takes it seconds, where "(a?|){0,20}" and "(a?|)*"
 * take under a millisecond). */
static const char *skip_repeats(const char *p, const char *end, size_t *k, unsigned *ops,
                                bool *open)
{
    *k = 1;
    *ops = 0;
    *open = false;
    for (; p < end; ++*ops) {
        size_t most = 0, cur = 0;
        if (*p == '*' || *p == '+' || *p == '?') {
            *k = capped(*k * 2);
            p++;
            continue;
        }
        if (*p != '{')
            break;
        for (p++; p < end && *p != '}'; p++) {
            cur = *p >= '0' && *p <= '9' ? capped(cur * 10 + (size_t)(*p - '0')) : 0;
            most = cur > most ? cur : most;
        }
        *open |= p < end && p[-1] == ',' && most >= 2;
        p += p < end;
        *k = capped(*k * (most + 1));
    }
    return p;
}

/* Past one atom at p: an escape, a bracket expression (roughly as regcomp reads it) or a byte. */
static const char *skip_atom(const char *p, const char *end)
{
    if (*p == '\\')
        return p + 2 < end ? p + 2 : end;
    if (*p != '[')
        return p + 1;
    p++;
    if (p < end && *p == '^')
        p++;
    if (p < end && *p == ']')
        p++;
    while (p < end && *p != ']') {
        if (end - p >= 2 && p[0] == '[' && (p[1] == '.' || p[1] == '=' || p[1] == ':')) {
            const char *close = NULL;
            for (const char *q = p + 2; q + 1 < end && close == NULL; q++)
                if (q[0] == p[1] && q[1] == ']')
                    close = q + 2;
            p = close ? close : end;
        } else {
            p++;
        }
    }
    return p < end ? p + 1 : end;
}

/* Past the ')' that closes the group whose contents start at p (or the end). */
static const char *group_end(const char *p, const char *end)
{
    int level = 1;
    while (p < end && level > 0) {
        level += *p == '(' ? 1 : *p == ')' ? -1 : 0;
        p = *p == '(' || *p == ')' ? p + 1 : skip_atom(p, end);
    }
    return p;
}

/* Roughly the heaviest atom for glibc's regcomp: the product of the repeat counts on it and on
 * the groups around it, and how many repeats those are. src holds at most MAX_PATTERN bytes. */
static struct weight heaviest(const char *src, size_t len)
{
    const char *p = src, *end = src + len;
    struct weight outer[MAX_PATTERN + 1], cur = { 1, 0 }, worst = { 1, 0 };
    size_t depth = 0, k;
    unsigned ops;
    bool open;
    while (p < end) {
        struct weight w;
        if (*p == '(') { /* the group weighs what its repeats make, empty or not: "()+++" */
            skip_repeats(group_end(p + 1, end), end, &k, &ops, &open);
            if (open)
                k = CAP;
            outer[depth++] = cur;
            w = cur = (struct weight){ capped(cur.copies * k), cur.levels + ops };
            p++;
        } else if (*p == ')' && depth > 0) {
            w = cur = outer[--depth];
            p = skip_repeats(p + 1, end, &k, &ops, &open); /* counted at its '(' */
        } else {
            p = skip_repeats(skip_atom(p, end), end, &k, &ops, &open); /* an atom's: fast */
            w = (struct weight){ capped(cur.copies * k), cur.levels + ops };
        }
        worst.copies = w.copies > worst.copies ? w.copies : worst.copies;
        worst.levels = w.levels > worst.levels ? w.levels : worst.levels;
    }
    return worst;
}

/* Whether glibc may take long on the pattern: kept out of the comparison. */
static bool heavy_for_glibc(const char *src, size_t len)
{
    if (len > MAX_PATTERN)
        return true;
    struct weight w = heaviest(src, len);
    size_t groups = 0;
    for (size_t i = 0; i < len; i++)
        groups += src[i] == '(';
    return w.copies > MAX_COPIES || w.levels > MAX_LEVELS || groups * w.copies > MAX_GROUP_COPIES;
}

/* ===== glibc, in a child process, with a deadline ===== */

struct value {
    const char *p;
    size_t n;
};

/* A question for glibc: its size, a pattern and the values to match it on, each after its
 * length. Its answer: regcomp's code, and when that is 0 one byte per value, 1 for a whole
 * match. Both fit a pipe's buffer, so each is one write(). */
#define QUESTION_MAX (4 + 4 + MAX_PATTERN + 4 + MAX_VALUES * (4 + MAX_VALUE))
#define ANSWER_MAX   (4 + MAX_VALUES)

static struct glibc_child {
    pid_t pid; /* 0: none yet, or killed */
    int ask, answer;
} glibc = { 0, -1, -1 };

static bool read_full(int fd, void *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

static bool glibc_match(regex_t *r, const char *s, size_t len)
{
    return re_match((struct re_pattern_buffer *)r, s, (regoff_t)len, 0, NULL) == (regoff_t)len;
}

/* The child: answers questions until its parent goes. It leaves with _exit, so no leak check or
 * libFuzzer exit handler runs in it. */
static _Noreturn void glibc_serve(int in, int out)
{
    static char question[QUESTION_MAX];
    char pat[MAX_PATTERN + 1], answer[ANSWER_MAX];
    for (;;) {
        uint32_t size, pn, count, n;
        if (!read_full(in, &size, 4) || size > QUESTION_MAX - 4 || !read_full(in, question, size))
            _exit(0);
        const char *q = question; /* the parent wrote it: its counts are within size */
        memcpy(&pn, q, 4);
        memcpy(pat, q + 4, pn);
        pat[pn] = '\0';
        memcpy(&count, q + 4 + pn, 4);
        q += 8 + pn;
        regex_t r;
        int32_t rc = regcomp(&r, pat, REG_EXTENDED);
        memcpy(answer, &rc, 4);
        for (uint32_t i = 0; i < count; i++, q += 4 + n) {
            memcpy(&n, q, 4);
            answer[4 + i] = rc == 0 && glibc_match(&r, q + 4, n);
        }
        if (rc == 0)
            regfree(&r);
        if (write(out, answer, 4 + count) != (ssize_t)(4 + count))
            _exit(0);
    }
}

static void glibc_stop(void)
{
    if (glibc.pid > 0) {
        kill(glibc.pid, SIGKILL);
        waitpid(glibc.pid, NULL, 0);
        close(glibc.ask);
        close(glibc.answer);
    }
    glibc.pid = 0;
}

static bool glibc_start(void)
{
    int ask[2], answer[2];
    if (pipe2(ask, O_CLOEXEC) != 0)
        return false;
    if (pipe2(answer, O_CLOEXEC) != 0) {
        close(ask[0]);
        close(ask[1]);
        return false;
    }
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(ask[1]);
        close(answer[0]);
        glibc_serve(ask[0], answer[1]);
    }
    close(ask[0]);
    close(answer[1]);
    if (pid < 0) {
        close(ask[1]);
        close(answer[0]);
        return false;
    }
    signal(SIGPIPE, SIG_IGN); /* a dead child is a failed write, not the end of the fuzzer */
    glibc = (struct glibc_child){ pid, ask[1], answer[0] };
    return true;
}

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Whether the child's answer (or its end) is there within GLIBC_DEADLINE_MS. libFuzzer's own
 * timer interrupts a wait: it is waited out again, for what is left. */
static bool answer_within_deadline(void)
{
    struct pollfd pfd = { .fd = glibc.answer, .events = POLLIN };
    long long deadline = now_ms() + GLIBC_DEADLINE_MS;
    for (long long left = GLIBC_DEADLINE_MS; left > 0; left = deadline - now_ms()) {
        int n = poll(&pfd, 1, (int)left);
        if (n >= 0 || errno != EINTR)
            return n == 1;
    }
    return false;
}

static void put_u32(char **w, uint32_t v)
{
    memcpy(*w, &v, 4);
    *w += 4;
}

/* glibc's regcomp of pat (REG_EXTENDED) in *rc and, when that is 0, in match[i] whether vals[i]
 * matches whole. False when glibc gave no answer within the deadline. */
static bool glibc_ask(const char *pat, size_t pn, const struct value *vals, size_t count,
                      int *rc, bool *match)
{
    static char question[QUESTION_MAX];
    char answer[ANSWER_MAX], *w = question + 4;
    put_u32(&w, (uint32_t)pn);
    memcpy(w, pat, pn);
    w += pn;
    put_u32(&w, (uint32_t)count);
    for (size_t i = 0; i < count; i++) {
        put_u32(&w, (uint32_t)vals[i].n);
        memcpy(w, vals[i].p, vals[i].n);
        w += vals[i].n;
    }
    char *size_at = question;
    put_u32(&size_at, (uint32_t)(w - question - 4));
    if (glibc.pid == 0 && !glibc_start())
        return false;
    size_t want = 4 + count;
    if (write(glibc.ask, question, (size_t)(w - question)) != w - question ||
        !answer_within_deadline() || read(glibc.answer, answer, want) != (ssize_t)want) {
        glibc_stop();
        return false;
    }
    int32_t code;
    memcpy(&code, answer, 4);
    *rc = code;
    for (size_t i = 0; i < count; i++)
        match[i] = answer[4 + i] != 0;
    return true;
}

/* A byte that C-locale classes cannot tell from '\n' (cntrl and space, not blank) and that
 * neither the pattern nor the value holds, or 0. */
static char stand_in(const char *pat, size_t pn, const char *v, size_t vn)
{
    for (const char *c = "\v\f\r"; *c; c++)
        if (memchr(pat, *c, pn) == NULL && memchr(v, *c, vn) == NULL)
            return *c;
    return 0;
}

/* The newline exception (see the top of the file): true if glibc's match and ere's no match
 * on v come from glibc's reading of '\n' as a line end. */
static bool newline_quirk(const char *pat, size_t pn, const struct ere *re, const char *v,
                          size_t vn)
{
    char rp[MAX_PATTERN], rv[MAX_VALUE];
    if (memchr(v, '\n', vn) == NULL ||
        (memchr(pat, '^', pn) == NULL && memchr(pat, '$', pn) == NULL))
        return false;
    char c = stand_in(pat, pn, v, vn);
    if (c == 0) /* '\v', '\f' and '\r' all taken: no renaming tells, let it through */
        return true;
    for (size_t i = 0; i < pn; i++)
        rp[i] = pat[i] == '\n' ? c : pat[i];
    for (size_t i = 0; i < vn; i++)
        rv[i] = v[i] == '\n' ? c : v[i];
    int rc;
    bool theirs;
    if (!glibc_ask(rp, pn, &(struct value){ rv, vn }, 1, &rc, &theirs))
        return true; /* glibc gave no answer: no telling */
    if (rc != 0)
        return false;
    size_t budget = SIZE_MAX;
    return !theirs && ere_match(re, rv, vn, &budget) == ERE_NOMATCH;
}

/* ere on v, with the cost checks; returns ERE_MATCH or ERE_NOMATCH. */
static enum ere_result ere_checked(const struct ere *re, const char *v, size_t n)
{
    size_t budget = SIZE_MAX;
    enum ere_result r = ere_match(re, v, n, &budget);
    FUZZ_CHECK(r == ERE_MATCH || r == ERE_NOMATCH);
    size_t used = SIZE_MAX - budget;
    FUZZ_CHECK(used <= ere_size(re) * (n + 1));
    if (used > 0) { /* one step fewer runs out, and leaves nothing */
        size_t less = used - 1;
        FUZZ_CHECK(ere_match(re, v, n, &less) == ERE_OVER_BUDGET);
        FUZZ_CHECK(less == 0);
    }
    size_t exact = used;
    FUZZ_CHECK(ere_match(re, v, n, &exact) == r && exact == 0);
    return r;
}

static void show(const char *label, const char *p, size_t n)
{
    fprintf(stderr, "%s \"", label);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        fprintf(stderr, c >= 0x20 && c < 0x7f && c != '"' && c != '\\' ? "%c" : "\\x%02x", c);
    }
    fprintf(stderr, "\"\n");
}

/* ere alone on every value (glibc is not asked) */
static void ere_only(const struct ere *re, const char *v, const char *end)
{
    while (re != NULL && v < end) {
        const char *e = memchr(v, '\0', (size_t)(end - v));
        size_t n = e ? (size_t)(e - v) : (size_t)(end - v);
        ere_checked(re, v, n);
        v += n + 1;
    }
}

/* The values glibc is asked about: those of at most MAX_VALUE bytes among the first
 * MAX_VALUES. */
static size_t values_for_glibc(const char *v, const char *end, struct value *out)
{
    size_t kept = 0;
    for (size_t seen = 0; v < end && seen < MAX_VALUES; seen++) {
        const char *e = memchr(v, '\0', (size_t)(end - v));
        size_t n = e ? (size_t)(e - v) : (size_t)(end - v);
        if (n <= MAX_VALUE)
            out[kept++] = (struct value){ v, n };
        v += n + 1;
    }
    return kept;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data, *end = in + size;
    const char *nul = memchr(in, '\0', size);
    size_t pn = nul ? (size_t)(nul - in) : size;
    struct ere_error err;
    struct ere *re = ere_compile(in, pn, &err);
    const char *values = nul ? nul + 1 : end;
    if (re == NULL && documented(err.msg)) /* glibc's view is not needed: skip its cost */
        return 0;
    struct value vals[MAX_VALUES];
    size_t count = values_for_glibc(values, end, vals);
    bool theirs[MAX_VALUES];
    int rc;
    if (heavy_for_glibc(in, pn) || !glibc_ask(in, pn, vals, re ? count : 0, &rc, theirs)) {
        ere_only(re, values, end);
        ere_free(re);
        return 0;
    }
    if (re != NULL && rc != 0) {
        show("pattern", in, pn);
        fprintf(stderr, "glibc refuses it (%d), ere takes it\n", rc);
        FUZZ_CHECK(!"ere takes a pattern glibc refuses");
    }
    if (re == NULL && rc == 0) {
        show("pattern", in, pn);
        fprintf(stderr, "ere refuses it at %zu: %s\n", err.at, err.msg);
        FUZZ_CHECK(!"ere refuses a pattern glibc takes, for no documented reason");
    }
    for (size_t i = 0; re != NULL && i < count; i++) {
        bool ours = ere_checked(re, vals[i].p, vals[i].n) == ERE_MATCH;
        if (ours != theirs[i] && !(theirs[i] && newline_quirk(in, pn, re, vals[i].p, vals[i].n))) {
            show("pattern", in, pn);
            show("value", vals[i].p, vals[i].n);
            fprintf(stderr, "glibc %s, ere %s\n", theirs[i] ? "matches" : "does not match",
                    ours ? "matches" : "does not match");
            FUZZ_CHECK(!"ere and glibc differ");
        }
    }
    ere_free(re);
    return 0;
}
