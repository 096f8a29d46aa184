/* rules.h: the argument rules of the policy (tools.<tool>.args), checked against one call before
 * anyone is asked.
 *
 * Pure: no I/O, no clock, no libevent; the same policy and arguments always give the same
 * result. What each rule means is documented at struct policy_arg (policy.h); the decisions
 * that belong to matching are:
 * - Paths are normalized lexically before any glob sees them: repeated '/' collapse, "."
 *   segments go, ".." removes the segment before it (and stays at the root of an absolute path).
 *   No symlink is resolved and "~" is not expanded: a path starting with "~" is relative.
 * - A relative path never matches an absolute pattern, so an absolute allow_glob refuses "a.txt",
 *   "../x" and "~/x"; a pattern starting with "**" matches relative and absolute paths alike.
 * - A path that is empty or holds a control character (NUL included) is refused by any glob rule.
 * - deny_glob and confirm_glob match a path and a pattern also once both are loosened (Unicode's
 *   canonical caseless match: composed, full case folding, the dotless i as "i"): a server may
 *   open "\u00e4" for "a\u0308", macOS and Windows open ".ssh" for ".SSH", ext4's
 *   case-insensitive directories "strasse" for "stra\u00dfe", NTFS "id_rsa" for "\u0131d_rsa",
 *   HFS+ ".ssh" for ".s\u200csh". allow_glob matches the bytes only.
 * - A path is also read as Windows reads it ("\\" a separator too, trailing dots and spaces of a
 *   segment dropped, a stream read as its file): it meets a deny_glob or confirm_glob by either
 *   reading, the allow_globs only when both are under them. Two separators first are a network
 *   share there, read as "UNC/host/share" (relative). Short names (SSH~1) are not read.
 * - A value with "%XX" escapes is also read decoded, once and twice (both readings of each), as
 *   a server that takes URIs reads it: "/srv/%2essh/k" is /srv/.ssh/k, "/srv/%2e%2e/etc" is
 *   /etc. A decoding that is not UTF-8 or has a control character is refused, and so is one
 *   with a ".." segment where an escape made a separator, a dot or a space (servers that decode
 *   before and after they resolve ".." open different files for it), one that still has an
 *   escape after two decodings, a value with a "..;x" segment (".." to a servlet container,
 *   a name to the others), and one whose ".." climbs out of a segment that some servers drop
 *   and others keep ("", "...", ". ", ";x": "/etc//../passwd" is /etc/passwd to WHATWG).
 * - A value that names a host ("//host", "/\\host") is refused: a host to a URL parser, a
 *   share on Windows, a directory to the kernel. So is a ";" parameter that runs into a "\\".
 * - So is a letter and ":" or "|" anywhere but the one drive sluice reads (a letter at the
 *   start, after a "/" or after a lowercase "file:" and its slashes, then a separator or the
 *   end): a URL parser drops a scheme ("ab:.ssh/k" is .ssh/k), nturl2path makes the letter a
 *   drive and drops all before it ("/tmp/c:/etc/passwd" is C:\\etc\\passwd), ntpath.normpath
 *   makes "./c:.ssh/k" drive c:. And so is a value that starts or ends with a space outside
 *   ASCII (U+00A0, U+3000, ...), which trim(), strip() and url.parse drop, or another
 *   character that renders as nothing (unicode_hidden.h).
 * - Each of these is also read as a URL parser finds its path (before "?" or "#", after
 *   "file:" and an empty host), as WHATWG ("\\" as "/") and as Python's urlparse ("\\" kept,
 *   ";" parameters dropped): "/etc/passwd#/../../srv/x" is /etc/passwd to a server that reads
 *   its argument as a URL. That path is decoded further on its own (a URL parser cuts before
 *   it decodes).
 * - An argument the call does not send is not checked; one that is sent with the wrong type is
 *   refused (null included).
 * - Every rule of every listed argument runs: DENY (the first broken rule, in policy order)
 *   wins over ESCALATE (the first confirm_glob that matched). */
#ifndef SL_RULES_H
#define SL_RULES_H

#include "base.h"
#include "json.h"
#include "policy.h"

#define RULES_MAX_RULE 160  /* bytes of rules_result.rule, NUL included */
#define RULES_MAX_WHY  200  /* bytes of rules_result.why, NUL included */

/* Steps (ere.h: instruction visits) all the regex checks of one call may take together, about
 * 0.2 s on the slowest regex the loader takes; a call that needs more is refused. A typical
 * regex takes 1 to 15 steps per byte ("[a-z0-9_-]+-[a-z0-9_-]{20}": 13.5, so values up to
 * about 2.4 MB); the worst near ERE_MAX_PROGRAM, several hundred. Why a budget as well as a
 * linear matcher: linear in a 16 MiB message is still seconds of the event loop. */
#define RULES_REGEX_STEPS (1u << 25)

enum rules_outcome {
    RULES_PASS,      /* no rule broken, none escalates */
    RULES_DENY,      /* refuse the call, naming rule */
    RULES_ESCALATE,  /* an allow tool must be confirmed by a person (confirm_glob matched) */
};

struct rules_result {
    enum rules_outcome outcome;
    char rule[RULES_MAX_RULE]; /* "tools.delete_file.args.path.deny_glob[0]"; "" for PASS */
    char why[RULES_MAX_WHY];   /* 'path "/etc/passwd" matches deny_glob "/etc/..."'; values
                                * escaped to printable ASCII and cut: safe in a log or reply */
};

/* Checks args (the call's arguments object; NULL for none) against the rules of tool (len bytes)
 * in p. Fills *out; never fails. A tool without rules always passes. A value a regex cannot be
 * checked against within RULES_REGEX_STEPS is refused, never passed. */
void rules_check(const struct policy *p, const char *tool, size_t len, const struct json *args,
                 struct rules_result *out);
/* The same for the tool d decided (policy_lookup): its rules are d's, with no second lookup. */
void rules_check_decided(const struct policy_decision *d, const struct json *args,
                         struct rules_result *out);

/* Replaces the contents of out with the lexical normal form of in[0..len): "/" or "/a/b" for an
 * absolute path, "a/b", "../a" or "." for a relative one (always NUL-terminated). Returns 0, or
 * -1 (out unspecified) when in is empty or holds a byte below 0x20 or 0x7f. */
int rules_normalize_path(const char *in, size_t len, struct sl_buf *out);

/* True iff path (already normalized) matches pattern (a policy glob) as a whole. Runs in
 * O(len(pattern) * len(path)) whatever the input. */
bool rules_glob_match(const char *pattern, const char *path);

#endif /* SL_RULES_H */
