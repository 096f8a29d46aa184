/* pinyaml.h: `sluice pin --write`: a policy file's pin: lines rewritten in place.
 *
 * A careful line edit, not a YAML re-emit, so that comments, blank lines, key order, quoting and
 * layout stay exactly as the operator wrote them. For each tool to pin, the loaded policy says
 * where its name is (policy_tool_where); then:
 *   - a block mapping (name:, then its keys on the lines below, one indent deeper): an existing
 *     pin: line at that indent gets its value replaced (a comment after it is kept); otherwise a
 *     pin: line is added after the tool's action: line (or after the name when action's value is
 *     not on its line), at the indent of the tool's keys;
 *   - a flow mapping on the name's line (name: {action: allow}): the pin member is replaced, or
 *     ", pin: sha256:..." is added before its closing brace.
 * Anything else (a flow mapping over several lines, a tool that is not a mapping) is an error
 * that names the line. The result is loaded again and must give every requested pin and nothing
 * else changed in the tool count; otherwise it is an error too, and nothing is to be written.
 * Pure: no I/O. */
#ifndef SL_PINYAML_H
#define SL_PINYAML_H

#include "base.h"
#include "policy.h"

struct pinyaml_pin {
    size_t tool;                 /* index in the policy (policy_tool_name) */
    uint8_t digest[32];
};

/* Rewrites text (the file p was loaded from, named name in errors) with the pins; appends the
 * new text to out and returns 0, or returns -1 with "NAME:LINE: why" in err. */
int pinyaml_rewrite(const char *name, const char *text, size_t len, const struct policy *p,
                    const struct pinyaml_pin *pins, size_t n, struct sl_buf *out, char *err,
                    size_t errlen);

/* Appends name as a YAML mapping key a policy reads back as name: plain when it is an
 * identifier that YAML cannot read as anything else, else double-quoted with JSON escapes.
 * Returns false (and appends nothing) for a name a policy cannot hold or sluice will not write:
 * empty, or with a byte outside printable ASCII. */
bool pinyaml_key(struct sl_buf *out, struct sl_str name);

#endif /* SL_PINYAML_H */
