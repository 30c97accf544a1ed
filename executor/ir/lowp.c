/*
 * The low-precision storage dtypes (xlac/dtype.h): the four float8 kinds of
 * ONNX, float4 e2m1, the scale type e8m0 and the 4- and 2-bit integers.
 *
 * A float8 value is decoded exactly into a double by its fields; a double
 * is encoded by scaling it to its binade's quantum, rounding that to the
 * nearest integer (ties to even, rint in the default rounding mode) and
 * scaling back, which is exact in double for every value a float8 holds.
 * One table row per kind holds what differs: mantissa bits, bias, whether
 * inf and NaN are IEEE's (e5m2), or NaN is 0x80 with no -0 and no inf (the
 * fnuz kinds), or NaN is S.1111.111 with no inf (e4m3fn), or there is
 * neither (e2m1, four bits: the sign is bit 3).
 *
 * The sub-byte integers live one value per byte in memory; ONNX packs them
 * (two or four per byte, the first in the lowest bits), and pack/unpack here
 * are the only place that knows it.
 */
#include <math.h>
#include <string.h>

#include "xlac/dtype.h"

/* What one float8 kind is made of. */
typedef struct f8_kind {
    int nbits;       /* 8, or 4 for e2m1 */
    int mbits;       /* mantissa bits */
    int bias;        /* exponent bias */
    bool ieee;       /* e5m2: exponent all ones is inf (mantissa 0) or NaN */
    bool fnuz;       /* NaN is 0x80; no -0, no inf */
    bool nan;        /* has a NaN (all but e2m1) */
    uint8_t maxbits; /* the largest finite value's bits */
} f8_kind;

static const f8_kind *kind_of(xe_dtype dt)
{
    static const f8_kind k[5] = {
        {8, 3, 7, false, false, true, 0x7e}, /* e4m3fn: 448 */
        {8, 3, 8, false, true, true, 0x7f},  /* e4m3fnuz: 240 */
        {8, 2, 15, true, false, true, 0x7b}, /* e5m2: 57344 */
        {8, 2, 16, false, true, true, 0x7f}, /* e5m2fnuz: 57344 */
        {4, 1, 1, false, false, false, 0x7}, /* e2m1: 6 */
    };
    return xe_dtype_is_float8(dt) ? &k[dt - XE_F8E4M3FN] : dt == XE_F4E2M1 ? &k[4] : NULL;
}

/*
 * e8m0 (a scale: 2^(bits - 127), no sign, no zero, NaN 0xff) has no mantissa: it is no row of
 * the table. Encoding follows ONNX's reference, on v's f32 bits: their exponent, one more when
 * the mantissa is not zero ("up"), kept at 0xfe by saturate; f32 inf and NaN give 0xff.
 */
static uint8_t e8m0_from_f64(double v, bool saturate)
{
    float f = (float)v;
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    unsigned e = (x >> 23) & 0xff;
    if (e == 0xff)
        return 0xff;
    if ((x & 0x7fffff) && !(saturate && e == 0xfe))
        e++;
    return (uint8_t)e;
}

double xe_f8_to_f64(uint8_t bits, xe_dtype dt)
{
    if (dt == XE_F8E8M0)
        return bits == 0xff ? NAN : ldexp(1.0, bits - 127);
    const f8_kind *k = kind_of(dt);
    if (!k)
        return NAN;
    int sign = 1 << (k->nbits - 1), mag = bits & (sign - 1), e = mag >> k->mbits,
        m = mag & ((1 << k->mbits) - 1);
    bool neg = bits & sign;
    if (k->fnuz && bits == 0x80)
        return NAN;
    if (k->nan && !k->fnuz && !k->ieee && mag == 0x7f)
        return neg ? -NAN : NAN;
    if (k->ieee && e == (1 << (7 - k->mbits)) - 1)
        return m ? (neg ? -NAN : NAN) : neg ? -INFINITY : INFINITY;
    double v = e == 0 ? ldexp(m, 1 - k->bias - k->mbits)
                      : ldexp(m + (1 << k->mbits), e - k->bias - k->mbits);
    return neg ? -v : v;
}

double xe_f8_max(xe_dtype dt)
{
    if (dt == XE_F8E8M0)
        return ldexp(1.0, 127);
    const f8_kind *k = kind_of(dt);
    return k ? xe_f8_to_f64(k->maxbits, dt) : NAN;
}

/* The bits of r, a non-negative value that kind k holds exactly. */
static uint8_t f8_fields(double r, const f8_kind *k)
{
    if (r == 0)
        return 0;
    int e;
    frexp(r, &e);
    int exp = e - 1 + k->bias; /* the exponent field; <= 0: subnormal */
    if (exp <= 0)
        return (uint8_t)ldexp(r, k->bias - 1 + k->mbits);
    return (uint8_t)(exp << k->mbits | ((int)ldexp(r, k->mbits - (e - 1)) - (1 << k->mbits)));
}

/* What a value beyond the largest finite one becomes (sign already in s). */
static uint8_t f8_overflow(const f8_kind *k, uint8_t s, bool saturate)
{
    if (saturate || !k->nan)
        return s | k->maxbits;
    return k->ieee ? (uint8_t)(s | 0x7c) : k->fnuz ? 0x80 : (uint8_t)(s | 0x7f);
}

uint8_t xe_f8_from_f64(double v, xe_dtype dt, bool saturate)
{
    if (dt == XE_F8E8M0)
        return e8m0_from_f64(v, saturate);
    const f8_kind *k = kind_of(dt);
    if (!k)
        return 0;
    uint8_t sign = (uint8_t)(1u << (k->nbits - 1));
    uint8_t nan = k->fnuz ? 0x80 : k->nan ? 0x7f : sign; /* e5m2: 0x7f is a NaN too; e2m1: -0 */
    if (isnan(v))
        return nan;
    uint8_t s = signbit(v) ? sign : 0; /* a zero drops it in the fnuz kinds, below */
    double a = fabs(v);
    if (isinf(a))
        return f8_overflow(k, s, saturate);
    int e;
    frexp(a, &e); /* a = f 2^e, f in [0.5, 1): its binade is 2^(e-1) */
    int lo = 1 - k->bias, binade = a == 0 || e - 1 < lo ? lo : e - 1;
    double r = ldexp(rint(ldexp(a, k->mbits - binade)), binade - k->mbits); /* ties to even */
    if (r > xe_f8_to_f64(k->maxbits, dt))
        return f8_overflow(k, s, saturate);
    uint8_t bits = f8_fields(r, k);
    return bits == 0 && k->fnuz ? 0 : (uint8_t)(s | bits);
}

uint8_t xe_subbyte_wrap(int64_t v, xe_dtype dt)
{
    int bits = xe_dtype_bits(dt);
    unsigned mask = (1u << bits) - 1, low = (unsigned)((uint64_t)v & mask), sign = 1u << (bits - 1);
    if (dt == XE_I4 || dt == XE_I2)
        return (uint8_t)(int8_t)((int)(low ^ sign) - (int)sign); /* sign-extended */
    return (uint8_t)low;
}

void xe_subbyte_unpack(const uint8_t *packed, int64_t n, xe_dtype dt, uint8_t *out)
{
    int bits = xe_dtype_bits(dt), per = 8 / bits;
    for (int64_t i = 0; i < n; i++)
        out[i] = xe_subbyte_wrap(packed[i / per] >> (bits * (int)(i % per)), dt);
}

void xe_subbyte_pack(const uint8_t *vals, int64_t n, xe_dtype dt, uint8_t *packed)
{
    int bits = xe_dtype_bits(dt), per = 8 / bits;
    unsigned mask = (1u << bits) - 1;
    for (int64_t i = 0; i < n; i++) {
        if (i % per == 0)
            packed[i / per] = 0;
        packed[i / per] |= (uint8_t)((vals[i] & mask) << (bits * (int)(i % per)));
    }
}
