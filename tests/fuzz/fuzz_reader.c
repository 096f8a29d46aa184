/* fuzz_reader.c: sluice's JSON reader against the yajl-based one it replaced (yajl_reader.c).
 *
 * Property: on any bytes both accept or both refuse, and when they accept they built the same
 * tree (written out with json_write, byte for byte: same members in the same order, same decoded
 * strings, same number texts). Plus no crash, leak or undefined behaviour in either. */
#include "fuzz.h"

#include "jsonrpc.h"
#include "yajl_reader.h"

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
        struct sl_buf wx = { 0 }, wy = { 0 };
        json_write(&wx, x);
        json_write(&wy, y);
        if (wx.len != wy.len || memcmp(wx.p, wy.p, wx.len) != 0)
            fprintf(stderr, "trees differ:\n ours %s\n yajl %s\n", wx.p, wy.p);
        FUZZ_CHECK(wx.len == wy.len && memcmp(wx.p, wy.p, wx.len) == 0);
        sl_buf_free(&wx);
        sl_buf_free(&wy);
    }
    sl_arena_free(a);
    sl_arena_free(b);
    return 0;
}
