/* cli.c: argv to struct cli_opts. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <openssl/crypto.h>
#include <yaml.h>

#include "base.h"

void cli_usage(FILE *out)
{
    fputs("usage: sluice [OPTIONS] [--] [UPSTREAM_CMD [ARG...]]\n"
          "       sluice check --policy FILE [--strict] [--against [--] UPSTREAM_CMD [ARG...]]\n"
          "       sluice check --policy FILE [--strict] --against --upstream URL\n"
          "       sluice pin [--policy FILE [--write]] ([--] UPSTREAM_CMD [ARG...] | --upstream URL)\n"
          "       sluice init ([--] UPSTREAM_CMD [ARG...] | --upstream URL)\n"
          "       sluice probe URL\n"
          "       sluice audit verify [--anchors FILE|redis://...] FILE...\n"
          "       sluice --help | --version\n"
          "\n"
          "sluice sits between an MCP client and an MCP server and asks a person, through the\n"
          "client's elicitation form, before any tool call the policy marks `confirm` runs.\n"
          "It serves the client on stdin/stdout (or Streamable HTTP with --listen) and runs\n"
          "UPSTREAM_CMD as a child on pipes. As with env(1) and timeout(1), the first argument\n"
          "that is not an option starts UPSTREAM_CMD; \"--\" before it is optional (needed only\n"
          "when the command itself starts with \"-\").\n"
          "\n"
          "options:\n"
          "  --policy FILE                  YAML policy (default: the embedded example policy)\n"
          "  --audit FILE                   append one JSON line per decision to FILE, each\n"
          "                                 linked to the one before by its SHA-256\n"
          "  --audit-sync MODE              always (fsync every line) or interval (at most\n"
          "                                 every 100 ms; default)\n"
          "  --audit-anchor-every N         log the journal's head (seq and hash) every N\n"
          "                                 lines, and push it to the --store (default 0: off)\n"
          "  --audit-anchor-seconds SEC     the same for a head older than SEC (default 60;\n"
          "                                 0: off)\n"
          "  --state-key-file FILE          key that seals confirmation state (>= 32 raw bytes,\n"
          "                                 mode 0600); else $SLUICE_STATE_KEY (hex, >= 64\n"
          "                                 digits); else a random key for this process\n"
          "  --previous-state-key-file FILE the key before a rotation: still opens, never seals\n"
          "  --log-level LEVEL              debug | info | warning | error (default info)\n"
          "  --log-format FORMAT            text | json (one JSON object per line on stderr)\n"
          "  --strict                       refuse to serve (exit 1 after the server's first\n"
          "                                 tools/list) when the policy names a tool the server\n"
          "                                 does not list, or a tool not annotated readOnlyHint:\n"
          "                                 true falls to allow by default (also defaults.strict)\n"
          "  -h, --help                     this text\n"
          "  -V, --version                  print the version\n"
          "\n"
          "HTTP front (a sidecar):\n"
          "  --listen ADDR:PORT             serve MCP Streamable HTTP on /mcp, with /healthz,\n"
          "                                 /readyz and /metrics (port 0: any free port)\n"
          "  --upstream URL                 an MCP server over Streamable HTTP instead of a\n"
          "                                 child: http(s)://HOST:PORT/PATH\n"
          "  --upstream-ca FILE             CA bundle for an https upstream (default: the\n"
          "                                 system's; verification is always on)\n"
          "                                 $SLUICE_UPSTREAM_AUTHORIZATION, if set, is sent as\n"
          "                                 the Authorization header to the HTTP upstream; a\n"
          "                                 client's own Authorization is never passed on\n"
          "  --tls-cert FILE --tls-key FILE TLS on the front (PEM)\n"
          "  --tls-client-ca FILE           require client certificates signed by this CA\n"
          "  --principal SOURCE             who a request is, for binding confirmations:\n"
          "                                 cert (the verified client certificate's subject;\n"
          "                                 the default with --tls-client-ca), bearer (a digest\n"
          "                                 of the Authorization bearer token), header:NAME (set\n"
          "                                 by a trusted proxy in front), anonymous (default)\n"
          "  --approval-listen ADDR:PORT    serve the approval page (/approve/, for tools with\n"
          "                                 approval: page) on a listener of its own; without\n"
          "                                 it the page is on --listen\n"
          "  --approval-base-url URL        the address people open the page at, and the one\n"
          "                                 Host it answers to off loopback (default: the\n"
          "                                 listener's own address)\n"
          "  --approval-tls-cert FILE --approval-tls-key FILE  TLS on --approval-listen\n"
          "  --approval-tls-client-ca FILE  client certificates for --approval-listen\n"
          "  --approval-principal SOURCE    who an approver is on --approval-listen, as\n"
          "                                 --principal (default: anonymous, or cert)\n"
          "  --allow-origin ORIGIN          a browser Origin allowed to call (repeatable); any\n"
          "                                 other Origin is refused with 403\n"
          "  --max-connections N            open connections (default 1024)\n"
          "  --max-body BYTES               request body limit (default 4194304)\n"
          "  --max-sessions N               legacy sessions (default 100000); when\n"
          "                                 full, the least recently used session with nothing\n"
          "                                 in flight is ended to make room\n"
          "  --max-sessions-per-principal N legacy sessions one principal may hold\n"
          "                                 (default 64; beyond it initialize gets 429),\n"
          "                                 and its parked calls of 2026-07-28 clients\n"
          "                                 (beyond it the server's question gets an error)\n"
          "  --child-per-session            one child per legacy client session, initialized\n"
          "                                 with that client's capabilities, so the server's\n"
          "                                 own questions reach that client (default: one\n"
          "                                 child shared by all clients)\n"
          "  --max-children N               children at once with --child-per-session\n"
          "                                 (default 32); beyond it initialize gets 503\n"
          "  --request-timeout SEC          to receive one request (default 10)\n"
          "  --idle-timeout SEC             idle keep-alive connection (default 60)\n"
          "  --session-idle SEC             unused legacy session (default 3600)\n"
          "  --drain-grace SEC              on SIGTERM, time for calls in flight (default 10)\n"
          "  --upstream-timeout SEC         an HTTP upstream's longest silence in a reply, and\n"
          "                                 an idle upstream connection (default 300); a\n"
          "                                 person's time to answer is never in it\n"
          "  --upstream-wait SEC            while the upstream is not ready (starting,\n"
          "                                 restarting, unreachable) a request to /mcp waits\n"
          "                                 this long for it before 503 (default 10; 0: at once)\n"
          "  --store URL                    where spent confirmations and the outcomes of\n"
          "                                 approved calls are kept: memory (default, this\n"
          "                                 process only) or redis://[user@]HOST:PORT[/DB],\n"
          "                                 shared by replicas; the password comes from\n"
          "                                 $SLUICE_STORE_PASSWORD\n"
          "  --store-prefix PREFIX          namespace of sluice's keys (default sluice:)\n"
          "  --store-timeout MS             bound on every store operation (default 2000)\n"
          "  --store-replicas N             Redis: a spend counts only once N replicas have it\n"
          "                                 (WAIT), so a failover to one keeps it (default 0)\n"
          "  --result-retention SEC         an approved call's outcome is kept this long after\n"
          "                                 its confirmation expires, for retries (default 600;\n"
          "                                 a shared store keeps a spent one at least 300)\n"
          "  --max-stored-result BYTES      largest outcome kept (default 1048576)\n"
          "  --notify-url URL               POST a JSON event (server, tool, caller, page URL,\n"
          "                                 expiry and a chat \"text\"; never the arguments) to\n"
          "                                 this http(s) webhook when a page approval is\n"
          "                                 pending; 3 attempts, never delaying the call.\n"
          "                                 $SLUICE_NOTIFY_URL gives the URL without showing\n"
          "                                 it (its path is often a secret) to ps; when both\n"
          "                                 are set, --notify-url wins (a warning says so)\n"
          "  --watch-policy                 reload the policy when its file changes (checked\n"
          "                                 every second; a Kubernetes ConfigMap's symlink swap\n"
          "                                 counts), as SIGHUP does\n"
          "  SIGHUP reloads the policy (a broken one is refused and the old one stays);\n"
          "  SIGTERM stops accepting, lets calls in flight finish, then exits.\n"
          "\n"
          "\n"
          "`sluice audit verify FILE...` checks a journal's hash chain (files oldest first)\n"
          "and exits 1 naming FILE:LINE of the first line edited, removed, reordered,\n"
          "inserted or cut; with --anchors (a saved log, or the redis:// store, read under\n"
          "--store-prefix) also that every anchored head is still in it.\n"
          "\n"
          "`sluice probe URL` GETs an http:// URL and exits 0 on a 2xx status (health checks\n"
          "in images without a shell).\n"
          "\n"
          "Without UPSTREAM_CMD sluice runs its built-in demo server (an in-memory file store).\n"
          "`sluice check --policy FILE` validates a policy: exit 0, or FILE:LINE:COL: error and\n"
          "exit 1. With --against it also starts UPSTREAM_CMD (or connects to --upstream URL),\n"
          "lists its tools and reports, at FILE:LINE:COL, policy tools the server lacks (exit 1)\n"
          "and destructive-looking tools allowed by default, with \"did you mean\" for near\n"
          "names.\n"
          "\n"
          "`sluice pin` lists the server's tools and prints each one's pin (sha256: of its\n"
          "canonical name, description, inputSchema and annotations) for the policy's\n"
          "tools.NAME.pin; with --write it rewrites the pin: lines of --policy FILE in place,\n"
          "keeping comments and layout. A tool whose live definition differs from its pin is\n"
          "denied and left out of tools/list (defaults.unpinned: deny does that to tools with\n"
          "no pin). `sluice init` prints a commented starter policy for the server: read-only\n"
          "tools allowed, destructive ones confirmed and irreversible, the rest confirmed,\n"
          "each with its pin.\n",
          out);
}

void cli_version(FILE *out)
{
    /* The first line stays "sluice X.Y.Z" for scripts; the libraries follow because a bug
     * report's first question is which OpenSSL or libevent the binary actually runs with:
     * these are the versions loaded at run time (hiredis has no such call: its build's). */
    fprintf(out, "sluice %s\n", SLUICE_VERSION);
    fprintf(out, "libevent %s\n%s\nlibyaml %s\nhiredis %d.%d.%d\n", event_get_version(),
            OpenSSL_version(OPENSSL_VERSION), yaml_get_version_string(), HIREDIS_MAJOR,
            HIREDIS_MINOR, HIREDIS_PATCH);
}

static int need_value(int argc, char **argv, int *i, const char **dst, char *err, size_t errlen)
{
    if (*i + 1 >= argc) {
        snprintf(err, errlen, "option %s needs a value", argv[*i]);
        return -1;
    }
    *dst = argv[++*i];
    return 0;
}

/* The options `sluice check` uses; any other is an error there, not silently ignored. */
static bool check_uses(const char *opt)
{
    static const char *const used[] = {
        "--policy", "--against", "--upstream", "--upstream-ca", "--upstream-timeout",
        "--log-level", "--log-format", "--strict", "-h", "--help",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(used); i++)
        if (strcmp(opt, used[i]) == 0)
            return true;
    return false;
}

/* The options `sluice audit verify` uses. */
static bool verify_uses(const char *opt)
{
    static const char *const used[] = {
        "--anchors", "--store-prefix", "--store-timeout", "--log-level", "--log-format",
        "-h", "--help",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(used); i++)
        if (strcmp(opt, used[i]) == 0)
            return true;
    return false;
}

/* The same for `sluice pin` and `sluice init` (init takes no policy). */
static bool lister_uses(enum cli_command c, const char *opt)
{
    static const char *const used[] = {
        "--upstream", "--upstream-ca", "--upstream-timeout", "--log-level", "--log-format",
        "-h", "--help", "--policy", "--write",
    };
    size_t n = SL_ARRAY_LEN(used) - (c == CLI_INIT ? 2 : 0);
    for (size_t i = 0; i < n; i++)
        if (strcmp(opt, used[i]) == 0)
            return true;
    return false;
}

/* pin and init read a live server; pin --write needs the policy it rewrites. */
static const char *lister_problem(const struct cli_opts *o)
{
    const char *cmd = o->command == CLI_PIN ? "pin" : "init";
    static char buf[80];
    if (o->upstream_argv == NULL && o->upstream_url == NULL) {
        snprintf(buf, sizeof(buf), "%s needs UPSTREAM_CMD or --upstream URL", cmd);
        return buf;
    }
    return o->write && o->policy == NULL ? "pin --write needs --policy FILE" : NULL;
}

/* Options that only make sense together, said at start rather than discovered later. */
static bool principal_valid(const char *p)
{
    return strcmp(p, "anonymous") == 0 || strcmp(p, "cert") == 0 || strcmp(p, "bearer") == 0 ||
           (strncmp(p, "header:", 7) == 0 && p[7] != '\0');
}

/* The approval page's own listener and its options, checked as --listen's are. */
static const char *approval_problem(const struct cli_opts *o)
{
    if ((o->approval_tls_cert != NULL) != (o->approval_tls_key != NULL))
        return "--approval-tls-cert and --approval-tls-key go together";
    if ((o->approval_tls_cert || o->approval_tls_client_ca || o->approval_principal) &&
        !o->approval_listen)
        return "--approval-tls-* and --approval-principal need --approval-listen";
    if (o->approval_tls_client_ca && !o->approval_tls_cert)
        return "--approval-tls-client-ca needs --approval-tls-cert and --approval-tls-key";
    if (o->approval_principal && !principal_valid(o->approval_principal))
        return "--approval-principal must be anonymous, cert, bearer or header:NAME";
    if (o->approval_principal && strcmp(o->approval_principal, "cert") == 0 &&
        !o->approval_tls_client_ca)
        return "--approval-principal cert needs --approval-tls-client-ca";
    if (o->approval_base_url && strncmp(o->approval_base_url, "http://", 7) != 0 &&
        strncmp(o->approval_base_url, "https://", 8) != 0)
        return "--approval-base-url must start with http:// or https://";
    if (o->approval_base_url && !o->listen && !o->approval_listen)
        return "--approval-base-url needs --listen or --approval-listen";
    return NULL;
}

static int cli_check_combinations(const struct cli_opts *o, char *err, size_t errlen)
{
    const char *problem = NULL;
    if (o->watch_policy && !o->policy)
        problem = "--watch-policy needs --policy FILE";
    else if (o->upstream_url && o->upstream_argv)
        problem = "--upstream URL and -- UPSTREAM_CMD exclude each other";
    else if (o->child_per_session && !o->listen)
        problem = "--child-per-session needs --listen (over stdio there is one client)";
    else if (o->child_per_session && o->upstream_url)
        problem = "--child-per-session is for a command upstream; an HTTP upstream of the "
                  "handshake era gets a session per client anyway";
    else if (o->upstream_ca && !o->upstream_url)
        problem = "--upstream-ca needs --upstream https://...";
    else if ((o->tls_cert != NULL) != (o->tls_key != NULL))
        problem = "--tls-cert and --tls-key go together";
    else if ((o->tls_cert || o->tls_client_ca || o->principal || o->norigins) && !o->listen)
        problem = "--tls-*, --principal and --allow-origin need --listen";
    else if (o->tls_client_ca && !o->tls_cert)
        problem = "--tls-client-ca needs --tls-cert and --tls-key";
    else if (o->principal && strcmp(o->principal, "anonymous") != 0 &&
             strcmp(o->principal, "cert") != 0 && strcmp(o->principal, "bearer") != 0 &&
             !(strncmp(o->principal, "header:", 7) == 0 && o->principal[7] != '\0'))
        problem = "--principal must be anonymous, cert, bearer or header:NAME";
    else if (o->principal && strcmp(o->principal, "cert") == 0 && !o->tls_client_ca)
        problem = "--principal cert needs --tls-client-ca";
    else if (o->audit_sync && strcmp(o->audit_sync, "always") != 0 &&
             strcmp(o->audit_sync, "interval") != 0)
        problem = "--audit-sync must be always or interval";
    else if ((o->audit_sync || o->audit_anchor_every) && !o->audit)
        problem = "--audit-sync and --audit-anchor-every need --audit FILE";
    else if (o->store_replicas && (o->store == NULL || strncasecmp(o->store, "redis://", 8) != 0))
        problem = "--store-replicas needs --store redis://...";
    else if (o->log_format && strcmp(o->log_format, "text") != 0 &&
             strcmp(o->log_format, "json") != 0)
        problem = "--log-format must be text or json";
    if (problem == NULL)
        problem = approval_problem(o);
    if (problem) {
        snprintf(err, errlen, "%s", problem);
        return -1;
    }
    return 0;
}

int cli_parse(int argc, char **argv, struct cli_opts *o, char *err, size_t errlen)
{
    static const struct { const char *name; size_t off; } valued[] = {
        { "--policy", offsetof(struct cli_opts, policy) },
        { "--audit", offsetof(struct cli_opts, audit) },
        { "--state-key-file", offsetof(struct cli_opts, key_file) },
        { "--previous-state-key-file", offsetof(struct cli_opts, prev_key_file) },
        { "--log-level", offsetof(struct cli_opts, log_level) },
        { "--log-format", offsetof(struct cli_opts, log_format) },
        { "--listen", offsetof(struct cli_opts, listen) },
        { "--upstream", offsetof(struct cli_opts, upstream_url) },
        { "--tls-cert", offsetof(struct cli_opts, tls_cert) },
        { "--tls-key", offsetof(struct cli_opts, tls_key) },
        { "--tls-client-ca", offsetof(struct cli_opts, tls_client_ca) },
        { "--upstream-ca", offsetof(struct cli_opts, upstream_ca) },
        { "--principal", offsetof(struct cli_opts, principal) },
        { "--approval-listen", offsetof(struct cli_opts, approval_listen) },
        { "--approval-base-url", offsetof(struct cli_opts, approval_base_url) },
        { "--approval-tls-cert", offsetof(struct cli_opts, approval_tls_cert) },
        { "--approval-tls-key", offsetof(struct cli_opts, approval_tls_key) },
        { "--approval-tls-client-ca", offsetof(struct cli_opts, approval_tls_client_ca) },
        { "--approval-principal", offsetof(struct cli_opts, approval_principal) },
        { "--store", offsetof(struct cli_opts, store) },
        { "--store-prefix", offsetof(struct cli_opts, store_prefix) },
        { "--audit-sync", offsetof(struct cli_opts, audit_sync) },
        { "--anchors", offsetof(struct cli_opts, anchors) },
        { "--notify-url", offsetof(struct cli_opts, notify_url) },
    };
    static const struct { const char *name; size_t off; long min, max, def; } numeric[] = {
        { "--max-connections", offsetof(struct cli_opts, max_connections), 1, 1000000, 1024 },
        { "--max-body", offsetof(struct cli_opts, max_body), 1024, SL_MAX_MESSAGE, 4194304 },
        { "--max-sessions", offsetof(struct cli_opts, max_sessions), 1, 10000000, 100000 },
        { "--max-sessions-per-principal", offsetof(struct cli_opts, max_sessions_per_principal), 1,
          10000000, 64 },
        { "--request-timeout", offsetof(struct cli_opts, request_timeout), 1, 3600, 10 },
        { "--idle-timeout", offsetof(struct cli_opts, idle_timeout), 1, 86400, 60 },
        { "--session-idle", offsetof(struct cli_opts, session_idle), 1, 604800, 3600 },
        { "--drain-grace", offsetof(struct cli_opts, drain_grace), 0, 3600, 10 },
        { "--upstream-timeout", offsetof(struct cli_opts, upstream_timeout), 1, 86400, 300 },
        { "--max-children", offsetof(struct cli_opts, max_children), 1, 10000, 32 },
        { "--upstream-wait", offsetof(struct cli_opts, upstream_wait), 0, 3600, 10 },
        { "--store-timeout", offsetof(struct cli_opts, store_timeout_ms), 10, 60000, 2000 },
        { "--store-replicas", offsetof(struct cli_opts, store_replicas), 0, 16, 0 },
        { "--result-retention", offsetof(struct cli_opts, result_retention), 0, 604800, 600 },
        { "--max-stored-result", offsetof(struct cli_opts, max_stored_result), 0, SL_MAX_MESSAGE,
          1048576 },
        { "--audit-anchor-every", offsetof(struct cli_opts, audit_anchor_every), 0, 100000000, 0 },
        { "--audit-anchor-seconds", offsetof(struct cli_opts, audit_anchor_seconds), 0, 86400,
          60 },
    };
    memset(o, 0, sizeof(*o));
    for (size_t k = 0; k < SL_ARRAY_LEN(numeric); k++)
        *(long *)((char *)o + numeric[k].off) = numeric[k].def;
    int i = 1;
    if (argc > 1 && strcmp(argv[1], "audit") == 0) {
        if (argc < 3 || strcmp(argv[2], "verify") != 0) {
            snprintf(err, errlen, "audit needs a subcommand: verify");
            return -1;
        }
        o->command = CLI_AUDIT_VERIFY;
        i = 3;
    } else if (argc > 1 && strcmp(argv[1], "check") == 0) {
        o->command = CLI_CHECK;
        i = 2;
    } else if (argc > 1 && (strcmp(argv[1], "pin") == 0 || strcmp(argv[1], "init") == 0)) {
        o->command = strcmp(argv[1], "pin") == 0 ? CLI_PIN : CLI_INIT;
        i = 2;
    } else if (argc > 1 && strcmp(argv[1], "probe") == 0) {
        if (argc != 3) {
            snprintf(err, errlen, "probe needs exactly one URL");
            return -1;
        }
        o->command = CLI_PROBE;
        o->probe_url = argv[2];
        return 0;
    }
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (o->command == CLI_AUDIT_VERIFY && (a[0] != '-' || strcmp(a, "--") == 0)) {
            i += strcmp(a, "--") == 0;
            o->verify_files = &argv[i];
            o->nverify_files = (size_t)(argc - i);
            break;
        }
        if (strcmp(a, "--") == 0) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "-- must be followed by the upstream command");
                return -1;
            }
            o->upstream_argv = &argv[i + 1];
            break;
        }
        /* The wrapper convention of env(1), timeout(1) and nice(1): the first argument that is
         * not an option starts the command. Launchers such as MCP Inspector drop the "--". */
        if (a[0] != '-' || a[1] == '\0') {
            o->upstream_argv = &argv[i];
            break;
        }
        if (o->command == CLI_AUDIT_VERIFY && !verify_uses(a)) {
            snprintf(err, errlen, "audit verify does not use %s", a);
            return -1;
        }
        if (o->command == CLI_CHECK && !check_uses(a)) {
            snprintf(err, errlen, "check does not use %s", a);
            return -1;
        }
        if ((o->command == CLI_PIN || o->command == CLI_INIT) && !lister_uses(o->command, a)) {
            snprintf(err, errlen, "%s does not use %s", o->command == CLI_PIN ? "pin" : "init",
                     a);
            return -1;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            o->command = CLI_HELP;
            return 0;
        }
        if (o->command == CLI_CHECK && strcmp(a, "--against") == 0) {
            o->against = true;
            continue;
        }
        if (o->command == CLI_PIN && strcmp(a, "--write") == 0) {
            o->write = true;
            continue;
        }
        if (strcmp(a, "--strict") == 0) {
            o->strict = true;
            continue;
        }
        if (strcmp(a, "--child-per-session") == 0) {
            o->child_per_session = true;
            continue;
        }
        if (strcmp(a, "--watch-policy") == 0) {
            o->watch_policy = true;
            continue;
        }
        if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
            o->command = CLI_VERSION;
            return 0;
        }
        if (strcmp(a, "--allow-origin") == 0) {
            if (o->norigins == CLI_MAX_ORIGINS) {
                snprintf(err, errlen, "at most %d --allow-origin", CLI_MAX_ORIGINS);
                return -1;
            }
            if (need_value(argc, argv, &i, &o->origins[o->norigins++], err, errlen) != 0)
                return -1;
            continue;
        }
        size_t n = 0;
        while (n < SL_ARRAY_LEN(numeric) && strcmp(a, numeric[n].name) != 0)
            n++;
        if (n < SL_ARRAY_LEN(numeric)) {
            const char *v;
            char *end;
            if (need_value(argc, argv, &i, &v, err, errlen) != 0)
                return -1;
            long x = strtol(v, &end, 10);
            if (*v == '\0' || *end != '\0' || x < numeric[n].min || x > numeric[n].max) {
                snprintf(err, errlen, "%s: \"%s\" is not a number from %ld to %ld", a, v,
                         numeric[n].min, numeric[n].max);
                return -1;
            }
            *(long *)((char *)o + numeric[n].off) = x;
            continue;
        }
        size_t k = 0;
        while (k < SL_ARRAY_LEN(valued) && strcmp(a, valued[k].name) != 0)
            k++;
        if (k == SL_ARRAY_LEN(valued)) {
            snprintf(err, errlen, "unknown option \"%s\"", a);
            return -1;
        }
        if (need_value(argc, argv, &i, (const char **)((char *)o + valued[k].off), err,
                       errlen) != 0)
            return -1;
    }
    if (o->command == CLI_AUDIT_VERIFY) {
        if (o->nverify_files == 0) {
            snprintf(err, errlen, "audit verify needs the journal FILE... (oldest first)");
            return -1;
        }
        return 0;
    }
    if (o->command == CLI_CHECK) {
        bool upstream = o->upstream_argv != NULL || o->upstream_url != NULL;
        const char *problem = o->policy == NULL ? "check needs --policy FILE"
                              : upstream && !o->against
                                  ? "check takes an upstream only with --against"
                              : !upstream && o->against
                                  ? "check --against needs UPSTREAM_CMD or --upstream URL"
                                  : NULL;
        if (problem) {
            snprintf(err, errlen, "%s", problem);
            return -1;
        }
    }
    if ((o->command == CLI_PIN || o->command == CLI_INIT) && lister_problem(o)) {
        snprintf(err, errlen, "%s", lister_problem(o));
        return -1;
    }
    return cli_check_combinations(o, err, errlen);
}
