/*
 * GPU conv2d (ONNX Conv over NCHW, f32 and f64): a direct kernel, one
 * thread per output element in a grid-stride loop. Each thread sums its
 * window over the group's input channels in the element type, the order
 * the CPU's gemm uses (channel, tap row, tap column), starting from the
 * bias. Correct for every geometry the shape function accepts (groups,
 * depthwise, strides, dilations, asymmetric pads); not tuned: consecutive
 * threads read consecutive output columns, so input reads coalesce for
 * stride 1, and the weights are read through the read-only cache.
 */
#include "common.cuh"

extern "C" {
#include "nn.h"
}

/* The window geometry as the kernel needs it, passed by value. */
typedef struct conv_geom {
    int64_t n, c, h, w, m, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, cg, mg;
} conv_geom;

template <typename T>
__global__ void __launch_bounds__(XK_BLOCK)
    k_nn_conv2d(const T *__restrict__ x, const T *__restrict__ w, const T *__restrict__ b,
                T *__restrict__ y, conv_geom g, int64_t total)
{
    int64_t step = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        int64_t ow = i % g.ow, r = i / g.ow, oh = r % g.oh;
        r /= g.oh;
        int64_t m = r % g.m, n = r / g.m, c0 = (m / g.mg) * g.cg;
        T acc = b ? __ldg(&b[m]) : (T)0;
        for (int64_t c = 0; c < g.cg; c++) {
            const T *plane = x + ((n * g.c + c0 + c) * g.h) * g.w;
            const T *wk = w + (m * g.cg + c) * g.kh * g.kw;
            for (int64_t ki = 0; ki < g.kh; ki++) {
                int64_t ih = oh * g.sh - g.pt + ki * g.dh;
                if (ih < 0 || ih >= g.h)
                    continue;
                for (int64_t kj = 0; kj < g.kw; kj++) {
                    int64_t iw = ow * g.sw - g.pl + kj * g.dw;
                    if (iw >= 0 && iw < g.w)
                        acc += plane[ih * g.w + iw] * __ldg(&wk[ki * g.kw + kj]);
                }
            }
        }
        y[i] = acc;
    }
}

extern "C" xe_code xe_gpu_conv2d(const xe_kernel_args *a, xe_status *st)
{
    xe_window p;
    if (xe_window_read(a->node, &a->in[0]->shape, &a->in[1]->shape, &p, st) != XE_OK)
        return xe_status_prefix(st, "node %s (conv2d): ", a->node->name);
    int64_t total = xe_tensor_numel(a->out);
    if (total == 0)
        return XE_OK;
    conv_geom g = {p.n,  p.c,  p.h,  p.w,  p.m,  p.oh, p.ow,           p.kh,          p.kw,
                   p.sh, p.sw, p.dh, p.dw, p.pt, p.pl, p.c / p.groups, p.m / p.groups};
    const void *b = a->n_in > 2 ? a->in[2]->data : NULL;
    unsigned grid = xk_grid(total, XK_BLOCK);
    if (a->out->dtype == XE_F32)
        k_nn_conv2d<float><<<grid, XK_BLOCK, 0, xk_stream()>>>(
            (const float *)a->in[0]->data, (const float *)a->in[1]->data, (const float *)b,
            (float *)a->out->data, g, total);
    else if (a->out->dtype == XE_F64)
        k_nn_conv2d<double><<<grid, XK_BLOCK, 0, xk_stream()>>>(
            (const double *)a->in[0]->data, (const double *)a->in[1]->data, (const double *)b,
            (double *)a->out->data, g, total);
    else
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (conv2d): %s is not supported",
                       a->node->name, xe_dtype_name(a->out->dtype));
    return xk_launched(a, "conv2d kernel", st);
}
