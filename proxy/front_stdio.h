/* front_stdio.h: the client on our own stdin/stdout (MCP stdio, PROTOCOL.md §5.1): one session,
 * one line per message, the principal "local". */
#ifndef SL_FRONT_STDIO_H
#define SL_FRONT_STDIO_H

#include "session.h"

struct front_stdio;

/* gone runs once, when the client closes its end or cannot be written to. */
struct front_stdio *front_stdio_new(struct event_base *base, struct session_env *env, int in_fd,
                                    int out_fd, void (*gone)(void *arg), void *arg);
void front_stdio_free(struct front_stdio *f); /* NULL ok */
struct session *front_stdio_session(struct front_stdio *f);
/* Writes everything queued to the client, waiting at most timeout_ms (exit paths). */
void front_stdio_flush(struct front_stdio *f, int timeout_ms);

#endif /* SL_FRONT_STDIO_H */
