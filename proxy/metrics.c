/* metrics.c: fixed tables of counters and their rendering. */
#include "metrics.h"

#include <string.h>

/* With their lengths: every request is counted, so the lookup compares lengths first. */
static const struct sl_str methods[] = {
    SL_STR("initialize"), SL_STR("ping"), SL_STR("server/discover"), SL_STR("tools/list"),
    SL_STR("tools/call"), SL_STR("resources/list"), SL_STR("resources/read"),
    SL_STR("resources/templates/list"), SL_STR("prompts/list"), SL_STR("prompts/get"),
    SL_STR("completion/complete"), SL_STR("logging/setLevel"), SL_STR("notification"),
    SL_STR("response"), SL_STR("other"),
};
static const int statuses[] = { 200, 202, 400, 401, 403, 404, 405, 406, 408, 409, 413,
                                415, 431, 500, 501, 502, 503, 504, 505, 0 };
static const double buckets[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                  0.25, 0.5, 1, 2.5, 5, 10 };

static const char *const upstream_error_names[METRICS_UP_COUNT] = {
    [METRICS_UP_GONE] = "gone",
    [METRICS_UP_RPC_ERROR] = "rpc-error",
    [METRICS_UP_HTTP_STATUS] = "http-status",
    [METRICS_UP_UNREACHABLE] = "unreachable",
};

/* A counter by an enum's value. The series are rendered in the order they were first counted,
 * so order[] remembers it. */
#define NLABELS 32
_Static_assert(AUDIT_DECISION_COUNT <= NLABELS && METRICS_UP_COUNT <= NLABELS,
               "a labelled counter holds every value of its enum");

struct labelled {
    uint64_t n[NLABELS];
    unsigned char order[NLABELS];
    size_t len;
};

static struct {
    uint64_t requests[SL_ARRAY_LEN(methods)][SL_ARRAY_LEN(statuses)];
    struct labelled decisions, upstream_errors;
    int64_t held;
    uint64_t lat_buckets[SL_ARRAY_LEN(buckets)];
    uint64_t lat_count;
    double lat_sum;
    uint64_t reloads_ok, reloads_failed;
    uint64_t pins[3][2];   /* [pin_reasons index][listing] */
    uint64_t notify[3];    /* by enum metrics_notify_result */
} m;

static const char *const pin_reasons[3] = { "pin-mismatch", "pin-unlisted", "unpinned" };

void metrics_request(struct sl_str method, int status)
{
    size_t i = 0, j = 0;
    while (i < SL_ARRAY_LEN(methods) - 1 && !sl_str_eq(method, methods[i]))
        i++;
    while (statuses[j] != 0 && statuses[j] != status)
        j++;
    m.requests[i][j]++;
}

/* v is below its enum's COUNT, checked by the caller. */
static void count(struct labelled *l, unsigned v)
{
    if (l->n[v]++ == 0)
        l->order[l->len++] = (unsigned char)v;
}

void metrics_decision(enum audit_decision decision)
{
    if (audit_decision_name(decision) != NULL) /* AUDIT_NONE has no series */
        count(&m.decisions, decision);
}

void metrics_held(int delta)
{
    m.held += delta;
}

void metrics_upstream_latency(double seconds)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(buckets); i++)
        if (seconds <= buckets[i])
            m.lat_buckets[i]++;
    m.lat_count++;
    m.lat_sum += seconds;
}

void metrics_upstream_error(enum metrics_upstream_error kind)
{
    if ((unsigned)kind < METRICS_UP_COUNT)
        count(&m.upstream_errors, kind);
}

void metrics_reload(bool ok)
{
    if (ok)
        m.reloads_ok++;
    else
        m.reloads_failed++;
}

void metrics_pin_refusal(const char *reason, bool listing)
{
    for (size_t i = 0; i < SL_ARRAY_LEN(pin_reasons); i++)
        if (reason && strcmp(reason, pin_reasons[i]) == 0)
            m.pins[i][listing]++;
}

void metrics_notify(enum metrics_notify_result result)
{
    if ((unsigned)result < SL_ARRAY_LEN(m.notify))
        m.notify[result]++;
}

static void render_notify(struct sl_buf *out)
{
    sl_buf_printf(out, "# HELP sluice_notify_total Approval-pending events for --notify-url, by "
                       "how they ended.\n# TYPE sluice_notify_total counter\n"
                       "sluice_notify_total{result=\"sent\"} %llu\n"
                       "sluice_notify_total{result=\"failed\"} %llu\n"
                       "sluice_notify_total{result=\"dropped\"} %llu\n",
                  (unsigned long long)m.notify[METRICS_NOTIFY_SENT],
                  (unsigned long long)m.notify[METRICS_NOTIFY_FAILED],
                  (unsigned long long)m.notify[METRICS_NOTIFY_DROPPED]);
}

static void render_pins(struct sl_buf *out)
{
    sl_buf_puts(out, "# HELP sluice_pin_refusals_total Tools refused by their pin: calls denied "
                     "and tools left out of tools/list, by reason.\n"
                     "# TYPE sluice_pin_refusals_total counter\n");
    for (size_t i = 0; i < SL_ARRAY_LEN(pin_reasons); i++)
        for (int l = 0; l < 2; l++)
            if (m.pins[i][l])
                sl_buf_printf(out, "sluice_pin_refusals_total{reason=\"%s\",where=\"%s\"} "
                                   "%llu\n", pin_reasons[i], l ? "list" : "call",
                              (unsigned long long)m.pins[i][l]);
}

static const char *decision_label(unsigned v)
{
    return audit_decision_name(v);
}

static const char *upstream_error_label(unsigned v)
{
    return upstream_error_names[v];
}

static void render_labelled(struct sl_buf *out, const char *name, const char *label,
                            const struct labelled *l, const char *(*label_of)(unsigned))
{
    for (size_t i = 0; i < l->len; i++)
        sl_buf_printf(out, "%s{%s=\"%s\"} %llu\n", name, label, label_of(l->order[i]),
                      (unsigned long long)l->n[l->order[i]]);
}

void metrics_render(struct sl_buf *out, const struct metrics_gauges *g)
{
    sl_buf_puts(out, "# HELP sluice_requests_total MCP requests over HTTP by JSON-RPC method "
                     "and HTTP status.\n# TYPE sluice_requests_total counter\n");
    for (size_t i = 0; i < SL_ARRAY_LEN(methods); i++)
        for (size_t j = 0; j < SL_ARRAY_LEN(statuses); j++)
            if (m.requests[i][j] && statuses[j])
                sl_buf_printf(out, "sluice_requests_total{method=\"%s\",status=\"%d\"} %llu\n",
                              methods[i].p, statuses[j], (unsigned long long)m.requests[i][j]);
            else if (m.requests[i][j])
                sl_buf_printf(out, "sluice_requests_total{method=\"%s\",status=\"other\"} %llu\n",
                              methods[i].p, (unsigned long long)m.requests[i][j]);
    sl_buf_puts(out, "# HELP sluice_gate_decisions_total Gate decisions, as the audit journal "
                     "names them.\n# TYPE sluice_gate_decisions_total counter\n");
    render_labelled(out, "sluice_gate_decisions_total", "decision", &m.decisions, decision_label);
    sl_buf_printf(out, "# HELP sluice_held_confirmations Calls waiting for a person's answer.\n"
                       "# TYPE sluice_held_confirmations gauge\nsluice_held_confirmations %lld\n",
                  (long long)m.held);
    sl_buf_puts(out, "# HELP sluice_upstream_latency_seconds Time from a request to the "
                     "upstream to its reply.\n# TYPE sluice_upstream_latency_seconds histogram\n");
    for (size_t i = 0; i < SL_ARRAY_LEN(buckets); i++)
        sl_buf_printf(out, "sluice_upstream_latency_seconds_bucket{le=\"%g\"} %llu\n", buckets[i],
                      (unsigned long long)m.lat_buckets[i]);
    sl_buf_printf(out, "sluice_upstream_latency_seconds_bucket{le=\"+Inf\"} %llu\n"
                       "sluice_upstream_latency_seconds_sum %.6f\n"
                       "sluice_upstream_latency_seconds_count %llu\n",
                  (unsigned long long)m.lat_count, m.lat_sum, (unsigned long long)m.lat_count);
    sl_buf_puts(out, "# HELP sluice_upstream_errors_total Upstream requests that failed, by "
                     "kind.\n# TYPE sluice_upstream_errors_total counter\n");
    render_labelled(out, "sluice_upstream_errors_total", "kind", &m.upstream_errors,
                    upstream_error_label);
    render_pins(out);
    render_notify(out);
    sl_buf_printf(out, "# HELP sluice_policy_reloads_total Policy reloads (SIGHUP) by result.\n"
                       "# TYPE sluice_policy_reloads_total counter\n"
                       "sluice_policy_reloads_total{result=\"ok\"} %llu\n"
                       "sluice_policy_reloads_total{result=\"rejected\"} %llu\n",
                  (unsigned long long)m.reloads_ok, (unsigned long long)m.reloads_failed);
    sl_buf_printf(out, "# HELP sluice_connections Open client connections.\n"
                       "# TYPE sluice_connections gauge\nsluice_connections %zu\n"
                       "# HELP sluice_sessions Open legacy MCP sessions.\n"
                       "# TYPE sluice_sessions gauge\nsluice_sessions %zu\n"
                       "# HELP sluice_ready 1 when the upstream is ready and a policy is loaded.\n"
                       "# TYPE sluice_ready gauge\nsluice_ready %d\n"
                       "# HELP sluice_store_up 1 when the store's last operation reached it.\n"
                       "# TYPE sluice_store_up gauge\nsluice_store_up %d\n"
                       "# HELP sluice_store_errors_total Store operations that failed or timed "
                       "out.\n# TYPE sluice_store_errors_total counter\n"
                       "sluice_store_errors_total %llu\n",
                  g->connections, g->sessions, g->ready ? 1 : 0, g->store_up ? 1 : 0,
                  (unsigned long long)g->store_errors);
}
