/*
 * Demotion of slower clusters (codegen/cache/cache.c, policy step 5): a
 * signature whose per-op run was timed (xg_cluster_per_op_time, as the
 * plugin reports each fallback run) has its first compiled runs timed,
 * and when the fastest of them (the first excluded) is slower than the
 * fastest per-op run, it runs per op from then on, with one line on
 * stderr and xg_stats.demoted counted.
 *
 * The clock is real but the verdicts are not left to it: the per-op
 * time reported is 1 ns (no compiled run can beat it: demoted) or 1000 s
 * (every compiled run beats it: kept).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "support/cachefx.h"
#include "xg_impl.h"
#include "xlac/xlac.h"

static const char *text = "xlac.graph v1\ninput x: f32[64,8]\ninput y: f32[64,8]\n"
                          "a = mul(x, y)\nb = add(a, x)\noutput b\n";

/* One call of the cluster through the cache; a fallback is run per op here and reported with per_op_us. */
static bool run_once(xg_cache *c, const xe_graph *g, double per_op_us)
{
    xe_status st;
    xe_shape sh = {2, {64, 8}};
    xe_tensor *x = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st), *y = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st);
    cr_assert(x && y, "%s", st.msg);
    for (int i = 0; i < 64 * 8; i++) {
        ((float *)x->data)[i] = (float)(i % 7);
        ((float *)y->data)[i] = 0.5f;
    }
    xe_tensor *in[2] = {x, y}, *out[1] = {NULL};
    xg_outcome oc = XG_FALLBACK;
    cr_assert_eq(xg_run_cluster(c, g, NULL, "cluster_0", XE_DEV_CPU, in, out, false, &oc, &st), XE_OK, "%s",
                 st.msg);
    if (oc == XG_RAN) {
        for (int i = 0; i < 64 * 8; i++)
            cr_assert_float_eq(((float *)out[0]->data)[i], 1.5f * (float)(i % 7), 1e-6);
        xe_tensor_release(out[0]);
    } else {
        xg_cluster_per_op_time(c, g, NULL, XE_DEV_CPU, in, per_op_us);
    }
    xe_tensor_release(x);
    xe_tensor_release(y);
    return oc == XG_RAN;
}

/* Threshold 2: the first call per op (timed at per_op_us), then compiled; how the next 8 calls ran. */
static void run_series(double per_op_us, bool ran[8], xg_stats *stats, char **err)
{
    xt_cache_dir f;
    xt_cache_dir_init(&f, "demote", text);
    f.o.compile_threshold = 2;
    f.o.disk_cache = false;
    f.o.async_compilation = false;
    xe_status st;
    xg_cache *c = xg_cache_new(&f.o, &st);
    cr_assert_not_null(c, "%s", st.msg);
    xt_capture k;
    xt_capture_begin(&k);
    bool first = run_once(c, f.g, per_op_us);
    for (int i = 0; i < 8; i++)
        ran[i] = run_once(c, f.g, per_op_us);
    *err = xt_capture_end(&k);
    cr_assert_not(first, "the first call runs per op (threshold 2)");
    *stats = xt_stats(c);
    xg_cache_destroy(c);
    xt_cache_dir_fini(&f);
}

Test(demote, a_cluster_slower_than_per_op_runs_per_op_from_then_on)
{
    bool ran[8];
    xg_stats s;
    char *err;
    run_series(0.001, ran, &s, &err);
    for (int i = 0; i < 4; i++) /* the first compiled run, then the 3 timed ones */
        cr_assert(ran[i], "call %d should have run compiled", i + 2);
    for (int i = 4; i < 8; i++)
        cr_assert_not(ran[i], "call %d should have run per op after the demotion", i + 2);
    cr_assert_eq(s.demoted, 1);
    cr_assert_eq(xt_occurrences(err, "cluster_0 ran slower compiled"), 1, "%s", err);
    cr_assert(strstr(err, "runs per op from now on"), "%s", err);
    free(err);
}

Test(demote, a_cluster_faster_than_per_op_is_kept)
{
    bool ran[8];
    xg_stats s;
    char *err;
    run_series(1e9, ran, &s, &err);
    for (int i = 0; i < 8; i++)
        cr_assert(ran[i], "call %d should have run compiled", i + 2);
    cr_assert_eq(s.demoted, 0);
    cr_assert_eq(xt_occurrences(err, "slower compiled"), 0, "%s", err);
    free(err);
}

/* Without a per-op time (threshold 1: compiled from the first call), nothing is timed or demoted. */
Test(demote, no_per_op_time_no_verdict)
{
    xt_cache_dir f;
    xt_cache_dir_init(&f, "demote", text);
    f.o.disk_cache = false;
    f.o.async_compilation = false;
    xe_status st;
    xg_cache *c = xg_cache_new(&f.o, &st);
    cr_assert_not_null(c, "%s", st.msg);
    for (int i = 0; i < 8; i++)
        cr_assert(run_once(c, f.g, 0.001), "call %d", i + 1);
    cr_assert_eq(xt_stats(c).demoted, 0);
    xg_cache_destroy(c);
    xt_cache_dir_fini(&f);
}

/*
 * Runs that overlapped a compile are never compared: the compiler (a script that sleeps 1 s, then cc)
 * shares the cores, the compiled runs do not. Threshold 2, compiled in the background: call 1 runs per
 * op with nothing compiling (1000 s reported: any compiled run beats it); from call 2 on, the calls
 * run per op while the signature compiles, each reported at 1 ns. Before, those were taken as the
 * per-op time and the cluster was demoted ("ran slower compiled than per op") by a noisy comparison.
 */
static void overlapped_series(int threshold, double first_us)
{
    xt_cache_dir f;
    xt_cache_dir_init(&f, "demote", text);
    char cc[128];
    snprintf(cc, sizeof cc, "%s/slowcc", f.dir);
    FILE *s = fopen(cc, "w");
    cr_assert_not_null(s);
    fputs("#!/bin/sh\nsleep 1\nexec cc \"$@\"\n", s);
    cr_assert_eq(fclose(s), 0);
    cr_assert_eq(chmod(cc, 0755), 0);
    f.o.cc = cc;
    f.o.compile_threshold = threshold;
    f.o.disk_cache = false;
    f.o.async_compilation = true;
    xe_status st;
    xg_cache *c = xg_cache_new(&f.o, &st);
    cr_assert_not_null(c, "%s", st.msg);
    xt_capture k;
    xt_capture_begin(&k);
    if (threshold > 1)
        cr_assert_not(run_once(c, f.g, first_us), "call 1 runs per op (threshold)");
    int calls = 0;
    while (!run_once(c, f.g, 0.001) && calls++ < 3000) /* per op while it compiles: 1 ns each */
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    xg_cache_wait(c);
    for (int i = 0; i < 8; i++)
        cr_expect(run_once(c, f.g, 0.001), "call %d after the compile should run compiled", i);
    char *err = xt_capture_end(&k);
    cr_expect_eq(xt_stats(c).demoted, 0, "demoted from runs that overlapped a compile: %s", err);
    cr_expect_eq(xt_occurrences(err, "slower compiled"), 0, "%s", err);
    free(err);
    xg_cache_destroy(c);
    xt_cache_dir_fini(&f);
}

Test(demote, runs_that_overlapped_a_compile_are_not_compared, .timeout = 120)
{
    overlapped_series(2, 1e9);
}

/* At the default --compile_threshold=1 nothing is compared (docs/codegen.md), whatever ran per op. */
Test(demote, nothing_is_compared_at_the_default_threshold, .timeout = 120)
{
    overlapped_series(1, 0);
}
