/* namefold.h: tool names as a server that matches them loosely reads them.
 *
 * Why it exists: the policy matches a tools/call's name exactly, byte for byte. A server that
 * looks its tools up case-insensitively, or after dropping invisible characters, runs
 * delete_file for "Delete_File" or "delete\u200b_file", names the policy does not hold, which
 * would go on under defaults.action (allow, say) while the policy gates or denies delete_file.
 * So the gate refuses a name that is not one the policy names but reads as one: equal to it
 * once both are case folded (fold.h, simple folding) and stripped of every character that
 * renders as nothing or as a blank (unicode_hidden.h's set, the default-ignorable code points
 * among them), the C0 controls and U+0020. A policy cannot name such a variant unless it is
 * plain (policy_name.h): "Delete_File" it can name, and then that name is its own.
 *
 * Not covered: compatibility forms (fullwidth letters, ligatures: NFKC) and full case folding
 * ("ß" and "ss"); a server that matches names that loosely is not known. */
#ifndef SL_NAMEFOLD_H
#define SL_NAMEFOLD_H

#include "base.h"
#include "policy.h"

/* True when a and b read as one name under the folding above (byte-equal names included). */
bool namefold_equal(struct sl_str a, struct sl_str b);

/* The index (policy_tool_name) of the first tool of p whose name is not tool but reads as it
 * (namefold_equal), or policy_tool_count(p) when there is none or p names tool exactly. Costs
 * one comparison per named tool, most of which end at the first character. */
size_t namefold_policy_variant(const struct policy *p, struct sl_str tool);

#endif /* SL_NAMEFOLD_H */
