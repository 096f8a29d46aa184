/* cli.c: argv to struct cli_opts. */
#include "cli.h"

#include <string.h>

#include "base.h"

void cli_usage(FILE *out)
{
    fputs("usage: sluice [OPTIONS] [-- UPSTREAM_CMD [ARG...]]\n"
          "       sluice check --policy FILE [--against -- UPSTREAM_CMD [ARG...]]\n"
          "       sluice --help | --version\n"
          "\n"
          "sluice sits between an MCP client and an MCP server and asks a person, through the\n"
          "client's elicitation form, before any tool call the policy marks `confirm` runs.\n"
          "It serves the client on stdin/stdout and runs UPSTREAM_CMD as a child on pipes.\n"
          "\n"
          "options:\n"
          "  --policy FILE                  YAML policy (default: the embedded example policy)\n"
          "  --audit FILE                   append one JSON line per decision to FILE\n"
          "  --state-key-file FILE          key that seals confirmation state (>= 32 raw bytes,\n"
          "                                 mode 0600); else $SLUICE_STATE_KEY (hex, >= 64\n"
          "                                 digits); else a random key for this process\n"
          "  --previous-state-key-file FILE the key before a rotation: still opens, never seals\n"
          "  --log-level LEVEL              debug | info | warning | error (default info)\n"
          "  -h, --help                     this text\n"
          "  -V, --version                  print the version\n"
          "\n"
          "Without UPSTREAM_CMD sluice runs its built-in demo server (an in-memory file store).\n"
          "`sluice check --policy FILE` validates a policy: exit 0, or FILE:LINE:COL: error and\n"
          "exit 1. With --against it also starts UPSTREAM_CMD, lists its tools and reports policy\n"
          "tools the server lacks (exit 1) and destructive-looking tools allowed by default.\n",
          out);
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

int cli_parse(int argc, char **argv, struct cli_opts *o, char *err, size_t errlen)
{
    static const struct { const char *name; size_t off; } valued[] = {
        { "--policy", offsetof(struct cli_opts, policy) },
        { "--audit", offsetof(struct cli_opts, audit) },
        { "--state-key-file", offsetof(struct cli_opts, key_file) },
        { "--previous-state-key-file", offsetof(struct cli_opts, prev_key_file) },
        { "--log-level", offsetof(struct cli_opts, log_level) },
    };
    memset(o, 0, sizeof(*o));
    int i = 1;
    if (argc > 1 && strcmp(argv[1], "check") == 0) {
        o->command = CLI_CHECK;
        i = 2;
    }
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "-- must be followed by the upstream command");
                return -1;
            }
            o->upstream_argv = &argv[i + 1];
            break;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            o->command = CLI_HELP;
            return 0;
        }
        if (o->command == CLI_CHECK && strcmp(a, "--against") == 0) {
            o->against = true;
            continue;
        }
        if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
            o->command = CLI_VERSION;
            return 0;
        }
        size_t k = 0;
        while (k < SL_ARRAY_LEN(valued) && strcmp(a, valued[k].name) != 0)
            k++;
        if (k == SL_ARRAY_LEN(valued)) {
            snprintf(err, errlen, "unknown argument \"%s\"", a);
            return -1;
        }
        if (need_value(argc, argv, &i, (const char **)((char *)o + valued[k].off), err,
                       errlen) != 0)
            return -1;
    }
    if (o->command == CLI_CHECK && (o->policy == NULL || (o->upstream_argv != NULL) != o->against)) {
        snprintf(err, errlen, "check needs --policy FILE, and --against -- UPSTREAM_CMD together");
        return -1;
    }
    return 0;
}
