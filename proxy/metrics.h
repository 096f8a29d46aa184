/* metrics.h: process-wide counters for /metrics, in the Prometheus text format (0.0.4).
 *
 * One registry per process, as a Prometheus client library has: the counters describe the
 * process, not a connection. Labels come only from fixed sets or from constant strings in
 * sluice's own code, never from client input, so the number of series stays bounded. */
#ifndef SL_METRICS_H
#define SL_METRICS_H

#include "base.h"

/* An HTTP request on /mcp, by JSON-RPC method ("other" for any method outside the spec's list)
 * and the HTTP status it got. */
void metrics_request(struct sl_str method, int status);
/* A gate decision as the audit journal names it (a constant string). */
void metrics_decision(const char *decision);
void metrics_held(int delta);                   /* calls waiting for a person */
void metrics_upstream_latency(double seconds);  /* request to reply */
void metrics_upstream_error(const char *kind);  /* a constant string */
void metrics_reload(bool ok);

struct metrics_gauges {
    size_t connections, sessions;
    bool ready;
};
void metrics_render(struct sl_buf *out, const struct metrics_gauges *g);

#endif /* SL_METRICS_H */
