/*
 * What a person reads of a run, end to end through the real xlac-run (a
 * child process, with and without LD_PRELOAD=libxlac.so):
 *   - the trace (xlac-run --trace, XLAC_FLAGS=--trace): checked by
 *     scripts/trace_check.py (valid JSON, every launch inside its run,
 *     every compile its own slice, fallbacks with reasons), with counts;
 *   - the clustering summary: every node left out named under its reason,
 *     counts apart from the text; --summary=FILE.json;
 *   - the progress line: on a terminal (a pty made by script(1)), never
 *     when stderr is a file;
 * and the regressions of issue 16: --stats with --async_compilation counts
 * the background compile; a composite node's body is clustered, without a
 * note that its op is not registered; the warnings for XLAC_* without the
 * plugin and XLAC_DUMP_GRAPH_PREFIX without --clustering_debug; --stats
 * prints the two lines its help promises.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/tmpdir.h"


#define XLAC_RUN XLAC_BINARY_DIR "/bin/xlac-run"
#define LIBXLAC XLAC_BINARY_DIR "/lib/libxlac.so"
#define TRACE_CHECK XLAC_SOURCE_DIR "/scripts/trace_check.py"

static void make_tmp(void)
{
    xt_tmp_make("/tmp/xlac_reports_XXXXXX");
}

TestSuite(reports, .init = make_tmp, .fini = xt_tmp_fini, .timeout = 120);

/* Runs argv in the test folder (see xt_run_in); preload: with the plugin. */
static xt_result run(bool preload, const char *const *env, const char *const *argv)
{
    return xt_run_in(xt_tmp, preload, env, argv);
}

/* xlac-run GRAPH [a b c] with the plugin at env. */
static xt_result xlac(bool preload, const char *const *env, const char *a, const char *b,
                      const char *c, const char *d)
{
    const char *argv[] = {XLAC_RUN, xt_path("g.xg"), "--seed", "0", a, b, c, d, NULL};
    return run(preload, env, argv);
}

static const char *graph_text = "xlac.graph v1\n"
                                "input x: f32[8,4]\n"
                                "input y: f32[8,4]\n"
                                "a = mul(x, y)\n"
                                "b = add(a, x)\n"
                                "c = tanh(b)\n"
                                "m = matmul(c, y, transpose_b=true)\n"
                                "s = reduce_sum(m, axes=[1], keepdims=false)\n"
                                "u = unique(s)\n"
                                "output s\n"
                                "output u\n";

/* ---- defects ---------------------------------------------------------------------- */

Test(reports, async_stats_count_the_background_compile)
{
    xt_write_file(xt_path("g.xg"), graph_text);
    /* one run: the background compile is still running when the run ends; the stats wait for it */
    const char *env[] = {"XLAC_AUTO_JIT=1", "XLAC_FLAGS=--stats --async_compilation --disk_cache=0",
                         NULL};
    xt_result r = xlac(true, env, NULL, NULL, NULL, NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.err, "xlac: stats clusters=1 launches=1 compiles=1 "), "%s", r.err);
    cr_assert(strstr(r.err, " fallbacks=1 "), "the one launch ran per op: %s", r.err);
    cr_assert(!strstr(r.err, "compile_ms=0.0\n"), "%s", r.err);
    /* --stats prints the two lines its help promises */
    cr_assert_eq(xt_occurrences(r.err, "xlac: "), 2, "%s", r.err);
    cr_assert(strstr(r.err, "\nxlac: timing disk_load_ms="), "%s", r.err);
    xt_result_free(&r);
    const char *help_env[] = {"XLAC_AUTO_JIT=1", "XLAC_FLAGS=--help", NULL};
    r = xlac(true, help_env, NULL, NULL, NULL, NULL);
    cr_assert(strstr(r.out, "at exit print two lines"), "%s", r.out);
    cr_assert(!strstr(r.out, "one line"), "%s", r.out);
    xt_result_free(&r);
}

static const char *block_text = "xlac.graph v1\n"
                                "input x: f32[64]\n"
                                "input y: f32[64]\n"
                                "f = block(x, y) {\n"
                                "  input a: f32[64]\n"
                                "  input b: f32[64]\n"
                                "  t = mul(a, b)\n"
                                "  v = tanh(t)\n"
                                "  output v\n"
                                "}\n"
                                "r = get(f, index=0)\n"
                                "s = exp(r)\n"
                                "w = neg(s)\n"
                                "output w\n";

Test(reports, composite_body_is_clustered)
{
    xt_write_file(xt_path("g.xg"), block_text);
    xt_result plain = xlac(false, NULL, "--print-outputs", NULL, NULL, NULL);
    cr_assert_eq(plain.rc, 0, "%s", plain.err);
    cr_assert(!strstr(plain.err, "not registered"), "a user's composite gets no note: %s",
              plain.err);
    const char *env[] = {"XLAC_AUTO_JIT=2",
                         "XLAC_FLAGS=--stats --clustering_debug --disk_cache=0 --codegen=0", NULL};
    xt_result r = xlac(true, env, "--print-outputs", "--log-device-placement", NULL, NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(!strstr(r.err, "not registered"), "%s", r.err);
    cr_assert(strstr(r.err, "placement: t mul XLA_CPU:0 f.cluster_0\n"), "%s", r.err);
    cr_assert(strstr(r.err, "placement: v tanh XLA_CPU:0 f.cluster_0\n"), "%s", r.err);
    cr_assert(strstr(r.err, "f.cluster_0: 2 ops on XLA_CPU:0: mul (1), tanh (1)"), "%s", r.err);
    cr_assert(strstr(r.err, "composite node (its body is clustered on its own) (1): f\n"), "%s",
              r.err);
    cr_assert(strstr(r.err, "xlac: stats clusters=2 launches=2 "), "%s", r.err);
    cr_assert_str_eq(r.out, plain.out, "per op inside the clusters: the same bits");
    xt_result_free(&r);
    const char *compiled[] = {"XLAC_AUTO_JIT=2", "XLAC_FLAGS=--stats --disk_cache=0", NULL};
    r = xlac(true, compiled, NULL, NULL, NULL, NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.err, "xlac: stats clusters=2 launches=2 compiles=2 "),
              "the body compiles: %s", r.err);
    xt_result_free(&r);
    xt_result_free(&plain);
}

Test(reports, warnings_for_settings_that_do_nothing)
{
    xt_write_file(xt_path("g.xg"), graph_text);
    const char *jit[] = {"XLAC_AUTO_JIT=2", NULL};
    xt_result r = xlac(false, jit, "--iterations", "2", NULL, NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert_eq(xt_occurrences(r.err, "XLAC_AUTO_JIT is set but libxlac.so is not loaded"), 1, "%s", r.err);
    xt_result_free(&r);
    const char *flags[] = {"XLAC_FLAGS=--stats", NULL};
    r = xlac(false, flags, NULL, NULL, NULL, NULL);
    cr_assert_eq(xt_occurrences(r.err, "XLAC_FLAGS is set but libxlac.so is not loaded"), 1, "%s", r.err);
    xt_result_free(&r);
    const char *off[] = {"XLAC_AUTO_JIT=0", NULL};
    r = xlac(false, off, "--device", "cpu", NULL, NULL); /* a CUDA build without a GPU would note that */
    cr_assert_str_eq(r.err, "", "0 is off: nothing to say");
    xt_result_free(&r);
    r = xlac(true, jit, NULL, NULL, NULL, NULL);
    cr_assert(!strstr(r.err, "not loaded"), "%s", r.err);
    xt_result_free(&r);
    char prefix[600];
    snprintf(prefix, sizeof prefix, "XLAC_DUMP_GRAPH_PREFIX=%s", xt_path("dumps"));
    const char *dump[] = {"XLAC_AUTO_JIT=1", prefix, NULL};
    r = xlac(true, dump, "--iterations", "2", NULL, NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert_eq(xt_occurrences(r.err, "XLAC_DUMP_GRAPH_PREFIX is set without --clustering_debug"), 1, "%s",
                 r.err);
    xt_result_free(&r);
}

/* ---- the summary ---------------------------------------------------------------------- */

Test(reports, summary_names_every_node_left_out)
{
    xt_write_file(xt_path("g.xg"), graph_text);
    char flags[700];
    snprintf(flags, sizeof flags, "XLAC_FLAGS=--clustering_debug --disk_cache=0 --summary=%s",
             xt_path("s.json"));
    const char *env[] = {"XLAC_AUTO_JIT=1", flags, NULL};
    xt_result r = xlac(true, env, "--iterations", "3", NULL, NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.err, "  by op: matmul (1), reduce_sum (1), unique (1)\n"), "%s", r.err);
    cr_assert(strstr(r.err, "  by reason:\n    cluster too small (1): s\n"
                            "    data-dependent output shape (1): u\n"
                            "    not fusible at level 1 (1): m\n"),
              "%s", r.err);
    char *json = xt_read_file(xt_path("s.json"), NULL);
    cr_assert_not_null(json);
    cr_assert(
        strstr(
            json,
            "\"left_out\":{\"cluster too small\":[\"s\"],\"data-dependent output shape\":[\"u\"],"
            "\"not fusible at level 1\":[\"m\"]}"),
        "%s", json);
    cr_assert(
        strstr(json,
               "{\"name\":\"cluster_0\",\"ops\":3,\"launches\":3,\"cache_hits\":2,\"compiled\":1,"
               "\"fallbacks\":0,\"compile_ms\":"),
        "%s", json);
    cr_assert(strstr(json, "\"runs\":3,\"run_ms\":"), "%s", json);
    cr_assert(strstr(json, "\"share\":{\"clusters\":"), "%s", json);
    cr_assert(strstr(json, "\"stats\":{\"clusters\":1,\"launches\":3,\"compiles\":1,"), "%s", json);
    free(json);
    if (system("python3 -c 1 2>/dev/null") == 0) { /* the file is JSON, and the shares add up */
        char cmd[900];
        snprintf(
            cmd, sizeof cmd,
            "python3 -c \"import json,sys; d=json.load(open('%s')); s=d['share']; "
            "sys.exit(abs(sum(s.values())-1) > 0.01 or d['clusters'][0]['mean_launch_us'] <= 0)\"",
            xt_path("s.json"));
        cr_assert_eq(system(cmd), 0, "%s", cmd);
    }
    xt_result_free(&r);
}

/* ---- the trace ---------------------------------------------------------------------- */

/* scripts/trace_check.py on file: exit 0 and its one line of counts in *counts (freed by the
 * caller). */
static void check_trace(const char *file, char **counts)
{
    const char *argv[] = {"/usr/bin/env", "python3", TRACE_CHECK, file, NULL};
    xt_result r = run(false, NULL, argv);
    cr_assert_eq(r.rc, 0, "trace_check: %s%s", r.out, r.err);
    *counts = r.out;
    free(r.err);
}

Test(reports, trace_launches_inside_runs_and_compiles_as_slices)
{
    if (system("python3 -c 1 2>/dev/null") != 0) {
        cr_skip_test("skipped: no python3 for scripts/trace_check.py");
    }
    xt_write_file(xt_path("g.xg"), graph_text);
    /* the CLI's --trace, the plugin on: compile in the launch of the second run (threshold 2) */
    const char *env[] = {"XLAC_AUTO_JIT=1", "XLAC_FLAGS=--disk_cache=0 --compile_threshold=2",
                         NULL};
    xt_result r = xlac(true, env, "--iterations", "3", "--trace", xt_path("t.json"));
    cr_assert_eq(r.rc, 0, "%s", r.err);
    char *counts = NULL;
    check_trace(xt_path("t.json"), &counts);
    cr_assert(strstr(counts, "\"compiles\": 1") && strstr(counts, "\"fallbacks\": 1") &&
                  strstr(counts, "\"launches\": 3") && strstr(counts, "\"runs\": 3"),
              "%s", counts);
    free(counts);
    char *json = xt_read_file(xt_path("t.json"), NULL);
    cr_assert(strstr(json, "\"reason\":\"seen fewer than --compile_threshold times\""), "%s", json);
    cr_assert(strstr(json, "\"cache\":\"hit\""), "%s", json);
    cr_assert(strstr(json, "\"ops\":\"a:mul,b:add,c:tanh\""), "%s", json);
    free(json);
    xt_result_free(&r);
    /* XLAC_FLAGS=--trace, compiled in the background: its slice is on the compile thread's track */
    char flags[700];
    snprintf(flags, sizeof flags, "XLAC_FLAGS=--disk_cache=0 --async_compilation --trace=%s",
             xt_path("a.json"));
    const char *async[] = {"XLAC_AUTO_JIT=1", flags, NULL};
    r = xlac(true, async, "--iterations", "2", NULL, NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    check_trace(xt_path("a.json"), &counts);
    cr_assert(strstr(counts, "\"compiles\": 1") && strstr(counts, "\"xlac compile\""), "%s",
              counts);
    free(counts);
    xt_result_free(&r);
    /* a disk cache: the first process compiles, the second loads, and its trace shows the load */
    snprintf(flags, sizeof flags, "XLAC_FLAGS=--cache_dir=%s --trace=%s", xt_path("cache"),
             xt_path("d.json"));
    const char *disk[] = {"XLAC_AUTO_JIT=1", flags, NULL};
    for (int k = 0; k < 2; k++) {
        r = xlac(true, disk, NULL, NULL, NULL, NULL);
        cr_assert_eq(r.rc, 0, "%s", r.err);
        xt_result_free(&r);
    }
    check_trace(xt_path("d.json"), &counts);
    cr_assert(strstr(counts, "\"compiles\": 0") && strstr(counts, "\"disk_loads\": 1"), "%s",
              counts);
    free(counts);
}

/* ---- progress ------------------------------------------------------------------------ */

Test(reports, progress_on_a_terminal_only)
{
    xt_write_file(xt_path("g.xg"), graph_text);
    if (access("/usr/bin/script", X_OK) != 0) {
        cr_skip_test("skipped: no script(1) to make a terminal");
    }
    char cmd[1600];
    snprintf(
        cmd, sizeof cmd,
        /* a preloaded library comes before libasan in a sanitizer build: allowed (as run() does) */
        "cd '%s' && env -u LD_PRELOAD ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1 "
        "XLAC_AUTO_JIT=1 XLAC_FLAGS=--disk_cache=0 "
        "script -qec \"LD_PRELOAD='%s' '%s' g.xg --seed 0\" /dev/null > tty.txt 2>&1 </dev/null",
        xt_tmp, LIBXLAC, XLAC_RUN);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    char *tty = xt_read_file(xt_path("tty.txt"), NULL);
    cr_assert(strstr(tty, "xlac: compiling 1/1 clusters"), "on a terminal: %s", tty);
    free(tty);
    const char *env[] = {"XLAC_AUTO_JIT=1", "XLAC_FLAGS=--disk_cache=0", NULL};
    xt_result r = xlac(true, env, NULL, NULL, NULL, NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(!strstr(r.err, "compiling"), "stderr is a file: nothing: %s", r.err);
    xt_result_free(&r);
}
