/* msg.h: the messages sluice writes on its own account, one writer per kind.
 *
 * Responses ({"jsonrpc":"2.0","id":...,"result"|"error":...}) are jsonrpc_write_result and
 * jsonrpc_write_error (jsonrpc.h). Here is the rest:
 *   msg_request          a request of ours to the client (our question, an upstream's relayed one)
 *   msg_notification     a notification of ours to the client (progress, cancelled)
 *   msg_cancelled        notifications/cancelled of a request of ours to the client
 *   msg_up_request       a request of ours to the upstream (upstream.c)
 *   msg_up_notification  a notification of ours to the upstream, or a client's relayed one
 *   msg_error_value      an error response carrying a peer's error object as it came
 *   msg_tool_error       a tool result with isError: true and one text block, in either era
 *   msg_question_params  the confirmation question, as elicitation/create params
 *   msg_question_result  the same question as a modern input_required result
 *   msg_verdict_result   the result a gate verdict that does not forward answers with
 * Every writer appends one complete JSON text (no newline) to out. The allowed-call passthrough
 * never comes here: it relays the peer's own message, rewritten only where the era needs it. */
#ifndef SL_MSG_H
#define SL_MSG_H

#include "gate.h"
#include "json.h"

/* {"jsonrpc":"2.0","id":"<id>","method":"<method>","params":<params_json>}; id is one of our
 * own (a plain string); params_json SL_STR_NULL: no params member. */
void msg_request(struct sl_buf *out, const char *id, struct sl_str method,
                 struct sl_str params_json);
/* {"jsonrpc":"2.0","method":"<method>","params":<params_json>} */
void msg_notification(struct sl_buf *out, const char *method, struct sl_str params_json);
/* msg_notification of notifications/cancelled {"requestId":"<id>","reason":"<reason>"}: the
 * client may stop answering our request id (2025 lets either side cancel its own request). */
void msg_cancelled(struct sl_buf *out, const char *id, const char *reason);
/* The same two towards the upstream, where our ids are numbers and params a tree (upstream.c):
 * {"jsonrpc":"2.0","id":<id_num>,"method":"<method>","params":<params>}, id_num our request
 * number in decimal; params NULL: no params member. */
void msg_up_request(struct sl_buf *out, const char *id_num, struct sl_str method,
                    const struct json *params);
/* {"jsonrpc":"2.0","method":"<method>","params":<params>} */
void msg_up_notification(struct sl_buf *out, struct sl_str method, const struct json *params);
/* {"jsonrpc":"2.0","id":<id_json>,"error":<error>}: a peer's error passed on as it is
 * (json_write_relay). */
void msg_error_value(struct sl_buf *out, struct sl_str id_json, const struct json *error);

/* {"isError":true,"content":[{"type":"text","text":"<text>"}]}, with "resultType":"complete"
 * first for a modern client (modern). */
void msg_tool_error(struct sl_buf *out, bool modern, struct sl_str text);

/* The confirmation form around message: {"mode":"form","message":...,"requestedSchema":...},
 * the message in a Markdown fenced code block ("```\n" message "\n```", the fence longer than any
 * run of backticks in message). mode_field false leaves out "mode" (2025-06-18 has none). */
void msg_question_params(struct sl_buf *out, struct sl_str message, bool mode_field);
/* {"resultType":"input_required","inputRequests":{"sluice.confirm":{"method":
 * "elicitation/create","params":<question>}},"requestState":"<state>"} */
void msg_question_result(struct sl_buf *out, struct sl_str message, struct sl_str state);

/* The result for a verdict that answers without forwarding (GATE_ASK or GATE_REFUSE), as a
 * client of that era reads it: a question, or a tool error (with the one-time token in _meta
 * when one was issued). A question is always a modern result: a legacy client is
 * asked with a request of ours instead (msg_question_params). */
void msg_verdict_result(struct sl_buf *out, const struct gate_verdict *v, bool modern);
/* A response kept by the store (the first run's, as its client got it) again, under id (JSON
 * text), its result's _meta marked "dev.sluice/replayed": true. 0, or -1 when kept is not a
 * response. */
#define MSG_REPLAYED_META "dev.sluice/replayed"
int msg_replayed(struct sl_buf *out, struct sl_str id_json, struct sl_str kept);

#endif /* SL_MSG_H */
