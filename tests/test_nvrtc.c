/*
 * The CUDA side of the code generator, checked without a GPU: every module
 * that the random graphs produce is compiled by NVRTC for sm_90, and the
 * resource report (ptxas -v on the module's PTX for sm_90: registers,
 * stack frame, spill stores and loads; cuobjdump is not part of this
 * machine's toolkit) must show no spills for any kernel. Runs in builds
 * with the CUDA toolkit; elsewhere each test says it is skipped.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile.h"
#include "support/randgraph.h"
#include "xg_impl.h"
#include "xlac/xlac.h"

static xe_status st;

#ifdef XG_HAVE_CUDA
/* ptxas -v on PTX for sm_90; returns its report (malloc'd). */
static char *resource_report(const char *ptx)
{
    char path[] = "/tmp/xlac-test-ptx-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, ptx, strlen(ptx)), (ssize_t)strlen(ptx));
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "PATH=\"$PATH:/usr/local/cuda/bin\" ptxas -arch=sm_90 -v -o /dev/null %s 2>&1", path);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, p);
    buf[n] = '\0';
    pclose(p);
    unlink(path);
    return buf;
}

static void check_cuda(const char *text)
{
    xe_graph *g = xe_parse_string(text, "rand.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_type types[8];
    for (int k = 0; k < g->n_inputs; k++)
        types[k] = g->nodes[g->inputs[k]]->type;
    xg_options o;
    xg_options_default(&o);
    xg_artifact *a = NULL;
    cr_assert_eq(xg_build(g, types, false, XG_TARGET_CUDA, 90, &o, &a, &st), XE_OK, "%s\n%s", st.msg, text);
    cr_assert_gt(a->code_len, 0);
    char *ptx = xg_nvrtc_ptx(a->source, 90, false);
    cr_assert_not_null(ptx);
    char *report = resource_report(ptx);
    cr_assert(strstr(report, "Used"), "no resource report:\n%s", report);
    for (char *f = strstr(report, "spill stores"); f; f = strstr(f + 1, "spill stores")) {
        char *line = f;
        while (line > report && line[-1] != '\n')
            line--;
        cr_assert_eq(atoi(strstr(line, "stack frame, ") + 13), 0, "a kernel spills:\n%s\n%s", report, a->source);
    }
    free(report);
    free(ptx);
    xg_artifact_destroy(a);
    xe_graph_destroy(g);
}
#endif

Test(nvrtc, random_graph_modules_compile_for_sm90_without_spills, .timeout = 900)
{
#ifndef XG_HAVE_CUDA
    cr_skip_test("skipped: built without the CUDA toolkit (no NVRTC)");
#else
    for (uint64_t seed = 1; seed <= 60; seed++) {
        char *text = randgraph_text(seed, &(randgraph_options){.n_ops = 4 + (int)(seed % 8)});
        check_cuda(text);
        free(text);
    }
#endif
}

Test(nvrtc, benchmark_workloads_compile_for_sm90, .timeout = 300)
{
#ifndef XG_HAVE_CUDA
    cr_skip_test("skipped: built without the CUDA toolkit (no NVRTC)");
#else
    const char *names[] = {"fused_sum", "gelu", "softmax_rows", "layernorm_rows", "column_sum", "adam_step"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/bench/graphs/%s.xg", XLAC_SOURCE_DIR, names[i]);
        FILE *f = fopen(path, "r");
        cr_assert_not_null(f, "%s", path);
        char *text = calloc(1, 1 << 16);
        size_t n = fread(text, 1, (1 << 16) - 1, f);
        text[n] = '\0';
        fclose(f);
        check_cuda(text);
        free(text);
    }
#endif
}

Test(nvrtc, gpu_execution_matches_the_cpu)
{
    if (!xe_gpu_available())
        cr_skip_test("skipped: no CUDA device");
    const char *text = "xlac.graph v1\ninput x: f32[300,70]\ninput y: f32[70]\n"
                       "a = mul(x, y)\nb = tanh(a)\ns = reduce_sum(b, axes=[1])\nm = reduce_max(b, axes=[0])\n"
                       "output s\noutput m\n";
    xe_graph *g = xe_parse_string(text, "gpu.xg", &st);
    cr_assert_not_null(g);
    xe_type types[2] = {g->nodes[g->inputs[0]]->type, g->nodes[g->inputs[1]]->type};
    xg_options o;
    xg_options_default(&o);
    xg_artifact *a = NULL;
    xg_program *p = NULL;
    cr_assert_eq(xg_build(g, types, false, XG_TARGET_CUDA, xe_gpu_arch(), &o, &a, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(xg_program_load(a, g, types, &p, &st), XE_OK, "%s", st.msg);
    xe_tensor *in[2], *din[2], *got[2], *want[2];
    for (int k = 0; k < 2; k++) {
        in[k] = xe_tensor_new(XE_F32, &types[k].shape, XE_DEV_CPU, &st);
        for (int64_t i = 0; i < xe_tensor_numel(in[k]); i++)
            ((float *)in[k]->data)[i] = (float)((i * 7919 + k * 31) % 1000) / 500.0f - 1.0f;
        din[k] = xe_tensor_to_device(in[k], XE_DEV_GPU, &st);
    }
    cr_assert_eq(xg_program_run(p, din, 2, got, 2, &st), XE_OK, "%s", st.msg);
    xe_session *s = xe_session_new(g, &(xe_session_options){.place = XE_PLACE_CPU}, &st);
    cr_assert_eq(xe_session_run(s, in, want, &st), XE_OK, "%s", st.msg);
    for (int k = 0; k < 2; k++) {
        xe_tensor *h = xe_tensor_to_device(got[k], XE_DEV_CPU, &st);
        for (int64_t i = 0; i < xe_tensor_numel(h); i++)
            cr_assert_float_eq(((float *)h->data)[i], ((float *)want[k]->data)[i], 1e-3);
        xe_tensor_release(h);
        xe_tensor_release(got[k]);
        xe_tensor_release(want[k]);
        xe_tensor_release(in[k]);
        xe_tensor_release(din[k]);
    }
    xe_session_destroy(s);
    xg_program_destroy(p);
    xg_artifact_destroy(a);
}
