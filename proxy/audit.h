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

struct audit_record {
    uint64_t time_ms;           /* unix time in milliseconds */
    const char *principal;
    struct sl_str tool;
    const uint8_t *args_digest; /* 32 bytes, or NULL when there were no parseable arguments */
    const char *decision;       /* "allow" | "deny" | "asked" | "client-accepted" | "declined" |
                                 * "cancelled" | "refused" | "token-issued" | "token-redeemed" |
                                 * "observe" (a read sluice made itself, before asking or after
                                 * an accept) */
    const char *reason;         /* short machine-readable reason, e.g. "policy:tools.write_file" */
    const char *upstream;       /* "ok" | "tool-error" | "error" | "not-forwarded" | "no-response" */
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
