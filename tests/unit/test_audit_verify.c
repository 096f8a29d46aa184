/* test_audit_verify.c: the journal's hash chain as audit.c writes it (restart, rotation, a
 * damaged tail) and as audit_verify.c checks it: every kind of tampering is found at its line,
 * and anchors catch what the chain alone cannot (lines cut off the end). */
#include "audit_verify.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "seal.h"
#include "sl_test.h"

struct fixture {
    char dir[64];
    char path[96], path1[96];
};

static int setup(void **state)
{
    struct fixture *t = sl_xcalloc(1, sizeof(*t));
    snprintf(t->dir, sizeof(t->dir), "/tmp/sluice-chain-XXXXXX");
    if (mkdtemp(t->dir) == NULL)
        return -1;
    snprintf(t->path, sizeof(t->path), "%s/audit.jsonl", t->dir);
    snprintf(t->path1, sizeof(t->path1), "%s/audit.jsonl.1", t->dir);
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *t = *state;
    unlink(t->path);
    unlink(t->path1);
    rmdir(t->dir);
    free(t);
    return 0;
}

/* ===== helpers ===== */

static struct audit_record record(unsigned i)
{
    static char ids[64][8];
    snprintf(ids[i % 64], sizeof(ids[0]), "%u", i);
    return (struct audit_record){
        .time_ms = 1795960800123u + i,
        .principal = "local",
        .tool = SL_STR("write_file"),
        .decision = i % 2 ? AUDIT_ALLOW : AUDIT_CLIENT_ACCEPTED,
        .reason = "policy:tools.write_file",
        .upstream = AUDIT_UP_OK,
        .request_id = ids[i % 64],
    };
}

/* Opens path, writes n records numbered from first, closes. */
static void write_records(const char *path, const struct audit_opts *o, unsigned first,
                          unsigned n)
{
    char err[256] = "";
    struct audit *a = audit_open(path, o, err, sizeof(err));
    assert_non_null(a);
    for (unsigned i = 0; i < n; i++) {
        struct audit_record r = record(first + i);
        assert_int_equal(audit_write(a, &r), 0);
    }
    audit_close(a);
}

struct lines {
    char *v[64];
    size_t n;
};

static void read_lines(const char *path, struct lines *l)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = NULL;
    size_t cap = 0;
    l->n = 0;
    while (l->n < 64 && getline(&buf, &cap, f) > 0)
        l->v[l->n++] = sl_xstrndup(buf, strlen(buf));
    free(buf);
    fclose(f);
}

static void write_lines(const char *path, const struct lines *l)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (size_t i = 0; i < l->n; i++)
        fputs(l->v[i], f);
    fclose(f);
}

static void free_lines(struct lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    l->n = 0;
}

static int verify_files(const char *a, const char *b, const struct audit_anchor *anchors,
                        size_t nanchors, struct audit_verify_result *r)
{
    const char *files[] = { a, b };
    return audit_verify(files, b ? 2 : 1, anchors, nanchors, r);
}

/* The hex SHA-256 of s without its newline. */
static void line_hash(const char *s, char hex[65])
{
    uint8_t h[32];
    size_t len = strlen(s);
    seal_sha256(s, len && s[len - 1] == '\n' ? len - 1 : len, h);
    struct sl_buf b;
    sl_buf_on(&b, hex, 65);
    sl_hex_encode(&b, h, 32);
}

/* ===== an intact journal ===== */

static void test_intact(void **state)
{
    struct fixture *t = *state;
    struct audit_verify_result r;
    struct lines l;
    write_records(t->path, NULL, 1, 9);
    assert_int_equal(verify_files(t->path, NULL, NULL, 0, &r), 0);
    assert_int_equal(r.records, 10); /* the new-chain line and nine records */
    assert_int_equal(r.first_seq, 1);
    assert_int_equal(r.last_seq, 10);
    assert_int_equal(r.files, 1);
    assert_int_equal(r.chains, 1);
    read_lines(t->path, &l);
    assert_int_equal(l.n, 10);
    /* The first line opens the chain; each next one names the hash of the one before. */
    assert_non_null(strstr(l.v[0], "{\"seq\":1,\"prev\":\"0000000000000000000000000000000000000000"
                                   "000000000000000000000000\","));
    assert_non_null(strstr(l.v[0], "\"event\":\"new-chain\",\"reason\":\"new-file\""));
    for (size_t i = 1; i < l.n; i++) {
        char hex[65], want[160];
        line_hash(l.v[i - 1], hex);
        snprintf(want, sizeof(want), "{\"seq\":%zu,\"prev\":\"%s\",\"time\":", i + 1, hex);
        assert_true(strncmp(l.v[i], want, strlen(want)) == 0);
    }
    char head[65];
    line_hash(l.v[9], head);
    assert_string_equal(r.head, head);
    free_lines(&l);
}

/* ===== tampering, each found at its line ===== */

enum edit_kind { EDIT_BYTE, EDIT_PREV, EDIT_SEQ, REMOVE, SWAP, INSERT_COPY, INSERT_FORGED, INSERT_GENESIS,
                 TRUNCATE_LAST, INSERT_FIRST_FILE_BLANK };

struct tamper_case {
    const char *name;
    enum edit_kind kind;
    size_t at;           /* 1-based line the edit touches */
    uint64_t want_line;  /* where verify must report it */
    const char *want_why;
};

static const struct tamper_case tamper_cases[] = {
    { "edit a byte of line 5", EDIT_BYTE, 5, 5, "changed after it was written" },
    { "edit a byte of line 1", EDIT_BYTE, 1, 1, "changed after it was written" },
    { "edit line 5's prev", EDIT_PREV, 5, 5, "changed after it was written" },
    { "edit line 5's seq", EDIT_SEQ, 5, 5, "this line was edited" },
    { "remove line 5", REMOVE, 5, 5, "missing before this line" },
    { "remove line 2", REMOVE, 2, 2, "missing before this line" },
    /* Every file sluice writes begins a chain or a rotated file: a cut start shows. */
    { "remove line 1", REMOVE, 1, 1, "removed from the start" },
    { "swap lines 4 and 5", SWAP, 4, 4, "seq jumps" },
    { "insert a copy of line 2 at 6", INSERT_COPY, 6, 6, "inserted or moved" },
    { "insert a forged line at 6", INSERT_FORGED, 6, 6, "this line was inserted" },
    /* A new chain may start a file (sluice started on an empty one), never its middle. */
    { "insert a chain's first line at 6", INSERT_GENESIS, 6, 6, "inserted or moved" },
    { "truncate the last line", TRUNCATE_LAST, 10, 10, "cut short" },
    { "insert a blank line at 3", INSERT_FIRST_FILE_BLANK, 3, 3, "not a chained" },
};

/* A forged line that links correctly to the line before it: seq and prev right. */
static char *forge_after(const char *before)
{
    uint64_t seq;
    uint8_t prev[32];
    char hex[65], *out = sl_xmalloc(400);
    assert_true(audit_parse_link((struct sl_str){ before, strlen(before) - 1 }, &seq, prev));
    line_hash(before, hex);
    snprintf(out, 400, "{\"seq\":%llu,\"prev\":\"%s\",\"time\":null,\"tool\":\"x\"}\n",
             (unsigned long long)seq + 1, hex);
    return out;
}

static void apply_edit(struct lines *l, const struct tamper_case *c)
{
    size_t i = c->at - 1;
    char *p;
    switch (c->kind) {
    case EDIT_BYTE: /* inside "write_file", or "new-chain" on line 1 */
        p = strstr(l->v[i], c->at == 1 ? "new-chain" : "write_file");
        assert_non_null(p);
        p[0] = 'W';
        break;
    case EDIT_PREV:
        p = strstr(l->v[i], "\"prev\":\"") + 8;
        p[3] = p[3] == 'a' ? 'b' : 'a';
        break;
    case EDIT_SEQ: /* seq 5 -> 7: its prev still links */
        p = strstr(l->v[i], "\"seq\":") + 6;
        assert_int_equal(p[0], '5');
        p[0] = '7';
        break;
    case REMOVE:
        free(l->v[i]);
        memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) * sizeof(char *));
        l->n--;
        break;
    case SWAP:
        p = l->v[i];
        l->v[i] = l->v[i + 1];
        l->v[i + 1] = p;
        break;
    case INSERT_COPY:
    case INSERT_FORGED:
    case INSERT_GENESIS:
    case INSERT_FIRST_FILE_BLANK:
        memmove(&l->v[i + 1], &l->v[i], (l->n - i) * sizeof(char *));
        l->n++;
        l->v[i] = c->kind == INSERT_COPY     ? sl_xstrndup(l->v[1], strlen(l->v[1]))
                  : c->kind == INSERT_FORGED ? forge_after(l->v[i - 1])
                  : c->kind == INSERT_GENESIS ? sl_xstrndup(l->v[0], strlen(l->v[0]))
                                             : sl_xstrndup("\n", 1);
        break;
    case TRUNCATE_LAST:
        l->v[l->n - 1][strlen(l->v[l->n - 1]) - 10] = '\0';
        break;
    }
}

static void test_tampering(void **state)
{
    struct fixture *t = *state;
    for (size_t k = 0; k < SL_ARRAY_LEN(tamper_cases); k++) {
        const struct tamper_case *c = &tamper_cases[k];
        struct lines l;
        struct audit_verify_result r;
        unlink(t->path);
        write_records(t->path, NULL, 1, 9);
        read_lines(t->path, &l);
        apply_edit(&l, c);
        write_lines(t->path, &l);
        free_lines(&l);
        int rc = verify_files(t->path, NULL, NULL, 0, &r);
        if (rc != 1 || r.line != c->want_line || strstr(r.why, c->want_why) == NULL) {
            print_error("%s: rc %d, line %llu: %s\n", c->name, rc, (unsigned long long)r.line,
                        r.why);
            fail();
        }
        assert_string_equal(r.file, t->path);
    }
}

/* Across files, the break is named in the file it is in. */
static void test_break_in_second_file(void **state)
{
    struct fixture *t = *state;
    struct audit_verify_result r;
    struct lines l;
    write_records(t->path, NULL, 1, 3);
    assert_int_equal(rename(t->path, t->path1), 0);
    write_records(t->path, NULL, 4, 4); /* a new file: it starts with a new chain */
    assert_int_equal(verify_files(t->path1, t->path, NULL, 0, &r), 0);
    assert_int_equal(r.chains, 2);
    read_lines(t->path, &l);
    apply_edit(&l, &(struct tamper_case){ "", REMOVE, 3, 0, "" });
    write_lines(t->path, &l);
    free_lines(&l);
    assert_int_equal(verify_files(t->path1, t->path, NULL, 0, &r), 1);
    assert_string_equal(r.file, t->path);
    assert_int_equal(r.line, 3);
}

/* ===== how the writer carries the chain on ===== */

/* A restart on an intact journal continues its chain: one chain, a "continued" line. */
static void test_restart_continues(void **state)
{
    struct fixture *t = *state;
    struct audit_verify_result r;
    struct lines l;
    write_records(t->path, NULL, 1, 2);
    write_records(t->path, NULL, 3, 2);
    assert_int_equal(verify_files(t->path, NULL, NULL, 0, &r), 0);
    assert_int_equal(r.chains, 1);
    assert_int_equal(r.records, 6);
    read_lines(t->path, &l);
    assert_int_equal(l.n, 6);
    assert_non_null(strstr(l.v[3], "\"seq\":4,"));
    assert_non_null(strstr(l.v[3], "\"event\":\"continued\",\"reason\":\"restart\""));
    char id0[AUDIT_CHAIN_ID_HEX + 1], id3[AUDIT_CHAIN_ID_HEX + 1];
    assert_true(audit_line_chain((struct sl_str){ l.v[0], strlen(l.v[0]) }, id0));
    assert_true(audit_line_chain((struct sl_str){ l.v[3], strlen(l.v[3]) }, id3));
    assert_string_equal(id0, id3);
    free_lines(&l);
}

/* logrotate's rename: the next write opens a new file whose first line links to the old one. */
static void test_rotation_rename(void **state)
{
    struct fixture *t = *state;
    struct audit_verify_result r;
    struct lines old, cur;
    char err[256];
    struct audit *a = audit_open(t->path, NULL, err, sizeof(err));
    assert_non_null(a);
    for (unsigned i = 1; i <= 3; i++) {
        struct audit_record rec = record(i);
        assert_int_equal(audit_write(a, &rec), 0);
    }
    assert_int_equal(rename(t->path, t->path1), 0);
    for (unsigned i = 4; i <= 5; i++) {
        struct audit_record rec = record(i);
        assert_int_equal(audit_write(a, &rec), 0);
    }
    audit_close(a);
    read_lines(t->path1, &old);
    read_lines(t->path, &cur);
    assert_int_equal(old.n, 4);
    assert_int_equal(cur.n, 3);
    char hex[65], want[120];
    line_hash(old.v[3], hex);
    snprintf(want, sizeof(want), "{\"seq\":5,\"prev\":\"%s\",", hex);
    assert_true(strncmp(cur.v[0], want, strlen(want)) == 0);
    assert_non_null(strstr(cur.v[0], "\"event\":\"rotated\",\"reason\":\"renamed\""));
    free_lines(&old);
    free_lines(&cur);
    assert_int_equal(verify_files(t->path1, t->path, NULL, 0, &r), 0);
    assert_int_equal(r.records, 7);
    assert_int_equal(r.files, 2);
    assert_int_equal(r.chains, 1);
    /* The newer file alone checks too (its first line cannot be vouched for). */
    assert_int_equal(verify_files(t->path, NULL, NULL, 0, &r), 0);
    assert_int_equal(r.first_seq, 5);
    /* In the wrong order the older file reads as a second chain with the first one's id: a
     * chain's id is random, so that is a break at the older file's first line. */
    assert_int_equal(verify_files(t->path, t->path1, NULL, 0, &r), 1);
    assert_int_equal(r.line, 1);
    assert_non_null(strstr(r.why, "not in rotation order"));
}

/* logrotate's copytruncate: the file shrinks under the descriptor; the next line says so. */
static void test_rotation_truncate(void **state)
{
    struct fixture *t = *state;
    struct audit_verify_result r;
    char err[256];
    struct audit *a = audit_open(t->path, NULL, err, sizeof(err));
    assert_non_null(a);
    struct audit_record rec = record(1);
    assert_int_equal(audit_write(a, &rec), 0);
    struct lines l;
    read_lines(t->path, &l);
    write_lines(t->path1, &l); /* the copy */
    free_lines(&l);
    assert_int_equal(truncate(t->path, 0), 0);
    rec = record(2);
    assert_int_equal(audit_write(a, &rec), 0);
    audit_close(a);
    read_lines(t->path, &l);
    assert_int_equal(l.n, 2);
    assert_non_null(strstr(l.v[0], "\"event\":\"rotated\",\"reason\":\"truncated\""));
    free_lines(&l);
    assert_int_equal(verify_files(t->path1, t->path, NULL, 0, &r), 0);
    assert_int_equal(r.records, 4);
}

/* A last line cut short (a crash mid-write): the new line does not extend it, a new chain
 * starts and says why, and verify shows the damaged line. */
static void test_damaged_tail(void **state)
{
    struct fixture *t = *state;
    struct audit_verify_result r;
    struct lines l;
    write_records(t->path, NULL, 1, 2);
    FILE *f = fopen(t->path, "ab");
    fputs("{\"seq\":4,\"prev\":\"ab", f);
    fclose(f);
    write_records(t->path, NULL, 3, 1);
    read_lines(t->path, &l);
    assert_int_equal(l.n, 6);
    assert_string_equal(l.v[3], "{\"seq\":4,\"prev\":\"ab\n");
    assert_non_null(strstr(l.v[4], "{\"seq\":1,\"prev\":\"000"));
    assert_non_null(strstr(l.v[4], "\"event\":\"new-chain\",\"reason\":\"damaged-tail\""));
    free_lines(&l);
    assert_int_equal(verify_files(t->path, NULL, NULL, 0, &r), 1);
    assert_int_equal(r.line, 4);
}

/* A journal from before the chain: its lines are skipped at the top, the chain starts after. */
static void test_unchained_start(void **state)
{
    struct fixture *t = *state;
    struct audit_verify_result r;
    FILE *f = fopen(t->path, "wb");
    fputs("{\"time\":null,\"tool\":\"a\"}\n{\"time\":null,\"tool\":\"b\"}\n", f);
    fclose(f);
    write_records(t->path, NULL, 1, 2);
    assert_int_equal(verify_files(t->path, NULL, NULL, 0, &r), 0);
    assert_int_equal(r.skipped, 2);
    assert_int_equal(r.records, 3);
    struct lines l;
    read_lines(t->path, &l);
    assert_non_null(strstr(l.v[2], "\"reason\":\"unchained-tail\""));
    free_lines(&l);
}

/* --audit-sync always writes the same chain (the fsync is not observable here). */
static void test_sync_always(void **state)
{
    struct fixture *t = *state;
    struct audit_verify_result r;
    struct audit_opts o = { .sync = AUDIT_SYNC_ALWAYS };
    write_records(t->path, &o, 1, 3);
    assert_int_equal(verify_files(t->path, NULL, NULL, 0, &r), 0);
    assert_int_equal(r.records, 4);
}

/* ===== anchors ===== */

struct anchors_seen {
    struct sl_buf text;
    unsigned n;
};

static void on_anchor(void *arg, const char *entry)
{
    struct anchors_seen *s = arg;
    sl_buf_puts(&s->text, entry);
    sl_buf_putc(&s->text, '\n');
    s->n++;
}

static void test_anchors(void **state)
{
    struct fixture *t = *state;
    struct audit_verify_result r;
    struct anchors_seen seen = { 0 };
    struct audit_opts o = { .anchor_every = 3, .on_anchor = on_anchor, .arg = &seen };
    write_records(t->path, &o, 1, 7); /* 8 lines: anchored at 3 and 6, and at 8 on close */
    assert_int_equal(seen.n, 3);
    struct audit_anchor *v = NULL;
    size_t n = 0;
    audit_anchors_parse(sl_buf_str(&seen.text), &v, &n);
    assert_int_equal(n, 3);
    assert_int_equal(v[0].seq, 3);
    assert_int_equal(v[2].seq, 8);
    assert_int_equal(verify_files(t->path, NULL, v, n, &r), 0);
    assert_int_equal(r.anchors_checked, 3);

    /* The last line edited: the chain alone cannot tell, its anchor can. */
    struct lines l;
    read_lines(t->path, &l);
    char *saved = sl_xstrndup(l.v[7], strlen(l.v[7]));
    strstr(l.v[7], "write_file")[0] = 'W';
    write_lines(t->path, &l);
    assert_int_equal(verify_files(t->path, NULL, NULL, 0, &r), 0);
    assert_int_equal(verify_files(t->path, NULL, v, n, &r), 1);
    assert_int_equal(r.line, 8);
    assert_non_null(strstr(r.why, "anchored SHA-256 of seq 8 differs"));

    /* The last two lines removed: only the anchor past the end shows it. */
    free(l.v[7]);
    l.v[7] = saved;
    free(l.v[--l.n]);
    free(l.v[--l.n]);
    write_lines(t->path, &l);
    free_lines(&l);
    assert_int_equal(verify_files(t->path, NULL, NULL, 0, &r), 0);
    assert_int_equal(verify_files(t->path, NULL, v, n, &r), 1);
    assert_non_null(strstr(r.why, "names seq 8"));
    assert_non_null(strstr(r.why, "removed from the end"));

    /* Anchors of another journal only: nothing vouches for this one. */
    for (size_t i = 0; i < n; i++)
        v[i].chain[0] = v[i].chain[0] == 'a' ? 'b' : 'a';
    assert_int_equal(verify_files(t->path, NULL, v, n, &r), 2);
    assert_non_null(strstr(r.why, "none of the 3 anchors"));
    free(v);
    sl_buf_free(&seen.text);
}

/* A log shipped at least once carries an anchor line twice: the copies are one anchor. Two
 * anchors of one seq with different hashes still fail at that line, whichever sorts first. */
static void test_anchors_repeated(void **state)
{
    struct fixture *t = *state;
    struct audit_verify_result r;
    struct anchors_seen seen = { 0 };
    struct audit_opts o = { .anchor_every = 3, .on_anchor = on_anchor, .arg = &seen };
    write_records(t->path, &o, 1, 7); /* 8 lines: anchored at 3 and 6, and at 8 on close */
    struct sl_buf twice = { 0 };
    sl_buf_put(&twice, seen.text.p, seen.text.len);
    sl_buf_put(&twice, seen.text.p, seen.text.len);
    struct audit_anchor *v = NULL;
    size_t n = 0;
    audit_anchors_parse(sl_buf_str(&twice), &v, &n);
    assert_int_equal(n, 6);
    assert_int_equal(verify_files(t->path, NULL, v, n, &r), 0);
    assert_int_equal(r.anchors_checked, 3);

    static const uint8_t forged[] = { 0x00, 0xff };
    for (size_t k = 0; k < sizeof(forged); k++) {
        struct audit_anchor *w = sl_xmalloc((n + 1) * sizeof(*w));
        memcpy(w, v, n * sizeof(*w));
        w[n] = v[1]; /* seq 6 */
        memset(w[n].hash, forged[k], sizeof(w[n].hash));
        assert_int_equal(verify_files(t->path, NULL, w, n + 1, &r), 1);
        assert_int_equal(r.line, 6);
        assert_non_null(strstr(r.why, "anchored SHA-256 of seq 6 differs"));
        free(w);
    }
    free(v);
    sl_buf_free(&twice);
    sl_buf_free(&seen.text);
}

/* ===== rewrites that keep the chain whole: only the anchors can tell ===== */

/* Renumbers lines [from, n) to follow the line before and links each to it, as a forger who
 * can write the file would: the chain alone then checks. */
static void relink(struct lines *l, size_t from)
{
    for (size_t i = from; i < l->n; i++) {
        uint64_t seq = 1;
        char hex[65] = "0000000000000000000000000000000000000000000000000000000000000000";
        uint8_t prev[32];
        if (i > 0) {
            assert_true(audit_parse_link((struct sl_str){ l->v[i - 1], strlen(l->v[i - 1]) - 1 },
                                         &seq, prev));
            seq++;
            line_hash(l->v[i - 1], hex);
        }
        const char *rest = strstr(l->v[i], "\"time\":");
        assert_non_null(rest);
        char *out = sl_xmalloc(strlen(rest) + 120);
        sprintf(out, "{\"seq\":%llu,\"prev\":\"%s\",%s", (unsigned long long)seq, hex, rest);
        free(l->v[i]);
        l->v[i] = out;
    }
}

/* Adds ,"chain":"id" before the closing brace of line i. */
static void add_chain(struct lines *l, size_t i, const char *id)
{
    char *out = sl_xmalloc(strlen(l->v[i]) + 64);
    size_t brace = strrchr(l->v[i], '}') - l->v[i];
    sprintf(out, "%.*s,\"chain\":\"%s\"}\n", (int)brace, l->v[i], id);
    free(l->v[i]);
    l->v[i] = out;
}

/* Records removed after the last anchor but one, and the lines from there renamed to another
 * chain that ends in the real one's id: every anchor of the rewritten part falls inside the
 * real chain's seqs but on no line of it. The rename itself is the break. */
static void test_anchors_renamed_chain(void **state)
{
    struct fixture *t = *state;
    struct audit_verify_result r;
    struct anchors_seen seen = { 0 };
    struct audit_opts o = { .anchor_every = 3, .on_anchor = on_anchor, .arg = &seen };
    write_records(t->path, &o, 1, 9); /* 10 lines: anchored at 3, 6, 9 and 10 */
    struct audit_anchor *v = NULL;
    size_t n = 0;
    audit_anchors_parse(sl_buf_str(&seen.text), &v, &n);
    assert_int_equal(n, 4);
    n = 3; /* sluice still running: no anchor of the last line yet */
    struct lines l;
    read_lines(t->path, &l);
    char real[AUDIT_CHAIN_ID_HEX + 1];
    assert_true(audit_line_chain((struct sl_str){ l.v[0], strlen(l.v[0]) }, real));
    free(l.v[5]); /* seq 6 goes */
    memmove(&l.v[5], &l.v[6], (l.n - 6) * sizeof(char *));
    l.n--;
    add_chain(&l, 3, "ffffffffffffffffffffffffffffffff");
    l.v[l.n] = sl_xstrndup(l.v[l.n - 1], strlen(l.v[l.n - 1])); /* seq 10 and 11 again */
    l.v[l.n + 1] = sl_xstrndup(l.v[l.n - 1], strlen(l.v[l.n - 1]));
    l.n += 2;
    add_chain(&l, l.n - 1, real);
    relink(&l, 3);
    write_lines(t->path, &l);
    free_lines(&l);
    assert_int_equal(verify_files(t->path, NULL, NULL, 0, &r), 1);
    assert_int_equal(r.line, 4);
    assert_non_null(strstr(r.why, "chain id changes"));
    assert_int_equal(verify_files(t->path, NULL, v, n, &r), 1);
    assert_int_equal(r.line, 4);
    free(v);
    sl_buf_free(&seen.text);
}

/* The first line's chain id removed and a record before the anchor edited, everything relinked:
 * the id, first named by the restart's line, covers its chain from seq 1, so the anchor of seq 3
 * must still match, and no line of the chain has it. */
static void test_anchors_id_dropped(void **state)
{
    struct fixture *t = *state;
    struct audit_verify_result r;
    struct anchors_seen seen = { 0 };
    struct audit_opts o = { .anchor_every = 3, .on_anchor = on_anchor, .arg = &seen };
    write_records(t->path, &o, 1, 3); /* 4 lines, anchored at 3 and 4 */
    write_records(t->path, NULL, 4, 2); /* "continued" at seq 5, then 6 and 7 */
    struct audit_anchor *v = NULL;
    size_t n = 0;
    audit_anchors_parse(sl_buf_str(&seen.text), &v, &n);
    assert_int_equal(n, 2);
    n = 1; /* the anchor of seq 3 only */
    assert_int_equal(verify_files(t->path, NULL, v, n, &r), 0);
    assert_int_equal(r.anchors_checked, 1);
    struct lines l;
    read_lines(t->path, &l);
    assert_non_null(strstr(l.v[4], "\"event\":\"continued\""));
    char *id = strstr(l.v[0], ",\"chain\":\"");
    memmove(id, id + 10 + AUDIT_CHAIN_ID_HEX + 1, strlen(id + 10 + AUDIT_CHAIN_ID_HEX + 1) + 1);
    strstr(l.v[1], "write_file")[0] = 'W';
    relink(&l, 0);
    write_lines(t->path, &l);
    free_lines(&l);
    assert_int_equal(verify_files(t->path, NULL, NULL, 0, &r), 0);
    assert_int_equal(verify_files(t->path, NULL, v, n, &r), 1);
    assert_non_null(strstr(r.why, "names seq 3"));
    assert_non_null(strstr(r.why, "no line of that chain here has that seq"));
    free(v);
    sl_buf_free(&seen.text);
}

/* The start of a file cut off, down to a restart's "continued" line or to a plain record: the
 * first record begins no chain and no rotated file, with or without anchors, and an anchor of a
 * removed line is not taken for one of an older file. */
static void test_start_removed(void **state)
{
    struct fixture *t = *state;
    struct audit_verify_result r;
    struct anchors_seen seen = { 0 };
    struct audit_opts o = { .anchor_every = 2, .on_anchor = on_anchor, .arg = &seen };
    write_records(t->path, &o, 1, 3); /* seq 1 to 4, anchored at 2 and 4 */
    write_records(t->path, NULL, 4, 2); /* "continued" at seq 5, then 6 and 7 */
    struct audit_anchor *v = NULL;
    size_t n = 0;
    audit_anchors_parse(sl_buf_str(&seen.text), &v, &n);
    assert_int_equal(n, 2);
    assert_int_equal(verify_files(t->path, NULL, v, n, &r), 0);
    struct lines l;
    read_lines(t->path, &l);
    struct lines cut = { .n = l.n - 4 };
    memcpy(cut.v, &l.v[4], cut.n * sizeof(char *)); /* from the "continued" line */
    assert_non_null(strstr(cut.v[0], "\"event\":\"continued\""));
    for (int k = 0; k < 2; k++) {
        write_lines(t->path, &cut);
        assert_int_equal(verify_files(t->path, NULL, NULL, 0, &r), 1);
        assert_int_equal(r.line, 1);
        assert_string_equal(r.file, t->path);
        assert_non_null(strstr(r.why, "removed from the start"));
        assert_int_equal(verify_files(t->path, NULL, v, n, &r), 1);
        assert_non_null(strstr(r.why, "removed from the start"));
        cut.n = l.n - 3; /* from seq 4, a record */
        memcpy(cut.v, &l.v[3], cut.n * sizeof(char *));
    }
    free_lines(&l);
    free(v);
    sl_buf_free(&seen.text);
}

/* Lines put before a chain that began on an empty file: nothing was there to skip. */
static void test_lines_before_new_file(void **state)
{
    struct fixture *t = *state;
    struct audit_verify_result r;
    write_records(t->path, NULL, 1, 2);
    struct lines l;
    read_lines(t->path, &l);
    memmove(&l.v[1], &l.v[0], l.n * sizeof(char *));
    static const char forged[] = "{\"decision\":\"client-accepted\",\"tool\":\"x\"}\n";
    l.v[0] = sl_xstrndup(forged, strlen(forged));
    l.n++;
    write_lines(t->path, &l);
    free_lines(&l);
    assert_int_equal(verify_files(t->path, NULL, NULL, 0, &r), 1);
    assert_int_equal(r.line, 2);
    assert_non_null(strstr(r.why, "began on an empty file"));
}

/* By time: audit_tick anchors a head older than anchor_ms, and only a head that moved. */
static void test_anchor_by_time(void **state)
{
    struct fixture *t = *state;
    struct anchors_seen seen = { 0 };
    struct audit_opts o = { .anchor_ms = 1, .on_anchor = on_anchor, .arg = &seen };
    char err[256];
    struct audit *a = audit_open(t->path, &o, err, sizeof(err));
    assert_non_null(a);
    struct audit_record r = record(1);
    assert_int_equal(audit_write(a, &r), 0);
    assert_int_equal(seen.n, 0); /* not by count */
    usleep(2000);
    audit_tick(a);
    assert_int_equal(seen.n, 1);
    assert_non_null(strstr(seen.text.p, " seq=2 sha256="));
    usleep(2000);
    audit_tick(a);
    assert_int_equal(seen.n, 1); /* the same head is not anchored again */
    audit_close(a);
    assert_int_equal(seen.n, 1); /* nor on close */
    sl_buf_free(&seen.text);
}

/* The anchor's text is found inside a JSON log line too. */
#define ANCHOR_BODY "audit anchor: chain=0123456789abcdef0123456789abcdef seq=42 sha256=" \
    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#define JSON_HEAD "{\"ts\":\"2026-11-29T17:00:00.123Z\",\"level\":\"info\","

/* Only sluice's own lines (log.c) carry anchors: an upstream's stderr relayed into the same log
 * never does, whatever it prints. */
static const struct {
    const char *line;
    bool ok;
} anchor_lines[] = {
    { ANCHOR_BODY, true },                                   /* the store's entry */
    { "sluice: info: " ANCHOR_BODY, true },                  /* text log */
    { JSON_HEAD "\"msg\":\"" ANCHOR_BODY "\"}", true },      /* JSON log */
    { JSON_HEAD "\"request_id\":\"0a1b2c3d-7\",\"msg\":\"" ANCHOR_BODY "\"}", true },
    /* an upstream's stderr, relayed with JSON logs */
    { JSON_HEAD "\"source\":\"upstream\",\"msg\":\"" ANCHOR_BODY "\"}", false },
    { JSON_HEAD "\"source\":\"upstream\",\"msg\":\"sluice: info: " ANCHOR_BODY "\"}", false },
    { JSON_HEAD "\"source\":\"upstream\",\"msg\":\"x\\\",\\\"msg\\\":\\\"" ANCHOR_BODY "\"}",
      false },
    /* an upstream's stderr, passed through with text logs */
    { "[server] seen: " ANCHOR_BODY, false },
    { "fake-upstream: sluice: info: " ANCHOR_BODY, false },
    /* not sluice's spelling */
    { "sluice: warning: " ANCHOR_BODY, false },
    { ANCHOR_BODY " ", false },
    { ANCHOR_BODY "0", false },
    { "{\"time\":\"x\",\"level\":\"info\",\"msg\":\"" ANCHOR_BODY "\"}", false },
    { JSON_HEAD "\"msg\":\"" ANCHOR_BODY "\",\"x\":1}", false },
    { JSON_HEAD "\"msg\":\"" ANCHOR_BODY, false },
    { "audit anchor: chain=0123456789abcdef0123456789abcdef seq=42", false },
};

static void test_anchor_parse(void **state)
{
    (void)state;
    for (size_t i = 0; i < SL_ARRAY_LEN(anchor_lines); i++) {
        const char *line = anchor_lines[i].line;
        char chain[AUDIT_CHAIN_ID_HEX + 1] = "";
        uint64_t seq = 0;
        uint8_t h[32] = { 0 };
        bool got = audit_parse_anchor((struct sl_str){ line, strlen(line) }, chain, &seq, h);
        if (got != anchor_lines[i].ok)
            fail_msg("row %zu: %s: %s", i, anchor_lines[i].ok ? "refused" : "taken", line);
        if (!got)
            continue;
        assert_string_equal(chain, "0123456789abcdef0123456789abcdef");
        assert_int_equal(seq, 42);
        assert_int_equal(h[1], 0x11);
        assert_int_equal(h[31], 0xff);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_intact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tampering, setup, teardown),
        cmocka_unit_test_setup_teardown(test_break_in_second_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_continues, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rotation_rename, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rotation_truncate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unchained_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sync_always, setup, teardown),
        cmocka_unit_test_setup_teardown(test_anchors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_anchors_repeated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_anchors_renamed_chain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_anchors_id_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lines_before_new_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_removed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_anchor_by_time, setup, teardown),
        cmocka_unit_test(test_anchor_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
