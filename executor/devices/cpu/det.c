/*
 * det: the determinant of each innermost M x M matrix of x, by LU
 * factorisation with partial pivoting in f64 (the sign flips with each row
 * swap), rounded once to x's dtype. A singular matrix gives 0; NaN and inf
 * flow through the arithmetic.
 */
#include <math.h>
#include <stdlib.h>

#include "kernels.h"

/* The determinant of the m x m matrix a (row major), which it overwrites. */
static double lu_det(double *a, int64_t m)
{
    double det = 1;
    for (int64_t c = 0; c < m; c++) {
        int64_t p = c;
        for (int64_t r = c + 1; r < m; r++)
            if (fabs(a[r * m + c]) > fabs(a[p * m + c]))
                p = r;
        if (p != c) {
            for (int64_t j = 0; j < m; j++) {
                double t = a[c * m + j];
                a[c * m + j] = a[p * m + j];
                a[p * m + j] = t;
            }
            det = -det;
        }
        double pivot = a[c * m + c];
        det *= pivot;
        if (pivot == 0)
            return det; /* singular: 0 (or NaN from NaN entries before it) */
        for (int64_t r = c + 1; r < m; r++) {
            double f = a[r * m + c] / pivot;
            for (int64_t j = c + 1; j < m; j++)
                a[r * m + j] -= f * a[c * m + j];
        }
    }
    return det;
}

xe_code xe_cpu_det(const xe_kernel_args *a, xe_status *st)
{
    const xe_tensor *x = a->in[0];
    int64_t m = x->shape.dims[x->shape.rank - 1], count = xe_tensor_numel(a->out);
    double *work = malloc(sizeof(double) * (size_t)(m * m > 0 ? m * m : 1));
    if (!work)
        return xe_fail(st, XE_ERR_NOMEM, "det: out of memory for a %lld x %lld matrix",
                       (long long)m, (long long)m);
    for (int64_t i = 0; i < count; i++) {
        for (int64_t j = 0; j < m * m; j++)
            work[j] = xe_load_f64(x->data, x->dtype, i * m * m + j);
        xe_store_f64(a->out->data, a->out->dtype, i, lu_det(work, m));
    }
    free(work);
    return XE_OK;
}
