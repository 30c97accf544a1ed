/*
 * Strings from a graph or a model, into each destination of xlac/escape.h,
 * checked by the destination itself: C comments and literals are compiled
 * (cc -std=c11 -Wall -Werror) and run, shell words are expanded by /bin/sh,
 * file names are checked as components. Then the two reproductions of
 * issue 31 that reached a destination unescaped, end to end:
 *   - a @cluster annotation that closed the AOT source's comment and put a
 *     constructor into the .so that xlac-compile built (it ran on dlopen);
 *   - @cluster names with "/.." and ";" in the replay folder of
 *     --dump_inputs (written outside XLAC_DUMP_TO; unquoted in the command).
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/tmpdir.h"
#include "xlac/escape.h"

#define XLAC_RUN XLAC_BINARY_DIR "/bin/xlac-run"
#define XLAC_COMPILE XLAC_BINARY_DIR "/bin/xlac-compile"
#define LIBXLAC XLAC_BINARY_DIR "/lib/libxlac.so"

static void make_tmp(void)
{
    xt_tmp_make("/tmp/xlac_escape_XXXXXX");
}

TestSuite(escape, .init = make_tmp, .fini = xt_tmp_fini, .timeout = 180);

/* The hostile strings every destination is fed; the last, 100 KB, is made at run time. */
static const char *const hostile[] = {
    "plain_name",
    "",
    "*/\n#include <stdlib.h>\n__attribute__((constructor)) static void pwn(void){system(\"touch PWNED\");}\n/*",
    "a \"quoted\" 'word'",
    "line\none\r\ntwo",
    "..",
    ".",
    "../../escaped_dir",
    "x/../../escaped_dir",
    "/etc/passwd",
    "q;id>INJ;",
    "$(touch INJ)`touch INJ`",
    "?\?/\nback\\slash\\", /* the trigraph ??/ */
    "\x01\x7f\xff\xfe utf-8: \xc3\xa9",
    "%s%n%d",
    "-rf",
};
#define N_HOSTILE (sizeof hostile / sizeof *hostile)

static char *big_string(void)
{
    size_t n = 100 * 1024;
    char *s = malloc(n + 1);
    cr_assert_not_null(s);
    for (size_t i = 0; i < n; i++)
        s[i] = "*/\"'\\\n$;?a"[i % 10];
    s[n] = '\0';
    return s;
}

/* Compiles and runs a C program; returns its exit status (-1 when it did not compile). */
static int compile_and_run(const char *source)
{
    xt_write_file(xt_path("p.c"), source);
    char *o = NULL;
    int rc = xt_sh("", "cc -std=c11 -Wall -Wextra -Werror -o p p.c 2>&1 && ./p", &o);
    free(o);
    return rc;
}

/* /\* s *\/ between two statements that must both remain: the program returns 42 only if they do. */
static void check_comment(const char *s)
{
    xe_text t = {0};
    xe_text_printf(&t, "static int x = 40; /* ");
    xe_esc_c_comment(&t, s);
    xe_text_printf(&t, " */ static int y = 2;\nint main(void) { return x + y; }\n");
    char *src = xe_text_take(&t);
    cr_assert_not_null(src);
    cr_assert_eq(compile_and_run(src), 42, "comment escaped badly: %.300s", src);
    cr_assert(strchr(src, '\n') > strstr(src, "static int y"), "a newline inside the comment: %.300s", src);
    free(src);
}

Test(escape, a_c_comment_never_ends_early_or_splices_a_line)
{
    for (size_t i = 0; i < N_HOSTILE; i++)
        check_comment(hostile[i]);
    char *big = big_string();
    check_comment(big);
    xe_text t = {0};
    xe_esc_c_comment(&t, big);
    char *c = xe_text_take(&t);
    cr_assert(strlen(c) < 4 * XE_ESC_MAX + 4 && strstr(c, "..."), "a long string is cut");
    cr_assert_null(strstr(c, "*/"));
    free(c);
    free(big);
}

/* "s" as a literal, compared byte for byte with the original (its bytes written as a list). */
static void check_literal(const char *s)
{
    xe_text t = {0};
    xe_text_printf(&t, "#include <string.h>\nstatic const char s[] = ");
    xe_esc_c_string(&t, s);
    xe_text_printf(&t, ";\nstatic const unsigned char want[] = {");
    for (const char *p = s; *p; p++)
        xe_text_printf(&t, "%u,", (unsigned char)*p);
    xe_text_printf(&t, "0};\nint main(void) { return sizeof s == sizeof want && !memcmp(s, want, sizeof s) ? 42 "
                       ": 1; }\n");
    char *src = xe_text_take(&t);
    cr_assert_eq(compile_and_run(src), 42, "literal escaped badly: %.300s", src);
    free(src);
}

Test(escape, a_c_literal_holds_exactly_the_string)
{
    for (size_t i = 0; i < N_HOSTILE; i++)
        check_literal(hostile[i]);
    char *big = big_string();
    check_literal(big);
    free(big);
}

Test(escape, a_c_identifier_is_one)
{
    for (size_t i = 0; i < N_HOSTILE; i++) {
        char *id = xe_esc_c_ident(hostile[i]);
        cr_assert(id[0] == '_' || (id[0] >= 'A' && id[0] <= 'Z') || (id[0] >= 'a' && id[0] <= 'z'), "%s", id);
        for (char *c = id; *c; c++)
            cr_assert(*c == '_' || (*c >= '0' && *c <= '9') || ((*c | 32) >= 'a' && (*c | 32) <= 'z'), "%s", id);
        free(id);
    }
}

static void check_file_name(const char *s)
{
    char buf[XE_ESC_MAX + 1];
    bool same = xe_esc_file_name(buf, sizeof buf, s);
    cr_assert(buf[0] && buf[0] != '.' && !strchr(buf, '/') && strlen(buf) <= XE_ESC_MAX, "'%s' -> '%s'", s, buf);
    for (char *c = buf; *c; c++)
        cr_assert((*c >= '0' && *c <= '9') || ((*c | 32) >= 'a' && (*c | 32) <= 'z') || strchr("_.-", *c),
                  "'%s' -> '%s'", s, buf);
    cr_assert_eq(same, strcmp(buf, s) == 0, "'%s': unchanged is said only of an unchanged name", s);
}

Test(escape, a_file_name_is_one_component)
{
    for (size_t i = 0; i < N_HOSTILE; i++)
        check_file_name(hostile[i]);
    char *big = big_string();
    check_file_name(big);
    free(big);
    char buf[XE_ESC_MAX + 1];
    cr_assert(xe_esc_file_name(buf, sizeof buf, "cluster_0.plan-1") && !strcmp(buf, "cluster_0.plan-1"));
    cr_assert(!xe_esc_file_name(buf, sizeof buf, "..") && !strcmp(buf, "_."));
}

/* sh -c 'printf %s WORD' prints s again, and nothing else ran. */
static void check_shell_word(const char *s)
{
    xe_text t = {0};
    xe_text_printf(&t, "printf %%s ");
    xe_esc_shell_word(&t, s);
    xe_text_printf(&t, " >word.out\n");
    char *cmd = xe_text_take(&t), *o = NULL;
    xt_write_file(xt_path("word.sh"), cmd); /* a script: 100 KB quoted is over one argument's limit */
    cr_assert_eq(xt_sh("", "sh word.sh", &o), 0, "%.200s: %s", cmd, o);
    free(o);
    size_t n = 0;
    char *got = xt_read_file(xt_path("word.out"), &n);
    cr_assert(got && n == strlen(s) && memcmp(got, s, n) == 0, "shell word changed: %.200s", cmd);
    cr_assert_neq(access(xt_path("INJ"), F_OK), 0, "%s ran a command", cmd);
    free(got);
    free(cmd);
}

Test(escape, a_shell_word_expands_to_itself)
{
    for (size_t i = 0; i < N_HOSTILE; i++)
        check_shell_word(hostile[i]);
    char *big = big_string();
    check_shell_word(big);
    free(big);
}

Test(escape, a_dot_label_stays_inside_its_quotes)
{
    for (size_t i = 0; i < N_HOSTILE; i++) {
        xe_text t = {0};
        xe_esc_dot(&t, hostile[i]);
        char *d = xe_text_take(&t);
        for (char *c = d; *c; c++) {
            cr_assert((unsigned char)*c >= 0x20 || (unsigned char)*c >= 0x80, "control byte in '%s'", d);
            if (*c == '"')
                cr_assert(c > d && c[-1] == '\\', "an unescaped quote in '%s'", d);
            if (*c == '\\') {
                cr_assert(c[1], "a trailing backslash in '%s'", d);
                c++;
            }
        }
        free(d);
    }
}

/* A graph whose one launch node carries the annotation @cluster=NAME (NAME in .xg's string syntax). */
static void write_launch_graph(const char *path, const char *xg_name)
{
    char text[2048];
    snprintf(text, sizeof text,
             "xlac.graph v1\ninput x: f32[4]\ncl = xlac_launch(x, @cluster=\"%s\") {\n  input a: f32[4]\n"
             "  w = neg(a)\n  v = exp(w)\n  output v\n}\nw0 = get(cl, index=0)\noutput w0\n",
             xg_name);
    xt_write_file(path, text);
}

Test(escape, an_aot_build_holds_no_code_from_a_cluster_name)
{
    write_launch_graph(xt_path("inj.xg"), "*/\\n#include <stdlib.h>\\n__attribute__((constructor)) static void "
                                          "pwn(void){system(\\\"touch PWNED\\\");}\\n/*");
    char *o = NULL;
    cr_assert_eq(xt_sh("", XLAC_COMPILE " inj.xg --target c --out out", &o), 0, "%s", o);
    free(o);
    void *h = dlopen(xt_path("out/inj.so"), RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    dlclose(h);
    cr_assert_neq(access(xt_path("PWNED"), F_OK), 0, "loading the AOT library ran code from the graph's text");
    size_t n = 0;
    char *src = xt_read_file(xt_path("out/inj.c"), &n);
    cr_assert(src && strstr(src, "\\x2a/"), "the name is kept, escaped, in the comment");
    free(src);
}

Test(escape, replay_folders_stay_in_the_dump_folder_and_commands_are_quoted)
{
    mkdir(xt_path("a"), 0755);
    mkdir(xt_path("a/b"), 0755);
    write_launch_graph(xt_path("a/b/up.xg"), "x/../../escaped_dir");
    write_launch_graph(xt_path("a/b/semi.xg"), "q;touch INJ;");
    char *o = NULL;
    const char *env = "LD_PRELOAD=" LIBXLAC " XLAC_AUTO_JIT=2 XLAC_DUMP_TO=a/b/dump "
                      "XLAC_FLAGS='--dump_inputs --disk_cache=0'";
    cr_assert_eq(xt_sh(env, XLAC_RUN " a/b/up.xg --seed 1", &o), 0, "%s", o);
    free(o);
    cr_assert_eq(xt_sh(env, XLAC_RUN " a/b/semi.xg --seed 1", &o), 0, "%s", o);
    cr_assert_neq(access(xt_path("escaped_dir"), F_OK), 0, "a replay folder was written outside XLAC_DUMP_TO");
    cr_assert_neq(access(xt_path("a/escaped_dir"), F_OK), 0, "a replay folder was written outside XLAC_DUMP_TO");
    cr_assert_neq(access(xt_path("a/b/escaped_dir"), F_OK), 0, "a replay folder was written outside XLAC_DUMP_TO");
    cr_assert(strstr(o, "replay_0000.q_touch_INJ_"), "%s", o);
    free(o);
    /* the saved command, run by a shell, replays and runs nothing else */
    cr_assert_eq(xt_sh("", "sh a/b/dump/replay_0000.q_touch_INJ_/command.txt", &o), 0, "%s", o);
    free(o);
    cr_assert_neq(access(xt_path("INJ"), F_OK), 0, "the replay command ran text from the cluster's name");
}

/* Issue 31: dump files were opened with fopen(path, "w") and wrote through a link planted at the name. */
Test(escape, dumps_never_write_through_a_planted_symlink)
{
    xt_write_file(xt_path("victim"), "precious\n");
    mkdir(xt_path("dumps"), 0700);
    cr_assert_eq(symlink(xt_path("victim"), xt_path("dumps/mark_for_compilation_0.xg")), 0);
    cr_assert_eq(symlink(xt_path("victim"), xt_path("dumps/before_mark_for_compilation_0.dot")), 0);
    xt_write_file(xt_path("f.xg"), "xlac.graph v1\ninput x: f32[8]\na = mul(x, x)\nb = tanh(a)\nc = exp(b)\n"
                                   "output c\n");
    char *o = NULL;
    int rc = xt_sh("LD_PRELOAD=" LIBXLAC " XLAC_AUTO_JIT=2 XLAC_DUMP_GRAPH_PREFIX=dumps "
                   "XLAC_FLAGS='--clustering_debug --disk_cache=0'",
                   XLAC_RUN " f.xg --seed 1", &o);
    cr_assert_eq(rc, 0, "a dump that cannot be written is a warning, the run goes on: %s", o);
    cr_assert(strstr(o, "symbolic link"), "the warning says why: %s", o);
    free(o);
    char *v = xt_read_file(xt_path("victim"), NULL);
    cr_assert_str_eq(v, "precious\n", "a dump was written through the link");
    free(v);
}
