/*
 * The GPU's matmul epilogues: a 2-D f32 matmul whose next step is
 * act(product + bias) only (xg_blas_epilogue: bias, ReLU, tanh-GELU, or
 * a bias and one of them) runs as one cuBLASLt call with that epilogue,
 * writing the epilogue's output directly; the generated kernel of the
 * step is skipped. Row-major as column-major: D^T (N x M) = op(B)^T
 * op(A)^T, so the bias of the product's columns is cuBLASLt's per-row
 * bias of D^T. No workspace (the program's is the reductions'), the
 * algorithm from cuBLASLt's own heuristic. Anything cuBLASLt refuses is
 * XE_ERR_UNSUPPORTED: the program runs the matmul and the kernel instead.
 * cuBLASLt is opened on the first such call (cuda_libs.c), not linked;
 * the handle is the GPU instance's (xe_device_state), made on its first.
 *
 * Not yet run on a device: no session so far had one (scripts/gpu.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program_impl.h"

#ifdef XG_HAVE_CUDA
#include "cuda_libs.h"

/* A GPU instance's cuBLASLt handle, kept in the instance (xe_device_state) under lt_key. */
typedef struct lt_state {
    cublasLtHandle_t handle;
    cublasStatus_t status;
} lt_state;
static const char lt_key = 0;

/* cuBLASLt opened (cuda_libs.c) and dev's handle made, once per instance. */
static void *lt_make(xe_device dev)
{
    (void)dev;
    lt_state *lt = calloc(1, sizeof *lt);
    if (!lt)
        return NULL;
    xe_status st;
    lt->status = CUBLAS_STATUS_NOT_INITIALIZED;
    if (xg_cublaslt_ready(&st) == XE_OK)
        lt->status = cublasLtCreate(&lt->handle);
    return lt;
}

static cublasLtEpilogue_t lt_epilogue(const xg_blas_epi *e)
{
    bool bias = e->bias >= 0;
    switch (e->act) {
    case XG_EPI_RELU:
        return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case XG_EPI_GELU:
        return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    default:
        return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    }
}

/* An operand as cuBLASLt sees it (column-major): stored rows x cols of the row-major tensor,
 * swapped. */
static cublasStatus_t lt_layout(cublasLtMatrixLayout_t *l, const xe_shape *s)
{
    uint64_t rows = (uint64_t)s->dims[1], cols = (uint64_t)s->dims[0];
    return cublasLtMatrixLayoutCreate(l, CUDA_R_32F, rows, cols, (int64_t)rows);
}

/* The descriptor: transposes (of the swapped operands), epilogue, bias. */
static cublasStatus_t lt_desc(cublasLtMatmulDesc_t *d, bool tb, bool ta, const xg_blas_epi *e,
                              const void *bias)
{
    cublasOperation_t opx = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opy = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtEpilogue_t epi = lt_epilogue(e);
    cublasStatus_t s = cublasLtMatmulDescCreate(d, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulDescSetAttribute(*d, CUBLASLT_MATMUL_DESC_TRANSA, &opx, sizeof opx);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulDescSetAttribute(*d, CUBLASLT_MATMUL_DESC_TRANSB, &opy, sizeof opy);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulDescSetAttribute(*d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
    if (s == CUBLAS_STATUS_SUCCESS && bias)
        s = cublasLtMatmulDescSetAttribute(*d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                           sizeof bias);
    return s;
}

/* Whether node's transpose attribute is set, flipped when the operand was a transpose read through.
 */
static bool op_transposed(const xe_node *n, const char *attr, bool flip)
{
    return xe_node_attr_bool(n, attr, false) != flip;
}

xe_code xg_cuda_matmul_epilogue(xg_program *p, const xg_blas_epi *e, xe_tensor **bufs,
                                xe_status *st)
{
    const lt_state *lt = xe_device_state(p->device, &lt_key, lt_make);
    if (!lt || lt->status != CUBLAS_STATUS_SUCCESS)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "no cuBLASLt handle");
    const xg_plan *pl = p->plan;
    const xe_node *n = pl->body->nodes[e->matmul];
    bool fa, fb;
    int ia = xg_matmul_operand(pl->body, pl->types, e->matmul, 0, &fa);
    int ib = xg_matmul_operand(pl->body, pl->types, e->matmul, 1, &fb);
    bool ta = op_transposed(n, "transpose_a", fa), tb = op_transposed(n, "transpose_b", fb);
    const xe_shape *cs = &pl->types[e->matmul].shape;
    const void *bias = e->bias >= 0 ? bufs[e->bias]->data : NULL;
    cublasLtMatmulDesc_t d = NULL;
    cublasLtMatrixLayout_t lx = NULL, ly = NULL, ld = NULL;
    cublasStatus_t s = lt_desc(&d, tb, ta, e, bias);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = lt_layout(&lx, &pl->types[ib].shape);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = lt_layout(&ly, &pl->types[ia].shape);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = lt_layout(&ld, cs);
    const float one = 1.0f, zero = 0.0f;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmul(lt->handle, d, &one, bufs[ib]->data, lx, bufs[ia]->data, ly, &zero,
                           bufs[e->out]->data, ld, bufs[e->out]->data, ld, NULL, NULL, 0,
                           (cudaStream_t)xe_device_stream(p->device));
    if (ld)
        cublasLtMatrixLayoutDestroy(ld);
    if (ly)
        cublasLtMatrixLayoutDestroy(ly);
    if (lx)
        cublasLtMatrixLayoutDestroy(lx);
    if (d)
        cublasLtMatmulDescDestroy(d);
    return s == CUBLAS_STATUS_SUCCESS
               ? XE_OK
               : xe_fail(st, XE_ERR_UNSUPPORTED, "cuBLASLt matmul with epilogue: %s",
                         cublasLtGetStatusString(s));
}
#else
xe_code xg_cuda_matmul_epilogue(xg_program *p, const xg_blas_epi *e, xe_tensor **bufs,
                                xe_status *st)
{
    (void)p, (void)e, (void)bufs;
    return xe_fail(st, XE_ERR_UNSUPPORTED, "xlac was built without CUDA");
}
#endif
