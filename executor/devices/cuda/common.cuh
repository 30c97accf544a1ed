/*
 * Private to the per-op CUDA kernels: what every .cu file of cuda/ shares.
 *
 * - The C headers of the executor, wrapped in extern "C" (they are plain
 *   C11 and carry no C++ guards of their own).
 * - Error checks that turn a CUDA or cuBLAS status into XE_ERR_DEVICE with
 *   the runtime's message, and a launch check (cudaGetLastError).
 * - Launch geometry: blocks of 256 threads, grids sized from the SM count
 *   and capped by the work, grid-stride loops in the kernels.
 * - Element access: f16 is stored as uint16_t bit patterns and computed in
 *   float, exactly as the CPU kernels do (Num<T> below).
 * - Strided index maps (xk_map): an output index space of up to
 *   XE_MAX_RANK dims with one element stride per dim and per operand, the
 *   device form of broadcast.h's iterator.
 *
 * Everything here is static or inline: each .cu file is its own
 * translation unit and only the xe_gpu_* entry points are exported.
 */
#ifndef XE_CUDA_COMMON_CUH
#define XE_CUDA_COMMON_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

extern "C" {
#include "broadcast.h"
#include "kernels.h"
#include "xlac/device.h"
#include "xlac/dtype.h"
#include "xlac/graph.h"
#include "xlac/op.h"
#include "xlac/status.h"
#include "xlac/tensor.h"
}

#include "rng.h"
#include "scalar.h"

#define XK_BLOCK 256  /* threads per block for 1-D launches */
#define XK_WARP 32    /* threads per warp */

/* ---- errors ---------------------------------------------------------------- */

/* XE_OK, or XE_ERR_DEVICE naming the node, the op and the CUDA error. */
static inline xe_code xk_check(cudaError_t e, const xe_kernel_args *a, const char *what,
                               xe_status *st)
{
    if (e == cudaSuccess)
        return XE_OK;
    cudaGetLastError(); /* clear a non-sticky error so that later calls start clean */
    return xe_fail(st, XE_ERR_DEVICE, "node %s (%s): %s: %s", a->node ? a->node->name : "?",
                   a->node ? xe_op_name(a->node->op) : "?", what, cudaGetErrorString(e));
}

/* Checks the launch just made (configuration errors surface here). */
static inline xe_code xk_launched(const xe_kernel_args *a, const char *kernel, xe_status *st)
{
    return xk_check(cudaGetLastError(), a, kernel, st);
}

/* The executor's stream. */
static inline cudaStream_t xk_stream(void)
{
    return (cudaStream_t)xe_gpu_stream();
}

/* ---- launch geometry ----------------------------------------------------------- */

/* Blocks for a grid-stride loop over n items, per blocks of `block` threads:
   enough to fill the device (8 blocks of 256 per SM), never more than the work. */
static inline unsigned xk_grid(int64_t n, int block)
{
    int64_t sms = xe_gpu_sm_count() > 0 ? xe_gpu_sm_count() : 1;
    int64_t want = (n + block - 1) / block, cap = 8 * sms;
    if (want > cap)
        want = cap;
    return (unsigned)(want < 1 ? 1 : want);
}

/* ---- element types ------------------------------------------------------------- */

/* Storage type S, compute type C, load and store between them. */
template <typename S> struct Num {
    typedef S C;
    __device__ static C load(const S *p, int64_t i) { return p[i]; }
    __device__ static void store(S *p, int64_t i, C v) { p[i] = v; }
};

/* f16: IEEE binary16 bits in uint16_t, computed in float, rounded to nearest even. */
template <> struct Num<xe_f16> {
    typedef float C;
    __device__ static float load(const xe_f16 *p, int64_t i)
    {
        return __half2float(__ushort_as_half(p[i]));
    }
    __device__ static void store(xe_f16 *p, int64_t i, float v)
    {
        p[i] = __half_as_ushort(__float2half_rn(v));
    }
};

/* ---- strided index maps ----------------------------------------------------------- */

#define XK_MAP_OPS 4 /* operands an index map can address */

/*
 * An index space of `rank` dims (row-major, dims[rank-1] fastest) and, per
 * operand, an element stride per dim (0 where it broadcasts) and a base
 * offset. Passed to kernels by value.
 */
typedef struct xk_map {
    int rank;                               /* >= 1 */
    int64_t dims[XE_MAX_RANK];
    int64_t stride[XK_MAP_OPS][XE_MAX_RANK];
    int64_t base[XK_MAP_OPS];
} xk_map;

/* The map of broadcast.h (merged dims) for inputs ins[0..n) against out. */
static inline xk_map xk_map_bcast(const xe_shape *out, const xe_tensor *const *ins, int n)
{
    const xe_shape *shapes[XE_BCAST_MAX_OPERANDS];
    for (int k = 0; k < n; k++)
        shapes[k] = &ins[k]->shape;
    xe_bcast b;
    xe_bcast_init(&b, out, shapes, n);
    xk_map m;
    memset(&m, 0, sizeof m);
    m.rank = b.rank;
    for (int d = 0; d < b.rank; d++) {
        m.dims[d] = b.dims[d];
        for (int k = 0; k < n; k++)
            m.stride[k][d] = b.stride[k][d];
    }
    return m;
}

/* True when every operand's offset is i * stride[k][0] (one merged dim). */
static inline bool xk_map_flat(const xk_map *m)
{
    return m->rank == 1;
}

/* Offsets of operands [0, N) at linear index i; I is the index arithmetic type. */
template <int N, typename I>
__host__ __device__ __forceinline__ void xk_offsets(const xk_map &m, I i, int64_t *off)
{
#pragma unroll
    for (int k = 0; k < N; k++)
        off[k] = m.base[k];
    for (int d = m.rank - 1; d >= 0; d--) {
        I dim = (I)m.dims[d];
        I q = i / dim, r = i - q * dim;
#pragma unroll
        for (int k = 0; k < N; k++)
            off[k] += (int64_t)r * m.stride[k][d];
        i = q;
    }
}

/* True when 32-bit unsigned index arithmetic is enough for a grid-stride
   loop over n elements (i + stride never wraps below 2^32). */
static inline bool xk_small(int64_t n)
{
    return n <= (int64_t)INT32_MAX;
}

#endif
