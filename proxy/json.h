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

#include <endian.h>

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
    /* JSON_STRING from the reader, which had no escape in it: then none of its bytes needs
     * one (the grammar refuses raw '"', '\\' and control characters), and the writer copies
     * it without looking. Only the reader sets it. A string is never changed in place; if one
     * ever is, this must be cleared. */
    bool plain;
    /* JSON_OBJECT and JSON_ARRAY from the reader, whose text had no whitespace and no escape:
     * then that text is exactly what json_write would give, and json_text_of(v) holds it. The
     * writer copies it instead of walking the subtree. Only the reader sets it; every edit
     * (json_set_key, json_append_key, json_del_key, json_push) clears it on the edited
     * container and on each enclosing one, so a stale text is never written. Also any value
     * from json_verbatim, whose text is the caller's. */
    bool raw;
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

/* A raw container's text, kept by the reader just before its member (or item) array. The text is
 * a slice of the arena's copy of the message, in which the closing quote of every string is a
 * NUL (see jsonrpc.c): the writer puts the quotes back. parent: the enclosing container, or
 * NULL for the root. A raw value that is not a container (json_verbatim only) keeps its text
 * just before the value itself. */
struct json_text {
    const char *p;
    size_t len;
    struct json *parent;
};

static inline struct json_text *json_text_of(const struct json *v)
{
    if (v->type == JSON_OBJECT)
        return (struct json_text *)(void *)v->u.obj.v - 1;
    if (v->type == JSON_ARRAY)
        return (struct json_text *)(void *)v->u.arr.v - 1;
    return (struct json_text *)(void *)v - 1;
}

/* The 8 bytes at p as a word, byte i in bits 8i..8i+7 whatever the machine's byte order. */
static inline uint64_t json_load8(const void *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return le64toh(v);
}

/* Which of the 8 bytes at p a JSON string cannot hold as they are: '"', '\\' or a byte below
 * 0x20. The word-at-a-time tests ((v - n*ones) & ~v & highs flags a byte below n) set bit 7 of
 * such a byte. A borrow can also set bits above a flagged byte, never below the first one: the
 * mask is exact for "any", and __builtin_ctzll(mask) / 8 is the index of the first. 0: none.
 * The reader and the writer skip plain text with it. */
static inline uint64_t json_special_mask8(const void *p)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    uint64_t v = json_load8(p);
    uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');
    return (((v - ones * 0x20) & ~v) | ((q - ones) & ~q) | ((b - ones) & ~b)) & highs;
}

/* json_plain[c]: byte c can stand in a JSON string as it is (not '"', '\\' or below 0x20). */
extern const bool json_plain[256];

static inline bool json_special_in8(const void *p)
{
    return json_special_mask8(p) != 0;
}

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
void json_write_string(struct sl_buf *out, const char *p, size_t len);

#endif /* SL_JSON_H */
