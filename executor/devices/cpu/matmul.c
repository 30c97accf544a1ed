/*
 * CPU matmul with numpy's rules: 1-D operands are promoted (and the added
 * dim dropped from the result), batch dims broadcast, transpose_a/_b swap
 * an operand's last two dims. f32 goes to the CPU engine (cpu/dnnl_matmul.c,
 * oneDNN, constant weights packed once); f64 goes to CBLAS (OpenBLAS),
 * because oneDNN has no f64 product, and so does f32 where the engine
 * refuses a form; f16 goes to the engine in f32 (dnnl_matmul.c), and what it
 * refuses, like the ints, to a blocked loop (f16 in float, ints in
 * int64 with wrap-around). 8-bit integer operands (u8, i8: MatMulInteger's
 * and the quantized products') give an i32 product, exact: the engine's
 * int8 primitive for u8/i8 x i8, the blocked loop for the rest.
 *
 * BLAS runs inside the executor's OpenMP team, not in its own threads:
 * OpenBLAS is set to one thread once, and the batch elements and row (or
 * column) blocks of a large matmul are an OpenMP loop of single-threaded
 * gemms. Two thread pools on the same cores take turns spinning; one pool
 * does not (transformer_block's elementwise ops after a matmul were up to
 * 7x slower behind OpenBLAS's spinning workers).
 */
#include <cblas.h>
#include <omp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "broadcast.h"
#include "cpu/dnnl_engine.h"
#include "kernels.h"

/* One operand as matmul sees it: batch shape, rows, cols, transposed or not. */
typedef struct mm_operand {
    xe_shape batch;
    int64_t rows, cols; /* of the stored matrix */
    bool trans;
} mm_operand;

static mm_operand mm_view(const xe_shape *s, bool trans, bool is_a)
{
    mm_operand m = {.trans = trans};
    if (s->rank == 1) {
        m.rows = is_a ? 1 : s->dims[0];
        m.cols = is_a ? s->dims[0] : 1;
        m.trans = false;
        return m;
    }
    m.batch.rank = s->rank - 2;
    memcpy(m.batch.dims, s->dims, sizeof(int64_t) * (size_t)m.batch.rank);
    m.rows = s->dims[s->rank - 2];
    m.cols = s->dims[s->rank - 1];
    return m;
}

typedef struct mm_job {
    const xe_tensor *a, *b;
    xe_tensor *c;
    mm_operand va, vb;
    int64_t M, N, K;
} mm_job;

#define NB 256 /* output columns per block of accumulators */

/*
 * C[M,N] = op(A) op(B) with a blocked loop: for each row of C, a block of
 * NB accumulators is updated a row of op(B) at a time (contiguous reads
 * of B when it is not transposed). ACC is float for f16 and uint64_t for
 * ints (wrap-around instead of signed overflow). TA, TB: the operands'
 * element types, T the result's.
 */
#define GEMM_LOOP(TA, TB, T, ACC, LOAD, STORE)                                                     \
    do {                                                                                           \
        const TA *A = (const TA *)j->a->data + abase;                                              \
        const TB *B = (const TB *)j->b->data + bbase;                                              \
        T *Cm = (T *)j->c->data + cbase;                                                           \
        _Pragma("omp parallel for if (M * N * K >= 65536 && M > 1)") for (int64_t m = 0; m < M;    \
                                                                          m++)                     \
        {                                                                                          \
            ACC acc[NB];                                                                           \
            for (int64_t n0 = 0; n0 < N; n0 += NB) {                                               \
                int64_t w = N - n0 < NB ? N - n0 : NB;                                             \
                for (int64_t n = 0; n < w; n++)                                                    \
                    acc[n] = 0;                                                                    \
                for (int64_t k = 0; k < K; k++) {                                                  \
                    ACC av = LOAD(A[ta ? k * lda + m : m * lda + k]);                              \
                    for (int64_t n = 0; n < w; n++)                                                \
                        acc[n] += av * LOAD(B[tb ? (n0 + n) * ldb + k : k * ldb + n0 + n]);        \
                }                                                                                  \
                for (int64_t n = 0; n < w; n++)                                                    \
                    Cm[m * N + n0 + n] = STORE(acc[n]);                                            \
            }                                                                                      \
        }                                                                                          \
    } while (0)

#define H2F(v) xe_f16_to_f32(v)
#define F2H(v) xe_f32_to_f16(v)
#define I2U(v) ((uint64_t)(int64_t)(v))
#define U2I32(v) ((int32_t)(uint32_t)(v))
#define U2I64(v) ((int64_t)(v))

static void gemm_generic(const mm_job *j, int64_t abase, int64_t bbase, int64_t cbase)
{
    int64_t M = j->M, N = j->N, K = j->K, lda = j->va.cols, ldb = j->vb.cols;
    bool ta = j->va.trans, tb = j->vb.trans;
    xe_dtype da = j->a->dtype, db = j->b->dtype;
    if (da == XE_U8 && db == XE_I8)
        GEMM_LOOP(uint8_t, int8_t, int32_t, uint64_t, I2U, U2I32);
    else if (da == XE_I8 && db == XE_I8)
        GEMM_LOOP(int8_t, int8_t, int32_t, uint64_t, I2U, U2I32);
    else if (da == XE_U8 && db == XE_U8)
        GEMM_LOOP(uint8_t, uint8_t, int32_t, uint64_t, I2U, U2I32);
    else if (da == XE_I8 && db == XE_U8)
        GEMM_LOOP(int8_t, uint8_t, int32_t, uint64_t, I2U, U2I32);
    else if (j->c->dtype == XE_F16)
        GEMM_LOOP(xe_f16, xe_f16, xe_f16, float, H2F, F2H);
    else if (j->c->dtype == XE_I32)
        GEMM_LOOP(int32_t, int32_t, int32_t, uint64_t, I2U, U2I32);
    else
        GEMM_LOOP(int64_t, int64_t, int64_t, uint64_t, I2U, U2I64);
}

/*
 * Rows [m0, m1) and columns [n0, n1) of C = op(A)[M,K] op(B)[K,N] for one
 * batch element (flat indices ia, ib, ic), by BLAS (f32, f64).
 */
static void gemm_blas_block(const mm_job *j, int64_t ia, int64_t ib, int64_t ic, int64_t m0,
                            int64_t m1, int64_t n0, int64_t n1)
{
    int64_t M = j->M, N = j->N, K = j->K;
    int64_t lda = j->va.cols ? j->va.cols : 1, ldb = j->vb.cols ? j->vb.cols : 1;
    bool ta = j->va.trans, tb = j->vb.trans;
    /* op(A)'s row m starts at A + m*lda, or at column m of the stored A^T. */
    int64_t aoff = ia * j->va.rows * j->va.cols + (ta ? m0 : m0 * lda);
    int64_t boff = ib * j->vb.rows * j->vb.cols + (tb ? n0 * ldb : n0);
    int64_t coff = ic * M * N + m0 * N + n0;
    CBLAS_TRANSPOSE cta = ta ? CblasTrans : CblasNoTrans, ctb = tb ? CblasTrans : CblasNoTrans;
    int bm = (int)(m1 - m0), bn = (int)(n1 - n0), ldc = (int)(N ? N : 1);
    if (j->c->dtype == XE_F32)
        cblas_sgemm(CblasRowMajor, cta, ctb, bm, bn, (int)K, 1.0f, (const float *)j->a->data + aoff,
                    (int)lda, (const float *)j->b->data + boff, (int)ldb, 0.0f,
                    (float *)j->c->data + coff, ldc);
    else
        cblas_dgemm(CblasRowMajor, cta, ctb, bm, bn, (int)K, 1.0, (const double *)j->a->data + aoff,
                    (int)lda, (const double *)j->b->data + boff, (int)ldb, 0.0,
                    (double *)j->c->data + coff, ldc);
}

int64_t xe_matmul_batch_index(const xe_shape *opb, const xe_shape *outb, int64_t flat)
{
    int64_t idx = 0, mul = 1;
    for (int d = outb->rank - 1; d >= 0; d--) {
        int64_t i = flat % outb->dims[d];
        flat /= outb->dims[d];
        int od = d - (outb->rank - opb->rank);
        if (od >= 0) {
            if (opb->dims[od] != 1)
                idx += i * mul;
            mul *= opb->dims[od];
        }
    }
    return idx;
}

static void blas_single_threaded(void)
{
    openblas_set_num_threads(1);
}

/* Below this many multiply-adds a matmul is one gemm on the calling thread. */
#define MM_PARALLEL_MIN_MACS (1 << 21)
/* A block is at least this many rows (or columns) of C. */
#define MM_MIN_BLOCK 32

/*
 * Every batch element, cut into `parts` blocks of rows (or of columns when
 * C is too short to cut by rows), one single-threaded gemm per block, the
 * blocks an OpenMP loop.
 */
static void gemm_blas_parallel(const mm_job *j, const xe_shape *batch, int64_t nb)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, blas_single_threaded);
    int threads = omp_get_max_threads();
    int64_t parts = 1;
    bool by_rows = j->M >= j->N || j->M >= MM_MIN_BLOCK * threads;
    int64_t extent = by_rows ? j->M : j->N;
    double macs = (double)nb * (double)j->M * (double)j->N * (double)j->K; /* no int64 overflow */
    if (macs >= MM_PARALLEL_MIN_MACS && nb < threads) {
        parts = (threads + nb - 1) / nb;
        int64_t most = (extent + MM_MIN_BLOCK - 1) / MM_MIN_BLOCK;
        parts = parts < most ? parts : most;
    }
    int64_t tasks = nb * parts;
    bool parallel = tasks > 1 && macs >= MM_PARALLEL_MIN_MACS;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t t = 0; t < tasks; t++) {
        int64_t i = t / parts, p = t % parts;
        int64_t lo = extent * p / parts, hi = extent * (p + 1) / parts;
        int64_t ia = xe_matmul_batch_index(&j->va.batch, batch, i);
        int64_t ib = xe_matmul_batch_index(&j->vb.batch, batch, i);
        if (by_rows)
            gemm_blas_block(j, ia, ib, i, lo, hi, 0, j->N);
        else
            gemm_blas_block(j, ia, ib, i, 0, j->M, lo, hi);
    }
}

xe_code xe_cpu_matmul(const xe_kernel_args *a, xe_status *st)
{
    mm_job j = {.a = a->in[0], .b = a->in[1], .c = a->out};
    j.va = mm_view(&j.a->shape, xe_node_attr_bool(a->node, "transpose_a", false), true);
    j.vb = mm_view(&j.b->shape, xe_node_attr_bool(a->node, "transpose_b", false), false);
    j.M = j.va.trans ? j.va.cols : j.va.rows;
    j.K = j.va.trans ? j.va.rows : j.va.cols;
    j.N = j.vb.trans ? j.vb.rows : j.vb.cols;
    xe_shape batch;
    if (!xe_shape_broadcast(&j.va.batch, &j.vb.batch, &batch))
        return xe_fail(st, XE_ERR_RUNTIME, "batch dims do not broadcast");
    int64_t nb = xe_shape_numel(&batch);
    if (j.c->dtype == XE_BOOL)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "matmul is not defined on bool");
    if (j.M > INT32_MAX || j.N > INT32_MAX || j.K > INT32_MAX)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "matmul dims above 2^31 are not supported");
    if (nb * j.M * j.N == 0)
        return XE_OK;
    if (j.K == 0) {
        memset(a->out->data, 0, a->out->nbytes);
        return XE_OK;
    }
    bool int8 = j.a->dtype == XE_U8 || j.a->dtype == XE_I8;
    if (j.c->dtype == XE_F32 || j.c->dtype == XE_F16 ||
        int8) { /* the engine (cpu/dnnl_matmul.c); what it
                     refuses runs on BLAS or the loop */
        xe_code c = xe_dnnl_matmul(a, st);
        if (c != XE_ERR_UNSUPPORTED)
            return c;
        xe_status_clear(st);
    }
    if (j.c->dtype != XE_F32 && j.c->dtype != XE_F64) {
        for (int64_t i = 0; i < nb; i++)
            gemm_generic(&j, xe_matmul_batch_index(&j.va.batch, &batch, i) * j.va.rows * j.va.cols,
                         xe_matmul_batch_index(&j.vb.batch, &batch, i) * j.vb.rows * j.vb.cols,
                         i * j.M * j.N);
        return XE_OK;
    }
    gemm_blas_parallel(&j, &batch, nb);
    return XE_OK;
}

/*
 * One plain product for a caller's own blocking (the fused attention's
 * tiles, codegen/targets/c/attention_step.c): OpenBLAS, one thread, on
 * the calling thread. Not oneDNN's sgemm: its first call in a process
 * generates its kernels, 40-50 ms for a non-transposed B (measured here),
 * which a model's first run would pay; a block's product is small enough
 * that OpenBLAS runs it about as fast.
 */
void xe_cpu_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                  const float *b, int64_t ldb, float *c, int64_t ldc)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, blas_single_threaded);
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)k, 1.0f, a, (int)lda, b, (int)ldb, 0.0f, c, (int)ldc);
}
