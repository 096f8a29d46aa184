/* log.h: one line per event on stderr: "sluice: <level>: <message>". stdout belongs to the MCP
 * client when sluice serves stdio, so nothing else may ever write there. */
#ifndef SL_LOG_H
#define SL_LOG_H

enum sl_log_level { SL_LOG_DEBUG, SL_LOG_INFO, SL_LOG_WARN, SL_LOG_ERROR };

void sl_log_set_level(enum sl_log_level min);
void sl_log(enum sl_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define sl_debug(...) sl_log(SL_LOG_DEBUG, __VA_ARGS__)
#define sl_info(...)  sl_log(SL_LOG_INFO, __VA_ARGS__)
#define sl_warn(...)  sl_log(SL_LOG_WARN, __VA_ARGS__)
#define sl_error(...) sl_log(SL_LOG_ERROR, __VA_ARGS__)

#endif /* SL_LOG_H */
