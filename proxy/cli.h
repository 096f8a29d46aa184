/* cli.h: the command line (DESIGN.md §3), parsed into a plain struct so it can be unit-tested. */
#ifndef SL_CLI_H
#define SL_CLI_H

#include <stdbool.h>
#include <stdio.h>

enum cli_command { CLI_RUN, CLI_CHECK, CLI_HELP, CLI_VERSION };

struct cli_opts {
    enum cli_command command;
    const char *policy;          /* NULL: the embedded example policy */
    const char *audit;
    const char *key_file;
    const char *prev_key_file;
    const char *log_level;
    bool against;                /* check --against -- UPSTREAM_CMD */
    char **upstream_argv;        /* NULL-terminated, into argv; NULL: the built-in demo */
};

/* Parses argv. Returns 0, or -1 with a message in err (the caller prints usage). */
int cli_parse(int argc, char **argv, struct cli_opts *o, char *err, size_t errlen);
void cli_usage(FILE *out);

#endif /* SL_CLI_H */
