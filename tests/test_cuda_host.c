/*
 * The CUDA kernels of the NN ops (executor/devices/cuda/gather.cu, conv.cu,
 * pool.cu) run on the host, so that their index math and host-side launch
 * code are tested on machines without a GPU (CI): the .cu text, with each
 * `<<<...>>>` launch rewritten to a plain call, is built by the host C++
 * compiler ($CXX or c++) against the stand-in CUDA headers of
 * tests/data/cuda_host/ (one thread walks each grid-stride loop), loaded
 * with dlopen, and each xe_gpu_* entry point is compared with the op's CPU
 * kernel on random graphs: every dtype, negative and out-of-range gather
 * indices, zero repeats, cropping pads, groups, depthwise, strides,
 * dilations, asymmetric pads, ceil_mode, count_include_pad. Data movement
 * must match exactly, arithmetic within 1e-4 relative (f32 sums taken in
 * another order); a failing CPU kernel must fail on the GPU side with the
 * same message.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/ref.h"
#include "xlac/xlac.h"

typedef xe_code (*kernel_fn)(const xe_kernel_args *a, xe_status *st);

static const char *const cu_files[] = {"gather", "conv", "pool"};

/* Writes executor/devices/cuda/NAME.cu to DIR/NAME.cc with every "<<<...>>>" removed. */
static void strip_launches(const char *name, const char *dir)
{
    char path[512], out[512], *text = NULL;
    size_t len = 0;
    xe_status st;
    snprintf(path, sizeof path, "%s/executor/devices/cuda/%s.cu", XLAC_SOURCE_DIR, name);
    snprintf(out, sizeof out, "%s/%s.cc", dir, name);
    cr_assert_eq(xe_read_file(path, &text, &len, &st), XE_OK, "%s", st.msg);
    FILE *f = fopen(out, "w");
    cr_assert_not_null(f, "cannot write %s", out);
    for (char *p = text; *p;) {
        char *open = strstr(p, "<<<"), *close = open ? strstr(open, ">>>") : NULL;
        if (!close) {
            fputs(p, f);
            break;
        }
        fwrite(p, 1, (size_t)(open - p), f);
        p = close + 3;
    }
    cr_assert_eq(fclose(f), 0);
    free(text);
}

/* Builds the kernels into a shared object and opens it. */
static void *build_kernels(void)
{
    char dir[] = "/tmp/xlac-cuda-host-XXXXXX", cmd[4096];
    cr_assert_not_null(mkdtemp(dir));
    for (size_t k = 0; k < sizeof cu_files / sizeof cu_files[0]; k++)
        strip_launches(cu_files[k], dir);
    const char *cxx = getenv("CXX") && *getenv("CXX") ? getenv("CXX") : "c++";
    const char *src = XLAC_SOURCE_DIR;
    snprintf(cmd, sizeof cmd,
             "%s -std=c++17 -O1 -w -fPIC -shared -I%s/tests/data/cuda_host -I%s/executor/ir "
             "-I%s/executor/include -I%s/executor/devices/cuda -o %s/k.so %s/gather.cc %s/conv.cc "
             "%s/pool.cc %s/tests/data/cuda_host/cuda_host.cc > %s/log.txt 2>&1",
             cxx, src, src, src, src, dir, dir, dir, dir, src, dir);
    cr_assert_eq(system(cmd), 0, "the host build of the .cu kernels failed: see %s/log.txt", dir);
    char so[128];
    snprintf(so, sizeof so, "%s/k.so", dir);
    void *dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(dl, "dlopen %s: %s", so, dlerror());
    const char *const made[] = {"gather.cc", "conv.cc", "pool.cc", "k.so", "log.txt"};
    for (size_t k = 0; k < sizeof made / sizeof made[0]; k++) { /* loaded: the files can go */
        snprintf(cmd, sizeof cmd, "%s/%s", dir, made[k]);
        unlink(cmd);
    }
    rmdir(dir);
    return dl;
}

/* Random input values: gather's indices in [-dim, dim) with an occasional bad one. */
static xe_tensor *input_for(const xe_node *n, int k, const xe_type *t, int64_t dim)
{
    bool indices = n->op == XE_OP_GATHER && k == 1;
    xe_tensor *x = ref_random_tensor(t->dtype, &t->shape, indices ? (double)-dim : -9,
                                     indices ? (double)dim : 9);
    if (indices && xe_tensor_numel(x) && ref_irand(0, 60) == 0)
        xe_store_f64(x->data, t->dtype, 0, (double)(dim + 3));
    return x;
}

static void compare(const xe_tensor *c, const xe_tensor *g, bool exact, const char *text)
{
    size_t es = xe_dtype_size(c->dtype);
    for (int64_t i = 0; i < xe_tensor_numel(c); i++) {
        double x = xe_load_f64(c->data, c->dtype, i), y = xe_load_f64(g->data, g->dtype, i);
        bool ok = exact ? memcmp((char *)c->data + i * es, (char *)g->data + i * es, es) == 0
                        : (isnan(x) && isnan(y)) || x == y || fabs(x - y) <= 1e-4 * (1 + fabs(x));
        cr_assert(ok, "element %lld: cpu %.9g, host-run gpu kernel %.9g\n%s", (long long)i, x, y,
                  text);
    }
}

/* Runs node y of text with the CPU kernel and with gpu; both must agree. */
static void run_case(void *dl, const char *text, int64_t dim)
{
    xe_status st, s1, s2;
    xe_status_clear(&st);
    xe_graph *g = xe_parse_string(text, "host.xg", &st);
    if (!g)
        return; /* a combination the shape function rejects */
    xe_node *n = g->nodes[xe_graph_find(g, "y")];
    char sym[64];
    snprintf(sym, sizeof sym, "xe_gpu_%s", xe_op_name(n->op));
    kernel_fn gpu = (kernel_fn)(uintptr_t)dlsym(dl, sym);
    cr_assert_not_null(gpu, "%s: %s", sym, dlerror());
    xe_tensor *in[3] = {0}, *out[2];
    for (int k = 0; k < n->n_inputs; k++)
        in[k] = input_for(n, k, &g->nodes[n->inputs[k]]->type, dim);
    for (int k = 0; k < 2; k++) {
        out[k] = xe_tensor_new(n->type.dtype, &n->type.shape, XE_DEV_CPU, &st);
        memset(out[k]->data, 0x5a, out[k]->nbytes);
    }
    xe_kernel_args a = {g, n, n->n_inputs, in, out[0], NULL, NULL, NULL, NULL, NULL};
    xe_kernel_args b = {g, n, n->n_inputs, in, out[1], NULL, NULL, NULL, NULL, NULL};
    xe_status_clear(&s1);
    xe_status_clear(&s2);
    xe_code c1 = xe_op_kernel(xe_op_get(n->op), XE_DEV_CPU)(&a, &s1), c2 = gpu(&b, &s2);
    cr_assert_eq(c1, c2, "cpu: %s, gpu: %s\n%s", s1.msg, s2.msg, text);
    if (c1 != XE_OK)
        cr_assert_str_eq(s1.msg, s2.msg, "%s", text);
    else
        compare(out[0], out[1], n->op == XE_OP_GATHER || n->op == XE_OP_TILE || n->op == XE_OP_PAD,
                text);
    for (int k = 0; k < 3; k++)
        xe_tensor_release(in[k]);
    xe_tensor_release(out[0]);
    xe_tensor_release(out[1]);
    xe_graph_destroy(g);
}

/* "[a,b,...]" of n random ints in [lo, hi] into buf, the values into vals. */
static const char *rand_list(char *buf, size_t len, int n, int lo, int hi, int64_t *vals)
{
    size_t u = (size_t)snprintf(buf, len, "[");
    for (int k = 0; k < n; k++) {
        vals[k] = ref_irand(lo, hi);
        u += (size_t)snprintf(buf + u, len - u, "%s%lld", k ? "," : "", (long long)vals[k]);
    }
    snprintf(buf + u, len - u, "]");
    return buf;
}

Test(cuda_host, movement_ops_match_the_cpu)
{
    static const char *const dts[] = {"f32", "f64", "f16", "i32", "i64", "bool"};
    void *dl = build_kernels();
    ref_seed(21);
    for (int t = 0; t < 600; t++) {
        int r = (int)ref_irand(1, 4), ir = (int)ref_irand(0, 2), ax = (int)ref_irand(-r, r - 1);
        int64_t d[8], id[8], v[16];
        char text[1024], ds[64], is[64], l1[64];
        rand_list(ds, sizeof ds, r, 0, 4, d);
        rand_list(is, sizeof is, ir, 0, 3, id);
        snprintf(
            text, sizeof text,
            "xlac.graph v1\ninput x: %s%s\ninput i: %s%s\ny = gather(x, i, axis=%d)\noutput y\n",
            dts[t % 6], ds, t % 2 ? "i32" : "i64", is, ax);
        run_case(dl, text, d[ax < 0 ? ax + r : ax]);
        snprintf(text, sizeof text,
                 "xlac.graph v1\ninput x: %s%s\ny = tile(x, repeats=%s)\noutput y\n", dts[t % 6],
                 ds, rand_list(l1, sizeof l1, r, 0, 3, v));
        run_case(dl, text, 0);
        snprintf(text, sizeof text,
                 "xlac.graph v1\ninput x: %s%s\ny = pad(x, pads=%s, value=%d)\noutput y\n",
                 dts[t % 6], ds, rand_list(l1, sizeof l1, 2 * r, -1, 2, v), t % 3 ? 1 : 0);
        run_case(dl, text, 0);
    }
    dlclose(dl);
}

Test(cuda_host, window_ops_match_the_cpu)
{
    void *dl = build_kernels();
    ref_seed(22);
    for (int t = 0; t < 600; t++) {
        const char *dt = t % 2 ? "f32" : "f64";
        int64_t g = t % 5 ? ref_irand(1, 3) : ref_irand(2, 5), cg = t % 5 ? ref_irand(1, 3) : 1;
        int64_t mg = t % 5 ? ref_irand(1, 3) : 1, kh = ref_irand(1, 3), kw = ref_irand(1, 3), v[4];
        int64_t n = ref_irand(1, 2), h = ref_irand(1, 8), w = ref_irand(1, 8);
        char text[1024], s[32], dl_[32], p[48];
        rand_list(s, sizeof s, 2, 1, 3, v);
        rand_list(dl_, sizeof dl_, 2, 1, 2, v);
        rand_list(p, sizeof p, 4, 0, 2, v);
        snprintf(
            text, sizeof text,
            "xlac.graph v1\ninput x: %s[%lld,%lld,%lld,%lld]\ninput w: %s[%lld,%lld,%lld,%lld]\n"
            "input b: %s[%lld]\ny = conv2d(x, w%s, strides=%s, dilations=%s, pads=%s, "
            "groups=%lld)\noutput y\n",
            dt, (long long)n, (long long)(g * cg), (long long)h, (long long)w, dt,
            (long long)(g * mg), (long long)cg, (long long)kh, (long long)kw, dt,
            (long long)(g * mg), t % 3 ? ", b" : "", s, dl_, p, (long long)g);
        run_case(dl, text, 0);
        snprintf(text, sizeof text,
                 "xlac.graph v1\ninput x: %s[%lld,%lld,%lld,%lld]\ny = %s(x, kernel=[%lld,%lld], "
                 "strides=%s, dilations=%s, pads=%s, ceil_mode=%d%s)\noutput y\n",
                 dt, (long long)n, (long long)g, (long long)h, (long long)w,
                 t % 2 ? "max_pool2d" : "avg_pool2d", (long long)kh, (long long)kw, s, dl_, p,
                 (int)ref_irand(0, 1), t % 4 == 0 ? ", count_include_pad=1" : "");
        run_case(dl, text, 0);
    }
    dlclose(dl);
}
