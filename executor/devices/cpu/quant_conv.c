/*
 * quant_conv2d(x, w, scale[, bias]) on the CPU (the op: ir/infer/quant_conv.c): a Conv between
 * ONNX QDQ pairs as one int8 step. oneDNN's int8 convolution runs it where its sums are exact
 * (VNNI: dnnl_conv.c, weights packed once like an f32 conv's); elsewhere, and for what oneDNN
 * refuses, the loop here: for each output, the sum of (x - x_zero_point) * w over the window in 64
 * bits (exact), then scale[m] * f32(sum) + bias[m], quantized when y_scale says so. A tap in the
 * padding adds nothing (x reads x_zero_point there: a real zero, as DequantizeLinear's output
 * padded with 0.0f is).
 *
 * The two paths round the rescale differently (oneDNN computes (sum + bias / scale) * scale in
 * f32): a few ulps of the output, far below a quantization step; tests/test_quant_conv.c bounds it.
 */
#include <math.h>
#include <stdint.h>

#include "dnnl_engine.h"
#include "kernels.h"
#include "nn.h"

/* x[i] as an integer, u8 or i8. */
static inline int32_t x_at(const void *x, bool u8, int64_t i)
{
    return u8 ? ((const uint8_t *)x)[i] : ((const int8_t *)x)[i];
}

/* The exact sum of output (n, m, oh, ow): channels c0.. of m's group, taps inside the input. */
static int64_t window_sum(const xe_window *p, const void *x, bool u8, int32_t zp, const int8_t *w,
                          int64_t n, int64_t m, int64_t oh, int64_t ow)
{
    int64_t cg = p->c / p->groups, c0 = m / (p->m / p->groups) * cg, sum = 0;
    for (int64_t c = 0; c < cg; c++)
        for (int64_t i = 0; i < p->kh; i++) {
            int64_t ih = oh * p->sh - p->pt + i * p->dh;
            if (ih < 0 || ih >= p->h)
                continue;
            const int8_t *wr = w + ((m * cg + c) * p->kh + i) * p->kw;
            int64_t row = ((n * p->c + c0 + c) * p->h + ih) * p->w;
            for (int64_t j = 0; j < p->kw; j++) {
                int64_t iw = ow * p->sw - p->pl + j * p->dw;
                if (iw >= 0 && iw < p->w)
                    sum += (int64_t)(x_at(x, u8, row + iw) - zp) * wr[j];
            }
        }
    return sum;
}

/* Output element i, v = scale * sum + bias, stored as q->y_dt: f32 as it is, else quantized as
   QuantizeLinear (round half to even: nearbyintf in the default rounding mode, then saturated). */
static void store(void *y, int64_t i, float v, const xe_dnnl_quant *q)
{
    if (q->y_dt == XE_F32) {
        ((float *)y)[i] = v;
        return;
    }
    float r = nearbyintf(v / q->y_scale) + (float)q->y_zero;
    float lo = q->y_dt == XE_U8 ? 0.0f : -128.0f, hi = q->y_dt == XE_U8 ? 255.0f : 127.0f;
    r = r < lo ? lo : r > hi ? hi : r;
    if (q->y_dt == XE_U8)
        ((uint8_t *)y)[i] = (uint8_t)r;
    else
        ((int8_t *)y)[i] = (int8_t)r;
}

/* Every output by window_sum, rescaled: one OpenMP loop over (n, m). */
static void quant_conv_loop(const xe_window *p, const xe_kernel_args *a, const xe_dnnl_quant *q)
{
    const void *x = a->in[0]->data;
    const int8_t *w = a->in[1]->data;
    bool u8 = q->x_dt == XE_U8;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < p->n; n++)
        for (int64_t m = 0; m < p->m; m++) {
            float s = q->scale[m], b = q->bias ? q->bias[m] : 0.0f;
            int64_t at = (n * p->m + m) * p->oh * p->ow;
            for (int64_t oh = 0; oh < p->oh; oh++)
                for (int64_t ow = 0; ow < p->ow; ow++)
                    store(a->out->data, at + oh * p->ow + ow,
                          s * (float)window_sum(p, x, u8, q->x_zero, w, n, m, oh, ow) + b, q);
        }
}

xe_code xe_cpu_quant_conv2d(const xe_kernel_args *a, xe_status *st)
{
    xe_dnnl_quant q = {.x_dt = a->in[0]->dtype,
                       .scale = a->in[2]->data,
                       .bias = a->n_in > 3 ? a->in[3]->data : NULL};
    xe_window p;
    if (xe_quant_conv_zero_point(a->node, q.x_dt, &q.x_zero, st) != XE_OK ||
        xe_quant_output(a->node, &q.y_dt, &q.y_scale, &q.y_zero, st) != XE_OK ||
        xe_window_read(a->node, &a->in[0]->shape, &a->in[1]->shape, &p, st) != XE_OK)
        return xe_status_prefix(st, "node %s (quant_conv2d): ", a->node->name);
    xe_code r = xe_dnnl_quant_conv2d(a, &p, &q, st);
    if (r != XE_ERR_UNSUPPORTED)
        return r;
    xe_status_clear(st);
    quant_conv_loop(&p, a, &q);
    return XE_OK;
}
