/* cmd_pin.h: `sluice pin` and `sluice init`, the commands that read a live server's tools and
 * write policy text from them (issue 23). Both print to stdout and return the exit status. */
#ifndef SL_CMD_PIN_H
#define SL_CMD_PIN_H

#include "cli.h"

/* Prints each tool's pin, or with o->write rewrites o->policy's pin: lines (pinyaml.h). 0 on
 * success; 1 when the server could not be listed or the policy not loaded or rewritten. */
int cmd_pin(const struct cli_opts *o);
/* Prints a commented starter policy for the server (cmd_init.c). 0, or 1 when it could not be
 * listed. */
int cmd_init(const struct cli_opts *o);

#endif /* SL_CMD_PIN_H */
