/*
 * The CPU cast kernel. Casts between f32, i32, f16 and the 8-bit integers
 * (u8, i8) run as one OpenMP loop per pair (cast_fast): a quantized model
 * runs them per op around every product (DynamicQuantizeLinear's u8,
 * MatMulInteger's operands and result) and a half-precision one around its
 * convolutions, and the element-by-element walk below took about 20 ns an
 * element (a 128x1536 activation: 3.9 ms). Every other pair takes that walk.
 * Both follow one set of rules, written out below.
 */
#include <stdbool.h>
#include <stdint.h>

#include "kernels.h"
#include "scalar.h"
#include "scalar_narrow.h"

/* What one cast reads and writes. */
typedef struct cast_job {
    xe_dtype dt, to; /* from, to */
    bool saturate;   /* to float8: beyond the largest finite value gives it (else inf or NaN) */
    void *out;
} cast_job;

/* ---- cast ------------------------------------------------------------------------ */

/*
 * Cast, element by element. Integer to integer keeps the low bits (two's
 * complement wrap, as numpy's astype and C++'s static_cast); a float to an
 * integer truncates toward zero, NaN gives 0 and out of range saturates;
 * an integer to a float rounds once (to f16 and bf16 through f32); f32 to
 * bf16 and f16 rounds to nearest even; anything to bool is x != 0.
 * The storage dtypes (lowp.c): to float8 rounds once to nearest even from
 * the exact double (an i64 beyond 2^53 rounds twice) and saturates unless
 * the attribute saturate is false; the sub-byte integers wrap as the others.
 */

/* The integer at p as 64 bits: signed types sign-extend, unsigned ones zero-extend. */
static uint64_t int_bits(const void *p, xe_dtype dt)
{
    switch (dt) {
    case XE_I32:
        return (uint64_t)(int64_t) * (const int32_t *)p;
    case XE_I64:
        return (uint64_t) * (const int64_t *)p;
    case XE_I8:
    case XE_I4:
    case XE_I2:
        return (uint64_t)(int64_t) * (const int8_t *)p;
    case XE_I16:
        return (uint64_t)(int64_t) * (const int16_t *)p;
    case XE_U16:
        return *(const uint16_t *)p;
    case XE_U32:
        return *(const uint32_t *)p;
    case XE_U64:
        return *(const uint64_t *)p;
    default:
        return *(const uint8_t *)p; /* u8, bool */
    }
}

/* Stores the low bits of v (an integer source) as dtype to; false for float targets. */
static bool store_int_bits(void *out, xe_dtype to, int64_t k, uint64_t v)
{
    switch (to) {
    case XE_I32:
        ((int32_t *)out)[k] = (int32_t)(uint32_t)v;
        return true;
    case XE_I64:
        ((int64_t *)out)[k] = (int64_t)v;
        return true;
    case XE_U8:
    case XE_I8:
        ((uint8_t *)out)[k] = (uint8_t)v;
        return true;
    case XE_I16:
    case XE_U16:
        ((uint16_t *)out)[k] = (uint16_t)v;
        return true;
    case XE_U32:
        ((uint32_t *)out)[k] = (uint32_t)v;
        return true;
    case XE_U64:
        ((uint64_t *)out)[k] = v;
        return true;
    case XE_BOOL:
        ((uint8_t *)out)[k] = v != 0;
        return true;
    case XE_I4:
    case XE_U4:
    case XE_I2:
    case XE_U2:
        ((uint8_t *)out)[k] = xe_subbyte_wrap((int64_t)v, to);
        return true;
    default:
        return false;
    }
}

/* An integer source to a float target: one rounding to f32 or f64 (f16 and bf16 round that f32). */
static void int_to_float(const cast_job *c, int64_t k, uint64_t v, bool is_signed)
{
    float f = is_signed ? (float)(int64_t)v : (float)v;
    void *out = c->out;
    xe_dtype to = c->to;
    if (xe_dtype_is_lowp_float(to)) {
        ((uint8_t *)out)[k] =
            xe_f8_from_f64(is_signed ? (double)(int64_t)v : (double)v, to, c->saturate);
        return;
    }
    switch (to) {
    case XE_F64:
        ((double *)out)[k] = is_signed ? (double)(int64_t)v : (double)v;
        break;
    case XE_F32:
        ((float *)out)[k] = f;
        break;
    case XE_F16:
        ((xe_f16 *)out)[k] = xe_f32_to_f16(f);
        break;
    case XE_BF16:
        ((uint16_t *)out)[k] = xe_f2bf(f);
        break;
    default:
        break;
    }
}

static void cast_one(const cast_job *c, const void *p, int64_t k)
{
    if (xe_dtype_is_integer(c->dt) || c->dt == XE_BOOL) {
        uint64_t v = int_bits(p, c->dt);
        if (!store_int_bits(c->out, c->to, k, v))
            int_to_float(c, k, v, !xe_dtype_is_unsigned(c->dt) && c->dt != XE_BOOL);
        return;
    }
    if (xe_dtype_is_lowp_float(c->to)) { /* exact double of any float source, one rounding */
        ((uint8_t *)c->out)[k] = xe_f8_from_f64(xe_load_f64(p, c->dt, 0), c->to, c->saturate);
        return;
    }
    if (c->dt == XE_F32 && c->to == XE_BF16) { /* one rounding, not two */
        ((uint16_t *)c->out)[k] = xe_f2bf(*(const float *)p);
        return;
    }
    xe_store_f64(c->out, c->to, k,
                 xe_load_f64(p, c->dt, 0)); /* exact for f16 bf16 f32 f64 sources */
}

/* Below this many elements, one thread. */
#define PARALLEL_MIN (1 << 15)

#define CAST_LOOP(TI, TO, EXPR)                                                                    \
    do {                                                                                           \
        const TI *x = a->in[0]->data;                                                              \
        TO *y = a->out->data;                                                                      \
        _Pragma("omp parallel for schedule(static) if (n >= PARALLEL_MIN)") for (int64_t i = 0;    \
                                                                                 i < n; i++)       \
            y[i] = EXPR;                                                                           \
        return true;                                                                               \
    } while (0)

static bool same_shape(const xe_shape *p, const xe_shape *q)
{
    if (p->rank != q->rank)
        return false;
    for (int d = 0; d < p->rank; d++)
        if (p->dims[d] != q->dims[d])
            return false;
    return true;
}

static bool cast_fast(const xe_kernel_args *a)
{
    xe_dtype from = a->in[0]->dtype, to = a->out->dtype;
    if (!same_shape(&a->in[0]->shape, &a->out->shape))
        return false;
    int64_t n = xe_tensor_numel(a->out);
    if (from == XE_F32 && to == XE_U8)
        CAST_LOOP(float, uint8_t, (uint8_t)xe_f32_to_narrow(x[i], 0.0f, 255.0f));
    if (from == XE_F32 && to == XE_I8)
        CAST_LOOP(float, int8_t, (int8_t)xe_f32_to_narrow(x[i], -128.0f, 127.0f));
    if (from == XE_U8 && to == XE_F32)
        CAST_LOOP(uint8_t, float, (float)x[i]);
    if (from == XE_I8 && to == XE_F32)
        CAST_LOOP(int8_t, float, (float)x[i]);
    if (from == XE_U8 && to == XE_I32)
        CAST_LOOP(uint8_t, int32_t, (int32_t)x[i]);
    if (from == XE_I8 && to == XE_I32)
        CAST_LOOP(int8_t, int32_t, (int32_t)x[i]);
    if (from == XE_I32 && to == XE_F32)
        CAST_LOOP(int32_t, float, (float)x[i]);
    if (from == XE_F16 && to == XE_F32) /* the widening around half-precision convolutions */
        CAST_LOOP(xe_f16, float, xe_f16_to_f32(x[i]));
    if (from == XE_F32 && to == XE_F16)
        CAST_LOOP(float, xe_f16, xe_f32_to_f16(x[i]));
    return false;
}

xe_code xe_cpu_cast(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    if (cast_fast(a))
        return XE_OK;
    cast_job c = {.dt = a->in[0]->dtype,
                  .to = a->out->dtype,
                  .out = a->out->data,
                  .saturate = xe_node_attr_bool(a->node, "saturate", true)};
    const char *src = a->in[0]->data;
    size_t es = xe_dtype_size(c.dt);
    int64_t n = xe_tensor_numel(a->out); /* a cast's input has its output's shape */
    for (int64_t k = 0; k < n; k++)
        cast_one(&c, src + (size_t)k * es, k);
    return XE_OK;
}
