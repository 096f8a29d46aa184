/* cmd_pin.c: `sluice pin`: the pins of a live server's tools, printed or written into the
 * policy. */
#include "cmd_pin.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "confirm.h"
#include "livetools.h"
#include "pin.h"
#include "pinyaml.h"

/* One tool as the server lists it. */
struct listed {
    char *name;
    size_t len;
    bool ok;                     /* digest computed */
    uint8_t digest[PIN_LEN];
};

struct pin_run {
    struct listed *v;
    size_t n;
    bool got;
};

static void on_tools(void *arg, const struct json *tools, struct sl_str server)
{
    struct pin_run *r = arg;
    (void)server;
    r->got = true;
    r->v = sl_xcalloc(tools->u.arr.n + 1, sizeof(*r->v));
    for (size_t i = 0; i < tools->u.arr.n; i++) {
        const struct json *t = tools->u.arr.v[i];
        const struct json *name = json_get(t, "name");
        if (name == NULL || name->type != JSON_STRING)
            continue;
        struct listed *l = &r->v[r->n++];
        l->name = sl_xstrndup(name->u.str.p, name->u.str.len);
        l->len = name->u.str.len;
        l->ok = pin_digest(t, l->digest) == 0;
    }
}

static void run_free(struct pin_run *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->v[i].name);
    free(r->v);
}

static const struct listed *find_listed(const struct pin_run *r, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].len == strlen(name) && memcmp(r->v[i].name, name, r->v[i].len) == 0)
            return &r->v[i];
    return NULL;
}

/* A name for a message: neutralized, as the server chose it. */
static void put_name(struct sl_buf *b, const char *name, size_t len)
{
    confirm_neutralize(b, (struct sl_str){ name, len }, 128);
}

/* ===== printing ===== */

/* Said with every pin printed or written: pins made before the whole definition was hashed no
 * longer match tools with other members, which fail closed until pinned again. */
#define PIN_UPGRADE_NOTE                                                                         \
    "# a pin covers the whole tool definition but execution (title, icons, outputSchema, _meta\n" \
    "# included); a pin made by an earlier sluice (name, description, inputSchema and\n"        \
    "# annotations only) no longer matches a tool with those members: it is denied until\n"     \
    "# pinned again\n"

static int print_pins(const struct pin_run *r)
{
    struct sl_buf b = { 0 };
    sl_buf_printf(&b, "# %zu tool%s; paste each pin: line under the tool in the policy's "
                  "tools:\n", r->n, r->n == 1 ? "" : "s");
    sl_buf_puts(&b, PIN_UPGRADE_NOTE);
    for (size_t i = 0; i < r->n; i++) {
        const struct listed *l = &r->v[i];
        size_t at = b.len;
        if (!l->ok || !pinyaml_key(&b, (struct sl_str){ l->name, l->len })) {
            b.len = at;
            sl_buf_puts(&b, "# ");
            put_name(&b, l->name, l->len);
            sl_buf_puts(&b, l->ok ? ": a name a policy cannot hold\n"
                                  : ": no pin (its definition has no canonical form)\n");
            continue;
        }
        sl_buf_puts(&b, ":\n  pin: ");
        pin_format(&b, l->digest);
        sl_buf_putc(&b, '\n');
    }
    fwrite(b.p, 1, b.len, stdout);
    sl_buf_free(&b);
    return 0;
}

/* ===== --write ===== */

static int read_all(const char *path, struct sl_buf *out)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "sluice: error: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && out->len <= POLICY_MAX_BYTES)
        sl_buf_put(out, chunk, n);
    bool bad = ferror(f) || out->len > POLICY_MAX_BYTES;
    fclose(f);
    if (bad)
        fprintf(stderr, "sluice: error: cannot read %s (or it is over %u bytes)\n", path,
                POLICY_MAX_BYTES);
    return bad ? -1 : 0;
}

/* Replaces path with text: a temporary file beside it, with its mode, synced, renamed over
 * it, so a reader (sluice --watch-policy) never sees half a policy. A symlink's target is
 * the file replaced. */
static int write_atomic(const char *path, const struct sl_buf *text)
{
    char real[PATH_MAX], tmp[PATH_MAX + 16];
    struct stat st;
    if (realpath(path, real) == NULL || stat(real, &st) != 0) {
        fprintf(stderr, "sluice: error: %s: %s\n", path, strerror(errno));
        return -1;
    }
    snprintf(tmp, sizeof(tmp), "%s.sluice-pin", real);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 07777);
    bool ok = fd >= 0 && fchmod(fd, st.st_mode & 07777) == 0;
    for (size_t off = 0; ok && off < text->len;) {
        ssize_t w = write(fd, text->p + off, text->len - off);
        ok = w > 0;
        off += ok ? (size_t)w : 0;
    }
    ok = ok && fsync(fd) == 0;
    if (fd >= 0 && close(fd) != 0)
        ok = false;
    ok = ok && rename(tmp, real) == 0;
    if (!ok) {
        fprintf(stderr, "sluice: error: cannot write %s: %s\n", real, strerror(errno));
        if (fd >= 0)
            unlink(tmp);
    }
    return ok ? 0 : -1;
}

/* The policy's tools the server lists get their pins; the others are said. */
static size_t collect(const struct policy *p, const struct pin_run *r, struct pinyaml_pin *pins,
                      size_t *changed)
{
    size_t n = 0;
    struct sl_buf msg = { 0 };
    for (size_t i = 0; i < policy_tool_count(p); i++) {
        const char *name = policy_tool_name(p, i);
        const struct listed *l = find_listed(r, name);
        if (l == NULL || !l->ok) {
            sl_buf_reset(&msg);
            put_name(&msg, name, strlen(name));
            fprintf(stderr, "sluice: warning: policy tool \"%s\" %s; its pin is left as it is\n",
                    msg.p, l ? "has no canonical definition" : "is not listed by the server");
            continue;
        }
        struct policy_decision d;
        policy_lookup(p, name, strlen(name), &d);
        if (d.pin == NULL || memcmp(d.pin, l->digest, PIN_LEN) != 0)
            ++*changed;
        pins[n].tool = i;
        memcpy(pins[n++].digest, l->digest, PIN_LEN);
    }
    for (size_t i = 0; i < r->n; i++) {
        struct policy_decision d;
        policy_lookup(p, r->v[i].name, r->v[i].len, &d);
        if (strcmp(d.rule, "defaults.action") != 0)
            continue;
        sl_buf_reset(&msg);
        put_name(&msg, r->v[i].name, r->v[i].len);
        fprintf(stderr, "sluice: warning: server tool \"%s\" is not named in the policy, so it "
                "gets no pin (name it under tools: to pin it)\n", msg.p);
    }
    sl_buf_free(&msg);
    return n;
}

static int write_pins(const struct cli_opts *o, const struct pin_run *r)
{
    struct sl_buf text = { 0 }, out = { 0 };
    struct policy *p = NULL;
    struct policy_error perr;
    char err[700];
    int rc = 1;
    if (read_all(o->policy, &text) != 0)
        goto done;
    if (policy_load_buffer(o->policy, text.p ? text.p : "", text.len, &p, &perr) != 0) {
        policy_error_format(&perr, err, sizeof(err));
        fprintf(stderr, "%s\n", err);
        goto done;
    }
    struct pinyaml_pin *pins = sl_xcalloc(policy_tool_count(p) + 1, sizeof(*pins));
    size_t changed = 0, n = collect(p, r, pins, &changed);
    if (pinyaml_rewrite(o->policy, text.p ? text.p : "", text.len, p, pins, n, &out, err,
                        sizeof(err)) != 0) {
        fprintf(stderr, "sluice: error: %s\n", err);
    } else if (changed == 0) {
        printf("%s: %zu pin%s, all current; not rewritten\n", o->policy, n, n == 1 ? "" : "s");
        rc = 0;
    } else if (write_atomic(o->policy, &out) == 0) {
        printf("%s: %zu pin%s written, %zu new or changed\n", o->policy, n, n == 1 ? "" : "s",
               changed);
        fputs(PIN_UPGRADE_NOTE, stdout);
        rc = 0;
    }
    free(pins);
done:
    policy_unref(p);
    sl_buf_free(&text);
    sl_buf_free(&out);
    return rc;
}

int cmd_pin(const struct cli_opts *o)
{
    struct pin_run r = { 0 };
    int rc = livetools_fetch(o, on_tools, &r);
    if (rc == 0)
        rc = o->write ? write_pins(o, &r) : print_pins(&r);
    run_free(&r);
    return rc;
}
