/* pin.h: tools pinned against silent change ("rug pulls", issue 23).
 *
 * A tool's definition digest is the SHA-256 of the RFC 8785 canonical JSON (canon.h) of its
 * whole Tool object but execution (pin.c says why): name, title, description, icons,
 * inputSchema, outputSchema, annotations, _meta and any other member the server lists, since
 * clients are served all of them (a title a client shows, an MCP App under _meta). Before this,
 * only name, description, inputSchema and annotations were hashed, so a pin made then of a tool
 * with other members no longer matches. `sluice pin` prints it as "sha256:<64 lowercase hex>",
 * the form the policy's tools.<name>.pin takes.
 *
 * At run time the upstream remembers, per tool name, the digest its tools/list replies gave last
 * (struct pins: every page of every listing, sluice's own and the clients', replaces what it
 * says of its tools, and a whole listing forgets the tools it leaves out). pin_check compares that with the policy: a tool whose pin differs, or that
 * has a pin but was never listed, or (defaults.unpinned: deny) that has no pin, is refused:
 * its calls are denied and it is left out of tools/list. Pure apart from the registry's memory. */
#ifndef SL_PIN_H
#define SL_PIN_H

#include "json.h"
#include "policy.h"

#define PIN_LEN       32
#define PIN_TEXT_LEN  (7 + 2 * PIN_LEN)  /* "sha256:" and the hex */
#define PINS_MAX      10000              /* tool names one upstream's registry remembers
                                          * (a listing holds at most 10000: upstream.c) */

/* The definition digest of tool (a Tool object). Returns 0, or -1 when tool is not an object or
 * has no canonical form (canon.h: a number beyond a double, say); such a tool matches no pin. */
int pin_digest(const struct json *tool, uint8_t out[PIN_LEN]);
/* Appends "sha256:<hex>". */
void pin_format(struct sl_buf *out, const uint8_t d[PIN_LEN]);

/* The per-upstream registry of live definitions. */
struct pins;
struct pins *pins_new(void);
void pins_free(struct pins *ps); /* NULL is a no-op */
/* Records the digest of every named tool in a tools/list result's "tools" array (anything but an
 * array is ignored). A tool whose digest cannot be computed is recorded as unverifiable. Names
 * beyond PINS_MAX are not recorded, so they stay unlisted (refused when pinned). complete: the
 * array is the server's whole listing (asked without a cursor, answered without nextCursor), so
 * a tool it leaves out is no longer listed. A page of a longer listing adds what it names only. */
void pins_learn(struct pins *ps, const struct json *tools, bool complete);
/* The last digest of tool: 1 and out filled; 0 when never listed, or left out of the last
 * complete listing; -1 when listed but without a canonical form. */
int pins_get(const struct pins *ps, struct sl_str tool, uint8_t out[PIN_LEN]);

enum pin_status {
    PIN_OK,              /* pinned and the live definition matches */
    PIN_FREE,            /* no pin, and defaults.unpinned is allow */
    PIN_MISMATCH,        /* pinned, and the live definition differs (or has no digest) */
    PIN_UNLISTED,        /* pinned, and the server never listed the tool */
    PIN_UNPINNED,        /* no pin, and defaults.unpinned is deny */
};
/* The verdict on tool under p. live: the live digest, or NULL when the tool was never listed
 * (known says whether it was listed at all: listed without a digest is a mismatch). */
enum pin_status pin_check(const struct policy *p, struct sl_str tool, const uint8_t *live,
                          bool known);
/* True for the statuses that refuse the tool. */
bool pin_refuses(enum pin_status st);
/* "pin-mismatch", "pin-unlisted", "unpinned" (the audit reason), or NULL for the others. */
const char *pin_reason(enum pin_status st);
/* The status of tool against the registry (pins_get then pin_check); live (may be NULL) gets
 * the digest when one is known, and *has_live says so. */
enum pin_status pins_status(const struct pins *ps, const struct policy *p, struct sl_str tool,
                            uint8_t live[PIN_LEN], bool *has_live);

#endif /* SL_PIN_H */
