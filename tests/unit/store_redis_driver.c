/* store_redis_driver.c: drives the Redis engine (proxy/store_redis.c) against a real
 * redis-server that it starts, stops, stalls (SIGSTOP) and restarts empty. Not a registered unit
 * test (its name does not start with test_): it needs redis-server and takes seconds. It stands
 * in for store.c's side of store_priv.h with a small fake below (requests, their timeout, the
 * record encoding), so it exercises the engine alone, against the interface as declared.
 *
 * Build and run (from the repository root, after `ninja -C build`):
 *   cc -std=gnu11 -D_GNU_SOURCE -DSLUICE_VERSION='"driver"' -g -fsanitize=address,undefined \
 *      -Iproxy -I/usr/include/hiredis tests/unit/store_redis_driver.c proxy/store_redis.c \
 *      proxy/redis_io.c proxy/seal.c \
 *      proxy/store_url.c proxy/log.c proxy/base.c -levent_core -levent_extra -lhiredis \
 *      -lcrypto -o /tmp/store_redis_driver
 *   /tmp/store_redis_driver [PORT]
 * Exit status 0 when every check held; each check prints "ok" or "FAIL" with its line. */
#include "store_priv.h"

#include "log.h"

#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* ===== a stand-in for store.c's engine-facing half ===== */

struct result {
    bool answered;
    enum store_status status;
    enum store_mark mark;
    char body[64];
    size_t body_len;
    bool timed_out;
};

struct store_req {
    struct store *st;
    struct result *res;  /* NULL once the timeout answered */
    struct event *timer;
};

static unsigned reports_down, reports_up, reqs_live;

bool store_req_done(struct store_req *r, enum store_status s, const struct store_record *rec)
{
    bool taken = r->res != NULL;
    if (r->res != NULL) {
        r->res->answered = true;
        r->res->status = s;
        if (rec != NULL) {
            r->res->mark = rec->mark;
            r->res->body_len = rec->body.len < sizeof(r->res->body) ? rec->body.len : 0;
            if (r->res->body_len)
                memcpy(r->res->body, rec->body.p, r->res->body_len);
        }
    }
    event_free(r->timer);
    free(r);
    reqs_live--;
    return taken;
}

/* The driver asks no questions (e2e store_asks drives those): an ask ends like any request. */
void store_req_asked(struct store_req *r, enum store_status s, enum asks_status as,
                     struct sl_str blob)
{
    (void)as;
    (void)blob;
    store_req_done(r, s, NULL);
}

void store_report(struct store *st, bool reached, const char *why)
{
    if (reached != st->up)
        fprintf(stderr, "  [report] %s%s\n", reached ? "reachable" : "unreachable: ",
                why ? why : "");
    st->up = reached;
    if (reached) {
        reports_up++;
    } else {
        reports_down++;
        st->errors++;
    }
}

size_t store_record_encode(struct sl_buf *out, enum store_mark mark, struct sl_str body)
{
    size_t before = out->len;
    sl_buf_putc(out, (char)('0' + mark));
    if (mark == STORE_MARK_DONE)
        sl_buf_put(out, body.p, body.len);
    return out->len - before;
}

bool store_record_decode(struct sl_str bytes, struct store_record *rec)
{
    if (bytes.len < 1 || bytes.p[0] < '0' || bytes.p[0] > '0' + STORE_MARK_NOT_KEPT)
        return false;
    rec->mark = (enum store_mark)(bytes.p[0] - '0');
    rec->body = (struct sl_str){ bytes.p + 1, bytes.len - 1 };
    return rec->mark == STORE_MARK_DONE || rec->mark == STORE_MARK_RUNNING || rec->body.len == 0;
}

uint64_t store_ttl(const struct store *st, uint64_t exp, uint64_t now)
{
    return (exp > now ? exp - now : 0) + st->o.retention_s;
}

static void on_req_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct store_req *r = arg;
    r->res->answered = true;
    r->res->status = STORE_ERROR;
    r->res->timed_out = true;
    r->res = NULL;
    r->st->ops->stalled(r->st->impl);
}

static struct store_req *req_new(struct store *st, struct result *res)
{
    struct store_req *r = sl_xcalloc(1, sizeof(*r));
    *res = (struct result){ 0 };
    r->st = st;
    r->res = res;
    r->timer = evtimer_new(st->base, on_req_timeout, r);
    struct timeval tv = { .tv_sec = st->o.timeout_ms / 1000,
                          .tv_usec = (st->o.timeout_ms % 1000) * 1000 };
    evtimer_add(r->timer, &tv);
    reqs_live++;
    return r;
}

/* ===== the driver ===== */

static int failures, checks;
static unsigned port = 16399;
static pid_t redis_pid;
static char redis_dir[64];

#define CHECK(x)                                                        \
    do {                                                                \
        checks++;                                                       \
        if (x) {                                                        \
            fprintf(stderr, "ok   %d: %s\n", __LINE__, #x);             \
        } else {                                                        \
            failures++;                                                 \
            fprintf(stderr, "FAIL %d: %s\n", __LINE__, #x);             \
        }                                                               \
    } while (0)

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
}

/* Runs the loop until *flag or ms pass; returns *flag. */
static bool run_until(struct event_base *base, const bool *flag, unsigned ms)
{
    uint64_t end = sl_mono_us() + (uint64_t)ms * 1000;
    struct event *wake = evtimer_new(base, on_wake, NULL);
    while (!*flag && sl_mono_us() < end) {
        struct timeval tv = { 0, 20000 };
        evtimer_add(wake, &tv);
        event_base_loop(base, EVLOOP_ONCE);
    }
    event_free(wake);
    return *flag;
}

static void run_for(struct event_base *base, unsigned ms)
{
    bool never = false;
    run_until(base, &never, ms);
}

static redisContext *sync_conn(void)
{
    struct timeval tv = { 1, 0 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", (int)port, tv);
    if (c != NULL && c->err) {
        redisFree(c);
        return NULL;
    }
    return c;
}

/* A command on a fresh synchronous connection: the test's own view of Redis. */
static redisReply *cli(const char *fmt, ...)
{
    redisContext *c = sync_conn();
    if (c == NULL)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

static void redis_start(void)
{
    char portstr[12];
    snprintf(portstr, sizeof(portstr), "%u", port);
    redis_pid = fork();
    if (redis_pid == 0) {
        freopen("/dev/null", "w", stdout);
        execlp("redis-server", "redis-server", "--port", portstr, "--bind", "127.0.0.1",
               "--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", redis_dir,
               (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 100; i++) {
        redisReply *r = cli("PING");
        bool up = r != NULL && r->type == REDIS_REPLY_STATUS;
        if (r)
            freeReplyObject(r);
        if (up)
            return;
        usleep(20000);
    }
    fprintf(stderr, "redis-server did not answer PING on port %u\n", port);
    exit(2);
}

static void redis_kill(void)
{
    kill(redis_pid, SIGKILL);
    waitpid(redis_pid, NULL, 0);
}

static void nonce_of(uint8_t n[STORE_NONCE_LEN], int i)
{
    memset(n, 0xa0, STORE_NONCE_LEN);
    n[0] = (uint8_t)i;
}

static void spend(struct store *st, struct result *res, const uint8_t *nonce,
                  const uint8_t *origin, enum store_mark mark)
{
    st->ops->spend(st->impl, req_new(st, res), nonce, origin, 60, mark, NULL);
}

static void get(struct store *st, struct result *res, const uint8_t *nonce)
{
    st->ops->get(st->impl, req_new(st, res), nonce);
}

static bool wait_ready(struct store *st, unsigned ms)
{
    /* ready: a spend of a throwaway nonce is answered by the store */
    uint64_t end = sl_mono_us() + (uint64_t)ms * 1000;
    static int k = 200;
    while (sl_mono_us() < end) {
        struct result res;
        uint8_t n[STORE_NONCE_LEN];
        nonce_of(n, k++);
        get(st, &res, n);
        run_until(st->base, &res.answered, 3000);
        if (res.status == STORE_ABSENT)
            return true;
        run_for(st->base, 50);
    }
    return false;
}

static void test_basic(struct store *st, uint8_t epoch0[STORE_NONCE_LEN])
{
    struct result a, b;
    uint8_t n1[STORE_NONCE_LEN], n2[STORE_NONCE_LEN], n3[STORE_NONCE_LEN];
    nonce_of(n1, 1);
    nonce_of(n2, 2);
    nonce_of(n3, 3);

    /* before the first connection: refused at once, and the epoch is all zero */
    static const uint8_t zero[STORE_NONCE_LEN];
    CHECK(memcmp(st->epoch, zero, STORE_NONCE_LEN) == 0);
    spend(st, &a, n1, st->epoch, STORE_MARK_RUNNING);
    CHECK(a.answered && a.status == STORE_ERROR);

    CHECK(wait_ready(st, 3000));
    CHECK(memcmp(st->epoch, zero, STORE_NONCE_LEN) != 0);
    memcpy(epoch0, st->epoch, STORE_NONCE_LEN);
    redisReply *r = cli("GET sluice:epoch");
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", epoch0[i]);
    CHECK(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, hex) == 0);
    freeReplyObject(r);

    /* spend: fresh, then spent with its record; two at once: exactly one fresh */
    spend(st, &a, n1, st->epoch, STORE_MARK_RUNNING);
    CHECK(run_until(st->base, &a.answered, 2000) && a.status == STORE_FRESH);
    spend(st, &a, n1, st->epoch, STORE_MARK_REFUSED);
    CHECK(run_until(st->base, &a.answered, 2000) && a.status == STORE_SPENT &&
          a.mark == STORE_MARK_RUNNING);
    spend(st, &a, n2, st->epoch, STORE_MARK_REFUSED);
    spend(st, &b, n2, st->epoch, STORE_MARK_RUNNING);
    run_until(st->base, &b.answered, 2000);
    CHECK(a.status == STORE_FRESH && b.status == STORE_SPENT && b.mark == STORE_MARK_REFUSED);
    r = cli("TTL sluice:nonce:02a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0");
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer > 50 && r->integer <= 60);
    freeReplyObject(r);

    /* get: found, absent */
    get(st, &a, n1);
    CHECK(run_until(st->base, &a.answered, 2000) && a.status == STORE_FOUND &&
          a.mark == STORE_MARK_RUNNING);
    get(st, &a, n3);
    CHECK(run_until(st->base, &a.answered, 2000) && a.status == STORE_ABSENT);

    /* put: binary-safe outcome over a spent nonce; no record made for an unspent one (XX) */
    st->ops->put(st->impl, n1, 90, STORE_MARK_DONE, (struct sl_str){ "ok\0\r\n$3\r\nend", 13 });
    get(st, &a, n1);
    CHECK(run_until(st->base, &a.answered, 2000) && a.status == STORE_FOUND &&
          a.mark == STORE_MARK_DONE && a.body_len == 13 &&
          memcmp(a.body, "ok\0\r\n$3\r\nend", 13) == 0);
    r = cli("TTL sluice:nonce:01a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0");
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer > 80 && r->integer <= 90);
    freeReplyObject(r);
    st->ops->put(st->impl, n3, 90, STORE_MARK_DONE, SL_STR("x"));
    get(st, &a, n3);
    CHECK(run_until(st->base, &a.answered, 2000) && a.status == STORE_ABSENT);

    /* a state of another epoch: reset, and the store's epoch stays; the mark its spend made
     * before reading the epoch is released (not run), and a retry is reset again */
    uint8_t other[STORE_NONCE_LEN];
    memset(other, 0x11, sizeof(other));
    spend(st, &a, n3, other, STORE_MARK_RUNNING);
    CHECK(run_until(st->base, &a.answered, 2000) && a.status == STORE_RESET);
    CHECK(memcmp(st->epoch, epoch0, STORE_NONCE_LEN) == 0);
    run_for(st->base, 100);
    get(st, &a, n3);
    CHECK(run_until(st->base, &a.answered, 2000) && a.status == STORE_FOUND &&
          a.mark == STORE_MARK_REFUSED);
    spend(st, &a, n3, other, STORE_MARK_RUNNING);
    CHECK(run_until(st->base, &a.answered, 2000) && a.status == STORE_RESET);

    /* a record that is not sluice's: an error, not a found */
    r = cli("SET sluice:nonce:03a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0 %s", "zz");
    freeReplyObject(r);
    get(st, &a, n3);
    CHECK(run_until(st->base, &a.answered, 2000) && a.status == STORE_ERROR);
    CHECK(st->up == false);
    r = cli("DEL sluice:nonce:03a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0");
    freeReplyObject(r);
}

/* FLUSHALL: the next spend of an old state is refused, and the engine begins a new epoch in
 * the store (the first to see it gone) and learns it */
static void test_flush(struct store *st, const uint8_t epoch0[STORE_NONCE_LEN])
{
    struct result a;
    uint8_t n1[STORE_NONCE_LEN], n2[STORE_NONCE_LEN];
    nonce_of(n1, 1);
    nonce_of(n2, 2);
    redisReply *r = cli("FLUSHALL");
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    spend(st, &a, n1, epoch0, STORE_MARK_RUNNING);
    CHECK(run_until(st->base, &a.answered, 2000) && a.status == STORE_RESET);
    run_for(st->base, 100);
    CHECK(memcmp(st->epoch, epoch0, STORE_NONCE_LEN) != 0);
    char hex[2 * STORE_NONCE_LEN + 1];
    for (int i = 0; i < STORE_NONCE_LEN; i++)
        snprintf(hex + 2 * i, 3, "%02x", st->epoch[i]);
    r = cli("GET sluice:epoch");
    CHECK(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, hex) == 0);
    freeReplyObject(r);
    spend(st, &a, n2, st->epoch, STORE_MARK_RUNNING); /* a state of the new epoch */
    CHECK(run_until(st->base, &a.answered, 2000) && a.status == STORE_FRESH);
    spend(st, &a, n1, epoch0, STORE_MARK_RUNNING);    /* the old one stays refused */
    CHECK(run_until(st->base, &a.answered, 2000) && a.status == STORE_RESET);
}

/* Redis killed: pending and new requests fail; back empty: a new epoch, old states refused */
static void test_restart(struct store *st)
{
    struct result a, b;
    uint8_t n1[STORE_NONCE_LEN], n2[STORE_NONCE_LEN], epoch1[STORE_NONCE_LEN];
    nonce_of(n1, 1);
    nonce_of(n2, 2);
    memcpy(epoch1, st->epoch, STORE_NONCE_LEN);
    get(st, &a, n1);
    redis_kill();
    CHECK(run_until(st->base, &a.answered, 2000) && a.status == STORE_ERROR && !a.timed_out);
    run_for(st->base, 50);
    spend(st, &b, n1, epoch1, STORE_MARK_RUNNING);
    CHECK(b.answered && b.status == STORE_ERROR); /* at once */
    CHECK(!st->up);
    run_for(st->base, 1500); /* a few backoff rounds against a closed port */
    redis_start();
    CHECK(wait_ready(st, 6000));
    CHECK(st->up);
    CHECK(memcmp(st->epoch, epoch1, STORE_NONCE_LEN) != 0);
    spend(st, &a, n1, epoch1, STORE_MARK_RUNNING);
    CHECK(run_until(st->base, &a.answered, 2000) && a.status == STORE_RESET);
    spend(st, &a, n2, st->epoch, STORE_MARK_RUNNING);
    CHECK(run_until(st->base, &a.answered, 2000) && a.status == STORE_FRESH);
}

/* Redis stalls (SIGSTOP): a request times out, the engine drops the connection, the others
 * pending end at once; new requests fail fast while the store stays stalled; SIGCONT: back. */
static void test_stall(struct store *st)
{
    struct result a, b;
    uint8_t n1[STORE_NONCE_LEN], n2[STORE_NONCE_LEN];
    nonce_of(n1, 1);
    nonce_of(n2, 2);
    kill(redis_pid, SIGSTOP);
    uint64_t t0 = sl_mono_us();
    spend(st, &a, n2, st->epoch, STORE_MARK_RUNNING);
    run_for(st->base, 100);
    get(st, &b, n1);
    CHECK(run_until(st->base, &a.answered, 3000) && a.status == STORE_ERROR && a.timed_out);
    uint64_t took = (sl_mono_us() - t0) / 1000;
    fprintf(stderr, "  stalled spend answered after %llu ms\n", (unsigned long long)took);
    CHECK(took >= 450 && took < 1000);
    run_for(st->base, 10);
    CHECK(b.answered && b.status == STORE_ERROR && !b.timed_out); /* ended by the drop */
    spend(st, &a, n2, st->epoch, STORE_MARK_RUNNING);
    CHECK(a.answered && a.status == STORE_ERROR);
    run_for(st->base, 1200); /* reconnects meet the stalled server: setup deadlines */
    CHECK(reqs_live == 0);
    kill(redis_pid, SIGCONT);
    CHECK(wait_ready(st, 8000));
    spend(st, &a, n2, st->epoch, STORE_MARK_RUNNING);
    CHECK(run_until(st->base, &a.answered, 2000) &&
          (a.status == STORE_FRESH || a.status == STORE_SPENT));
}

/* A password and a database: AUTH and SELECT; a wrong password is reported, never ready. */
static void test_auth(struct event_base *base)
{
    redisReply *r = cli("CONFIG SET requirepass %s", "s3cret pass");
    freeReplyObject(r);
    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%u/5", port);
    struct store st = { .ops = &store_redis_ops, .base = base,
                        .o = { .url = url, .prefix = "t:", .timeout_ms = 500,
                               .password = "wrong", .retention_s = 10 } };
    st.up = true; /* so that the first refusal is printed */
    char err[256];
    st.impl = store_redis_open(&st, err, sizeof(err));
    CHECK(st.impl != NULL);
    run_for(base, 400);
    CHECK(!st.up && st.errors > 0);
    st.ops->free(st.impl);
    st.o.password = "s3cret pass";
    st.errors = 0;
    st.impl = store_redis_open(&st, err, sizeof(err));
    CHECK(wait_ready(&st, 2000));
    redisContext *c = sync_conn();
    r = redisCommand(c, "AUTH %s", "s3cret pass");
    freeReplyObject(r);
    r = redisCommand(c, "SELECT 5");
    freeReplyObject(r);
    r = redisCommand(c, "EXISTS t:epoch");
    CHECK(r && r->integer == 1);
    freeReplyObject(r);
    r = redisCommand(c, "CONFIG SET requirepass %s", "");
    freeReplyObject(r);
    redisFree(c);
    st.ops->free(st.impl);
}

/* free with requests in flight: each ends once, none after */
static void test_free_pending(struct event_base *base)
{
    char url[64];
    snprintf(url, sizeof(url), "redis://localhost:%u", port);
    struct store st = { .ops = &store_redis_ops, .base = base,
                        .o = { .url = url, .prefix = "sluice:", .timeout_ms = 500 } };
    char err[256];
    st.impl = store_redis_open(&st, err, sizeof(err));
    CHECK(wait_ready(&st, 2000)); /* "localhost" through evdns and the hosts file */
    struct result a, b;
    uint8_t n[STORE_NONCE_LEN];
    nonce_of(n, 9);
    get(&st, &a, n);
    spend(&st, &b, n, st.epoch, STORE_MARK_REFUSED);
    st.ops->free(st.impl);
    CHECK(a.answered && a.status == STORE_ERROR && b.answered && b.status == STORE_ERROR);
    CHECK(reqs_live == 0);
    run_for(base, 100);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        port = (unsigned)atoi(argv[1]);
    signal(SIGPIPE, SIG_IGN);
    snprintf(redis_dir, sizeof(redis_dir), "/tmp/sluice-redis-XXXXXX");
    if (mkdtemp(redis_dir) == NULL)
        return 2;
    sl_log_set_level(SL_LOG_DEBUG);
    redis_start();
    struct event_base *base = event_base_new();
    char url[64], err[256];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%u", port);
    struct store st = { .ops = &store_redis_ops, .base = base,
                        .o = { .url = url, .prefix = "sluice:", .timeout_ms = 500,
                               .retention_s = 30 } };
    CHECK(store_redis_open(&(struct store){ .base = base, .o = { .url = "rediss://x" } }, err,
                           sizeof(err)) == NULL && strstr(err, "TLS") != NULL);
    st.impl = store_redis_open(&st, err, sizeof(err));
    CHECK(st.impl != NULL);
    uint8_t epoch0[STORE_NONCE_LEN];
    fprintf(stderr, "== basic\n");
    test_basic(&st, epoch0);
    fprintf(stderr, "== flush\n");
    test_flush(&st, epoch0);
    fprintf(stderr, "== restart\n");
    test_restart(&st);
    fprintf(stderr, "== stall\n");
    test_stall(&st);
    st.ops->free(st.impl);
    fprintf(stderr, "== auth\n");
    test_auth(base);
    fprintf(stderr, "== free with requests pending\n");
    test_free_pending(base);
    CHECK(reqs_live == 0);
    event_base_free(base);
    redis_kill();
    char rm[96];
    snprintf(rm, sizeof(rm), "rm -rf %s", redis_dir);
    if (system(rm) != 0)
        fprintf(stderr, "could not remove %s\n", redis_dir);
    fprintf(stderr, "%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
