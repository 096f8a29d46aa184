/* test_rules.c: proxy/rules.c, table by table.
 *
 * - normalize: path -> lexical normal form (or refused), including ".." traversal and
 *   symlink-looking paths, which are handled lexically.
 * - globs: pattern x normalized path -> match, including the no-prefix rule, "**" and "?".
 * - checks: one policy holding every rule kind; each row a call and the outcome, rule name and
 *   a piece of the why it must give. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "rules.h"

#include "jsonrpc.h"
#include "sl_test.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ===== normalize ===== */

struct norm_case {
    const char *in;
    size_t len;
    const char *want;  /* NULL: refused */
};

#define IN(s) (s), sizeof(s) - 1

static const struct norm_case norm_cases[] = {
    { IN("/tmp/demo/../../etc/passwd"), "/etc/passwd" },
    { IN("/tmp/demo/./a"), "/tmp/demo/a" },
    { IN("//etc//passwd"), "/etc/passwd" },
    { IN("/tmp/demo/link/../../etc"), "/tmp/etc" },  /* lexical: link is not followed */
    { IN("/tmp/demo/link/../x"), "/tmp/demo/x" },
    { IN("/.."), "/" },
    { IN("/../../a"), "/a" },                        /* above the root stays at the root */
    { IN("/"), "/" },
    { IN("///"), "/" },
    { IN("/a/"), "/a" },
    { IN("/a/."), "/a" },
    { IN("a/./b/"), "a/b" },
    { IN("."), "." },
    { IN("./"), "." },
    { IN("a/.."), "." },
    { IN("a/../.."), ".." },
    { IN("../a"), "../a" },
    { IN("../../a/../b"), "../../b" },
    { IN("a/../../b"), "../b" },
    { IN("..."), "..." },                            /* not a dot segment */
    { IN("/a/.../b"), "/a/.../b" },
    { IN("/a/..b/c"), "/a/..b/c" },
    { IN("/a/b../.."), "/a" },
    { IN("~/x"), "~/x" },                            /* not expanded: relative */
    { IN("/tmp/\xc3\xa9t\xc3\xa9"), "/tmp/\xc3\xa9t\xc3\xa9" },
    { IN(""), NULL },
    { IN("/a\0b"), NULL },
    { IN("/a\nb"), NULL },
    { IN("/a\x1b[31m"), NULL },
    { IN("/a\x7f"), NULL },
    { IN("\t"), NULL },
};

static void test_normalize(void **state)
{
    struct sl_buf out = { 0 };
    size_t failed = 0;

    (void)state;
    for (size_t i = 0; i < SL_ARRAY_LEN(norm_cases); i++) {
        const struct norm_case *c = &norm_cases[i];
        int rc = rules_normalize_path(c->in, c->len, &out);
        bool ok = c->want ? rc == 0 && strcmp(out.p, c->want) == 0 && out.len == strlen(c->want)
                          : rc == -1;
        if (!ok) {
            print_error("norm_cases[%zu]: rc %d\n", i, rc);
            sl_test_print_escaped("  in  ", c->in, c->len);
            if (rc == 0)
                sl_test_print_escaped("  got ", out.p, out.len);
            sl_test_print_escaped("  want", c->want ? c->want : "(refused)",
                                  strlen(c->want ? c->want : "(refused)"));
            failed++;
        }
    }
    sl_buf_free(&out);
    assert_int_equal(failed, 0);
}

/* ===== globs ===== */

struct glob_case {
    const char *pattern, *path;
    bool match;
};

static const struct glob_case glob_cases[] = {
    /* never by prefix */
    { "/tmp/demo/**", "/tmp/demo", true },
    { "/tmp/demo/**", "/tmp/demo/a", true },
    { "/tmp/demo/**", "/tmp/demo/a/b/c", true },
    { "/tmp/demo/**", "/tmp/demo-evil/x", false },
    { "/tmp/demo/**", "/tmp/demo-evil", false },
    { "/tmp/demo/**", "/tmp/demox", false },
    { "/tmp/demo/**", "/tmp", false },
    { "/tmp/demo/**", "/", false },
    { "/tmp/demo", "/tmp/demo/a", false },
    { "/tmp/demo", "/tmp/demo", true },
    /* absolute patterns never match relative paths */
    { "/tmp/demo/**", "tmp/demo/x", false },
    { "/**", "a", false },
    { "/**", "/", true },
    { "/**", "/a/b", true },
    { "/", "/", true },
    { "/", "/a", false },
    /* "**" */
    { "**", "a", true },
    { "**", "/", true },
    { "**", ".", true },
    { "**", "/a/b/c", true },
    { "**/.ssh/**", "/home/u/.ssh/id_rsa", true },
    { "**/.ssh/**", "/.ssh", true },
    { "**/.ssh/**", ".ssh/config", true },
    { "**/.ssh/**", "~/.ssh/id", true },
    { "**/.ssh/**", "/home/u/.sshx/id", false },
    { "**/.ssh/**", "/home/u/x.ssh/id", false },
    { "**/.ssh", "/a/.ssh", true },
    { "**/.ssh", "/a/.ssh/b", false },
    { "/a/**/b", "/a/b", true },
    { "/a/**/b", "/a/x/y/b", true },
    { "/a/**/b", "/a/x/y/bc", false },
    { "/a/**/b", "/a/x/b/y", false },
    { "/a/**/b/**/c", "/a/b/c", true },
    { "/a/**/b/**/c", "/a/x/b/y/z/c", true },
    { "/a/**/b/**/c", "/a/x/c/y/b", false },
    /* "*" stays inside one segment, and never matches the root */
    { "/*", "/a", true },
    { "/*", "/", false },
    { "/*", "/a/b", false },
    { "*", "a", true },
    { "*", "/a", false },
    { "*", "/", false },
    { "*/a", "/a", false },
    { "?", "/", false },
    { "/tmp/*.txt", "/tmp/a.txt", true },
    { "/tmp/*.txt", "/tmp/.txt", true },
    { "/tmp/*.txt", "/tmp/d/a.txt", false },
    { "/tmp/*.txt", "/tmp/a.txt.bak", false },
    { "/a/*b*c", "/a/xxbyyc", true },
    { "/a/*b*c", "/a/xxbyy", false },
    { "/a/*/c", "/a/b/c", true },
    { "/a/*/c", "/a/b/x/c", false },
    /* "?" is one character, never '/' */
    { "/tmp/?", "/tmp/a", true },
    { "/tmp/?", "/tmp/ab", false },
    { "/tmp/?", "/tmp/", false },
    { "/tmp/a?b", "/tmp/a/b", false },
    { "/tmp/?", "/tmp/\xc3\xa9", true },            /* one character, two bytes */
    { "/tmp/??", "/tmp/\xc3\xa9", false },
    { "/tmp/*\xc3\xa9", "/tmp/x\xc3\xa9", true },
    /* bytes match exactly: no case folding */
    { "**/*.pem", "/k/KEY.PEM", false },
    { "/Tmp/**", "/tmp/a", false },
    { "/tmp/?", "/tmp/A", true },
    /* nothing else is special (the loader refuses these patterns: "check_glob") */
    { "/tmp/[ab]", "/tmp/a", false },
    { "/tmp/[ab]", "/tmp/[ab]", true },
    { "/tmp/a\\*", "/tmp/a\\*", true },
    { "/tmp/a\\*", "/tmp/a\\x", true },
};

static void test_glob(void **state)
{
    size_t failed = 0;

    (void)state;
    for (size_t i = 0; i < SL_ARRAY_LEN(glob_cases); i++) {
        const struct glob_case *c = &glob_cases[i];
        if (rules_glob_match(c->pattern, c->path) != c->match) {
            print_error("glob_cases[%zu]: %s vs %s: want %s\n", i, c->pattern, c->path,
                        c->match ? "match" : "no match");
            failed++;
        }
    }
    assert_int_equal(failed, 0);
}

/* Backtracking stays O(n*m): a pattern of many stars against a long path that almost
 * matches finishes at once. */
static void test_glob_no_blowup(void **state)
{
    enum { SEGS = 20000 };
    char *path = malloc(SEGS * 2 + 2), *flat = malloc(SEGS + 1);
    clock_t t0 = clock();

    (void)state;
    assert_non_null(path);
    assert_non_null(flat);
    for (size_t i = 0; i < SEGS; i++)
        memcpy(path + 2 * i, "/a", 2);
    path[SEGS * 2] = '\0';
    memset(flat, 'a', SEGS);
    flat[SEGS] = '\0';
    memcpy(flat, "/", 1);
    assert_false(rules_glob_match("/**/a/**/a/**/a/**/a/**/a/**/b", path));
    assert_true(rules_glob_match("/**/a/**/a/**/a/**/a/**/a/**/a", path));
    assert_false(rules_glob_match("/*a*a*a*a*a*a*a*a*a*a*b", flat));
    assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 5.0);
    free(path);
    free(flat);
}

/* ===== checks ===== */

static const char policy_text[] =
    "version: 1\n"
    "tools:\n"
    "  fs_delete:\n"
    "    action: confirm\n"
    "    args:\n"
    "      path:\n"
    "        deny_glob: [\"/etc/**\", \"**/.ssh/**\"]\n"
    "        allow_glob: [\"/tmp/demo/**\", \"/srv/*/pub/**\"]\n"
    "  fs_write:\n"
    "    action: allow\n"
    "    args:\n"
    "      path:\n"
    "        deny_glob: [\"/tmp/demo/secret/**\"]\n"
    "        confirm_glob: [\"/home/**\", \"**/*.sh\"]\n"
    "      content:\n"
    "        max_length: 10\n"
    "  move:\n"
    "    action: allow\n"
    "    args:\n"
    "      source: {confirm_glob: [\"/home/**\"]}\n"
    "      destination: {deny_glob: [\"/etc/**\"]}\n"
    "  name_tool:\n"
    "    action: allow\n"
    "    args:\n"
    "      name: {regex: \"[a-z0-9_]+\"}\n"
    "      pet: {regex: \"cat|dog\"}\n"
    "      odd: {regex: \"a)|(b)\"}\n"
    "      free: {regex: \"[^/]*\"}\n"
    "  resize:\n"
    "    action: allow\n"
    "    args:\n"
    "      count: {min: 0, max: 100}\n"
    "      scale: {min: -1.5, max: 2.5e1}\n"
    "      tiny: {max: 1e-300}\n"
    "  mode_tool:\n"
    "    action: allow\n"
    "    args:\n"
    "      mode: {enum: [fast, \"slow\", 1, true, \"1\"]}\n"
    "  read_many:\n"
    "    action: allow\n"
    "    args:\n"
    "      paths: {allow_glob: [\"/tmp/demo/**\"]}\n"
    "  spelt:\n"
    "    action: allow\n"
    "    args:\n"
    "      path:\n"
    "        deny_glob: [\"**/Vertr\u00e4ge/**\", \"**/Keys\", \"**/cafe\u0301\", \"**/\u1fb3\",\n"
    "                    \"**/J?rgen\", \"**/Stra\u00dfe\", \"**/id_rsa\", \"**/file\",\n"
    "                    \"**/*;1\"]\n"
    "        confirm_glob: [\"/home/J\u00fcrgen/**\"]\n"
    "        allow_glob: [\"/home/**\", \"/data/**\", \"/d\u00e9p\u00f4t/**\"]\n"
    "  rel_deny:\n"
    "    action: allow\n"
    "    args:\n"
    "      path:\n"
    "        deny_glob: [\"**/.ssh/**\"]\n"
    "  win_deny:\n"
    "    action: allow\n"
    "    args:\n"
    "      path:\n"
    "        deny_glob: [\"C:/Secret/**\"]\n"
    "  declared_only:\n"
    "    action: allow\n"
    "    message: \"Touch {path}\"\n"
    "    args:\n"
    "      path: {}\n";

struct check_case {
    const char *tool;
    const char *args;          /* JSON; NULL for no arguments */
    enum rules_outcome outcome;
    const char *rule;          /* exact */
    const char *why;           /* substring (exact "" for PASS) */
};

#define PASS RULES_PASS, "", ""
#define DENY RULES_DENY
#define ESC RULES_ESCALATE
#define R_DEL "tools.fs_delete.args.path."
#define R_WR "tools.fs_write.args."
#define R_NAME "tools.name_tool.args."
#define R_RS "tools.resize.args."
#define R_MODE "tools.mode_tool.args.mode.enum"
#define R_SP "tools.spelt.args.path."

static const struct check_case check_cases[] = {
    /* deny_glob and allow_glob, after normalization */
    { "fs_delete", "{\"path\":\"/tmp/demo/a.txt\"}", PASS },
    { "fs_delete", "{\"path\":\"/tmp/demo\"}", PASS },
    { "fs_delete", "{\"path\":\"/tmp//demo//a\"}", PASS },
    /* "//host": a host to WHATWG and urlsplit, a share on Windows, a directory to the kernel
     * and Python's http.server ("//etc/shadow#x" is /etc/shadow to it), and "/\\etc" is
     * "//etc" to Node's url.parse */
    { "fs_delete", "{\"path\":\"//localhost/etc/passwd\"}", DENY, R_DEL "deny_glob", "names a host (\"//host\"): servers differ" },
    { "fs_delete", "{\"path\":\"/tmp/demo/.ssh\\\\...\\\\..\\\\k\"}", DENY, R_DEL "deny_glob",
      "has a \"..\" out of a segment that some servers drop and others keep" },
    { "fs_delete", "{\"path\":\"/tmp/demo/x\\\\...\"}", PASS },
    /* WHATWG reads "\\" as "/" and "..." as a name: a directory "..." in /srv/a */
    { "fs_delete", "{\"path\":\"/srv/a\\\\...\\\\/pub/x\"}", DENY, R_DEL "allow_glob",
      "(as a URL \"/srv/a/.../pub/x\") matches no allow_glob" },
    { "fs_delete", "{\"path\":\"/\\\\localhost/etc/passwd\"}", DENY, R_DEL "deny_glob", "names a host (\"//host\"): servers differ" },
    { "move", "{\"destination\":\"/\\\\etc/passwd\"}", DENY,
      "tools.move.args.destination.deny_glob", "names a host (\"//host\"): servers differ" },
    { "move", "{\"destination\":\"//etc/shadow#x\"}", DENY,
      "tools.move.args.destination.deny_glob", "names a host (\"//host\"): servers differ" },
    { "move", "{\"destination\":\"/%2fetc/shadow%23\"}", DENY,
      "tools.move.args.destination.deny_glob", "percent-decoded names a host" },
    { "move", "{\"destination\":\" file://etc/shadow\"}", DENY,
      "tools.move.args.destination.deny_glob", "names a host" },
    { "move", "{\"destination\":\"file:///srv/x\"}", DENY,
      "tools.move.args.destination.deny_glob", "is not an absolute path" },
    /* WHATWG drops the value's leading and trailing spaces */
    { "move", "{\"destination\":\"////etc/shadow \"}", DENY,
      "tools.move.args.destination.deny_glob", "as a URL names a host" },
    /* a ";" parameter that runs into a "\\": urlparse cuts only the last segment's */
    { "spelt", "{\"path\":\"/data/x;\\\\..\\\\id_rsa/;z\"}", DENY, R_SP "deny_glob",
      "has a \";\" parameter with a \"\\\": servers differ on where it ends" },
    { "fs_delete", "{\"path\":\"/tmp/demo/a%23/../.s%73h/id#/../../x\"}", DENY,
      R_DEL "deny_glob[1]", "as a URL, then percent-decoded" },
    /* two separators first are a network share on Windows (\\\\tmp\\demo), outside /tmp/demo */
    { "fs_delete", "{\"path\":\"//tmp//demo//a\"}", DENY, R_DEL "deny_glob", "names a host (\"//host\"): servers differ" },
    { "fs_delete", "{\"path\":\"/tmp/demo/./a\"}", PASS },
    { "fs_delete", "{\"path\":\"/../../tmp/demo/a\"}", PASS },
    { "fs_delete", "{\"path\":\"/srv/www/pub/x\"}", PASS },
    { "fs_delete", "{\"path\":\"/etc/passwd\"}", DENY, R_DEL "deny_glob[0]",
      "path \"/etc/passwd\" matches deny_glob \"/etc/**\"" },
    { "fs_delete", "{\"path\":\"/tmp/demo/../../etc/passwd\"}", DENY, R_DEL "deny_glob[0]",
      "path \"/tmp/demo/../../etc/passwd\" (normalized \"/etc/passwd\") matches deny_glob" },
    { "fs_delete", "{\"path\":\"/tmp/demo/.ssh/id\"}", DENY, R_DEL "deny_glob[1]",
      "matches deny_glob \"**/.ssh/**\"" },
    { "fs_delete", "{\"path\":\"~/.ssh/id\"}", DENY, R_DEL "deny_glob", "is not an absolute path" },
    /* macOS and Windows read ".SSH" as ".ssh": deny_glob meets every case of the name (the
     * long s folds to "s"); allow_glob matches only the case it names */
    { "fs_delete", "{\"path\":\"/tmp/demo/.SSH/id\"}", DENY, R_DEL "deny_glob[1]",
      "path \"/tmp/demo/.SSH/id\" matches deny_glob \"**/.ssh/**\"" },
    { "fs_delete", "{\"path\":\"/tmp/demo/.sSh/id\"}", DENY, R_DEL "deny_glob[1]", "matches" },
    { "fs_delete", "{\"path\":\"/tmp/demo/.\u017fsh/id\"}", DENY, R_DEL "deny_glob[1]",
      "matches" },
    { "fs_delete", "{\"path\":\"/ETC/passwd\"}", DENY, R_DEL "deny_glob[0]", "matches" },
    { "fs_delete", "{\"path\":\"/tmp/demo/.sshx/id\"}", PASS },
    { "fs_delete", "{\"path\":\"/TMP/demo/a\"}", DENY, R_DEL "allow_glob", "no allow_glob" },
    { "fs_delete", "{\"path\":\"/tmp/demo-evil/x\"}", DENY, R_DEL "allow_glob",
      "path \"/tmp/demo-evil/x\" matches no allow_glob" },
    { "fs_delete", "{\"path\":\"/tmp/demo/link/../../etc\"}", DENY, R_DEL "allow_glob",
      "(normalized \"/tmp/etc\")" },
    { "fs_delete", "{\"path\":\"/srv/www/private/x\"}", DENY, R_DEL "allow_glob", "no allow_glob" },
    { "fs_delete", "{\"path\":\"a.txt\"}", DENY, R_DEL "deny_glob", "is not an absolute path" },
    { "fs_delete", "{\"path\":\"tmp/demo/a\"}", DENY, R_DEL "deny_glob", "is not an absolute path" },
    { "fs_delete", "{\"path\":\"../tmp/demo/a\"}", DENY, R_DEL "deny_glob", "is not an absolute path" },
    /* refused whatever the globs say: control characters, empty */
    { "fs_delete", "{\"path\":\"/tmp/demo/a\\nb\"}", DENY, R_DEL "deny_glob",
      "path \"/tmp/demo/a\\x0ab\" is empty or has a control character" },
    { "fs_delete", "{\"path\":\"/tmp/demo/a\\u0000b\"}", DENY, R_DEL "deny_glob",
      "control character" },
    { "fs_delete", "{\"path\":\"\"}", DENY, R_DEL "deny_glob", "is empty" },
    /* hostile bytes in why are escaped */
    { "fs_delete", "{\"path\":\"/etc/\\u202e\\u001b[2J\"}", DENY, R_DEL "deny_glob",
      "\\x1b[2J" },
    { "fs_delete", "{\"path\":\"/etc/\\u202ex\"}", DENY, R_DEL "deny_glob[0]",
      "\"/etc/\\xe2\\x80\\xaex\"" },
    /* wrong types; absent arguments are not checked */
    { "fs_delete", "{\"path\":5}", DENY, R_DEL "deny_glob", "path must be a string, got a number" },
    { "fs_delete", "{\"path\":null}", DENY, R_DEL "deny_glob", "got null" },
    { "fs_delete", "{\"path\":{\"p\":\"/tmp/demo/a\"}}", DENY, R_DEL "deny_glob", "got an object" },
    { "fs_delete", "{\"path\":true}", DENY, R_DEL "deny_glob", "got a boolean" },
    { "fs_delete", "{}", PASS },
    { "fs_delete", NULL, PASS },
    /* a key that folds onto a ruled argument: some servers read it as that argument */
    { "fs_delete", "{\"Path\":\"/etc/passwd\"}", DENY, R_DEL "name", "only in letter case" },
    { "fs_delete", "{\"pa\\u017fh\":\"/etc/x\"}", PASS },
    { "fs_delete", "{\"p\\u0041th\":\"/etc/x\"}", DENY, R_DEL "name", "only in letter case" },
    { "fs_delete", "[\"/etc/passwd\"]", DENY, "tools.fs_delete.args",
      "the arguments are an array, not an object" },
    /* tools without rules, and tools the policy does not name */
    { "declared_only", "{\"path\":\"/etc/passwd\"}", PASS },
    { "unnamed", "{\"path\":\"/etc/passwd\"}", PASS },
    { "unnamed", "[1]", PASS },
    /* confirm_glob escalates; deny wins */
    { "fs_write", "{\"path\":\"/tmp/x\",\"content\":\"hi\"}", PASS },
    { "fs_write", "{\"path\":\"/home/u/x\"}", ESC, R_WR "path.confirm_glob[0]",
      "path \"/home/u/x\" matches confirm_glob \"/home/**\"" },
    { "fs_write", "{\"path\":\"/tmp/run.sh\"}", ESC, R_WR "path.confirm_glob[1]", "\"**/*.sh\"" },
    { "fs_write", "{\"path\":\"/tmp/demo/secret/run.sh\"}", DENY, R_WR "path.deny_glob[0]",
      "deny_glob" },
    { "fs_write", "{\"path\":\"/home/u/x\",\"content\":\"01234567890\"}", DENY,
      R_WR "content.max_length", "content is 11 bytes, more than max_length 10" },
    { "move", "{\"source\":\"/home/u/a\",\"destination\":\"/etc/a\"}", DENY,
      "tools.move.args.destination.deny_glob[0]", "destination \"/etc/a\"" },
    { "move", "{\"destination\":\"/etc/a\",\"source\":\"/home/u/a\"}", DENY,
      "tools.move.args.destination.deny_glob[0]", "destination" },
    { "move", "{\"source\":\"/home/u/a\",\"destination\":\"/tmp/a\"}", ESC,
      "tools.move.args.source.confirm_glob[0]", "source" },
    /* max_length counts bytes */
    { "fs_write", "{\"content\":\"0123456789\"}", PASS },
    { "fs_write", "{\"content\":\"\"}", PASS },
    { "fs_write", "{\"content\":\"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\"}", PASS },
    { "fs_write", "{\"content\":\"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9a\"}", DENY,
      R_WR "content.max_length", "11 bytes" },
    { "fs_write", "{\"content\":[\"x\"]}", PASS },  /* an array: each element */
    { "fs_write", "{\"content\":12345678901}", DENY, R_WR "content.max_length",
      "must be a string, got a number" },
    /* regex: the whole value must match */
    { "name_tool", "{\"name\":\"abc_9\"}", PASS },
    { "name_tool", "{\"name\":\"abc/../x\"}", DENY, R_NAME "name.regex",
      "name \"abc/../x\" does not match regex \"[a-z0-9_]+\"" },
    { "name_tool", "{\"name\":\"ABC\"}", DENY, R_NAME "name.regex", "does not match" },
    { "name_tool", "{\"name\":\"\"}", DENY, R_NAME "name.regex", "does not match" },
    { "name_tool", "{\"name\":\"abc\\n\"}", DENY, R_NAME "name.regex", "does not match" },
    { "name_tool", "{\"name\":\"abc\\u0000x\"}", DENY, R_NAME "name.regex", "holds a NUL byte" },
    { "name_tool", "{\"name\":1}", DENY, R_NAME "name.regex", "must be a string" },
    { "name_tool", "{\"pet\":\"cat\"}", PASS },
    { "name_tool", "{\"pet\":\"dog\"}", PASS },
    { "name_tool", "{\"pet\":\"catdog\"}", DENY, R_NAME "pet.regex", "does not match" },
    { "name_tool", "{\"pet\":\"hotdog\"}", DENY, R_NAME "pet.regex", "does not match" },
    { "name_tool", "{\"pet\":\"cats\"}", DENY, R_NAME "pet.regex", "does not match" },
    { "name_tool", "{\"odd\":\"b\"}", PASS },
    { "name_tool", "{\"odd\":\"a)\"}", PASS },      /* glibc: a lone ')' is a literal */
    { "name_tool", "{\"odd\":\"ab\"}", DENY, R_NAME "odd.regex", "does not match" },
    { "name_tool", "{\"odd\":\"a)xyz\"}", DENY, R_NAME "odd.regex", "does not match" },
    /* a NUL would pass "[^/]*" (the matcher takes it as a byte); a server in C reads up to it */
    { "name_tool", "{\"free\":\"a b\\u00e9\"}", PASS },
    { "name_tool", "{\"free\":\"a/b\"}", DENY, R_NAME "free.regex", "does not match" },
    { "name_tool", "{\"free\":\"a\\u0000/x\"}", DENY, R_NAME "free.regex", "holds a NUL byte" },
    { "name_tool", "{\"free\":\"a\\u0000b\"}", DENY, R_NAME "free.regex", "holds a NUL byte" },
    /* numbers: exact decimal comparison */
    { "resize", "{\"count\":0}", PASS },
    { "resize", "{\"count\":-0}", PASS },
    { "resize", "{\"count\":100}", PASS },
    { "resize", "{\"count\":100.0}", PASS },
    { "resize", "{\"count\":1e2}", PASS },
    { "resize", "{\"count\":1E+2}", PASS },
    { "resize", "{\"count\":0.00000001e10}", PASS },
    { "resize", "{\"count\":1e-400}", PASS },
    { "resize", "{\"count\":100.0000000000000001}", DENY, R_RS "count.max",
      "count 100.0000000000000001 is above max 100" },
    { "resize", "{\"count\":1e3}", DENY, R_RS "count.max", "above max" },
    { "resize", "{\"count\":1e400}", DENY, R_RS "count.max", "above max" },
    { "resize", "{\"count\":-1}", DENY, R_RS "count.min", "count -1 is below min 0" },
    { "resize", "{\"count\":-1e-400}", DENY, R_RS "count.min", "below min" },
    { "resize", "{\"count\":\"5\"}", DENY, R_RS "count.min", "count must be a number, got a string" },
    { "resize", "{\"count\":true}", DENY, R_RS "count.min", "got a boolean" },
    { "resize", "{\"count\":null}", DENY, R_RS "count.min", "got null" },
    { "resize", "{\"count\":[1,2,101]}", DENY, R_RS "count.max", "count[2] 101 is above max" },
    { "resize", "{\"scale\":-1.5}", PASS },
    { "resize", "{\"scale\":-15e-1}", PASS },
    { "resize", "{\"scale\":25}", PASS },
    { "resize", "{\"scale\":-1.51}", DENY, R_RS "scale.min", "below min -1.5" },
    { "resize", "{\"scale\":25.0001}", DENY, R_RS "scale.max", "above max 2.5e1" },
    { "resize", "{\"tiny\":0}", PASS },
    { "resize", "{\"tiny\":-1e999}", PASS },
    { "resize", "{\"tiny\":1e-300}", PASS },
    { "resize", "{\"tiny\":1.0000001e-300}", DENY, R_RS "tiny.max", "above max" },
    { "resize", "{\"tiny\":0.1}", DENY, R_RS "tiny.max", "above max" },
    /* enum: type and value */
    { "mode_tool", "{\"mode\":\"fast\"}", PASS },
    { "mode_tool", "{\"mode\":\"slow\"}", PASS },
    { "mode_tool", "{\"mode\":1}", PASS },
    { "mode_tool", "{\"mode\":1.0}", PASS },
    { "mode_tool", "{\"mode\":\"1\"}", PASS },
    { "mode_tool", "{\"mode\":true}", PASS },
    { "mode_tool", "{\"mode\":[\"fast\",1]}", PASS },
    { "mode_tool", "{\"mode\":\"FAST\"}", DENY, R_MODE, "mode \"FAST\" is not one of the enum" },
    { "mode_tool", "{\"mode\":\"fast \"}", DENY, R_MODE, "not one of" },
    { "mode_tool", "{\"mode\":\"true\"}", DENY, R_MODE, "not one of" },
    { "mode_tool", "{\"mode\":false}", DENY, R_MODE, "mode false is not one of" },
    { "mode_tool", "{\"mode\":2}", DENY, R_MODE, "mode 2 is not" },
    { "mode_tool", "{\"mode\":0}", DENY, R_MODE, "mode 0 is not" }, /* below, not only above */
    { "mode_tool", "{\"mode\":null}", DENY, R_MODE, "mode null is not" },
    { "mode_tool", "{\"mode\":{}}", DENY, R_MODE, "mode {} is not" },
    { "mode_tool", "{\"mode\":[\"fast\",\"x\"]}", DENY, R_MODE, "mode[1] \"x\" is not" },
    /* arrays of paths: every element */
    { "read_many", "{\"paths\":[\"/tmp/demo/a\",\"/tmp/demo/b/../c\"]}", PASS },
    { "read_many", "{\"paths\":[]}", PASS },
    { "read_many", "{\"paths\":[\"/tmp/demo/a\",\"/tmp/demo/../../etc/x\"]}", DENY,
      "tools.read_many.args.paths.allow_glob", "paths[1] \"/tmp/demo/../../etc/x\"" },
    { "read_many", "{\"paths\":[[\"/tmp/demo/a\"]]}", DENY, "tools.read_many.args.paths.allow_glob",
      "paths[0] must be a string, got an array" },
    { "read_many", "{\"paths\":\"/tmp/demo/a\"}", PASS },
    /* deny_glob and confirm_glob match every spelling of a name that Unicode composes alike
     * (the reference filesystem server finds "Vertra\u0308ge" as the directory "Vertr\u00e4ge");
     * allow_glob matches only the spelling it names */
    { "spelt", "{\"path\":\"/data/Vertr\u00e4ge/a\"}", DENY, R_SP "deny_glob[0]", "matches" },
    { "spelt", "{\"path\":\"/data/Vertra\u0308ge/a\"}", DENY, R_SP "deny_glob[0]",
      "\"/data/Vertra\\xcc\\x88ge/a\" matches deny_glob" },
    { "spelt", "{\"path\":\"/data/\u212aeys\"}", DENY, R_SP "deny_glob[1]", "matches" },
    { "spelt", "{\"path\":\"/data/keys\"}", DENY, R_SP "deny_glob[1]", "matches" },
    { "spelt", "{\"path\":\"/data/KEYS\"}", DENY, R_SP "deny_glob[1]", "matches" },
    { "spelt", "{\"path\":\"/data/keyz\"}", PASS },
    /* case and composition together: capital, decomposed, either order of the two */
    { "spelt", "{\"path\":\"/data/VERTRA\u0308GE/a\"}", DENY, R_SP "deny_glob[0]", "matches" },
    { "spelt", "{\"path\":\"/data/vertr\u00c4ge/a\"}", DENY, R_SP "deny_glob[0]", "matches" },
    { "spelt", "{\"path\":\"/data/CAF\u00c9\"}", DENY, R_SP "deny_glob[2]", "matches" },
    { "spelt", "{\"path\":\"/data/CAFE\u0301\"}", DENY, R_SP "deny_glob[2]", "matches" },
    { "spelt", "{\"path\":\"/home/J\u00dcRGEN/x\"}", ESC, R_SP "confirm_glob[0]", "matches" },
    { "spelt", "{\"path\":\"/home/JU\u0308rgen/x\"}", ESC, R_SP "confirm_glob[0]", "matches" },
    { "spelt", "{\"path\":\"/HOME/J\u00fcrgen/x\"}", DENY, R_SP "allow_glob", "no allow_glob" },
    /* folded after decomposing: the ypogegrammeni of "\u1fb3" folds to an iota only once apart */
    { "spelt", "{\"path\":\"/data/\u03b1\u0345\"}", DENY, R_SP "deny_glob[3]", "matches" },
    { "spelt", "{\"path\":\"/data/\u1fbc\"}", DENY, R_SP "deny_glob[3]", "matches" },
    { "spelt", "{\"path\":\"/data/\u03b1\"}", PASS },
    /* composed again after folding: '?' is one character of the composed name */
    { "spelt", "{\"path\":\"/data/Ju\u0308rgen\"}", DENY, R_SP "deny_glob[4]", "matches" },
    { "spelt", "{\"path\":\"/data/JU\u0308RGEN\"}", DENY, R_SP "deny_glob[4]", "matches" },
    { "spelt", "{\"path\":\"/data/Juergen\"}", PASS },
    { "spelt", "{\"path\":\"/data/caf\u00e9\"}", DENY, R_SP "deny_glob[2]", "matches" },
    { "spelt", "{\"path\":\"/data/cafe\u0301\"}", DENY, R_SP "deny_glob[2]", "matches" },
    { "spelt", "{\"path\":\"/data/cafe\"}", PASS },
    { "spelt", "{\"path\":\"/home/Ju\u0308rgen/x\"}", ESC, R_SP "confirm_glob[0]", "matches" },
    { "spelt", "{\"path\":\"/home/J\u00fcrgen/x\"}", ESC, R_SP "confirm_glob[0]", "matches" },
    { "spelt", "{\"path\":\"/home/Jurgen/x\"}", PASS },
    { "spelt", "{\"path\":\"/\\u0064ata/x\"}", PASS },
    { "spelt", "{\"path\":\"/d\\u00e9p\\u00f4t/x\"}", PASS },
    /* full folding, as Linux's case-insensitive directories fold names: "\u00df", its capital
     * "\u1e9e" and "SS" are "ss"; the ligature "\ufb01" is "fi" */
    { "spelt", "{\"path\":\"/data/STRASSE\"}", DENY, R_SP "deny_glob[5]", "matches" },
    { "spelt", "{\"path\":\"/data/strasse\"}", DENY, R_SP "deny_glob[5]", "matches" },
    { "spelt", "{\"path\":\"/data/Stra\u1e9ee\"}", DENY, R_SP "deny_glob[5]", "matches" },
    { "spelt", "{\"path\":\"/data/strase\"}", PASS },
    { "spelt", "{\"path\":\"/data/\ufb01le\"}", DENY, R_SP "deny_glob[7]", "matches" },
    /* NTFS and FAT compare names by their capitals: the dotless i's is "I", as "i"'s is */
    { "spelt", "{\"path\":\"/data/\u0131d_rsa\"}", DENY, R_SP "deny_glob[6]", "matches" },
    { "spelt", "{\"path\":\"/data/\u0131D_RSA\"}", DENY, R_SP "deny_glob[6]", "matches" },
    { "spelt", "{\"path\":\"/data/\u0131d_rs\"}", PASS },
    /* HFS+ ignores zero-width joiners, bidi controls and the BOM in a name (git's CVE-2014-9390) */
    { "spelt", "{\"path\":\"/data/id\u200c_rsa\"}", DENY, R_SP "deny_glob[6]", "matches" },
    { "spelt", "{\"path\":\"/data/\ufeffid_r\u202es\u200fa\"}", DENY, R_SP "deny_glob[6]",
      "matches" },
    { "spelt", "{\"path\":\"/data/STRA\u206a\u00dfE\"}", DENY, R_SP "deny_glob[5]", "matches" },
    /* Windows reads "\\" as "/" too: a deny_glob or confirm_glob meets either reading, the
     * allow_globs must hold both (a name with a backslash stays allowed under them) */
    { "spelt", "{\"path\":\"/data\\\\x\\\\id_rsa\"}", DENY, R_SP "deny_glob[6]",
      "\"/data\\\\x\\\\id_rsa\" (on Windows \"/data/x/id_rsa\") matches deny_glob" },
    { "spelt", "{\"path\":\"/data/..\\\\..\\\\etc\\\\passwd\"}", DENY, R_SP "allow_glob",
      "on Windows \"/etc/passwd\") matches no allow_glob" },
    { "spelt", "{\"path\":\"/data/a\\\\b\"}", PASS },
    { "spelt", "{\"path\":\"/home/a\\\\..\\\\J\u00fcrgen\\\\x\"}", ESC, R_SP "confirm_glob[0]",
      "matches" },
    { "spelt", "{\"path\":\"/home/a\\\\J\u00fcrgen\\\\x\"}", PASS },
    /* and drops a segment's trailing dots and spaces, and reads a stream as its file */
    { "spelt", "{\"path\":\"/data/id_rsa.\"}", DENY, R_SP "deny_glob[6]",
      "\"/data/id_rsa.\" (on Windows \"/data/id_rsa\") matches deny_glob" },
    { "spelt", "{\"path\":\"/data/id_rsa . .\"}", DENY, R_SP "deny_glob[6]", "matches" },
    { "spelt", "{\"path\":\"/data/id_rsa.::$DATA\"}", DENY, R_SP "deny_glob[6]", "matches" },
    { "spelt", "{\"path\":\"/data/x1:$I30:$INDEX_ALLOCATION/id_rsa\"}", DENY, R_SP "deny_glob[6]",
      "matches" },
    /* a stream after a letter is refused first: a letter and ":" is a drive to nturl2path */
    { "spelt", "{\"path\":\"/data/id_rsa::$DATA\"}", DENY, R_SP "deny_glob",
      "servers read as a drive" },
    { "spelt", "{\"path\":\"/data/.. /etc/passwd\"}", DENY, R_SP "allow_glob",
      "on Windows \"/etc/passwd\") matches no allow_glob" },
    { "spelt", "{\"path\":\"/data/v1.2./a.b\"}", PASS },
    { "spelt", "{\"path\":\"/data/id_rsa.pub\"}", PASS },
    { "spelt", "{\"path\":\"/de\\u0301po\\u0302t/x\"}", DENY, R_SP "allow_glob", "no allow_glob" },
    /* a server that takes URIs decodes "%XX" (once, or twice behind a proxy that decoded too):
     * the decoded readings meet deny and confirm globs and must be under the allow_globs */
    { "spelt", "{\"path\":\"/data/%69d_rsa\"}", DENY, R_SP "deny_glob[6]",
      "\"/data/%69d_rsa\" (percent-decoded \"/data/id_rsa\") matches deny_glob" },
    { "spelt", "{\"path\":\"/data/%49D_RS%41\"}", DENY, R_SP "deny_glob[6]", "matches" },
    { "spelt", "{\"path\":\"/data/%2569d_rsa\"}", DENY, R_SP "deny_glob[6]",
      "(percent-decoded twice \"/data/id_rsa\") matches deny_glob" },
    { "spelt", "{\"path\":\"/data/x%5cid_rsa\"}", DENY, R_SP "deny_glob[6]",
      "(percent-decoded, on Windows \"/data/x/id_rsa\") matches deny_glob" },
    /* an escaped "/", "\\", "." or " " in a path with "..": servers that decode before and after
     * they resolve ".." land in different places, so none of them is taken for the others */
    { "spelt", "{\"path\":\"/data/%2e%2E/etc/passwd\"}", DENY, R_SP "deny_glob",
      "percent-decoded has \"..\" and an escaped" },
    { "spelt", "{\"path\":\"/data/%5c..%5C..%5cetc\"}", DENY, R_SP "deny_glob", "servers differ" },
    { "spelt", "{\"path\":\"/data/q%2fq/../%2e%2e/etc/passwd\"}", DENY, R_SP "deny_glob",
      "servers differ" },
    { "spelt", "{\"path\":\"/data/a%2fb/../x\"}", DENY, R_SP "deny_glob", "servers differ" },
    { "spelt", "{\"path\":\"/data/%69d_rsa/x/%2e%2e/..\"}", DENY, R_SP "deny_glob",
      "servers differ" },
    { "spelt", "{\"path\":\"/data/x/..%20/../..\"}", DENY, R_SP "deny_glob", "servers differ" },
    { "spelt", "{\"path\":\"/data/%252e%252e/etc\"}", DENY, R_SP "deny_glob",
      "percent-decoded twice has" },
    { "spelt", "{\"path\":\"/data/a%2fb/x\"}", PASS },
    /* a server that reads its argument as a URL opens the path before "?" or "#", without a
     * segment's ";" parameters, and under "//host" the path after the host */
    { "spelt", "{\"path\":\"/data/id_rsa#x\"}", DENY, R_SP "deny_glob[6]",
      "\"/data/id_rsa#x\" (as a URL \"/data/id_rsa\") matches deny_glob" },
    { "spelt", "{\"path\":\"/data/id_rsa?/../x\"}", DENY, R_SP "deny_glob[6]", "as a URL" },
    { "spelt", "{\"path\":\"/data/id_rsa;x\"}", DENY, R_SP "deny_glob[6]", "as a URL" },
    { "spelt", "{\"path\":\"/data/id_rsa%23x\"}", DENY, R_SP "deny_glob[6]",
      "(percent-decoded, as a URL \"/data/id_rsa\")" },
    { "spelt", "{\"path\":\"/etc/passwd#/../../data/x\"}", DENY, R_SP "allow_glob",
      "(as a URL \"/etc/passwd\") matches no allow_glob" },
    { "spelt", "{\"path\":\"/data/file;v=1\"}", DENY, R_SP "deny_glob[7]",
      "(as a URL without ;params \"/data/file\") matches deny_glob" },
    { "spelt", "{\"path\":\"/data/v;1#x\"}", DENY, R_SP "deny_glob[8]",
      "(as a URL \"/data/v;1\") matches deny_glob" },
    /* "..;x" is ".." to a servlet container, a name to the others: refused */
    { "spelt", "{\"path\":\"/data/..;/etc/passwd\"}", DENY, R_SP "deny_glob",
      "\"/data/..;/etc/passwd\" has a \"..;\" segment: servers differ" },
    { "spelt", "{\"path\":\"/data/id_rsa/..;a/../../id_rsa;b\"}", DENY, R_SP "deny_glob",
      "has a \"..;\" segment" },
    { "spelt", "{\"path\":\"/data/%2e%2E;a/x\"}", DENY, R_SP "deny_glob",
      "percent-decoded has a \"..;\" segment" },
    { "spelt", "{\"path\":\"/data/a..;b/x;..\"}", PASS },
    /* WHATWG keeps ";" and reads "\\" as "/" in a file URL, and "..." is a name to it */
    { "move", "{\"destination\":\"/etc/./passwd#/../../..\"}", DENY,
      "tools.move.args.destination.deny_glob[0]", "(as a URL \"/etc/passwd\") matches deny_glob" },
    { "spelt", "{\"path\":\"/data/Keys\\\\...\\\\..\"}", DENY, R_SP "deny_glob", "servers differ" },
    /* a URL parser cuts at "?" and "#" before it decodes: "%23" is no cut to it */
    { "spelt", "{\"path\":\"/home/u/a%23/../.ssh/id_rs%61#x\"}", DENY, R_SP "deny_glob[6]",
      "(as a URL, then percent-decoded \"/home/u/.ssh/id_rsa\") matches deny_glob" },
    { "spelt", "{\"path\":\"/home/u/a%3f/../id_rs%61?x\"}", DENY, R_SP "deny_glob[6]",
      "as a URL, then percent-decoded" },
    /* decoded, read as a URL, and its path decoded again: unquote(urlsplit(unquote(v)).path) */
    { "spelt", "{\"path\":\"/home/u/q%2523/../id_rs%2561%23z\"}", DENY, R_SP "deny_glob[6]",
      "(percent-decoded, as a URL, then percent-decoded \"/home/u/id_rsa\") matches deny_glob" },
    { "spelt", "{\"path\":\"/home/u/q%2523/id_rs%2561%23z\"}", DENY, R_SP "deny_glob[6]",
      "(percent-decoded, as a URL, then percent-decoded \"/home/u/q#/id_rsa\")" },
    { "spelt", "{\"path\":\"/data/a%252fb/..%23x\"}", DENY, R_SP "deny_glob",
      "\" percent-decoded, as a URL, then percent-decoded has \"..\"" },
    /* Python's urlsplit ends a host only at "/" (WHATWG at "\\" too), and keeps "\\" */
    { "move", "{\"destination\":\"//h\\\\x/etc/passwd\"}", DENY,
      "tools.move.args.destination.deny_glob", "names a host (\"//host\"): servers differ" },
    { "move", "{\"destination\":\"//h/x\\\\..\\\\..\\\\etc\\\\passwd\"}", DENY,
      "tools.move.args.destination.deny_glob", "names a host (\"//host\"): servers differ" },
    { "move", "{\"destination\":\"/srv/a\\\\b\"}", PASS },
    /* ".." out of a segment some servers drop and others keep: "" (WHATWG keeps it, so
     * "/etc//../x" is /etc/x to it), "...", ". ", ".:s" (Windows drops them, path.win32 keeps
     * them), ".;x" and ";x" (urlparse cuts only the last segment's parameters) */
    { "move", "{\"destination\":\"/etc//../passwd\"}", DENY,
      "tools.move.args.destination.deny_glob", "servers differ" },
    { "fs_delete", "{\"path\":\"/tmp/demo/.ssh\\\\\\\\..\\\\id\"}", DENY, R_DEL "deny_glob",
      "servers differ" },
    { "move", "{\"destination\":\"/x\\\\a#\\\\..\\\\..\\\\etc\\\\...\\\\..\\\\passwd\"}", DENY,
      "tools.move.args.destination.deny_glob", "servers differ" },
    { "fs_delete", "{\"path\":\"/tmp/demo/a#\\\\...\\\\..\\\\..\\\\..\\\\tmp\\\\demo\\\\x\"}", DENY,
      R_DEL "deny_glob", "servers differ" },
    { "spelt", "{\"path\":\"/data/;x/../id_rsa;y\"}", DENY, R_SP "deny_glob", "servers differ" },
    { "spelt", "{\"path\":\"/data/.;x/../id_rsa;y\"}", DENY, R_SP "deny_glob", "servers differ" },
    { "spelt", "{\"path\":\"/data/. /../x\"}", DENY, R_SP "deny_glob", "servers differ" },
    { "spelt", "{\"path\":\"/data/a/.:s/../x\"}", DENY, R_SP "deny_glob", "servers differ" },
    { "spelt", "{\"path\":\"/data/a/.. /../x\"}", DENY, R_SP "deny_glob", "servers differ" },
    { "move", "{\"destination\":\"///srv/a/../x\"}", PASS },
    { "move", "{\"destination\":\"/srv/a//b/../../x\"}", DENY,
      "tools.move.args.destination.deny_glob", "servers differ" },
    { "spelt", "{\"path\":\"/data//a/b/..\"}", PASS },
    { "spelt", "{\"path\":\"/data/a/../b//c/./x\"}", PASS },
    { "spelt", "{\"path\":\"/data/a..b/../x\"}", PASS },
    /* "..": only a segment of dots (and spaces, up to a colon) is resolved */
    { "spelt", "{\"path\":\"/home/u/My%20Documents/notes..txt\"}", PASS },
    { "spelt", "{\"path\":\"/home/u/a%2fb/..txt/x\"}", PASS },
    { "spelt", "{\"path\":\"/data/x%20/.. /y\"}", DENY, R_SP "deny_glob", "servers differ" },
    { "spelt", "{\"path\":\"/data/x%20/..:s/y\"}", DENY, R_SP "deny_glob", "servers differ" },
    { "spelt", "{\"path\":\"/data/x%20/.../y\"}", DENY, R_SP "deny_glob", "servers differ" },
    { "spelt", "{\"path\":\"/data/a#b\"}", PASS },
    { "spelt", "{\"path\":\"/data/x;v=1/y?q=1\"}", PASS },
    /* an escape left after two decodings is a name sluice did not read */
    { "spelt", "{\"path\":\"/data/%25252e%25252essh/id\"}", DENY, R_SP "deny_glob",
      "percent-decoded twice still has an escape" },
    { "spelt", "{\"path\":\"/data/%2525zz%25%2\"}", PASS },
    { "spelt", "{\"path\":\"/data/a%20b/../x\"}", DENY, R_SP "deny_glob", "servers differ" },
    { "spelt", "{\"path\":\"/data/a%41b/../x\"}", PASS },
    { "spelt", "{\"path\":\"/home/J%C3%BCrgen/x\"}", ESC, R_SP "confirm_glob[0]",
      "(percent-decoded \"/home/J\\xc3\\xbcrgen/x\") matches confirm_glob" },
    { "spelt", "{\"path\":\"/data/%00x\"}", DENY, R_SP "deny_glob",
      "percent-decoded has a control character" },
    { "spelt", "{\"path\":\"/data/%2500\"}", DENY, R_SP "deny_glob",
      "percent-decoded twice has a control character" },
    { "spelt", "{\"path\":\"/data/%ff\"}", DENY, R_SP "deny_glob", "percent-decoded is not UTF-8" },
    { "spelt", "{\"path\":\"/data/100%25.txt\"}", PASS },
    { "spelt", "{\"path\":\"/data/50%\"}", PASS },
    { "spelt", "{\"path\":\"/data/%zz%4\"}", PASS },
    { "spelt", "{\"path\":\"/data/caf%C3%A9\"}", DENY, R_SP "deny_glob[2]", "matches" },
    { "spelt", "{\"path\":\"/data/na%C3%AFve\"}", PASS },
    /* A letter and ":" or "|" anywhere but the one drive sluice reads (review, 2026-12-07):
     * urlsplit, new URL and url.parse drop any scheme ("ab:.ssh/id_rsa" is .ssh/id_rsa);
     * url.parse reads a host after "FILE:" or "x:" ("x:y%2essh/id_rsa": host y, .ssh/id_rsa);
     * nturl2path (url2pathname on Windows) makes the letter before the one ":" or "|" a drive
     * ("/tmp/demo/c:/etc/passwd" is C:\etc\passwd); ntpath.normpath makes "./c:.ssh/id_rsa"
     * drive c: and .ssh\id_rsa. */
    { "rel_deny", "{\"path\":\"notes/a.txt\"}", PASS },
    { "rel_deny", "{\"path\":\"file:.ssh/id_rsa\"}", DENY, "tools.rel_deny.args.path.deny_glob[0]",
      "matches deny_glob" },
    { "rel_deny", "{\"path\":\"ab:.ssh/id_rsa\"}", DENY, "tools.rel_deny.args.path.deny_glob",
      "servers read as a drive, a URL scheme or a name" },
    { "rel_deny", "{\"path\":\"mcp:.ssh/authorized_keys\"}", DENY,
      "tools.rel_deny.args.path.deny_glob", "servers read as a drive" },
    { "rel_deny", "{\"path\":\"FILE:x%2essh/id_rsa\"}", DENY, "tools.rel_deny.args.path.deny_glob",
      "servers read as a drive" },
    { "rel_deny", "{\"path\":\"x:y%2essh/id_rsa\"}", DENY, "tools.rel_deny.args.path.deny_glob",
      "servers read as a drive" },
    { "read_many", "{\"paths\":[\"/tmp/demo/c:/etc/passwd\"]}", DENY,
      "tools.read_many.args.paths.allow_glob", "servers read as a drive" },
    { "read_many", "{\"paths\":[\"/tmp/demo/c|/etc/passwd\"]}", DENY,
      "tools.read_many.args.paths.allow_glob", "servers read as a drive" },
    { "move", "{\"destination\":\"/tmp/c:/etc/passwd\"}", DENY,
      "tools.move.args.destination.deny_glob", "servers read as a drive" },
    { "fs_delete", "{\"path\":\"/tmp/demo/c:.ssh/id\"}", DENY, R_DEL "deny_glob",
      "servers read as a drive" },
    { "rel_deny", "{\"path\":\"./c:.ssh/id_rsa\"}", DENY, "tools.rel_deny.args.path.deny_glob",
      "servers read as a drive" },
    { "rel_deny", "{\"path\":\"a/../c:.ssh/id_rsa\"}", DENY, "tools.rel_deny.args.path.deny_glob",
      "servers read as a drive" },
    { "rel_deny", "{\"path\":\"c:.ssh/id_rsa\"}", DENY, "tools.rel_deny.args.path.deny_glob",
      "servers read as a drive" },
    { "rel_deny", "{\"path\":\"notes/a:b.txt\"}", DENY, "tools.rel_deny.args.path.deny_glob",
      "servers read as a drive" },
    { "rel_deny", "{\"path\":\"notes/%61%3a.ssh/k\"}", DENY, "tools.rel_deny.args.path.deny_glob",
      "percent-decoded" },
    /* the one drive sluice reads, and a ":" after no letter, pass */
    { "rel_deny", "{\"path\":\"c:/notes/a.txt\"}", PASS },
    { "rel_deny", "{\"path\":\"C:\\\\notes\\\\a.txt\"}", PASS },
    { "rel_deny", "{\"path\":\"/c:/notes/a.txt\"}", PASS },
    { "rel_deny", "{\"path\":\"/c|/notes/a.txt\"}", PASS },
    { "rel_deny", "{\"path\":\"file:///c:/notes/a.txt\"}", PASS },
    { "rel_deny", "{\"path\":\"c:\"}", PASS },
    { "rel_deny", "{\"path\":\"notes/10:30.txt\"}", PASS },
    /* the drive it reads is kept on Windows: "C:\\Secret\\k" is C:/Secret/k there */
    { "win_deny", "{\"path\":\"C:\\\\Secret\\\\k\"}", DENY, "tools.win_deny.args.path.deny_glob[0]",
      "on Windows" },
    { "win_deny", "{\"path\":\"C:\\\\Public\\\\k\"}", PASS },
    /* Node's url.parse, trim() and strip() drop a space outside ASCII at either end */
    { "spelt", "{\"path\":\"/data/id_rsa\\u00a0\"}", DENY, R_SP "deny_glob",
      "starts or ends with a space outside ASCII" },
    { "spelt", "{\"path\":\"/data/id_rsa\\u0085\"}", DENY, R_SP "deny_glob",
      "starts or ends with a space outside ASCII" },
    { "spelt", "{\"path\":\"\\u3000/data/id_rsa\"}", DENY, R_SP "deny_glob",
      "starts or ends with a space outside ASCII" },
    { "spelt", "{\"path\":\"/data/id_rsa\\u00ad\"}", DENY, R_SP "deny_glob",
      "or an invisible character" },
    { "spelt", "{\"path\":\"/data/a\\u2009b\\u00a0c\"}", PASS },
};

struct fixture {
    struct policy *p;
    struct sl_arena *a;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct policy_error err;
    char msg[640];

    if (f == NULL)
        return -1;
    if (policy_load_buffer("rules", policy_text, sizeof(policy_text) - 1, &f->p, &err) != 0) {
        policy_error_format(&err, msg, sizeof(msg));
        print_error("%s\n", msg);
        free(f);
        return -1;
    }
    f->a = sl_arena_new();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    policy_unref(f->p);
    sl_arena_free(f->a);
    free(f);
    return 0;
}

static bool check_case_holds(const struct fixture *f, const struct check_case *c, size_t row)
{
    static const char *const names[] = { "PASS", "DENY", "ESCALATE" };
    struct json *args = NULL;
    struct rules_result r;
    char err[160];
    bool ok;

    if (c->args && json_parse(c->args, strlen(c->args), f->a, &args, err, sizeof(err)) != 0) {
        print_error("check_cases[%zu]: bad JSON in the row: %s\n", row, err);
        return false;
    }
    memset(&r, 0xa5, sizeof(r));  /* garbage, so an unset field cannot pass by luck */
    rules_check(f->p, c->tool, strlen(c->tool), args, &r);
    ok = r.outcome == c->outcome && memchr(r.rule, '\0', sizeof(r.rule)) &&
         memchr(r.why, '\0', sizeof(r.why)) && strcmp(r.rule, c->rule) == 0 &&
         (c->outcome == RULES_PASS ? strcmp(r.why, "") == 0 : strstr(r.why, c->why) != NULL);
    for (const char *w = r.why; ok && *w; w++)
        ok = *w >= 0x20 && *w < 0x7f;  /* why is printable ASCII */
    if (!ok)
        print_error("check_cases[%zu] %s %s:\n   got %s %s: %.200s\n  want %s %s: ...%s...\n",
                    row, c->tool, c->args ? c->args : "(none)",
                    (unsigned)r.outcome < 3 ? names[r.outcome] : "?", r.rule, r.why,
                    names[c->outcome], c->rule, c->why);
    return ok;
}

static void test_checks(void **state)
{
    size_t failed = 0;

    for (size_t i = 0; i < SL_ARRAY_LEN(check_cases); i++)
        failed += !check_case_holds(*state, &check_cases[i], i);
    assert_int_equal(failed, 0);
}

/* The tool name counts with its length, as in policy_lookup. */
static void test_tool_len(void **state)
{
    struct fixture *f = *state;
    struct json *args = json_new_object(f->a);
    struct rules_result r;

    json_set(f->a, args, "path", json_new_string(f->a, "/etc/passwd", 11));
    rules_check(f->p, "fs_delete_and_more", 9, args, &r);
    assert_int_equal(r.outcome, RULES_DENY);
    rules_check(f->p, "fs_delete\0", 10, args, &r);
    assert_int_equal(r.outcome, RULES_PASS);
}

/* A very long hostile value still gives a bounded, terminated rule and why. */
static void test_bounded_why(void **state)
{
    struct fixture *f = *state;
    size_t n = 100000;
    char *s = malloc(n);
    struct json *args = json_new_object(f->a);
    struct rules_result r;

    assert_non_null(s);
    memset(s, '\x1b', n);
    memcpy(s, "/etc/", 5);
    json_set(f->a, args, "path", json_new_string(f->a, s, 5 + 50));
    json_set(f->a, args, "path", json_new_string(f->a, s, n));
    rules_check(f->p, "fs_delete", 9, args, &r);
    assert_int_equal(r.outcome, RULES_DENY);
    assert_true(strlen(r.why) < sizeof(r.why));
    assert_non_null(strstr(r.why, "\\x1b\\x1b..."));
    free(s);
}

/* A rule name longer than the result holds is cut on a character boundary. */
static void test_long_rule_name(void **state)
{
    char text[1024], tool[200];
    struct policy *p;
    struct policy_error err;
    struct rules_result r;
    struct sl_arena *a = sl_arena_new();
    struct json *args = json_new_object(a);

    (void)state;
    memset(tool, 0, sizeof(tool));
    for (size_t i = 0; i + 2 < 150; i += 2)
        memcpy(tool + i, "\xc3\xa9", 2);  /* 148 bytes of U+00E9 */
    snprintf(text, sizeof(text),
             "version: 1\ntools:\n  \"%s\":\n    action: allow\n    args:\n"
             "      path: {deny_glob: [\"/etc/**\"]}\n", tool);
    assert_int_equal(policy_load_buffer("t", text, strlen(text), &p, &err), 0);
    json_set(a, args, "path", json_new_string(a, "/etc/x", 6));
    rules_check(p, tool, strlen(tool), args, &r);
    assert_int_equal(r.outcome, RULES_DENY);
    assert_true(strlen(r.rule) < sizeof(r.rule));
    assert_true(sl_utf8_valid(r.rule, strlen(r.rule)));
    assert_memory_equal(r.rule, "tools.\xc3\xa9", 8);
    policy_unref(p);
    sl_arena_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normalize),
        cmocka_unit_test(test_glob),
        cmocka_unit_test(test_glob_no_blowup),
        cmocka_unit_test_setup_teardown(test_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tool_len, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bounded_why, setup, teardown),
        cmocka_unit_test(test_long_rule_name),
    };

    return cmocka_run_group_tests_name("rules", tests, NULL, NULL);
}
