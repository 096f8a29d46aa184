/* json.h: the parsed JSON value tree every module reads, and the compact writer.
 *
 * Values are produced by jsonrpc_parse() (from untrusted bytes, with limits, duplicate-key and
 * UTF-8 checks) or built by code with the json_new_* helpers. Every value lives in an sl_arena and
 * dies with it; nothing here frees anything.
 *
 * Guarantees of a parsed tree: strings and keys are valid UTF-8 (they may contain U+0000, which is
 * why they are slices), no object has two equal keys, numbers keep the exact text they were sent
 * with (u.num), so ids and big integers round-trip byte for byte. A parsed number's text is a
 * slice of the message, with no NUL after it: read it by its length. */
#ifndef SL_JSON_H
#define SL_JSON_H

#include "base.h"

enum json_type {
    JSON_NULL,
    JSON_BOOL,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT,
};

struct json;

struct json_member {
    struct sl_str key;  /* decoded UTF-8 */
    struct json *val;
};

struct json {
    enum json_type type;
    /* The writer's shortcuts, set by the reader and json_verbatim only (json_priv.h says what
     * they buy and assume). Code that builds a node leaves them false; the builders and
     * editors here keep them true only while they hold. plain: a JSON_STRING none of whose
     * bytes needs an escape. raw: a value whose text (json_priv.h) json_write copies as it is.
     * esc (only with raw): that text holds string escapes as they were sent, so it is not the
     * form json_write gives: json_write walks it, json_write_relay still copies it. */
    bool plain;
    bool raw;
    bool esc;
    /* JSON_OBJECT and JSON_ARRAY: when not 0, the member (or item) array was allocated by this
     * module's builders with room for 1 << cap_log2 entries, so an append writes in place; 0:
     * it holds exactly n (the reader's, a copy's), and an append moves it into a larger one.
     * Growing by doubling keeps building an object or array of n entries O(n) in time and
     * arena memory. Code that points u.obj.v or u.arr.v elsewhere must set this to 0. */
    uint8_t cap_log2;
    union {
        bool b;                                          /* JSON_BOOL */
        struct sl_str num;                               /* JSON_NUMBER: literal text */
        struct sl_str str;                               /* JSON_STRING: decoded UTF-8 */
        struct { struct json **v; size_t n; } arr;       /* JSON_ARRAY */
        struct { struct json_member *v; size_t n; } obj; /* JSON_OBJECT, in received order */
    } u;
};

/* ===== reading ===== */

/* Member key[0..len) of an object, or NULL if v is not an object or has no such member. */
struct json *json_get_n(const struct json *v, const char *key, size_t len);
/* Member `key` of an object, or NULL if v is not an object or has no such member. (Inline so
 * that a literal key's length is known at compile time.) */
static inline struct json *json_get(const struct json *v, const char *key)
{
    return json_get_n(v, key, strlen(key));
}
/* True iff v is a string equal to cstr. */
static inline bool json_str_is(const struct json *v, const char *cstr)
{
    return v != NULL && v->type == JSON_STRING && sl_str_eq_c(v->u.str, cstr);
}
/* True iff v is the JSON literal true (not "true", not 1). */
bool json_is_true(const struct json *v);

/* ===== building (all memory from the arena) ===== */

struct json *json_new_null(struct sl_arena *a);
struct json *json_new_bool(struct sl_arena *a, bool b);
struct json *json_new_number(struct sl_arena *a, const char *text); /* text must be valid JSON */
struct json *json_new_string(struct sl_arena *a, const char *p, size_t len); /* copies */
struct json *json_new_object(struct sl_arena *a);
struct json *json_new_array(struct sl_arena *a);
/* Sets key to val in object o: replaces an existing member with that key, else appends.
 * The key is copied. (The C-string forms are inline, like json_get, so that a literal key's
 * length is known at compile time.) */
void json_set_key(struct sl_arena *a, struct json *o, struct sl_str key, struct json *val);
/* Appends key: val to object o without looking for key: for a caller that knows o has no member
 * key, such as one copying members of a parsed object (whose keys are distinct). Amortized O(1),
 * where json_set_key is O(members): a loop of json_set_key over n members is n², this is n.
 * The key is copied. */
void json_append_key(struct sl_arena *a, struct json *o, struct sl_str key, struct json *val);
static inline void json_set(struct sl_arena *a, struct json *o, const char *key, struct json *val)
{
    json_set_key(a, o, sl_str_c(key), val);
}
/* Removes member key from object o, if present. Returns true if it was there. */
bool json_del_key(struct json *o, struct sl_str key);
static inline bool json_del(struct json *o, const char *key)
{
    return json_del_key(o, sl_str_c(key));
}
/* Appends val to array arr: amortized O(1). */
void json_push(struct sl_arena *a, struct json *arr, struct json *val);
/* Shallow copy of an object (new member array, same values), so it can be edited without
 * touching the original. */
struct json *json_copy_object(struct sl_arena *a, const struct json *o);
/* v as it reads, written as text byte for byte: for bytes that must leave exactly as they were
 * hashed and shown (an approved call's canonical arguments, session_call.c), without parsing
 * them again. A shallow copy of v (NULL: an empty object) whose readers see v's members, items
 * or value; text (copied into a) must be JSON text of that same value, not empty, with no NUL
 * byte (the raw writer turns NULs into quotes). An edit of the copy drops the text (as for any
 * raw container); an edit inside v's children does not reach it: make none. */
struct json *json_verbatim(struct sl_arena *a, const struct json *v, struct sl_str text);

/* ===== writing ===== */

/* Appends compact JSON: no whitespace, numbers as their literal text, strings escaped as
 * JSON.stringify does (", \, and control characters; everything else literal UTF-8). The output
 * never contains a raw newline, so it is one stdio frame. */
void json_write(struct sl_buf *out, const struct json *v);
/* An upper bound of the bytes json_write would give, found without writing (every string byte
 * counted as an escape). */
size_t json_write_bound(const struct json *v);
/* json_write for a value relayed as it came (a peer's result or error passed on): the same
 * value, but a parsed container is copied from its text even when its strings had escapes,
 * which are kept as sent (\u0041 stays \u0041) instead of decoded and written again. The
 * reader checked every escape (valid, no lone surrogate), so a peer decodes exactly the value
 * sluice checked. Still one line: the text has no whitespace, raw newlines included. */
void json_write_relay(struct sl_buf *out, const struct json *v);
/* p[0..len) as a JSON string with minimal escapes: '"', '\\', \b \f \n \r \t, the other C0
 * controls as \u00xx in lowercase hex, every other byte as it is (not checked as UTF-8). That is
 * JSON.stringify's form, which canon.c's canonical text (RFC 8785) relies on. */
void json_write_string(struct sl_buf *out, const char *p, size_t len);

#endif /* SL_JSON_H */
