/* cli.h: the command line (DESIGN.md §3), parsed into a plain struct so it can be unit-tested. */
#ifndef SL_CLI_H
#define SL_CLI_H

#include <stdbool.h>
#include <stdio.h>

enum cli_command { CLI_RUN, CLI_CHECK, CLI_PROBE, CLI_AUDIT_VERIFY, CLI_HELP, CLI_VERSION, CLI_PIN,
                   CLI_INIT };

#define CLI_MAX_ORIGINS 16

struct cli_opts {
    enum cli_command command;
    const char *policy;          /* NULL: the embedded example policy */
    const char *audit;
    const char *audit_sync;      /* --audit-sync always|interval (NULL: interval) */
    long audit_anchor_every;     /* --audit-anchor-every N records (0: off) */
    long audit_anchor_seconds;   /* --audit-anchor-seconds T (0: off) */
    const char *anchors;         /* audit verify --anchors FILE|redis://... */
    char **verify_files;         /* audit verify FILE...: into argv */
    size_t nverify_files;
    const char *key_file;
    const char *prev_key_file;
    const char *log_level;
    const char *log_format;      /* "text" (default) or "json" */
    const char *listen;          /* ADDR:PORT: serve Streamable HTTP instead of stdio */
    const char *upstream_url;    /* http(s)://...: an HTTP upstream instead of a child */
    const char *tls_cert, *tls_key, *tls_client_ca, *upstream_ca;
    const char *principal;       /* anonymous | cert | bearer | header:NAME */
    /* The approval page on a listener of its own (--approval-listen), its TLS and principal
     * options (as --tls-* and --principal are for --listen), and the URL people open. */
    const char *approval_listen, *approval_base_url;
    const char *approval_tls_cert, *approval_tls_key, *approval_tls_client_ca;
    const char *approval_principal;
    const char *origins[CLI_MAX_ORIGINS];
    size_t norigins;
    long max_connections, max_body, max_sessions, max_sessions_per_principal;
    long request_timeout, idle_timeout, session_idle, drain_grace;
    long upstream_timeout;       /* --upstream-timeout: an HTTP upstream's silence in a reply */
    long upstream_wait;          /* --upstream-wait: how long /mcp holds a request for a not
                                    ready upstream before it answers 503 (0: at once) */
    const char *store;           /* --store URL (NULL: memory) */
    const char *store_prefix;    /* --store-prefix (NULL: "sluice:") */
    long store_timeout_ms;       /* --store-timeout */
    long store_replicas;         /* --store-replicas: a spend waits for this many (0) */
    long result_retention;       /* --result-retention */
    long max_stored_result;      /* --max-stored-result */
    const char *notify_url;      /* --notify-url: a webhook told of pending page approvals */
    const char *probe_url;       /* probe URL */
    bool against;                /* check --against -- UPSTREAM_CMD */
    bool strict;                 /* --strict: refuse to serve on a policy/server mismatch */
    bool child_per_session;      /* --child-per-session: a child for each legacy session */
    long max_children;           /* --max-children: at most this many at once */
    bool watch_policy;           /* --watch-policy: reload when the policy file changes */
    bool write;                  /* pin --write: rewrite the policy's pin: lines in place */
    char **upstream_argv;        /* NULL-terminated, into argv; NULL: the built-in demo */
};

/* Parses argv. Returns 0, or -1 with a one-line message in err (what was wrong). */
int cli_parse(int argc, char **argv, struct cli_opts *o, char *err, size_t errlen);
void cli_usage(FILE *out);
/* "sluice X.Y.Z", then one line per library linked, with its version. */
void cli_version(FILE *out);

#endif /* SL_CLI_H */
