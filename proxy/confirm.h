/* confirm.h: the text a person reads before a gated call runs, built from the same parse that is
 * hashed and forwarded.
 *
 * The person must be able to see what will run: the tool and every argument. So:
 *   - every argument key that will be forwarded is listed, always. When even the list of keys
 *     (each with its value at its shortest) does not fit in CONFIRM_MAX_TEXT, there is no
 *     question at all: confirm_question fails and the gate refuses the call.
 *   - a value is shown whole, or visibly abbreviated: its start (60 % of the room the marker
 *     leaves), a marker with the length and a digest of the whole value ("…[1048578 bytes,
 *     sha256 <32 hex>]"), then its end (the other 40 %), so two different values never read
 *     the same and what a padded path comes to is still seen. Both ends are cut between whole
 *     characters or escapes. The digest is SHA-256 over the value's canonical JSON text
 *     (RFC 8785: the very bytes forwarded for it), its first CONFIRM_DIGEST_HEX hex digits (128
 *     bits: no two values with the same marker can be found). Keys longer than CONFIRM_MAX_KEY
 *     are abbreviated to their start and the marker.
 *   - in a value, a run of 16 or more of one character (raw or escaped) is shown as its count,
 *     "\[1100 × U+0020]", before the room is shared out: padding costs a few bytes and is seen.
 *     A value cannot write that itself: its backslashes are shown as "\\" (JSON).
 *   - arguments the policy declares (the tool's args:, which every {field} of its message must
 *     be) come first, in policy order; then every other key in sorted order, each marked
 *     " (not declared in the policy)" between the key and its colon, where a key's own text
 *     cannot put it: a key that is not a plain identifier is shown quoted.
 *   - every string that came from the client or upstream is neutralized before it is shown:
 *     C0/C1 control characters, ESC (ANSI sequences), bidi embeddings/overrides/isolates and
 *     marks, zero-width and invisible format characters, line/paragraph separators, overlaying
 *     and enclosing marks, format characters that mark the digits after them are all shown as
 *     visible \uXXXX escapes; so is U+2022, the bullet sluice puts before every argument, and
 *     the dots and bullets that look like it.
 *   - the question still reads where a client collapses its newlines into one paragraph (MCP
 *     Inspector's form does): every argument starts with that bullet, which no untrusted text
 *     can hold raw, values are JSON (a string ends at its closing quote), and sluice's own
 *     sentences end with "?", "." or ":".
 *   - text an observe call read from the upstream comes in its own block: a header line, then
 *     every line of the text indented and prefixed with "| ", so no line of it can read as an
 *     argument ("• key: value"), as the header of the listing or as one of sluice's own lines.
 *     observe_summary (observe.h) shows the text's own backslashes as "\\" and its ellipses as
 *     "\u2026" first, so no escape or "…[" mark in the block is the server's.
 *
 * The budget: CONFIRM_MAX_TEXT bytes for the whole message. The header, the keys, the facts
 * (irreversible, expiry), the observation block (room for CONFIRM_MAX_OBSERVED is kept
 * whenever the tool observes) and the operator's sentence (what it takes with each {field} cut
 * to CONFIRM_MIN_SHOWN, at most CONFIRM_MAX_SENTENCE) are fixed; what is left is shared by the
 * values. Declared values come first: each may use CONFIRM_MAX_VALUE, so keys a client adds can
 * never squeeze what the operator said matters (when the undeclared ones do not fit beside them
 * even at their shortest, there is no question). The other values then share what is left:
 * every one may use the same number of bytes, the largest that fits, at most
 * CONFIRM_MAX_VALUE; shorter values leave their unused share to the others. Without declared
 * arguments, every value shares alike. A value that has to be cut keeps at least
 * CONFIRM_MIN_SHOWN bytes, or there is no question: else a client could add harmless keys until
 * the one that matters shows only its first few bytes and a digest. The operator's sentence
 * then gets what the values leave, its kept room at least (at most CONFIRM_MAX_SENTENCE): keys
 * a client adds cannot push it out. 16 KiB is what an elicitation form shows with some
 * scrolling; with typical values it fits about 1,250 short arguments, a few hundred long ones.
 */
#ifndef SL_CONFIRM_H
#define SL_CONFIRM_H

#include "json.h"

#define CONFIRM_MAX_TEXT     16384 /* bytes of the whole message */
#define CONFIRM_MAX_VALUE    1024  /* bytes shown of one argument value, marker included */
#define CONFIRM_MIN_SHOWN    256   /* bytes shown of a value that is cut, at least, marker
                                    * included (else no question: see the budget above) */
#define CONFIRM_MAX_KEY      128   /* bytes shown of one argument name before its marker */
#define CONFIRM_MAX_SENTENCE 1024  /* bytes of a rendered message template, markers included */
#define CONFIRM_MAX_OBSERVED 2048  /* bytes of the observation block, header included */
#define CONFIRM_DIGEST_HEX   32    /* hex digits of SHA-256 in an abbreviation marker */
#define CONFIRM_MAX_PAGE_TEXT (128 * 1024) /* bytes of a question for the approval page (whole),
                                            * its sentence aside: see confirm_call's whole */

/* The marker of an undeclared argument, between its key and the colon. */
#define CONFIRM_UNDECLARED " (not declared in the policy)"

/* Everything a question says. Strings need not be NUL-terminated and may hold any bytes. */
struct confirm_call {
    struct sl_str tool, server;   /* server may be empty */
    const struct json *args;      /* an object, or NULL for none */
    /* The argument names the policy declares (args:), in policy order. NULL when there is no
     * policy at all (tests): then no key is marked and every key is listed in sorted order. */
    const struct sl_str *declared;
    size_t ndeclared;
    const char *tmpl;             /* policy message template, or NULL */
    bool irreversible;            /* says "This cannot be undone." */
    unsigned ttl;                 /* seconds; with expires, says when the question expires */
    uint64_t expires;             /* Unix time; 0: no expiry line */
    bool observes;                /* the tool observes: room for the block is always kept */
    struct sl_str observed;       /* what the observe call read (observe_summary), or empty;
                                   * neutralized again, except its raw ellipses: observe.c shows
                                   * a server's as "\u2026", so those are its own marks */
    /* For sluice's approval page, which has no form to fit: the text may exceed
     * CONFIRM_MAX_TEXT, up to CONFIRM_MAX_PAGE_TEXT, and every value is shown whole when the
     * values fit in that together (eight times the form's room: nearly every call). The page's
     * record is kept in the store for confirm_ttl plus the result retention, in one budget for
     * all principals, so a 1 MiB argument of escaped characters (2.4 MB of record) must not cost
     * what it would take to show it whole. When they do not fit, every value gets one share, the
     * largest that fits, and one cut is shown as in the form (its start, its length and
     * digest, its end), with a line after the facts saying what that marker means. A call
     * whose keys do not fit in CONFIRM_MAX_TEXT at their shortest still gets none; the form's
     * other rules (declared values first, CONFIRM_MIN_SHOWN, the sentence's kept room) are
     * not needed: confirm.c, choose_page_share. Values are shown as in the form: runs as their
     * count. */
    bool whole;
};

/* Appends the whole question to out and returns 0; or returns -1 and appends nothing when not
 * every argument key can be shown within CONFIRM_MAX_TEXT, or not the sentence at its shortest.
 * The output is valid UTF-8, at most CONFIRM_MAX_TEXT bytes (CONFIRM_MAX_PAGE_TEXT and the
 * sentence when c->whole), and contains no raw control, bidi or invisible characters except
 * '\n' between lines, and no U+2022 but the bullet of each argument line. Layout:
 *   [sentence, blank line]
 *   Allow tool "t" [on server "s"] to run with these arguments?
 *   • declared_key: value
 *   • other_key (not declared in the policy): value
 *   [This cannot be undone.]
 *   [This question expires in N s (at YYYY-MM-DDTHH:MM:SSZ).]
 *   [A value with …[N bytes, sha256 H] in it is too long for this page: ... (whole, cut)]
 *   [blank line, observation header, "  | " lines]
 * The sentence is the template (policy_tool_message): literal text, {field} for the top-level
 * argument field shown as its line shows its value, or as (missing) when the call does not
 * send it, and {{ / }} for braces; neutralized too. It is never cut through its own text nor
 * left out: when it is longer than its room, its fields are cut as their lines are (start,
 * marker, end) to the largest share that fits; when not even each field at its shortest (its
 * marker) fits in CONFIRM_MAX_SENTENCE, there is no question (-1). */
int confirm_question(struct sl_buf *out, const struct confirm_call *c);

/* confirm_question for tool and args alone (no policy, no facts): every key sorted, none
 * marked. Returns as confirm_question does. */
int confirm_render(struct sl_buf *out, struct sl_str tool, const struct json *args,
                   struct sl_str server);

/* The same with the operator's sentence from tmpl. */
int confirm_render_message(struct sl_buf *out, const char *tmpl, struct sl_str tool,
                           const struct json *args, struct sl_str server);

/* Appends s to out neutralized as described above and truncated at max bytes (0 = no limit) with
 * the marker "…[+N bytes]" ("…[+1 byte]"). Exposed for templates and logs. */
void confirm_neutralize(struct sl_buf *out, struct sl_str s, size_t max);

/* The length of the longest start of shown (text confirm_neutralize wrote, or a value as the
 * question shows it) made of whole units (characters, escapes, run counts) that fits in max
 * bytes: where to cut it so that no half escape is left to read as something else. */
size_t confirm_cut_point(struct sl_str shown, size_t max);

/* Appends "N one" when n is 1, else "N many": "1 line", "3 lines", "0 lines". */
void confirm_count(struct sl_buf *out, size_t n, const char *one, const char *many);

#endif /* SL_CONFIRM_H */
