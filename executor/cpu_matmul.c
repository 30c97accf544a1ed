/*
 * CPU matmul with numpy's rules: 1-D operands are promoted (and the added
 * dim dropped from the result), batch dims broadcast, transpose_a/_b swap
 * an operand's last two dims. f32 and f64 go to CBLAS (OpenBLAS), one gemm
 * per batch element; f16 and ints use a blocked loop (f16 in float, ints
 * in int64 with wrap-around).
 */
#include <cblas.h>
#include <string.h>

#include "broadcast.h"
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

/* C[M,N] = op(A)[M,K] op(B)[K,N] for one batch element, any dtype. */
static void gemm_one(const mm_job *j, int64_t ia, int64_t ib, int64_t ic)
{
    xe_dtype dt = j->c->dtype;
    int64_t M = j->M, N = j->N, K = j->K;
    int64_t lda = j->va.cols, ldb = j->vb.cols;
    if (dt == XE_F32) {
        const float *A = (const float *)j->a->data + ia * j->va.rows * j->va.cols;
        const float *B = (const float *)j->b->data + ib * j->vb.rows * j->vb.cols;
        cblas_sgemm(CblasRowMajor, j->va.trans ? CblasTrans : CblasNoTrans,
                    j->vb.trans ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, A,
                    (int)(lda ? lda : 1), B, (int)(ldb ? ldb : 1), 0.0f,
                    (float *)j->c->data + ic * M * N, (int)(N ? N : 1));
        return;
    }
    if (dt == XE_F64) {
        const double *A = (const double *)j->a->data + ia * j->va.rows * j->va.cols;
        const double *B = (const double *)j->b->data + ib * j->vb.rows * j->vb.cols;
        cblas_dgemm(CblasRowMajor, j->va.trans ? CblasTrans : CblasNoTrans,
                    j->vb.trans ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, 1.0, A,
                    (int)(lda ? lda : 1), B, (int)(ldb ? ldb : 1), 0.0,
                    (double *)j->c->data + ic * M * N, (int)(N ? N : 1));
        return;
    }
    int64_t abase = ia * j->va.rows * j->va.cols, bbase = ib * j->vb.rows * j->vb.cols;
#pragma omp parallel for if (M * N * K >= 65536)
    for (int64_t m = 0; m < M; m++) {
        for (int64_t n = 0; n < N; n++) {
            double accf = 0;
            uint64_t acci = 0;
            for (int64_t k = 0; k < K; k++) {
                int64_t ai = abase + (j->va.trans ? k * lda + m : m * lda + k);
                int64_t bi = bbase + (j->vb.trans ? n * ldb + k : k * ldb + n);
                if (dt == XE_F16)
                    accf += (double)xe_f16_to_f32(((const xe_f16 *)j->a->data)[ai]) *
                            xe_f16_to_f32(((const xe_f16 *)j->b->data)[bi]);
                else if (dt == XE_I32)
                    acci += (uint64_t)((const int32_t *)j->a->data)[ai] *
                            (uint64_t)((const int32_t *)j->b->data)[bi];
                else
                    acci += (uint64_t)((const int64_t *)j->a->data)[ai] *
                            (uint64_t)((const int64_t *)j->b->data)[bi];
            }
            int64_t ci = ic * M * N + m * N + n;
            if (dt == XE_F16)
                ((xe_f16 *)j->c->data)[ci] = xe_f32_to_f16((float)accf);
            else if (dt == XE_I32)
                ((int32_t *)j->c->data)[ci] = (int32_t)(uint32_t)acci;
            else
                ((int64_t *)j->c->data)[ci] = (int64_t)acci;
        }
    }
}

/* Flat index of a batch element of an operand broadcast against the output batch. */
static int64_t batch_index(const xe_shape *opb, const xe_shape *outb, int64_t flat)
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
    if (j.M * j.N == 0)
        return XE_OK;
    if (j.K == 0) {
        memset(a->out->data, 0, a->out->nbytes);
        return XE_OK;
    }
    for (int64_t i = 0; i < nb; i++)
        gemm_one(&j, batch_index(&j.va.batch, &batch, i), batch_index(&j.vb.batch, &batch, i), i);
    return XE_OK;
}
