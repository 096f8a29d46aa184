/* observe.h: what a gated call would change, read from the server before the person is asked.
 *
 * A tool in the policy may name a read-only tool of the same server to observe (write_file
 * observes read_text_file with the same path). sluice calls it before asking, shows a bounded
 * summary in the question, and seals the digest of the result into the state; after the accept
 * it calls it again and refuses the write when the digest differs ("changed since you
 * approved"). These are the pure parts: the observe call's arguments, the digest, the summary. */
#ifndef SL_OBSERVE_H
#define SL_OBSERVE_H

#include "json.h"
#include "policy.h"

#define OBSERVE_DIGEST_LEN   32
#define OBSERVE_SUMMARY_MAX  1200  /* bytes of summary in a question */
#define OBSERVE_DIFF_LINES   8     /* lines of diff shown */

/* The arguments of the observe call: for each mapping, argument `to` of the observe tool gets
 * the value of argument `from` of the gated call. Returns NULL (and a static reason in *why)
 * when a mapped argument is missing from the call. */
struct json *observe_args(struct sl_arena *a, const struct policy_observe *o,
                          const struct json *call_args, const char **why);

/* The digest of an observe result: SHA-256 of the RFC 8785 form of {content, structuredContent,
 * isError} (what the tool said, without _meta). Returns 0 or -1. */
int observe_digest(const struct json *result, uint8_t out[OBSERVE_DIGEST_LEN]);

/* True iff the result is a reading: a complete result object with a content array. A tool
 * error (isError: true) is one only when its text says the target is missing ("no such file"
 * before a write creates it): its digest changes when the file appears. Any other tool error,
 * like a failed call (JSON-RPC error, no answer), is no observation. */
bool observe_ok(const struct json *result);

/* Appends a bounded, neutralized summary for the person (the text's own backslashes shown as
 * "\\" and its ellipses as "\u2026", so it cannot write sluice's escapes or marks): when the
 * call writes a string argument named "content" and the observed result is text, the lines
 * removed and added and the first lines of the difference; otherwise the start of the observed
 * text. */
void observe_summary(struct sl_buf *out, const char *observe_tool, const struct json *result,
                     const struct json *call_args);

#endif /* SL_OBSERVE_H */
