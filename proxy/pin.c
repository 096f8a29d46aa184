/* pin.c: definition digests, the registry of live ones, and the pin verdict. */
#include "pin.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "canon.h"

/* The whole Tool object is hashed but for one member, execution (2025-11-25's task support):
 * sluice removes it from every listing it serves, so no client or model sees it, and a server
 * that speaks both eras lists it on the 2025 wire only, so hashing it would make a pin depend on
 * the era sluice speaks. Everything else is what clients are served: title and icons are shown,
 * _meta carries MCP Apps (ui/resourceUri), outputSchema shapes what the model reads back, and a
 * member a later revision adds is covered without a change here (a changed one fails closed). */
int pin_digest(const struct json *tool, uint8_t out[PIN_LEN])
{
    if (tool == NULL || tool->type != JSON_OBJECT)
        return -1;
    if (json_get(tool, "execution") == NULL)
        return canon_digest(tool, out);
    struct json_member *m = sl_xmalloc(tool->u.obj.n * sizeof(*m));
    size_t n = 0;
    for (size_t i = 0; i < tool->u.obj.n; i++)
        if (!sl_str_eq_c(tool->u.obj.v[i].key, "execution"))
            m[n++] = tool->u.obj.v[i];
    struct json hashed = { .type = JSON_OBJECT, .u.obj = { m, n } };
    int rc = canon_digest(&hashed, out);
    free(m);
    return rc;
}

void pin_format(struct sl_buf *out, const uint8_t d[PIN_LEN])
{
    sl_buf_puts(out, "sha256:");
    sl_hex_encode(out, d, PIN_LEN);
}

/* ===== the registry ===== */

struct pin_entry {
    char *name;
    size_t len;
    bool valid;             /* digest holds a digest (false: no canonical form) */
    bool listed;            /* false: the last complete listing left it out */
    uint8_t digest[PIN_LEN];
};

/* Entries in the order first listed, and an open-addressing index over their names: a listing
 * of n tools costs O(n), whatever names the server chooses (it cannot make one probe sequence
 * longer than the table, which stays at most half full). */
struct pins {
    struct pin_entry *v;
    size_t n, cap;
    uint32_t *slots;        /* entry index + 1, or 0 for an empty slot */
    size_t nslots;          /* a power of two, >= 2 * cap */
};

struct pins *pins_new(void)
{
    return sl_xcalloc(1, sizeof(struct pins));
}

void pins_free(struct pins *ps)
{
    if (ps == NULL)
        return;
    for (size_t i = 0; i < ps->n; i++)
        free(ps->v[i].name);
    free(ps->v);
    free(ps->slots);
    free(ps);
}

/* FNV-1a: the names come from the upstream, which sluice fronts but does not let choose
 * anything beyond its own listing's cost. */
static size_t name_hash(struct sl_str name)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < name.len; i++)
        h = (h ^ (unsigned char)name.p[i]) * 1099511628211ull;
    return (size_t)h;
}

/* The slot of name: the one holding it, or the empty one where it would go. */
static size_t slot_of(const struct pins *ps, struct sl_str name)
{
    size_t mask = ps->nslots - 1, i = name_hash(name) & mask;
    for (;;) {
        uint32_t k = ps->slots[i];
        if (k == 0)
            return i;
        const struct pin_entry *e = &ps->v[k - 1];
        if (e->len == name.len && memcmp(e->name, name.p, name.len) == 0)
            return i;
        i = (i + 1) & mask;
    }
}

static struct pin_entry *find(const struct pins *ps, struct sl_str name)
{
    if (ps->nslots == 0)
        return NULL;
    uint32_t k = ps->slots[slot_of(ps, name)];
    return k ? &ps->v[k - 1] : NULL;
}

static void grow(struct pins *ps)
{
    ps->cap = ps->cap ? ps->cap * 2 : 16;
    ps->v = sl_xrealloc(ps->v, ps->cap * sizeof(*ps->v));
    free(ps->slots);
    ps->nslots = 2 * ps->cap;
    ps->slots = sl_xcalloc(ps->nslots, sizeof(*ps->slots));
    for (size_t i = 0; i < ps->n; i++)
        ps->slots[slot_of(ps, (struct sl_str){ ps->v[i].name, ps->v[i].len })] = (uint32_t)(i + 1);
}

static struct pin_entry *find_or_add(struct pins *ps, struct sl_str name)
{
    struct pin_entry *e = find(ps, name);
    if (e || ps->n == PINS_MAX)
        return e;
    if (ps->n == ps->cap)
        grow(ps);
    e = &ps->v[ps->n++];
    *e = (struct pin_entry){ .name = sl_xstrndup(name.p, name.len), .len = name.len };
    ps->slots[slot_of(ps, name)] = (uint32_t)ps->n;
    return e;
}

void pins_learn(struct pins *ps, const struct json *tools, bool complete)
{
    if (tools == NULL || tools->type != JSON_ARRAY)
        return;
    for (size_t i = 0; i < ps->n && complete; i++)
        ps->v[i].listed = false;
    for (size_t i = 0; i < tools->u.arr.n; i++) {
        const struct json *tool = tools->u.arr.v[i];
        const struct json *name = json_get(tool, "name");
        if (name == NULL || name->type != JSON_STRING)
            continue;
        struct pin_entry *e = find_or_add(ps, name->u.str);
        if (e) {
            e->valid = pin_digest(tool, e->digest) == 0;
            e->listed = true;
        }
    }
}

int pins_get(const struct pins *ps, struct sl_str tool, uint8_t out[PIN_LEN])
{
    const struct pin_entry *e = ps ? find(ps, tool) : NULL;
    if (e == NULL || !e->listed)
        return 0;
    if (!e->valid)
        return -1;
    memcpy(out, e->digest, PIN_LEN);
    return 1;
}

/* ===== the verdict ===== */

enum pin_status pin_check(const struct policy *p, struct sl_str tool, const uint8_t *live,
                          bool known)
{
    struct policy_decision d;
    policy_lookup(p, tool.p, tool.len, &d);
    if (d.pin == NULL)
        return d.unpinned_deny ? PIN_UNPINNED : PIN_FREE;
    if (!known)
        return PIN_UNLISTED;
    if (live == NULL || CRYPTO_memcmp(live, d.pin, PIN_LEN) != 0)
        return PIN_MISMATCH;
    return PIN_OK;
}

bool pin_refuses(enum pin_status st)
{
    return st == PIN_MISMATCH || st == PIN_UNLISTED || st == PIN_UNPINNED;
}

const char *pin_reason(enum pin_status st)
{
    switch (st) {
    case PIN_MISMATCH:
        return "pin-mismatch";
    case PIN_UNLISTED:
        return "pin-unlisted";
    case PIN_UNPINNED:
        return "unpinned";
    case PIN_OK:
    case PIN_FREE:
        break;
    }
    return NULL;
}

enum pin_status pins_status(const struct pins *ps, const struct policy *p, struct sl_str tool,
                            uint8_t live[PIN_LEN], bool *has_live)
{
    uint8_t d[PIN_LEN];
    int got = pins_get(ps, tool, d);
    *has_live = got == 1;
    if (got == 1 && live)
        memcpy(live, d, PIN_LEN);
    return pin_check(p, tool, got == 1 ? d : NULL, got != 0);
}
