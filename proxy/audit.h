/* audit.h: the append-only decision journal (--audit FILE), one JSON object per line.
 *
 * A record holds who, what tool, the digest of the arguments, the decision, why, and what the
 * upstream did. It has no field for argument values, so no code path can write them. The decision
 * for an accepted confirmation is "client-accepted", never "approved": sluice sees what the client
 * software answered, not that a person clicked. A gated call that goes upstream is first
 * journaled "forwarding" (its outcome is not known yet), so a crash while it runs still leaves
 * it on record; the decision record with the outcome follows. One its upstream cannot take
 * (gone, deaf) is not sent, and has no forwarding line: its outcome is "unavailable". The file is opened O_APPEND and
 * each line is written with one write(2); --audit-sync says when it is also fsync'ed.
 *
 * The journal is a hash chain. Every line starts {"seq":N,"prev":"H", where N counts the records
 * of the chain from 1 and H is the SHA-256, in lowercase hex, of the previous line's exact bytes
 * without its newline (64 zeros for the first record of a chain). Lines sluice writes itself
 * carry "event" instead of a decision:
 *   new-chain  seq 1: an empty file, or a file whose last line was damaged or unchained
 *              ("reason" says which); "chain" is a random id the chain keeps for ever
 *   continued  sluice started on a journal whose last line is intact: the chain goes on
 *   rotated    the first line of a new file (the old one renamed or truncated away): its prev
 *              is the hash of the last line of the previous file
 * Every event line carries "chain", and every file sluice writes starts with one. Anchors (the
 * head's seq and hash) go to the log and to the store now and then, off this host; `sluice audit
 * verify` (audit_verify.h) checks a journal and, given them, against those heads. */
#ifndef SL_AUDIT_H
#define SL_AUDIT_H

#include "base.h"

struct audit;

/* What sluice decided about a call. The journal and the decision metric name each value by
 * audit_decision_name(), the one table of spellings: code compares enums, never strings.
 * AUDIT_NONE (0, what a zeroed record holds) is written as JSON null. */
enum audit_decision {
    AUDIT_NONE,
    AUDIT_ALLOW,
    AUDIT_DENY,
    AUDIT_ASKED,
    AUDIT_CLIENT_ACCEPTED, /* what the client software answered, not that a person clicked */
    AUDIT_DECLINED,
    AUDIT_CANCELLED,
    AUDIT_REFUSED,
    AUDIT_TOKEN_ISSUED,
    AUDIT_TOKEN_REDEEMED,
    AUDIT_OBSERVE,         /* a read sluice made itself, before asking or after an accept */
    AUDIT_OBSERVING,       /* the gate's GATE_OBSERVE: read first, decide after */
    AUDIT_REPLAYED_RESULT, /* a retry of an approved call got its first run's outcome */
    AUDIT_PAGE_APPROVED,   /* a person approved on sluice's approval page (approval.h) */
    AUDIT_PAGE_DECLINED,   /* ... or declined there */
    AUDIT_FORWARDING,      /* a gated call goes upstream now; its decision and outcome follow */
    AUDIT_DECISION_COUNT
};

/* What the upstream did with the call. UP_NONE (0) is written as JSON null. */
enum audit_upstream {
    AUDIT_UP_NONE,
    AUDIT_UP_OK,
    AUDIT_UP_TOOL_ERROR,     /* a result with isError */
    AUDIT_UP_ERROR,          /* a JSON-RPC error */
    AUDIT_UP_INPUT_REQUIRED, /* the upstream asked a question of its own */
    AUDIT_UP_NO_RESPONSE,
    AUDIT_UP_CANCELLED,
    AUDIT_UP_NOT_FORWARDED,
    AUDIT_UP_UNAVAILABLE,    /* let through, but the upstream could take no call: never sent */
    AUDIT_UPSTREAM_COUNT
};

/* The journal's spelling ("client-accepted", "not-forwarded", ...); NULL for the NONE values
 * and for anything out of range. */
const char *audit_decision_name(enum audit_decision d);
const char *audit_upstream_name(enum audit_upstream u);

struct audit_record {
    uint64_t time_ms;           /* unix time in milliseconds */
    const char *principal;
    struct sl_str tool;
    const uint8_t *args_digest; /* 32 bytes, or NULL when there were no parseable arguments */
    enum audit_decision decision;
    const char *reason;         /* short machine-readable reason, e.g. "policy:tools.write_file" */
    enum audit_upstream upstream;
    const char *request_id;     /* the client's JSON-RPC id as JSON text, may be NULL */
};

/* When the journal reaches the disk (--audit-sync). */
enum audit_sync {
    AUDIT_SYNC_INTERVAL, /* fsync from audit_tick, called every AUDIT_SYNC_INTERVAL_MS */
    AUDIT_SYNC_ALWAYS,   /* fsync after every record, before audit_write returns */
};
#define AUDIT_SYNC_INTERVAL_MS 100

/* The head was anchored: entry is the text also logged ("audit anchor: chain=C seq=N
 * sha256=H"), valid during the call. For the shared store (store_anchor_push). */
typedef void audit_anchor_cb(void *arg, const char *entry);

struct audit_opts {
    enum audit_sync sync;
    unsigned anchor_every;   /* anchor after this many records (0: not by count) */
    unsigned anchor_ms;      /* anchor a head older than this at audit_tick (0: not by time) */
    audit_anchor_cb *on_anchor; /* NULL: the log only */
    void *arg;
};

/* Opens (creates, mode 0600) path for appending and finds where its chain stands: it goes on
 * from an intact last line, else a new chain starts (see the top). Writes that first event
 * line. o may be NULL (interval sync, no anchors). Returns NULL and fills err on failure. */
struct audit *audit_open(const char *path, const struct audit_opts *o, char *err,
                         size_t errlen);
/* Writes one record as the next link of the chain. When the file was renamed away or truncated
 * since the last write (logrotate), a "rotated" line starts the new file first. Returns 0, or
 * -1 if the write failed (logged by the caller). NULL audit: no-op returning 0. */
int audit_write(struct audit *a, const struct audit_record *r);
/* Tests only: called by audit_write between its rotation check and its write, where an outside
 * truncation (copytruncate) can land. NULL in sluice. */
extern void (*audit_before_write)(const char *path);
/* Called every AUDIT_SYNC_INTERVAL_MS: the fsync of what was written since the last one
 * (interval), and an anchor when due. */
void audit_tick(struct audit *a);
/* Formats r as one JSON line (with the trailing newline) into out, without the chain fields.
 * Exposed for tests. */
void audit_format(struct sl_buf *out, const struct audit_record *r);
/* The head: the seq of the last line written and its hash in hex (65 bytes with the NUL). */
uint64_t audit_head(const struct audit *a, char hash_hex[65]);
/* ===== the chain's text, shared with audit_verify.c ===== */

#define AUDIT_CHAIN_ID_HEX 32
/* line (without its newline) starts {"seq":N,"prev":"H", (N 1..2^64-1, H 64 lowercase hex):
 * true with *seq and prev[32] set. */
bool audit_parse_link(struct sl_str line, uint64_t *seq, uint8_t prev[32]);
/* The chain id an event line carries ("chain":"<32 hex>"), copied NUL-terminated into out;
 * false when line has none. The key cannot occur inside a string: quotes there are escaped. */
bool audit_line_chain(struct sl_str line, char out[AUDIT_CHAIN_ID_HEX + 1]);
/* Parses an anchor's text (audit_anchor_cb) from line: the text alone (as the store keeps it),
 * or sluice's own log line of it, text or JSON, never an upstream's relayed stderr line: true
 * with chain, *seq and hash[32] set. */
bool audit_parse_anchor(struct sl_str line, char chain[AUDIT_CHAIN_ID_HEX + 1], uint64_t *seq,
                        uint8_t hash[32]);

/* Syncs, anchors the head if anchoring is on, and closes. NULL is a no-op. */
void audit_close(struct audit *a);

#endif /* SL_AUDIT_H */
