/* ynode.h: YAML bytes -> a small tree of nodes that remember where they came from (internal to
 * policy/; the yoml idea from h2o).
 *
 * The tree is built from libyaml's event parser, not its document loader, so every node keeps
 * the 1-based line and column of its first character and the policy layer can point at it.
 * Only the plain subset of YAML a config file needs survives: one document, scalars, sequences
 * and mappings with scalar keys. Anchors, aliases, tags, directives, a second document, nesting
 * deeper than YNODE_MAX_DEPTH and input that is not UTF-8 are errors here, before any policy
 * rule runs. Duplicate keys are left to the caller, which knows what the mapping means and so
 * can say "duplicate tool" rather than "duplicate key". */
#ifndef SL_YNODE_H
#define SL_YNODE_H

#include <stdbool.h>
#include <stddef.h>

/* A policy needs three levels (top, tools, one tool); the slack is for a helpful "unknown key"
 * on a small nested value, while a stack of brackets still cannot run us out of memory. */
#define YNODE_MAX_DEPTH 8

enum ynode_kind {
    YNODE_SCALAR,
    YNODE_SEQUENCE,
    YNODE_MAPPING,
};

struct ynode {
    enum ynode_kind kind;
    unsigned line, col;       /* 1-based position of the node's first character */
    char *str;                /* scalar: value, NUL-terminated (it may also contain NULs) */
    size_t len;               /* scalar: bytes in str */
    bool plain;               /* scalar: unquoted, not a block scalar (| or >) */
    struct ynode **kids;      /* sequence: items; mapping: key, value, key, value, ... */
    size_t nkids;
    size_t cap;
};

struct ynode_error {
    unsigned line, col;       /* 1-based; 0 when not about a place in the input (out of memory) */
    char msg[200];
};

/* Parses buf[0..len). Returns 0 and sets *out (caller frees with ynode_free), or -1 and fills
 * *err. An input with no document at all is an error. */
int ynode_parse(const char *buf, size_t len, struct ynode **out, struct ynode_error *err);
void ynode_free(struct ynode *n); /* NULL is a no-op */

/* Mapping accessors: pair i of a mapping (i < ynode_map_size). Keys are always scalars. */
static inline size_t ynode_map_size(const struct ynode *n)
{
    return n->nkids / 2;
}

static inline const struct ynode *ynode_map_key(const struct ynode *n, size_t i)
{
    return n->kids[2 * i];
}

static inline const struct ynode *ynode_map_value(const struct ynode *n, size_t i)
{
    return n->kids[2 * i + 1];
}

/* True iff n is the empty plain scalar, what YAML writes as "key:" with nothing after it. */
static inline bool ynode_is_empty(const struct ynode *n)
{
    return n->kind == YNODE_SCALAR && n->plain && n->len == 0;
}

#endif /* SL_YNODE_H */
