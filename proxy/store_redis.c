/* store_redis.c: the store on Redis (store_priv.h), shared by every replica that points at it.
 *
 * One connection, asynchronous on sluice's event loop (redis_io.c: commands written in batches,
 * without epoll_ctl). Its life:
 *
 *   IDLE --timer--> RESOLVING --evdns--> CONNECTING --connect--> SETUP --epoch--> READY
 *     ^                                                                             |
 *     +---- any failure, the setup deadline, a lost connection or a stall ---------+
 *
 * The host is looked up with evdns, not by hiredis (whose getaddrinfo would block the loop while
 * a name server is slow, which is when Redis is unreachable anyway). SETUP pipelines AUTH (when
 * SLUICE_STORE_PASSWORD is set), SELECT (when the URL names a database other than 0), then
 * `SET epoch <random> NX GET`: the store's epoch is whatever the first replica to reach an
 * empty store wrote (NX with GET is Redis 7.0's: an older server refuses it here, and the log
 * says so, rather than at every spend). Until READY, requests fail at once with STORE_ERROR:
 * sluice refuses gated calls rather than queueing them behind an outage. A failure goes back
 * to IDLE and tries again after a backoff of 100 ms, doubling to 5 s, reset when READY is
 * reached; the whole of a setup is bounded by the store timeout too (a relay that accepts and
 * never answers).
 *
 * A dropped connection is freed at once (redisAsyncFree): hiredis then calls every pending
 * command's callback with a NULL reply, which ends its request with STORE_ERROR. A callback
 * tells its connection from the current one by comparing ac with e->ac, which drop() clears
 * first, so the replies of a dropped connection never touch the engine's state.
 *
 * A spend is plain commands, pipelined: `SET nonce record NX GET EX ttl`, then `GET epoch`
 * (and, for an answer, the ZREM that closes its question, below). No script: Redis runs these
 * for two fifths of what a script doing the same costs it (tests/bench/README.md), and that is
 * what bounds a gated pair's throughput when Redis shares the cores. The order is what keeps it
 * safe without one atomic step: the epoch is read after the nonce is marked, so an epoch that
 * is still the state's origin means the store lost nothing between the origin's minting and
 * the mark, and the mark saw every earlier spend of the nonce. (Read first, a flush between the
 * read and the mark would let a state spent before it be spent again.) A spend that finds
 * another epoch may have marked its nonce all the same: that state is refused from then on
 * anyway, and the mark is released (not run) as any refused spend's is. One that finds no
 * epoch key at all (a FLUSHALL since the setup) begins a new epoch, as a setup would.
 *
 * Approval fatigue (store_ask) is kept per principal, under the first 128 bits of the SHA-256
 * of its name in hex (keys of bounded length and no odd bytes, whatever the principal is; half
 * the digits of the whole hash save Redis about 4% of its instructions a gated pair, hashing
 * keys), with that as the hash tag so one principal's keys share a cluster slot. Two principals
 * that met in 128 bits would share their limits, no more:
 *   PREFIX ask:{WHO}:asked        ZSET: two members a question, so that one key, one ZADD and
 *                                 one expiry serve both limits: the state's nonce (hex) with
 *                                 score minus its expiry while it is open (removed when it is
 *                                 answered or withdrawn), and the nonce and "r" with score when
 *                                 it was asked. Open questions are the scores under -now,
 *                                 this minute's the scores over now - 60, each counted exactly
 *                                 (ZCOUNT); what is past is trimmed, in one range, once the
 *                                 set reaches per_minute members. The key outlives its latest
 *                                 question and the minute after it
 *   PREFIX ask:{WHO}:same:WHAT    the open question an identical call gets: the nonce (hex), a
 *                                 newline, the blob; WHAT is 128 bits of the SHA-256 of tool and
 *                                 argument digest (a call that met another in them would be
 *                                 handed a state its arguments fail); it lives until the state
 *                                 expires, and is replaced by the next identical ask once its
 *                                 nonce is not open
 * Each operation is one Lua script (ASK_LUA, ANSWERED_LUA, WITHDRAWN_LUA; an accept's close is
 * the ZREM in its spend), so check and record are one atomic step for every replica. The clock
 * is sluice's (gate_clock, passed in): the scores of the open questions are the states'
 * expiries, which sluice sealed and checks by its own clock, and one clock for both comparisons
 * keeps "open" meaning "still answerable". A script
 * that read Redis's TIME and then wrote would also need effects replication (Redis 3.2 and 4
 * refuse it otherwise). Replicas' clocks should agree (NTP): a skew moves the minute's edge by
 * as much. Redis holds no ASKS_FULL or ASKS_PRINCIPALS_FULL limit: each principal is bounded
 * by its own max_open and per_minute, and Redis's memory is the operator's (maxmemory). A close
 * (answered, withdrawn) that finds no connection, or an ask whose reply was lost with its
 * connection, waits for the next one (struct later), as does the release of a spend whose
 * reply was lost. */
#include "store_priv.h"

#include "log.h"
#include "redis_io.h"
#include "seal.h"
#include "store_url.h"

#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>

/* nonces, tags and epochs are drawn with seal_random_nonce, seal's pooled generator */
_Static_assert(STORE_NONCE_LEN == SEAL_NONCE_LEN, "a store nonce is a seal nonce");

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define SETUP_DEFAULT_MS 2000          /* when the options give no timeout */
#define WHY_LEN 512                    /* a log reason: a host name and a Redis error fit */
#define TTL_MAX_S ((uint64_t)1 << 31)  /* Redis refuses EX values whose milliseconds overflow */

/* KEYS[1] asked, KEYS[2] same; ARGV[1] the nonce (hex), ARGV[2] now, ARGV[3] minus the state's
 * expiry, ARGV[4] max_open, ARGV[5] per_minute, ARGV[6] the same key's record (the nonce, a
 * newline, the blob), ARGV[7] the state's ttl in seconds (at least 1). Replies {0} asked
 * (recorded), {1, blob} the same question is open, {2} too many open, {3} too many this minute.
 * A same key whose nonce is no longer open (answered, or expired by now) is replaced, not
 * handed out.
 *
 * The same key is written first, with NX and GET (Redis 7.0): one command finds an identical
 * call's question and, on the common path (none), records this one; a question refused at a
 * limit takes its same key back (DEL) in the same atomic step, so no replica ever sees it.
 *
 * What each step costs Redis is what bounds a gated pair's throughput when Redis shares the
 * cores (tests/bench/README.md), so: on the common path the numbers come as sluice wrote them
 * (Lua formats a number it passes to redis.call with sprintf, about as dear as a command; only a
 * trim and a new expiry pass numbers Lua computed; the record comes whole, as joining the blob
 * in Lua cost Redis 5,000 instructions a question), the set is trimmed only when it reaches
 * per_minute members (the rate then needs counting: under that it cannot be over), and the
 * expiry is pushed 60 s past what this question needs, so that it is written about once a
 * minute, not at every question. */
static const char ASK_LUA[] =
    "local same = redis.call('SET', KEYS[2], ARGV[6], 'NX', 'GET', 'EX', ARGV[7]) "
    "if same then "
    "  local at = redis.call('ZSCORE', KEYS[1], string.sub(same, 1, 32)) "
    "  if at and -tonumber(at) > tonumber(ARGV[2]) then return {1, string.sub(same, 34)} end "
    "  redis.call('SET', KEYS[2], ARGV[6], 'EX', ARGV[7]) "
    "end "
    "local full = redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[5]) "
    "if full then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-' .. ARGV[2], ARGV[2] - 60) end "
    "if redis.call('ZCOUNT', KEYS[1], '-inf', '(-' .. ARGV[2]) >= tonumber(ARGV[4]) then "
    "  redis.call('DEL', KEYS[2]) return {2} end "
    "if full and redis.call('ZCOUNT', KEYS[1], 0, '+inf') >= tonumber(ARGV[5]) then "
    "  redis.call('DEL', KEYS[2]) return {3} end "
    "redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1], ARGV[2], ARGV[1] .. 'r') "
    "local life = math.max(tonumber(ARGV[7]), 61) "
    "if redis.call('TTL', KEYS[1]) < life then redis.call('EXPIRE', KEYS[1], life + 60) end "
    "return {0}";

/* KEYS[1] asked; ARGV[1] the answered state's nonce (hex): its open member goes, the one that
 * counts it this minute stays. Its same key is left to ASK_LUA: an identical call may have been
 * asked anew since, and a same key whose nonce is not open is dropped there. */
static const char ANSWERED_LUA[] =
    "redis.call('ZREM', KEYS[1], ARGV[1]) "
    "return 0";

/* KEYS[1] asked, KEYS[2] same: the withdrawn call's open question, whichever nonce it has. */
static const char WITHDRAWN_LUA[] =
    "local same = redis.call('GET', KEYS[2]) "
    "if same then "
    "  redis.call('ZREM', KEYS[1], string.sub(same, 1, 32)) "
    "  redis.call('DEL', KEYS[2]) "
    "end "
    "return 0";

/* KEYS[1] the anchors' list; ARGV[1] an anchor, ARGV[2] how many to keep. Push and trim in one
 * atomic step, so the list is never over its cap, whatever replicas push at once. */
static const char ANCHOR_LUA[] =
    "redis.call('RPUSH', KEYS[1], ARGV[1]) "
    "redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1) "
    "return 0";

/* KEYS[1] a nonce's record; ARGV[1] the record a spend wrote, ARGV[2] the one to put in its
 * place (keeping its expiry) if it is still there: a spend whose reply was lost (or whose
 * caller gave up) marked its call running, and sluice did not run it. A running record carries
 * its spend's random tag, so the record of another spend of the same nonce (a retry at another
 * replica, whose call runs) is never taken for this one's. */
static const char RELEASE_LUA[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "
    "  local t = redis.call('PTTL', KEYS[1]) "
    "  if t > 0 then redis.call('SET', KEYS[1], ARGV[2], 'PX', t) end "
    "end "
    "return 0";

/* KEYS[1] an approval page's record; ARGV[1] the value, ARGV[2] its ttl. Set if absent, or say what is there, in one step. */
static const char PAGE_DECIDE_LUA[] =
    "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then return {0} end "
    "return {1, redis.call('GET', KEYS[1])}";

/* The scripts go by their SHA-1 (EVALSHA), not their text: at every EVAL Redis hashes the
 * text, and the texts (170 to 820 bytes) were most of each command's bytes. Every connection's
 * setup loads them (SCRIPT LOAD) before it is ready. A NOSCRIPT reply (a SCRIPT FLUSH since)
 * drops the connection, so that the next one loads them again; what was in flight fails, and a
 * call that needed it is refused (fail closed). */
enum script_id { SCRIPT_ASK, SCRIPT_ANSWERED, SCRIPT_WITHDRAWN, SCRIPT_ANCHOR, SCRIPT_PAGE_DECIDE,
                 SCRIPT_RELEASE, SCRIPT_COUNT };

static const char *const script_text[SCRIPT_COUNT] = {
    ASK_LUA, ANSWERED_LUA, WITHDRAWN_LUA, ANCHOR_LUA, PAGE_DECIDE_LUA, RELEASE_LUA,
};
static char script_sha[SCRIPT_COUNT][41]; /* hex, set by store_redis_open */

enum conn_state {
    R_IDLE,       /* no connection; the timer is the next attempt */
    R_RESOLVING,  /* evdns looks the host up; the timer is the setup deadline */
    R_CONNECTING, /* TCP connect in flight; same deadline */
    R_SETUP,      /* AUTH, SELECT and the epoch in flight; same deadline */
    R_READY,      /* the epoch is known: requests go out; no timer */
    R_CLOSED,     /* being freed: nothing is scheduled any more */
};

struct redis_engine {
    struct store *st;
    struct store_url url;
    const char *prefix;
    struct sl_buf epoch_key;
    enum conn_state state;
    redisAsyncContext *ac;                     /* the current connection, or NULL */
    struct evdns_base *dns;
    struct evdns_getaddrinfo_request *lookup;  /* in flight, or NULL */
    struct event *timer;                       /* see enum conn_state */
    unsigned backoff_ms;                       /* the wait before the next attempt */
    bool created_epoch;                        /* this setup's SET NX GET wrote the epoch */
    bool have_epoch;                           /* st->epoch came from the store once */
    struct later *later;                       /* writes waiting for a connection */
    unsigned nlater;
};

static void start_connect(struct redis_engine *e);
static int send_argv(struct redis_engine *e, redisCallbackFn *cb, void *privdata, size_t argc,
                     const struct sl_str *argv);
static void later_flush(struct redis_engine *e);
static void later_free_all(struct redis_engine *e);

/* ===== small helpers ===== */

static void hex16(char out[33], const uint8_t in[STORE_NONCE_LEN])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < STORE_NONCE_LEN; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[32] = '\0';
}

static void hash_scripts(void)
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < SCRIPT_COUNT; i++) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned len = 0;
        SL_REQUIRE(EVP_Digest(script_text[i], strlen(script_text[i]), md, &len, EVP_sha1(),
                              NULL) == 1 && len == 20);
        for (unsigned j = 0; j < len; j++) {
            script_sha[i][2 * j] = digits[md[j] >> 4];
            script_sha[i][2 * j + 1] = digits[md[j] & 15];
        }
        script_sha[i][40] = '\0';
    }
}

/* A 32-hex epoch from a reply element, into out; false when it is not one. */
static bool epoch_of(const redisReply *r, uint8_t out[STORE_NONCE_LEN])
{
    return r != NULL && r->type == REDIS_REPLY_STRING && r->len == 2 * STORE_NONCE_LEN &&
           sl_hex_decode(r->str, r->len, out, STORE_NONCE_LEN) == STORE_NONCE_LEN;
}

static void arm(struct event *ev, unsigned ms)
{
    struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
    evtimer_add(ev, &tv);
}

static unsigned setup_ms(const struct redis_engine *e)
{
    return e->st->o.timeout_ms ? e->st->o.timeout_ms : SETUP_DEFAULT_MS;
}

/* The engine a reply of the current connection belongs to; NULL for a reply of a connection
 * already dropped, or for the NULL reply of a connection going away (its disconnect callback,
 * or whoever dropped it, reports that). */
static struct redis_engine *live(const redisAsyncContext *ac, const redisReply *reply)
{
    struct redis_engine *e = ac->data;
    return e != NULL && e->ac == ac && reply != NULL ? e : NULL;
}

/* ===== the connection ===== */

static void schedule_retry(struct redis_engine *e)
{
    if (e->state == R_CLOSED)
        return;
    e->state = R_IDLE;
    arm(e->timer, e->backoff_ms);
    e->backoff_ms = e->backoff_ms >= BACKOFF_MAX_MS / 2 ? BACKOFF_MAX_MS : e->backoff_ms * 2;
}

/* Gives up the current attempt or connection for why, and tries again after the backoff.
 * Never call it from the connect callback: hiredis goes on using the context after it. */
static void drop(struct redis_engine *e, const char *why)
{
    redisAsyncContext *ac = e->ac;
    e->ac = NULL;
    if (e->lookup != NULL)
        evdns_getaddrinfo_cancel(e->lookup); /* its callback sees EVUTIL_EAI_CANCEL */
    store_report(e->st, false, why);
    schedule_retry(e);
    if (ac != NULL)
        redisAsyncFree(ac); /* pending commands: NULL replies (deferred inside a callback) */
}

/* The store's epoch is now epoch: new states are minted under it. Said in the log once per
 * change, not per call. */
static void learn_epoch(struct redis_engine *e, const uint8_t epoch[STORE_NONCE_LEN])
{
    if (e->have_epoch && memcmp(e->st->epoch, epoch, STORE_NONCE_LEN) == 0)
        return;
    if (e->have_epoch)
        sl_warn("store: redis at %s:%u lost its records (its epoch key changed: a restart "
                "without persistence, a flush, or a failover to an empty replica); states "
                "minted before are refused (store-reset)", e->url.host, e->url.port);
    else if (e->created_epoch)
        sl_info("store: redis at %s:%u had no epoch and a new one begins (a first start, or a "
                "store that lost its records; states minted before it are refused)",
                e->url.host, e->url.port);
    memcpy(e->st->epoch, epoch, STORE_NONCE_LEN);
    e->have_epoch = true;
}

static void on_setup_step(redisAsyncContext *ac, void *r, void *step)
{
    struct redis_engine *e = live(ac, r);
    const redisReply *reply = r;
    if (e == NULL)
        return;
    if (reply->type == REDIS_REPLY_ERROR) {
        char why[WHY_LEN];
        snprintf(why, sizeof(why), "redis %s:%u refused %s: %.*s", e->url.host, e->url.port,
                 (const char *)step, (int)(reply->len > 160 ? 160 : reply->len), reply->str);
        drop(e, why);
    }
}

/* A script's SCRIPT LOAD: its reply must be the hash EVALSHA will name. */
static void on_script_loaded(redisAsyncContext *ac, void *r, void *id)
{
    struct redis_engine *e = live(ac, r);
    const redisReply *reply = r;
    const char *sha = script_sha[(intptr_t)id];
    if (e == NULL)
        return;
    if (reply->type == REDIS_REPLY_ERROR)
        on_setup_step(ac, r, (void *)"SCRIPT LOAD");
    else if (reply->type != REDIS_REPLY_STRING || reply->len != 40 ||
             memcmp(reply->str, sha, 40) != 0)
        drop(e, "redis answered SCRIPT LOAD with another hash than the script's SHA-1");
}

/* The epoch a `SET epoch <fresh> NX GET` leaves, into out: the one there before, or fresh when
 * there was none (*created: this SET began it); false when the reply is neither. */
static bool epoch_after_set(const redisReply *r, const uint8_t fresh[STORE_NONCE_LEN],
                            uint8_t out[STORE_NONCE_LEN], bool *created)
{
    *created = r->type == REDIS_REPLY_NIL;
    if (*created)
        memcpy(out, fresh, STORE_NONCE_LEN);
    return *created || epoch_of(r, out);
}

/* The setup's last reply: the epoch (arg: the fresh one it offered, freed here). */
static void on_epoch(redisAsyncContext *ac, void *r, void *fresh)
{
    struct redis_engine *e = live(ac, r);
    const redisReply *reply = r;
    uint8_t epoch[STORE_NONCE_LEN];
    if (e == NULL) {
        free(fresh);
        return;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        /* before 7.0, Redis has no SET with both NX and GET: a syntax error */
        bool old = strncmp(reply->str, "ERR syntax error", 16) == 0;
        char why[WHY_LEN];
        snprintf(why, sizeof(why), "redis %s:%u refused SET NX GET%s: %.*s", e->url.host,
                 e->url.port, old ? " (sluice needs Redis 7.0 or later)" : "",
                 (int)(reply->len > 160 ? 160 : reply->len), reply->str);
        free(fresh);
        drop(e, why);
        return;
    }
    bool ok = epoch_after_set(reply, fresh, epoch, &e->created_epoch);
    free(fresh);
    if (!ok) {
        drop(e, "the store's epoch key holds something other than 32 hex digits");
        return;
    }
    learn_epoch(e, epoch);
    e->state = R_READY;
    e->backoff_ms = BACKOFF_MIN_MS;
    evtimer_del(e->timer);
    store_report(e->st, true, NULL);
    sl_info("store: connected to redis %s:%u, database %u", e->url.host, e->url.port,
             e->url.db);
    later_flush(e);
}

/* `SET epoch <fresh> NX GET` with the fresh epoch given to cb (malloc'd: cb frees it). */
static int send_epoch(struct redis_engine *e, redisCallbackFn *cb)
{
    uint8_t *fresh = sl_xmalloc(STORE_NONCE_LEN);
    char hex[33];
    SL_REQUIRE(seal_random_nonce(fresh) == 0);
    hex16(hex, fresh);
    struct sl_str argv[] = { SL_STR("SET"), sl_buf_str(&e->epoch_key), sl_str_c(hex),
                             SL_STR("NX"), SL_STR("GET") };
    int rc = send_argv(e, cb, fresh, SL_ARRAY_LEN(argv), argv);
    if (rc != REDIS_OK)
        free(fresh);
    return rc;
}

/* Pipelines the setup; false when hiredis would not take a command. */
static bool send_setup(struct redis_engine *e)
{
    redisAsyncContext *ac = e->ac;
    const char *pw = e->st->o.password;
    char db[12];
    int rc = REDIS_OK;
    if (pw != NULL && pw[0] != '\0') {
        if (e->url.user[0] != '\0')
            rc |= redisAsyncCommand(ac, on_setup_step, (void *)"AUTH", "AUTH %s %s",
                                    e->url.user, pw);
        else
            rc |= redisAsyncCommand(ac, on_setup_step, (void *)"AUTH", "AUTH %s", pw);
    }
    if (e->url.db != 0) {
        snprintf(db, sizeof(db), "%u", e->url.db);
        rc |= redisAsyncCommand(ac, on_setup_step, (void *)"SELECT", "SELECT %s", db);
    }
    for (intptr_t i = 0; i < SCRIPT_COUNT; i++)
        rc |= redisAsyncCommand(ac, on_script_loaded, (void *)i, "SCRIPT LOAD %s",
                                script_text[i]);
    rc |= send_epoch(e, on_epoch);
    return rc == REDIS_OK;
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct redis_engine *e = ac->data;
    if (e == NULL || e->ac != ac)
        return;
    if (status != REDIS_OK) {
        /* hiredis frees this context when we return */
        char why[WHY_LEN];
        snprintf(why, sizeof(why), "cannot connect to redis %s:%u: %s", e->url.host,
                 e->url.port, ac->errstr);
        e->ac = NULL;
        store_report(e->st, false, why);
        schedule_retry(e);
        return;
    }
    e->state = R_SETUP;
    if (!send_setup(e))
        arm(e->timer, 0); /* drop from the timer: not from here (see drop) */
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct redis_engine *e = ac->data;
    char why[WHY_LEN];
    if (e == NULL || e->ac != ac)
        return; /* dropped by us: reported then */
    snprintf(why, sizeof(why), "lost the connection to redis %s:%u: %s", e->url.host,
             e->url.port, status == REDIS_OK ? "closed" : ac->errstr);
    e->ac = NULL; /* hiredis frees it when we return */
    store_report(e->st, false, why);
    schedule_retry(e);
}

static void connect_to(struct redis_engine *e, const char *ip)
{
    char why[WHY_LEN];
    redisAsyncContext *ac = redisAsyncConnect(ip, (int)e->url.port);
    if (ac == NULL || ac->err) {
        snprintf(why, sizeof(why), "cannot connect to redis %s:%u: %s", e->url.host,
                 e->url.port, ac ? ac->errstr : "out of memory");
        if (ac != NULL)
            redisAsyncFree(ac);
        drop(e, why);
        return;
    }
    if (redis_io_attach(ac, e->st->base) != REDIS_OK) {
        redisAsyncFree(ac);
        drop(e, "cannot watch the connection to redis: out of memory");
        return;
    }
    ac->data = e;
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    e->ac = ac;
    e->state = R_CONNECTING;
}

static void on_resolved(int result, struct evutil_addrinfo *res, void *arg)
{
    struct redis_engine *e = arg;
    char ip[64], why[WHY_LEN];
    e->lookup = NULL;
    if (result == EVUTIL_EAI_CANCEL) {
        if (res != NULL)
            evutil_freeaddrinfo(res);
        return;
    }
    if (result != 0 || res == NULL) {
        snprintf(why, sizeof(why), "cannot resolve the redis host %s: %s", e->url.host,
                 evutil_gai_strerror(result));
        if (res != NULL)
            evutil_freeaddrinfo(res);
        drop(e, why);
        return;
    }
    const void *addr = res->ai_family == AF_INET6
                           ? (const void *)&((struct sockaddr_in6 *)res->ai_addr)->sin6_addr
                           : (const void *)&((struct sockaddr_in *)res->ai_addr)->sin_addr;
    bool ok = evutil_inet_ntop(res->ai_family, addr, ip, sizeof(ip)) != NULL;
    evutil_freeaddrinfo(res);
    if (!ok) {
        drop(e, "cannot print the redis host's address");
        return;
    }
    connect_to(e, ip);
}

static void start_connect(struct redis_engine *e)
{
    struct evutil_addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                                     .ai_protocol = IPPROTO_TCP };
    char port[12];
    snprintf(port, sizeof(port), "%u", e->url.port);
    e->state = R_RESOLVING;
    e->created_epoch = false;
    arm(e->timer, setup_ms(e));
    /* An address or a name in the hosts file answers at once (the callback has run and this
     * returns NULL); a name server later. */
    struct evdns_getaddrinfo_request *q =
        evdns_getaddrinfo(e->dns, e->url.host, port, &hints, on_resolved, e);
    if (q != NULL && e->state == R_RESOLVING)
        e->lookup = q;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct redis_engine *e = arg;
    char why[WHY_LEN];
    switch (e->state) {
    case R_IDLE:
        start_connect(e);
        break;
    case R_RESOLVING:
    case R_CONNECTING:
    case R_SETUP:
        snprintf(why, sizeof(why), "redis %s:%u was not reached within %u ms", e->url.host,
                 e->url.port, setup_ms(e));
        drop(e, why);
        break;
    case R_READY:
    case R_CLOSED:
        break;
    }
}

/* ===== commands ===== */

/* A command as RESP, an array of bulk strings (RESP is binary-safe: any bytes go in an
 * argument), written here and handed to hiredis whole. redisAsyncCommand's format parser
 * built each argument in an sds and printed each length with sprintf: about 16,000
 * instructions a command, 66,000 of a gated pair's 183,000 with Redis (issue 24). */
static int send_argv(struct redis_engine *e, redisCallbackFn *cb, void *privdata, size_t argc,
                     const struct sl_str *argv)
{
    char room[4096], n[21]; /* a script and its arguments: no heap buffer */
    struct sl_buf b;
    sl_buf_on(&b, room, sizeof(room));
    sl_buf_putc(&b, '*');
    sl_buf_put(&b, n, sl_u64_dec(n, argc));
    sl_buf_puts(&b, "\r\n");
    for (size_t i = 0; i < argc; i++) {
        sl_buf_putc(&b, '$');
        sl_buf_put(&b, n, sl_u64_dec(n, argv[i].len));
        sl_buf_puts(&b, "\r\n");
        if (argv[i].len > 0)
            sl_buf_put(&b, argv[i].p, argv[i].len);
        sl_buf_puts(&b, "\r\n");
    }
    int rc = redisAsyncFormattedCommand(e->ac, cb, privdata, b.p, b.len);
    sl_buf_free(&b);
    return rc;
}

/* send_argv with the arguments listed: SEND(e, cb, privdata, SL_STR("GET"), key). */
#define SEND(e, cb, privdata, ...)                                                              \
    send_argv((e), (cb), (privdata),                                                            \
              sizeof((struct sl_str[]){ __VA_ARGS__ }) / sizeof(struct sl_str),                 \
              (struct sl_str[]){ __VA_ARGS__ })

/* ===== requests ===== */

/* Ends r at once: the store cannot be asked now. */
static void refuse_now(struct redis_engine *e, struct store_req *r, const char *why)
{
    store_report(e->st, false, why);
    store_req_done(r, STORE_ERROR, NULL);
}

static bool reconnect_error(const redisReply *reply)
{
    return strncmp(reply->str, "READONLY", 8) == 0 || strncmp(reply->str, "NOAUTH", 6) == 0 ||
           strncmp(reply->str, "NOSCRIPT", 8) == 0;
}

/* An error reply: reported; READONLY (a failover left us on a replica), NOAUTH (a restart
 * with a password) and NOSCRIPT (a SCRIPT FLUSH) also drop the connection, so the next one
 * finds the new primary, logs in, or loads the scripts again. */
static void reply_error(struct redis_engine *e, redisAsyncContext *ac, const redisReply *reply,
                        const char *what)
{
    char why[WHY_LEN];
    snprintf(why, sizeof(why), "redis answered %s with: %.*s", what,
             (int)(reply->len > 160 ? 160 : reply->len), reply->str);
    if (e->ac == ac && reconnect_error(reply))
        drop(e, why);
    else
        store_report(e->st, false, why);
}

static uint64_t clamp_ttl(uint64_t ttl_s)
{
    return ttl_s < 1 ? 1 : ttl_s > TTL_MAX_S ? TTL_MAX_S : ttl_s;
}

/* ===== writes that wait for a connection ===== */

/* A script run for its effect only, that must not be lost with a connection: a question's
 * close (ANSWERED_LUA, WITHDRAWN_LUA) and a lost spend's release (RELEASE_LUA). Each is
 * idempotent. One that finds no connection, or whose reply is lost with its connection, waits
 * in e->later and goes out when a connection is ready again; at most LATER_MAX wait, and one
 * beyond that is reported and dropped (a question then expires; a spend stays "running" until
 * its record does).
 *
 * An ask and an accepted spend carry the one that undoes them while their reply is awaited
 * (req set): a reply lost with its connection (a timeout drops it) does not mean the script
 * did not run. An ask may have recorded a question nobody was asked, which would hold a place
 * under max_open_confirmations at every replica until it expires (with the default principal,
 * every client's); a spend may have marked the call running, which sluice then refused, and a
 * retry would wait --upstream-timeout for an outcome that never comes. */
#define LATER_MAX 4096
#define LATER_STRS 3

struct later {
    struct later *next;
    struct store_req *req;    /* the request it undoes, while its reply is awaited */
    bool waits;               /* a spend followed by WAIT (--store-replicas): see on_wait */
    bool fresh;               /* ... its spend marked the nonce; WAIT decides */
    bool release;             /* ... its spend is settled and must be undone (on_wait sends it) */
    int mark_reply;           /* a spend's: its SET NX GET's reply type, 0 while awaited */
    struct sl_buf prior;      /* ... the record that SET found (the nonce was spent before) */
    uint8_t origin[STORE_NONCE_LEN]; /* ... the state's epoch */
    enum script_id script;
    unsigned nkeys, n;        /* n strings: nkeys keys, then the arguments */
    size_t len[LATER_STRS];
    char data[];
};

static struct later *later_new(enum script_id script, unsigned nkeys, unsigned n,
                               const struct sl_str *strs)
{
    SL_REQUIRE(n <= LATER_STRS && nkeys <= n);
    size_t total = 0;
    for (unsigned i = 0; i < n; i++)
        total += strs[i].len;
    struct later *l = sl_xmalloc(sizeof(*l) + total);
    *l = (struct later){ .script = script, .nkeys = nkeys, .n = n };
    char *p = l->data;
    for (unsigned i = 0; i < n; i++) {
        l->len[i] = strs[i].len;
        if (strs[i].len)
            memcpy(p, strs[i].p, strs[i].len);
        p += strs[i].len;
    }
    return l;
}

/* l waits for the next ready connection (or is dropped: the engine is closing, or too many
 * wait). */
static void later_queue(struct redis_engine *e, struct later *l)
{
    /* A withdrawal names no nonce: run later it would close whatever identical question is
     * open then, perhaps one asked since at another replica. */
    if (l->script == SCRIPT_WITHDRAWN && e->state != R_CLOSED) {
        store_report(e->st, false, "not connected to redis: a withdrawn question stays open "
                                   "until it expires");
        free(l);
        return;
    }
    if (e->state == R_CLOSED || e->nlater >= LATER_MAX) {
        if (e->state != R_CLOSED)
            store_report(e->st, false, "too many writes waiting while redis was away: a question "
                                       "stays open, or a spend running, until it expires");
        free(l);
        return;
    }
    l->req = NULL;
    l->next = e->later;
    e->later = l;
    e->nlater++;
}

/* Its reply: one lost with its connection goes out again on the next; an error reply is
 * reported, not retried. */
static void on_later(redisAsyncContext *ac, void *r, void *arg)
{
    struct redis_engine *e = ac->data;
    const redisReply *reply = r;
    if (reply == NULL) {
        later_queue(e, arg);
        return;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        /* one that drops the connection (reconnect_error) is for that connection only */
        bool again = e->ac == ac && reconnect_error(reply);
        reply_error(e, ac, reply, "a deferred write");
        if (again) {
            later_queue(e, arg);
            return;
        }
    } else {
        store_report(e->st, true, NULL);
    }
    free(arg);
}

/* Sends l now when the connection is ready, else queues it; l is freed with its reply. */
static void later_send(struct redis_engine *e, struct later *l)
{
    if (e->state != R_READY) {
        later_queue(e, l);
        return;
    }
    char nkeys[4];
    struct sl_str argv[3 + LATER_STRS] = { SL_STR("EVALSHA"), sl_str_c(script_sha[l->script]),
                                           { nkeys, (size_t)snprintf(nkeys, sizeof(nkeys), "%u",
                                                                     l->nkeys) } };
    const char *p = l->data;
    for (unsigned i = 0; i < l->n; i++) {
        argv[3 + i] = (struct sl_str){ p, l->len[i] };
        p += l->len[i];
    }
    if (send_argv(e, on_later, l, 3 + l->n, argv) != REDIS_OK) {
        store_report(e->st, false, "redis would not take a command: a deferred write is lost");
        free(l);
    }
}

/* The connection is ready: what waited goes out first. */
static void later_flush(struct redis_engine *e)
{
    struct later *l = e->later;
    e->later = NULL;
    e->nlater = 0;
    while (l) {
        struct later *next = l->next;
        later_send(e, l);
        l = next;
    }
}

static void later_free_all(struct redis_engine *e)
{
    while (e->later) {
        struct later *next = e->later->next;
        free(e->later);
        e->later = next;
    }
    e->nlater = 0;
}

/* The keys of principal's fatigue (see the file comment): asked always; same when tool is
 * given (not NULL; else same holds only the tag). Built in room of their own, so that the
 * usual key (a short prefix, a hash tag of 32 hex digits) costs no allocation; k must not be
 * copied. */
struct ask_keys {
    struct sl_buf asked, same;
    char room[2][128];
};

static void ask_keys(const struct redis_engine *e, struct sl_str principal,
                     const struct sl_str *tool, const uint8_t digest[32], struct ask_keys *k)
{
    uint8_t who[32], what[32];
    char tagmem[128], toolmem[128];
    struct sl_buf tag, b;
    sl_buf_on(&tag, tagmem, sizeof(tagmem));
    seal_sha256(principal.p ? principal.p : "", principal.len, who);
    sl_buf_puts(&tag, e->prefix);
    sl_buf_puts(&tag, "ask:{");
    sl_hex_encode(&tag, who, 16); /* 128 bits (see the file comment) */
    sl_buf_puts(&tag, "}:");
    struct sl_buf *keys[] = { &k->asked, &k->same };
    for (size_t i = 0; i < SL_ARRAY_LEN(keys); i++) {
        sl_buf_on(keys[i], k->room[i], sizeof(k->room[i]));
        sl_buf_put(keys[i], tag.p, tag.len);
    }
    sl_buf_puts(&k->asked, "asked");
    sl_buf_free(&tag);
    if (tool == NULL)
        return;
    /* the digest has a fixed length, so tool and digest are told apart without a separator */
    sl_buf_on(&b, toolmem, sizeof(toolmem));
    sl_buf_put(&b, tool->p ? tool->p : "", tool->len);
    sl_buf_put(&b, digest, 32);
    seal_sha256(b.p, b.len, what);
    sl_buf_puts(&k->same, "same:");
    sl_hex_encode(&k->same, what, 16);
    sl_buf_free(&b);
}

static void ask_keys_free(struct ask_keys *k)
{
    sl_buf_free(&k->asked);
    sl_buf_free(&k->same);
}

/* A spend's SET NX GET: nil when it marked the nonce, else the record there (kept: what it
 * means waits for the epoch, on_spend). An error is reported here; on_spend refuses. */
static void on_spend_mark(redisAsyncContext *ac, void *r, void *arg)
{
    struct later *undo = arg;
    const redisReply *reply = r;
    if (reply == NULL)
        return; /* on_spend hears of it too: the replies after it are lost with it */
    undo->mark_reply = reply->type;
    if (reply->type == REDIS_REPLY_STRING)
        sl_buf_put(&undo->prior, reply->str, reply->len);
    else if (reply->type == REDIS_REPLY_ERROR)
        reply_error(ac->data, ac, reply, "a spend");
}

/* An answer's spend closes its question (the ZREM): only an error is worth a word. */
static void on_spend_close(redisAsyncContext *ac, void *r, void *unused)
{
    const redisReply *reply = r;
    (void)unused;
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR)
        reply_error(ac->data, ac, reply, "closing an answered question");
}

/* A spend found no epoch key: the store lost its records since this connection's setup (a
 * FLUSHALL). The first replica to see it begins a new epoch, as a setup would. */
static void on_epoch_begun(redisAsyncContext *ac, void *r, void *fresh)
{
    struct redis_engine *e = live(ac, r);
    const redisReply *reply = r;
    uint8_t epoch[STORE_NONCE_LEN];
    bool created;
    if (e != NULL && reply->type == REDIS_REPLY_ERROR)
        reply_error(e, ac, reply, "beginning a new epoch");
    else if (e != NULL && epoch_after_set(reply, fresh, epoch, &created))
        learn_epoch(e, epoch);
    else if (e != NULL)
        store_report(e->st, false, "the store's epoch key holds something other than 32 hex "
                                   "digits");
    free(fresh);
}

/* What a spend's replies say, given the epoch read after its mark: true when it marked the
 * nonce under the state's epoch (fresh: the caller goes on); else undo->req is ended here. */
static bool spend_settle(struct redis_engine *e, redisAsyncContext *ac, struct later *undo,
                         const redisReply *epoch_reply)
{
    struct store_req *req = undo->req;
    uint8_t epoch[STORE_NONCE_LEN];
    struct store_record rec;
    if (epoch_reply->type == REDIS_REPLY_ERROR) {
        reply_error(e, ac, epoch_reply, "a spend's epoch read");
    } else if (undo->mark_reply == REDIS_REPLY_ERROR) {
        /* reported by on_spend_mark */
    } else if (epoch_reply->type == REDIS_REPLY_NIL) {
        store_report(e->st, true, NULL);
        if (send_epoch(e, on_epoch_begun) != REDIS_OK)
            store_report(e->st, false, "redis would not take a command: no new epoch begun");
        store_req_done(req, STORE_RESET, NULL);
        return false;
    } else if (!epoch_of(epoch_reply, epoch)) {
        store_report(e->st, false, "the store's epoch key holds something other than 32 hex "
                                   "digits");
    } else if (memcmp(epoch, undo->origin, STORE_NONCE_LEN) != 0) {
        learn_epoch(e, epoch);
        store_report(e->st, true, NULL);
        store_req_done(req, STORE_RESET, NULL);
        return false;
    } else if (undo->mark_reply == REDIS_REPLY_NIL) {
        return true;
    } else if (undo->mark_reply == REDIS_REPLY_STRING &&
               store_record_decode(sl_buf_str(&undo->prior), &rec)) {
        store_report(e->st, true, NULL);
        store_req_done(req, STORE_SPENT, &rec);
        return false;
    } else {
        store_report(e->st, false, "redis answered a spend with something sluice did not write");
    }
    store_req_done(req, STORE_ERROR, NULL);
    return false;
}

/* A spend's epoch read, its last reply but WAIT's: the spend is decided here. arg: its release
 * (struct later), which goes out when the reply was lost, or when the spend marked the nonce and
 * its call does not run (refused, cancelled, timed out). With --store-replicas a WAIT follows,
 * and on_wait has the last word: a fresh spend is done only once the replicas have it. */
static void on_spend(redisAsyncContext *ac, void *r, void *arg)
{
    struct redis_engine *e = ac->data;
    struct later *undo = arg;
    struct store_req *req = undo->req;
    bool marked = undo->mark_reply == REDIS_REPLY_NIL;
    if (r == NULL) { /* gone with its connection: the nonce may be marked all the same */
        sl_buf_free(&undo->prior);
        store_req_done(req, STORE_ERROR, NULL);
        if (undo->waits)
            undo->release = true, undo->req = NULL;
        else
            later_queue(e, undo);
        return;
    }
    bool fresh = spend_settle(e, ac, undo, r);
    sl_buf_free(&undo->prior);
    if (fresh && undo->waits) {
        undo->fresh = true;
        return;
    }
    if (fresh) {
        store_report(e->st, true, NULL);
        if (store_req_done(req, STORE_FRESH, NULL))
            free(undo);
        else /* cancelled or timed out meanwhile: the call does not run */
            later_send(e, undo);
        return;
    }
    if (undo->waits)
        undo->release = marked, undo->req = NULL;
    else if (marked) /* marked, and refused all the same (an error after it, another epoch) */
        later_send(e, undo);
    else
        free(undo);
}

/* The WAIT after a spend: how many replicas have it. A fresh spend that too few have is
 * refused (STORE_ERROR: the call does not run) and released, as a lost one is: a failover to
 * a replica without it would let the same state be spent, and run, again. */
static void on_wait(redisAsyncContext *ac, void *r, void *arg)
{
    struct redis_engine *e = ac->data;
    struct later *undo = arg;
    const redisReply *reply = r;
    if (!undo->fresh) { /* decided by on_spend */
        if (!undo->release)
            free(undo);
        else if (reply == NULL)
            later_queue(e, undo);
        else
            later_send(e, undo);
        return;
    }
    struct store_req *req = undo->req;
    undo->req = NULL;
    if (reply && reply->type == REDIS_REPLY_INTEGER &&
        reply->integer >= (long long)e->st->o.replicas) {
        store_report(e->st, true, NULL);
        if (store_req_done(req, STORE_FRESH, NULL))
            free(undo);
        else
            later_send(e, undo);
        return;
    }
    char why[WHY_LEN];
    if (reply && reply->type == REDIS_REPLY_INTEGER)
        snprintf(why, sizeof(why), "redis: a spend reached %lld of the %u replicas "
                 "--store-replicas asks for; the call was not run", reply->integer,
                 e->st->o.replicas);
    else
        snprintf(why, sizeof(why), "redis did not answer WAIT after a spend; the call was not run");
    store_report(e->st, false, why);
    store_req_done(req, STORE_ERROR, NULL);
    if (reply == NULL)
        later_queue(e, undo);
    else
        later_send(e, undo);
}

static void redis_spend(void *impl, struct store_req *r, const uint8_t nonce[STORE_NONCE_LEN],
                        const uint8_t origin[STORE_NONCE_LEN], uint64_t ttl_s,
                        enum store_mark mark, const struct store_question *answers)
{
    struct redis_engine *e = impl;
    if (e->state != R_READY) {
        refuse_now(e, r, "not connected to redis");
        return;
    }
    char keymem[160], recmem[48], notmem[16], tag[33], ttl[21], nhex[33];
    uint8_t raw[STORE_NONCE_LEN];
    struct sl_buf key, rec, not_run;
    sl_buf_on(&key, keymem, sizeof(keymem));
    sl_buf_on(&rec, recmem, sizeof(recmem));
    sl_buf_on(&not_run, notmem, sizeof(notmem));
    store_key_nonce(&key, e->prefix, nonce);
    store_record_encode(&rec, mark, SL_STR_NULL);
    if (mark == STORE_MARK_RUNNING) { /* this spend's own tag: RELEASE_LUA undoes only it */
        SL_REQUIRE(seal_random_nonce(raw) == 0); /* the pool: RAND_bytes costs 6,600 a call */
        hex16(tag, raw);
        sl_buf_put(&rec, tag, 32);
    }
    store_record_encode(&not_run, STORE_MARK_REFUSED, SL_STR_NULL);
    struct sl_str release[] = { sl_buf_str(&key), sl_buf_str(&rec), sl_buf_str(&not_run) };
    struct later *undo = later_new(SCRIPT_RELEASE, 1, 3, release);
    undo->req = r;
    memcpy(undo->origin, origin, STORE_NONCE_LEN);
    sl_u64_dec(ttl, clamp_ttl(ttl_s));
    /* the mark first, then the epoch (see the file comment); hiredis refuses a command only on
     * a context being closed (or out of memory, which sluice never survives), so the commands
     * after a first one it took go out with it */
    int rc = SEND(e, on_spend_mark, undo, SL_STR("SET"), sl_buf_str(&key), sl_buf_str(&rec),
                  SL_STR("NX"), SL_STR("GET"), SL_STR("EX"), sl_str_c(ttl));
    if (rc == REDIS_OK && answers) {
        struct ask_keys k;
        ask_keys(e, answers->principal, NULL, NULL, &k);
        hex16(nhex, nonce);
        SL_REQUIRE(SEND(e, on_spend_close, NULL, SL_STR("ZREM"), sl_buf_str(&k.asked),
                        sl_str_c(nhex)) == REDIS_OK);
        ask_keys_free(&k);
    }
    if (rc == REDIS_OK)
        SL_REQUIRE(SEND(e, on_spend, undo, SL_STR("GET"), sl_buf_str(&e->epoch_key)) == REDIS_OK);
    if (rc == REDIS_OK && e->st->o.replicas) {
        /* half the store's bound, so that too few replicas are told from no answer at all */
        char n[21], ms[21];
        sl_u64_dec(n, e->st->o.replicas);
        sl_u64_dec(ms, e->st->o.timeout_ms / 2 ? e->st->o.timeout_ms / 2 : 1);
        SL_REQUIRE(SEND(e, on_wait, undo, SL_STR("WAIT"), sl_str_c(n), sl_str_c(ms)) == REDIS_OK);
        undo->waits = true;
    }
    sl_buf_free(&key);
    sl_buf_free(&rec);
    sl_buf_free(&not_run);
    if (rc != REDIS_OK) {
        free(undo);
        refuse_now(e, r, "redis would not take a command");
    }
}

static void on_get(redisAsyncContext *ac, void *r, void *arg)
{
    struct redis_engine *e = ac->data;
    struct store_req *req = arg;
    const redisReply *reply = r;
    struct store_record rec;
    if (reply == NULL) {
        store_req_done(req, STORE_ERROR, NULL);
    } else if (reply->type == REDIS_REPLY_NIL) {
        store_report(e->st, true, NULL);
        store_req_done(req, STORE_ABSENT, NULL);
    } else if (reply->type == REDIS_REPLY_STRING &&
               store_record_decode((struct sl_str){ reply->str, reply->len }, &rec)) {
        store_report(e->st, true, NULL);
        store_req_done(req, STORE_FOUND, &rec);
    } else {
        if (reply->type == REDIS_REPLY_ERROR)
            reply_error(e, ac, reply, "a read");
        else
            store_report(e->st, false, "a record in redis is not one sluice wrote");
        store_req_done(req, STORE_ERROR, NULL);
    }
}

static void redis_get(void *impl, struct store_req *r, const uint8_t nonce[STORE_NONCE_LEN])
{
    struct redis_engine *e = impl;
    if (e->state != R_READY) {
        refuse_now(e, r, "not connected to redis");
        return;
    }
    char keymem[160];
    struct sl_buf key;
    sl_buf_on(&key, keymem, sizeof(keymem));
    store_key_nonce(&key, e->prefix, nonce);
    int rc = SEND(e, on_get, r, SL_STR("GET"), sl_buf_str(&key));
    sl_buf_free(&key);
    if (rc != REDIS_OK)
        refuse_now(e, r, "redis would not take a command");
}

/* A put's reply: nil when the record is gone (expired, or a wiped store: XX does not bring it
 * back), which is no failure of the store. */
static void on_put(redisAsyncContext *ac, void *r, void *unused)
{
    struct redis_engine *e = ac->data;
    const redisReply *reply = r;
    if (reply == NULL)
        return; /* the connection went: reported by whoever saw it go */
    if (reply->type == REDIS_REPLY_ERROR) {
        reply_error(e, ac, reply, "keeping an outcome");
        return;
    }
    if (reply->type == REDIS_REPLY_NIL)
        sl_debug("store: an outcome was not kept: its record is gone from redis");
    store_report(e->st, true, NULL);
}

static void redis_put(void *impl, const uint8_t nonce[STORE_NONCE_LEN], uint64_t ttl_s,
                      enum store_mark mark, struct sl_str body)
{
    struct redis_engine *e = impl;
    if (e->state != R_READY) {
        store_report(e->st, false, "not connected to redis: an outcome was not kept");
        return;
    }
    char keymem[160], ttl[21];
    struct sl_buf key, rec = { 0 };
    sl_buf_on(&key, keymem, sizeof(keymem));
    store_key_nonce(&key, e->prefix, nonce);
    store_record_encode(&rec, mark, body);
    sl_u64_dec(ttl, clamp_ttl(ttl_s));
    int rc = SEND(e, on_put, NULL, SL_STR("SET"), sl_buf_str(&key), sl_buf_str(&rec), SL_STR("EX"),
                  sl_str_c(ttl), SL_STR("XX"));
    sl_buf_free(&key);
    sl_buf_free(&rec);
    if (rc != REDIS_OK)
        store_report(e->st, false, "redis would not take a command: an outcome was not kept");
}

/* ===== the approval page's records ===== */

static void page_key(struct sl_buf *key, const char *prefix, enum store_page_kind kind,
                     const uint8_t id[STORE_NONCE_LEN])
{
    sl_buf_puts(key, prefix);
    sl_buf_puts(key, kind == STORE_PAGE_DECISION ? "page-decision:" : "page:");
    sl_hex_encode(key, id, STORE_NONCE_LEN);
}

static void on_page_decide(redisAsyncContext *ac, void *r, void *arg)
{
    struct redis_engine *e = ac->data;
    struct store_req *req = arg;
    const redisReply *reply = r;
    if (reply == NULL || reply->type == REDIS_REPLY_ERROR) {
        if (reply)
            reply_error(e, ac, reply, "an approval record");
        store_req_done(req, STORE_ERROR, NULL);
        return;
    }
    store_report(e->st, true, NULL);
    const redisReply *code = reply->type == REDIS_REPLY_ARRAY && reply->elements >= 1
                                 ? reply->element[0] : NULL;
    const redisReply *val = code && reply->elements >= 2 ? reply->element[1] : NULL;
    if (code && code->type == REDIS_REPLY_INTEGER && code->integer == 0) {
        store_req_done(req, STORE_FRESH, NULL);
    } else if (code && code->type == REDIS_REPLY_INTEGER && code->integer == 1 && val &&
               val->type == REDIS_REPLY_STRING) {
        struct store_record rec = { .mark = STORE_MARK_DONE,
                                    .body = { val->str, val->len } };
        store_req_done(req, STORE_SPENT, &rec);
    } else {
        store_req_done(req, STORE_ERROR, NULL);
    }
}

static void redis_page_decide(void *impl, struct store_req *r, const uint8_t id[STORE_NONCE_LEN],
                              uint64_t ttl_s, struct sl_str value)
{
    struct redis_engine *e = impl;
    if (e->state != R_READY) {
        refuse_now(e, r, "not connected to redis");
        return;
    }
    char ttl[21];
    struct sl_buf key = { 0 };
    page_key(&key, e->prefix, STORE_PAGE_DECISION, id);
    sl_u64_dec(ttl, clamp_ttl(ttl_s));
    int rc = SEND(e, on_page_decide, r, SL_STR("EVALSHA"),
                  sl_str_c(script_sha[SCRIPT_PAGE_DECIDE]), SL_STR("1"), sl_buf_str(&key), value,
                  sl_str_c(ttl));
    sl_buf_free(&key);
    if (rc != REDIS_OK)
        refuse_now(e, r, "redis would not take a command");
}

static void on_page_question(redisAsyncContext *ac, void *r, void *arg)
{
    struct redis_engine *e = ac->data;
    struct store_req *req = arg;
    const redisReply *reply = r;
    if (reply == NULL) { /* the connection went: the write may or may not have landed */
        store_req_done(req, STORE_ERROR, NULL);
    } else if (reply->type == REDIS_REPLY_STATUS && reply->len == 2 &&
               memcmp(reply->str, "OK", 2) == 0) {
        store_report(e->st, true, NULL);
        store_req_done(req, STORE_FRESH, NULL);
    } else {
        if (reply->type == REDIS_REPLY_ERROR) /* OOM under maxmemory, NOPERM, ... */
            reply_error(e, ac, reply, "an approval record");
        store_req_done(req, STORE_ERROR, NULL);
    }
}

/* Answered once Redis took the record (its reply), so that a URL never goes out to a page Redis
 * refused after the write was sent. No share per principal here: Redis's memory is the
 * operator's (maxmemory), and a principal's page records are bounded by its own limits
 * already: at most per_minute new questions a minute, each record living its state's ttl plus
 * the retention (README: Records). */
static void redis_page_question(void *impl, struct store_req *r, struct sl_str principal,
                                const uint8_t id[STORE_NONCE_LEN], uint64_t ttl_s,
                                struct sl_str value)
{
    struct redis_engine *e = impl;
    (void)principal;
    if (e->state != R_READY)
        return refuse_now(e, r, "not connected to redis: an approval page was not kept");
    char ttl[21];
    struct sl_buf key = { 0 };
    page_key(&key, e->prefix, STORE_PAGE_QUESTION, id);
    sl_u64_dec(ttl, clamp_ttl(ttl_s));
    int rc = SEND(e, on_page_question, r, SL_STR("SET"), sl_buf_str(&key), value, SL_STR("EX"),
                  sl_str_c(ttl));
    sl_buf_free(&key);
    if (rc != REDIS_OK)
        refuse_now(e, r, "redis would not take a command: an approval page was not kept");
}

static void on_page_get(redisAsyncContext *ac, void *r, void *arg)
{
    struct redis_engine *e = ac->data;
    struct store_req *req = arg;
    const redisReply *reply = r;
    if (reply == NULL) {
        store_req_done(req, STORE_ERROR, NULL);
    } else if (reply->type == REDIS_REPLY_NIL) {
        store_report(e->st, true, NULL);
        store_req_done(req, STORE_ABSENT, NULL);
    } else if (reply->type == REDIS_REPLY_STRING) {
        store_report(e->st, true, NULL);
        struct store_record rec = { .mark = STORE_MARK_DONE,
                                    .body = { reply->str, reply->len } };
        store_req_done(req, STORE_FOUND, &rec);
    } else {
        if (reply->type == REDIS_REPLY_ERROR)
            reply_error(e, ac, reply, "an approval read");
        store_req_done(req, STORE_ERROR, NULL);
    }
}

static void redis_page_get(void *impl, struct store_req *r, enum store_page_kind kind,
                           const uint8_t id[STORE_NONCE_LEN])
{
    struct redis_engine *e = impl;
    if (e->state != R_READY)
        return refuse_now(e, r, "not connected to redis");
    struct sl_buf key = { 0 };
    page_key(&key, e->prefix, kind, id);
    int rc = SEND(e, on_page_get, r, SL_STR("GET"), sl_buf_str(&key));
    sl_buf_free(&key);
    if (rc != REDIS_OK)
        refuse_now(e, r, "redis would not take a command");
}

/* ===== approval fatigue ===== */

static void ask_reply(struct redis_engine *e, redisAsyncContext *ac, const redisReply *reply,
                      struct store_req *req)
{
    static const enum asks_status codes[] = { ASKS_OK, ASKS_SAME, ASKS_OPEN, ASKS_RATE };
    if (reply->type == REDIS_REPLY_ERROR) {
        reply_error(e, ac, reply, "a question's limits");
        store_req_asked(req, STORE_ERROR, ASKS_OK, SL_STR_NULL);
        return;
    }
    const redisReply *code = reply->type == REDIS_REPLY_ARRAY && reply->elements >= 1
                                 ? reply->element[0] : NULL;
    const redisReply *val = code && reply->elements >= 2 ? reply->element[1] : NULL;
    if (code != NULL && code->type == REDIS_REPLY_INTEGER && code->integer >= 0 &&
        code->integer < (long long)SL_ARRAY_LEN(codes)) {
        enum asks_status as = codes[code->integer];
        if (as != ASKS_SAME || (val && val->type == REDIS_REPLY_STRING)) {
            store_report(e->st, true, NULL);
            store_req_asked(req, STORE_OK, as,
                            as == ASKS_SAME ? (struct sl_str){ val->str, val->len }
                                            : SL_STR_NULL);
            return;
        }
    }
    store_report(e->st, false, "redis answered a question's limits with something sluice did "
                               "not write");
    store_req_asked(req, STORE_ERROR, ASKS_OK, SL_STR_NULL);
}

static void on_ask(redisAsyncContext *ac, void *r, void *arg)
{
    struct redis_engine *e = ac->data;
    struct later *undo = arg;
    struct store_req *req = undo->req;
    if (r == NULL) { /* gone with its connection: it may have run all the same */
        store_req_asked(req, STORE_ERROR, ASKS_OK, SL_STR_NULL);
        later_queue(e, undo);
        return;
    }
    free(undo);
    ask_reply(e, ac, r, req);
}

static void redis_ask(void *impl, struct store_req *r, struct sl_str principal, struct sl_str tool,
                      const uint8_t digest[32], const uint8_t nonce[STORE_NONCE_LEN],
                      uint64_t now, uint64_t exp, unsigned max_open, unsigned per_minute,
                      struct sl_str blob)
{
    struct redis_engine *e = impl;
    if (e->state != R_READY) {
        refuse_now(e, r, "not connected to redis");
        return;
    }
    char nhex[33], snow[21], sexp[22], sopen[21], srate[21], sttl[21];
    struct ask_keys k;
    ask_keys(e, principal, &tool, digest, &k);
    hex16(nhex, nonce);
    sl_u64_dec(snow, now);
    sexp[0] = '-'; /* the open questions' scores are under zero (see the file comment) */
    sl_u64_dec(sexp + 1, exp);
    sl_u64_dec(sopen, max_open);
    sl_u64_dec(srate, per_minute);
    sl_u64_dec(sttl, exp > now + 1 ? exp - now : 1);
    char recmem[1024]; /* the same key's record, joined here (ASK_LUA says why) */
    struct sl_buf rec;
    sl_buf_on(&rec, recmem, sizeof(recmem));
    sl_buf_put(&rec, nhex, 32);
    sl_buf_putc(&rec, '\n');
    sl_buf_put(&rec, blob.p, blob.len);
    struct sl_str close[] = { sl_buf_str(&k.asked), sl_str_c(nhex) };
    struct later *undo = later_new(SCRIPT_ANSWERED, 1, 2, close);
    undo->req = r;
    int rc = SEND(e, on_ask, undo, SL_STR("EVALSHA"), sl_str_c(script_sha[SCRIPT_ASK]), SL_STR("2"),
                  sl_buf_str(&k.asked), sl_buf_str(&k.same), sl_str_c(nhex),
                  sl_str_c(snow), sl_str_c(sexp), sl_str_c(sopen), sl_str_c(srate),
                  sl_buf_str(&rec), sl_str_c(sttl));
    ask_keys_free(&k);
    sl_buf_free(&rec);
    if (rc != REDIS_OK) {
        free(undo);
        refuse_now(e, r, "redis would not take a command");
    }
}

static void redis_answered(void *impl, struct sl_str principal, struct sl_str tool,
                           const uint8_t digest[32], const uint8_t nonce[STORE_NONCE_LEN])
{
    struct redis_engine *e = impl;
    (void)tool, (void)digest; /* the same key is left to ASK_LUA */
    char nhex[33];
    struct ask_keys k;
    ask_keys(e, principal, NULL, NULL, &k);
    hex16(nhex, nonce);
    struct sl_str strs[] = { sl_buf_str(&k.asked), sl_str_c(nhex) };
    later_send(e, later_new(SCRIPT_ANSWERED, 1, 2, strs));
    ask_keys_free(&k);
}

static void redis_withdrawn(void *impl, struct sl_str principal, struct sl_str tool,
                            const uint8_t digest[32])
{
    struct redis_engine *e = impl;
    struct ask_keys k;
    ask_keys(e, principal, &tool, digest, &k);
    struct sl_str strs[] = { sl_buf_str(&k.asked), sl_buf_str(&k.same) };
    later_send(e, later_new(SCRIPT_WITHDRAWN, 2, 2, strs));
    ask_keys_free(&k);
}

/* ===== audit anchors ===== */

static void on_anchor(redisAsyncContext *ac, void *r, void *unused)
{
    struct redis_engine *e = ac->data;
    const redisReply *reply = r;
    (void)unused;
    if (reply == NULL)
        return;
    if (reply->type == REDIS_REPLY_ERROR)
        reply_error(e, ac, reply, "an audit anchor");
    else
        store_report(e->st, true, NULL);
}

static void redis_anchor(void *impl, struct sl_str entry, unsigned cap)
{
    struct redis_engine *e = impl;
    if (e->state != R_READY) {
        store_report(e->st, false, "not connected to redis: an audit anchor was not kept");
        return;
    }
    char keymem[160], n[21];
    struct sl_buf key;
    sl_buf_on(&key, keymem, sizeof(keymem));
    store_key_anchors(&key, e->prefix);
    sl_u64_dec(n, cap);
    int rc = SEND(e, on_anchor, NULL, SL_STR("EVALSHA"), sl_str_c(script_sha[SCRIPT_ANCHOR]),
                  SL_STR("1"),
                  sl_buf_str(&key), entry, sl_str_c(n));
    sl_buf_free(&key);
    if (rc != REDIS_OK)
        store_report(e->st, false, "redis would not take a command: an audit anchor was not kept");
}

/* One command on a blocking connection; false with err unless the reply is not an error. */
static bool sync_ok(redisContext *c, redisReply *reply, const char *what, char *err,
                    size_t errlen)
{
    if (reply == NULL) {
        snprintf(err, errlen, "redis: %s: %s", what, c->errstr);
        return false;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "redis answered %s with: %.160s", what, reply->str);
        freeReplyObject(reply);
        return false;
    }
    return true;
}

static int fetch_anchors(redisContext *c, const struct store_opts *o, const struct store_url *u,
                         struct sl_buf *out, char *err, size_t errlen)
{
    redisReply *r;
    if (o->password && *o->password) {
        r = u->user[0] ? redisCommand(c, "AUTH %s %s", u->user, o->password)
                       : redisCommand(c, "AUTH %s", o->password);
        if (!sync_ok(c, r, "AUTH", err, errlen))
            return -1;
        freeReplyObject(r);
    }
    if (u->db != 0) {
        r = redisCommand(c, "SELECT %u", u->db);
        if (!sync_ok(c, r, "SELECT", err, errlen))
            return -1;
        freeReplyObject(r);
    }
    struct sl_buf key = { 0 };
    store_key_anchors(&key, o->prefix);
    r = redisCommand(c, "LRANGE %b 0 -1", key.p, key.len);
    sl_buf_free(&key);
    if (!sync_ok(c, r, "LRANGE", err, errlen))
        return -1;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        if (r->element[i]->type != REDIS_REPLY_STRING)
            continue;
        sl_buf_put(out, r->element[i]->str, r->element[i]->len);
        sl_buf_putc(out, '\n');
    }
    freeReplyObject(r);
    return 0;
}

int store_redis_anchor_fetch(const struct store_opts *o, struct sl_buf *out, char *err,
                             size_t errlen)
{
    struct store_url u;
    if (store_url_parse(o->url, &u, err, errlen) != 0)
        return -1;
    unsigned ms = o->timeout_ms ? o->timeout_ms : SETUP_DEFAULT_MS;
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    redisContext *c = redisConnectWithTimeout(u.host, (int)u.port, tv);
    if (c == NULL || c->err) {
        snprintf(err, errlen, "redis %s:%u: %s", u.host, u.port, c ? c->errstr : "no memory");
        redisFree(c);
        return -1;
    }
    redisSetTimeout(c, tv);
    int rc = fetch_anchors(c, o, &u, out, err, errlen);
    redisFree(c);
    return rc;
}

/* A request timed out: a connection that stopped answering is given up, so that its other
 * requests end now rather than one timeout each, and the next connection may reach a store
 * that answers. */
static void redis_stalled(void *impl)
{
    struct redis_engine *e = impl;
    if (e->state != R_READY)
        return;
    char why[WHY_LEN];
    snprintf(why, sizeof(why), "redis %s:%u did not answer within %u ms", e->url.host,
             e->url.port, setup_ms(e));
    drop(e, why);
}

/* Must not be called from inside one of this engine's hiredis callbacks (store.c runs the
 * callers' callbacks from the event loop, never from there): the context is freed here, and its
 * pending commands end with STORE_ERROR through store_req_done before this returns. */
static void redis_free(void *impl)
{
    struct redis_engine *e = impl;
    if (e == NULL)
        return;
    e->state = R_CLOSED;
    if (e->lookup != NULL)
        evdns_getaddrinfo_cancel(e->lookup);
    if (e->ac != NULL) {
        redisAsyncContext *ac = e->ac;
        SL_REQUIRE(!(ac->c.flags & REDIS_IN_CALLBACK));
        e->ac = NULL;
        redisAsyncFree(ac);
    }
    later_free_all(e);
    event_free(e->timer);
    evdns_base_free(e->dns, 0);
    sl_buf_free(&e->epoch_key);
    free(e);
}

void *store_redis_open(struct store *st, char *err, size_t errlen)
{
    struct store_url url;
    const char *prefix = st->o.prefix ? st->o.prefix : "sluice:";
    if (store_url_parse(st->o.url, &url, err, errlen) != 0 ||
        !store_prefix_ok(prefix, err, errlen))
        return NULL;
    if (url.kind != STORE_URL_REDIS) {
        snprintf(err, errlen, "not a redis:// store URL");
        return NULL;
    }
    struct evdns_base *dns = evdns_base_new(st->base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
                                                          EVDNS_BASE_DISABLE_WHEN_INACTIVE);
    if (dns == NULL) {
        snprintf(err, errlen, "cannot start a DNS resolver for the redis host (/etc/resolv.conf)");
        return NULL;
    }
    if (script_sha[0][0] == '\0')
        hash_scripts();
    struct redis_engine *e = sl_xcalloc(1, sizeof(*e));
    e->st = st;
    e->url = url;
    e->prefix = prefix;
    store_key_epoch(&e->epoch_key, prefix);
    e->dns = dns;
    e->timer = evtimer_new(st->base, on_timer, e);
    SL_REQUIRE(e->timer != NULL);
    e->backoff_ms = BACKOFF_MIN_MS;
    e->state = R_IDLE;
    arm(e->timer, 0); /* the first attempt from the loop: store_open has returned by then */
    if (url.user[0] != '\0' && (st->o.password == NULL || st->o.password[0] == '\0'))
        sl_warn("store: the redis URL names the user %s but SLUICE_STORE_PASSWORD is not set: "
                "sluice does not log in", url.user);
    return e;
}

const struct store_ops store_redis_ops = {
    .kind = "redis",
    .shared = true,
    .spend = redis_spend,
    .get = redis_get,
    .put = redis_put,
    .ask = redis_ask,
    .answered = redis_answered,
    .withdrawn = redis_withdrawn,
    .page_decide = redis_page_decide,
    .page_question = redis_page_question,
    .page_get = redis_page_get,
    .anchor = redis_anchor,
    .stalled = redis_stalled,
    .free = redis_free,
};
