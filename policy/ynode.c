/* ynode.c: libyaml events -> struct ynode tree, refusing the parts of YAML a policy must not use.
 *
 * Why events and not yaml_parser_load: the loader builds the whole document first, aliases
 * already resolved into shared nodes and with no depth limit, and only then could we object.
 * Here each event becomes at most one node, and every refusal happens at the event that carries
 * the offending mark, before anything more is read. */
#include "ynode.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct builder {
    const char *buf;                        /* the input, to place reader errors */
    size_t len;
    struct ynode *root;                     /* owns the whole tree */
    struct ynode *stack[YNODE_MAX_DEPTH];   /* open collections, innermost last */
    size_t depth;
    unsigned docs;                          /* DOCUMENT_START events seen */
    struct ynode_error *err;
};

/* ===== errors ===== */

static int fail_at(struct ynode_error *err, unsigned line, unsigned col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail_at(struct ynode_error *err, unsigned line, unsigned col, const char *fmt, ...)
{
    va_list ap;

    err->line = line;
    err->col = col;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return -1;
}

/* libyaml marks count from 0; people and editors count from 1. */
#define MARK_POS(m) (unsigned)(m).line + 1, (unsigned)(m).column + 1

/* Reader errors (bad UTF-8, control characters) carry a byte offset instead of a mark, because
 * libyaml decodes ahead of its scanner. Count lines and characters up to that byte ourselves;
 * a character is any byte that does not continue a UTF-8 sequence, as in libyaml's marks. */
static void offset_to_pos(const char *buf, size_t len, size_t off, unsigned *line, unsigned *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && i < len; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c == '\n' || (c == '\r' && (i + 1 >= len || buf[i + 1] != '\n'))) {
            (*line)++;
            *col = 1;
        } else if (c != '\r' && (c & 0xC0) != 0x80) {
            (*col)++;
        }
    }
}

static int fail_syntax(struct builder *b, const yaml_parser_t *parser)
{
    unsigned line, col;

    if (parser->error == YAML_MEMORY_ERROR || parser->problem == NULL)
        return fail_at(b->err, 0, 0, "out of memory while parsing YAML");
    if (parser->error == YAML_READER_ERROR) {
        offset_to_pos(b->buf, b->len, parser->problem_offset, &line, &col);
        return fail_at(b->err, line, col, "invalid YAML: %s", parser->problem);
    }
    if (parser->context != NULL)
        return fail_at(b->err, MARK_POS(parser->problem_mark), "invalid YAML: %s (%s at %u:%u)",
                       parser->problem, parser->context, MARK_POS(parser->context_mark));
    return fail_at(b->err, MARK_POS(parser->problem_mark), "invalid YAML: %s", parser->problem);
}

/* ===== nodes ===== */

void ynode_free(struct ynode *n)
{
    if (n == NULL)
        return;
    for (size_t i = 0; i < n->nkids; i++)
        ynode_free(n->kids[i]);
    free(n->kids);
    free(n->str);
    free(n);
}

static struct ynode *node_new(enum ynode_kind kind, yaml_mark_t at)
{
    struct ynode *n = calloc(1, sizeof(*n));

    if (n == NULL)
        return NULL;
    n->kind = kind;
    n->line = (unsigned)at.line + 1;
    n->col = (unsigned)at.column + 1;
    return n;
}

static int append(struct ynode *parent, struct ynode *kid)
{
    if (parent->nkids == parent->cap) {
        size_t cap = parent->cap ? parent->cap * 2 : 8;
        struct ynode **kids = realloc(parent->kids, cap * sizeof(*kids));
        if (kids == NULL)
            return -1;
        parent->kids = kids;
        parent->cap = cap;
    }
    parent->kids[parent->nkids++] = kid;
    return 0;
}

/* Hands n to the tree: it becomes the root or the next child of the innermost open collection.
 * On failure n is freed here, so callers never have to. */
static int attach(struct builder *b, struct ynode *n)
{
    struct ynode *parent;

    if (b->depth == 0) {
        b->root = n;
        return 0;
    }
    parent = b->stack[b->depth - 1];
    /* An even count means n is a key. "? [a, b]: x" is legal YAML, but no policy key is a
     * list, and scalar keys let every caller compare keys as bytes. */
    if (parent->kind == YNODE_MAPPING && parent->nkids % 2 == 0 && n->kind != YNODE_SCALAR) {
        fail_at(b->err, n->line, n->col, "a mapping key must be a plain value, not a %s",
                n->kind == YNODE_MAPPING ? "mapping" : "sequence");
        ynode_free(n);
        return -1;
    }
    if (append(parent, n) < 0) {
        ynode_free(n);
        return fail_at(b->err, 0, 0, "out of memory while parsing YAML");
    }
    return 0;
}

/* ===== events ===== */

/* Anchors and aliases let one node appear in two places (and "billion laughs" expand), and
 * tags change what a value means; a policy needs none of them, so each is an error at its
 * mark rather than something to half-support. */
static int refuse_properties(struct builder *b, const yaml_event_t *ev, const yaml_char_t *anchor,
                             const yaml_char_t *tag)
{
    if (anchor != NULL)
        return fail_at(b->err, MARK_POS(ev->start_mark),
                       "anchors (&%.32s) are not accepted in a policy: write the value out",
                       (const char *)anchor);
    if (tag != NULL)
        return fail_at(b->err, MARK_POS(ev->start_mark),
                       "tags (such as !!str) are not accepted in a policy: write a plain value");
    return 0;
}

static int on_document_start(struct builder *b, const yaml_event_t *ev)
{
    if (b->docs++ > 0)
        return fail_at(b->err, MARK_POS(ev->start_mark),
                       "a second YAML document: a policy file holds exactly one");
    if (ev->data.document_start.version_directive != NULL ||
        ev->data.document_start.tag_directives.start != ev->data.document_start.tag_directives.end)
        return fail_at(b->err, MARK_POS(ev->start_mark),
                       "YAML directives (%%YAML, %%TAG) are not accepted in a policy");
    return 0;
}

static int on_scalar(struct builder *b, const yaml_event_t *ev)
{
    struct ynode *n;

    if (refuse_properties(b, ev, ev->data.scalar.anchor, ev->data.scalar.tag) < 0)
        return -1;
    n = node_new(YNODE_SCALAR, ev->start_mark);
    if (n == NULL || (n->str = malloc(ev->data.scalar.length + 1)) == NULL) {
        ynode_free(n);
        return fail_at(b->err, 0, 0, "out of memory while parsing YAML");
    }
    memcpy(n->str, ev->data.scalar.value, ev->data.scalar.length);
    n->str[ev->data.scalar.length] = '\0';
    n->len = ev->data.scalar.length;
    n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    return attach(b, n);
}

static int on_collection_start(struct builder *b, const yaml_event_t *ev, enum ynode_kind kind)
{
    const yaml_char_t *anchor, *tag;
    struct ynode *n;

    if (kind == YNODE_MAPPING) {
        anchor = ev->data.mapping_start.anchor;
        tag = ev->data.mapping_start.tag;
    } else {
        anchor = ev->data.sequence_start.anchor;
        tag = ev->data.sequence_start.tag;
    }
    if (refuse_properties(b, ev, anchor, tag) < 0)
        return -1;
    if (b->depth == YNODE_MAX_DEPTH)
        return fail_at(b->err, MARK_POS(ev->start_mark), "nesting deeper than %d levels",
                       YNODE_MAX_DEPTH);
    n = node_new(kind, ev->start_mark);
    if (n == NULL)
        return fail_at(b->err, 0, 0, "out of memory while parsing YAML");
    if (attach(b, n) < 0)
        return -1;
    b->stack[b->depth++] = n;
    return 0;
}

/* Returns 1 at the end of the stream, 0 to go on, -1 on error. */
static int on_event(struct builder *b, const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_NO_EVENT:
    case YAML_STREAM_START_EVENT:
    case YAML_DOCUMENT_END_EVENT:
        return 0;
    case YAML_DOCUMENT_START_EVENT:
        return on_document_start(b, ev);
    case YAML_ALIAS_EVENT:
        return fail_at(b->err, MARK_POS(ev->start_mark),
                       "aliases (*%.32s) are not accepted in a policy: write the value out",
                       (const char *)ev->data.alias.anchor);
    case YAML_SCALAR_EVENT:
        return on_scalar(b, ev);
    case YAML_SEQUENCE_START_EVENT:
        return on_collection_start(b, ev, YNODE_SEQUENCE);
    case YAML_MAPPING_START_EVENT:
        return on_collection_start(b, ev, YNODE_MAPPING);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        b->depth--;  /* libyaml only emits balanced ends */
        return 0;
    case YAML_STREAM_END_EVENT:
        if (b->root == NULL)
            return fail_at(b->err, MARK_POS(ev->start_mark),
                           "the policy is empty (expected a mapping that starts with version: 1)");
        return 1;
    }
    return fail_at(b->err, MARK_POS(ev->start_mark), "unexpected YAML event %d", (int)ev->type);
}

int ynode_parse(const char *buf, size_t len, struct ynode **out, struct ynode_error *err)
{
    struct builder b = { .buf = buf, .len = len, .err = err };
    yaml_parser_t parser;
    yaml_event_t ev;
    int rc = 0;

    *out = NULL;
    if (!yaml_parser_initialize(&parser))
        return fail_at(err, 0, 0, "out of memory while parsing YAML");
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    /* UTF-8 only. Left alone, libyaml sniffs a BOM and accepts UTF-16 too; one encoding keeps
     * tool names the same bytes a client sends and reader-error offsets easy to place. */
    yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
    while (rc == 0) {
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = fail_syntax(&b, &parser);
            break;
        }
        rc = on_event(&b, &ev);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    if (rc < 0) {
        ynode_free(b.root);
        return -1;
    }
    *out = b.root;
    return 0;
}
