/* lint.h: the policy versus the tools a live server lists (issue: approve what will happen).
 *
 * Three findings:
 *   - a tool the policy names that the server does not list (a typo, or a renamed tool, leaves
 *     the real tool on the default action);
 *   - a server tool that the policy does not name and that falls to "defaults.action: allow",
 *     when its annotations say it may destroy data (readOnlyHint not true and destructiveHint not
 *     false: MCP's defaults are readOnlyHint false, destructiveHint true) or, strict, whenever
 *     it is not annotated readOnlyHint: true;
 *   - a server tool whose definition does not match its pin: in the policy (pin.h): sluice
 *     denies and hides it; counted with the risky ones, at the tool's name in the policy;
 *   - with a complete listing, an argument rule (tools.<tool>.args.<name>) on a name the tool's
 *     inputSchema.properties does not list: the rule checks nothing (reported as missing:
 *     true, at the tool's name; a schema without properties says nothing).
 * Each finding points into the policy (file:line:col of the tool's name, or of defaults.action)
 * and names a near name from the other side when there is one ("did you mean"): an edit distance
 * of at most 2, or the same name in another case. Annotations only ever produce findings; they
 * never relax a rule. Pure: no I/O. */
#ifndef SL_LINT_H
#define SL_LINT_H

#include "json.h"
#include "policy.h"

struct lint_finding {
    bool missing;              /* true: a policy tool the server lacks; false: a loose default */
    struct policy_where where; /* line 0: not written in the file (defaults.action left out) */
    const char *message;       /* without the place; with the "did you mean" */
};

typedef void lint_finding_cb(void *arg, const struct lint_finding *f);

struct lint_counts {
    size_t missing;  /* policy tools the server does not list */
    size_t risky;    /* server tools allowed by default that the annotations do not clear, and
                      * server tools whose definition does not match their pin */
    size_t unknown_args; /* argument rules on names the tool's inputSchema.properties lacks */
};

/* Checks tools (a JSON array of Tool objects). With complete (every page of tools/list), policy
 * tools the server lacks are reported too; one page alone can only show risky defaults. With
 * strict, every tool not annotated readOnlyHint: true that falls to allow by default is risky. */
struct lint_counts lint_run(const struct policy *p, const struct json *tools, bool complete,
                            bool strict, lint_finding_cb *cb, void *arg);

/* The same without strict, for callers that take the message alone: the place is appended to
 * it as " (at FILE:LINE:COL)". */
typedef void lint_cb(void *arg, bool missing, const char *message);
struct lint_counts lint_check(const struct policy *p, const struct json *tools, bool complete,
                              lint_cb *cb, void *arg);

/* "FILE:LINE:COL" (or "FILE" when line is 0) into buf. */
void lint_where_format(const struct policy_where *w, char *buf, size_t len);
/* The same without the file's directories: what a client is told (it need not learn where the
 * operator keeps the policy). */
void lint_where_short(const struct policy_where *w, char *buf, size_t len);

/* Strict's verdict on a policy against a complete listing (issue 21). */
struct lint_verdict {
    bool pass;                 /* no finding */
    char summary[200];         /* "1 tool named but not listed, 0 not read-only allowed by
                                  default" */
    char first[600];           /* the first finding, "policy.yaml:7:3: ...", or "" */
};
/* lint_run with complete and strict; each finding also goes to cb. */
struct lint_verdict lint_strict(const struct policy *p, const struct json *tools,
                                lint_finding_cb *cb, void *arg);

/* Without strict: the findings as one text for a client into out (appended; nothing when there
 * are none): a first line that counts them, then one "policy.yaml:LINE:COL: message" line each,
 * for at most LINT_NOTICE_MAX of them. Each finding also goes to cb. Returns how many. */
#define LINT_NOTICE_MAX 20
size_t lint_notice(const struct policy *p, const struct json *tools, lint_finding_cb *cb,
                   void *arg, struct sl_buf *out);

#endif /* SL_LINT_H */
