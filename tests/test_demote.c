/*
 * Demotion of slower clusters (codegen/cache/demote.c): a signature whose
 * per-op run was timed (xg_cluster_per_op_time, as the plugin reports each
 * fallback run, and each probe the cache asks for after a compiled run
 * when nothing ran per op before the compile) has its next compiled runs
 * timed, and when the fastest of them (the first excluded) is slower than
 * the fastest per-op run, it runs per op from then on, with one line on
 * stderr, xg_stats.demoted counted and a record in xg_cache_demotions.
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

/* 16384 x 8: a compiled run takes some tens of microseconds, over the 5 us a verdict needs */
#define ROWS 16384
static const char *text = "xlac.graph v1\ninput x: f32[16384,8]\ninput y: f32[16384,8]\n"
                          "a = mul(x, y)\nb = add(a, x)\noutput b\n";

/*
 * One call of the cluster through the cache; a fallback is "run" per op here and reported at
 * per_op_us, plus, when spanning, the call's own time: a real per-op run's time covers the run, so
 * a call that the cache saw compiling reports a time that began before the compile ended. A bare
 * 1 ns would claim the run began after it, whenever the compile ends between the decision and the
 * report (a preemption there, on a loaded machine), and the run would be counted.
 */
static bool run_call(xg_cache *c, const xe_graph *g, double per_op_us, bool spanning)
{
    double t0 = xe_now_us();
    xe_status st;
    xe_tensor *in[2], *out[1] = {NULL};
    xt_mul_add_inputs(ROWS, in);
    xg_outcome oc = XG_FALLBACK;
    cr_assert_eq(xg_run_cluster(c, g, NULL, "cluster_0", XE_DEV_CPU, in, out, false, &oc, &st), XE_OK, "%s",
                 st.msg);
    if (oc == XG_RAN) {
        xt_mul_add_check(out[0], ROWS);
    } else {
        xg_cluster_per_op_time(c, g, NULL, XE_DEV_CPU, in, per_op_us + (spanning ? xe_now_us() - t0 : 0));
    }
    xe_tensor_release(in[0]);
    xe_tensor_release(in[1]);
    return oc == XG_RAN;
}

static bool run_once(xg_cache *c, const xe_graph *g, double per_op_us)
{
    return run_call(c, g, per_op_us, false);
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

/* A caller that runs no probes (xg_run_cluster) and reports no per-op run gives no verdict. */
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
 * run per op while the signature compiles, each reported at 1 ns plus its own span. Before, those were taken as the
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
    while (!run_call(c, f.g, 0.001, true) && calls++ < 3000) /* per op while it compiles: 1 ns + the call */
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

/* At the default --compile_threshold=1 too, the per-op runs that overlapped the compile are not compared. */
Test(demote, overlapped_runs_are_not_compared_at_the_default_threshold_either, .timeout = 120)
{
    overlapped_series(1, 0);
}

/* ---- the default threshold: probes after compiled runs (xg_run_info.probe) ---------------------- */

static const char *dyn = "xlac.graph v1\ninput x: f32[?,8]\ninput y: f32[?,8]\n"
                         "a = mul(x, y)\nb = add(a, x)\noutput b\n";

/* What one call of probed() did. */
typedef struct call {
    bool ran;   /* compiled code ran */
    bool probe; /* the cache asked for a per-op probe (answered with the time given) */
    const char *reason;
} call;

/* One call with rows x 8 inputs, as the plugin makes it: a fallback or an asked-for probe is "run"
 * per op and reported at per_op_us (0: not reported); must: a jit block's cluster. */
static call probed_must(xg_cache *c, const xe_graph *g, int rows, double per_op_us, bool must)
{
    xe_status st;
    xe_tensor *in[2], *out[1] = {NULL};
    xt_mul_add_inputs(rows, in);
    xg_outcome oc = XG_FALLBACK;
    xg_run_info info = {.can_probe = true};
    cr_assert_eq(xg_run_cluster_info(c, g, NULL, "cluster_0", XE_DEV_CPU, in, out, must, &oc, &info, &st), XE_OK,
                 "%s", st.msg);
    call r = {.ran = oc == XG_RAN, .probe = info.probe, .reason = info.reason};
    if (r.ran) {
        xt_mul_add_check(out[0], rows);
    }
    cr_assert(!r.probe || r.ran, "a probe is asked only after a compiled run");
    if ((!r.ran || r.probe) && per_op_us > 0)
        xg_cluster_per_op_time(c, g, NULL, XE_DEV_CPU, in, per_op_us);
    xe_tensor_release(in[0]);
    xe_tensor_release(in[1]);
    return r;
}

static call probed(xg_cache *c, const xe_graph *g, int rows, double per_op_us)
{
    return probed_must(c, g, rows, per_op_us, false);
}

/* A cache of default options (threshold 1, demotion on), compiling in place, no disk. */
static xg_cache *default_cache(xt_cache_dir *f, const char *graph)
{
    xt_cache_dir_init(f, "demote", graph);
    f->o.disk_cache = false;
    cr_assert_eq(f->o.compile_threshold, 1, "the default threshold");
    cr_assert(f->o.demote, "demotion is on by default");
    xe_status st;
    xg_cache *c = xg_cache_new(&f->o, &st);
    cr_assert_not_null(c, "%s", st.msg);
    return c;
}

Test(demote, at_the_default_threshold_probes_time_per_op_and_a_slower_program_is_demoted)
{
    xt_cache_dir f;
    xg_cache *c = default_cache(&f, text);
    xt_capture k;
    xt_capture_begin(&k);
    call r[8];
    for (int i = 0; i < 8; i++)
        r[i] = probed(c, f.g, ROWS, 0.001);
    char *err = xt_capture_end(&k);
    /* call 1 compiles at first sight and runs compiled; it and call 2 are followed by a probe
       (two per-op runs measured, the first cold); calls 2-5 are timed (2 excluded): demoted */
    cr_assert(r[0].ran && r[0].probe && r[1].ran && r[1].probe, "compiled at first sight, then probed twice");
    for (int i = 2; i < 5; i++)
        cr_assert(r[i].ran && !r[i].probe, "call %d: compiled, timed, no more probes", i + 1);
    for (int i = 5; i < 8; i++) {
        cr_assert_not(r[i].ran, "call %d should have run per op after the demotion", i + 1);
        cr_assert_str_eq(r[i].reason, "slower compiled than per op (demoted)");
    }
    xg_stats s = xt_stats(c);
    cr_assert_eq(s.demoted, 1);
    cr_assert_eq(s.compiles, 1);
    cr_assert_eq(xt_occurrences(err, "cluster_0 ran slower compiled"), 1, "%s", err);
    xg_demotion d[4];
    cr_assert_eq(xg_cache_demotions(c, d, 4), 1);
    cr_assert_str_eq(d[0].cluster, "cluster_0");
    cr_assert_str_eq(d[0].types, "f32[16384,8], f32[16384,8]");
    cr_assert_not(d[0].generic);
    cr_assert_float_eq(d[0].per_op_us, 0.001, 1e-9);
    cr_assert_gt(d[0].compiled_us, d[0].per_op_us);
    free(err);
    xg_cache_destroy(c);
    xt_cache_dir_fini(&f);
}

/* A per-op time is counted only when no compile ended within it: each call waits 30 ms, and reports
 * 20 ms (a 64x8 program runs in microseconds: it is kept). */
Test(demote, at_the_default_threshold_a_faster_program_is_kept)
{
    xt_cache_dir f;
    xg_cache *c = default_cache(&f, text);
    int probes = 0;
    for (int i = 0; i < 10; i++) {
        nanosleep(&(struct timespec){0, 30 * 1000 * 1000}, NULL);
        call r = probed(c, f.g, ROWS, 20000);
        cr_assert(r.ran, "call %d should have run compiled", i + 1);
        probes += r.probe;
    }
    cr_assert_eq(probes, 2, "two per-op runs measured, then no more probes");
    cr_assert_eq(xt_stats(c).demoted, 0);
    xg_demotion d[1];
    cr_assert_eq(xg_cache_demotions(c, d, 1), 0);
    xg_cache_destroy(c);
    xt_cache_dir_fini(&f);
}

/* --demote=0: no probe is asked, nothing is timed, nothing demoted, whatever ran per op. */
Test(demote, demote_off_asks_no_probe)
{
    xt_cache_dir f;
    xt_cache_dir_init(&f, "demote", text);
    f.o.disk_cache = false;
    f.o.demote = false;
    f.o.compile_threshold = 2;
    xe_status st;
    xg_cache *c = xg_cache_new(&f.o, &st);
    cr_assert_not_null(c, "%s", st.msg);
    cr_assert_not(probed(c, f.g, ROWS, 0.001).ran, "threshold 2: per op first (reported at 1 ns)");
    for (int i = 0; i < 8; i++) {
        call r = probed(c, f.g, ROWS, 0.001);
        cr_assert(r.ran && !r.probe, "call %d: compiled, no probe", i + 2);
    }
    cr_assert_eq(xt_stats(c).demoted, 0);
    xg_cache_destroy(c);
    xt_cache_dir_fini(&f);
}

/* A jit block's cluster must compile: it is never probed nor demoted. */
Test(demote, a_must_compile_cluster_is_not_probed)
{
    xt_cache_dir f;
    xg_cache *c = default_cache(&f, text);
    for (int i = 0; i < 8; i++) {
        call r = probed_must(c, f.g, ROWS, 0.001, true);
        cr_assert(r.ran && !r.probe, "call %d: compiled, no probe", i + 1);
    }
    cr_assert_eq(xt_stats(c).demoted, 0);
    xg_cache_destroy(c);
    xt_cache_dir_fini(&f);
}

/*
 * A shape-generic program (--dynamic_after=2: the third shape of the pattern) is measured at the
 * first shape it serves: probes for that shape only, its compiled runs timed at that shape only;
 * slower, the generic program is demoted and every shape it served runs per op.
 */
Test(demote, a_shape_generic_program_is_compared_at_the_first_shape_it_serves)
{
    xt_cache_dir f;
    xg_cache *c = default_cache(&f, dyn);
    cr_assert_eq(f.o.dynamic_after, 2);
    xt_capture k;
    xt_capture_begin(&k);
    cr_assert(probed(c, f.g, 64, 0).ran, "[64,8]: its own program (probe not answered)");
    cr_assert(probed(c, f.g, 32, 0).ran, "[32,8]: its own program");
    call g1 = probed(c, f.g, ROWS, 0.001); /* the generic program's first shape: probed */
    cr_assert(g1.ran && g1.probe, "[16384,8]: the generic program, probed");
    call other = probed(c, f.g, 24, 0.001);
    cr_assert(other.ran && !other.probe, "[24,8]: the generic program serves it, unprobed");
    cr_assert(probed(c, f.g, ROWS, 0.001).probe, "[16384,8] again: its second probe");
    /* [16384,8]'s second call was its first timed run (excluded); three more, other shapes between (not
       timed: no per-op time of their own), and the verdict */
    for (int i = 0; i < 3; i++) {
        cr_assert(probed(c, f.g, 24, 0.001).ran);
        cr_assert(probed(c, f.g, ROWS, 0.001).ran, "[16384,8] timed run %d", i + 1);
    }
    char *err = xt_capture_end(&k);
    cr_assert_eq(xt_stats(c).demoted, 1, "%s", err);
    cr_assert(strstr(err, "at f32[16384,8], f32[16384,8]") && strstr(err, "shape-generic program runs per op"), "%s",
              err);
    call after = probed(c, f.g, 40, 0);
    cr_assert_not(after.ran, "[40,8] would have been the generic program's: per op");
    cr_assert_str_eq(after.reason, "slower compiled than per op (demoted)");
    cr_assert(probed(c, f.g, 64, 0).ran, "[64,8] keeps its own program");
    xg_demotion d[2];
    cr_assert_eq(xg_cache_demotions(c, d, 2), 1);
    cr_assert(d[0].generic);
    cr_assert_str_eq(d[0].types, "f32[16384,8], f32[16384,8]");
    free(err);
    xg_cache_destroy(c);
    xt_cache_dir_fini(&f);
}
