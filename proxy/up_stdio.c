/* up_stdio.c: a child upstream on pipes: fork and exec, its stderr, its end (reaping, SIGTERM and
 * SIGKILL to its process group) and the newline-framed channel to it. */
#include "up_stdio.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "chan.h"
#include "demo.h"
#include "jsonrpc.h"
#include "log.h"

/* The error a call gets when its reply is over SL_MAX_MESSAGE: the words up_http.c uses. */
#define UP_STDIO_TOO_LARGE "the upstream server's reply is too large"

/* How long a child that stopped reading its stdin has to finish writing before SIGTERM. */
#define CHILD_DEAF_GRACE_MS 2000

struct up_stdio {
    struct up_transport tr;      /* first: the ops get this pointer */
    struct up_transport_cbs cbs;
    void *arg;
    struct chan *ch;
    struct bufferevent *err_bev; /* the child's stderr, when logs are JSON */
    pid_t pid;                   /* 0 once reaped */
    pid_t pgid;                  /* the child's process group, kept after the reap */
    int status;                  /* wait status once reaped */
    bool output_ended;
    bool exit_reported;
    struct event *sigchld_ev, *term_ev, *kill_ev, *reap_grace_ev;
    int grace_ms;
};

static struct up_stdio *stdio_of(struct up_transport *t)
{
    return (struct up_stdio *)t;
}

static void stdio_stop(struct up_transport *t, int grace_ms);

/* ===== the child's end ===== */

static void describe_status(int status, char *buf, size_t len)
{
    if (WIFEXITED(status))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(buf, len, "ended");
}

/* on_exit waits for both ends: the output closed and the process reaped. */
static void maybe_report_exit(struct up_stdio *c)
{
    if (!c->output_ended || c->pid != 0 || c->exit_reported)
        return;
    c->exit_reported = true;
    event_del(c->term_ev);
    event_del(c->kill_ev);
    event_del(c->reap_grace_ev);
    char why[128];
    describe_status(c->status, why, sizeof(why));
    c->cbs.on_exit(why, c->arg);
}

static void end_output(struct up_stdio *c)
{
    if (c->output_ended)
        return;
    c->output_ended = true;
    chan_stop_reading(c->ch);
    c->cbs.on_closed("the upstream server exited", c->arg);
    if (c->pid != 0 && !evtimer_pending(c->term_ev, NULL) && !evtimer_pending(c->kill_ev, NULL))
        stdio_stop(&c->tr, 500);
    maybe_report_exit(c);
}

static void on_reap_grace(evutil_socket_t fd, short what, void *arg)
{
    struct up_stdio *c = arg;
    (void)fd;
    (void)what;
    /* The child is gone but something it started still holds its stdout: end it all. */
    kill(-c->pgid, SIGKILL);
    end_output(c);
}

static void on_sigchld(evutil_socket_t fd, short what, void *arg)
{
    struct up_stdio *c = arg;
    (void)fd;
    (void)what;
    if (c->pid == 0)
        return;
    int status;
    pid_t r = waitpid(c->pid, &status, WNOHANG);
    if (r != c->pid)
        return;
    c->pid = 0;
    c->status = status;
    if (!c->output_ended) {
        struct timeval tv = { 0, 300000 };
        evtimer_add(c->reap_grace_ev, &tv);
    }
    maybe_report_exit(c);
}

static void on_term(evutil_socket_t fd, short what, void *arg)
{
    struct up_stdio *c = arg;
    (void)fd;
    (void)what;
    if (c->pid == 0)
        return;
    sl_debug("sending SIGTERM to the upstream");
    kill(-c->pgid, SIGTERM);
    struct timeval tv = { c->grace_ms / 1000, (c->grace_ms % 1000) * 1000 };
    evtimer_add(c->kill_ev, &tv);
}

static void on_kill(evutil_socket_t fd, short what, void *arg)
{
    struct up_stdio *c = arg;
    (void)fd;
    (void)what;
    if (c->pgid > 0)
        kill(-c->pgid, SIGKILL);
    end_output(c);
}

/* ===== the channel to the child ===== */

static void on_child_line(struct chan *ch, struct sl_str line, void *arg)
{
    struct up_stdio *c = arg;
    (void)ch;
    c->cbs.on_message(line, NULL, c->arg);
}

/* A request of the server's own over SL_MAX_MESSAGE (an elicitation, a sampling request with a
 * large context) never reaches a client, so nobody would answer it: the server would wait for
 * ever, or its own timeout, on a question nobody saw. When the line's ends show it is a request
 * and which id it has (jsonrpc_cut_request_id), the server is answered at once with the error a
 * client's message too large gets (session_input_oversize), under its id. */
static bool refuse_request(struct up_stdio *c, struct sl_str head, struct sl_str tail)
{
    struct sl_buf id = { 0 }, b = { 0 };
    bool known = jsonrpc_cut_request_id(head, tail, &id);
    if (known) {
        sl_warn("upstream sent a request over %u bytes (id %.*s); dropped, and the server is "
                "answered with an error", SL_MAX_MESSAGE, (int)id.len, id.p);
        jsonrpc_write_error(&b, sl_buf_str(&id), JSONRPC_PARSE_ERROR,
                            "Parse error: message too large", NULL);
        chan_send(c->ch, sl_buf_str(&b));
    }
    sl_buf_free(&id);
    sl_buf_free(&b);
    return known;
}

/* A line over SL_MAX_MESSAGE is dropped whole (nothing of it reaches a client), and reading
 * goes on at the next line, so other calls' replies still come. When its first and last bytes
 * show it is a response and which request it answers (jsonrpc_cut_response_id), that call fails
 * now with a JSON-RPC error, as a reply too large fails over HTTP (up_http.c), instead of
 * waiting for --upstream-timeout. When they do not (its id is in the middle, the id is not one
 * of ours, or it is the server's own request: refuse_request), nothing is failed on a guess:
 * the call fails at --upstream-timeout. The error is made here as the child's answer (an
 * answer it gave, unusable): the child is there, so it is no outage. */
static void on_child_oversize(struct chan *ch, struct sl_str head, struct sl_str tail, void *arg)
{
    struct up_stdio *c = arg;
    (void)ch;
    uint64_t id;
    if (refuse_request(c, head, tail))
        return;
    if (!jsonrpc_cut_response_id(head, tail, &id)) {
        sl_warn("upstream sent a message over %u bytes; dropped (not known as a reply to a "
                "request: nothing fails now)", SL_MAX_MESSAGE);
        return;
    }
    sl_warn("upstream sent a reply over %u bytes to request %" PRIu64 "; dropped, and the call "
            "fails", SL_MAX_MESSAGE, id);
    char idtext[21];
    size_t n = sl_u64_dec(idtext, id);
    struct sl_buf b = { 0 };
    jsonrpc_write_error(&b, (struct sl_str){ idtext, n }, JSONRPC_INTERNAL_ERROR,
                        UP_STDIO_TOO_LARGE, NULL);
    c->cbs.on_message(sl_buf_str(&b), NULL, c->arg);
    sl_buf_free(&b);
}

static void on_child_eof(struct chan *ch, const char *why, void *arg)
{
    (void)ch;
    sl_debug("upstream output ended: %s", why);
    end_output(arg);
}

static void on_child_drained(struct chan *ch, void *arg)
{
    struct up_stdio *c = arg;
    (void)ch;
    c->cbs.on_drained(c->arg);
}

static void stdio_stop(struct up_transport *t, int grace_ms);

/* The child closed its stdin, or exited, while sluice wrote to it. What it wrote before is
 * still in the pipe: an answer to a call that ran (an approved one, maybe) is read to the end
 * of its stdout, not lost as "exited", which would have the person approve it again. It takes
 * no more requests (upstream.c refuses them now), so it is stopped as at shutdown. */
static void on_child_write_closed(struct chan *ch, void *arg)
{
    struct up_stdio *c = arg;
    (void)ch;
    c->cbs.on_deaf(c->arg);
    if (evtimer_pending(c->term_ev, NULL) || evtimer_pending(c->kill_ev, NULL))
        return; /* already being stopped: not put off */
    sl_warn("the upstream server stopped reading its stdin; what it wrote is still read, and it "
            "is stopped");
    stdio_stop(&c->tr, CHILD_DEAF_GRACE_MS);
}

static const struct chan_cbs child_chan_cbs = {
    .on_line = on_child_line,
    .on_oversize = on_child_oversize,
    .on_eof = on_child_eof,
    .on_drained = on_child_drained,
    .on_write_closed = on_child_write_closed,
};

/* ===== the child's stderr, with JSON logs ===== */

#define CHILD_LINE_MAX 8192 /* a longer stderr line is logged in pieces */

static void on_child_stderr(struct bufferevent *bev, void *arg)
{
    (void)arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    for (;;) {
        struct evbuffer_ptr eol = evbuffer_search_eol(in, NULL, NULL, EVBUFFER_EOL_LF);
        size_t avail = evbuffer_get_length(in);
        size_t n = eol.pos >= 0 ? (size_t)eol.pos : avail;
        if (eol.pos < 0 && avail < CHILD_LINE_MAX)
            return;
        if (n > CHILD_LINE_MAX)
            n = CHILD_LINE_MAX;
        const char *p = (const char *)evbuffer_pullup(in, (ssize_t)n);
        size_t ll = n && p[n - 1] == '\r' ? n - 1 : n;
        sl_log_child(p, ll);
        evbuffer_drain(in, n);
        if (eol.pos >= 0 && (size_t)eol.pos == n)
            evbuffer_drain(in, 1);
    }
}

static void on_child_stderr_end(struct bufferevent *bev, short what, void *arg)
{
    struct up_stdio *c = arg;
    (void)what;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t n = evbuffer_get_length(in);
    if (n)
        sl_log_child((const char *)evbuffer_pullup(in, -1), n);
    bufferevent_free(bev);
    c->err_bev = NULL;
}

/* ===== spawning ===== */

/* The child's environment: sluice's own, without any SLUICE_* variable. Those hold sluice's
 * secrets (SLUICE_STATE_KEY, SLUICE_UPSTREAM_AUTHORIZATION, ...) and the upstream is the very
 * program the gate distrusts: a tool that prints its environment would hand the key that mints
 * approvals to the model. Made before the fork (no allocation in the child); the strings are
 * environ's, the array is the caller's to free. */
static char **child_environ(void)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = sl_xcalloc(n + 1, sizeof(*env));
    size_t j = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "SLUICE_", 7) != 0)
            env[j++] = environ[i];
    env[j] = NULL;
    return env;
}

/* The child gets its stdin, stdout and stderr and nothing else. sluice's own files are opened
 * O_CLOEXEC, but sockets that libraries make are not: hiredis's connection to the store (already
 * past AUTH: the child could write a page's decision or forget a spent nonce), a webhook's, a
 * client's. The upstream is the program the gate distrusts. The demo is not exec'd at all. */
static void close_inherited(void)
{
    if (close_range(3, ~0U, 0) == 0)
        return;
    struct rlimit rl;
    int max = 65536;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536)
        max = (int)rl.rlim_cur;
    for (int fd = 3; fd < max; fd++)
        close(fd);
}

static void child_exec(char *const argv[], char *const envp[], int in_fd, int out_fd,
                       int err_fd, pid_t parent)
{
    setpgid(0, 0);
    /* Die with sluice, however sluice dies (SIGKILL included). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGXFSZ, SIG_DFL); /* ignored for the journal (main.c), not for the upstream */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (dup2(in_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
        (err_fd >= 0 && dup2(err_fd, STDERR_FILENO) < 0))
        _exit(127);
    close_inherited();
    if (argv == NULL)
        _exit(demo_upstream_run(STDIN_FILENO, STDOUT_FILENO) == 0 ? 0 : 1);
    execvpe(argv[0], argv, envp);
    char msg[512];
    int n = snprintf(msg, sizeof(msg), "sluice: error: cannot run upstream \"%s\": %s\n", argv[0],
                     strerror(errno));
    if (n > 0 && write(STDERR_FILENO, msg, (size_t)n) < 0)
        _exit(127);
    _exit(127);
}

/* ===== the ops ===== */

static void stdio_send(struct up_transport *t, const struct up_msg *m)
{
    chan_send(stdio_of(t)->ch, m->line);
}

/* A child hears of a cancellation only through notifications/cancelled. */
static bool stdio_cancel(struct up_transport *t, const char *id, bool modern)
{
    (void)t;
    (void)id;
    (void)modern;
    return false;
}

/* Pipes carry no headers: the version lives in the messages alone. */
static void stdio_set_version(struct up_transport *t, const char *version)
{
    (void)t;
    (void)version;
}

static void stdio_stop(struct up_transport *t, int grace_ms)
{
    struct up_stdio *c = stdio_of(t);
    chan_close_write(c->ch); /* servers SHOULD exit on stdin EOF (PROTOCOL.md §5.1) */
    if (c->pid == 0)
        return;
    c->grace_ms = grace_ms > 0 ? grace_ms : 1;
    event_del(c->term_ev);
    event_del(c->kill_ev);
    struct timeval tv = { c->grace_ms / 1000, (c->grace_ms % 1000) * 1000 };
    evtimer_add(c->term_ev, &tv);
}

static size_t stdio_out_len(const struct up_transport *t)
{
    return chan_out_len(((const struct up_stdio *)t)->ch);
}

static void stdio_pause(struct up_transport *t, bool paused)
{
    chan_pause(stdio_of(t)->ch, paused);
}

static void stdio_free(struct up_transport *t)
{
    struct up_stdio *c = stdio_of(t);
    if (c->pid != 0) {
        kill(-c->pgid, SIGKILL);
        waitpid(c->pid, NULL, 0);
    }
    chan_free(c->ch);
    if (c->err_bev) {
        on_child_stderr(c->err_bev, c); /* what it wrote before it went */
        on_child_stderr_end(c->err_bev, 0, c);
    }
    event_free(c->sigchld_ev);
    event_free(c->term_ev);
    event_free(c->kill_ev);
    event_free(c->reap_grace_ev);
    free(c);
}

static const struct up_transport_ops stdio_ops = {
    .send = stdio_send,
    .cancel = stdio_cancel,
    .set_version = stdio_set_version,
    .stop = stdio_stop,
    .out_len = stdio_out_len,
    .pause = stdio_pause,
    .free = stdio_free,
};

struct up_transport *up_stdio_spawn(struct event_base *base, char *const argv[],
                                    const struct up_transport_cbs *cbs, void *arg, char *err,
                                    size_t errlen)
{
    int to_child[2], from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return NULL;
    }
    if (pipe2(from_child, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        close(to_child[0]);
        close(to_child[1]);
        return NULL;
    }
    /* With JSON logs, the child's stderr comes through a pipe and leaves as JSON lines too. */
    int err_pipe[2] = { -1, -1 };
    if (sl_log_json() && pipe2(err_pipe, O_CLOEXEC) != 0)
        err_pipe[0] = err_pipe[1] = -1;
    struct up_stdio *c = sl_xcalloc(1, sizeof(*c));
    c->tr.ops = &stdio_ops;
    c->cbs = *cbs;
    c->arg = arg;
    /* SIGCHLD is watched before the fork so a child that dies at once is still reaped. */
    c->sigchld_ev = evsignal_new(base, SIGCHLD, on_sigchld, c);
    event_add(c->sigchld_ev, NULL);
    pid_t parent = getpid();
    char **envp = child_environ();
    pid_t pid = fork();
    if (pid != 0)
        free(envp);
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        event_free(c->sigchld_ev);
        free(c);
        close(to_child[0]); close(to_child[1]); close(from_child[0]); close(from_child[1]);
        if (err_pipe[0] >= 0) {
            close(err_pipe[0]);
            close(err_pipe[1]);
        }
        return NULL;
    }
    if (pid == 0)
        child_exec(argv, envp, to_child[0], from_child[1], err_pipe[1], parent);
    setpgid(pid, pid); /* also here: no race with a kill(-pgid) before the child ran */
    close(to_child[0]);
    close(from_child[1]);
    if (err_pipe[1] >= 0) {
        close(err_pipe[1]);
        c->err_bev = bufferevent_socket_new(base, err_pipe[0], BEV_OPT_CLOSE_ON_FREE);
        bufferevent_setcb(c->err_bev, on_child_stderr, NULL, on_child_stderr_end, c);
        bufferevent_enable(c->err_bev, EV_READ);
    }
    c->pid = c->pgid = pid;
    c->ch = chan_new(base, from_child[0], to_child[1], &child_chan_cbs, c);
    c->term_ev = evtimer_new(base, on_term, c);
    c->kill_ev = evtimer_new(base, on_kill, c);
    c->reap_grace_ev = evtimer_new(base, on_reap_grace, c);
    sl_info("started upstream %s (pid %d)", argv ? argv[0] : "(built-in demo)", (int)pid);
    return &c->tr;
}
