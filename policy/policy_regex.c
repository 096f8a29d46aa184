/* policy_regex.c: an upper bound on the copies glibc's regcomp would make of a policy regex
 * (why: policy_regex.h). It follows glibc's reading of ERE: a bracket expression is one atom, a
 * group is an atom whose copies are its contents' plus one, and a repeat multiplies the atom
 * before it by its largest count. It also finds the back-references glibc accepts in ERE. */
#include "policy_regex.h"

/* Counts saturate here: past the limit, how far past does not matter. */
#define RX_OVER (POLICY_REGEX_MAX_COPIES + 1u)

static size_t rx_add(size_t a, size_t b)
{
    return a >= RX_OVER || b >= RX_OVER || a + b >= RX_OVER ? RX_OVER : a + b;
}

static size_t rx_mul(size_t a, size_t b)
{
    return b != 0 && a > RX_OVER / b ? RX_OVER : (a * b > RX_OVER ? RX_OVER : a * b);
}

/* After a bracket expression's '[' (at p): past its closing ']', or end when it has none. */
static const char *rx_bracket(const char *p, const char *end)
{
    p++;
    if (p < end && *p == '^')
        p++;
    if (p < end && *p == ']')
        p++; /* a leading ']' is a member */
    while (p < end && *p != ']') {
        if (*p == '[' && end - p >= 2 && (p[1] == ':' || p[1] == '=' || p[1] == '.')) {
            char k = p[1];
            for (p += 2; end - p >= 2 && !(p[0] == k && p[1] == ']'); p++)
                ;
            p = end - p >= 2 ? p + 2 : end;
        } else {
            p++;
        }
    }
    return p < end ? p + 1 : end;
}

/* An interval's largest count at p ('{'), and p past its '}'; 0 when it is not one. */
static size_t rx_interval(const char **pp, const char *end)
{
    const char *p = *pp + 1;
    size_t m = 0, n = 0;
    bool comma = false, digits = false, ndigits = false;
    for (; p < end && *p >= '0' && *p <= '9'; p++, digits = true)
        m = m < RX_OVER ? m * 10 + (size_t)(*p - '0') : RX_OVER;
    if (p < end && *p == ',') {
        comma = true;
        for (p++; p < end && *p >= '0' && *p <= '9'; p++, ndigits = true)
            n = n < RX_OVER ? n * 10 + (size_t)(*p - '0') : RX_OVER;
    }
    if ((!digits && !comma) || p >= end || *p != '}')
        return 0; /* glibc reads "{,n}" as "{0,n}" and "{,}" as "{0,}" */
    *pp = p + 1;
    size_t most = !comma ? m : ndigits ? n : rx_add(m, 1);
    return most ? most : 1;
}

/* The copies an alternation makes, up to the ')' that closes the group it is in (depth > 0) or
 * the end. */
static size_t rx_copies(const char **pp, const char *end, unsigned depth)
{
    const char *p = *pp;
    size_t total = 0, atom = 0;
    while (p < end && total < RX_OVER) {
        size_t count = 0;
        if (*p == ')' && depth > 0)
            break;
        if (*p == '*' || *p == '?')
            count = 1, p++;
        else if (*p == '+')
            count = 2, p++;
        else if (*p == '{')
            count = rx_interval(&p, end);
        if (count) {
            atom = rx_mul(atom, count);
            continue;
        }
        total = rx_add(total, atom);
        if (*p == '(') {
            p++;
            atom = rx_add(rx_copies(&p, end, depth + 1), 1);
            if (p < end)
                p++; /* its ')' */
        } else if (*p == '[') {
            p = rx_bracket(p, end), atom = 1;
        } else {
            p += *p == '\\' && end - p >= 2 ? 2 : 1, atom = 1; /* '|', '{' as a literal, ... */
        }
    }
    *pp = p;
    return rx_add(total, atom);
}

bool policy_regex_too_large(const char *src, size_t len)
{
    const char *p = src;
    return rx_copies(&p, src + len, 0) > POLICY_REGEX_MAX_COPIES;
}

size_t policy_regex_backref(const char *src, size_t len)
{
    const char *p = src, *end = src + len;

    while (p < end) {
        if (*p == '[')
            p = rx_bracket(p, end);
        else if (*p == '\\' && end - p >= 2 && p[1] >= '1' && p[1] <= '9')
            return (size_t)(p - src);
        else
            p += *p == '\\' && end - p >= 2 ? 2 : 1; /* so "\\1" is no back-reference */
    }
    return len;
}
