/* ere.h: sluice's own POSIX ERE matcher for the policy's regex rule: does a regex match a
 * whole value? Bytes, C locale, no back-references.
 *
 * Why not glibc's regexec: its matcher builds a DFA state for almost every byte on some regexes
 * an operator may well write ("[a-z0-9_-]+-[a-z0-9_-]{20}"), so time is quadratic in the value
 * and memory grows with it: a 100 KB value an agent chose held the event loop for 11.7 s. And
 * it accepts back-references, on which it backtracks. This is a Thompson NFA simulation: each
 * byte of the value costs at most one visit of each instruction of the compiled program, so a
 * match is O(program × value) in time and O(program) in memory, whatever the value holds.
 *
 * The syntax is POSIX ERE read as glibc's regcomp(REG_EXTENDED) reads it in the C locale (the
 * rule's documented meaning; tests/unit/test_ere.c checks the two agree on random patterns and
 * values), less what sluice refuses at load:
 * - back-references (\1 to \9) and GNU's operators (\w \W \s \S \b \B \< \> \` \'), and any
 *   other backslash before a letter or digit ("\d" is a literal 'd' to glibc, which is never
 *   what its author meant);
 * - a repeat after an anchor or with nothing before it, and a malformed interval;
 * - a program of more than ERE_MAX_PROGRAM instructions (repeat counts multiply through nested
 *   groups: "((a{8}){8}){32}" is 2,048 copies of 'a'), a source over ERE_MAX_SOURCE bytes, and
 *   groups nested more than 256 deep (the parser recurses per group).
 * A lone ')' is a literal, as glibc reads it; so are a lone ']' and '}'.
 *
 * Pure: no I/O, no globals, no locale; a compiled regex is immutable and may be shared. */
#ifndef SL_ERE_H
#define SL_ERE_H

#include <stdbool.h>
#include <stddef.h>

#define ERE_MAX_PROGRAM 2000u /* instructions of one compiled regex */
#define ERE_MAX_SOURCE  4096u /* bytes of a regex (which bounds the parser's recursion) */

struct ere;

struct ere_error {
    size_t at;      /* byte offset in the source where it went wrong */
    char msg[160];  /* what, for a person: "unmatched '('" */
};

/* Compiles src[0..len) (NUL bytes are refused). NULL when sluice does not take it (*err says
 * why) or out of memory (err->msg "out of memory"). */
struct ere *ere_compile(const char *src, size_t len, struct ere_error *err);
void ere_free(struct ere *re);

/* Instructions in the compiled program: a match visits at most this many per byte. */
size_t ere_size(const struct ere *re);

enum ere_result {
    ERE_NOMATCH = 0,
    ERE_MATCH = 1,
    ERE_OVER_BUDGET = 2, /* *budget ran out first: neither answer is known */
    ERE_NOMEM = 3,
};

/* Whether re matches all of s[0..len) (NUL bytes are ordinary bytes here). Each instruction
 * visit costs one step, taken from *budget; the match stops when it runs out. */
enum ere_result ere_match(const struct ere *re, const char *s, size_t len, size_t *budget);

#endif /* SL_ERE_H */
