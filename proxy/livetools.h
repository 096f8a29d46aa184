/* livetools.h: the tools a live server lists, once, for the commands that read them (`sluice
 * pin`, `sluice init`). It starts the upstream as `check --against` does (-- CMD ARGS, or
 * --upstream URL with --upstream-ca and --upstream-timeout), initializes a legacy one, lists
 * every page of tools/list (upstream_list_tools), and stops it. */
#ifndef SL_LIVETOOLS_H
#define SL_LIVETOOLS_H

#include "cli.h"
#include "json.h"

/* Called once with the JSON array of Tool objects and the server's name (serverInfo.name, or
 * ""); both live until the callback returns. */
typedef void livetools_cb(void *arg, const struct json *tools, struct sl_str server);

/* Lists the tools of the server o names. Returns 0 after cb ran, or 1 with the reason printed to
 * stderr as "sluice: error: ..." (cannot start or reach it, it exited, it did not list in
 * time). */
int livetools_fetch(const struct cli_opts *o, livetools_cb *cb, void *arg);

#endif /* SL_LIVETOOLS_H */
