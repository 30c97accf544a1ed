/*
 * Floating-point modes after a --fast_math cluster ran: the process's own
 * MXCSR (FTZ, DAZ, rounding) is what it was, and ops outside the cluster
 * (per-op kernels, here `mul` excluded from clustering) keep NaN, infinity,
 * signed zero and subnormal results. The compiler is a wrapper that adds
 * -ffast-math, whose shared object sets FTZ/DAZ when it is loaded
 * (crtfastmath.o), so the test fails if the save and restore around dlopen
 * and launches is lost. Inside the cluster, --fast_math keeps NaN and
 * infinity and does not flush subnormals.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xg_impl.h"
#include "xlac/xlac.h"
#include "xlac_plugin.h"
#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* c = b * one runs per op (mul excluded) after the cluster {a, b}; d = x * one per op too. */
static const char *graph_text = "xlac.graph v1\ninput x: f32[6]\n"
                                "one = const(f32[], 1.0)\n"
                                "a = add(x, x)\nb = sub(a, x)\nc = mul(b, one)\nd = mul(x, one)\n"
                                "output b\noutput c\noutput d\n";

static char dir[64];
static xlac_state state; /* the plugin, installed by install() */

static void install(bool wrapper_sets_ftz)
{
    snprintf(dir, sizeof dir, "/tmp/xlac-fp-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    xe_status st;
    xlac_flags f;
    xlac_env env = {.auto_jit = "1", .flags = "--fast_math --ops_to_exclude=mul --disk_cache=0"};
    cr_assert_eq(xlac_flags_parse(&f, &env, &st), XE_OK, "%s", st.msg);
    static char cc[128];
    snprintf(cc, sizeof cc, "%s/ffast-math-cc", dir);
    FILE *s = fopen(cc, "w");
    cr_assert_not_null(s);
    fprintf(s, "#!/bin/sh\nexec cc \"$@\" %s\n", wrapper_sets_ftz ? "-ffast-math" : "");
    fclose(s);
    chmod(cc, 0700);
    f.xg.cc = cc;
    xlac_state_init(&state);
    cr_assert_eq(xlac_plugin_install(&state, &f, &st), XE_OK, "%s", st.msg);
}

static void uninstall(void)
{
    xlac_plugin_shutdown(&state);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

static unsigned fp_mode(void)
{
#if defined(__x86_64__)
    return _mm_getcsr() & ~0x3fu; /* control bits only, not the sticky exception flags */
#else
    return 0;
#endif
}

static bool same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Runs the graph twice (the first compiles and loads the module); checks the second run's outputs. */
static void run_and_check(void)
{
    xe_status st;
    xe_graph *g = xe_parse_string(graph_text, "fp.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_session *s = xe_session_new(g, &(xe_session_options){0}, &st);
    cr_assert_not_null(s, "%s", st.msg);
    const float sub = 1e-39f; /* subnormal */
    const float x[6] = {NAN, INFINITY, -INFINITY, -0.0f, sub, -sub};
    xe_shape sh = {1, {6}};
    xe_tensor *in = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st);
    memcpy(in->data, x, sizeof x);
    unsigned mode = fp_mode();
    for (int run = 0; run < 2; run++) {
        xe_tensor *out[3] = {NULL};
        cr_assert_eq(xe_session_run(s, &in, out, &st), XE_OK, "%s", st.msg);
        cr_assert_eq(fp_mode(), mode, "MXCSR changed by a run: %#x, was %#x", fp_mode(), mode);
        const float *b = out[0]->data, *c = out[1]->data, *d = out[2]->data;
        cr_assert(isnan(b[0]) && isnan(c[0]), "NaN stays NaN in and after the cluster");
        /* (inf + inf) - inf: NaN in IEEE order, inf when reassociated to x; never finite */
        cr_assert(!isfinite(b[1]) && !isfinite(b[2]), "%g %g", b[1], b[2]);
        cr_assert(same_bits(b[4], sub) && same_bits(b[5], -sub), "no flush to zero in the cluster: %g", b[4]);
        cr_assert(same_bits(c[4], sub) && same_bits(c[5], -sub), "per-op mul keeps subnormals: %g", c[4]);
        for (int i = 0; i < 6; i++) /* per op, exactly x * 1 */
            cr_assert(same_bits(d[i], x[i]) || (isnan(d[i]) && isnan(x[i])), "d[%d] = %g, want %g", i, d[i], x[i]);
        for (int k = 0; k < 3; k++)
            xe_tensor_release(out[k]);
    }
    char line[512] = "";
    FILE *m = fmemopen(line, sizeof line - 1, "w");
    xlac_print_stats(&state, m);
    fclose(m);
    cr_assert(strstr(line, " compiles=1 ") && strstr(line, "launches=2 ") && strstr(line, "fallbacks=0 ") &&
                  strstr(line, " disk_rejects=0 "),
              "the cluster compiled once and both runs ran compiled code: %s", line);
    volatile float tiny = sub;
    cr_assert(tiny * 0.5f != 0.0f, "the process itself still has subnormals");
    xe_tensor_release(in);
    xe_session_destroy(s);
}

Test(fp_modes, fast_math_module_setting_ftz_daz_does_not_leak)
{
    install(true);
    run_and_check();
    uninstall();
}

Test(fp_modes, fast_math_keeps_nan_inf_and_subnormals)
{
    install(false);
    run_and_check();
    uninstall();
}
