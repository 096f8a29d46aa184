/* log.h: one line per event on stderr: "sluice: <level>: <message>", or a JSON object. stdout
 * belongs to the MCP client when sluice serves stdio, so nothing else may ever write there. */
#ifndef SL_LOG_H
#define SL_LOG_H

enum sl_log_level { SL_LOG_DEBUG, SL_LOG_INFO, SL_LOG_WARN, SL_LOG_ERROR };

#include <stdbool.h>
#include <stddef.h>

void sl_log_set_level(enum sl_log_level min);
/* One JSON object per line instead: {"ts":...,"level":...,"msg":...} (--log-format json). */
void sl_log_set_json(bool on);
bool sl_log_enabled(enum sl_log_level level);
bool sl_log_json(void);
/* One line the upstream child wrote on its stderr, as a JSON log line with "source":"upstream"
 * (at any --log-level, as its text passes through in text mode). Invalid UTF-8 becomes '?';
 * a long line is split. */
void sl_log_child(const char *line, size_t len);
/* The request being handled (HTTP), added to JSON lines as "request_id"; NULL clears it. The id
 * is sluice's own (hex and digits), never text from the client. */
void sl_log_set_request(const char *rid);
void sl_log(enum sl_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same line at level's name, whatever --log-level: for lines that must not be dropped (the
 * journal's anchors, which verify reads from the log as "info" lines). */
void sl_log_always(enum sl_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define sl_debug(...) sl_log(SL_LOG_DEBUG, __VA_ARGS__)
#define sl_info(...)  sl_log(SL_LOG_INFO, __VA_ARGS__)
#define sl_warn(...)  sl_log(SL_LOG_WARN, __VA_ARGS__)
#define sl_error(...) sl_log(SL_LOG_ERROR, __VA_ARGS__)

#endif /* SL_LOG_H */
