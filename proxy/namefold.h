/* namefold.h: tool names as a server that matches them loosely reads them.
 *
 * Why it exists: the policy matches a tools/call's name exactly, byte for byte. A server that
 * looks its tools up case-insensitively, or after dropping invisible characters, runs
 * delete_file for "Delete_File" or "delete\u200b_file", names the policy does not hold, which
 * would go on under defaults.action (allow, say) while the policy gates or denies delete_file.
 * So the gate refuses a name that is not one the policy names but reads as one: equal to it
 * once both are read as a server that normalizes names loosely may read them, one code point
 * at a time:
 *   - compatibility forms decomposed (NFKD: fullwidth "ｄｅｌｅｔｅ", ligatures "ﬁ", mathematical
 *     alphanumerics, letterlike symbols "ℎ") and composed letters taken apart ("é" as "e" and
 *     U+0301), then every combining mark dropped, so "é", "e" + U+0301 and "e" read alike;
 *   - fully case folded ("ß" and "ẞ" as "ss", "İ" as "i"; fold.h's simple folding for what the
 *     table does not know);
 *   - without the separators "_", "-" and "." ("delete-file", "deletefile", "delete.file");
 *   - without every character that renders as nothing or as a blank (unicode_hidden.h's set,
 *     the default-ignorable code points among them), the C0 controls and U+0020.
 * namefold_table.h (gen_namefold.py) holds the first two for Latin, Greek and Cyrillic results.
 * A policy cannot name a variant unless it is plain (policy_name.h): "Delete_File" or
 * "delete-file" it can name, and then that name is its own; a server that lists both
 * delete_file and delete-file as two tools has the second refused until the policy names it
 * (fail closed: the operator names it to decide it).
 *
 * Not covered: compatibility forms whose reading lies outside Latin, Greek and Cyrillic (CJK
 * compatibility ideographs, Arabic presentation forms) or is longer than three code points,
 * Hangul syllables against their jamo, other dashes and punctuation (U+2010, U+2014, "/"),
 * letters that only look alike (Cyrillic "е" for "e", "ł" for "l"). */
#ifndef SL_NAMEFOLD_H
#define SL_NAMEFOLD_H

#include "base.h"
#include "policy.h"

/* True when a and b read as one name under the folding above (byte-equal names included).
 * One pass over both, no allocation, a table lookup per character outside ASCII. */
bool namefold_equal(struct sl_str a, struct sl_str b);
/* The order of the keys: <0, 0 (namefold_equal) or >0. */
int namefold_compare(struct sl_str a, struct sl_str b);

/* The index (policy_tool_name) of the first tool of p whose name is not tool but reads as it
 * (namefold_equal), or policy_tool_count(p) when there is none or p names tool exactly. A binary
 * search of p's tools sorted by key: sorted on the first call (or namefold_policy_collisions)
 * and kept with p (policy_tools_view), so p must not be shared between threads before then. */
size_t namefold_policy_variant(const struct policy *p, struct sl_str tool);

/* Two tools the policy names whose names read as one ("delete_file" and "Delete-File"): each is
 * decided by its own entry, but a loose server may run one tool for both, so the two entries
 * decide the same tool. first comes before other in the file. */
typedef void namefold_collision_cb(void *arg, size_t first, size_t other);

/* Calls cb (when not NULL) for every name of p that reads as an earlier one, with the earliest
 * name that reads as it; returns how many. Walks the sorted tools namefold_policy_variant
 * searches (sorting them first if needed); for the load-time warning (main.c). */
size_t namefold_policy_collisions(const struct policy *p, namefold_collision_cb *cb, void *arg);

#endif /* SL_NAMEFOLD_H */
