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

/* Appends the confirmation message for calling tool with args (an object, or NULL for none) to out.
 * server names the upstream (may be empty). The output is valid UTF-8, at most CONFIRM_MAX_TEXT
 * bytes, and contains no raw control, bidi or invisible characters except '\n' between lines. */
void confirm_render(struct sl_buf *out, struct sl_str tool, const struct json *args,
                    struct sl_str server);

/* Appends s to out neutralized as described above and truncated at max bytes (0 = no limit) with
 * the marker "…[+N bytes]". Exposed for templates and logs. */
void confirm_neutralize(struct sl_buf *out, struct sl_str s, size_t max);

#endif /* SL_CONFIRM_H */
