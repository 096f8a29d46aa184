/* ere.c: POSIX ERE, parsed to a tree, sized, compiled to a Thompson program, matched by a
 * simulation that keeps a set of threads (why and what is taken: ere.h).
 *
 * The program's instructions: SET (consume one byte in a 256-bit set), SPLIT (go on at x and
 * at y), JMP, BOL and EOL (go on only at the start or end of the value), MATCH. A match moves
 * the whole set of threads one byte at a time; a thread that reaches an instruction already in
 * the set is dropped, which is what bounds the work per byte by the program's size. */
#include "ere.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ===== the tree ===== */

enum node_kind { N_EMPTY, N_SET, N_BOL, N_EOL, N_CAT, N_ALT, N_REPEAT };

#define REPEAT_INF UINT32_MAX
#define MAX_DEPTH  256 /* nested groups; a 1 KiB pattern has fewer */

struct node {
    enum node_kind kind;
    uint32_t a, b;        /* children (CAT, ALT; REPEAT uses a) */
    uint32_t min, max;    /* REPEAT */
    uint32_t set;         /* SET: index into sets */
    size_t size;          /* instructions it compiles to, saturated at ERE_MAX_PROGRAM + 1 */
    bool anchored;        /* holds a '^' or '$' */
};

struct byteset {
    uint64_t w[4];
};

struct parser {
    const char *p, *start, *end;
    struct node *nodes;
    size_t n_nodes, cap_nodes;
    struct byteset *sets;
    size_t n_sets, cap_sets;
    struct ere_error *err;
    unsigned depth;
    bool failed;
};

#define OVER (ERE_MAX_PROGRAM + 1u)

static size_t sat_add(size_t a, size_t b)
{
    return a + b >= OVER ? OVER : a + b;
}

static size_t sat_mul(size_t a, size_t b)
{
    return b != 0 && a > OVER / b ? OVER : (a * b >= OVER ? OVER : a * b);
}

static uint32_t fail_at(struct parser *ps, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records the first failure (at, in the source) and returns a node index nobody reads. */
static uint32_t fail_at(struct parser *ps, const char *at, const char *fmt, ...)
{
    if (!ps->failed) {
        va_list ap;
        ps->failed = true;
        ps->err->at = (size_t)(at - ps->start);
        va_start(ap, fmt);
        vsnprintf(ps->err->msg, sizeof(ps->err->msg), fmt, ap);
        va_end(ap);
    }
    return 0;
}

static bool grow(void **v, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 16;
    void *nv = realloc(*v, c * elem);
    if (nv == NULL)
        return false;
    *v = nv;
    *cap = c;
    return true;
}

static uint32_t new_node(struct parser *ps, struct node n)
{
    if (ps->failed)
        return 0;
    if (!grow((void **)&ps->nodes, &ps->cap_nodes, ps->n_nodes, sizeof(*ps->nodes)))
        return fail_at(ps, ps->p, "%s", "out of memory");
    ps->nodes[ps->n_nodes] = n;
    return (uint32_t)ps->n_nodes++;
}

static size_t node_size(const struct parser *ps, uint32_t i)
{
    return ps->nodes[i].size;
}

static bool node_anchored(const struct parser *ps, uint32_t i)
{
    return ps->nodes[i].anchored;
}

static uint32_t leaf(struct parser *ps, enum node_kind k, uint32_t set)
{
    return new_node(ps, (struct node){ .kind = k, .set = set, .size = k == N_EMPTY ? 0 : 1,
                                       .anchored = k == N_BOL || k == N_EOL });
}

static uint32_t cat(struct parser *ps, uint32_t a, uint32_t b)
{
    if (ps->failed)
        return 0;
    size_t s = sat_add(node_size(ps, a), node_size(ps, b));
    return new_node(ps, (struct node){ .kind = N_CAT, .a = a, .b = b, .size = s,
                                       .anchored = node_anchored(ps, a) || node_anchored(ps, b) });
}

/* SPLIT, a, JMP, b */
static uint32_t alt(struct parser *ps, uint32_t a, uint32_t b)
{
    if (ps->failed)
        return 0;
    size_t s = sat_add(sat_add(node_size(ps, a), node_size(ps, b)), 2);
    return new_node(ps, (struct node){ .kind = N_ALT, .a = a, .b = b, .size = s,
                                       .anchored = node_anchored(ps, a) || node_anchored(ps, b) });
}

/* e{m,n}: m copies of e, then n - m of "SPLIT, e"; e{m,}: m copies with the last one looped
 * back by a SPLIT (e{0,}: SPLIT, e, JMP). */
static size_t repeat_size(size_t e, uint32_t min, uint32_t max)
{
    if (max == REPEAT_INF)
        return min == 0 ? sat_add(e, 2) : sat_add(sat_mul(e, min), 1);
    return sat_add(sat_mul(e, min), sat_mul(sat_add(e, 1), max - min));
}

/* An anchor inside a repeat is refused: "(^a|b)+" can only mean what it says once, and glibc
 * reads it otherwise (it matches "aab"), so the rule's meaning would depend on the engine. */
static uint32_t repeat(struct parser *ps, const char *at, uint32_t e, uint32_t min, uint32_t max)
{
    if (ps->failed)
        return 0;
    if (node_anchored(ps, e))
        return fail_at(ps, at, "%s", "a repeat of a group that holds an anchor ('^' or '$')");
    if (node_size(ps, e) == 0) /* "(){9999}" and "((){9999}){9999}" are "()": no copies */
        return e;
    size_t s = repeat_size(node_size(ps, e), min, max);
    return new_node(ps, (struct node){ .kind = N_REPEAT, .a = e, .min = min, .max = max,
                                       .size = s });
}

static uint32_t new_set(struct parser *ps, const struct byteset *s)
{
    if (!grow((void **)&ps->sets, &ps->cap_sets, ps->n_sets, sizeof(*ps->sets))) {
        fail_at(ps, ps->p, "%s", "out of memory");
        return 0;
    }
    ps->sets[ps->n_sets] = *s;
    return (uint32_t)ps->n_sets++;
}

static void set_add(struct byteset *s, unsigned c)
{
    s->w[c >> 6] |= (uint64_t)1 << (c & 63);
}

static bool set_has(const struct byteset *s, unsigned char c)
{
    return (s->w[c >> 6] >> (c & 63)) & 1;
}

static uint32_t byte_leaf(struct parser *ps, unsigned char c)
{
    struct byteset s = { { 0 } };
    set_add(&s, c);
    return ps->failed ? 0 : leaf(ps, N_SET, new_set(ps, &s));
}

/* ===== bracket expressions ===== */

static const struct {
    const char *name;
    int (*is)(int);
} classes[] = {
    { "alpha", isalpha }, { "upper", isupper }, { "lower", islower }, { "digit", isdigit },
    { "xdigit", isxdigit }, { "alnum", isalnum }, { "space", isspace }, { "blank", isblank },
    { "punct", ispunct }, { "print", isprint }, { "graph", isgraph }, { "cntrl", iscntrl },
};

/* The C locale's classes, by the bytes' ASCII meaning whatever locale the process is in. */
static bool add_class(struct byteset *s, const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
        if (strlen(classes[i].name) == len && memcmp(classes[i].name, name, len) == 0) {
            for (unsigned c = 0; c < 128; c++)
                if (classes[i].is((int)c))
                    set_add(s, c);
            return true;
        }
    }
    return false;
}

/* One element of a bracket expression at ps->p: a byte, or "[.c.]" / "[=c=]" (one byte in the
 * C locale), or "[:class:]" (added to s). Returns the byte, or -1 after a failure; *whole is
 * set for a class or an equivalence class, which cannot end a range (glibc refuses them). */
static int bracket_elem(struct parser *ps, struct byteset *s, bool *whole)
{
    const char *at = ps->p;
    *whole = false;
    if (ps->end - ps->p >= 2 && ps->p[0] == '[' &&
        (ps->p[1] == '.' || ps->p[1] == '=' || ps->p[1] == ':')) {
        char k = ps->p[1];
        const char *name = ps->p + 2, *q = name;
        while (ps->end - q >= 2 && !(q[0] == k && q[1] == ']'))
            q++;
        if (ps->end - q < 2)
            return fail_at(ps, at, "an unclosed \"[%s\" in a bracket expression",
                           k == '.' ? "." : k == '=' ? "=" : ":"), -1;
        ps->p = q + 2;
        *whole = k != '.';
        if (k == ':') {
            if (!add_class(s, name, (size_t)(q - name)))
                return fail_at(ps, at, "%s", "an unknown character class (the C locale has "
                               "alpha upper lower digit xdigit alnum space blank punct print "
                               "graph cntrl)"), -1;
            return 0;
        }
        if (q - name != 1)
            return fail_at(ps, at, "%s", "a collating element or equivalence class of more "
                           "than one byte (the C locale has none)"), -1;
        return (unsigned char)name[0];
    }
    return (unsigned char)*ps->p++;
}

/* After '[': the members up to the closing ']'. */
static uint32_t bracket(struct parser *ps)
{
    const char *open = ps->p - 1;
    struct byteset s = { { 0 } };
    bool negate = false, first = true;

    if (ps->p < ps->end && *ps->p == '^')
        negate = true, ps->p++;
    while (!ps->failed) {
        if (ps->p >= ps->end)
            return fail_at(ps, open, "%s", "an unclosed bracket expression '['");
        if (*ps->p == ']' && !first)
            break;
        first = false;
        const char *at = ps->p;
        bool whole;
        int lo = bracket_elem(ps, &s, &whole);
        if (lo < 0)
            continue;
        if (whole) {
            if (ps->end - ps->p >= 2 && ps->p[0] == '-' && ps->p[1] != ']')
                return fail_at(ps, at, "%s", "a range that starts with a class ([:c:] or [=c=])");
            if (at[1] == '=') /* "[=c=]" is c; a class has added its members */
                set_add(&s, (unsigned)lo);
            continue;
        }
        if (ps->end - ps->p >= 2 && ps->p[0] == '-' && ps->p[1] != ']') {
            ps->p++;
            int hi = bracket_elem(ps, &s, &whole);
            if (hi < 0)
                return 0;
            if (whole)
                return fail_at(ps, at, "%s", "a range that ends with a class ([:c:] or [=c=])");
            if (hi < lo)
                return fail_at(ps, at, "%s", "a range whose end is before its start");
            for (int c = lo; c <= hi; c++)
                set_add(&s, (unsigned)c);
            if (ps->end - ps->p >= 2 && ps->p[0] == '-' && ps->p[1] != ']')
                return fail_at(ps, ps->p, "%s", "a '-' right after a range (write it first "
                               "or last in the brackets)");
        } else {
            set_add(&s, (unsigned)lo);
        }
    }
    if (ps->failed) /* p may be at the end: no ']' to step over */
        return 0;
    ps->p++; /* the ']' */
    if (negate)
        for (int i = 0; i < 4; i++)
            s.w[i] = ~s.w[i];
    return leaf(ps, N_SET, new_set(ps, &s));
}

/* ===== atoms, pieces, branches ===== */

static uint32_t alternation(struct parser *ps);

/* After '\': one escaped byte, or a refusal of what glibc would read as an operator. */
static uint32_t escape(struct parser *ps)
{
    const char *at = ps->p - 1;
    if (ps->p >= ps->end)
        return fail_at(ps, at, "%s", "a trailing backslash");
    unsigned char c = (unsigned char)*ps->p;
    char one[2] = { (char)c, '\0' };
    if (c >= '1' && c <= '9')
        return fail_at(ps, at, "a back-reference (\\%s), which no matcher takes in linear "
                       "time; write the regex without \\1 to \\9", one);
    if (strchr("wWsSbB<>`'", c) != NULL)
        return fail_at(ps, at, "\\%s, a GNU operator that is not POSIX ERE (write a bracket "
                       "expression such as [[:alnum:]_] instead)", one);
    if (c < 0x80 && isalnum(c)) /* ASCII's letters and digits, whatever the locale */
        return fail_at(ps, at, "\\%s, which POSIX ERE reads as the letter or digit itself (for "
                       "a class write a bracket expression such as [0-9])", one);
    ps->p++;
    return byte_leaf(ps, c);
}

static uint32_t atom(struct parser *ps)
{
    const char *at = ps->p;
    unsigned char c = (unsigned char)*ps->p++;
    switch (c) {
    case '(': {
        if (++ps->depth > MAX_DEPTH)
            return fail_at(ps, at, "%s", "groups nested too deep");
        uint32_t inner = alternation(ps);
        ps->depth--;
        if (ps->failed)
            return 0;
        if (ps->p >= ps->end || *ps->p != ')')
            return fail_at(ps, at, "%s", "an unmatched '('");
        ps->p++;
        return inner;
    }
    case '[':
        return bracket(ps);
    case '.': {
        struct byteset s = { { ~0ull, ~0ull, ~0ull, ~0ull } };
        return leaf(ps, N_SET, new_set(ps, &s));
    }
    case '^':
        return leaf(ps, N_BOL, 0);
    case '$':
        return leaf(ps, N_EOL, 0);
    case '\\':
        return escape(ps);
    case '*':
    case '+':
    case '?':
    case '{':
        return fail_at(ps, at, "a repeat '%s' with nothing before it to repeat",
                       c == '*' ? "*" : c == '+' ? "+" : c == '?' ? "?" : "{");
    default:
        return byte_leaf(ps, c);
    }
}

static bool read_count(struct parser *ps, uint32_t *n)
{
    bool any = false;
    uint64_t v = 0;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        v = v * 10 + (uint64_t)(*ps->p++ - '0');
        if (v > 0x7fff)
            v = 0x8000; /* past glibc's RE_DUP_MAX: refused below */
        any = true;
    }
    *n = (uint32_t)v;
    return any;
}

/* After '{': "m}", "m,}", "m,n}" or ",n}" (glibc reads "{,n}" as "{0,n}"). */
static bool interval(struct parser *ps, uint32_t *min, uint32_t *max)
{
    const char *at = ps->p - 1;
    bool has_min = read_count(ps, min), comma = false;
    *max = *min;
    if (ps->p < ps->end && *ps->p == ',') {
        ps->p++;
        comma = true;
        if (!read_count(ps, max))
            *max = REPEAT_INF;
    }
    if ((!has_min && !comma) || ps->p >= ps->end || *ps->p != '}')
        return fail_at(ps, at, "%s", "a malformed interval (write {m}, {m,}, {m,n} or {,n})"),
               false;
    ps->p++;
    if (*min > 0x7fff || (*max != REPEAT_INF && *max > 0x7fff))
        return fail_at(ps, at, "%s", "an interval count over 32767"), false;
    if (*max < *min)
        return fail_at(ps, at, "%s", "an interval whose maximum is below its minimum"), false;
    return true;
}

/* An atom and the repeats after it ("a*+{2}" repeats each time what came before). */
static uint32_t piece(struct parser *ps)
{
    bool anchor = *ps->p == '^' || *ps->p == '$';
    uint32_t e = atom(ps);
    while (!ps->failed && ps->p < ps->end && strchr("*+?{", *ps->p) != NULL) {
        const char *at = ps->p;
        uint32_t min = 0, max = REPEAT_INF;
        char op = *ps->p++;
        if (anchor)
            return fail_at(ps, at, "%s", "a repeat after an anchor ('^' or '$')");
        if (op == '+')
            min = 1;
        else if (op == '?')
            max = 1;
        else if (op == '{' && !interval(ps, &min, &max))
            return 0;
        e = repeat(ps, at, e, min, max);
    }
    return e;
}

static uint32_t branch(struct parser *ps)
{
    uint32_t b = leaf(ps, N_EMPTY, 0);
    while (!ps->failed && ps->p < ps->end && *ps->p != '|' && !(*ps->p == ')' && ps->depth > 0))
        b = cat(ps, b, piece(ps));
    return b;
}

static uint32_t alternation(struct parser *ps)
{
    uint32_t a = branch(ps);
    while (!ps->failed && ps->p < ps->end && *ps->p == '|') {
        ps->p++;
        a = alt(ps, a, branch(ps));
    }
    return a;
}

/* ===== the program ===== */

enum op { OP_SET, OP_SPLIT, OP_JMP, OP_BOL, OP_EOL, OP_MATCH };

struct insn {
    uint8_t op;
    uint32_t x, y; /* SPLIT: both; JMP: x; SET: the set's index in x */
};

struct ere {
    struct insn *prog;
    size_t n;
    struct byteset *sets;
};

struct emitter {
    const struct parser *ps;
    struct insn *prog;
    size_t n;
};

static size_t emit(struct emitter *em, enum op op, uint32_t x, uint32_t y)
{
    em->prog[em->n] = (struct insn){ .op = (uint8_t)op, .x = x, .y = y };
    return em->n++;
}

static void compile_node(struct emitter *em, uint32_t i);

static void compile_repeat(struct emitter *em, const struct node *nd)
{
    for (uint32_t k = 0; k < nd->min; k++) {
        size_t top = em->n;
        compile_node(em, nd->a);
        if (nd->max == REPEAT_INF && k + 1 == nd->min) /* the last copy loops: e+ */
            emit(em, OP_SPLIT, (uint32_t)top, (uint32_t)em->n + 1);
    }
    if (nd->max == REPEAT_INF && nd->min == 0) { /* e*: SPLIT body, out; body; JMP split */
        size_t split = emit(em, OP_SPLIT, 0, 0);
        compile_node(em, nd->a);
        emit(em, OP_JMP, (uint32_t)split, 0);
        em->prog[split].x = (uint32_t)split + 1;
        em->prog[split].y = (uint32_t)em->n;
    } else if (nd->max != REPEAT_INF) {
        for (uint32_t k = nd->min; k < nd->max; k++) { /* e?: SPLIT body, out; body */
            size_t split = emit(em, OP_SPLIT, 0, 0);
            compile_node(em, nd->a);
            em->prog[split].x = (uint32_t)split + 1;
            em->prog[split].y = (uint32_t)em->n;
        }
    }
}

static void compile_node(struct emitter *em, uint32_t i)
{
    const struct node *nd = &em->ps->nodes[i];
    switch (nd->kind) {
    case N_EMPTY:
        break;
    case N_SET:
        emit(em, OP_SET, nd->set, 0);
        break;
    case N_BOL:
        emit(em, OP_BOL, 0, 0);
        break;
    case N_EOL:
        emit(em, OP_EOL, 0, 0);
        break;
    case N_CAT:
        compile_node(em, nd->a);
        compile_node(em, nd->b);
        break;
    case N_ALT: {
        size_t split = emit(em, OP_SPLIT, 0, 0);
        compile_node(em, nd->a);
        size_t jmp = emit(em, OP_JMP, 0, 0);
        em->prog[split].x = (uint32_t)split + 1;
        em->prog[split].y = (uint32_t)em->n;
        compile_node(em, nd->b);
        em->prog[jmp].x = (uint32_t)em->n;
        break;
    }
    case N_REPEAT:
        compile_repeat(em, nd);
        break;
    }
}

struct ere *ere_compile(const char *src, size_t len, struct ere_error *err)
{
    struct parser ps = { .p = src, .start = src, .end = src + len, .err = err };
    struct ere *re = NULL;

    err->at = 0;
    err->msg[0] = '\0';
    if (len > ERE_MAX_SOURCE) {
        fail_at(&ps, src, "%s", "longer than the bytes a regex may have");
        return NULL;
    }
    if (memchr(src, '\0', len) != NULL) {
        fail_at(&ps, (const char *)memchr(src, '\0', len), "%s", "a NUL byte");
        return NULL;
    }
    uint32_t root = alternation(&ps);
    if (!ps.failed && ps.p < ps.end) /* only a ')' at depth 0 stops it, and that is a literal */
        fail_at(&ps, ps.p, "%s", "an unexpected character");
    if (!ps.failed && node_size(&ps, root) + 1 > ERE_MAX_PROGRAM) {
        fail_at(&ps, src, "too large: its repeat counts, multiplied through nested groups, "
                "make more than %u instructions", ERE_MAX_PROGRAM);
    }
    if (!ps.failed && ((re = calloc(1, sizeof(*re))) == NULL ||
                       (re->prog = calloc(node_size(&ps, root) + 1, sizeof(*re->prog))) == NULL))
        fail_at(&ps, src, "%s", "out of memory");
    if (!ps.failed) {
        struct emitter em = { &ps, re->prog, 0 };
        compile_node(&em, root);
        emit(&em, OP_MATCH, 0, 0);
        re->n = em.n;
        re->sets = ps.sets;
        ps.sets = NULL;
    }
    free(ps.nodes);
    free(ps.sets);
    if (ps.failed) {
        ere_free(re);
        return NULL;
    }
    return re;
}

void ere_free(struct ere *re)
{
    if (re == NULL)
        return;
    free(re->prog);
    free(re->sets);
    free(re);
}

size_t ere_size(const struct ere *re)
{
    return re->n;
}

/* ===== matching ===== */

/* The threads at one position: the SET and MATCH instructions reached (list), and a mark per
 * instruction so that each is reached once. */
struct threads {
    uint32_t *list;
    size_t n;
    uint32_t *mark;  /* mark[pc] == gen: reached at this position */
};

struct sim {
    const struct ere *re;
    uint32_t *stack;
    uint32_t gen;
    size_t *budget;
    bool over;
};

/* Every instruction reachable from pc without consuming a byte at position pos of len. */
static void add(struct sim *sm, struct threads *t, uint32_t pc, size_t pos, size_t len)
{
    size_t top = 0;
    sm->stack[top++] = pc;
    while (top > 0) {
        pc = sm->stack[--top];
        if (t->mark[pc] == sm->gen)
            continue;
        t->mark[pc] = sm->gen;
        if (*sm->budget == 0) {
            sm->over = true;
            return;
        }
        (*sm->budget)--;
        const struct insn *in = &sm->re->prog[pc];
        switch (in->op) {
        case OP_SET:
        case OP_MATCH:
            t->list[t->n++] = pc;
            break;
        case OP_SPLIT:
            sm->stack[top++] = in->y;
            sm->stack[top++] = in->x;
            break;
        case OP_JMP:
            sm->stack[top++] = in->x;
            break;
        case OP_BOL:
            if (pos == 0)
                sm->stack[top++] = pc + 1;
            break;
        case OP_EOL:
            if (pos == len)
                sm->stack[top++] = pc + 1;
            break;
        }
    }
}

enum ere_result ere_match(const struct ere *re, const char *s, size_t len, size_t *budget)
{
    size_t n = re->n;
    if (len >= UINT32_MAX - 1)
        return ERE_OVER_BUDGET; /* the marks' generation counts bytes in 32 bits */
    /* two lists, one mark array, and a stack: each instruction is expanded once per position
     * and pushes at most two, so 2n + 1 entries always do */
    uint32_t *mem = malloc((5 * n + 1) * sizeof(uint32_t));
    if (mem == NULL)
        return ERE_NOMEM;
    struct threads cur = { mem, 0, mem + 2 * n }, next = { mem + n, 0, mem + 2 * n };
    struct sim sm = { re, mem + 3 * n, 1, budget, false };
    memset(cur.mark, 0, n * sizeof(uint32_t));

    add(&sm, &cur, 0, 0, len);
    for (size_t i = 0; i < len && cur.n > 0 && !sm.over; i++) {
        unsigned char c = (unsigned char)s[i];
        next.n = 0;
        sm.gen++; /* never wraps to a stale mark: len < 2^32 - 1 */
        for (size_t k = 0; k < cur.n && !sm.over; k++) {
            const struct insn *in = &re->prog[cur.list[k]];
            if (in->op == OP_SET && set_has(&re->sets[in->x], c))
                add(&sm, &next, cur.list[k] + 1, i + 1, len);
        }
        struct threads t = cur;
        cur = next;
        next = t;
    }
    enum ere_result r = ERE_NOMATCH;
    if (sm.over)
        r = ERE_OVER_BUDGET;
    else
        for (size_t k = 0; k < cur.n; k++)
            if (re->prog[cur.list[k]].op == OP_MATCH)
                r = ERE_MATCH;
    free(mem);
    return r;
}
