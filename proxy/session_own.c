/* session_own.c: a session with an upstream of its own.
 *
 * A handshake-era server asks its client things during a call (elicitation, sampling, roots),
 * and answers to one client only: the one that initialized the session. One upstream session
 * shared by every HTTP client cannot route those questions, so sluice initializes it declaring
 * nothing. With an opener in session_env (an HTTP upstream of that era, or --child-per-session
 * for a child), each legacy HTTP client instead gets an upstream of its own, opened at its
 * initialize and initialized with its capabilities and clientInfo: the server's questions then
 * reach that client (session_relay.c), and nothing of one client ever crosses to another.
 *
 *   client initialize -> open (stash the initialize) -> upstream era -> initialize as the
 *   client -> ready -> the stashed initialize is answered from this upstream's result
 *
 * A 2026-07-28 client's call gets one the same way (own_open_call, from session_park.c), when
 * it is forwarded and its envelope declares what the server may ask: initialized with the
 * envelope's capabilities and clientInfo, it lives as long as the call (parked rounds included)
 * and is never opened again.
 *
 * An upstream that goes away while its session lives is opened again after 1 s, 2 s ... 30 s
 * (per session: one crashing child does not slow the others; the delay starts over once one
 * served UPSTREAM_STABLE_S, as the shared child's does); what was held or in flight is
 * refused, and the questions it asked the client are cancelled there (an answer to one would
 * otherwise reach the new upstream, which never asked it). The session's end ends its
 * upstream: a child gets its stdin closed, then SIGTERM and SIGKILL; the record stays on the
 * dying list until the upstream is gone, and counts against --max-children until then: a child
 * that ignores its stdin's end lives up to 2 s more, and a client that opens and ends sessions
 * in a loop would otherwise have any number of them running at once. One that is given up (it
 * went before it ever served, or it ran one call) stops counting once it has exited, though its
 * session lives on: no process runs for it, and none will. */
#include "session_priv.h"

#include <string.h>

#include "log.h"

#define OWN_GRACE_MS 1000
#define OWN_BACKOFF_MAX_S 30
#define OWN_READY_S 10          /* at most this long from its start to its handshake's end */

struct own {
    struct session *s;          /* NULL once the session ended: the upstream is dying */
    struct upstream *up;
    const struct session_opener *opener;
    struct sl_arena *arena;     /* the client's capabilities and clientInfo, for a restart */
    struct json *caps, *client_info;
    struct event *restart_ev;
    struct event *ready_ev;     /* bounds its start: a server that never answers is let go */
    struct event *dead_ev;      /* frees it from the loop; its own, so freeing it cancels this */
    int backoff_s;
    uint64_t ready_us;          /* when the current upstream became ready (monotonic); 0: not */
    uint64_t restart_us;        /* when the next is opened (restart_ev), for the error meanwhile */
    bool ready_once;            /* it has served: worth opening again when it goes */
    bool went_unready;          /* the last one went before it was ready */
    bool exited;                /* the upstream is gone (its on_exit ran) */
    bool late;                  /* ended by on_ready_late */
    bool per_call;              /* one modern call's (session_park.c): never opened again */
    bool given_up;              /* exited and never opened again: no longer counted */
    struct own *prev, *next;    /* every own upstream, live or dying */
};

static struct own *owns;
static size_t nowns;            /* owns, live or dying (until reaped), but not given up: what
                                 * --max-children counts */
static size_t nlive;            /* of those, the ones whose session lives */

static void own_unlink_free(struct own *o)
{
    if (!o->given_up)
        nowns--;
    if (o->prev)
        o->prev->next = o->next;
    else
        owns = o->next;
    if (o->next)
        o->next->prev = o->prev;
    if (o->restart_ev)
        event_free(o->restart_ev);
    if (o->ready_ev)
        event_free(o->ready_ev);
    if (o->dead_ev)
        event_free(o->dead_ev); /* safe from inside its own callback (on_dead) */
    upstream_free(o->up);
    sl_arena_free(o->arena);
    free(o);
}

/* ===== the upstream's events ===== */

static void own_on_era(struct upstream *up, void *arg)
{
    struct own *o = arg;
    upstream_initialize(up, o->caps, o->client_info); /* no-op for a modern server */
}

/* The front's requests that wait for this upstream (session_own_coming) go on: it is ready, or
 * none will come. A session whose client is gone (its approved calls still run) has no front
 * any more (io NULL): nobody waits there. */
static void own_settled(struct own *o)
{
    if (o->s && o->s->io && o->s->io->own_settled)
        o->s->io->own_settled(o->s->io_arg);
}

static void own_on_ready(struct upstream *up, void *arg)
{
    struct own *o = arg;
    (void)up;
    o->ready_once = true;
    o->ready_us = sl_mono_us();
    evtimer_del(o->ready_ev);
    own_settled(o); /* first: the session may end in session_upstream_ready */
    if (o->s)
        session_upstream_ready(o->s);
}

static void own_on_request(struct upstream *up, struct jsonrpc_msg *msg,
                           const struct up_request *on, void *arg)
{
    struct own *o = arg;
    if (o->s) {
        session_upstream_request(o->s, msg, on);
        return;
    }
    upstream_refuse(up, msg, "the client of this session has left");
}

static void own_on_notification(struct upstream *up, struct jsonrpc_msg *msg, void *arg)
{
    struct own *o = arg;
    (void)up;
    if (o->s)
        session_upstream_notification(o->s, msg);
}

static void own_on_drained(struct upstream *up, void *arg)
{
    struct own *o = arg;
    (void)up;
    if (o->s)
        session_update_interest(o->s);
}

static void on_dead(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    own_unlink_free(arg);
}

static void on_restart(evutil_socket_t fd, short what, void *arg);

/* Its upstream exited and none comes after it: its place under --max-children is free now, not
 * when its session ends (a session with its GET stream open never idles out). The record stays
 * with the session, to say why its requests are refused. */
static void own_give_up(struct own *o)
{
    o->given_up = true;
    nowns--;
    nlive--;
}

static void own_on_exit(struct upstream *up, const char *why, void *arg)
{
    struct own *o = arg;
    (void)up;
    o->exited = true;
    /* One that served a while comes back after 1 s again; one that gets ready and dies on its
     * first call is not opened again every second for ever. */
    uint64_t now = sl_mono_us();
    if (o->ready_us != 0 && now - o->ready_us >= (uint64_t)UPSTREAM_STABLE_S * 1000000u)
        o->backoff_s = 0;
    o->went_unready = o->ready_us == 0;
    o->ready_us = 0;
    if (o->s == NULL) { /* freed from the loop: never inside the upstream's own callback */
        event_active(o->dead_ev, EV_TIMEOUT, 1);
        return;
    }
    session_refuse_held(o->s, "upstream-gone",
                        "The server stopped before the person answered. The call was not run.");
    relayed_void_upstream(o->s, "the server that asked this stopped");
    fwd_fail_unsent(o->s, o->late ? "cannot reach the upstream server: the session sluice opened "
                                     "there for this call did not start in time" : NULL);
    if (!o->ready_once || o->per_call)
        own_give_up(o);
    if (!o->ready_once) { /* it never served: opening it again would fail the same way */
        sl_error("the %s of a %s %s before it was ready", o->opener->what,
                 o->per_call ? "call" : "session", why);
        own_settled(o);
        return;
    }
    if (o->per_call)
        return; /* the call it ran has its answer (an error); the session ends with it */
    o->backoff_s = o->backoff_s ? (o->backoff_s * 2 > OWN_BACKOFF_MAX_S ? OWN_BACKOFF_MAX_S
                                                                          : o->backoff_s * 2)
                                : 1;
    sl_error("the %s of a session %s; opening it again in %d s", o->opener->what, why,
             o->backoff_s);
    o->restart_us = now + (uint64_t)o->backoff_s * 1000000u;
    struct timeval tv = { o->backoff_s, 0 };
    evtimer_add(o->restart_ev, &tv);
}

/* Started OWN_READY_S ago and still not ready (an HTTP server gone since, which an upstream
 * would otherwise probe for ever, or a child stuck in its handshake): ended, and what waits for
 * it is answered by own_on_exit. */
static void on_ready_late(evutil_socket_t fd, short what, void *arg)
{
    struct own *o = arg;
    (void)fd, (void)what;
    if (o->exited || upstream_ready(o->up))
        return;
    sl_error("the %s of a %s is not ready after %d s; it is let go", o->opener->what,
             o->per_call ? "call" : "session", OWN_READY_S);
    o->late = true;
    upstream_terminate(o->up, 0);
}

static void arm_ready(struct own *o)
{
    struct timeval tv = { OWN_READY_S, 0 };
    evtimer_add(o->ready_ev, &tv);
}

static const struct upstream_cbs own_cbs = {
    .on_era = own_on_era,
    .on_ready = own_on_ready,
    .on_request = own_on_request,
    .on_notification = own_on_notification,
    .on_exit = own_on_exit,
    .on_drained = own_on_drained,
};

/* The upstream it had is gone: a new one, initialized as the client did the first. The old one
 * stays until then, so that the session always has an upstream to find gone. */
static void on_restart(evutil_socket_t fd, short what, void *arg)
{
    struct own *o = arg;
    (void)fd, (void)what;
    char err[300];
    struct upstream *up = o->opener->open(o->opener->arg, &own_cbs, o, err, sizeof(err));
    if (up == NULL) {
        sl_error("cannot open the %s of a session again: %s", o->opener->what, err);
        own_on_exit(o->up, "could not be opened", o);
        return;
    }
    upstream_free(o->up);
    o->up = up;
    o->exited = false;
    o->s->own_up = up;
    arm_ready(o);
}

/* ===== for session.c ===== */

/* Copies what the client said of itself: the capabilities a server may use (its questions
 * come back to this client) and its clientInfo. */
static void own_keep_client(struct own *o, const struct json *caps, const struct json *info)
{
    static const char *const keep[] = { "elicitation", "sampling", "roots" };
    char err[64];
    struct sl_buf b = { 0 };
    o->arena = sl_arena_new_small();
    o->caps = json_new_object(o->arena);
    for (size_t i = 0; i < SL_ARRAY_LEN(keep); i++) {
        const struct json *v = json_get(caps, keep[i]);
        struct json *copy;
        if (v == NULL || v->type != JSON_OBJECT)
            continue;
        b.len = 0;
        json_write(&b, v);
        if (json_parse(b.p, b.len, o->arena, &copy, err, sizeof(err)) == 0)
            json_set(o->arena, o->caps, keep[i], copy);
    }
    if (info && info->type == JSON_OBJECT) {
        b.len = 0;
        json_write(&b, info);
        if (json_parse(b.p, b.len, o->arena, &o->client_info, err, sizeof(err)) != 0)
            o->client_info = NULL;
    }
    sl_buf_free(&b);
}

static int open_as(struct session *s, const struct json *caps, const struct json *info,
                   bool per_call, char *err, size_t errlen)
{
    const struct session_opener *op = s->env->opener;
    struct own *o = sl_xcalloc(1, sizeof(*o));
    o->s = s;
    o->opener = op;
    o->per_call = per_call;
    own_keep_client(o, caps, info);
    o->up = op->open(op->arg, &own_cbs, o, err, errlen);
    if (o->up == NULL) {
        sl_arena_free(o->arena);
        free(o);
        return -1;
    }
    o->restart_ev = evtimer_new(op->base, on_restart, o);
    o->ready_ev = evtimer_new(op->base, on_ready_late, o);
    o->dead_ev = evtimer_new(op->base, on_dead, o);
    arm_ready(o);
    o->next = owns;
    if (owns)
        owns->prev = o;
    owns = o;
    nowns++;
    nlive++;
    s->own = o;
    s->own_up = o->up;
    return 0;
}

int own_open(struct session *s, const struct jsonrpc_msg *init, char *err, size_t errlen)
{
    return open_as(s, json_get(init->params, "capabilities"), json_get(init->params, "clientInfo"),
                   false, err, errlen);
}

int own_open_call(struct session *s, const struct json *caps, const struct json *client_info,
                  char *err, size_t errlen)
{
    return open_as(s, caps, client_info, true, err, errlen);
}

void own_release(struct session *s)
{
    struct own *o = s->own;
    if (o == NULL)
        return;
    s->own = NULL;
    s->own_up = NULL;
    o->s = NULL;
    if (!o->given_up)
        nlive--;
    evtimer_del(o->restart_ev);
    evtimer_del(o->ready_ev);
    if (o->exited)
        event_active(o->dead_ev, EV_TIMEOUT, 1);
    else
        upstream_terminate(o->up, OWN_GRACE_MS); /* its on_exit frees it */
}

/* ===== for main and the fronts ===== */

bool session_has_own(const struct session *s)
{
    return s->own != NULL && !s->own->given_up;
}

bool session_own_coming(const struct session *s)
{
    const struct own *o = s->own;
    if (o == NULL || o->per_call)
        return false;
    if (o->exited)
        return evtimer_pending(o->restart_ev, NULL);
    /* A deaf child is stopped (up_stdio.c), and opened again as any that went after it served. */
    return !upstream_ready(o->up) || upstream_deaf(o->up);
}

bool own_takes_later(const struct session *s)
{
    const struct own *o = s->own;
    if (o->exited)
        return evtimer_pending(o->restart_ev, NULL);
    /* a deaf one is stopped; what waits for its next one is not sent to it first */
    return !upstream_ready(o->up) && !upstream_deaf(o->up);
}

const char *own_unready_text(const struct session *s, char *buf, size_t len)
{
    const struct own *o = s->own;
    if (upstream_deaf(o->up))
        return "upstream not ready: the server of this session stopped reading its input and "
               "is being started again";
    if (!o->exited)
        return "upstream not ready: the server of this session is starting";
    const char *when = o->went_unready ? " before it was ready" : "";
    if (!evtimer_pending(o->restart_ev, NULL)) { /* it never served: it is not opened again */
        snprintf(buf, len, "upstream not ready: the server of this session stopped%s and is not "
                 "started again; initialize a new session", when);
        return buf;
    }
    uint64_t now = sl_mono_us();
    uint64_t left = o->restart_us > now ? o->restart_us - now : 0;
    unsigned long secs = (unsigned long)((left + 999999u) / 1000000u);
    snprintf(buf, len, "upstream not ready: the server of this session stopped%s; it is started "
             "again in %lu s", when, secs ? secs : 1);
    return buf;
}

bool session_own_full(const struct session_env *env)
{
    return env->opener && env->opener->max && nowns >= env->opener->max;
}

size_t session_own_count(void)
{
    return nowns;
}

size_t session_own_dying(void)
{
    return nowns - nlive;
}

void session_own_free_all(void)
{
    /* The loop has ended. Its last pass (upstream_base_free) must not run a callback of theirs:
     * freeing each one's events cancels what was scheduled (an on_dead was, in CI). */
    while (owns) {
        struct own *o = owns;
        if (o->s) {
            o->s->own = NULL;
            o->s->own_up = NULL;
            if (!o->given_up)
                nlive--;
        }
        own_unlink_free(o);
    }
}
