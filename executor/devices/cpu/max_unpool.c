/*
 * max_unpool (ONNX MaxUnpool, infer/roi.c): the result is zeros, and
 * element i of x goes to flat position indices[i] of it (in x's order, so
 * the last of two elements that name one position is the one kept, as in
 * ONNX's reference). A negative index counts from the end, as numpy's;
 * one outside [-size, size) is an error that names it. Elements are moved
 * as bytes, never converted.
 */
#include <string.h>

#include "kernels.h"

xe_code xe_cpu_max_unpool(const xe_kernel_args *a, xe_status *st)
{
    const xe_tensor *x = a->in[0], *ix = a->in[1];
    xe_tensor *y = a->out;
    int64_t n = xe_tensor_numel(x), size = xe_tensor_numel(y);
    size_t esz = xe_dtype_size(x->dtype);
    const int64_t *idx = ix->data;
    for (int64_t i = 0; i < n; i++)
        if (idx[i] < -size || idx[i] >= size)
            return xe_fail(st, XE_ERR_RUNTIME,
                           "node %s (max_unpool): index %lld (at position %lld) is outside the "
                           "%lld elements of the result",
                           a->node->name, (long long)idx[i], (long long)i, (long long)size);
    memset(y->data, 0, (size_t)size * esz);
    const char *src = x->data;
    char *dst = y->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t to = idx[i] < 0 ? idx[i] + size : idx[i];
        memcpy(dst + (size_t)to * esz, src + (size_t)i * esz, esz);
    }
    return XE_OK;
}
