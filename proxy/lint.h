/* lint.h: the policy versus the tools a live server lists (issue: approve what will happen).
 *
 * Two findings, both only ever warnings at run time (annotations never relax a rule):
 *   - a tool the policy names that the server does not list (a typo, or a renamed tool, leaves
 *     the real tool on the default action);
 *   - a server tool that the policy does not name, that falls to "defaults.action: allow", and
 *     whose annotations say it may destroy data (readOnlyHint not true and destructiveHint not
 *     false: MCP's defaults are readOnlyHint false, destructiveHint true).
 * Pure: no I/O. */
#ifndef SL_LINT_H
#define SL_LINT_H

#include "json.h"
#include "policy.h"

/* One finding: missing is true for a policy tool the server lacks, false for a risky default. */
typedef void lint_cb(void *arg, bool missing, const char *message);

struct lint_counts {
    size_t missing;  /* policy tools the server does not list */
    size_t risky;    /* destructive-looking server tools allowed by default */
};

/* Checks tools (a JSON array of Tool objects). With complete (every page of tools/list), policy
 * tools the server lacks are reported too; one page alone can only show risky defaults. */
struct lint_counts lint_check(const struct policy *p, const struct json *tools, bool complete,
                              lint_cb *cb, void *arg);

#endif /* SL_LINT_H */
