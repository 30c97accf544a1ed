/*
 * nonzero: the positions of the nonzero elements of x, one column per
 * element in row-major order and one row per dim (ONNX NonZero). The count
 * depends on the data, so the kernel allocates the output itself (as
 * unique does); it runs per op, at a cluster border.
 */
#include "kernels.h"

xe_code xe_cpu_nonzero(const xe_kernel_args *a, xe_status *st)
{
    const xe_tensor *x = a->in[0];
    int64_t n = xe_tensor_numel(x), count = 0;
    int r = x->shape.rank;
    for (int64_t i = 0; i < n; i++)
        count += xe_load_f64(x->data, x->dtype, i) != 0.0;
    xe_shape s = {.rank = 2, .dims = {r, count}};
    xe_tensor *out = xe_tensor_new(XE_I64, &s, XE_DEV_CPU, st);
    if (!out)
        return st->code;
    int64_t *o = out->data, j = 0;
    for (int64_t i = 0; i < n; i++) {
        if (xe_load_f64(x->data, x->dtype, i) == 0.0)
            continue;
        int64_t left = i;
        for (int d = r - 1; d >= 0; d--) { /* i's coordinates, the last dim fastest */
            o[d * count + j] = left % x->shape.dims[d];
            left /= x->shape.dims[d];
        }
        j++;
    }
    *a->out_ret = out;
    return XE_OK;
}
