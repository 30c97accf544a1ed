/*
 * GPU kernel of matmul (numpy rules): rank-1 operands are promoted ([k] is
 * [1,k] on the left, [k,1] on the right, and transpose flags do not apply
 * to them), leading dims are batch dims that broadcast, transpose_a and
 * transpose_b swap an operand's last two dims.
 *
 * f32 and f64 go to cuBLAS on the executor's handle (bound to its stream).
 * cuBLAS is column-major, so the row-major product C = op(A) op(B) is
 * computed as C^T = op(B)^T op(A)^T: the operands are passed swapped, each
 * with the op that its stored layout needs. When every batch offset is a
 * multiple of one stride (0 for a broadcast operand) it is one strided
 * batched call, otherwise one gemm per batch. f16 (accumulated in float)
 * and the integer dtypes (accumulated in int64, wrapping) use a 16x16
 * shared-memory tiled kernel.
 */
#include <cublas_v2.h>
#include <limits.h>
#include <stdlib.h>

#include "common.cuh"

#define MM_TILE 16 /* tiled kernel: output tile edge and k step */

/* The problem after promotion: M x K times K x N, nb batches. */
typedef struct mm_shape {
    int64_t M, N, K, nb;
    bool ta, tb;                  /* stored transposed (never for a promoted vector) */
    int brank;                    /* batch rank of the output */
    int64_t bdims[XE_MAX_RANK];   /* output batch dims */
    int64_t astride[XE_MAX_RANK]; /* element stride of A per batch dim, 0 = broadcast */
    int64_t bstride[XE_MAX_RANK];
} mm_shape;

/* Batch strides of one operand (shape s of rank r with 2 matrix dims) against the output batch. */
static void batch_strides(const xe_shape *s, int64_t mat, const mm_shape *p, int64_t *stride)
{
    int ob = s->rank - 2, lead = p->brank - ob;
    int64_t acc = mat;
    for (int d = p->brank - 1; d >= 0; d--) {
        int k = d - lead;
        int64_t n = k >= 0 ? s->dims[k] : 1;
        stride[d] = (n == 1) ? 0 : acc;
        acc *= n;
    }
}

static xe_code mm_plan(const xe_kernel_args *a, mm_shape *p, xe_status *st)
{
    xe_shape A = a->in[0]->shape, B = a->in[1]->shape;
    bool avec = A.rank == 1, bvec = B.rank == 1;
    if (A.rank == 0 || B.rank == 0)
        return xe_fail(st, XE_ERR_RUNTIME, "node %s (matmul): scalar operand", a->node->name);
    if (avec) { /* [k] -> [1,k] */
        int64_t d[2] = {1, A.dims[0]};
        A = xe_shape_make(2, d);
    }
    if (bvec) { /* [k] -> [k,1] */
        int64_t d[2] = {B.dims[0], 1};
        B = xe_shape_make(2, d);
    }
    memset(p, 0, sizeof *p);
    p->ta = !avec && xe_node_attr_bool(a->node, "transpose_a", false);
    p->tb = !bvec && xe_node_attr_bool(a->node, "transpose_b", false);
    p->M = A.dims[A.rank - (p->ta ? 1 : 2)];
    p->K = A.dims[A.rank - (p->ta ? 2 : 1)];
    p->N = B.dims[B.rank - (p->tb ? 2 : 1)];
    if (B.dims[B.rank - (p->tb ? 1 : 2)] != p->K)
        return xe_fail(st, XE_ERR_RUNTIME, "node %s (matmul): contracted dims differ", a->node->name);
    xe_shape ba = {A.rank - 2, {0}}, bb = {B.rank - 2, {0}}, bo;
    memcpy(ba.dims, A.dims, sizeof(int64_t) * (size_t)ba.rank);
    memcpy(bb.dims, B.dims, sizeof(int64_t) * (size_t)bb.rank);
    if (!xe_shape_broadcast(&ba, &bb, &bo))
        return xe_fail(st, XE_ERR_RUNTIME, "node %s (matmul): batch dims do not broadcast", a->node->name);
    p->brank = bo.rank;
    p->nb = 1;
    for (int d = 0; d < bo.rank; d++) {
        p->bdims[d] = bo.dims[d];
        p->nb *= bo.dims[d];
    }
    batch_strides(&A, p->M * p->K, p, p->astride);
    batch_strides(&B, p->K * p->N, p, p->bstride);
    return XE_OK;
}

/* Element offsets of A and B for batch z. */
__host__ __device__ static inline void mm_batch(const mm_shape &p, int64_t z, int64_t *oa, int64_t *ob)
{
    *oa = *ob = 0;
    for (int d = p.brank - 1; d >= 0; d--) {
        int64_t q = z / p.bdims[d], r = z - q * p.bdims[d];
        *oa += r * p.astride[d];
        *ob += r * p.bstride[d];
        z = q;
    }
}

/* ---- tiled kernel (f16, i32, i64) ---------------------------------------------------- */

template <typename T> struct MmAcc { typedef int64_t type; };
template <> struct MmAcc<xe_f16> { typedef float type; };
template <> struct MmAcc<float> { typedef float type; };
template <> struct MmAcc<double> { typedef double type; };

__device__ __forceinline__ float mm_fma(float a, float b, float c) { return a * b + c; }
__device__ __forceinline__ double mm_fma(double a, double b, double c) { return a * b + c; }
__device__ __forceinline__ int64_t mm_fma(int64_t a, int64_t b, int64_t c)
{
    return xe_add_i64(xe_mul_i64(a, b), c);
}

/* Accumulator to storage; integers truncate (wrapping), as integer arithmetic in T would. */
template <typename T, typename A> __device__ __forceinline__ void mm_store(T *o, int64_t i, A v)
{
    Num<T>::store(o, i, (typename Num<T>::C)v);
}
template <> __device__ __forceinline__ void mm_store<int32_t, int64_t>(int32_t *o, int64_t i, int64_t v)
{
    o[i] = (int32_t)(uint32_t)(uint64_t)v;
}

template <typename T>
__global__ void __launch_bounds__(MM_TILE *MM_TILE)
    k_matmul(const T *__restrict__ A, const T *__restrict__ B, T *__restrict__ C, mm_shape p)
{
    typedef typename MmAcc<T>::type Acc;
    __shared__ Acc As[MM_TILE][MM_TILE + 1], Bs[MM_TILE][MM_TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int64_t tm = (p.M + MM_TILE - 1) / MM_TILE, tn = (p.N + MM_TILE - 1) / MM_TILE;
    int64_t tiles = tm * tn * p.nb;
    /* A(m,k) = A[m * ars + k * acs], B(k,n) = B[k * brs + n * bcs] */
    int64_t ars = p.ta ? 1 : p.K, acs = p.ta ? p.M : 1;
    int64_t brs = p.tb ? 1 : p.N, bcs = p.tb ? p.K : 1;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        int64_t z = t / (tm * tn), rem = t - z * tm * tn;
        int64_t m = (rem / tn) * MM_TILE + ty, n = (rem % tn) * MM_TILE + tx;
        int64_t oa, ob;
        mm_batch(p, z, &oa, &ob);
        const T *a = A + oa, *b = B + ob;
        Acc acc = 0;
        for (int64_t k0 = 0; k0 < p.K; k0 += MM_TILE) {
            int64_t ka = k0 + tx, kb = k0 + ty, ma = m, nb = n;
            As[ty][tx] = (ma < p.M && ka < p.K) ? (Acc)Num<T>::load(a, ma * ars + ka * acs) : (Acc)0;
            Bs[ty][tx] = (kb < p.K && nb < p.N) ? (Acc)Num<T>::load(b, kb * brs + nb * bcs) : (Acc)0;
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < MM_TILE; kk++)
                acc = mm_fma(As[ty][kk], Bs[kk][tx], acc);
            __syncthreads();
        }
        if (m < p.M && n < p.N)
            mm_store<T, Acc>(C, z * p.M * p.N + m * p.N + n, acc);
    }
}

template <typename T> static xe_code matmul_tiled(const xe_kernel_args *a, const mm_shape &p, xe_status *st)
{
    int64_t tiles = ((p.M + MM_TILE - 1) / MM_TILE) * ((p.N + MM_TILE - 1) / MM_TILE) * p.nb;
    k_matmul<T><<<xk_grid(tiles, 1), dim3(MM_TILE, MM_TILE), 0, xk_stream()>>>(
        (const T *)a->in[0]->data, (const T *)a->in[1]->data, (T *)a->out->data, p);
    return xk_launched(a, "matmul kernel", st);
}

/* ---- cuBLAS (f32, f64) ------------------------------------------------------------------ */

static xe_code blas_check(cublasStatus_t s, const xe_kernel_args *a, const char *what, xe_status *st)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return XE_OK;
    return xe_fail(st, XE_ERR_DEVICE, "node %s (matmul): %s: %s", a->node->name, what,
                   cublasGetStatusString(s));
}

/* Column-major view of one row-major product: the gemm arguments. */
typedef struct gemm_args {
    cublasOperation_t opa, opb; /* for the swapped operands: first is B, second is A */
    int m, n, k, lda, ldb, ldc;
} gemm_args;

static gemm_args gemm_view(const mm_shape &p)
{
    gemm_args g;
    g.m = (int)p.N;
    g.n = (int)p.M;
    g.k = (int)p.K;
    g.opa = p.tb ? CUBLAS_OP_T : CUBLAS_OP_N; /* B: [K,N] row-major is N x K column-major */
    g.lda = (int)(p.tb ? (p.K > 1 ? p.K : 1) : (p.N > 1 ? p.N : 1));
    g.opb = p.ta ? CUBLAS_OP_T : CUBLAS_OP_N; /* A: [M,K] row-major is K x M column-major */
    g.ldb = (int)(p.ta ? (p.M > 1 ? p.M : 1) : (p.K > 1 ? p.K : 1));
    g.ldc = (int)(p.N > 1 ? p.N : 1);
    return g;
}

/* Typed cuBLAS entry points. */
static cublasStatus_t gemm_strided(cublasHandle_t h, const gemm_args &g, const float *B, long long sb,
                                   const float *A, long long sa, float *C, long long sc, int nb)
{
    const float one = 1.0f, zero = 0.0f;
    return cublasSgemmStridedBatched(h, g.opa, g.opb, g.m, g.n, g.k, &one, B, g.lda, sb, A, g.ldb, sa,
                                     &zero, C, g.ldc, sc, nb);
}
static cublasStatus_t gemm_strided(cublasHandle_t h, const gemm_args &g, const double *B, long long sb,
                                   const double *A, long long sa, double *C, long long sc, int nb)
{
    const double one = 1.0, zero = 0.0;
    return cublasDgemmStridedBatched(h, g.opa, g.opb, g.m, g.n, g.k, &one, B, g.lda, sb, A, g.ldb, sa,
                                     &zero, C, g.ldc, sc, nb);
}
static cublasStatus_t gemm_one(cublasHandle_t h, const gemm_args &g, const float *B, const float *A, float *C)
{
    const float one = 1.0f, zero = 0.0f;
    return cublasSgemm(h, g.opa, g.opb, g.m, g.n, g.k, &one, B, g.lda, A, g.ldb, &zero, C, g.ldc);
}
static cublasStatus_t gemm_one(cublasHandle_t h, const gemm_args &g, const double *B, const double *A,
                               double *C)
{
    const double one = 1.0, zero = 0.0;
    return cublasDgemm(h, g.opa, g.opb, g.m, g.n, g.k, &one, B, g.lda, A, g.ldb, &zero, C, g.ldc);
}

/* The common stride of offsets off(z) = z * s for every batch z, if there is one. */
static bool uniform_stride(const int64_t *stride, const mm_shape &p, int64_t *s)
{
    /* off(z) = sum r_d * stride_d is linear in z iff, walking from the innermost
       batch dim out, each stride is the next one times its dim (0s allowed only all-0) */
    int64_t expect = -1;
    bool all_zero = true;
    for (int d = 0; d < p.brank; d++)
        all_zero = all_zero && (stride[d] == 0 || p.bdims[d] == 1);
    if (all_zero) {
        *s = 0;
        return true;
    }
    for (int d = p.brank - 1; d >= 0; d--) {
        if (p.bdims[d] == 1)
            continue;
        if (expect >= 0 && stride[d] != expect)
            return false;
        if (expect < 0)
            *s = stride[d];
        expect = stride[d] * p.bdims[d];
    }
    return *s != 0;
}

template <typename T> static xe_code matmul_blas(const xe_kernel_args *a, const mm_shape &p, xe_status *st)
{
    if (p.M > INT_MAX || p.N > INT_MAX || p.K > INT_MAX || p.nb > INT_MAX)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (matmul): dims above cuBLAS's int range",
                       a->node->name);
    cublasHandle_t h = (cublasHandle_t)xe_gpu_blas(st);
    if (!h)
        return xe_status_prefix(st, "node %s (matmul): ", a->node->name);
    const T *A = (const T *)a->in[0]->data, *B = (const T *)a->in[1]->data;
    T *C = (T *)a->out->data;
    gemm_args g = gemm_view(p);
    int64_t sa, sb;
    bool uniform = uniform_stride(p.astride, p, &sa) && uniform_stride(p.bstride, p, &sb);
    if (uniform && sb == 0 && !p.ta && sa == p.M * p.K && p.nb * p.M <= INT_MAX) {
        g.n = (int)(p.nb * p.M); /* a shared B: the batches of A are just more rows */
        return blas_check(gemm_one(h, g, B, A, C), a, "cublas gemm", st);
    }
    if (uniform)
        return blas_check(gemm_strided(h, g, B, sb, A, sa, C, p.M * p.N, (int)p.nb), a,
                          "cublas gemm (strided batched)", st);
    for (int64_t z = 0; z < p.nb; z++) {
        int64_t oa, ob;
        mm_batch(p, z, &oa, &ob);
        if (blas_check(gemm_one(h, g, B + ob, A + oa, C + z * p.M * p.N), a, "cublas gemm", st) != XE_OK)
            return st->code;
    }
    return XE_OK;
}

extern "C" xe_code xe_gpu_matmul(const xe_kernel_args *a, xe_status *st)
{
    mm_shape p;
    if (mm_plan(a, &p, st) != XE_OK)
        return st->code;
    if (p.M == 0 || p.N == 0 || p.nb == 0)
        return XE_OK;
    xe_dtype dt = a->in[0]->dtype;
    if (p.K == 0) /* an empty sum: zeros */
        return xk_check(cudaMemsetAsync(a->out->data, 0, a->out->nbytes, xk_stream()), a, "memset", st);
    switch (dt) {
    case XE_F32: return matmul_blas<float>(a, p, st);
    case XE_F64: return matmul_blas<double>(a, p, st);
    case XE_F16: return matmul_tiled<xe_f16>(a, p, st);
    case XE_I32: return matmul_tiled<int32_t>(a, p, st);
    case XE_I64: return matmul_tiled<int64_t>(a, p, st);
    default:
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (matmul): no GPU kernel for %s", a->node->name,
                       xe_dtype_name(dt));
    }
}
