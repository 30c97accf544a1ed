/*
 * What ahead-of-time code calls back into the executor for (capi.h): a
 * program that xlac-compile generated for a whole graph runs its fused
 * kernels itself and hands its matmul steps to the executor's own CPU
 * kernel (BLAS, the same one the per-op run and the JIT use), on the
 * caller's host buffers, wrapped, never copied.
 */
#include <string.h>

#include "kernels.h"
#include "xlac/capi.h"
#include "xlac/xlac.h"

static bool shape_of(int rank, const int64_t *dims, xe_shape *s)
{
    if (rank < 0 || rank > XE_MAX_RANK)
        return false;
    s->rank = rank;
    memcpy(s->dims, dims, sizeof *dims * (size_t)rank);
    return true;
}

int xe_aot_matmul(int dtype, const void *a, int a_rank, const int64_t *a_dims, int transpose_a, const void *b,
                  int b_rank, const int64_t *b_dims, int transpose_b, void *c, int c_rank, const int64_t *c_dims)
{
    xe_status st;
    xe_status_clear(&st);
    xe_shape sa, sb, sc;
    if (dtype < 0 || dtype >= XE_DTYPE_COUNT || !shape_of(a_rank, a_dims, &sa) || !shape_of(b_rank, b_dims, &sb) ||
        !shape_of(c_rank, c_dims, &sc))
        return XE_ERR_USAGE;
    xe_tensor *in[2] = {xe_tensor_wrap((xe_dtype)dtype, &sa, XE_DEV_CPU, (void *)a, &st),
                        xe_tensor_wrap((xe_dtype)dtype, &sb, XE_DEV_CPU, (void *)b, &st)};
    xe_tensor *out = xe_tensor_wrap((xe_dtype)dtype, &sc, XE_DEV_CPU, c, &st);
    xe_attr attrs[2] = {{.name = (char *)"transpose_a", .kind = XE_ATTR_BOOL, .i = transpose_a != 0},
                        {.name = (char *)"transpose_b", .kind = XE_ATTR_BOOL, .i = transpose_b != 0}};
    xe_node node = {.name = (char *)"aot_matmul", .op = XE_OP_MATMUL, .n_inputs = 2, .n_attrs = 2, .attrs = attrs};
    xe_kernel_args k = {.node = &node, .n_in = 2, .in = in, .out = out};
    xe_code code = in[0] && in[1] && out ? xe_cpu_matmul(&k, &st) : st.code;
    xe_tensor_release(in[0]);
    xe_tensor_release(in[1]);
    xe_tensor_release(out);
    return (int)code;
}
