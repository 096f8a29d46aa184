/* demo.h: sluice's built-in demo upstream, used when sluice is started with no upstream command.
 *
 * A tiny legacy MCP server (2025-11-25; also 2025-06-18 and 2025-03-26) over
 * newline-delimited JSON-RPC, holding a small in-memory file store behind four tools:
 * list_directory, read_text_file, write_file, delete_file. It starts with one file, /notes.txt.
 * Nothing is ever touched on disk. */
#ifndef SL_DEMO_H
#define SL_DEMO_H

/* Serves one client on in_fd/out_fd with blocking read(2)/write(2) until EOF on in_fd. Writes
 * nothing but JSON-RPC lines to out_fd; diagnostics go to stderr, prefixed "demo: ". Returns 0 at
 * EOF, -1 on a read or write error. A write to a closed pipe raises SIGPIPE: callers that run it
 * in-process should ignore that signal. The fds are not closed. */
int demo_upstream_run(int in_fd, int out_fd);

#endif /* SL_DEMO_H */
