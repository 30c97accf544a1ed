/*
 * CPU kernels of the ops without inputs: const (a copy of the node's
 * value), iota (index along an axis) and the stateful random ops, whose
 * values come from the counter-based generator in rng.h.
 */
#include <string.h>

#include "broadcast.h"
#include "kernels.h"
#include "rng.h"

xe_code xe_cpu_const(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    if (a->out->nbytes)
        memcpy(a->out->data, a->node->value->data, a->out->nbytes);
    return XE_OK;
}

xe_code xe_cpu_iota(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    xe_axis_view av = xe_axis_view_of(&a->out->shape, xe_node_attr_int(a->node, "axis", 0));
    int64_t n = xe_shape_numel(&a->out->shape), inner = av.inner, dim = av.k;
    xe_dtype dt = a->out->dtype;
#pragma omp parallel for if (n >= 32768)
    for (int64_t i = 0; i < n; i++) {
        int64_t v = dim ? (i / inner) % dim : 0;
        if (dt == XE_I32)
            ((int32_t *)a->out->data)[i] = (int32_t)v;
        else if (dt == XE_I64)
            ((int64_t *)a->out->data)[i] = v;
        else
            xe_store_f64(a->out->data, dt, i, (double)v);
    }
    return XE_OK;
}

xe_code xe_cpu_random(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    uint64_t seed = (uint64_t)xe_node_attr_int(a->node, "seed", 0);
    uint64_t run = a->state ? (*a->state)++ : 0; /* no state: always the first run */
    bool normal = a->node->op == XE_OP_RANDOM_NORMAL;
    double p0 = xe_node_attr_float(a->node, normal ? "mean" : "minval", 0.0);
    double p1 = xe_node_attr_float(a->node, normal ? "stddev" : "maxval", 1.0);
    int64_t n = xe_tensor_numel(a->out);
    xe_dtype dt = a->out->dtype;
#pragma omp parallel for if (n >= 32768)
    for (int64_t i = 0; i < n; i++) {
        double v;
        if (normal)
            v = p0 + p1 * xe_rng_normal(seed, run, (uint64_t)i);
        else if (dt == XE_F64)
            v = p0 + (p1 - p0) * xe_rng_uniform_f64(seed, run, (uint64_t)i);
        else
            v = p0 + (p1 - p0) * (double)xe_rng_uniform_f32(seed, run, (uint64_t)i);
        xe_store_f64(a->out->data, dt, i, v);
    }
    return XE_OK;
}
