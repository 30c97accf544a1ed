/*
 * The CPU's f16 <-> f32 array conversions (executor/devices/cpu/half.c), which the engine's f16
 * products use around their f32 primitive: narrowing must give xe_f32_to_f16's bits for every
 * float (checked on a stride of 7 through all 2^32 bit patterns, NaN payloads, denormals, the
 * rounding ties and the overflow edge included, plus a tail shorter than a vector), widening
 * xe_f16_to_f32's for every half but a signaling NaN, which must stay a NaN of its sign. And
 * generated f16 code's rounding of a float to f16 and back (scalar.h's xe_f16_round_vec) must be
 * xe_h2f_vec(xe_f2h_vec(x)) over a third of the floats where it rounds (every low-bit pattern) and
 * a stride of the rest; every float with XE_F16_SWEEP=1.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/half.h"
#include "scalar.h"
#include "xlac/dtype.h"

TestSuite(half_arrays, .timeout = 120);

#define CHUNK (1 << 20)

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

Test(half_arrays, narrowing_gives_xe_f32_to_f16_for_every_float)
{
    float *f = malloc(CHUNK * sizeof *f);
    xe_f16 *h = malloc(CHUNK * sizeof *h);
    cr_assert(f && h);
    uint64_t u = 0, wrong = 0;
    while (u < (1ull << 32)) {
        int64_t n = 0;
        for (; n < CHUNK - 3 && u < (1ull << 32); u += 7)
            f[n++] = float_of((uint32_t)u);
        /* the ties and edges on every pass: 65504, 65519.996, 65520, 2^-24 and 2^-25 */
        f[n++] = 65520.0f;
        f[n++] = float_of(0x33000000u);
        f[n++] = float_of(0x477fefffu);
        xe_cpu_narrow_f16(f, h, n);
        for (int64_t i = 0; i < n; i++)
            if (h[i] != xe_f32_to_f16(f[i]) && wrong++ < 5)
                cr_log_error("float %08x: %04x, xe_f32_to_f16 %04x", bits_of(f[i]), h[i],
                             xe_f32_to_f16(f[i]));
    }
    /* a tail of 5 after one block of 8 */
    for (int i = 0; i < 13; i++)
        f[i] = 1.0f + (float)i / 4096.0f;
    xe_cpu_narrow_f16(f, h, 13);
    for (int i = 0; i < 13; i++)
        cr_expect_eq(h[i], xe_f32_to_f16(f[i]), "tail element %d", i);
    cr_expect_eq(wrong, 0, "%llu floats narrowed wrong", (unsigned long long)wrong);
    free(f);
    free(h);
}

Test(half_arrays, widening_gives_xe_f16_to_f32_but_may_quiet_a_signaling_nan)
{
    xe_f16 *h = malloc(65539 * sizeof *h);
    float *f = malloc(65539 * sizeof *f);
    cr_assert(h && f);
    for (uint32_t i = 0; i < 65539; i++) /* 65539: a tail of 3 after the last block of 8 */
        h[i] = (xe_f16)i;
    xe_cpu_widen_f16(h, f, 65539);
    int wrong = 0;
    for (uint32_t i = 0; i < 65539; i++) {
        xe_f16 x = h[i];
        float want = xe_f16_to_f32(x);
        bool snan = (x & 0x7c00) == 0x7c00 && (x & 0x3ff) && !(x & 0x200);
        bool ok = snan ? f[i] != f[i] && (bits_of(f[i]) >> 31) == (uint32_t)(x >> 15)
                       : bits_of(f[i]) == bits_of(want);
        if (!ok && wrong++ < 5)
            cr_log_error("half %04x: %08x, xe_f16_to_f32 %08x", x, bits_of(f[i]), bits_of(want));
    }
    cr_expect_eq(wrong, 0, "%d halves widened wrong", wrong);
    free(h);
    free(f);
}

/* Both forms over n floats from bit pattern base on, step apart: how many differ. */
static uint64_t round_mismatches(float *x, uint64_t base, int64_t n, uint64_t step)
{
    uint64_t wrong = 0;
    for (int64_t i = 0; i < n; i++)
        x[i] = float_of((uint32_t)(base + (uint64_t)i * step));
    for (int64_t i = 0; i < n; i++) {
        float r = xe_f16_round_vec(x[i]), want = xe_h2f_vec(xe_f2h_vec(x[i]));
        if (bits_of(r) != bits_of(want) && wrong++ < 3)
            cr_log_error("float %08x: %08x, round trip %08x", bits_of(x[i]), bits_of(r),
                         bits_of(want));
    }
    return wrong;
}

/* Positive floats from 2^-25 (below it everything rounds to 0) to 65536 (above, infinity), where
   the rounding happens, in runs of 2^20 consecutive ones (every pattern of the 13 bits f16 drops,
   under 128 of the bits it keeps) with two runs skipped after each; the rest of all 2^32 on a
   stride of 127; or every float with XE_F16_SWEEP=1 in the environment (a minute; sanitizer
   builds are too slow for more than the default). */
Test(half_arrays, f16_round_is_the_round_trip_for_every_float)
{
    float *x = malloc(CHUNK * sizeof *x);
    cr_assert(x);
    uint64_t wrong = 0, lo = 0x33000000u, hi = 0x47800000u;
    const char *all = getenv("XE_F16_SWEEP");
    bool every = all && !strcmp(all, "1");
    uint64_t step = every ? 1 : 127, skip = every ? 1 : 3;
    for (uint64_t base = lo; base < hi; base += CHUNK * skip)
        wrong += round_mismatches(x, base, (int64_t)(hi - base < CHUNK ? hi - base : CHUNK), 1);
    for (uint64_t base = 0; base < (1ull << 32); base += CHUNK * step)
        wrong += round_mismatches(x, base, CHUNK, step);
    cr_expect_eq(wrong, 0, "%llu floats rounded wrong", (unsigned long long)wrong);
    free(x);
}
