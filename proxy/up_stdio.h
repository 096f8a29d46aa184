/* up_stdio.h: the transport to an upstream run as a child process on pipes, one JSON-RPC message
 * per line (PROTOCOL.md §5.1). It knows processes, not MCP: upstream.c above it keeps ids, eras
 * and the handshake.
 *
 * Lifetime: the child runs in its own process group with PR_SET_PDEATHSIG, so it dies with
 * sluice even when sluice is killed with SIGKILL. Stopping closes its stdin, then sends SIGTERM
 * and SIGKILL to the group on a short schedule. When the child's output ends, on_closed runs;
 * once it is also reaped, on_exit runs with how it ended. Its environment is sluice's without any
 * SLUICE_* variable (those hold sluice's secrets). With JSON logs its stderr is read and logged
 * as JSON lines; otherwise it is sluice's own stderr. */
#ifndef SL_UP_STDIO_H
#define SL_UP_STDIO_H

#include <event2/event.h>

#include "up_transport.h"

/* Spawns argv (NULL-terminated) or, with argv == NULL, the built-in demo server in a forked
 * child. Returns NULL with a message in err on failure. */
struct up_transport *up_stdio_spawn(struct event_base *base, char *const argv[],
                                    const struct up_transport_cbs *cbs, void *arg, char *err,
                                    size_t errlen);

#endif /* SL_UP_STDIO_H */
