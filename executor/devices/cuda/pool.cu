/*
 * GPU max_pool2d and avg_pool2d (ONNX MaxPool and AveragePool over NCHW,
 * f32 and f64): one thread per output element in a grid-stride loop, the
 * same rules as cpu/pool.c. max propagates NaN and gives -inf for a
 * window with no tap inside the input; the average divides by the taps
 * inside the input, or with count_include_pad by the taps inside the
 * padded input (not the positions ceil_mode adds past the end padding).
 */
#include "common.cuh"

extern "C" {
#include "nn.h"
}

/* The window geometry as the kernel needs it, passed by value. */
typedef struct pool_geom {
    int64_t h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
    bool include_pad;
} pool_geom;

/* Taps k in [0, n) with lo <= x0 + k*d < hi. */
__device__ __forceinline__ int64_t taps_inside(int64_t x0, int64_t d, int64_t n, int64_t lo,
                                               int64_t hi)
{
    int64_t c = 0;
    for (int64_t k = 0; k < n; k++)
        c += x0 + k * d >= lo && x0 + k * d < hi;
    return c;
}

template <typename T, bool MAX>
__global__ void __launch_bounds__(XK_BLOCK)
    k_nn_pool2d(const T *__restrict__ x, T *__restrict__ y, pool_geom g, int64_t total)
{
    int64_t step = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        int64_t ow = i % g.ow, r = i / g.ow, oh = r % g.oh, nc = r / g.oh;
        const T *plane = x + nc * g.h * g.w;
        int64_t ih0 = oh * g.sh - g.pt, iw0 = ow * g.sw - g.pl;
        T acc = MAX ? (T)-INFINITY : (T)0;
        for (int64_t ki = 0; ki < g.kh; ki++) {
            int64_t ih = ih0 + ki * g.dh;
            if (ih < 0 || ih >= g.h)
                continue;
            for (int64_t kj = 0; kj < g.kw; kj++) {
                int64_t iw = iw0 + kj * g.dw;
                if (iw < 0 || iw >= g.w)
                    continue;
                T v = plane[ih * g.w + iw];
                if (MAX)
                    acc = v > acc || v != v ? v : acc;
                else
                    acc += v;
            }
        }
        if (!MAX) {
            int64_t count = g.include_pad ? taps_inside(ih0, g.dh, g.kh, -g.pt, g.h + g.pb) *
                                                taps_inside(iw0, g.dw, g.kw, -g.pl, g.w + g.pr)
                                          : taps_inside(ih0, g.dh, g.kh, 0, g.h) *
                                                taps_inside(iw0, g.dw, g.kw, 0, g.w);
            acc /= (T)count;
        }
        y[i] = acc;
    }
}

template <typename T>
static void launch_pool(const xe_kernel_args *a, const pool_geom &g, bool max, int64_t total)
{
    unsigned grid = xk_grid(total, XK_BLOCK);
    const T *x = (const T *)a->in[0]->data;
    T *y = (T *)a->out->data;
    if (max)
        k_nn_pool2d<T, true><<<grid, XK_BLOCK, 0, xk_stream()>>>(x, y, g, total);
    else
        k_nn_pool2d<T, false><<<grid, XK_BLOCK, 0, xk_stream()>>>(x, y, g, total);
}

static xe_code pool(const xe_kernel_args *a, bool max, xe_status *st)
{
    xe_window p;
    const char *op = xe_op_name(a->node->op);
    if (xe_window_read(a->node, &a->in[0]->shape, NULL, &p, st) != XE_OK)
        return xe_status_prefix(st, "node %s (%s): ", a->node->name, op);
    int64_t total = xe_tensor_numel(a->out);
    if (total == 0)
        return XE_OK;
    pool_geom g = {p.h,  p.w,  p.oh, p.ow, p.kh,
                   p.kw, p.sh, p.sw, p.dh, p.dw,
                   p.pt, p.pl, p.pb, p.pr, p.count_include_pad};
    if (a->out->dtype == XE_F32)
        launch_pool<float>(a, g, max, total);
    else if (a->out->dtype == XE_F64)
        launch_pool<double>(a, g, max, total);
    else
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (%s): %s is not supported", a->node->name,
                       op, xe_dtype_name(a->out->dtype));
    return xk_launched(a, max ? "max_pool2d kernel" : "avg_pool2d kernel", st);
}

extern "C" xe_code xe_gpu_max_pool2d(const xe_kernel_args *a, xe_status *st)
{
    return pool(a, true, st);
}

extern "C" xe_code xe_gpu_avg_pool2d(const xe_kernel_args *a, xe_status *st)
{
    return pool(a, false, st);
}
