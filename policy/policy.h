/* policy.h: the operator's YAML policy, loaded, validated and immutable.
 *
 * Version 1 (DESIGN.md §4):
 *   version: 1
 *   defaults: { action: allow|confirm|deny, confirm_ttl: <seconds>, hide_denied: <bool> }
 *   tools: { <name>: { action: allow|confirm|deny, irreversible: <bool>, fallback: token } }
 *
 * fallback: token opts one confirm tool into the one-time token for clients that cannot ask a
 * person; it is refused on an irreversible tool. hide_denied drops denied tools from tools/list
 * (the same for every client).
 *
 * Strict: unknown keys, wrong types, unknown actions, duplicate keys (tool names included),
 * anchors/aliases/tags, multiple documents, and out-of-range values are errors that name the file,
 * line and column of the offending node. The first error stops the load.
 *
 * A loaded policy is reference-counted so a reload can swap it while sessions keep the one they
 * started with. This library knows nothing of JSON-RPC or libevent. */
#ifndef SL_POLICY_H
#define SL_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#define POLICY_MAX_BYTES   (1u << 20)  /* policy file size */
#define POLICY_MAX_TOOLS   4096
#define POLICY_TTL_DEFAULT 120
#define POLICY_TTL_MAX     86400

enum policy_action {
    POLICY_ALLOW,
    POLICY_CONFIRM,
    POLICY_DENY,
};

struct policy_error {
    char file[256];
    unsigned line, col;  /* 1-based; 0 when the error is not about a node (e.g. cannot open) */
    char msg[256];
};

struct policy;

struct policy_decision {
    enum policy_action action;
    bool irreversible;
    bool token_fallback;   /* fallback: token (never with irreversible) */
    unsigned confirm_ttl;  /* seconds */
    const char *rule;      /* "tools.<name>" or "defaults.action"; owned by the policy */
};

/* Loads and validates. Returns 0 and sets *out (one reference, caller unrefs), or -1 and fills
 * *err. name is what errors call the file. */
int policy_load_file(const char *path, struct policy **out, struct policy_error *err);
int policy_load_buffer(const char *name, const char *buf, size_t len, struct policy **out,
                       struct policy_error *err);

/* "file:line:col: msg" (or "file: msg" when line is 0) into buf. */
void policy_error_format(const struct policy_error *err, char *buf, size_t len);

/* The decision for tool (len bytes, may contain any bytes). Never fails: an unnamed tool gets
 * the defaults. */
void policy_lookup(const struct policy *p, const char *tool, size_t len,
                   struct policy_decision *out);

/* defaults.hide_denied: denied tools are left out of tools/list. */
bool policy_hide_denied(const struct policy *p);

struct policy *policy_ref(struct policy *p);
void policy_unref(struct policy *p); /* NULL is a no-op */

/* The tools the policy names, for reports (index < policy_tool_count). */
size_t policy_tool_count(const struct policy *p);
const char *policy_tool_name(const struct policy *p, size_t index);

#endif /* SL_POLICY_H */
