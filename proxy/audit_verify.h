/* audit_verify.h: `sluice audit verify`: checks a journal's hash chain (audit.h) and, given
 * anchors (the heads sluice logged or pushed to the store), that the journal still has them.
 *
 * Files are given in rotation order (oldest first) and checked as one chain: each file's first
 * line must link to the last line of the one before. A break is reported at the line that was
 * changed, inserted, moved or cut, or where lines are missing:
 *   edited     a line whose bytes changed: the next line's prev no longer names it
 *   removed    seq jumps (a record missing before this line), or the first record begins
 *              neither a chain (seq 1) nor a rotated file (records cut from the start)
 *   reordered  seq jumps at the first line moved
 *   inserted   seq repeats, or the next line's prev names the line before this one
 *   truncated  the last line has no newline; with anchors, a head past the end
 *   renamed    a chain id that changes within one hash chain, or an earlier chain's id on a
 *              new one; with anchors, one inside its chain's seqs on no line of that chain
 * Without anchors, the last line and the first line of the first file cannot be checked (their
 * neighbours are what vouches for them), and a journal rewritten whole from some line on passes:
 * anchors off the host are what catch that. */
#ifndef SL_AUDIT_VERIFY_H
#define SL_AUDIT_VERIFY_H

#include "audit.h"

struct audit_anchor {
    char chain[AUDIT_CHAIN_ID_HEX + 1];
    uint64_t seq;
    uint8_t hash[32];
};

struct audit_verify_result {
    /* a break (return 1) or an error (return 2) */
    const char *file;        /* one of files[], or NULL */
    uint64_t line;           /* 1-based; 0 when the message is about no line */
    char why[300];
    /* the summary (return 0) */
    uint64_t records;
    uint64_t first_seq, last_seq;
    size_t files, chains;
    uint64_t skipped;        /* lines without chain fields before the chain starts (an older
                              * sluice's records at the top of the first file) */
    char head[65];           /* hex SHA-256 of the last line */
    size_t anchors_checked;  /* anchors whose record was found and matched */
    size_t anchors_before;   /* anchors of these chains before the first record (older files) */
    size_t anchors_other;    /* anchors of other chains (other journals sharing the store) */
};

/* Checks files[0..n) as one chain against anchors[0..nanchors) (may be 0; an anchor of another
 * chain is ignored, and with anchors given at least one must belong to these files). Returns 0
 * (out has the summary), 1 (a break: out->file, out->line, out->why) or 2 (a file could not be
 * read, or no anchor names these chains). */
int audit_verify(const char *const *files, size_t n, const struct audit_anchor *anchors,
                 size_t nanchors, struct audit_verify_result *out);

/* Every anchor text (audit_parse_anchor) in text, one per line, appended to *v (*n of them,
 * grown with realloc; the caller frees *v). */
void audit_anchors_parse(struct sl_str text, struct audit_anchor **v, size_t *n);

/* `sluice audit verify [--anchors SRC] FILE...`: checks files and prints the summary, or
 * FILE:LINE: why. anchors_src is NULL, a file of log lines, or a redis:// store URL (read under
 * prefix; password from $SLUICE_STORE_PASSWORD). Returns the exit code: 0 intact, 1 a break, 2
 * files or anchors that cannot be read. */
int audit_verify_cmd(char *const *files, size_t n, const char *anchors_src, const char *prefix,
                     unsigned timeout_ms);

#endif /* SL_AUDIT_VERIFY_H */
