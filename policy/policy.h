/* policy.h: the operator's YAML policy, loaded, validated and immutable.
 *
 * Version 1 (DESIGN.md §4):
 *   version: 1
 *   defaults: { action: allow|confirm|deny, confirm_ttl: <seconds>, hide_denied: <bool>,
 *               strict: <bool>, unpinned: allow|deny }
 *   tools: { <name>: { action: allow|confirm|deny, irreversible: <bool>, fallback: token|page,
 *                      approval: client|page|client-or-page, approvers: [<glob>, ...],
 *                      self_approve: <bool>,
 *                      message: <template>, args: { <argument>: { <rule>: ..., ... } },
 *                      observe: { tool: <name>, args: { ... } }, strict_args: <bool>,
 *                      pin: sha256:<64 hex> } }
 *
 * pin: the digest of the tool's definition as the operator reviewed it (proxy/pin.h says what
 * is hashed); a live definition that differs gets the tool denied and hidden. unpinned: deny
 * does the same for every tool without a pin (the default, allow, leaves them alone).
 *
 * approval: page sends the question to sluice's own approval page (proxy/approval.h) instead of
 * the caller's client; approvers: (which implies page) says which principals may approve there;
 * the caller may approve its own call only with self_approve: true. fallback: page gives the page
 * to clients that cannot ask (allowed on irreversible tools: a person approves).
 *
 * fallback: token opts one confirm tool into the one-time token for clients that cannot ask a
 * person; it is refused on an irreversible tool. hide_denied drops denied tools from tools/list
 * (the same for every client). strict: true makes sluice refuse to serve when the policy and the
 * server's tools/list disagree (proxy/lint.h), as --strict does.
 *
 * strict_args: true refuses every call of the tool that carries a top-level argument not listed
 * under its args: (with no args:, any argument), before anything else is decided.
 *
 * Strict: unknown keys, wrong types, unknown actions, duplicate keys (tool names included),
 * anchors/aliases/tags, multiple documents, and out-of-range values are errors that name the file,
 * line and column of the offending node. The first error stops the load.
 *
 * One exception, so that tightening a tool to deny in an emergency always loads (at start and on
 * SIGHUP): on a deny tool, a leftover message:, observe: or fallback: (each still validated as
 * far as it can be without the action) is ignored with a warning at its key, file:line:col,
 * that the loader reports (policy_warning).
 *
 * Argument rules (args:) and message templates (message:) are validated here and read by
 * proxy/rules.c and proxy/confirm.c through policy_tool_args and policy_tool_message; what each
 * rule means at call time is documented at struct policy_arg.
 *
 * A loaded policy is reference-counted so a reload can swap it while sessions keep the one they
 * started with. This library knows nothing of JSON-RPC or libevent. */
#ifndef SL_POLICY_H
#define SL_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define POLICY_MAX_BYTES   (1u << 20)  /* policy file size */
#define POLICY_MAX_TOOLS   4096
#define POLICY_TTL_DEFAULT 120
#define POLICY_TTL_MAX     86400
#define POLICY_OPEN_DEFAULT   8
#define POLICY_RATE_DEFAULT   20
#define POLICY_LIMIT_MAX      10000

struct ere;
#define POLICY_MAX_ARGS    64          /* arguments under args: of one tool */
#define POLICY_MAX_LIST    64          /* patterns in one glob list, values in one enum */
#define POLICY_MAX_PATTERN 1024        /* bytes of one glob or regex */
#define POLICY_MAX_MESSAGE 512         /* bytes of one message template */
#define POLICY_MAX_LENGTH  (16u << 20) /* largest max_length (a JSON-RPC message, SL_MAX_MESSAGE) */
#define POLICY_MAX_NUMBER  64          /* characters of a number literal (SL_MAX_NUMBER) */
#define POLICY_MAX_BOUND   32          /* characters of a min/max literal in the policy */
#define POLICY_PIN_LEN     32          /* bytes of a pin (SHA-256) */

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

/* observe: before asking about a call, sluice calls `tool` (a read tool of the same server,
 * itself an allow tool), with argument to[i] set to the call's argument from[i]. */
struct policy_observe {
    const char *tool;
    size_t nargs;
    const char *const *to;
    const char *const *from;
};

/* approval: who answers a confirm tool's question. client: the caller's client (form
 * elicitation, today's question); page: a person on sluice's own approval page; client-or-page:
 * the client when it can ask (form elicitation), else the page. approvers: implies page. */
enum policy_approval {
    POLICY_APPROVAL_CLIENT,
    POLICY_APPROVAL_PAGE,
    POLICY_APPROVAL_CLIENT_OR_PAGE,
};

struct policy_decision {
    const struct policy_observe *observe;  /* the observe rule of a confirm tool, or NULL */
    enum policy_action action;
    bool irreversible;
    bool token_fallback;   /* fallback: token (never with irreversible) */
    bool strict_args;      /* refuse a call carrying an argument not declared under args: */
    enum policy_approval approval; /* approval: (client unless the tool is confirm) */
    bool page_fallback;    /* fallback: page (a client that cannot ask gets the page) */
    bool self_approve;     /* the caller may approve its own call on the page */
    const char *const *approvers; /* approvers: principal patterns (owned by the policy), or
                                   * NULL: nobody but the caller (with self_approve) */
    size_t napprovers;
    const uint8_t *pin;    /* tools.<name>.pin (POLICY_PIN_LEN bytes, owned by the policy), or
                            * NULL when the tool has none */
    bool unpinned_deny;    /* defaults.unpinned: deny (applies when pin is NULL) */
    unsigned confirm_ttl;  /* seconds */
    unsigned max_open;     /* defaults.max_open_confirmations: unanswered questions a principal
                            * may have */
    unsigned per_minute;   /* defaults.max_questions_per_minute */
    const char *rule;      /* "tools.<name>" or "defaults.action"; owned by the policy */
    bool named;            /* the policy names the tool (rule is "tools.<name>") */
    const struct policy_arg *args; /* tools.<name>.args (owned by the policy), or NULL */
    size_t nargs;
};

/* An enum entry. A plain YAML number (JSON grammar: 5, -1.5, 2e3) is a number, plain true/false
 * a boolean, anything else (quoted, or plain text that does not look numeric) a string. */
enum policy_value_type {
    POLICY_VALUE_STRING,
    POLICY_VALUE_NUMBER,
    POLICY_VALUE_BOOL,
};

struct policy_enum_value {
    enum policy_value_type type;
    const char *text;  /* the string, the number literal, or "true"/"false" */
    size_t len;        /* bytes of text (a string may hold NUL) */
};

/* The rules for one argument of one tool: tools.<tool>.args.<name>. Everything is owned by the
 * policy and lives as long as it. Rules apply to the top-level argument of that name when it is
 * present; an absent argument is not checked. A rule that applies to strings (globs, regex,
 * max_length) refuses a value of any other type, min/max refuse anything but a number, and an
 * array value is checked element by element (each element must then be a string or number).
 *   deny_glob     refuse when the normalized path matches any pattern
 *   allow_glob    refuse when it matches none (relative paths never match an absolute pattern)
 *   confirm_glob  escalate: an allow tool asks a person when the path matches any pattern
 *   regex         POSIX ERE (bytes, C locale) that must match the WHOLE value; read as glibc
 *                 reads it, less what ere.h refuses (back-references, GNU escapes, ...);
 *                 matched in time linear in the value, within a step budget per call
 *                 (rules.h)
 *   max_length    bytes of a string
 *   enum          the value must equal one entry, type included (numbers compare by value)
 *   min, max      inclusive bounds on a number, compared exactly in decimal
 * Globs: '*' is any run of characters inside one path segment, '?' one character (not '/'),
 * a "**" segment any number of whole segments (zero included); nothing else is special: every
 * other byte matches itself, case included. The loader refuses '{', '}', '[', ']', '\' and a
 * leading '~', which mean something else in shells. Globs are matched against whole paths,
 * never as prefixes. */
struct policy_arg {
    const char *name;                /* NUL-terminated, no control characters */
    size_t len;
    const char *rule;                /* "tools.<tool>.args.<name>", for rule names */
    const char *const *deny_glob;    /* n_deny_glob NUL-terminated patterns */
    size_t n_deny_glob;
    const char *const *allow_glob;
    size_t n_allow_glob;
    const char *const *confirm_glob;
    size_t n_confirm_glob;
    const char *regex;               /* the source as written; NULL when none */
    const struct ere *regex_re;      /* regex compiled (ere.h) */
    bool has_max_length;
    size_t max_length;
    const struct policy_enum_value *enum_values;
    size_t n_enum;
    const char *min, *max;           /* JSON number literals; NULL when none */
};

/* Loads and validates. Returns 0 and sets *out (one reference, caller unrefs), or -1 and fills
 * *err. name is what errors call the file. */
int policy_load_file(const char *path, struct policy **out, struct policy_error *err);
int policy_load_buffer(const char *name, const char *buf, size_t len, struct policy **out,
                       struct policy_error *err);

/* Writes p[0..len) into dst for a message a person reads: printable ASCII as is, '"' and '\\'
 * escaped, every other byte \xHH, cut after max bytes with "...", in quotes when quoted, NUL-
 * terminated. dst needs max * 4 + 6 bytes. Returns the length written. */
size_t policy_escape(char *dst, const char *p, size_t len, size_t max, bool quoted);

/* "file:line:col: msg" (or "file: msg" when line is 0) into buf. */
void policy_error_format(const struct policy_error *err, char *buf, size_t len);

/* The decision for tool (len bytes, may contain any bytes). Never fails: an unnamed tool gets
 * the defaults. */
void policy_lookup(const struct policy *p, const char *tool, size_t len,
                   struct policy_decision *out);

/* True when principal s (len bytes) matches pattern (an approvers: entry): '*' any run of
 * bytes (',' and '/' included), '?' one byte, everything else itself. Whole string only. The
 * loader refuses braces, brackets, a backslash but a cert: subject's own escape, a space at
 * either end or after the source's ':' and invisible characters (policy_name.h). */
bool policy_principal_match(const char *pattern, const char *s, size_t len);

/* True when some confirm tool's question can go to the approval page (approval: page or
 * client-or-page, approvers:, fallback: page). */
bool policy_uses_page(const struct policy *p);

/* defaults.hide_denied: denied tools are left out of tools/list. */
bool policy_hide_denied(const struct policy *p);

struct policy *policy_ref(struct policy *p);
void policy_unref(struct policy *p); /* NULL is a no-op */

/* The argument rules of tool, in file order, *count of them; NULL and 0 when the tool has
 * none or the policy does not name it. Owned by the policy. */
const struct policy_arg *policy_tool_args(const struct policy *p, const char *tool, size_t len,
                                          size_t *count);

/* The message template of tool, or NULL when it has none. Owned by the policy. Grammar: literal
 * text (no control characters), {field} where field is [A-Za-z0-9_.-]+ and is listed under the
 * tool's args:, and {{ / }} for literal braces. */
const char *policy_tool_message(const struct policy *p, const char *tool, size_t len);

/* Compares two JSON number literals exactly (no floating point: 1e400 > 1e399, 0.1 == 1e-1,
 * -0 == 0). Returns 0 and sets *cmp to <0, 0 or >0, or -1 when either is not a JSON number of at
 * most POLICY_MAX_NUMBER characters. */
int policy_number_cmp(const char *a, size_t alen, const char *b, size_t blen, int *cmp);

/* Warnings of the load, in file order (index < policy_warning_count): file, line, col and msg
 * as for an error (policy_error_format formats one). */
size_t policy_warning_count(const struct policy *p);
const struct policy_error *policy_warning(const struct policy *p, size_t index);

/* The tools the policy names, for reports (index < policy_tool_count). */
size_t policy_tool_count(const struct policy *p);
const char *policy_tool_name(const struct policy *p, size_t index);
/* One view of the tools that another module computes from them once (namefold.c keeps the
 * tools in their loose names' order here), owned by the policy from then on and freed with it
 * (free()); a second view set is freed. NULL until set. A policy is otherwise immutable once
 * loaded; this is set on first use, from the one thread that uses the policy (sluice's event
 * loop, or a command's main). */
void *policy_tools_view(const struct policy *p);
void policy_set_tools_view(const struct policy *p, void *view);
/* Where a part of the policy was written, for findings that point into the file: the name it
 * was loaded as (owned by the policy), and the 1-based line and column; 0 and 0 when it was not
 * written (a default left out). */
struct policy_where {
    const char *file;
    unsigned line, col;
};
struct policy_where policy_tool_where(const struct policy *p, size_t index); /* its name */
struct policy_where policy_default_where(const struct policy *p); /* defaults.action's value */
/* defaults.strict. */
bool policy_strict(const struct policy *p);
/* defaults.unpinned: deny. */
bool policy_unpinned_deny(const struct policy *p);

#endif /* SL_POLICY_H */
