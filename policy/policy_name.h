/* policy_name.h: whether a tool name in a policy could be a real MCP tool name. Private to
 * policy/.
 *
 * Why it exists: the policy matches tool names exactly, byte for byte. A name written as a
 * glob ("delete_*") or holding an invisible character ("delete\u200bfile") loaded, matched no
 * tool the server has, and left the tool it was meant for on the default action, with nothing
 * but a start-up warning that the server does not list it. MCP tool names are plain (letters,
 * digits, '_', '-', '.', and '/' in some servers), so the loader refuses what none has.
 *
 * The invisible set is unicode_hidden.h's, which proxy/confirm.c shares: only what renders as
 * nothing or as a space, or reorders text. confirm.c also hides the combining overlays, which
 * this check leaves alone (a visible mark on a letter), and the C0 controls (policy.c's). */
#ifndef SL_POLICY_NAME_H
#define SL_POLICY_NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The first character a tool name must not have. */
struct policy_name_flaw {
    size_t at;          /* 1-based, in characters (code points) */
    uint32_t cp;        /* the character; 0 when the bytes there are not UTF-8 */
    const char *what;   /* "a glob character", "whitespace", "an invisible or format
                         * character" or "bytes that are not UTF-8" */
    const char *instead; /* policy_pattern_plain only: what to write instead */
};

/* True when name[0..len) has no glob character (* ? [ ] { }), no whitespace, no invisible or
 * format character (C1 controls, zero-width characters, bidi controls, no-break and other
 * spaces, fillers, variation selectors, tags) and is UTF-8; otherwise false, with *flaw set
 * to the first offender. C0 controls and DEL are the caller's (policy.c refuses them first). */
bool policy_name_plain(const char *name, size_t len, struct policy_name_flaw *flaw);

/* The same for an approvers: pattern (policy_principal_match: only '*' and '?' are special),
 * where glob syntax of other tools would match only principals spelt that way, so the person
 * meant could never approve: true when pat[0..len) has no brace or bracket, no backslash but
 * one that starts an RFC 2253 escape as a cert: subject shows it ('\' and one of ,+"\<>;=#
 * or space, or two uppercase hex digits), no space at either end or right after the first
 * ':' (no principal has one there; a subject's inner spaces are its own), no invisible or
 * format character, and is UTF-8. Otherwise false, with *flaw (and flaw->instead) set. */
bool policy_pattern_plain(const char *pat, size_t len, struct policy_name_flaw *flaw);

#endif /* SL_POLICY_NAME_H */
