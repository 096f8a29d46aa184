/* metrics.h: process-wide counters for /metrics, in the Prometheus text format (0.0.4).
 *
 * One registry per process, as a Prometheus client library has: the counters describe the
 * process, not a connection. Labels come only from fixed sets or from constant strings in
 * sluice's own code, never from client input, so the number of series stays bounded. */
#ifndef SL_METRICS_H
#define SL_METRICS_H

#include "audit.h"
#include "base.h"

/* An HTTP request on /mcp, by JSON-RPC method ("other" for any method outside the spec's list)
 * and the HTTP status it got. */
void metrics_request(struct sl_str method, int status);
/* A gate decision; the label is the audit journal's name for it (audit_decision_name). */
void metrics_decision(enum audit_decision decision);
void metrics_held(int delta);                   /* calls waiting for a person */
void metrics_upstream_latency(double seconds);  /* request to reply */
/* Why an upstream request failed, the label of sluice_upstream_errors_total. */
enum metrics_upstream_error {
    METRICS_UP_GONE,        /* "gone": the upstream went away with the request pending */
    METRICS_UP_RPC_ERROR,   /* "rpc-error": it answered with a JSON-RPC error */
    METRICS_UP_HTTP_STATUS, /* "http-status": an HTTP upstream answered with a failing status */
    METRICS_UP_UNREACHABLE, /* "unreachable": no HTTP answer at all */
    METRICS_UP_COUNT
};
void metrics_upstream_error(enum metrics_upstream_error kind);
void metrics_reload(bool ok);
/* A tool refused by its pin (pin.h): reason is pin_reason's ("pin-mismatch", "pin-unlisted",
 * "unpinned"), listing whether it was left out of tools/list (else a call was denied). */
void metrics_pin_refusal(const char *reason, bool listing);

/* The end of one --notify-url event (notify.h), the label of sluice_notify_total. */
enum metrics_notify_result { METRICS_NOTIFY_SENT, METRICS_NOTIFY_FAILED, METRICS_NOTIFY_DROPPED };
void metrics_notify(enum metrics_notify_result result);

struct metrics_gauges {
    size_t connections, sessions;
    bool ready;
    bool store_up;               /* the store's last operation reached it */
    uint64_t store_errors;       /* store operations that failed or timed out */
};
void metrics_render(struct sl_buf *out, const struct metrics_gauges *g);

#endif /* SL_METRICS_H */
