/*
 * Who writes the --summary and --trace files (docs/files-and-signals.md):
 *   - a wrapper that inherits LD_PRELOAD and XLAC_FLAGS (timeout, bash -c,
 *     env) but runs no session writes nothing and prints no stats line: the
 *     file is the xlac-run's (it was rewritten with "runs":0 by timeout);
 *   - two processes of one run that both ran sessions never overwrite each
 *     other: the second's file gets its PID before the extension;
 *   - a trace or summary that cannot be written (a file-size limit: the
 *     disk is full for this process) leaves the previous file as it was
 *     and the exit status is 1 with a message (it was 0, with the JSON cut).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "support/tmpdir.h"

#define XLAC_RUN XLAC_BINARY_DIR "/bin/xlac-run"
#define LIBXLAC XLAC_BINARY_DIR "/lib/libxlac.so"

static const char graph[] = "xlac.graph v1\ninput x: f32[64]\nt = add(x, x)\nu = neg(t)\ny = mul(u, x)\noutput y\n";

static void setup(void)
{
    xt_tmp_make("/tmp/xlac-profiles-XXXXXX");
    xt_write_file(xt_path("g.xg"), graph);
}

TestSuite(profiles, .init = setup, .fini = xt_tmp_fini, .timeout = 120);

/*
 * clang's ASan build links its runtime into the executables only: an
 * uninstrumented wrapper (env, sh, timeout) that preloads the plugin cannot
 * resolve the sanitizer's symbols, and clang's OpenMP runtime cannot start
 * under a file-size limit (it sizes a shared-memory file). The plain build
 * and gcc's ASan build run these tests.
 */
static void skip_under_clang_asan(void)
{
#if defined(__clang__) && defined(XLAC_SANITIZE)
    cr_skip_test("skipped: uninstrumented wrappers cannot preload clang's ASan build (the plain and gcc ASan "
                 "builds run this)");
#endif
}

/* The files in the test folder whose names start with prefix. */
static int count_files(const char *prefix)
{
    DIR *d = opendir(xt_tmp);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += !strncmp(e->d_name, prefix, strlen(prefix));
    if (d)
        closedir(d);
    return n;
}

Test(profiles, a_wrapper_that_ran_no_session_writes_nothing)
{
    skip_under_clang_asan();
    const char *env[] = {"XLAC_AUTO_JIT=2", "XLAC_FLAGS=--disk_cache=0 --stats --summary=s.json --trace=t.json",
                         "CC=/bin/false", NULL};
    const char *argv[] = {"/usr/bin/env", "timeout", "60", "bash", "-c", XLAC_RUN " g.xg --seed 0", NULL};
    xt_result r = xt_run_in(xt_tmp, true, env, argv);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect_eq(xt_occurrences(r.err, "xlac: stats "), 1, "only xlac-run prints stats: %s", r.err);
    char *s = xt_read_file(xt_path("s.json"), NULL);
    cr_assert_not_null(s);
    cr_expect(strstr(s, "\"runs\":1,"), "the summary is the xlac-run's, not a wrapper's empty one: %s", s);
    free(s);
    char *t = xt_read_file(xt_path("t.json"), NULL);
    cr_assert_not_null(t);
    cr_expect(strstr(t, "cluster_"), "the trace is the xlac-run's: %s", t);
    free(t);
    cr_expect_eq(count_files("s."), 1, "one summary");
    cr_expect_eq(count_files("t."), 1, "one trace");
    xt_result_free(&r);
}

Test(profiles, two_processes_that_ran_sessions_never_overwrite_each_other)
{
    skip_under_clang_asan();
    const char *env[] = {"XLAC_AUTO_JIT=2", "XLAC_FLAGS=--disk_cache=0 --summary=s.json", "CC=/bin/false", NULL};
    const char *argv[] = {"/bin/sh", "-c", XLAC_RUN " g.xg --seed 0 && " XLAC_RUN " g.xg --seed 0 --iterations 2",
                          NULL};
    xt_result r = xt_run_in(xt_tmp, true, env, argv);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect_eq(count_files("s."), 2, "s.json and s.PID.json: %s", r.err);
    cr_expect(strstr(r.err, "was written by another process of this run"), "%s", r.err);
    char *s = xt_read_file(xt_path("s.json"), NULL);
    cr_expect(s && strstr(s, "\"runs\":1,"), "the first process's summary stays: %s", s);
    free(s);
    xt_result_free(&r);
    /* a later, separate run replaces the file, as always */
    const char *argv2[] = {XLAC_RUN, "g.xg", "--seed", "0", "--iterations", "3", NULL};
    r = xt_run_in(xt_tmp, true, env, argv2);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    s = xt_read_file(xt_path("s.json"), NULL);
    cr_expect(s && strstr(s, "\"runs\":3,"), "%s", s);
    free(s);
    xt_result_free(&r);
}

/* xlac-run under a file-size limit of 0 (writes to files fail with EFBIG: the disk is full for it). */
static int run_full_disk(const char *env_words, const char *args, char **out)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "sh -c '(trap \"\" XFSZ; ulimit -f 0; %s %s %s 2>&1; echo \"rc=$?\") | cat'",
             env_words, XLAC_RUN, args);
    int rc = xt_sh("", cmd, out);
    cr_assert_eq(rc, 0, "%s", *out);
    const char *p = strstr(*out, "rc=");
    cr_assert_not_null(p, "%s", *out);
    return atoi(p + 3);
}

Test(profiles, a_trace_that_cannot_be_written_keeps_the_old_one_and_fails)
{
    skip_under_clang_asan();
    xt_write_file(xt_path("t.json"), "{\"old\":true}\n");
    char *out = NULL;
    int rc = run_full_disk("", "g.xg --seed 0 --trace t.json", &out);
    cr_expect_eq(rc, 1, "the exit status says the trace was not written: %s", out);
    cr_expect(strstr(out, "t.json") && strstr(out, "not written"), "%s", out);
    char *t = xt_read_file(xt_path("t.json"), NULL);
    cr_expect_str_eq(t, "{\"old\":true}\n", "the previous trace is intact");
    free(t);
    cr_expect_eq(count_files("t.json.tmp"), 0, "no temp file is left");
    free(out);
    /* the plugin's trace and summary, written at exit */
    xt_write_file(xt_path("s.json"), "{\"old\":true}\n");
    rc = run_full_disk("LD_PRELOAD=" LIBXLAC " XLAC_AUTO_JIT=2 CC=/bin/false "
                       "XLAC_FLAGS=\"--disk_cache=0 --summary=s.json --trace=t.json\"",
                       "g.xg --seed 0", &out);
    cr_expect_eq(rc, 0, "the host's own exit status is kept (issue 31): %s", out);
    cr_expect(strstr(out, "xlac: error: ") && strstr(out, "s.json") && strstr(out, "not written"), "%s", out);
    t = xt_read_file(xt_path("t.json"), NULL);
    cr_expect_str_eq(t, "{\"old\":true}\n");
    free(t);
    t = xt_read_file(xt_path("s.json"), NULL);
    cr_expect_str_eq(t, "{\"old\":true}\n");
    free(t);
    free(out);
}
