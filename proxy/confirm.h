/* confirm.h: the text a person reads before a gated call runs, built from the same parse that is
 * hashed and forwarded.
 *
 * The person must be able to see what will run: the tool and every argument. So every string that
 * came from the client or upstream is neutralized before it is shown: C0/C1 control characters,
 * ESC (ANSI sequences), bidi embeddings/overrides/isolates and marks, zero-width and invisible
 * format characters, line/paragraph separators are all shown as visible \uXXXX escapes; long values
 * are cut with a visible marker saying how many bytes were left out; the whole text is bounded. */
#ifndef SL_CONFIRM_H
#define SL_CONFIRM_H

#include "json.h"

#define CONFIRM_MAX_VALUE 512   /* bytes shown of one argument value before truncation */
#define CONFIRM_MAX_TEXT  4096  /* bytes of the whole message, truncation marker included */
#define CONFIRM_MAX_ARGS  64    /* arguments listed; the rest are counted */
#define CONFIRM_MAX_SENTENCE 1024 /* bytes of a rendered message template, marker included */

/* Appends the confirmation message for calling tool with args (an object, or NULL for none) to out.
 * server names the upstream (may be empty). The output is valid UTF-8, at most CONFIRM_MAX_TEXT
 * bytes, and contains no raw control, bidi or invisible characters except '\n' between lines. */
void confirm_render(struct sl_buf *out, struct sl_str tool, const struct json *args,
                    struct sl_str server);

/* Appends the operator's sentence for this call, a blank line, then exactly what confirm_render
 * appends for the same call, so a template can add clarity but never hide an argument. tmpl is a
 * policy message template (policy_tool_message; NULL or "" appends confirm_render's text alone):
 * literal text, {field} for the top-level argument field shown exactly as confirm_render shows
 * values (as JSON, neutralized, cut at CONFIRM_MAX_VALUE) or as (missing) when the call does not
 * send it, and {{ / }} for braces. The sentence is neutralized too and gets only the room the
 * listing leaves within CONFIRM_MAX_TEXT (at most CONFIRM_MAX_SENTENCE): it is cut with a
 * marker, or left out with its blank line when not even that fits. The listing is never cut for
 * it. */
void confirm_render_message(struct sl_buf *out, const char *tmpl, struct sl_str tool,
                            const struct json *args, struct sl_str server);

/* Appends s to out neutralized as described above and truncated at max bytes (0 = no limit) with
 * the marker "…[+N bytes]". Exposed for templates and logs. */
void confirm_neutralize(struct sl_buf *out, struct sl_str s, size_t max);

#endif /* SL_CONFIRM_H */
