/*
 * Fault injection into clustered xlac-run runs (the plugin preloaded,
 * tests/fault/faultshim.c preloaded before it):
 *
 * - allocation failure: the run's allocations are counted, then the Nth
 *   is failed for N walked over the whole count (a stride, about 60
 *   runs each), with a cold compile and with a warm disk cache;
 * - disk full: RLIMIT_FSIZE (SIGXFSZ ignored, so writes fail with EFBIG)
 *   from 8 to 96 KiB while compiling into a fresh disk cache (the
 *   compiler's source, its module and the cache file each cut somewhere),
 *   then a run without the limit on that cache;
 * - EINTR: every other read, write, pread and waitpid fails with EINTR
 *   first, and a SIGALRM storm (every 200 us, no SA_RESTART) interrupts
 *   every blocking call, on a cold compile and a warm disk cache.
 *
 * Each run must end in a clear error (exit 1 or 2, its last line starting
 * "xlac-run: ") or succeed with the outputs of the op-by-op run (within
 * 1e-5: fused sums reassociate); a signal is a failure. A run without
 * limits after the disk-full walk must be correct (no torn file loaded).
 * OMP_WAIT_POLICY is set, so that xlac-run does not run itself again
 * (the storm's timer would outlive the exec, its handler would not).
 * The shim replaces malloc, which the sanitizers own: under them this test
 * says so and passes (the fault walk is for the plain build).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xlac/xlac.h"
#include "support/tmpdir.h"

#define SHIM XLAC_BINARY_DIR "/lib/libxlac_faultshim.so"
#define PLUGIN XLAC_BINARY_DIR "/lib/libxlac.so"

static char err[8192]; /* the last run's stderr (its start) */
static xe_status st;

static const char *graph = "xlac.graph v1\ninput x: f32[1000]\ninput y: f32[1000]\n"
                           "a = mul(x, y)\nb = add(a, x)\nt = tanh(b)\ns = reduce_sum(t)\n"
                           "u = unique(x)\nv = neg(u)\noutput t\noutput s\noutput v\n";
static const char *const outputs[] = {"t", "s", "v"};

static void setup(void)
{
    xt_tmp_make("/tmp/xlac-faults-XXXXXX");
    xt_write_file(xt_path("g.xg"), graph);
}

static void teardown(void)
{
    cr_assert(xt_tmp_remove());
}

/* Whether the shim exists (not built under the sanitizers). */
static bool have_shim(void)
{
#ifdef XLAC_SANITIZE
    return false;
#else
    return access(SHIM, R_OK) == 0;
#endif
}

/*
 * Runs `PRE xlac-run g.xg --seed 3 --save-outputs OUT` in the test folder, clustered
 * with the fault shim when `faults`, with the extra environment ENV and
 * XLAC_FLAGS. Returns the exit status; a signal fails the test.
 */
static int run(const char *pre, const char *env, const char *flags, bool faults, const char *out)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd %s && rm -rf %s && %s timeout -s KILL 120 env -u LD_PRELOAD -u XLAC_AUTO_JIT -u "
             "XLAC_FLAGS "
             "OMP_WAIT_POLICY=passive %s "
             "%s %s %s/bin/xlac-run g.xg --seed 3 --save-outputs %s >/dev/null 2>stderr.txt",
             xt_tmp, out, pre, env, faults ? "XLAC_AUTO_JIT=2 LD_PRELOAD=\"" SHIM " " PLUGIN "\"" : "",
             flags, XLAC_BINARY_DIR, out);
    int status = system(cmd);
    xt_read_head(xt_path("stderr.txt"), err, sizeof err);
    cr_assert(WIFEXITED(status), "%s %s %s: killed by signal %d\n%s", pre, env, flags,
              WIFSIGNALED(status) ? WTERMSIG(status) : 0, err);
    return WEXITSTATUS(status);
}

/* Whether a line of text starts with "xlac-run: " (the plugin's --stats lines may follow it). */
static bool has_error_line(const char *text)
{
    for (const char *p = text; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, "xlac-run: ", 10))
            return true;
    return false;
}

static xe_tensor *load(const char *sub, const char *name)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s/%s.npy", xt_tmp, sub, name);
    return xe_npy_read(p, &st);
}

/* Whether the outputs in `sub` are the reference's (ref/). */
static bool same_as_reference(const char *sub)
{
    bool same = true;
    for (size_t k = 0; k < sizeof outputs / sizeof outputs[0] && same; k++) {
        xe_tensor *got = load(sub, outputs[k]), *want = load("ref", outputs[k]);
        cr_assert_not_null(want, "%s", st.msg);
        same = got && got->dtype == want->dtype && xe_shape_equal(&got->shape, &want->shape);
        double scale = 1;
        for (int64_t i = 0; same && i < xe_tensor_numel(want); i++)
            scale = fmax(scale, fabs(xe_load_f64(want->data, want->dtype, i)));
        for (int64_t i = 0; same && i < xe_tensor_numel(want); i++) {
            double g = xe_load_f64(got->data, got->dtype, i),
                   w = xe_load_f64(want->data, want->dtype, i);
            same = fabs(g - w) <= 1e-5 * scale;
        }
        if (got)
            xe_tensor_release(got);
        xe_tensor_release(want);
    }
    return same;
}

/* A faulty run ended well: a clear error, or the reference's outputs. */
static void expect_clean_end(int rc, const char *what)
{
    if (rc == 0) {
        cr_expect(same_as_reference("out"), "%s: exit 0 with wrong outputs\n%s", what, err);
        return;
    }
    cr_expect(rc == 1 || rc == 2, "%s: exit %d\n%s", what, rc, err);
    /* libgomp ends the process with its own line (exit 1) when it cannot allocate: third-party,
     * clear */
    cr_expect(has_error_line(err) || (rc == 1 && strstr(err, "libgomp: Out of memory")),
              "%s: exit %d without a message\n%s", what, rc, err);
}

/* The reference (op by op, no shim) into ref/. */
static void reference(void)
{
    cr_assert_eq(run("", "", "", false, "ref"), 0, "%s", err);
}

/* The number of allocations of one clean run with these flags. */
static long count_allocations(const char *flags)
{
    char env[256];
    snprintf(env, sizeof env, "XLAC_FAULT_COUNT_TO=%s/count.txt", xt_tmp);
    cr_assert_eq(run("", env, flags, true, "out"), 0, "%s", err);
    cr_assert(same_as_reference("out"));
    const char *p = xt_path("count.txt");
    FILE *f = fopen(p, "r");
    long n = 0;
    cr_assert(f && fscanf(f, "%ld", &n) == 1);
    fclose(f);
    return n;
}

/* Fails the Nth allocation for N over [1, count] in about `runs` steps; returns the failing runs.
 */
static int walk_allocations(const char *flags, int runs)
{
    long n = count_allocations(flags), stride = n / runs > 0 ? n / runs : 1;
    int errors = 0;
    for (long at = 1; at <= n; at += stride) {
        char env[64], what[160];
        snprintf(env, sizeof env, "XLAC_FAULT_MALLOC_AT=%ld", at);
        snprintf(what, sizeof what, "allocation %ld of %ld failed (%s)", at, n, flags);
        int rc = run("", env, flags, true, "out");
        errors += rc != 0;
        expect_clean_end(rc, what);
    }
    cr_log_info("%s: %ld allocations, every %ld-th failed in turn: %d runs ended in an error",
                flags, n, stride, errors);
    return errors;
}

Test(faults, allocation_failure_walked_over_a_clustered_run, .init = setup, .fini = teardown,
     .timeout = 900)
{
    if (!have_shim())
        cr_skip_test("skipped: the fault shim is not built under the sanitizers");
    reference();
    walk_allocations("XLAC_FLAGS=--disk_cache=0", 60);
    char warm[256];
    snprintf(warm, sizeof warm, "XLAC_FLAGS=--cache_dir=%s/cache", xt_tmp);
    cr_assert_eq(run("", "", warm, true, "out"), 0, "%s", err); /* fills the disk cache */
    walk_allocations(warm, 60);
}

/* The --stats line's counter NAME (-1 when absent). */
static long stat_of(const char *name)
{
    char key[64];
    snprintf(key, sizeof key, " %s=", name);
    const char *p = strstr(err, key);
    return p ? atol(p + strlen(key)) : -1;
}

/*
 * A file-size limit cuts the files of a compile (the compiler's source
 * and module are larger than the cache file, so they are cut first): a
 * per-op fallback or a compiled run, always correct.
 */
Test(faults, file_size_limit_during_compiles, .init = setup, .fini = teardown, .timeout = 900)
{
    if (!have_shim())
        cr_skip_test("skipped: the fault shim is not built under the sanitizers");
    reference();
    char flags[256], rm[160];
    snprintf(flags, sizeof flags, "XLAC_FLAGS='--cache_dir=%s/cache --stats'", xt_tmp);
    snprintf(rm, sizeof rm, "rm -rf %s/cache", xt_tmp);
    for (int kb = 8; kb <= 40; kb += 4) { /* from 8 KiB: stderr.txt and the outputs are files too */
        char pre[64], what[64];
        cr_assert_eq(system(rm), 0);
        snprintf(pre, sizeof pre, "trap '' XFSZ; ulimit -f %d;", kb);
        snprintf(what, sizeof what, "file size limit %d KiB", kb);
        expect_clean_end(run(pre, "", flags, true, "out"), what);
        cr_expect_eq(run("", "", flags, true, "out2"), 0, "after %s: %s", what, err);
        cr_expect(same_as_reference("out2"), "after %s: wrong outputs\n%s", what, err);
    }
}

/*
 * The disk full while the cache file is written, cut at every stage of
 * it (header, key, module, metadata, checksum): the run uses its module
 * and says once that it was not stored; no torn file is left, so the
 * next run compiles again (no reject), and the one after loads it.
 */
Test(faults, disk_full_on_cache_writes, .init = setup, .fini = teardown, .timeout = 900)
{
    if (!have_shim())
        cr_skip_test("skipped: the fault shim is not built under the sanitizers");
    reference();
    char flags[256], rm[160];
    snprintf(flags, sizeof flags, "XLAC_FLAGS='--cache_dir=%s/cache --stats'", xt_tmp);
    snprintf(rm, sizeof rm, "rm -rf %s/cache", xt_tmp);
    static const long cuts[] = {0, 4, 8, 12, 40, 100, 1000, 8000, 15000, 16300, 16390, 16400};
    int unstored = 0;
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        char env[320];
        cr_assert_eq(system(rm), 0);
        snprintf(env, sizeof env, "XLAC_FAULT_ENOSPC_DIR=%s/cache XLAC_FAULT_ENOSPC_AFTER=%ld", xt_tmp,
                 cuts[i]);
        cr_expect_eq(run("", env, flags, true, "out"), 0, "full after %ld bytes: %s", cuts[i], err);
        cr_expect(same_as_reference("out") && stat_of("compiles") == 1 && stat_of("fallbacks") == 0,
                  "full after %ld bytes: %s", cuts[i], err);
        bool stored = !strstr(err, "cannot write disk cache file");
        unstored += !stored;
        cr_expect(stored || strstr(err, "No space left on device"), "%s", err);
        cr_expect_eq(run("", "", flags, true, "out"), 0, "%s", err);
        cr_expect(same_as_reference("out") && stat_of("disk_rejects") == 0 &&
                      stat_of("disk_hits") == stored,
                  "after full at %ld bytes: %s", cuts[i], err);
        cr_expect_eq(run("", "", flags, true, "out"), 0, "%s", err);
        cr_expect(stat_of("disk_hits") == 1 && stat_of("compiles") == 0, "%s", err);
    }
    cr_expect_geq(unstored, 8, "the disk filled up before the end of the file in most cuts (%d)",
                  unstored);
}

Test(faults, eintr_and_signal_storms, .init = setup, .fini = teardown, .timeout = 600)
{
    if (!have_shim())
        cr_skip_test("skipped: the fault shim is not built under the sanitizers");
    reference();
    char cold[256], warm[256];
    snprintf(cold, sizeof cold, "XLAC_FLAGS='--disk_cache=0 --stats'");
    snprintf(warm, sizeof warm, "XLAC_FLAGS='--cache_dir=%s/cache --stats'", xt_tmp);
    cr_assert_eq(run("", "", warm, true, "out"), 0, "%s", err); /* fills the disk cache */
    const char *envs[] = {"XLAC_FAULT_EINTR=1", "XLAC_FAULT_SIGNALS=200"};
    for (int e = 0; e < 2; e++)
        for (int c = 0; c < 2; c++) {
            int rc = run("", envs[e], c ? warm : cold, true, "out");
            cr_expect_eq(rc, 0, "%s %s: exit %d\n%s", envs[e], c ? warm : cold, rc, err);
            cr_expect(same_as_reference("out"), "%s %s: wrong outputs\n%s", envs[e],
                      c ? warm : cold, err);
            cr_expect(strstr(err, "fallbacks=0 "), "%s %s: EINTR made a cluster fall back\n%s",
                      envs[e], c ? warm : cold, err);
            if (c)
                cr_expect(strstr(err, "disk_hits=1 ") && strstr(err, "disk_rejects=0 "),
                          "%s: the warm cache was not used\n%s", envs[e], err);
        }
}
