/*
 * QDQ models (QuantizeLinear / DequantizeLinear around f32 ops) against
 * onnxruntime: tests/data/onnx/qdq/ holds models that onnxruntime's
 * quantizer wrote (quantize_static, QDQ format, per tensor and per channel)
 * and hand-written Q/DQ pairs of opsets 10, 13, 19 and 21 (u8, i8, i16,
 * u16, per tensor and per axis), a quantized residual block (Conv + x,
 * Relu: one quant_conv2d and one quant_add) and hand-written Adds between
 * QDQ pairs (u8 and i8, rounding ties, saturation, a DequantizeLinear with
 * a second reader, a sum an If branch also reads), each with its input and onnxruntime's outputs
 * (tests/onnx/make_qdq_models.py; onnxruntime with its optimizations off,
 * the QDQ reference). Each runs op by op in process
 * and clustered through xlac-run (LD_PRELOAD=libxlac.so XLAC_AUTO_JIT=2);
 * quantized outputs must equal onnxruntime's exactly, float outputs within
 * 1e-5 + 1e-4 |want| (ties to even, saturation and per-axis scales are in
 * the inputs).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/tmpdir.h"
#include "xlac/xlac.h"

#define DATA XLAC_SOURCE_DIR "/tests/data/onnx/qdq"
#define XLAC_RUN XLAC_BINARY_DIR "/bin/xlac-run"

static xe_status st;

static void setup(void)
{
    xe_status_clear(&st);
    xt_tmp_make("/tmp/xlac-qdq-XXXXXX");
}

TestSuite(qdq, .init = setup, .fini = xt_tmp_fini, .timeout = 120);

static xe_tensor *npy(const char *path)
{
    xe_tensor *t = xe_npy_read(path, &st);
    cr_assert_not_null(t, "%s: %s", path, st.msg);
    return t;
}

/* got against onnxruntime's want: dtype, shape, integers exact, floats within 1e-5 + 1e-4 |want|. */
static void expect_same(const char *what, const xe_tensor *got, const xe_tensor *want)
{
    char a[128], b[128];
    cr_assert(got->dtype == want->dtype && xe_shape_equal(&got->shape, &want->shape), "%s: got %s, want %s", what,
              xe_type_str(&(xe_type){got->dtype, got->shape}, a, sizeof a),
              xe_type_str(&(xe_type){want->dtype, want->shape}, b, sizeof b));
    bool exact = !xe_dtype_is_float(want->dtype);
    for (int64_t i = 0; i < xe_tensor_numel(want); i++) {
        double g = xe_load_f64(got->data, got->dtype, i), w = xe_load_f64(want->data, want->dtype, i);
        bool ok = exact ? g == w : fabs(g - w) <= 1e-5 + 1e-4 * fabs(w);
        cr_assert(ok, "%s: element %lld: got %.9g, want %.9g", what, (long long)i, g, w);
    }
}

/* NAME op by op in process; the output names into names[] (for the clustered run's files). */
static void run_op_by_op(const char *name, int n_in, int n_out, char names[][128])
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s.onnx", DATA, name);
    xe_graph *g = xe_onnx_load(p, NULL, &st);
    cr_assert_not_null(g, "%s: %s", name, st.msg);
    xe_tensor *in[4] = {0}, *out[4] = {0};
    for (int k = 0; k < n_in; k++) {
        snprintf(p, sizeof p, "%s/%s.in%d.npy", DATA, name, k);
        in[k] = npy(p);
    }
    xe_session_options so = {.place = XE_PLACE_CPU};
    xe_session *s = xe_session_new(g, &so, &st);
    cr_assert_not_null(s, "%s: %s", name, st.msg);
    const xe_graph *sg = xe_session_graph(s);
    cr_assert_eq(sg->n_outputs, n_out);
    cr_assert_eq(xe_session_run(s, in, out, &st), XE_OK, "%s: %s", name, st.msg);
    for (int k = 0; k < n_out; k++) {
        snprintf(names[k], 128, "%s", sg->nodes[sg->outputs[k]]->name);
        snprintf(p, sizeof p, "%s/%s.out%d.npy", DATA, name, k);
        xe_tensor *want = npy(p);
        char what[256];
        snprintf(what, sizeof what, "%s op by op, output %s", name, names[k]);
        expect_same(what, out[k], want);
        xe_tensor_release(want);
        xe_tensor_release(out[k]);
    }
    for (int k = 0; k < n_in; k++)
        xe_tensor_release(in[k]);
    xe_session_destroy(s);
}

/* NAME clustered through xlac-run with the plugin, input 0 fed as x.npy. */
static void run_clustered(const char *name, int n_out, char names[][128])
{
    char cmd[2048], model[512];
    snprintf(model, sizeof model, "%s/%s.onnx", DATA, name);
    snprintf(cmd, sizeof cmd, "mkdir -p feed && cp %s/%s.in0.npy feed/x.npy", DATA, name);
    char *log = NULL;
    cr_assert_eq(xt_sh("", cmd, &log), 0, "%s: %s", cmd, log ? log : "");
    free(log);
    /* xt_sh's ENV_WORDS apply to the first command of CMD only: xlac-run alone, preloaded */
    snprintf(cmd, sizeof cmd, "%s %s --device cpu --feed feed --save-outputs out_%s", XLAC_RUN, model, name);
    int rc = xt_sh("LD_PRELOAD=" XLAC_BINARY_DIR "/lib/libxlac.so XLAC_AUTO_JIT=2", cmd, &log);
    cr_assert_eq(rc, 0, "%s clustered: %s", name, log ? log : "");
    free(log);
    for (int k = 0; k < n_out; k++) {
        char p[1024], what[256];
        snprintf(p, sizeof p, "%s/out_%s/%s.npy", xt_tmp, name, names[k]);
        xe_tensor *got = npy(p);
        snprintf(p, sizeof p, "%s/%s.out%d.npy", DATA, name, k);
        xe_tensor *want = npy(p);
        snprintf(what, sizeof what, "%s clustered, output %s", name, names[k]);
        expect_same(what, got, want);
        xe_tensor_release(got);
        xe_tensor_release(want);
    }
}

Test(qdq, models_match_onnxruntime_op_by_op_and_clustered)
{
    FILE *f = fopen(DATA "/list.txt", "r");
    cr_assert_not_null(f);
    char line[256], name[128];
    int n_in, n_out, count = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || sscanf(line, "%127s %d %d", name, &n_in, &n_out) != 3)
            continue;
        cr_assert(n_in >= 1 && n_in <= 4 && n_out >= 1 && n_out <= 4, "list.txt: %s", line);
        char names[4][128];
        run_op_by_op(name, n_in, n_out, names);
        run_clustered(name, n_out, names);
        count++;
    }
    fclose(f);
    cr_assert_geq(count, 11, "list.txt names %d models", count);
}
