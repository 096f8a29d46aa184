/* notify.h: --notify-url, a webhook told when a page approval is pending (issue 22).
 *
 * One process-wide notifier, as there is one registry of metrics: the gate's call site needs no
 * handle, and a process without --notify-url makes notify_approval_pending a no-op.
 *
 * The event is a JSON object POSTed to the URL:
 *   {"event":"approval-pending","server":S,"tool":T,"caller":PRINCIPAL,"url":PAGE_URL,
 *    "expires_at":"YYYY-MM-DDTHH:MM:SSZ","text":"sluice: ... approve at PAGE_URL before ..."}
 * "text" is what a Slack-compatible incoming webhook shows. The event has no field for the
 * call's arguments: a webhook's channel is read by more people than the approvers, and the page
 * (behind the approvers' authentication) is where the arguments are shown.
 *
 * Fire and forget: notify_approval_pending copies the event and returns at once; the POST runs
 * on the event loop. Each event gets NOTIFY_ATTEMPTS attempts of NOTIFY_ATTEMPT_TIMEOUT_S each,
 * NOTIFY_BACKOFF_MS apart and doubling, retried on a connection error, a timeout, 429 or 5xx;
 * any other status ends it. At most NOTIFY_MAX_ACTIVE POSTs run at once and NOTIFY_MAX_QUEUE
 * events are kept (running or waiting); beyond that an event is dropped with a log line.
 * Every outcome is counted: sluice_notify_total{result="sent|failed|dropped"}. */
#ifndef SL_NOTIFY_H
#define SL_NOTIFY_H

#include <stdint.h>

#include "base.h"

struct event_base;

#define NOTIFY_ATTEMPTS          3
#define NOTIFY_ATTEMPT_TIMEOUT_S 5
#define NOTIFY_BACKOFF_MS        500
#define NOTIFY_MAX_ACTIVE        4
#define NOTIFY_MAX_QUEUE         64
#define NOTIFY_MAX_FIELD         1024   /* bytes kept of each field (a long principal) */

/* What the gate knows when a page approval becomes pending. Never the arguments. */
struct notify_event {
    struct sl_str server;    /* the upstream server's name */
    struct sl_str tool;
    struct sl_str caller;    /* the caller's principal as sluice names it */
    struct sl_str url;       /* the approval page */
    int64_t expires_at;      /* unix seconds */
};

/* Checks a --notify-url value: http:// or https://, a host (an IPv6 one in brackets), no user
 * name or password, no spaces or control bytes. Returns 0, or -1 with err: what is wrong, after
 * scheme://host[:port] of url and never its path or query (often the webhook's secret). err does
 * not name the option: the caller does (the URL may come from $SLUICE_NOTIFY_URL). */
int notify_url_check(const char *url, char *err, size_t errlen);

/* Starts the process-wide notifier (url copied; https verifies the server against the system's
 * trust store, or $SSL_CERT_FILE). Returns 0, or -1 with err (as notify_url_check's). */
int notify_start(struct event_base *base, const char *url, char *err, size_t errlen);

/* Queues the event (copied) for the webhook; returns at once. A no-op without notify_start. */
void notify_approval_pending(const struct notify_event *ev);

/* The same with the signature of session.h's session_page_pending_fn (arg unused), so the gate's
 * hook can point here: env.on_page_pending = notify_on_page_pending. */
void notify_on_page_pending(void *arg, struct sl_str server, struct sl_str tool,
                            struct sl_str caller, struct sl_str url, uint64_t exp);

/* Stops the notifier: events not yet delivered are abandoned (logged). Idempotent. */
void notify_stop(void);

/* The event's JSON body and its "text" (both appended to out). Pure: the unit tests' view. */
void notify_event_json(struct sl_buf *out, const struct notify_event *ev);
void notify_event_text(struct sl_buf *out, const struct notify_event *ev);

#endif /* SL_NOTIFY_H */
