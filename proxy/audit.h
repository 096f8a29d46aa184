/* audit.h: the append-only decision journal (--audit FILE), one JSON object per line.
 *
 * A record holds who, what tool, the digest of the arguments, the decision, why, and what the
 * upstream did. It has no field for argument values, so no code path can write them. The decision
 * for an accepted confirmation is "client-accepted", never "approved": sluice sees what the client
 * software answered, not that a person clicked. The file is opened O_APPEND and each line is
 * written with one write(2), so it is on disk as far as the kernel is concerned per line. */
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

/* Opens (creates, mode 0600) path for appending. Returns NULL and fills err on failure. */
struct audit *audit_open(const char *path, char *err, size_t errlen);
/* Writes one line. Returns 0, or -1 if the write failed (logged by the caller). NULL audit: no-op
 * returning 0. */
int audit_write(struct audit *a, const struct audit_record *r);
/* Formats r as one JSON line (with the trailing newline) into out. Exposed for tests. */
void audit_format(struct sl_buf *out, const struct audit_record *r);
void audit_close(struct audit *a); /* NULL is a no-op */

#endif /* SL_AUDIT_H */
