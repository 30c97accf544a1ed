/*
 * The window ops over NCHW data, conv2d, max_pool2d and avg_pool2d (ONNX
 * Conv, MaxPool, AveragePool). Each case builds a one-node graph through
 * the API, runs the op's kernel (CPU, and GPU where a CUDA device exists)
 * and compares every element with a direct double-precision reference
 * written here, on random inputs over many attribute combinations:
 * groups, depthwise, strides, dilations, asymmetric pads, ceil_mode,
 * count_include_pad, 1x1 kernels, and a few larger shapes that take the
 * CPU's blocked and pointwise paths. Bad attributes must be rejected with
 * a message that says what is wrong.
 *
 * Tolerances: f32 1e-5 and f64 1e-12 relative to the sum of |terms|
 * (conv2d) or to the window's mean |x| (avg_pool2d); max_pool2d exact,
 * NaN propagated.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/ref_dev.h"
#include "xlac/xlac.h"

static xe_status st;

static double at(const xe_tensor *t, int64_t i)
{
    return xe_load_f64(t->data, t->dtype, i);
}

/* ---- conv2d ------------------------------------------------------------------------------ */

/* Attributes of a window case: strides, dilations, pads [t,l,b,r], groups, flags. */
typedef struct win_case {
    int64_t s[2], d[2], pads[4], groups, kernel[2];
    bool ceil_mode, count_include_pad;
} win_case;

static void set_window_attrs(xe_node *n, const win_case *w, bool pool)
{
    ref_set_ints(n, "strides", 2, w->s);
    ref_set_ints(n, "dilations", 2, w->d);
    ref_set_ints(n, "pads", 4, w->pads);
    if (!pool) {
        ref_set_int(n, "groups", w->groups);
        return;
    }
    ref_set_ints(n, "kernel", 2, w->kernel);
    if (w->ceil_mode)
        ref_set_int(n, "ceil_mode", 1);
    if (w->count_include_pad)
        ref_set_int(n, "count_include_pad", 1);
}

/* Output size of one dim by ONNX's rule (-1: the kernel does not fit). */
static int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1,
                       bool ceil_mode)
{
    int64_t span = in + p0 + p1 - (d * (k - 1) + 1);
    if (span < 0)
        return -1;
    int64_t o =
        (int64_t)(ceil_mode ? ceil((double)span / (double)s) : floor((double)span / (double)s)) + 1;
    if (ceil_mode && (o - 1) * s >= in + p0)
        o--;
    return o;
}

/* Direct double-precision convolution; scale[i] is the sum of |terms| of output i. */
static double *conv_ref(const xe_tensor *x, const xe_tensor *w, const xe_tensor *b,
                        const win_case *wc, const xe_shape *os, double **scale)
{
    int64_t N = os->dims[0], M = os->dims[1], OH = os->dims[2], OW = os->dims[3];
    int64_t C = x->shape.dims[1], H = x->shape.dims[2], W = x->shape.dims[3];
    int64_t cg = w->shape.dims[1], KH = w->shape.dims[2], KW = w->shape.dims[3];
    int64_t mg = M / wc->groups, n_out = N * M * OH * OW;
    double *want = calloc((size_t)n_out + 1, sizeof *want);
    *scale = calloc((size_t)n_out + 1, sizeof **scale);
    for (int64_t i = 0; i < n_out; i++) {
        int64_t ow = i % OW, oh = i / OW % OH, m = i / (OW * OH) % M, n = i / (OW * OH * M);
        double acc = b ? at(b, m) : 0, mag = fabs(acc);
        for (int64_t c = 0; c < cg; c++)
            for (int64_t ki = 0; ki < KH; ki++)
                for (int64_t kj = 0; kj < KW; kj++) {
                    int64_t ih = oh * wc->s[0] - wc->pads[0] + ki * wc->d[0];
                    int64_t iw = ow * wc->s[1] - wc->pads[1] + kj * wc->d[1];
                    if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                        continue;
                    double t = at(x, ((n * C + (m / mg) * cg + c) * H + ih) * W + iw) *
                               at(w, ((m * cg + c) * KH + ki) * KW + kj);
                    acc += t;
                    mag += fabs(t);
                }
        want[i] = acc;
        (*scale)[i] = mag;
    }
    return want;
}

/* A random window case: kernels 1..3 (1x1 often), strides 1..3, dilations 1..2, pads 0..2. */
static win_case random_window(void)
{
    win_case w = {.groups = 1};
    for (int k = 0; k < 2; k++) {
        w.kernel[k] = ref_urand() < 0.2 ? 1 : ref_irand(1, 3);
        w.s[k] = ref_urand() < 0.5 ? 1 : ref_irand(2, 3);
        w.d[k] = ref_urand() < 0.7 ? 1 : 2;
    }
    for (int k = 0; k < 4; k++)
        w.pads[k] = ref_urand() < 0.4 ? 0 : ref_irand(0, 2);
    return w;
}

/* One conv2d case with random data; groups and channels per group given. */
static void conv_case(xe_device dev, xe_dtype dt, const win_case *wc, int64_t n, int64_t cg,
                      int64_t mg, int64_t h, int64_t wd, bool bias)
{
    int64_t C = cg * wc->groups, M = mg * wc->groups;
    xe_shape xs = ref_shape(4, (int64_t[]){n, C, h, wd});
    xe_shape ws = ref_shape(4, (int64_t[]){M, cg, wc->kernel[0], wc->kernel[1]});
    xe_shape bs = ref_shape(1, (int64_t[]){M});
    xe_tensor *in[3] = {ref_random_tensor(dt, &xs, -1, 1), ref_random_tensor(dt, &ws, -1, 1),
                        bias ? ref_random_tensor(dt, &bs, -1, 1) : NULL};
    ref_op o;
    set_window_attrs(ref_op_new(&o, XE_OP_CONV2D, in, bias ? 3 : 2), wc, false);
    int64_t oh = out_dim(h, wc->kernel[0], wc->s[0], wc->d[0], wc->pads[0], wc->pads[2], false);
    int64_t ow = out_dim(wd, wc->kernel[1], wc->s[1], wc->d[1], wc->pads[1], wc->pads[3], false);
    if (oh < 0 || ow < 0) {
        ref_expect_infer_error(&o, "the kernel spans");
    } else {
        xe_shape os = ref_shape(4, (int64_t[]){n, M, oh, ow});
        double *scale, *want = conv_ref(in[0], in[1], in[2], wc, &os, &scale);
        char what[160];
        snprintf(what, sizeof what,
                 "conv2d %s x[%lld,%lld,%lld,%lld] k%lldx%lld g%lld s%lld,%lld d%lld,%lld",
                 xe_dtype_name(dt), (long long)n, (long long)C, (long long)h, (long long)wd,
                 (long long)wc->kernel[0], (long long)wc->kernel[1], (long long)wc->groups,
                 (long long)wc->s[0], (long long)wc->s[1], (long long)wc->d[0],
                 (long long)wc->d[1]);
        ref_expect_run(dev, &o, in, bias ? 3 : 2, &os, want, scale, what);
        free(want);
        free(scale);
    }
    ref_op_free(&o);
    for (int k = 0; k < 3; k++)
        xe_tensor_release(in[k]);
}

static void conv_cases(xe_device dev)
{
    ref_seed(14);
    for (int t = 0; t < 400; t++) {
        win_case wc = random_window();
        int shape = t % 4; /* 0: plain, 1: grouped, 2: depthwise, 3: depthwise with multiplier */
        wc.groups = shape == 0 ? 1 : ref_irand(2, 4);
        int64_t cg = shape >= 2 ? 1 : ref_irand(1, 4), mg = shape == 2 ? 1 : ref_irand(1, 4);
        conv_case(dev, t % 3 ? XE_F32 : XE_F64, &wc, ref_irand(1, 2), cg, mg, ref_irand(1, 9),
                  ref_irand(1, 9), t % 5 != 0);
    }
    /* larger: several column blocks and threads, a pointwise conv, a ResNet-like 3x3 */
    win_case w3 = {.s = {1, 1}, .d = {1, 1}, .pads = {1, 1, 1, 1}, .groups = 1, .kernel = {3, 3}};
    win_case w1 = {.s = {1, 1}, .d = {1, 1}, .groups = 1, .kernel = {1, 1}};
    win_case w7 = {.s = {2, 2}, .d = {1, 1}, .pads = {3, 3, 3, 3}, .groups = 1, .kernel = {7, 7}};
    conv_case(dev, XE_F32, &w3, 2, 16, 24, 30, 29, true);
    conv_case(dev, XE_F64, &w3, 1, 8, 8, 40, 40, false);
    conv_case(dev, XE_F32, &w1, 2, 32, 16, 20, 21, true);
    conv_case(dev, XE_F32, &w7, 1, 3, 8, 32, 32, true);
}

Test(window_ops, conv2d)
{
    conv_cases(XE_DEV_CPU);
}

Test(window_ops, conv2d_gpu)
{
    REF_SKIP_WITHOUT_GPU();
    conv_cases(xe_gpu_device());
}

Test(window_ops, conv2d_rejects)
{
    static const struct {
        const char *x, *w, *b, *attrs, *want;
    } bad[] = {
        {"f32[1,4,5,5]", "f32[2,3,3,3]", NULL, "",
         "the input has 4 channels but the weight takes 3 per group x 1 groups"},
        {"f32[1,4,5,5]", "f32[3,2,3,3]", NULL, "groups=2",
         "groups=2 does not divide the 3 output channels"},
        {"f32[1,4,5,5]", "f32[2,4,3,3]", NULL, "groups=0", "groups must be an integer >= 1"},
        {"f32[1,4,5,5]", "f32[2,4,3,3]", NULL, "strides=[1]", "strides needs 2 entries, got 1"},
        {"f32[1,4,5,5]", "f32[2,4,3,3]", NULL, "strides=[0,1]", "strides[0]=0 must be >= 1"},
        {"f32[1,4,5,5]", "f32[2,4,3,3]", NULL, "pads=[1,1,1]", "pads needs 4 entries, got 3"},
        {"f32[1,4,5,5]", "f32[2,4,3,3]", NULL, "pads=[1,-1,1,1]", "pads[1]=-1 must be >= 0"},
        {"f32[1,4,5,5]", "f32[2,4,3,3]", NULL, "dilations=[3,3]",
         "the kernel spans 7 rows (dilated) but the padded input has 5"},
        {"f32[1,4,5,5]", "f32[2,4,3,3]", "f32[3]", "", "the bias must be [2]"},
        {"f32[4,5,5]", "f32[2,4,3,3]", NULL, "", "conv2d needs a 4-D NCHW input, got rank 3"},
        {"f32[1,4,5,5]", "f32[2,4,3]", NULL, "", "the weight must be 4-D"},
        {"i32[1,4,5,5]", "i32[2,4,3,3]", NULL, "", "conv2d needs f32 or f64 input, got i32"},
        {"f32[1,4,5,5]", "f64[2,4,3,3]", NULL, "", "input 1 is f64, the input is f32"},
        {"f32[1,4,5,5]", "f32[2,4,3,3]", NULL, "kernel=[3,3]",
         "unknown attribute 'kernel' for conv2d"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char text[512];
        snprintf(text, sizeof text,
                 "xlac.graph v1\ninput x: %s\ninput w: %s\n%s%s%s\n"
                 "t = conv2d(x, w%s%s%s)\noutput t\n",
                 bad[k].x, bad[k].w, bad[k].b ? "input b: " : "", bad[k].b ? bad[k].b : "",
                 bad[k].b ? "" : "# no bias", bad[k].b ? ", b" : "", *bad[k].attrs ? ", " : "",
                 bad[k].attrs);
        const char *msg = ref_parse_error(text);
        cr_assert(strstr(msg, bad[k].want), "case %zu: message '%s' lacks '%s'", k, msg,
                  bad[k].want);
        cr_assert(strstr(msg, "(conv2d)") || strstr(msg, "unknown attribute"),
                  "message '%s' does not name the op", msg);
    }
}

/* ---- max_pool2d and avg_pool2d ------------------------------------------------------------ */

/* Taps k in [0, n) with lo <= x0 + k*d < hi (the reference's own count). */
static int64_t count_taps(int64_t x0, int64_t d, int64_t n, int64_t lo, int64_t hi)
{
    int64_t c = 0;
    for (int64_t k = 0; k < n; k++)
        c += x0 + k * d >= lo && x0 + k * d < hi;
    return c;
}

/* Direct pooling in double; scale[i]: mean of |x| over the window (avg). */
static double *pool_ref(const xe_tensor *x, const win_case *wc, bool max, const xe_shape *os,
                        double **scale)
{
    int64_t H = x->shape.dims[2], W = x->shape.dims[3], OH = os->dims[2], OW = os->dims[3];
    int64_t n_out = xe_shape_numel(os);
    double *want = calloc((size_t)n_out + 1, sizeof *want);
    *scale = calloc((size_t)n_out + 1, sizeof **scale);
    for (int64_t i = 0; i < n_out; i++) {
        int64_t ow = i % OW, oh = i / OW % OH, nc = i / (OW * OH);
        int64_t ih0 = oh * wc->s[0] - wc->pads[0], iw0 = ow * wc->s[1] - wc->pads[1];
        double acc = max ? -INFINITY : 0, mag = 0;
        for (int64_t ki = 0; ki < wc->kernel[0]; ki++)
            for (int64_t kj = 0; kj < wc->kernel[1]; kj++) {
                int64_t ih = ih0 + ki * wc->d[0], iw = iw0 + kj * wc->d[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                    continue;
                double v = at(x, (nc * H + ih) * W + iw);
                acc = max ? (isnan(v) || v > acc ? v : acc) : acc + v;
                mag += fabs(v);
            }
        int64_t lo_h = wc->count_include_pad ? -wc->pads[0] : 0,
                lo_w = wc->count_include_pad ? -wc->pads[1] : 0;
        int64_t hi_h = H + (wc->count_include_pad ? wc->pads[2] : 0),
                hi_w = W + (wc->count_include_pad ? wc->pads[3] : 0);
        double count = (double)(count_taps(ih0, wc->d[0], wc->kernel[0], lo_h, hi_h) *
                                count_taps(iw0, wc->d[1], wc->kernel[1], lo_w, hi_w));
        want[i] = max ? acc : acc / count;
        (*scale)[i] = max ? 0 : mag / count;
    }
    return want;
}

static void pool_case(xe_device dev, int op, xe_dtype dt, const win_case *wc, const xe_shape *xs)
{
    bool max = op == XE_OP_MAX_POOL2D;
    xe_tensor *x = ref_random_tensor(dt, xs, -4, 4);
    if (xe_tensor_numel(x) > 5) /* a NaN, which max must propagate */
        xe_store_f64(x->data, dt, 5, NAN);
    ref_op o;
    set_window_attrs(ref_op_new(&o, op, &x, 1), wc, true);
    int64_t oh = out_dim(xs->dims[2], wc->kernel[0], wc->s[0], wc->d[0], wc->pads[0], wc->pads[2],
                         wc->ceil_mode);
    int64_t ow = out_dim(xs->dims[3], wc->kernel[1], wc->s[1], wc->d[1], wc->pads[1], wc->pads[3],
                         wc->ceil_mode);
    if (oh < 0 || ow < 0) {
        ref_expect_infer_error(&o, "the kernel spans");
    } else {
        xe_shape os = ref_shape(4, (int64_t[]){xs->dims[0], xs->dims[1], oh, ow});
        double *scale, *want = pool_ref(x, wc, max, &os, &scale);
        char what[200];
        snprintf(what, sizeof what,
                 "%s %s x[%lld,%lld] k%lldx%lld s%lld,%lld d%lld,%lld p%lld,%lld,%lld,%lld ceil%d "
                 "incl%d",
                 xe_op_name(op), xe_dtype_name(dt), (long long)xs->dims[2], (long long)xs->dims[3],
                 (long long)wc->kernel[0], (long long)wc->kernel[1], (long long)wc->s[0],
                 (long long)wc->s[1], (long long)wc->d[0], (long long)wc->d[1],
                 (long long)wc->pads[0], (long long)wc->pads[1], (long long)wc->pads[2],
                 (long long)wc->pads[3], wc->ceil_mode, wc->count_include_pad);
        ref_expect_run(dev, &o, &x, 1, &os, want, scale, what);
        free(want);
        free(scale);
    }
    ref_op_free(&o);
    xe_tensor_release(x);
}

static void pool_cases(xe_device dev)
{
    ref_seed(15);
    for (int t = 0; t < 600; t++) {
        win_case wc = random_window();
        for (int k = 0; k < 4; k++) /* pools take pads below the dilated kernel */
            if (wc.pads[k] >= wc.d[k % 2] * (wc.kernel[k % 2] - 1) + 1)
                wc.pads[k] = 0;
        wc.ceil_mode = t % 2;
        wc.count_include_pad = t % 4 >= 2;
        xe_shape xs = ref_shape(
            4, (int64_t[]){ref_irand(1, 2), ref_irand(1, 3), ref_irand(1, 9), ref_irand(1, 9)});
        int op = t % 3 ? XE_OP_AVG_POOL2D : XE_OP_MAX_POOL2D;
        if (op == XE_OP_MAX_POOL2D)
            wc.count_include_pad = false;
        pool_case(dev, op, t % 5 ? XE_F32 : XE_F64, &wc, &xs);
    }
    /* ResNet's stem pool, and ONNX's case where ceil_mode's last window would start past the input
     */
    win_case stem = {.s = {2, 2}, .d = {1, 1}, .pads = {1, 1, 1, 1}, .kernel = {3, 3}};
    win_case drop = {.s = {2, 2}, .d = {1, 1}, .kernel = {1, 1}, .ceil_mode = true};
    pool_case(dev, XE_OP_MAX_POOL2D, XE_F32, &stem, &(xe_shape){.rank = 4, .dims = {2, 8, 56, 56}});
    pool_case(dev, XE_OP_AVG_POOL2D, XE_F32, &drop, &(xe_shape){.rank = 4, .dims = {1, 1, 2, 2}});
}

Test(window_ops, pools)
{
    pool_cases(XE_DEV_CPU);
}

Test(window_ops, pools_gpu)
{
    REF_SKIP_WITHOUT_GPU();
    pool_cases(xe_gpu_device());
}

/* ONNX's own examples: ceil_mode keeps a partial window, but not one that starts past the input. */
Test(window_ops, pool_ceil_mode_shapes)
{
    static const struct {
        const char *attrs, *in, *out;
    } cases[] = {
        {"kernel=[3,3], strides=[2,2]", "f32[1,1,4,4]", "f32[1,1,1,1]"},
        {"kernel=[3,3], strides=[2,2], ceil_mode=1", "f32[1,1,4,4]", "f32[1,1,2,2]"},
        {"kernel=[1,1], strides=[2,2], ceil_mode=1", "f32[1,1,2,2]", "f32[1,1,1,1]"},
        {"kernel=[2,2], strides=[2,2], pads=[1,1,1,1], ceil_mode=1", "f32[1,1,5,5]",
         "f32[1,1,3,3]"},
        {"kernel=[2,2], strides=[2,2], pads=[1,1,1,1], ceil_mode=1", "f32[1,1,6,6]",
         "f32[1,1,4,4]"},
        {"kernel=[3,3], pads=[2,2,2,2], dilations=[2,2]", "f32[1,1,4,4]", "f32[1,1,4,4]"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char text[512], got[64];
        snprintf(text, sizeof text, "xlac.graph v1\ninput x: %s\nt = max_pool2d(x, %s)\noutput t\n",
                 cases[k].in, cases[k].attrs);
        xe_status_clear(&st);
        xe_graph *g = xe_parse_string(text, "nn.xg", &st);
        cr_assert_not_null(g, "%s", st.msg);
        xe_type_str(&g->nodes[xe_graph_find(g, "t")]->type, got, sizeof got);
        cr_assert_str_eq(got, cases[k].out, "%s", cases[k].attrs);
        xe_graph_destroy(g);
    }
}

Test(window_ops, pool_rejects)
{
    static const struct {
        const char *op, *x, *attrs, *want;
    } bad[] = {
        {"max_pool2d", "f32[1,1,5,5]", "strides=[2,2]", "needs kernel=[kh,kw]"},
        {"max_pool2d", "f32[1,1,5,5]", "kernel=[0,3]", "kernel[0]=0 must be >= 1"},
        {"max_pool2d", "f32[1,1,5,5]", "kernel=[3,3], pads=[3,0,0,0]",
         "must be smaller than the kernel"},
        {"max_pool2d", "f32[1,1,5,5]", "kernel=[3,3], ceil_mode=2", "ceil_mode must be 0 or 1"},
        {"max_pool2d", "f32[1,1,5,5]", "kernel=[3,3], count_include_pad=1",
         "unknown attribute 'count_include_pad' for max_pool2d"},
        {"avg_pool2d", "f32[1,1,5,5]", "kernel=[3,3], count_include_pad=true",
         "count_include_pad must be an integer"},
        {"avg_pool2d", "f32[1,1,2,5]", "kernel=[3,3]",
         "the kernel spans 3 rows (dilated) but the padded input has 2"},
        {"avg_pool2d", "f32[5,5]", "kernel=[3,3]", "avg_pool2d needs a 4-D NCHW input, got rank 2"},
        {"avg_pool2d", "i64[1,1,5,5]", "kernel=[3,3]",
         "avg_pool2d needs f32 or f64 input, got i64"},
        {"avg_pool2d", "f32[1,1,5,5]", "kernel=[3,3], groups=1",
         "unknown attribute 'groups' for avg_pool2d"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char text[512];
        snprintf(text, sizeof text, "xlac.graph v1\ninput x: %s\nt = %s(x, %s)\noutput t\n",
                 bad[k].x, bad[k].op, bad[k].attrs);
        const char *msg = ref_parse_error(text);
        cr_assert(strstr(msg, bad[k].want), "case %zu: message '%s' lacks '%s'", k, msg,
                  bad[k].want);
    }
}
