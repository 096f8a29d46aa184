/* test_namefold.c: proxy/namefold.c, tool names as a loose server reads them.
 *
 * - pairs: two names and whether they read as one (compatibility forms decomposed, fully case
 *   folded, combining marks, separators, invisible characters and blanks dropped), including the
 *   default-ignorable ranges at their edges, characters that stand for two or three (ß, ﬃ) and
 *   bytes that are not UTF-8;
 * - the policy: a name the policy holds exactly is never a variant, even when another of its
 *   names reads the same; a name it does not hold is the variant of the first that reads as it;
 * - collisions: the policy's own names that read as one are found, each with the first;
 * - many tools: the sorted search answers as one comparison with every tool in file order
 *   would, for hundreds of names read alike in groups and in shuffled order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "namefold.h"

#include "sl_test.h"

static const struct {
    const char *a, *b;
    bool equal;
} pairs[] = {
    { "delete_file", "delete_file", true },
    { "Delete_File", "delete_file", true },
    { "DELETE_FILE", "delete_file", true },
    { "delete\xe2\x80\x8b_file", "delete_file", true },       /* U+200B zero width space */
    { "delete\x7f_file", "delete_file", true },                /* DEL: ASCII, no table search */
    { "\xc2\xad" "delete_file", "delete_file", true },         /* U+00AD soft hyphen */
    { "delete_file\xef\xb8\x8f", "delete_file", true },        /* U+FE0F variation selector */
    { "delete_\xf3\xa0\x81\x81" "file", "delete_file", true }, /* U+E0041 tag latin A */
    { "delete_file\xf3\xa0\x87\xaf", "delete_file", true },    /* U+E01EF, VS256 */
    { "de\xe2\x81\xa0lete_file", "delete_file", true },        /* U+2060 word joiner */
    { "delete_file\xc2\xa0", "delete_file", true },            /* U+00A0 no-break space */
    { " delete_file\n", "delete_file", true },                 /* blanks and controls */
    { "delete_fi\xe2\x80\xaele", "delete_file", true },        /* U+202E bidi override */
    { "\xe2\x84\xaaill", "kill", true },                       /* U+212A Kelvin sign */
    { "\xc5\xbf" "top", "stop", true },                        /* U+017F long s */
    { "delete_files", "delete_file", false },
    { "delete-file", "delete_file", true },                    /* separators dropped */
    { "deletefile", "delete_file", true },
    { "delete.file", "delete_file", true },
    { "delete file", "delete_file", true },
    { "-Delete--File.", "delete_file", true },
    { "\xef\xbd\x84\xef\xbd\x85\xef\xbd\x8c\xef\xbd\x85\xef\xbd\x94\xef\xbd\x85_"
      "\xef\xbd\x86\xef\xbd\x89\xef\xbd\x8c\xef\xbd\x85", "delete_file", true }, /* fullwidth */
    { "\xef\xbc\xa4" "ELETE\xef\xbc\xbf" "FILE", "delete_file", true }, /* U+FF24, U+FF3F */
    { "delete_\xef\xac\x81le", "delete_file", true },         /* U+FB01 fi ligature */
    { "\xef\xac\x82ush", "flush", true },                     /* U+FB02 fl ligature */
    { "o\xef\xac\x83" "ce", "office", true },                    /* U+FB03 ffi ligature */
    { "\xf0\x9d\x90\x9d" "elete_file", "delete_file", true }, /* U+1D41D bold small d */
    { "\xf0\x9d\x94\xa1" "elete_file", "delete_file", true }, /* U+1D521 fraktur small d */
    { "file\xf0\x9d\x9f\x90", "file2", true },               /* U+1D7D0 bold digit two */
    { "\xe2\x84\x8e" "ash", "hash", true },                    /* U+210E planck constant */
    { "stra\xc3\x9f" "e", "strasse", true },                    /* U+00DF sharp s, full folding */
    { "STRA\xe1\xba\x9e" "E", "strasse", true },               /* U+1E9E capital sharp s */
    { "\xc4\xb0nit", "init", true },                           /* U+0130 I with dot above */
    { "caf\xc3\xa9", "cafe\xcc\x81", true },                  /* U+00E9 and e U+0301 */
    { "CAF\xc3\x89", "cafe", true },
    { "delete_file\xcc\x81", "delete_file", true },            /* U+0301 dropped */
    { "delete_f\xc3\xaele", "delete_file", true },             /* U+00EE: i and a mark */
    { "\xc3\xa5", "a\xcc\x8a", true },                        /* U+00E5 and a U+030A */
    { "\xe2\x84\xabngstrom", "\xc3\xa5ngstrom", true },       /* U+212B angstrom sign */
    { "\xe1\xbe\xb3", "\xce\xb1\xce\xb9", true },            /* U+1FB3: alpha iota */
    { "\xd0\x99", "\xd0\xb8", true },                          /* U+0419 and U+0438 */
    { "delete_fi\xc5\x82" "e", "delete_file", false },           /* U+0142 l with stroke: a letter */
    { "delete_fi1e", "delete_file", false },
    { "delete\xe2\x80\x94" "file", "delete_file", false },    /* U+2014 em dash: kept */
    { "\xef\xac\x81", "f", false },
    { "\xef\xac\x81", "fix", false },
    { "\xc3\x9f", "s", false },
    { "delete_fil", "delete_file", false },
    { "", "", true },
    { "\xe2\x80\x8b", "", true },
    { "x", "", false },
    { "delete_file\xcd\x8f", "delete_file", true },            /* U+034F grapheme joiner */
    { "delete_\xff" "file", "delete_file", false },            /* not UTF-8: itself */
    { "delete_\xff" "file", "DELETE_\xff" "FILE", true },
    { "a\xff", "a\xfe", false },
    { "a\xe2\x80", "a", false },                               /* a cut sequence is bytes */
};

static void test_pairs(void **state)
{
    (void)state;
    for (size_t i = 0; i < SL_ARRAY_LEN(pairs); i++) {
        struct sl_str a = sl_str_c(pairs[i].a), b = sl_str_c(pairs[i].b);
        if (namefold_equal(a, b) != pairs[i].equal || namefold_equal(b, a) != pairs[i].equal)
            fail_msg("pair %zu: \"%s\" and \"%s\" should %sread as one", i, pairs[i].a,
                     pairs[i].b, pairs[i].equal ? "" : "not ");
    }
}

static const char policy_text[] =
    "version: 1\n"
    "defaults: { action: allow }\n"
    "tools:\n"
    "  read_file: { action: allow }\n"
    "  delete_file: { action: confirm }\n"
    "  Drop_Table: { action: deny }\n"
    "  drop_table: { action: allow }\n";

static void test_policy(void **state)
{
    (void)state;
    struct policy *p;
    struct policy_error err;
    assert_int_equal(policy_load_buffer("t", policy_text, sizeof(policy_text) - 1, &p, &err), 0);
    size_t none = policy_tool_count(p);
    assert_int_equal(namefold_policy_variant(p, sl_str_c("delete_file")), none);
    assert_int_equal(namefold_policy_variant(p, sl_str_c("Drop_Table")), none);
    assert_int_equal(namefold_policy_variant(p, sl_str_c("drop_table")), none);
    assert_int_equal(namefold_policy_variant(p, sl_str_c("write_file")), none);
    assert_int_equal(namefold_policy_variant(p, sl_str_c("")), none);
    assert_int_equal(namefold_policy_variant(p, sl_str_c("Delete_File")), 1);
    assert_int_equal(namefold_policy_variant(p, sl_str_c("delete\xe2\x80\x8b_file")), 1);
    assert_int_equal(namefold_policy_variant(p, sl_str_c("READ_FILE")), 0);
    assert_int_equal(namefold_policy_variant(p, sl_str_c("DROP_TABLE")), 2); /* the first */
    policy_unref(p);
}

struct seen {
    size_t n;
    size_t pairs[8][2];
};

static void record(void *arg, size_t first, size_t other)
{
    struct seen *s = arg;
    assert_true(s->n < SL_ARRAY_LEN(s->pairs));
    s->pairs[s->n][0] = first, s->pairs[s->n][1] = other;
    s->n++;
}

static void test_collisions(void **state)
{
    (void)state;
    static const char text[] =
        "version: 1\n"
        "tools:\n"
        "  delete_file: { action: confirm }\n"
        "  read_file: { action: allow }\n"
        "  Delete-File: { action: allow }\n"
        "  stra\xc3\x9f" "e: { action: deny }\n"
        "  echo: { action: allow }\n"
        "  DELETEFILE: { action: allow }\n"
        "  STRASSE: { action: allow }\n"
        "  read_files: { action: allow }\n";
    struct policy *p;
    struct policy_error err;
    assert_int_equal(policy_load_buffer("t", text, sizeof(text) - 1, &p, &err), 0);
    struct seen s = { 0 };
    assert_int_equal(namefold_policy_collisions(p, record, &s), 3);
    assert_int_equal(s.n, 3);
    /* Each later name with the first that reads as it, in key order. */
    size_t want[][2] = { { 0, 2 }, { 0, 5 }, { 3, 6 } };
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(s.pairs[i][0], want[i][0]);
        assert_int_equal(s.pairs[i][1], want[i][1]);
    }
    policy_unref(p);

    static const char plain[] =
        "version: 1\ntools:\n  a_b: { action: deny }\n  ab_c: { action: deny }\n";
    assert_int_equal(policy_load_buffer("t", plain, sizeof(plain) - 1, &p, &err), 0);
    assert_int_equal(namefold_policy_collisions(p, NULL, NULL), 0);
    policy_unref(p);
}

/* The answer namefold_policy_variant must give: every tool compared, in file order. */
static size_t every_tool(const struct policy *p, struct sl_str tool)
{
    size_t n = policy_tool_count(p), first = n;
    for (size_t k = 0; k < n; k++) {
        struct sl_str name = sl_str_c(policy_tool_name(p, k));
        if (sl_str_eq(name, tool))
            return n;
        if (first == n && namefold_equal(tool, name))
            first = k;
    }
    return first;
}

/* prefix, the group's number in three digits, suffix */
static void group_name(char out[32], const char *const form[2], unsigned group)
{
    snprintf(out, 32, "%s%03u%s", form[0], group, form[1]);
}

static void test_many_tools(void **state)
{
    (void)state;
    /* 200 groups of up to three names read alike, the file in a shuffled order (a fixed
     * permutation: 7919 is prime to 600), so that a group's first name in the file is not the
     * first in key order, and the exact name of a query is sometimes after its variants. */
    static const char *const forms[][2] = { { "tool_", "" }, { "Tool-", "" }, { "TOOL", "" } };
    struct sl_buf text = { 0 };
    sl_buf_puts(&text, "version: 1\ntools:\n");
    for (unsigned i = 0; i < 600; i++) {
        unsigned j = (i * 7919u) % 600u, group = j / 3, form = j % 3;
        char name[32];
        group_name(name, forms[form], group);
        if (form == 2 && group % 2) /* some groups have two names only */
            continue;
        sl_buf_printf(&text, "  %s: { action: allow }\n", name);
    }
    struct policy *p;
    struct policy_error err;
    assert_int_equal(policy_load_buffer("t", text.p, text.len, &p, &err), 0);
    static const char *const queries[][2] = { { "tool_", "" }, { "Tool-", "" }, { "TOOL", "" },
                                              { "T.O.O.L_", "" }, { "tool_", "x" },
                                              { "tool0", "" }, { "x", "" } };
    size_t checked = 0, variants = 0;
    for (unsigned g = 0; g < 201; g++) {
        for (size_t q = 0; q < SL_ARRAY_LEN(queries); q++) {
            char name[32];
            group_name(name, queries[q], g);
            size_t want = every_tool(p, sl_str_c(name));
            assert_int_equal(namefold_policy_variant(p, sl_str_c(name)), want);
            checked++;
            variants += want != policy_tool_count(p);
        }
    }
    assert_int_equal(namefold_policy_variant(p, sl_str_c("")), every_tool(p, sl_str_c("")));
    assert_true(variants > 200 && variants < checked); /* both answers were asked for */
    /* every group of two or three names is a collision, each later name with the first */
    assert_int_equal(namefold_policy_collisions(p, NULL, NULL), 100 * 2 + 100 * 1);
    policy_unref(p);
    sl_buf_free(&text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs),
        cmocka_unit_test(test_policy),
        cmocka_unit_test(test_collisions),
        cmocka_unit_test(test_many_tools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
