/* audit.c: the decision journal. One JSON object per line, each a link of a hash chain (audit.h).
 * Each line is formatted whole first and appended with one write(2) on an O_APPEND descriptor:
 * every record goes to the current end of the file (even after logrotate's copytruncate), and
 * on Linux another appender cannot land inside it (it would break the chain, which verify then
 * shows: one journal, one writer). Nothing is buffered in user space; --audit-sync says when
 * the kernel is made to write it to the disk. */
#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "log.h"
#include "seal.h"

/* ===== the names ===== */

static const char *const decision_names[AUDIT_DECISION_COUNT] = {
    [AUDIT_ALLOW] = "allow",
    [AUDIT_DENY] = "deny",
    [AUDIT_ASKED] = "asked",
    [AUDIT_CLIENT_ACCEPTED] = "client-accepted",
    [AUDIT_DECLINED] = "declined",
    [AUDIT_CANCELLED] = "cancelled",
    [AUDIT_REFUSED] = "refused",
    [AUDIT_TOKEN_ISSUED] = "token-issued",
    [AUDIT_TOKEN_REDEEMED] = "token-redeemed",
    [AUDIT_REPLAYED_RESULT] = "replayed-result",
    [AUDIT_PAGE_APPROVED] = "page-approved",
    [AUDIT_PAGE_DECLINED] = "page-declined",
    [AUDIT_OBSERVE] = "observe",
    [AUDIT_OBSERVING] = "observing",
    [AUDIT_FORWARDING] = "forwarding",
};

static const char *const upstream_names[AUDIT_UPSTREAM_COUNT] = {
    [AUDIT_UP_OK] = "ok",
    [AUDIT_UP_TOOL_ERROR] = "tool-error",
    [AUDIT_UP_ERROR] = "error",
    [AUDIT_UP_INPUT_REQUIRED] = "input-required",
    [AUDIT_UP_NO_RESPONSE] = "no-response",
    [AUDIT_UP_CANCELLED] = "cancelled",
    [AUDIT_UP_NOT_FORWARDED] = "not-forwarded",
    [AUDIT_UP_UNAVAILABLE] = "unavailable",
};

const char *audit_decision_name(enum audit_decision d)
{
    return (unsigned)d < AUDIT_DECISION_COUNT ? decision_names[d] : NULL;
}

const char *audit_upstream_name(enum audit_upstream u)
{
    return (unsigned)u < AUDIT_UPSTREAM_COUNT ? upstream_names[u] : NULL;
}

/* ===== formatting ===== */

/* RFC 3339 UTC with milliseconds: "2026-11-29T14:00:00.123Z". A time gmtime cannot represent
 * (far outside any real clock) is written as null rather than as a wrong date. */
static void put_time(struct sl_buf *out, uint64_t ms)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    char date[64];
    if ((uint64_t)secs != ms / 1000 || gmtime_r(&secs, &tm) == NULL ||
        strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
        sl_buf_puts(out, "null");
        return;
    }
    sl_buf_printf(out, "\"%s.%03uZ\"", date, (unsigned)(ms % 1000));
}

/* A C string field: JSON-escaped (so quotes and newlines in untrusted text cannot break the line),
 * or null when absent. */
static void put_cstr(struct sl_buf *out, const char *s)
{
    if (s == NULL)
        sl_buf_puts(out, "null");
    else
        json_write_string(out, s, strlen(s));
}

static void put_digest(struct sl_buf *out, const uint8_t *digest)
{
    if (digest == NULL) {
        sl_buf_puts(out, "null");
        return;
    }
    sl_buf_putc(out, '"');
    sl_hex_encode(out, digest, 32);
    sl_buf_putc(out, '"');
}

/* request_id comes from our own writer, so it should always be a JSON string or number. It is
 * still checked, cheaply, because a bad one would corrupt the line (and with a newline, forge the
 * next one): a string must be quoted with no raw control byte and no unescaped quote inside; a
 * number may only use number characters. Anything else is left out of the record. */
static bool id_string_ok(const char *s, size_t len)
{
    if (len < 2 || s[0] != '"' || s[len - 1] != '"')
        return false;
    for (size_t i = 1; i < len - 1; i++) {
        if ((unsigned char)s[i] < 0x20 || s[i] == '"')
            return false;
        if (s[i] == '\\' && ++i == len - 1)
            return false; /* the closing quote was escaped */
    }
    return true;
}

static bool id_ok(const char *s)
{
    size_t len = strlen(s);
    if (len == 0)
        return false;
    if (s[0] == '"')
        return id_string_ok(s, len);
    return strspn(s, "0123456789-+.eE") == len;
}

void audit_format(struct sl_buf *out, const struct audit_record *r)
{
    sl_buf_puts(out, "{\"time\":");
    put_time(out, r->time_ms);
    sl_buf_puts(out, ",\"principal\":");
    put_cstr(out, r->principal);
    sl_buf_puts(out, ",\"tool\":");
    if (r->tool.p == NULL)
        sl_buf_puts(out, "null");
    else
        json_write_string(out, r->tool.p, r->tool.len);
    sl_buf_puts(out, ",\"args_sha256\":");
    put_digest(out, r->args_digest);
    sl_buf_puts(out, ",\"decision\":");
    put_cstr(out, audit_decision_name(r->decision));
    sl_buf_puts(out, ",\"reason\":");
    put_cstr(out, r->reason);
    sl_buf_puts(out, ",\"upstream\":");
    put_cstr(out, audit_upstream_name(r->upstream));
    if (r->request_id != NULL && id_ok(r->request_id)) {
        sl_buf_puts(out, ",\"id\":");
        sl_buf_puts(out, r->request_id);
    }
    sl_buf_puts(out, "}\n");
}

/* ===== the chain's text ===== */

static bool hex_ok(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return false;
    return true;
}

/* The one spelling sluice writes, and so the only one accepted: no spaces, no reordering. */
bool audit_parse_link(struct sl_str line, uint64_t *seq, uint8_t prev[32])
{
    static const char head[] = "{\"seq\":", mid[] = ",\"prev\":\"";
    size_t i = sizeof(head) - 1, d = 0;
    if (line.len < i || memcmp(line.p, head, i) != 0)
        return false;
    while (i + d < line.len && line.p[i + d] >= '0' && line.p[i + d] <= '9')
        d++;
    if (d == 0 || line.p[i] == '0' || !sl_u64_parse((struct sl_str){ line.p + i, d }, seq))
        return false;
    i += d;
    if (line.len < i + sizeof(mid) - 1 + 64 + 2 || memcmp(line.p + i, mid, sizeof(mid) - 1) != 0)
        return false;
    i += sizeof(mid) - 1;
    if (!hex_ok(line.p + i, 64) || line.p[i + 64] != '"' || line.p[i + 65] != ',')
        return false;
    return sl_hex_decode(line.p + i, 64, prev, 32) == 32;
}

/* The last occurrence of key followed by n lowercase hex digits and a quote, or NULL. */
static const char *find_hex_field(struct sl_str s, const char *key, size_t n)
{
    size_t k = strlen(key);
    for (size_t i = s.len >= k + n + 1 ? s.len - k - n - 1 + 1 : 0; i-- > 0;)
        if (memcmp(s.p + i, key, k) == 0 && hex_ok(s.p + i + k, n) && s.p[i + k + n] == '"')
            return s.p + i + k;
    return NULL;
}

bool audit_line_chain(struct sl_str line, char out[AUDIT_CHAIN_ID_HEX + 1])
{
    const char *p = find_hex_field(line, "\"chain\":\"", AUDIT_CHAIN_ID_HEX);
    if (p == NULL)
        return false;
    memcpy(out, p, AUDIT_CHAIN_ID_HEX);
    out[AUDIT_CHAIN_ID_HEX] = '\0';
    return true;
}

#define ANCHOR_TEXT "audit anchor: chain="

/* s starts with lit: true, and s is what follows it. */
static bool eat(struct sl_str *s, const char *lit)
{
    size_t n = strlen(lit);
    if (s->len < n || memcmp(s->p, lit, n) != 0)
        return false;
    s->p += n;
    s->len -= n;
    return true;
}

/* s up to the first c (not included), which must come before any backslash; s is then what
 * follows c. */
static bool eat_until(struct sl_str *s, char c)
{
    size_t i = 0;
    while (i < s->len && s->p[i] != c && s->p[i] != '\\')
        i++;
    if (i == s->len || s->p[i] != c)
        return false;
    s->p += i + 1;
    s->len -= i + 1;
    return true;
}

/* The anchor's text, exactly: "audit anchor: chain=C seq=N sha256=H" and nothing after. */
static bool anchor_text(struct sl_str s, char chain[AUDIT_CHAIN_ID_HEX + 1], uint64_t *seq,
                        uint8_t hash[32])
{
    if (!eat(&s, ANCHOR_TEXT) || s.len < AUDIT_CHAIN_ID_HEX || !hex_ok(s.p, AUDIT_CHAIN_ID_HEX))
        return false;
    memcpy(chain, s.p, AUDIT_CHAIN_ID_HEX);
    chain[AUDIT_CHAIN_ID_HEX] = '\0';
    s.p += AUDIT_CHAIN_ID_HEX;
    s.len -= AUDIT_CHAIN_ID_HEX;
    size_t d = 0;
    if (!eat(&s, " seq="))
        return false;
    while (d < s.len && s.p[d] >= '0' && s.p[d] <= '9')
        d++;
    if (!sl_u64_parse((struct sl_str){ s.p, d }, seq))
        return false;
    s.p += d;
    s.len -= d;
    return eat(&s, " sha256=") && s.len == 64 && hex_ok(s.p, 64) &&
           sl_hex_decode(s.p, 64, hash, 32) == 32;
}

/* Only where sluice's own line puts it (log.c): at the start (the store's entries), after
 * "sluice: info: " (text logs), or as the msg of a JSON log line with no source field. A line
 * an upstream wrote to its stderr is never one: with JSON logs it carries "source":"upstream"
 * where the msg would be, and its quotes are escaped, so no text in it can look like the
 * fields; in text logs an upstream's stderr is passed through as it is, so a line of its that
 * contains the text elsewhere is not taken either. */
bool audit_parse_anchor(struct sl_str line, char chain[AUDIT_CHAIN_ID_HEX + 1], uint64_t *seq,
                        uint8_t hash[32])
{
    struct sl_str s = line;
    if (eat(&s, "sluice: info: "))
        return anchor_text(s, chain, seq, hash); /* a text log line */
    if (!eat(&s, "{\"ts\":\""))
        return anchor_text(s, chain, seq, hash); /* the text alone */
    if (!eat_until(&s, '"') || !eat(&s, ",\"level\":\"info\","))
        return false;
    if (eat(&s, "\"request_id\":\"") && (!eat_until(&s, '"') || !eat(&s, ",")))
        return false;
    if (!eat(&s, "\"msg\":\"") || s.len < 2 || memcmp(s.p + s.len - 2, "\"}", 2) != 0)
        return false;
    s.len -= 2;
    return anchor_text(s, chain, seq, hash);
}

/* ===== the file ===== */

#define TAIL_MAX ((size_t)1 << 20)  /* a last line longer than this is taken as damaged */
#define SCAN_MAX ((off_t)64 << 20)  /* how far back the chain id is looked for at start */
#define SCAN_BLOCK 65536

struct audit {
    int fd;
    char *path;
    struct sl_buf line;        /* reused for every record */
    struct audit_opts o;
    uint64_t seq;              /* of the last line written; 0 before the first */
    uint8_t head[32];          /* SHA-256 of the last line written */
    char chain[AUDIT_CHAIN_ID_HEX + 1];
    dev_t dev;                 /* the file the descriptor is on: a rename away shows */
    ino_t ino;
    off_t end;                 /* where our last line ended: a truncation shows */
    bool dirty;                /* written since the last fsync */
    bool broken;               /* a cut line could not be taken back: every write fails */
    bool reopen_failing;       /* the path moved away and could not be opened again */
    uint64_t anchored_seq;     /* the head last anchored */
    uint64_t anchored_us;
};

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One write(2) normally carries the whole line; the loop only finishes a short write or retries
 * after a signal, it never splits a line on purpose. *done: the bytes that went out, also when
 * it fails (a full disk takes part of a line, then refuses the rest). */
static int write_all(int fd, const char *p, size_t len, size_t *done)
{
    *done = 0;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0)
            errno = EIO; /* cannot happen for len > 0; do not spin on it */
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
        *done += (size_t)n;
    }
    return 0;
}

/* The last line of the file (size bytes) into out, without its newline. *cut: the file does
 * not end with a newline (a write cut short). -1 when it cannot be read or is over TAIL_MAX. */
static int read_tail(int fd, off_t size, struct sl_buf *out, bool *cut)
{
    size_t want = (size_t)size < TAIL_MAX ? (size_t)size : TAIL_MAX;
    sl_buf_reserve(out, want);
    ssize_t n = pread(fd, out->p, want, size - (off_t)want);
    if (n != (ssize_t)want)
        return -1;
    out->len = want;
    *cut = out->p[want - 1] != '\n';
    size_t end = *cut ? want : want - 1, start = end;
    while (start > 0 && out->p[start - 1] != '\n')
        start--;
    if (start == 0 && (size_t)size > want)
        return -1; /* no line start within TAIL_MAX */
    memmove(out->p, out->p + start, end - start);
    out->len = end - start;
    out->p[out->len] = '\0';
    return 0;
}

/* The chain id of the nearest event line before size: every start and rotation writes one, so
 * it is near unless the file ran long without either. Blocks overlap so no field is split. */
static bool scan_chain(int fd, off_t size, char chain[AUDIT_CHAIN_ID_HEX + 1])
{
    char *block = sl_xmalloc(SCAN_BLOCK);
    bool found = false;
    for (off_t end = size; end > 0 && size - end < SCAN_MAX && !found;) {
        off_t start = end > SCAN_BLOCK ? end - SCAN_BLOCK : 0;
        ssize_t n = pread(fd, block, (size_t)(end - start), start);
        if (n != end - start)
            break;
        found = audit_line_chain((struct sl_str){ block, (size_t)n }, chain);
        end = start == 0 ? 0 : start + 64;
    }
    free(block);
    return found;
}

/* ===== writing ===== */

static int do_sync(struct audit *a)
{
    a->dirty = false;
    if (fdatasync(a->fd) == 0)
        return 0;
    int err = errno;
    sl_warn("audit: fsync of %s: %s", a->path, strerror(err));
    errno = err;
    return -1;
}

/* A write that failed after part of a line went out (the disk filled up): the part is cut off
 * again, so the file stays whole lines and the next record does not extend it (verify would
 * call that line changed). With O_APPEND the offset is where the part ended. When it cannot be
 * cut, nothing more is written: every later record would be glued onto it. */
static void take_back(struct audit *a, size_t done)
{
    int saved = errno;
    off_t at = done ? lseek(a->fd, 0, SEEK_CUR) : 0;
    if (done && (at < (off_t)done || ftruncate(a->fd, at - (off_t)done) != 0)) {
        sl_error("audit: %s ends with a cut line that cannot be removed (%s); no more "
                 "records are written", a->path, strerror(errno));
        a->broken = true;
    }
    errno = saved;
}

static void anchor(struct audit *a)
{
    char hex[65], entry[160];
    audit_head(a, hex);
    snprintf(entry, sizeof(entry), ANCHOR_TEXT "%s seq=%llu sha256=%s", a->chain,
             (unsigned long long)a->seq, hex);
    sl_log_always(SL_LOG_INFO, "%s", entry); /* whatever --log-level: verify needs it */
    if (a->o.on_anchor)
        a->o.on_anchor(a->o.arg, entry);
    a->anchored_seq = a->seq;
    a->anchored_us = sl_mono_us();
}

/* The line just written (ending at at) began before where our last one ended: the file was
 * truncated (logrotate's copytruncate) after follow_rotation looked. Left there, it would begin
 * the new file with no rotated line, and verify would call the file's start cut off. It is
 * taken back, unless the file changed again meanwhile (then it is not there to take), and
 * neither the seq nor the head moves: 1, and the caller writes it again after a rotated line
 * (audit_write). -1 when it cannot be taken back, as take_back. */
static int landed_early(struct audit *a, off_t at)
{
    struct stat st;
    if (fstat(a->fd, &st) == 0 && st.st_size == at &&
        ftruncate(a->fd, at - (off_t)a->line.len) != 0) {
        sl_error("audit: %s was truncated under a write, whose line cannot be removed (%s); no "
                 "more records are written", a->path, strerror(errno));
        a->broken = true;
        return -1;
    }
    errno = EAGAIN; /* for a caller that cannot write it again (audit_open) */
    return 1;
}

/* a->line holds `{"seq":N,"prev":"H"` and then a JSON object: the object's brace becomes the
 * comma that joins them, and the line goes out as the next link. */
static int append_link(struct audit *a, size_t brace)
{
    if (a->broken) {
        errno = EIO;
        return -1;
    }
    a->line.p[brace] = ',';
    uint8_t h[32];
    seal_sha256(a->line.p, a->line.len - 1, h); /* the exact bytes without the newline */
    size_t done;
    if (write_all(a->fd, a->line.p, a->line.len, &done) != 0) {
        take_back(a, done);
        return -1;
    }
    off_t at = lseek(a->fd, 0, SEEK_CUR); /* O_APPEND: where this line ended */
    if (at >= (off_t)a->line.len && at - (off_t)a->line.len < a->end) /* not on a device */
        return landed_early(a, at);
    a->seq++;
    memcpy(a->head, h, 32);
    a->end = at >= 0 ? at : a->end + (off_t)a->line.len;
    /* interval: never here, so no call waits for the disk; audit_tick syncs what is dirty */
    a->dirty = true;
    /* always: a record the disk did not take is not on record, though the line is in the file
     * and the chain goes on from it (the caller's next record says what became of the call).
     * An anchor is synced first in either mode, as at audit_tick and audit_close: an anchor of a
     * line a power loss then takes makes verify report lines removed from the end. */
    bool due = a->o.anchor_every && a->seq - a->anchored_seq >= a->o.anchor_every;
    int rc = a->o.sync == AUDIT_SYNC_ALWAYS || due ? do_sync(a) : 0;
    if (due && rc == 0)
        anchor(a);
    return a->o.sync == AUDIT_SYNC_ALWAYS ? rc : 0;
}

static size_t put_link(struct audit *a)
{
    char hex[65] = "";
    if (a->seq == 0)
        memset(hex, '0', 64);
    else
        audit_head(a, hex);
    sl_buf_reset(&a->line);
    sl_buf_printf(&a->line, "{\"seq\":%llu,\"prev\":\"%s\"", (unsigned long long)(a->seq + 1),
                  hex);
    return a->line.len;
}

/* A line of sluice's own: event is new-chain, continued or rotated (audit.h). */
static int write_event(struct audit *a, const char *event, const char *reason)
{
    size_t brace = put_link(a);
    sl_buf_puts(&a->line, "{\"time\":");
    put_time(&a->line, wall_ms());
    sl_buf_printf(&a->line, ",\"event\":\"%s\",\"reason\":\"%s\",\"chain\":\"%s\"}\n", event,
                  reason, a->chain);
    return append_link(a, brace);
}

static int new_chain(struct audit *a, const char *reason)
{
    uint8_t id[AUDIT_CHAIN_ID_HEX / 2];
    SL_REQUIRE(seal_random_nonce(id) == 0);
    struct sl_buf b;
    sl_buf_on(&b, a->chain, sizeof(a->chain));
    sl_hex_encode(&b, id, sizeof(id));
    a->seq = 0;
    return write_event(a, "new-chain", reason);
}

/* Where the chain of the file on fd (size bytes) stands: continued from an intact last line,
 * else a new chain with the reason. */
static int take_up_chain(struct audit *a, off_t size)
{
    if (size == 0)
        return new_chain(a, "new-file");
    int rfd = open(a->path, O_RDONLY | O_CLOEXEC);
    struct sl_buf tail = { 0 };
    bool cut = false;
    uint8_t prev[32];
    const char *why = NULL;
    if (rfd < 0 || read_tail(rfd, size, &tail, &cut) != 0)
        why = "unreadable-tail";
    else if (cut)
        why = "damaged-tail";
    else if (!audit_parse_link(sl_buf_str(&tail), &a->seq, prev))
        why = "unchained-tail";
    else if (!scan_chain(rfd, size, a->chain))
        why = "no-chain-id";
    if (why == NULL)
        seal_sha256(tail.p, tail.len, a->head);
    sl_buf_free(&tail);
    if (rfd >= 0)
        close(rfd);
    if (why == NULL)
        return write_event(a, "continued", "restart");
    sl_warn("audit: %s: %s; a new hash chain starts", a->path,
            strcmp(why, "damaged-tail") == 0 ? "the last line is cut short"
            : strcmp(why, "unchained-tail") == 0 ? "the last line is not a chained record"
            : strcmp(why, "no-chain-id") == 0 ? "no chain id in the last 64 MiB"
                                              : "the last line cannot be read");
    size_t done;
    if (cut && write_all(a->fd, "\n", 1, &done) != 0) /* our line must not extend the broken one */
        return -1;
    return new_chain(a, why);
}

/* One journal, one writer: two processes on one file would interleave one chain id's seqs, and
 * verify would call it tampered with for ever. The lock lasts while the descriptor is open; a
 * held one fails with EWOULDBLOCK, which callers name (LOCKED_TEXT). */
#define LOCKED_TEXT "another process writes %s; give each sluice its own --audit file"

static int open_file(struct audit *a, off_t *size)
{
    int fd = open(a->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    struct stat st;
    if (fd < 0)
        return -1;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 || fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    a->fd = fd;
    a->dev = st.st_dev;
    a->ino = st.st_ino;
    a->end = st.st_size;
    *size = st.st_size;
    return 0;
}

struct audit *audit_open(const char *path, const struct audit_opts *o, char *err,
                         size_t errlen)
{
    struct audit *a = sl_xcalloc(1, sizeof(*a));
    off_t size;
    a->fd = -1;
    a->path = sl_xstrndup(path, strlen(path));
    if (o)
        a->o = *o;
    a->anchored_us = sl_mono_us();
    if (open_file(a, &size) != 0 || take_up_chain(a, size) != 0) {
        if (a->fd < 0 && errno == EWOULDBLOCK)
            snprintf(err, errlen, LOCKED_TEXT, path);
        else
            snprintf(err, errlen, "%s(%s): %s", a->fd < 0 ? "open" : "write", path,
                     strerror(errno));
        a->o.anchor_every = a->o.anchor_ms = 0;
        audit_close(a);
        return NULL;
    }
    return a;
}

/* The path is no longer the file being written (renamed away or removed): a new file is opened
 * there. Until that works, every write fails, so no gated call goes out with a record that
 * would land in a file nobody reads (the old one may be gone); the old descriptor is kept only
 * to be closed once the new one is open. The reason is logged once, and when it clears. */
static int reopen(struct audit *a)
{
    int old = a->fd;
    off_t size;
    if (a->dirty)
        do_sync(a);
    if (open_file(a, &size) != 0) {
        int err = errno;
        a->fd = old;
        if (!a->reopen_failing && err == EWOULDBLOCK)
            sl_error("audit: %s was moved away, and " LOCKED_TEXT "; no more records are "
                     "written (gated calls are refused) until it is free", a->path, a->path);
        else if (!a->reopen_failing)
            sl_error("audit: %s was moved away and cannot be opened again: %s; no more records "
                     "are written (gated calls are refused) until it can", a->path,
                     strerror(err));
        a->reopen_failing = true;
        errno = err;
        return -1;
    }
    if (a->reopen_failing)
        sl_warn("audit: %s is open again; records are written", a->path);
    a->reopen_failing = false;
    close(old);
    return 0;
}

/* logrotate either renames the file away (a new one is opened at the path) or copies and
 * truncates it (the descriptor's file shrank below where our last line ended). Either way the
 * next line starts a new file, and a "rotated" line links it to the last one. A truncation
 * between logrotate's copy and its truncate loses lines: verify then shows the gap. */
static int follow_rotation(struct audit *a)
{
    struct stat path_st, fd_st;
    const char *why = NULL;
    if (stat(a->path, &path_st) != 0 || path_st.st_dev != a->dev || path_st.st_ino != a->ino)
        why = "renamed";
    else if (fstat(a->fd, &fd_st) == 0 && fd_st.st_size < a->end)
        why = "truncated";
    if (why == NULL)
        return 0;
    if (strcmp(why, "truncated") == 0)
        a->end = fd_st.st_size; /* the rotated line goes there (landed_early) */
    if (strcmp(why, "renamed") == 0 && reopen(a) != 0)
        return -1;
    return write_event(a, "rotated", why);
}

void (*audit_before_write)(const char *path);

/* A line that landed early (a truncation between the check and the write) is written again,
 * after the rotated line that now starts the file: a few tries, then it fails closed. */
#define WRITE_TRIES 3

int audit_write(struct audit *a, const struct audit_record *r)
{
    if (a == NULL)
        return 0;
    for (int i = 0; i < WRITE_TRIES; i++) {
        int rc = follow_rotation(a);
        if (rc == 0) {
            if (audit_before_write)
                audit_before_write(a->path);
            size_t brace = put_link(a);
            audit_format(&a->line, r);
            rc = append_link(a, brace);
        }
        if (rc <= 0)
            return rc;
    }
    return -1; /* errno EAGAIN (landed_early) */
}

void audit_tick(struct audit *a)
{
    if (a == NULL)
        return;
    uint64_t now = sl_mono_us();
    if (a->dirty)
        do_sync(a);
    if (a->o.anchor_ms && a->seq != a->anchored_seq &&
        now - a->anchored_us >= a->o.anchor_ms * 1000ull)
        anchor(a);
}

uint64_t audit_head(const struct audit *a, char hash_hex[65])
{
    struct sl_buf b;
    sl_buf_on(&b, hash_hex, 65);
    sl_hex_encode(&b, a->head, 32);
    return a->seq;
}

void audit_close(struct audit *a)
{
    if (a == NULL)
        return;
    if (a->fd >= 0) {
        if (a->dirty)
            do_sync(a);
        if ((a->o.anchor_every || a->o.anchor_ms) && a->seq != a->anchored_seq)
            anchor(a);
        close(a->fd);
    }
    sl_buf_free(&a->line);
    free(a->path);
    free(a);
}
