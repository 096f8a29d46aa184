/* session_notice.c: what sluice itself tells a client once, as a log notification: the policy
 * check's findings against the server's tools (issue 21), for a person whose MCP host hides
 * sluice's stderr.
 *
 * "Where the client accepts them", era by era (PROTOCOL.md §1.2, §1.3, §1.5; MCP 2025-11-25
 * and 2026-07-28 server/utilities/logging):
 *   - Only when the capabilities the client was given declare "logging": a server that emits
 *     notifications/message MUST declare it, and sluice passes on the upstream's capabilities
 *     without adding any of its own (it would then have to answer logging/setLevel for a
 *     server that has no logging, and 2026-07-28 says new implementations SHOULD NOT adopt the
 *     deprecated feature).
 *   - Legacy (2025-11-25): after the client's notifications/initialized, unless a
 *     logging/setLevel it sent asked for a level above warning. Carried before the response to
 *     its next request, on that request's stream (over HTTP, the POST's event stream: messages
 *     produced while handling a request SHOULD go there).
 *   - Modern (2026-07-28): only for a request whose _meta names io.modelcontextprotocol/logLevel
 *     at warning or below, on that request's response stream, before the final response (the
 *     only stream the spec lets carry it).
 * Once per client: per session for a legacy client and on stdio; over HTTP a modern request is
 * its own session (2026-07-28 has none), so there once per principal, for up to
 * NOTICE_MAX_PRINCIPALS of them. A new text (a restart or a reload changed the findings) is told
 * again. */
#include "session_priv.h"

#include <stdlib.h>
#include <string.h>

#include "era.h"

#define NOTICE_MAX_PRINCIPALS 4096

static char *notice_text;      /* NULL: nothing to tell */
static uint64_t notice_gen = 1; /* sessions that heard generation g have notice_gen == g */
static char **told;            /* modern principals told this generation */
static size_t ntold;

static void forget_told(void)
{
    for (size_t i = 0; i < ntold; i++)
        free(told[i]);
    free(told);
    told = NULL;
    ntold = 0;
}

void session_set_notice(const char *text)
{
    if (text && *text == '\0')
        text = NULL;
    if (text == NULL ? notice_text == NULL : notice_text && strcmp(text, notice_text) == 0)
        return;
    free(notice_text);
    notice_text = text ? sl_xstrdup(text) : NULL;
    notice_gen++;
    forget_told();
}

void session_notice_free(void)
{
    session_set_notice(NULL);
}

static bool principal_told(const char *p)
{
    for (size_t i = 0; i < ntold; i++)
        if (strcmp(told[i], p) == 0)
            return true;
    return false;
}

static void remember_principal(const char *p)
{
    if (ntold == NOTICE_MAX_PRINCIPALS || principal_told(p))
        return;
    told = sl_xrealloc(told, (ntold + 1) * sizeof(*told));
    told[ntold++] = sl_xstrdup(p);
}

static bool declares_logging(const struct session *s)
{
    const struct json *caps = json_get(upstream_info(session_up(s)), "capabilities");
    const struct json *l = json_get(caps, "logging");
    return l && l->type == JSON_OBJECT;
}

static bool accepts(const struct session *s, const struct jsonrpc_msg *m, bool modern)
{
    if (!declares_logging(s))
        return false;
    if (modern) {
        int r = era_log_rank(json_get(json_get(m->params, "_meta"), META_LOG_LEVEL));
        return r >= 0 && r <= ERA_LOG_WARNING;
    }
    return s->initialized && s->log_level <= ERA_LOG_WARNING;
}

static void send_notice(struct session *s, struct sl_str id)
{
    struct sl_buf b = { 0 };
    sl_buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":"
                    "{\"level\":\"warning\",\"logger\":\"sluice\",\"data\":");
    json_write_string(&b, notice_text, strlen(notice_text));
    sl_buf_puts(&b, "}}");
    session_send(s, id, false, 0, sl_buf_str(&b));
    sl_buf_free(&b);
}

void notice_before_request(struct session *s, const struct jsonrpc_msg *m, struct sl_str id,
                           bool modern)
{
    if (!modern && sl_str_eq_c(m->method, "logging/setLevel")) {
        /* Forwarded to the upstream as well; an invalid level is its to refuse. */
        int r = era_log_rank(json_get(m->params, "level"));
        if (r >= 0)
            s->log_level = (int8_t)r;
    }
    if (notice_text == NULL || s->notice_gen == notice_gen || !accepts(s, m, modern))
        return;
    if (modern && principal_told(s->principal))
        return;
    s->notice_gen = notice_gen;
    if (modern)
        remember_principal(s->principal);
    send_notice(s, id);
}
