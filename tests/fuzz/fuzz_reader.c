/* fuzz_reader.c: sluice's JSON reader against the yajl-based one it replaced (yajl_reader.c).
 *
 * Property: on any bytes both accept or both refuse, and when they accept they built the same
 * tree (written out with json_write, byte for byte: same members in the same order, same decoded
 * strings, same number texts). Plus no crash, leak or undefined behaviour in either. Our tree's
 * containers may be written from their raw text and the other's never are, so the compare also
 * checks that text against the walk; then the same edit of both trees, at a depth the input
 * picks, must show alike (an edit makes the raw text around it stale). */
#include "fuzz.h"

#include "jsonrpc.h"
#include "yajl_reader.h"

/* The container at the end of the path that takes the last container child at each level. */
static struct json *deepest(struct json *v, size_t take)
{
    while (take-- > 0) {
        struct json *next = NULL;
        size_t n = v->type == JSON_OBJECT ? v->u.obj.n : v->type == JSON_ARRAY ? v->u.arr.n : 0;
        for (size_t i = n; i-- > 0 && next == NULL;) {
            struct json *c = v->type == JSON_OBJECT ? v->u.obj.v[i].val : v->u.arr.v[i];
            if (c->type == JSON_OBJECT || c->type == JSON_ARRAY)
                next = c;
        }
        if (next == NULL)
            break;
        v = next;
    }
    return v;
}

/* The same edit of both trees, some levels down: a write of ours must show it as the write of
 * the other (which has no raw text) does. */
static void edit(struct sl_arena *a, struct json *root, size_t levels)
{
    struct json *v = deepest(root, levels);
    if (v->type == JSON_ARRAY)
        json_push(a, v, json_new_null(a));
    else if (v->type == JSON_OBJECT && v->u.obj.n > 0 && levels % 2)
        json_del_key(v, v->u.obj.v[0].key);
    else if (v->type == JSON_OBJECT)
        json_set(a, v, "\x7f", json_new_number(a, "7"));
}

static void check_same(const struct json *x, const struct json *y, const char *after)
{
    struct sl_buf wx = { 0 }, wy = { 0 };
    json_write(&wx, x);
    json_write(&wy, y);
    if (wx.len != wy.len || memcmp(wx.p, wy.p, wx.len) != 0)
        fprintf(stderr, "trees differ%s:\n ours %s\n yajl %s\n", after, wx.p, wy.p);
    FUZZ_CHECK(wx.len == wy.len && memcmp(wx.p, wy.p, wx.len) == 0);
    sl_buf_free(&wx);
    sl_buf_free(&wy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sl_arena *a = sl_arena_new(), *b = sl_arena_new();
    struct json *x = NULL, *y = NULL;
    char ex[200], ey[200];
    int rx = json_parse((const char *)data, size, a, &x, ex, sizeof(ex));
    int ry = yajl_json_parse((const char *)data, size, b, &y, ey, sizeof(ey));
    if (rx != ry) {
        fprintf(stderr, "readers disagree on %zu bytes: ours %s (%s), yajl's %s (%s)\n", size,
                rx ? "refused" : "accepted", rx ? ex : "-", ry ? "refused" : "accepted",
                ry ? ey : "-");
        FUZZ_CHECK(rx == ry);
    }
    if (rx == 0) {
        check_same(x, y, "");
        size_t levels = size % 5; /* some edits deep, some at the root */
        edit(a, x, levels);
        edit(b, y, levels);
        check_same(x, y, " after an edit");
    }
    sl_arena_free(a);
    sl_arena_free(b);
    return 0;
}
