/*
 * The counter-based random generator of random_normal and random_uniform:
 * Philox4x32-10 keyed by the seed, counting (element index, run number).
 * Element i of run r is a pure function of (seed, r, i), so CPU and GPU
 * kernels (which both include this file) give the same bits, in any order
 * and on any number of threads.
 */
#ifndef XE_RNG_H
#define XE_RNG_H

#include "scalar.h" /* XE_HOSTDEV, stdint */

typedef struct xe_philox_out {
    uint32_t v[4];
} xe_philox_out;

XE_HOSTDEV static inline uint32_t xe_mulhilo32(uint32_t a, uint32_t b, uint32_t *hi)
{
    uint64_t p = (uint64_t)a * b;
    *hi = (uint32_t)(p >> 32);
    return (uint32_t)p;
}

/* Philox4x32 with 10 rounds: counter (c0..c3), key (k0, k1). */
XE_HOSTDEV static inline xe_philox_out xe_philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                                 uint32_t k0, uint32_t k1)
{
    for (int r = 0; r < 10; r++) {
        uint32_t hi0, hi1;
        uint32_t lo0 = xe_mulhilo32(0xD2511F53u, c0, &hi0);
        uint32_t lo1 = xe_mulhilo32(0xCD9E8D57u, c2, &hi1);
        uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0;
        c1 = lo1;
        c2 = n2;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    xe_philox_out o;
    o.v[0] = c0;
    o.v[1] = c1;
    o.v[2] = c2;
    o.v[3] = c3;
    return o;
}

/* Four 32-bit words for element i of run `run` under `seed`. */
XE_HOSTDEV static inline xe_philox_out xe_rng_words(uint64_t seed, uint64_t run, uint64_t i)
{
    return xe_philox((uint32_t)i, (uint32_t)(i >> 32), (uint32_t)run, (uint32_t)(run >> 32),
                     (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* Uniform in [0, 1): 24 bits for float, 53 bits for double. */
XE_HOSTDEV static inline float xe_rng_uniform_f32(uint64_t seed, uint64_t run, uint64_t i)
{
    return (float)(xe_rng_words(seed, run, i).v[0] >> 8) * (1.0f / 16777216.0f);
}

XE_HOSTDEV static inline double xe_rng_uniform_f64(uint64_t seed, uint64_t run, uint64_t i)
{
    xe_philox_out w = xe_rng_words(seed, run, i);
    uint64_t bits = ((uint64_t)w.v[0] << 21) ^ (uint64_t)(w.v[1] >> 11);
    return (double)(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

/* Standard normal by Box-Muller on two words, computed in double. */
XE_HOSTDEV static inline double xe_rng_normal(uint64_t seed, uint64_t run, uint64_t i)
{
    xe_philox_out w = xe_rng_words(seed, run, i);
    double u1 = ((double)w.v[0] + 1.0) * (1.0 / 4294967296.0); /* (0, 1] */
    double u2 = (double)w.v[1] * (1.0 / 4294967296.0);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
