/*
 * GPU kernels of the ops without inputs: const (the node's host value
 * copied to the device), iota (index along an axis) and the stateful
 * random ops.
 *
 * Random values come from the counter-based generator of rng.h, which the
 * CPU kernel includes too: element i of run r is a pure function of
 * (seed, r, i). The affine step (mean + stddev * z, min + (max - min) * u)
 * is written with round-to-nearest intrinsics so that nvcc cannot fuse it
 * into an FMA: the CPU build (-std=c11) does not contract either, so
 * uniform values are bit-identical on both devices (normal values go
 * through log and cos, where CUDA's libm may differ from glibc's by an ulp
 * in double).
 */
#include "common.cuh"

/* ---- const --------------------------------------------------------------------- */

extern "C" xe_code xe_gpu_const(const xe_kernel_args *a, xe_status *st)
{
    if (!a->out->nbytes)
        return XE_OK;
    if (!a->node->value || a->node->value->nbytes != a->out->nbytes)
        return xe_fail(st, XE_ERR_RUNTIME, "node %s (const): value does not match its type",
                       a->node->name);
    /* from pageable memory this returns once the source is staged: the node keeps it anyway */
    return xk_check(cudaMemcpyAsync(a->out->data, a->node->value->data, a->out->nbytes,
                                    cudaMemcpyHostToDevice, xk_stream()),
                    a, "copy of the constant", st);
}

/* ---- iota ---------------------------------------------------------------------- */

/* Stores an integral value v the way xe_store_f64 does for T. */
template <typename T> __device__ __forceinline__ void store_index(T *o, int64_t i, int64_t v)
{
    Num<T>::store(o, i, (typename Num<T>::C)(double)v);
}
template <> __device__ __forceinline__ void store_index<int32_t>(int32_t *o, int64_t i, int64_t v)
{
    o[i] = (int32_t)v;
}
template <> __device__ __forceinline__ void store_index<int64_t>(int64_t *o, int64_t i, int64_t v)
{
    o[i] = v;
}

/* o[i] = (i / inner) % dim */
template <typename T>
__global__ void __launch_bounds__(XK_BLOCK) k_iota(T *__restrict__ o, int64_t n, int64_t inner, int64_t dim)
{
    int64_t step = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        store_index<T>(o, i, dim ? (i / inner) % dim : 0);
}

template <typename T>
static xe_code launch_iota(const xe_kernel_args *a, int64_t n, int64_t inner, int64_t dim, xe_status *st)
{
    k_iota<T><<<xk_grid(n, XK_BLOCK), XK_BLOCK, 0, xk_stream()>>>((T *)a->out->data, n, inner, dim);
    return xk_launched(a, "iota kernel", st);
}

extern "C" xe_code xe_gpu_iota(const xe_kernel_args *a, xe_status *st)
{
    const xe_shape *s = &a->out->shape;
    int64_t n = xe_shape_numel(s);
    if (n == 0)
        return XE_OK;
    int64_t axis = xe_node_attr_int(a->node, "axis", 0);
    if (axis < 0)
        axis += s->rank;
    if (s->rank && (axis < 0 || axis >= s->rank))
        return xe_fail(st, XE_ERR_RUNTIME, "node %s (iota): axis out of range", a->node->name);
    int64_t inner = 1, dim = s->rank ? s->dims[axis] : 1;
    for (int d = (int)axis + 1; d < s->rank; d++)
        inner *= s->dims[d];
    switch (a->out->dtype) {
    case XE_F32: return launch_iota<float>(a, n, inner, dim, st);
    case XE_F64: return launch_iota<double>(a, n, inner, dim, st);
    case XE_F16: return launch_iota<xe_f16>(a, n, inner, dim, st);
    case XE_I32: return launch_iota<int32_t>(a, n, inner, dim, st);
    case XE_I64: return launch_iota<int64_t>(a, n, inner, dim, st);
    default:
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (iota): no GPU kernel for %s", a->node->name,
                       xe_dtype_name(a->out->dtype));
    }
}

/* ---- random -------------------------------------------------------------------- */

/* Parameters of one random launch. */
typedef struct rand_args {
    uint64_t seed, run;
    double p0, p1; /* mean, stddev or minval, maxval */
    bool normal;
} rand_args;

/* Element i as a double, the CPU kernel's formula without FMA contraction. */
template <typename T> __device__ __forceinline__ double rand_value(const rand_args &r, uint64_t i)
{
    if (r.normal)
        return __dadd_rn(r.p0, __dmul_rn(r.p1, xe_rng_normal(r.seed, r.run, i)));
    double u = std::is_same<T, double>::value ? xe_rng_uniform_f64(r.seed, r.run, i)
                                              : (double)xe_rng_uniform_f32(r.seed, r.run, i);
    return __dadd_rn(r.p0, __dmul_rn(__dsub_rn(r.p1, r.p0), u));
}

template <typename T>
__global__ void __launch_bounds__(XK_BLOCK) k_random(T *__restrict__ o, int64_t n, rand_args r)
{
    int64_t step = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        Num<T>::store(o, i, (typename Num<T>::C)rand_value<T>(r, (uint64_t)i));
}

template <typename T>
static xe_code launch_random(const xe_kernel_args *a, int64_t n, const rand_args &r, xe_status *st)
{
    k_random<T><<<xk_grid(n, XK_BLOCK), XK_BLOCK, 0, xk_stream()>>>((T *)a->out->data, n, r);
    return xk_launched(a, "random kernel", st);
}

extern "C" xe_code xe_gpu_random(const xe_kernel_args *a, xe_status *st)
{
    rand_args r;
    r.normal = a->node->op == XE_OP_RANDOM_NORMAL;
    r.seed = (uint64_t)xe_node_attr_int(a->node, "seed", 0);
    r.run = (*a->state)++; /* the run counter advances on every run, as on the CPU */
    r.p0 = xe_node_attr_float(a->node, r.normal ? "mean" : "minval", 0.0);
    r.p1 = xe_node_attr_float(a->node, r.normal ? "stddev" : "maxval", 1.0);
    int64_t n = xe_tensor_numel(a->out);
    if (n == 0)
        return XE_OK;
    switch (a->out->dtype) {
    case XE_F32: return launch_random<float>(a, n, r, st);
    case XE_F64: return launch_random<double>(a, n, r, st);
    case XE_F16: return launch_random<xe_f16>(a, n, r, st);
    default:
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (%s): no GPU kernel for %s", a->node->name,
                       xe_op_name(a->node->op), xe_dtype_name(a->out->dtype));
    }
}
