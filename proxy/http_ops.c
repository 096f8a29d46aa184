/* http_ops.c: the operational endpoints, GET only: /healthz (the process answers), /readyz (it
 * would take work: upstream ready, a policy loaded, not draining), /metrics (Prometheus text). */
#include "http_priv.h"

#include "store.h"

#include "metrics.h"

void ops_handle(struct conn *c, const struct http1_head *h)
{
    struct front_http *fh = c->fh;
    if (!sl_str_eq_c(h->method, "GET"))
        return conn_respond_status(c, 405, "Allow: GET\r\n");
    if (sl_str_eq_c(h->path, "/healthz"))
        return conn_respond(c, 200, "text/plain", "ok\n", 3, NULL);
    if (sl_str_eq_c(h->path, "/readyz")) {
        bool ready = http_serving(fh) && !fh->draining && fh->env->policy != NULL;
        return ready ? conn_respond(c, 200, "text/plain", "ready\n", 6, NULL)
                     : conn_respond(c, 503, "text/plain", "not ready\n", 10, NULL);
    }
    struct sl_buf b = { 0 };
    struct metrics_gauges g = { .connections = fh->nconns,
                                .sessions = http_sessions_count(fh->sessions),
                                .ready = http_serving(fh) && !fh->draining,
                                .store_up = fh->env->store && store_is_up(fh->env->store),
                                .store_errors = fh->env->store ? store_errors(fh->env->store) : 0 };
    metrics_render(&b, &g);
    conn_respond(c, 200, "text/plain; version=0.0.4", b.p, b.len, NULL);
    sl_buf_free(&b);
}
