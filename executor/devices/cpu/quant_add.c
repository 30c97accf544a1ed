/*
 * quant_add(a, b) on the CPU (the op: ir/infer/quant_add.c): an Add between ONNX QDQ pairs in one
 * pass over 8-bit operands, where its composition (two casts to f32, a subtract and multiply
 * each, the add, and QuantizeLinear's division, rounding, zero point, saturation and cast) wrote
 * and read f32 tensors between a dozen kernels. Each element is the composition's f32 arithmetic
 * in the same order, so the result is bit for bit the composition's: this file is compiled
 * without contraction (CMakeLists.txt: -ffp-contract=off), since a fused multiply-add would round
 * (a - za) * sa + ... once where the composition rounds twice. nearbyintf in the default
 * rounding mode is round half to even, and the loops vectorize (vroundps).
 */
#include <math.h>
#include <stdint.h>

#include "kernels.h"
#include "nn.h"
#include "scalar_narrow.h"

/* Below this many elements, one thread. */
#define PARALLEL_MIN (1 << 16)

/* The loop for a of type TA, b of TB, y of TY in [LO, HI]. */
#define QUANT_ADD_LOOP(TA, TB, TY, LO, HI)                                                         \
    do {                                                                                           \
        const TA *x = a->in[0]->data;                                                              \
        const TB *y = a->in[1]->data;                                                              \
        TY *o = a->out->data;                                                                      \
        _Pragma("omp parallel for simd if (parallel : n >= PARALLEL_MIN) schedule(static)") for (  \
            int64_t i = 0; i < n; i++)                                                             \
        {                                                                                          \
            float v = ((float)x[i] - za) * sa + ((float)y[i] - zb) * sb;                           \
            float r = nearbyintf(v / ys) + zy;                                                     \
            o[i] = (TY)xe_f32_to_narrow(r, (LO), (HI));                                            \
        }                                                                                          \
    } while (0)

/* The loops for y of type TY: a and b each u8 or i8. */
#define QUANT_ADD_FOR_Y(TY, LO, HI)                                                                \
    do {                                                                                           \
        if (au && bu)                                                                              \
            QUANT_ADD_LOOP(uint8_t, uint8_t, TY, LO, HI);                                          \
        else if (au)                                                                               \
            QUANT_ADD_LOOP(uint8_t, int8_t, TY, LO, HI);                                           \
        else if (bu)                                                                               \
            QUANT_ADD_LOOP(int8_t, uint8_t, TY, LO, HI);                                           \
        else                                                                                       \
            QUANT_ADD_LOOP(int8_t, int8_t, TY, LO, HI);                                            \
    } while (0)

xe_code xe_cpu_quant_add(const xe_kernel_args *a, xe_status *st)
{
    xe_quant_add_params q;
    if (xe_quant_add_read(a->node, a->in[0]->dtype, a->in[1]->dtype, &q, st) != XE_OK)
        return st->code;
    int64_t n = xe_tensor_numel(a->out);
    float za = (float)q.a_zero, zb = (float)q.b_zero, zy = (float)q.y_zero;
    float sa = q.a_scale, sb = q.b_scale, ys = q.y_scale;
    bool au = a->in[0]->dtype == XE_U8, bu = a->in[1]->dtype == XE_U8;
    if (q.y_dt == XE_U8)
        QUANT_ADD_FOR_Y(uint8_t, 0.0f, 255.0f);
    else
        QUANT_ADD_FOR_Y(int8_t, -128.0f, 127.0f);
    return XE_OK;
}
