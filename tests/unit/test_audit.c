/* test_audit.c: the journal line format, escaping of untrusted text, and the file it appends to. */
#include "audit.h"
#include "audit_verify.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "sl_test.h"

static const uint8_t digest[32] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
    0xf0, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96, 0x87, 0x78, 0x69, 0x5a, 0x4b, 0x3c, 0x2d, 0x1e, 0xff,
};
#define DIGEST_HEX "000102030405060708090a0b0c0d0e0ff0e1d2c3b4a5968778695a4b3c2d1eff"

static struct audit_record base_record(void)
{
    return (struct audit_record){
        .time_ms = 1795960800123u, /* 2026-11-29T14:00:00.123Z */
        .principal = "local",
        .tool = SL_STR("write_file"),
        .args_digest = digest,
        .decision = AUDIT_CLIENT_ACCEPTED,
        .reason = "policy:tools.write_file",
        .upstream = AUDIT_UP_OK,
        .request_id = "7",
    };
}

/* ===== format ===== */

struct format_case {
    const char *name;
    void (*edit)(struct audit_record *);
    const char *want;
};

static void no_edit(struct audit_record *r)
{
    (void)r;
}

static void no_digest_no_id(struct audit_record *r)
{
    r->args_digest = NULL;
    r->request_id = NULL;
    r->decision = AUDIT_DENY;
    r->upstream = AUDIT_UP_NOT_FORWARDED;
}

static void string_id(struct audit_record *r)
{
    r->request_id = "\"req-\\\"1\\\"\"";
}

static void hostile_tool(struct audit_record *r)
{
    static const char t[] = "evil\"tool\n{\"decision\":\"allow\"}\r\\\x1b\0x";
    r->tool = (struct sl_str){ t, sizeof(t) - 1 };
    r->principal = "user\n\"x\"";
}

static void id_with_newline(struct audit_record *r)
{
    r->request_id = "\"a\nb\"";
}

static void id_not_json(struct audit_record *r)
{
    r->request_id = "1,\"decision\":\"allow\"";
}

static void id_escaped_close(struct audit_record *r)
{
    r->request_id = "\"abc\\\"";
}

static void nulls(struct audit_record *r)
{
    *r = (struct audit_record){ .time_ms = 0 };
}

static void epoch_edges(struct audit_record *r)
{
    r->time_ms = 999;
    r->request_id = "-12.5e3";
}

static const struct format_case format_cases[] = {
    { "full record", no_edit,
      "{\"time\":\"2026-11-29T14:00:00.123Z\",\"principal\":\"local\",\"tool\":\"write_file\","
      "\"args_sha256\":\"" DIGEST_HEX "\",\"decision\":\"client-accepted\","
      "\"reason\":\"policy:tools.write_file\",\"upstream\":\"ok\",\"id\":7}\n" },
    { "no digest, no id", no_digest_no_id,
      "{\"time\":\"2026-11-29T14:00:00.123Z\",\"principal\":\"local\",\"tool\":\"write_file\","
      "\"args_sha256\":null,\"decision\":\"deny\",\"reason\":\"policy:tools.write_file\","
      "\"upstream\":\"not-forwarded\"}\n" },
    { "string id kept as sent", string_id,
      "{\"time\":\"2026-11-29T14:00:00.123Z\",\"principal\":\"local\",\"tool\":\"write_file\","
      "\"args_sha256\":\"" DIGEST_HEX "\",\"decision\":\"client-accepted\","
      "\"reason\":\"policy:tools.write_file\",\"upstream\":\"ok\",\"id\":\"req-\\\"1\\\"\"}\n" },
    { "tool and principal escaped", hostile_tool,
      "{\"time\":\"2026-11-29T14:00:00.123Z\",\"principal\":\"user\\n\\\"x\\\"\","
      "\"tool\":\"evil\\\"tool\\n{\\\"decision\\\":\\\"allow\\\"}\\r\\\\\\u001b\\u0000x\","
      "\"args_sha256\":\"" DIGEST_HEX "\",\"decision\":\"client-accepted\","
      "\"reason\":\"policy:tools.write_file\",\"upstream\":\"ok\",\"id\":7}\n" },
    { "id with a raw newline left out", id_with_newline,
      "{\"time\":\"2026-11-29T14:00:00.123Z\",\"principal\":\"local\",\"tool\":\"write_file\","
      "\"args_sha256\":\"" DIGEST_HEX "\",\"decision\":\"client-accepted\","
      "\"reason\":\"policy:tools.write_file\",\"upstream\":\"ok\"}\n" },
    { "id that is not one JSON value left out", id_not_json,
      "{\"time\":\"2026-11-29T14:00:00.123Z\",\"principal\":\"local\",\"tool\":\"write_file\","
      "\"args_sha256\":\"" DIGEST_HEX "\",\"decision\":\"client-accepted\","
      "\"reason\":\"policy:tools.write_file\",\"upstream\":\"ok\"}\n" },
    { "id with an escaped closing quote left out", id_escaped_close,
      "{\"time\":\"2026-11-29T14:00:00.123Z\",\"principal\":\"local\",\"tool\":\"write_file\","
      "\"args_sha256\":\"" DIGEST_HEX "\",\"decision\":\"client-accepted\","
      "\"reason\":\"policy:tools.write_file\",\"upstream\":\"ok\"}\n" },
    { "absent fields are null", nulls,
      "{\"time\":\"1970-01-01T00:00:00.000Z\",\"principal\":null,\"tool\":null,"
      "\"args_sha256\":null,\"decision\":null,\"reason\":null,\"upstream\":null}\n" },
    { "milliseconds padded, number id", epoch_edges,
      "{\"time\":\"1970-01-01T00:00:00.999Z\",\"principal\":\"local\",\"tool\":\"write_file\","
      "\"args_sha256\":\"" DIGEST_HEX "\",\"decision\":\"client-accepted\","
      "\"reason\":\"policy:tools.write_file\",\"upstream\":\"ok\",\"id\":-12.5e3}\n" },
};

static void test_format(void **state)
{
    (void)state;
    for (size_t i = 0; i < SL_ARRAY_LEN(format_cases); i++) {
        const struct format_case *c = &format_cases[i];
        struct audit_record r = base_record();
        c->edit(&r);
        struct sl_buf out = { 0 };
        audit_format(&out, &r);
        print_message("%s\n", c->name);
        assert_buf_equal(out, c->want);
        /* one line: the only newline is the last byte */
        assert_ptr_equal(memchr(out.p, '\n', out.len), out.p + out.len - 1);
        sl_buf_free(&out);
    }
}

/* The one table of spellings: every value the journal and the metrics name, as they name it.
 * The journal's readers parse these words, so a rename is a format change, caught here. */
static void test_names(void **state)
{
    (void)state;
    static const char *const decisions[AUDIT_DECISION_COUNT] = {
        NULL, "allow", "deny", "asked", "client-accepted", "declined", "cancelled", "refused",
        "token-issued", "token-redeemed", "observe", "observing", "replayed-result",
        "page-approved", "page-declined", "forwarding",
    };
    static const char *const upstreams[AUDIT_UPSTREAM_COUNT] = {
        NULL, "ok", "tool-error", "error", "input-required", "no-response", "cancelled",
        "not-forwarded", "unavailable",
    };
    assert_null(audit_decision_name(AUDIT_NONE));
    for (unsigned d = 1; d < AUDIT_DECISION_COUNT; d++)
        assert_string_equal(audit_decision_name(d), decisions[d]);
    assert_null(audit_decision_name(AUDIT_DECISION_COUNT));
    assert_null(audit_upstream_name(AUDIT_UP_NONE));
    for (unsigned u = 1; u < AUDIT_UPSTREAM_COUNT; u++)
        assert_string_equal(audit_upstream_name(u), upstreams[u]);
    assert_null(audit_upstream_name(AUDIT_UPSTREAM_COUNT));
}

/* audit_format appends; it does not reset what the caller already has. */
static void test_format_appends(void **state)
{
    (void)state;
    struct audit_record r = base_record();
    struct sl_buf out = { 0 };
    audit_format(&out, &r);
    size_t one = out.len;
    audit_format(&out, &r);
    assert_int_equal(out.len, 2 * one);
    assert_memory_equal(out.p, out.p + one, one);
    sl_buf_free(&out);
}

/* ===== the file ===== */

struct tmpdir {
    char dir[64];
    char path[96];
};

static int file_setup(void **state)
{
    struct tmpdir *t = sl_xcalloc(1, sizeof(*t));
    snprintf(t->dir, sizeof(t->dir), "/tmp/sluice-audit-XXXXXX");
    if (mkdtemp(t->dir) == NULL)
        return -1;
    snprintf(t->path, sizeof(t->path), "%s/audit.jsonl", t->dir);
    *state = t;
    return 0;
}

static int file_teardown(void **state)
{
    struct tmpdir *t = *state;
    unlink(t->path);
    rmdir(t->dir);
    free(t);
    return 0;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *p = sl_xmalloc(1 << 16);
    *len = fread(p, 1, (1 << 16) - 1, f);
    p[*len] = '\0';
    fclose(f);
    return p;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Line n (1-based) of text ends with r's formatted object, less its opening brace. */
static bool line_ends_with(const char *text, size_t n, const struct audit_record *r)
{
    while (--n > 0)
        text = strchr(text, '\n') + 1;
    const char *end = strchr(text, '\n') + 1;
    struct sl_buf want = { 0 };
    audit_format(&want, r);
    size_t w = want.len - 1;
    bool ok = (size_t)(end - text) > w && memcmp(end - w, want.p + 1, w) == 0 &&
              strncmp(text, "{\"seq\":", 7) == 0;
    sl_buf_free(&want);
    return ok;
}

static void test_append_across_opens(void **state)
{
    struct tmpdir *t = *state;
    char err[256] = "";
    struct audit_record r1 = base_record(), r2 = base_record();
    r2.decision = AUDIT_DECLINED;
    r2.request_id = "8";

    struct audit *a = audit_open(t->path, NULL, err, sizeof(err));
    assert_non_null(a);
    assert_int_equal(audit_write(a, &r1), 0);
    audit_close(a);
    a = audit_open(t->path, NULL, err, sizeof(err));
    assert_non_null(a);
    assert_int_equal(audit_write(a, &r2), 0);
    audit_close(a);

    /* The new chain's first line, r1, the restart's line, r2: each record is its formatted
     * object after the chain fields. */
    size_t len;
    char *got = slurp(t->path, &len);
    assert_int_equal(count_lines(got), 4);
    assert_true(line_ends_with(got, 2, &r1));
    assert_true(line_ends_with(got, 4, &r2));
    assert_non_null(strstr(got, "\"event\":\"continued\""));
    free(got);
}

/* Created 0600 whatever the umask allows more of: the journal names principals and tools. */
static void test_mode_0600(void **state)
{
    struct tmpdir *t = *state;
    char err[256] = "";
    mode_t old = umask(0);
    struct audit *a = audit_open(t->path, NULL, err, sizeof(err));
    umask(old);
    assert_non_null(a);
    struct stat st;
    assert_int_equal(stat(t->path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    audit_close(a);
}

/* logrotate's copytruncate landing between audit_write's rotation check and its write: the
 * record would begin the new file with no rotated line, and verify of that file alone would call
 * its start cut off. The file must begin with the rotated line, then the record, once each. */
static int truncations;

static void truncate_once(const char *path)
{
    if (truncations-- > 0)
        assert_int_equal(truncate(path, 0), 0);
}

static void test_truncated_under_write(void **state)
{
    struct tmpdir *t = *state;
    char err[256] = "";
    struct audit_record r1 = base_record(), r2 = base_record();
    r2.request_id = "8";
    struct audit *a = audit_open(t->path, NULL, err, sizeof(err));
    assert_non_null(a);
    assert_int_equal(audit_write(a, &r1), 0);
    truncations = 1;
    audit_before_write = truncate_once;
    assert_int_equal(audit_write(a, &r2), 0);
    audit_before_write = NULL;
    char hex[65];
    assert_int_equal(audit_head(a, hex), 4); /* new-chain, r1, rotated, r2: none twice */
    audit_close(a);
    size_t len;
    char *got = slurp(t->path, &len);
    assert_int_equal(count_lines(got), 2);
    assert_true(strncmp(got, "{\"seq\":3,", 9) == 0);
    assert_non_null(strstr(got, "\"event\":\"rotated\",\"reason\":\"truncated\""));
    assert_true(line_ends_with(got, 2, &r2));
    free(got);
    const char *files[] = { t->path };
    struct audit_verify_result res;
    assert_int_equal(audit_verify(files, 1, NULL, 0, &res), 0);
}

/* A truncation under every try: the record is not written (fails closed), and what is in the
 * file still verifies. */
static void test_truncated_under_every_write(void **state)
{
    struct tmpdir *t = *state;
    char err[256] = "";
    struct audit_record r = base_record();
    struct audit *a = audit_open(t->path, NULL, err, sizeof(err));
    assert_non_null(a);
    assert_int_equal(audit_write(a, &r), 0);
    truncations = 100;
    audit_before_write = truncate_once;
    assert_int_equal(audit_write(a, &r), -1);
    audit_before_write = NULL;
    audit_close(a);
    size_t len;
    char *got = slurp(t->path, &len);
    assert_null(strstr(got, "\"decision\""));
    free(got);
}

/* Writes go to the end even when someone else wrote in between (O_APPEND, not a cached offset). */
static void test_appends_after_foreign_write(void **state)
{
    struct tmpdir *t = *state;
    char err[256] = "";
    struct audit *a = audit_open(t->path, NULL, err, sizeof(err));
    assert_non_null(a);
    struct audit_record r = base_record();
    assert_int_equal(audit_write(a, &r), 0);
    int fd = open(t->path, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "other\n", 6), 6);
    close(fd);
    assert_int_equal(audit_write(a, &r), 0);
    audit_close(a);

    size_t len;
    char *got = slurp(t->path, &len);
    assert_int_equal(count_lines(got), 4);
    assert_true(line_ends_with(got, 2, &r));
    assert_non_null(strstr(got, "}\nother\n{\"seq\":3,"));
    assert_true(line_ends_with(got, 4, &r));
    free(got);
}

static void test_open_failure(void **state)
{
    struct tmpdir *t = *state;
    char err[256] = "";
    char bad[160];
    snprintf(bad, sizeof(bad), "%s/no/such/dir/audit.jsonl", t->dir);
    assert_null(audit_open(bad, NULL, err, sizeof(err)));
    assert_non_null(strstr(err, bad));
    assert_non_null(strstr(err, "No such file"));
}

static void test_null_audit(void **state)
{
    (void)state;
    struct audit_record r = base_record();
    assert_int_equal(audit_write(NULL, &r), 0);
    audit_close(NULL);
}

/* The descriptor does not leak into children (O_CLOEXEC). */
static void test_cloexec(void **state)
{
    struct tmpdir *t = *state;
    char err[256] = "";
    struct audit *a = audit_open(t->path, NULL, err, sizeof(err));
    assert_non_null(a);
    int found = 0;
    for (int fd = 3; fd < 256; fd++) {
        int flags = fcntl(fd, F_GETFD);
        char link[64], target[256];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        if (flags < 0 || n < 0)
            continue;
        target[n] = '\0';
        if (strcmp(target, t->path) == 0) {
            assert_true(flags & FD_CLOEXEC);
            found++;
        }
    }
    assert_int_equal(found, 1);
    audit_close(a);
}

/* The journal's descriptor (there is one, test_cloexec), or -1. */
static int journal_fd(const char *path)
{
    for (int fd = 3; fd < 256; fd++) {
        char link[64], target[256];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        if (n < 0)
            continue;
        target[n] = '\0';
        if (strcmp(target, path) == 0)
            return fd;
    }
    return -1;
}

/* --audit-sync always: a line the disk was not made to keep is not on record, so the write
 * fails (a forwarding record then refuses its call). /dev/null put under the journal's
 * descriptor takes writes and fails fdatasync (EINVAL); interval mode does not sync here. */
static void check_sync_failure(const char *path, enum audit_sync sync, int want)
{
    char err[256] = "";
    struct audit_opts o = { .sync = sync };
    struct audit *a = audit_open(path, &o, err, sizeof(err));
    assert_non_null(a);
    int fd = journal_fd(path), null = open("/dev/null", O_WRONLY);
    assert_true(fd >= 0 && null >= 0);
    assert_int_equal(dup2(null, fd), fd);
    close(null);
    struct audit_record r = base_record();
    assert_int_equal(audit_write(a, &r), want);
    audit_close(a);
}

static void test_sync_failure_fails_write(void **state)
{
    struct tmpdir *t = *state;
    check_sync_failure(t->path, AUDIT_SYNC_INTERVAL, 0);
    check_sync_failure(t->path, AUDIT_SYNC_ALWAYS, -1);
}

/* ===== stderr, captured ===== */

struct capture {
    int saved;
    char path[96];
};

static void capture_start(struct capture *c, const char *dir)
{
    snprintf(c->path, sizeof(c->path), "%s/stderr.txt", dir);
    int fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    fflush(stderr);
    c->saved = dup(STDERR_FILENO);
    assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
    close(fd);
}

/* What was logged since capture_start (the caller frees it). */
static char *capture_end(struct capture *c)
{
    size_t len;
    fflush(stderr);
    dup2(c->saved, STDERR_FILENO);
    close(c->saved);
    char *got = slurp(c->path, &len);
    unlink(c->path);
    return got;
}

static size_t count_of(const char *s, const char *what)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p++)
        n++;
    return n;
}

/* The journal renamed away and its path not openable (here a directory, which even root cannot
 * open for writing; EMFILE or EACCES do the same): a record must not go to the old file, which
 * may be gone, so the write fails (a forwarding record then refuses its call), logged once, not
 * per call. Once the path can be opened, the next write opens it and links it to the old file. */
static void test_reopen_failure_fails_write(void **state)
{
    struct tmpdir *t = *state;
    char err[256] = "", moved[128];
    snprintf(moved, sizeof(moved), "%s.1", t->path);
    struct audit *a = audit_open(t->path, NULL, err, sizeof(err));
    assert_non_null(a);
    struct audit_record r = base_record();
    assert_int_equal(audit_write(a, &r), 0);
    assert_int_equal(rename(t->path, moved), 0);
    assert_int_equal(mkdir(t->path, 0700), 0);
    struct capture c;
    capture_start(&c, t->dir);
    assert_int_equal(audit_write(a, &r), -1);
    assert_int_equal(errno, EISDIR);
    assert_int_equal(audit_write(a, &r), -1);
    char *logged = capture_end(&c);
    assert_int_equal(count_of(logged, "cannot be opened again"), 1);
    free(logged);
    size_t len;
    char *old = slurp(moved, &len);
    assert_int_equal(count_lines(old), 2); /* nothing went to the moved file */
    free(old);
    assert_int_equal(rmdir(t->path), 0);
    assert_int_equal(audit_write(a, &r), 0);
    audit_close(a);
    char *cur = slurp(t->path, &len);
    assert_int_equal(count_lines(cur), 2);
    assert_non_null(strstr(cur, "{\"seq\":3,"));
    assert_non_null(strstr(cur, "\"event\":\"rotated\",\"reason\":\"renamed\""));
    assert_true(line_ends_with(cur, 2, &r));
    free(cur);
    unlink(moved);
}

/* One journal, one writer: a second writer of the path (another sluice) is refused at open,
 * with a message that says what to do, and a writer whose rotated path another process took
 * writes nothing (gated calls refused) until that process lets go of it. */
static void test_one_writer(void **state)
{
    struct tmpdir *t = *state;
    char err[256] = "", moved[128], want[256];
    snprintf(moved, sizeof(moved), "%s.1", t->path);
    struct audit *a = audit_open(t->path, NULL, err, sizeof(err));
    assert_non_null(a);
    assert_null(audit_open(t->path, NULL, err, sizeof(err)));
    snprintf(want, sizeof(want), "another process writes %s; give each sluice its own --audit "
             "file", t->path);
    assert_string_equal(err, want);
    struct audit_record r = base_record();
    assert_int_equal(audit_write(a, &r), 0);
    assert_int_equal(rename(t->path, moved), 0);
    struct audit *b = audit_open(t->path, NULL, err, sizeof(err));
    assert_non_null(b);
    struct capture c;
    capture_start(&c, t->dir);
    assert_int_equal(audit_write(a, &r), -1);
    char *logged = capture_end(&c);
    assert_non_null(strstr(logged, want));
    free(logged);
    audit_close(b);
    assert_int_equal(audit_write(a, &r), 0);
    audit_close(a);
    unlink(moved);
}

static void count_anchor(void *arg, const char *entry)
{
    (void)entry;
    ++*(unsigned *)arg;
}

/* --audit-anchor-every with interval sync: the anchored line is synced first, so a line the
 * disk did not take (the fsync failed: /dev/null under the descriptor) is not anchored, and a
 * power loss cannot leave an anchor past the journal's end. */
static void test_anchor_after_sync(void **state)
{
    struct tmpdir *t = *state;
    char err[256] = "";
    unsigned anchors = 0;
    struct audit_opts o = { .anchor_every = 1, .on_anchor = count_anchor, .arg = &anchors };
    struct audit *a = audit_open(t->path, &o, err, sizeof(err));
    assert_non_null(a);
    assert_int_equal(anchors, 1); /* the new-chain line, synced */
    int fd = journal_fd(t->path), null = open("/dev/null", O_WRONLY);
    assert_true(fd >= 0 && null >= 0);
    assert_int_equal(dup2(null, fd), fd);
    close(null);
    struct audit_record r = base_record();
    assert_int_equal(audit_write(a, &r), 0); /* interval: the write itself stands */
    assert_int_equal(anchors, 1);
    audit_close(a);
}

/* An anchor is logged whatever --log-level says (verify reads it as an info line): a log at
 * warning level that dropped it would leave nothing to verify the journal against. */
static void test_anchor_logged_at_any_level(void **state)
{
    struct tmpdir *t = *state;
    char err[256] = "";
    struct audit_opts o = { .anchor_every = 1 };
    struct capture c;
    sl_log_set_level(SL_LOG_WARN);
    capture_start(&c, t->dir);
    struct audit *a = audit_open(t->path, &o, err, sizeof(err));
    char *logged = capture_end(&c);
    sl_log_set_level(SL_LOG_INFO);
    assert_non_null(a);
    audit_close(a);
    assert_non_null(strstr(logged, "sluice: info: audit anchor: chain="));
    free(logged);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_format_appends),
        cmocka_unit_test(test_names),
        cmocka_unit_test_setup_teardown(test_append_across_opens, file_setup, file_teardown),
        cmocka_unit_test_setup_teardown(test_mode_0600, file_setup, file_teardown),
        cmocka_unit_test_setup_teardown(test_truncated_under_write, file_setup, file_teardown),
        cmocka_unit_test_setup_teardown(test_truncated_under_every_write, file_setup,
                                        file_teardown),
        cmocka_unit_test_setup_teardown(test_appends_after_foreign_write, file_setup,
                                        file_teardown),
        cmocka_unit_test_setup_teardown(test_open_failure, file_setup, file_teardown),
        cmocka_unit_test(test_null_audit),
        cmocka_unit_test_setup_teardown(test_cloexec, file_setup, file_teardown),
        cmocka_unit_test_setup_teardown(test_sync_failure_fails_write, file_setup,
                                        file_teardown),
        cmocka_unit_test_setup_teardown(test_reopen_failure_fails_write, file_setup,
                                        file_teardown),
        cmocka_unit_test_setup_teardown(test_one_writer, file_setup, file_teardown),
        cmocka_unit_test_setup_teardown(test_anchor_after_sync, file_setup, file_teardown),
        cmocka_unit_test_setup_teardown(test_anchor_logged_at_any_level, file_setup,
                                        file_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
