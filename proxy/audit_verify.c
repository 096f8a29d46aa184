/* audit_verify.c: the journal's chain, checked line by line with one line of lookahead. */
#include "audit_verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seal.h"
#include "store.h"

#define MAX_CHAINS 256 /* chains told apart for anchors; more than this in one check is odd */

/* One line of the files, in order. */
struct vline {
    const char *file;
    uint64_t lineno;
    struct sl_buf text;      /* without the newline */
    bool cut;                /* the file ended without a newline after it */
};

struct reader {
    const char *const *files;
    size_t n, fi;
    FILE *f;
    uint64_t lineno;
    char *buf;
    size_t cap;
    struct vline ahead;      /* a line read ahead, returned next */
    bool have_ahead;
};

/* The next line into l: 1, 0 at the end of the last file, -1 when a file cannot be opened. */
static int reader_next(struct reader *rd, struct vline *l, struct audit_verify_result *out)
{
    if (rd->have_ahead) {
        struct vline t = *l;
        *l = rd->ahead;
        rd->ahead = t;
        rd->have_ahead = false;
        return 1;
    }
    for (;;) {
        if (rd->f == NULL) {
            if (rd->fi == rd->n)
                return 0;
            rd->f = fopen(rd->files[rd->fi], "rb");
            rd->lineno = 0;
            if (rd->f == NULL) {
                out->file = rd->files[rd->fi];
                snprintf(out->why, sizeof(out->why), "cannot open: %m");
                return -1;
            }
            out->files++;
        }
        ssize_t got = getline(&rd->buf, &rd->cap, rd->f);
        if (got < 0) {
            fclose(rd->f);
            rd->f = NULL;
            rd->fi++;
            continue;
        }
        l->file = rd->files[rd->fi];
        l->lineno = ++rd->lineno;
        l->cut = rd->buf[got - 1] != '\n';
        sl_buf_reset(&l->text);
        sl_buf_put(&l->text, rd->buf, (size_t)got - !l->cut);
        return 1;
    }
}

/* Peeks at the line after the current one. */
static const struct vline *reader_peek(struct reader *rd, struct audit_verify_result *out)
{
    if (!rd->have_ahead) {
        struct audit_verify_result scratch = *out;
        if (reader_next(rd, &rd->ahead, &scratch) != 1)
            return NULL;
        out->files = scratch.files;
        rd->have_ahead = true;
    }
    return &rd->ahead;
}

/* ===== the walk ===== */

struct chain_span {
    char id[AUDIT_CHAIN_ID_HEX + 1];
    uint64_t first, last;
};

struct walk {
    const struct audit_anchor *anchors;
    bool *matched;                 /* per anchor: its line was found, with its hash */
    size_t nanchors;
    bool started, have_h2;
    uint64_t seq;                  /* of the previous line */
    uint8_t h1[32], h2[32];        /* hashes of the previous line and the one before */
    const char *prev_file;
    uint64_t prev_line;
    struct chain_span spans[MAX_CHAINS];
    size_t nspans;
    struct chain_span *cur;        /* the chain of the current line, or NULL */
    uint64_t chain_first;          /* the seq the current hash chain began with here */
};

static int fail(struct audit_verify_result *out, const char *file, uint64_t line,
                const char *why)
{
    out->file = file;
    out->line = line;
    snprintf(out->why, sizeof(out->why), "%s", why);
    return 1;
}

static bool is_genesis(uint64_t seq, const uint8_t prev[32])
{
    static const uint8_t zero[32];
    return seq == 1 && memcmp(prev, zero, 32) == 0;
}

/* The link from the previous line to l is broken: says which line is to blame and how. */
static int diagnose(struct walk *w, struct reader *rd, const struct vline *l, uint64_t seq,
                    const uint8_t prev[32], struct audit_verify_result *out)
{
    char why[300];
    if (memcmp(prev, w->h1, 32) == 0) {
        snprintf(why, sizeof(why), "seq %llu does not follow %llu, yet the line links to the "
                 "one before: this line was edited", (unsigned long long)seq,
                 (unsigned long long)w->seq);
        return fail(out, l->file, l->lineno, why);
    }
    if (w->have_h2 && memcmp(prev, w->h2, 32) == 0)
        return fail(out, w->prev_file, w->prev_line, "this line was inserted: the next line's "
                    "prev is the SHA-256 of the line before it");
    if (seq > w->seq + 1) {
        snprintf(why, sizeof(why), "seq jumps from %llu to %llu: records are missing before "
                 "this line (removed), or lines were moved", (unsigned long long)w->seq,
                 (unsigned long long)seq);
        return fail(out, l->file, l->lineno, why);
    }
    if (seq <= w->seq) {
        snprintf(why, sizeof(why), "seq %llu comes after %llu: this line was inserted or moved "
                 "here", (unsigned long long)seq, (unsigned long long)w->seq);
        return fail(out, l->file, l->lineno, why);
    }
    /* seq follows but the hash does not: the line before changed, or this line's prev did.
     * If this line is intact, the next one still names it. */
    uint8_t mine[32], next_prev[32];
    uint64_t next_seq;
    seal_sha256(l->text.p, l->text.len, mine);
    const struct vline *n = reader_peek(rd, out);
    if (n && !n->cut && audit_parse_link(sl_buf_str(&n->text), &next_seq, next_prev) &&
        memcmp(next_prev, mine, 32) != 0)
        return fail(out, l->file, l->lineno, "this line was changed after it was written: its "
                    "prev is not the SHA-256 of the line before, nor is it named by the next");
    return fail(out, w->prev_file, w->prev_line, n ? "this line was changed after it was "
                "written: the next line's prev is not its SHA-256" : "this line was changed "
                "after it was written, or the prev of the last line was");
}

static struct chain_span *span_find(struct walk *w, const char *id)
{
    for (size_t i = 0; i < w->nspans; i++)
        if (strcmp(w->spans[i].id, id) == 0)
            return &w->spans[i];
    return NULL;
}

static struct chain_span *span_of(struct walk *w, const char *id)
{
    struct chain_span *s = span_find(w, id);
    if (s || w->nspans == MAX_CHAINS)
        return s;
    s = &w->spans[w->nspans++];
    memcpy(s->id, id, sizeof(s->id));
    s->first = s->last = 0;
    return s;
}

static int anchor_cmp(const void *x, const void *y)
{
    const struct audit_anchor *a = x, *b = y;
    return a->seq < b->seq ? -1 : a->seq > b->seq ? 1 : strcmp(a->chain, b->chain);
}

/* anchor_cmp, then the hash: copies of one anchor sort next to each other. */
static int anchor_sort_cmp(const void *x, const void *y)
{
    const struct audit_anchor *a = x, *b = y;
    int c = anchor_cmp(a, b);
    return c ? c : memcmp(a->hash, b->hash, 32);
}

/* Sorts v[0..n) and drops exact copies; returns how many are left. A log shipped at least once
 * carries the same anchor line twice, and a copy that no line claims would read as lines
 * rewritten under another chain (check_ends). Anchors that share a seq but not a hash are kept,
 * and fail at that seq's line (check_anchor). */
static size_t anchors_unique(struct audit_anchor *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), anchor_sort_cmp);
    size_t kept = 1;
    for (size_t i = 1; i < n; i++)
        if (anchor_sort_cmp(&v[i], &v[kept - 1]) != 0)
            v[kept++] = v[i];
    return kept;
}

/* The first of the anchors of chain at seq (they are adjacent, as anchors is sorted by
 * anchor_sort_cmp, which refines anchor_cmp), or NULL. */
static const struct audit_anchor *find_anchor(const struct walk *w, const char *chain,
                                              uint64_t seq)
{
    if (w->nanchors == 0)
        return NULL; /* bsearch wants a real array, even of none */
    struct audit_anchor key = { .seq = seq };
    memcpy(key.chain, chain, sizeof(key.chain));
    const struct audit_anchor *a = bsearch(&key, w->anchors, w->nanchors, sizeof(key),
                                           anchor_cmp);
    while (a && a > w->anchors && anchor_cmp(a - 1, &key) == 0)
        a--;
    return a;
}

/* A line naming chain id. The id is random per chain, so within one hash chain it never
 * changes, and no later chain has an earlier one's: a rewrite that renamed its lines' chain
 * would have their anchors pass for another journal's. The id covers its chain from the chain's
 * first line here, so an anchor of a line before the id's first mention must match too. */
static int take_chain_id(struct walk *w, const struct vline *l, const char *id,
                         struct audit_verify_result *out)
{
    char why[300];
    struct chain_span *s = span_of(w, id);
    if (s == NULL) {
        snprintf(why, sizeof(why), "more than %d chains: split the check", MAX_CHAINS);
        return fail(out, l->file, l->lineno, why);
    }
    if (w->cur && s != w->cur) {
        snprintf(why, sizeof(why), "the chain id changes from %s to %s within one hash "
                 "chain: the lines from here were rewritten", w->cur->id, id);
        return fail(out, l->file, l->lineno, why);
    }
    if (w->cur == NULL && s->first != 0) {
        snprintf(why, sizeof(why), "a new hash chain has the id %s of an earlier one: the "
                 "files are not in rotation order, or the lines from here were rewritten", id);
        return fail(out, l->file, l->lineno, why);
    }
    if (w->cur == NULL)
        s->first = w->chain_first;
    w->cur = s;
    return 0;
}

/* The chain this line belongs to, and its anchor if there is one. */
static int check_anchor(struct walk *w, const struct vline *l, uint64_t seq,
                        const uint8_t h[32], struct audit_verify_result *out)
{
    char id[AUDIT_CHAIN_ID_HEX + 1];
    if (audit_line_chain(sl_buf_str(&l->text), id) && take_chain_id(w, l, id, out) != 0)
        return 1;
    if (w->cur == NULL)
        return 0;
    if (w->cur->first == 0 || seq < w->cur->first)
        w->cur->first = seq;
    w->cur->last = seq;
    /* more than one only when anchors disagree (anchors_unique dropped the copies) */
    const struct audit_anchor *a = find_anchor(w, w->cur->id, seq);
    const struct audit_anchor *end = w->anchors + w->nanchors;
    for (; a && a < end && a->seq == seq && strcmp(a->chain, w->cur->id) == 0; a++) {
        if (memcmp(a->hash, h, 32) != 0) {
            char why[300];
            snprintf(why, sizeof(why), "the anchored SHA-256 of seq %llu differs: this line "
                     "was changed, or the journal was rewritten up to here",
                     (unsigned long long)seq);
            return fail(out, l->file, l->lineno, why);
        }
        w->matched[a - w->anchors] = true;
        out->anchors_checked++;
    }
    return 0;
}

/* Whether l is the first line of a chain sluice began on an empty file (audit.c new_chain). */
static bool began_empty(const struct vline *l)
{
    static const char mark[] = "\"event\":\"new-chain\",\"reason\":\"new-file\"";
    return memmem(l->text.p, l->text.len, mark, sizeof(mark) - 1) != NULL;
}

/* Whether the first chained line l can begin what sluice wrote: a chain's first line (seq 1),
 * or a rotated file's, which links to a file not given. Every file sluice writes starts with
 * one (audit.c), after an older sluice's unchained lines at most; any other first record means
 * records were removed from the start. */
static bool starts_file(const struct vline *l, uint64_t seq, const uint8_t prev[32])
{
    static const char mark[] = ",\"event\":\"rotated\",\"reason\":\"";
    char id[AUDIT_CHAIN_ID_HEX + 1];
    return is_genesis(seq, prev) ||
           (memmem(l->text.p, l->text.len, mark, sizeof(mark) - 1) != NULL &&
            audit_line_chain(sl_buf_str(&l->text), id));
}

/* One line: 0 to go on, 1 at a break. */
static int step(struct walk *w, struct reader *rd, const struct vline *l,
                struct audit_verify_result *out)
{
    uint64_t seq;
    uint8_t prev[32], h[32];
    if (l->cut)
        return fail(out, l->file, l->lineno, "the line is cut short (no newline): a write "
                    "was interrupted, or the file was truncated");
    if (!audit_parse_link(sl_buf_str(&l->text), &seq, prev)) {
        if (!w->started && rd->fi == 0) { /* an older sluice's lines, before the chain */
            out->skipped++;
            return 0;
        }
        return fail(out, l->file, l->lineno, "not a chained journal record");
    }
    bool links = w->started && memcmp(prev, w->h1, 32) == 0 && seq == w->seq + 1;
    bool new_chain = is_genesis(seq, prev) && (l->lineno == 1 || !w->started);
    if (w->started && !links && !new_chain)
        return diagnose(w, rd, l, seq, prev, out);
    if (!w->started && !starts_file(l, seq, prev)) {
        char why[300];
        snprintf(why, sizeof(why), "records were removed from the start of the file: its first "
                 "record (seq %llu) begins no chain (new-chain) and no rotated file (rotated)",
                 (unsigned long long)seq);
        return fail(out, l->file, l->lineno, why);
    }
    if (!w->started || new_chain) {
        if (new_chain && out->skipped && began_empty(l))
            return fail(out, l->file, l->lineno, "lines come before a chain that began on an "
                        "empty file: they were added");
        out->chains++;
        if (!w->started)
            out->first_seq = seq;
        w->cur = NULL;
        w->chain_first = seq;
    }
    seal_sha256(l->text.p, l->text.len, h);
    if (check_anchor(w, l, seq, h, out) != 0)
        return 1;
    memcpy(w->h2, w->h1, 32);
    memcpy(w->h1, h, 32);
    w->have_h2 = w->started && !new_chain;
    w->started = true;
    w->seq = seq;
    w->prev_file = l->file;
    w->prev_line = l->lineno;
    out->records++;
    out->last_seq = seq;
    return 0;
}

/* After the walk: an anchor past the end of its chain means lines were cut off the end. */
static int check_ends(struct walk *w, struct audit_verify_result *out)
{
    size_t mine = 0;
    for (size_t i = 0; i < w->nanchors; i++) {
        const struct audit_anchor *a = &w->anchors[i];
        struct chain_span *s = NULL;
        for (size_t k = 0; k < w->nspans && s == NULL; k++)
            if (strcmp(w->spans[k].id, a->chain) == 0)
                s = &w->spans[k];
        if (s == NULL) {
            out->anchors_other++; /* another journal's */
            continue;
        }
        mine++;
        char why[300];
        if (a->seq < s->first) {
            out->anchors_before++;
        } else if (a->seq > s->last) {
            snprintf(why, sizeof(why), "an anchor names seq %llu of chain %s, past the last "
                     "line (seq %llu): records were removed from the end",
                     (unsigned long long)a->seq, a->chain, (unsigned long long)s->last);
            return fail(out, w->prev_file, w->prev_line, why);
        } else if (!w->matched[i]) {
            snprintf(why, sizeof(why), "an anchor names seq %llu of chain %s, and no line of "
                     "that chain here has that seq: lines were rewritten under another chain",
                     (unsigned long long)a->seq, a->chain);
            return fail(out, w->prev_file, w->prev_line, why);
        }
    }
    if (w->nanchors > 0 && mine == 0) {
        out->file = NULL;
        snprintf(out->why, sizeof(out->why), "none of the %zu anchors names a chain of these "
                 "files", w->nanchors);
        return 2;
    }
    return 0;
}

int audit_verify(const char *const *files, size_t n, const struct audit_anchor *anchors,
                 size_t nanchors, struct audit_verify_result *out)
{
    memset(out, 0, sizeof(*out));
    struct reader rd = { .files = files, .n = n };
    struct walk *w = sl_xcalloc(1, sizeof(*w));
    struct vline l = { 0 };
    struct audit_anchor *sorted = nanchors ? sl_xmalloc(nanchors * sizeof(*sorted)) : NULL;
    if (nanchors)
        memcpy(sorted, anchors, nanchors * sizeof(*sorted));
    nanchors = anchors_unique(sorted, nanchors);
    w->anchors = sorted;
    w->matched = nanchors ? sl_xcalloc(nanchors, sizeof(*w->matched)) : NULL;
    w->nanchors = nanchors;
    int rc = 0, got;
    while (rc == 0 && (got = reader_next(&rd, &l, out)) == 1)
        rc = step(w, &rd, &l, out);
    if (rc == 0 && got < 0)
        rc = 2;
    if (rc == 0 && !w->started) {
        snprintf(out->why, sizeof(out->why), "no chained record in %zu file%s", n,
                 n == 1 ? "" : "s");
        rc = 1;
    }
    if (rc == 0)
        rc = check_ends(w, out);
    if (rc == 0) {
        struct sl_buf b;
        sl_buf_on(&b, out->head, sizeof(out->head));
        sl_hex_encode(&b, w->h1, 32);
    }
    if (rd.f)
        fclose(rd.f);
    free(rd.buf);
    sl_buf_free(&l.text);
    sl_buf_free(&rd.ahead.text);
    free(w->matched);
    free(w);
    free(sorted);
    return rc;
}

void audit_anchors_parse(struct sl_str text, struct audit_anchor **v, size_t *n)
{
    const char *p = text.p, *end = text.p + text.len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        struct audit_anchor a;
        if (audit_parse_anchor((struct sl_str){ p, (size_t)(stop - p) }, a.chain, &a.seq,
                               a.hash)) {
            *v = sl_xrealloc(*v, (*n + 1) * sizeof(**v));
            (*v)[(*n)++] = a;
        }
        p = stop + 1;
    }
}

/* ===== the command ===== */

static int load_anchors(const char *src, const char *prefix, unsigned timeout_ms,
                        struct audit_anchor **v, size_t *n)
{
    struct sl_buf text = { 0 };
    char err[400];
    int rc = 0;
    if (strncmp(src, "redis://", 8) == 0 || strcmp(src, "memory") == 0) {
        struct store_opts so = { .url = src, .prefix = prefix, .timeout_ms = timeout_ms,
                                 .password = getenv("SLUICE_STORE_PASSWORD") };
        rc = store_anchor_fetch(&so, &text, err, sizeof(err));
    } else {
        FILE *f = fopen(src, "rb");
        char chunk[65536];
        size_t got;
        if (f == NULL) {
            snprintf(err, sizeof(err), "%s: cannot open: %m", src);
            rc = -1;
        }
        while (f && (got = fread(chunk, 1, sizeof(chunk), f)) > 0)
            sl_buf_put(&text, chunk, got);
        if (f)
            fclose(f);
    }
    if (rc == 0)
        audit_anchors_parse(sl_buf_str(&text), v, n);
    else
        fprintf(stderr, "sluice audit verify: anchors: %s\n", err);
    sl_buf_free(&text);
    return rc;
}

int audit_verify_cmd(char *const *files, size_t n, const char *anchors_src, const char *prefix,
                     unsigned timeout_ms)
{
    struct audit_anchor *anchors = NULL;
    size_t nanchors = 0;
    struct audit_verify_result r;
    if (anchors_src && load_anchors(anchors_src, prefix, timeout_ms, &anchors, &nanchors) != 0)
        return 2;
    if (anchors_src && nanchors == 0) {
        fprintf(stderr, "sluice audit verify: no anchor found in %s\n", anchors_src);
        free(anchors);
        return 2;
    }
    int rc = audit_verify((const char *const *)files, n, anchors, nanchors, &r);
    free(anchors);
    if (rc != 0) {
        if (r.file && r.line)
            printf("%s:%llu: %s\n", r.file, (unsigned long long)r.line, r.why);
        else if (r.file)
            printf("%s: %s\n", r.file, r.why);
        else
            printf("error: %s\n", r.why);
        return rc;
    }
    printf("ok: %llu record%s in %zu file%s, seq %llu to %llu, %zu chain%s\n",
           (unsigned long long)r.records, r.records == 1 ? "" : "s", r.files,
           r.files == 1 ? "" : "s", (unsigned long long)r.first_seq,
           (unsigned long long)r.last_seq, r.chains, r.chains == 1 ? "" : "s");
    printf("head: seq %llu sha256 %s\n", (unsigned long long)r.last_seq, r.head);
    if (r.skipped)
        printf("skipped: %llu unchained line%s before the chain starts\n",
               (unsigned long long)r.skipped, r.skipped == 1 ? "" : "s");
    if (anchors_src)
        printf("anchors: %zu matched, %zu before the first record, %zu of other journals\n",
               r.anchors_checked, r.anchors_before, r.anchors_other);
    return 0;
}
