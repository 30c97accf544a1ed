/*
 * unique: the sorted distinct values of a 1-D tensor. Its output length
 * depends on the data, so the kernel allocates the output itself. Values
 * are compared as doubles (exact for every dtype but i64 beyond 2^53, which
 * is sorted through its own path); NaNs sort last and collapse into one.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

static int cmp_f64(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    if (isnan(a) || isnan(b))
        return isnan(a) - isnan(b);
    return (a > b) - (a < b);
}

static int cmp_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

/* Sorts vals in place and compacts equal neighbours; returns the count. */
static int64_t sort_unique(void *vals, int64_t n, bool is_i64)
{
    size_t es = is_i64 ? sizeof(int64_t) : sizeof(double);
    qsort(vals, (size_t)n, es, is_i64 ? cmp_i64 : cmp_f64);
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        const char *cur = (const char *)vals + i * es;
        if (m > 0 && ((is_i64 ? cmp_i64 : cmp_f64)(cur, (char *)vals + (m - 1) * es) == 0))
            continue;
        memmove((char *)vals + m * es, cur, es);
        m++;
    }
    return m;
}

xe_code xe_cpu_unique(const xe_kernel_args *a, xe_status *st)
{
    const xe_tensor *x = a->in[0];
    int64_t n = xe_tensor_numel(x);
    bool is_i64 = x->dtype == XE_I64;
    void *vals = malloc((size_t)(n ? n : 1) * 8);
    if (!vals)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        if (is_i64)
            ((int64_t *)vals)[i] = ((const int64_t *)x->data)[i];
        else
            ((double *)vals)[i] = xe_load_f64(x->data, x->dtype, i);
    }
    int64_t m = sort_unique(vals, n, is_i64);
    xe_shape s = {.rank = 1, .dims = {m}};
    xe_tensor *out = xe_tensor_new(x->dtype, &s, XE_DEV_CPU, st);
    if (!out) {
        free(vals);
        return st->code;
    }
    for (int64_t i = 0; i < m; i++) {
        if (is_i64)
            ((int64_t *)out->data)[i] = ((int64_t *)vals)[i];
        else
            xe_store_f64(out->data, x->dtype, i, ((double *)vals)[i]);
    }
    free(vals);
    *a->out_ret = out;
    return XE_OK;
}
