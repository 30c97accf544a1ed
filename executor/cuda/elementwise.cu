/*
 * GPU kernels of the elementwise ops: binary arithmetic, comparisons,
 * logical ops, unary functions, select and cast.
 *
 * One launch per op. Operands are addressed through the broadcast map of
 * broadcast.h (xk_map): when every operand collapses to one merged dim
 * (same shapes, or a scalar against a tensor) the offsets are i * stride
 * (stride 0 or 1); otherwise each index is decomposed over the merged dims,
 * in 32-bit arithmetic when the output is small enough. The arithmetic is
 * the CPU kernels' text: C operators plus the functions of scalar.h, f16
 * computed in float and rounded once (cpu_elementwise.c does the same).
 */
#include "common.cuh"

/* ---- kernels ------------------------------------------------------------------- */

/* out[i] = f(x[i], y[i]) with broadcasting; FLAT: one merged dim. */
template <typename TI, typename TO, typename F, bool FLAT, typename I>
__global__ void __launch_bounds__(XK_BLOCK)
    k_binary(const TI *__restrict__ x, const TI *__restrict__ y, TO *__restrict__ o, xk_map m,
             int64_t n, F f)
{
    I step = (I)blockDim.x * gridDim.x;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < (I)n; i += step) {
        int64_t off[2];
        if (FLAT) {
            off[0] = (int64_t)i * m.stride[0][0];
            off[1] = (int64_t)i * m.stride[1][0];
        } else {
            xk_offsets<2, I>(m, i, off);
        }
        Num<TO>::store(o, (int64_t)i,
                       (typename Num<TO>::C)f(Num<TI>::load(x, off[0]), Num<TI>::load(y, off[1])));
    }
}

/* out[i] = f(x[i]); shapes are equal, so no map. */
template <typename TI, typename TO, typename F>
__global__ void __launch_bounds__(XK_BLOCK)
    k_unary(const TI *__restrict__ x, TO *__restrict__ o, int64_t n, F f)
{
    int64_t step = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        Num<TO>::store(o, i, (typename Num<TO>::C)f(Num<TI>::load(x, i)));
}

/* out[i] = c[i] ? a[i] : b[i] with broadcasting, copying raw elements of type T. */
template <typename T, bool FLAT, typename I>
__global__ void __launch_bounds__(XK_BLOCK)
    k_select(const uint8_t *__restrict__ c, const T *__restrict__ a, const T *__restrict__ b,
             T *__restrict__ o, xk_map m, int64_t n)
{
    I step = (I)blockDim.x * gridDim.x;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < (I)n; i += step) {
        int64_t off[3];
        if (FLAT) {
            for (int k = 0; k < 3; k++)
                off[k] = (int64_t)i * m.stride[k][0];
        } else {
            xk_offsets<3, I>(m, i, off);
        }
        o[i] = c[off[0]] ? a[off[1]] : b[off[2]];
    }
}

/* ---- launchers ------------------------------------------------------------------ */

template <typename TI, typename TO, typename F>
static xe_code launch_binary(const xe_kernel_args *a, F f, xe_status *st)
{
    int64_t n = xe_tensor_numel(a->out);
    if (n == 0)
        return XE_OK;
    xk_map m = xk_map_bcast(&a->out->shape, a->in, 2);
    const TI *x = (const TI *)a->in[0]->data, *y = (const TI *)a->in[1]->data;
    TO *o = (TO *)a->out->data;
    unsigned g = xk_grid(n, XK_BLOCK);
    cudaStream_t s = xk_stream();
    if (xk_map_flat(&m))
        k_binary<TI, TO, F, true, int64_t><<<g, XK_BLOCK, 0, s>>>(x, y, o, m, n, f);
    else if (xk_small(n))
        k_binary<TI, TO, F, false, uint32_t><<<g, XK_BLOCK, 0, s>>>(x, y, o, m, n, f);
    else
        k_binary<TI, TO, F, false, int64_t><<<g, XK_BLOCK, 0, s>>>(x, y, o, m, n, f);
    return xk_launched(a, "binary kernel", st);
}

template <typename TI, typename TO, typename F>
static xe_code launch_unary(const xe_kernel_args *a, F f, xe_status *st)
{
    int64_t n = xe_tensor_numel(a->out);
    if (n == 0)
        return XE_OK;
    k_unary<TI, TO, F><<<xk_grid(n, XK_BLOCK), XK_BLOCK, 0, xk_stream()>>>(
        (const TI *)a->in[0]->data, (TO *)a->out->data, n, f);
    return xk_launched(a, "unary kernel", st);
}

static xe_code unsupported(const xe_kernel_args *a, xe_status *st)
{
    return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s (%s): no GPU kernel for %s", a->node->name,
                   xe_op_name(a->node->op), xe_dtype_name(a->in[0]->dtype));
}

/* ---- binary ---------------------------------------------------------------------- */

/* One functor per op; overloads per compute type. Integers wrap (scalar.h). */
struct BAdd {
    __device__ float operator()(float x, float y) const { return x + y; }
    __device__ double operator()(double x, double y) const { return x + y; }
    __device__ int32_t operator()(int32_t x, int32_t y) const { return xe_add_i32(x, y); }
    __device__ int64_t operator()(int64_t x, int64_t y) const { return xe_add_i64(x, y); }
};
struct BSub {
    __device__ float operator()(float x, float y) const { return x - y; }
    __device__ double operator()(double x, double y) const { return x - y; }
    __device__ int32_t operator()(int32_t x, int32_t y) const { return xe_sub_i32(x, y); }
    __device__ int64_t operator()(int64_t x, int64_t y) const { return xe_sub_i64(x, y); }
};
struct BMul {
    __device__ float operator()(float x, float y) const { return x * y; }
    __device__ double operator()(double x, double y) const { return x * y; }
    __device__ int32_t operator()(int32_t x, int32_t y) const { return xe_mul_i32(x, y); }
    __device__ int64_t operator()(int64_t x, int64_t y) const { return xe_mul_i64(x, y); }
};
struct BDiv {
    __device__ float operator()(float x, float y) const { return x / y; }
    __device__ double operator()(double x, double y) const { return x / y; }
    __device__ int32_t operator()(int32_t x, int32_t y) const { return xe_floordiv_i32(x, y); }
    __device__ int64_t operator()(int64_t x, int64_t y) const { return xe_floordiv_i64(x, y); }
};
struct BPow {
    __device__ float operator()(float x, float y) const { return powf(x, y); }
    __device__ double operator()(double x, double y) const { return pow(x, y); }
    __device__ int32_t operator()(int32_t x, int32_t y) const { return xe_pow_i32(x, y); }
    __device__ int64_t operator()(int64_t x, int64_t y) const { return xe_pow_i64(x, y); }
};
/* bool maximum is `or`, minimum is `and` (the only binary ops defined on bool). */
struct BMax {
    __device__ float operator()(float x, float y) const { return xe_max_f32(x, y); }
    __device__ double operator()(double x, double y) const { return xe_max_f64(x, y); }
    __device__ int32_t operator()(int32_t x, int32_t y) const { return x > y ? x : y; }
    __device__ int64_t operator()(int64_t x, int64_t y) const { return x > y ? x : y; }
    __device__ uint8_t operator()(uint8_t x, uint8_t y) const { return (uint8_t)(x | y); }
};
struct BMin {
    __device__ float operator()(float x, float y) const { return xe_min_f32(x, y); }
    __device__ double operator()(double x, double y) const { return xe_min_f64(x, y); }
    __device__ int32_t operator()(int32_t x, int32_t y) const { return x < y ? x : y; }
    __device__ int64_t operator()(int64_t x, int64_t y) const { return x < y ? x : y; }
    __device__ uint8_t operator()(uint8_t x, uint8_t y) const { return (uint8_t)(x & y); }
};

template <typename F> static xe_code binary_typed(const xe_kernel_args *a, F f, xe_status *st)
{
    switch (a->in[0]->dtype) {
    case XE_F32: return launch_binary<float, float>(a, f, st);
    case XE_F64: return launch_binary<double, double>(a, f, st);
    case XE_F16: return launch_binary<xe_f16, xe_f16>(a, f, st);
    case XE_I32: return launch_binary<int32_t, int32_t>(a, f, st);
    case XE_I64: return launch_binary<int64_t, int64_t>(a, f, st);
    default: return unsupported(a, st);
    }
}

extern "C" xe_code xe_gpu_binary(const xe_kernel_args *a, xe_status *st)
{
    bool is_bool = a->in[0]->dtype == XE_BOOL;
    switch (a->node->op) {
    case XE_OP_ADD: return binary_typed(a, BAdd(), st);
    case XE_OP_SUB: return binary_typed(a, BSub(), st);
    case XE_OP_MUL: return binary_typed(a, BMul(), st);
    case XE_OP_DIV: return binary_typed(a, BDiv(), st);
    case XE_OP_POW: return binary_typed(a, BPow(), st);
    case XE_OP_MAXIMUM:
        return is_bool ? launch_binary<uint8_t, uint8_t>(a, BMax(), st) : binary_typed(a, BMax(), st);
    case XE_OP_MINIMUM:
        return is_bool ? launch_binary<uint8_t, uint8_t>(a, BMin(), st) : binary_typed(a, BMin(), st);
    default: return unsupported(a, st);
    }
}

/* ---- comparisons and logical ops --------------------------------------------------- */

/* The comparison is a uniform run-time switch: one kernel per dtype, not per op. */
struct Cmp {
    int op;
    template <typename C> __device__ bool operator()(C x, C y) const
    {
        switch (op) {
        case XE_OP_EQUAL: return x == y;
        case XE_OP_NOT_EQUAL: return x != y;
        case XE_OP_LESS: return x < y;
        case XE_OP_LESS_EQUAL: return x <= y;
        case XE_OP_GREATER: return x > y;
        default: return x >= y; /* XE_OP_GREATER_EQUAL */
        }
    }
};

extern "C" xe_code xe_gpu_compare(const xe_kernel_args *a, xe_status *st)
{
    Cmp f = {a->node->op};
    switch (a->in[0]->dtype) {
    case XE_F32: return launch_binary<float, uint8_t>(a, f, st);
    case XE_F64: return launch_binary<double, uint8_t>(a, f, st);
    case XE_F16: return launch_binary<xe_f16, uint8_t>(a, f, st);
    case XE_I32: return launch_binary<int32_t, uint8_t>(a, f, st);
    case XE_I64: return launch_binary<int64_t, uint8_t>(a, f, st);
    case XE_BOOL: return launch_binary<uint8_t, uint8_t>(a, f, st);
    default: return unsupported(a, st);
    }
}

struct Logical {
    bool is_and;
    __device__ uint8_t operator()(uint8_t x, uint8_t y) const
    {
        return is_and ? (uint8_t)(x & y) : (uint8_t)(x | y);
    }
};

extern "C" xe_code xe_gpu_logical(const xe_kernel_args *a, xe_status *st)
{
    Logical f = {a->node->op == XE_OP_LOGICAL_AND};
    return launch_binary<uint8_t, uint8_t>(a, f, st);
}

/* ---- unary ------------------------------------------------------------------------- */

/* A float unary functor from its float and double expressions in x. */
#define UNARY_F(NAME, FEXPR, DEXPR)                                                        \
    struct NAME {                                                                          \
        __device__ float operator()(float x) const { return FEXPR; }                       \
        __device__ double operator()(double x) const { return DEXPR; }                     \
    };
UNARY_F(UNeg, -x, -x)
UNARY_F(UAbs, fabsf(x), fabs(x))
UNARY_F(UExp, expf(x), exp(x))
UNARY_F(ULog, logf(x), log(x))
UNARY_F(USqrt, sqrtf(x), sqrt(x))
UNARY_F(URsqrt, xe_rsqrt_f32(x), xe_rsqrt_f64(x))
UNARY_F(UTanh, tanhf(x), tanh(x))
UNARY_F(USigmoid, xe_sigmoid_f32(x), xe_sigmoid_f64(x))
UNARY_F(URelu, xe_relu_f32(x), xe_relu_f64(x))
UNARY_F(UErf, erff(x), erf(x))
UNARY_F(USin, sinf(x), sin(x))
UNARY_F(UCos, cosf(x), cos(x))
UNARY_F(UFloor, floorf(x), floor(x))
UNARY_F(UCeil, ceilf(x), ceil(x))
UNARY_F(UGeluTanh, xe_gelu_tanh_f32(x), xe_gelu_tanh_f64(x))
UNARY_F(UGeluErf, xe_gelu_erf_f32(x), xe_gelu_erf_f64(x))
#undef UNARY_F

/* The integer unary ops: neg, abs, relu (wrapping like the CPU). */
struct INeg {
    __device__ int32_t operator()(int32_t x) const { return xe_sub_i32(0, x); }
    __device__ int64_t operator()(int64_t x) const { return xe_sub_i64(0, x); }
};
struct IAbs {
    __device__ int32_t operator()(int32_t x) const { return xe_abs_i32(x); }
    __device__ int64_t operator()(int64_t x) const { return xe_abs_i64(x); }
};
struct IRelu {
    __device__ int32_t operator()(int32_t x) const { return x < 0 ? 0 : x; }
    __device__ int64_t operator()(int64_t x) const { return x < 0 ? 0 : x; }
};
struct LNot {
    __device__ uint8_t operator()(uint8_t x) const { return (uint8_t)!x; }
};

template <typename F> static xe_code unary_float(const xe_kernel_args *a, F f, xe_status *st)
{
    switch (a->in[0]->dtype) {
    case XE_F32: return launch_unary<float, float>(a, f, st);
    case XE_F64: return launch_unary<double, double>(a, f, st);
    case XE_F16: return launch_unary<xe_f16, xe_f16>(a, f, st);
    default: return unsupported(a, st);
    }
}

template <typename F> static xe_code unary_int(const xe_kernel_args *a, F f, xe_status *st)
{
    switch (a->in[0]->dtype) {
    case XE_I32: return launch_unary<int32_t, int32_t>(a, f, st);
    case XE_I64: return launch_unary<int64_t, int64_t>(a, f, st);
    default: return unsupported(a, st);
    }
}

/* neg, abs and relu are defined on integers too. */
template <typename FF, typename FI>
static xe_code unary_any(const xe_kernel_args *a, FF ff, FI fi, xe_status *st)
{
    return xe_dtype_is_int(a->in[0]->dtype) ? unary_int(a, fi, st) : unary_float(a, ff, st);
}

extern "C" xe_code xe_gpu_unary(const xe_kernel_args *a, xe_status *st)
{
    switch (a->node->op) {
    case XE_OP_NEG: return unary_any(a, UNeg(), INeg(), st);
    case XE_OP_ABS: return unary_any(a, UAbs(), IAbs(), st);
    case XE_OP_RELU: return unary_any(a, URelu(), IRelu(), st);
    case XE_OP_EXP: return unary_float(a, UExp(), st);
    case XE_OP_LOG: return unary_float(a, ULog(), st);
    case XE_OP_SQRT: return unary_float(a, USqrt(), st);
    case XE_OP_RSQRT: return unary_float(a, URsqrt(), st);
    case XE_OP_TANH: return unary_float(a, UTanh(), st);
    case XE_OP_SIGMOID: return unary_float(a, USigmoid(), st);
    case XE_OP_ERF: return unary_float(a, UErf(), st);
    case XE_OP_SIN: return unary_float(a, USin(), st);
    case XE_OP_COS: return unary_float(a, UCos(), st);
    case XE_OP_FLOOR: return unary_float(a, UFloor(), st);
    case XE_OP_CEIL: return unary_float(a, UCeil(), st);
    case XE_OP_GELU:
        if (xe_node_attr_bool(a->node, "approximate", false))
            return unary_float(a, UGeluTanh(), st);
        return unary_float(a, UGeluErf(), st);
    case XE_OP_LOGICAL_NOT:
        if (a->in[0]->dtype != XE_BOOL)
            return unsupported(a, st);
        return launch_unary<uint8_t, uint8_t>(a, LNot(), st);
    default: return unsupported(a, st);
    }
}

/* ---- select -------------------------------------------------------------------------- */

template <typename T> static xe_code launch_select(const xe_kernel_args *a, xe_status *st)
{
    int64_t n = xe_tensor_numel(a->out);
    if (n == 0)
        return XE_OK;
    xk_map m = xk_map_bcast(&a->out->shape, a->in, 3);
    const uint8_t *c = (const uint8_t *)a->in[0]->data;
    const T *x = (const T *)a->in[1]->data, *y = (const T *)a->in[2]->data;
    T *o = (T *)a->out->data;
    unsigned g = xk_grid(n, XK_BLOCK);
    cudaStream_t s = xk_stream();
    if (xk_map_flat(&m))
        k_select<T, true, int64_t><<<g, XK_BLOCK, 0, s>>>(c, x, y, o, m, n);
    else if (xk_small(n))
        k_select<T, false, uint32_t><<<g, XK_BLOCK, 0, s>>>(c, x, y, o, m, n);
    else
        k_select<T, false, int64_t><<<g, XK_BLOCK, 0, s>>>(c, x, y, o, m, n);
    return xk_launched(a, "select kernel", st);
}

extern "C" xe_code xe_gpu_select(const xe_kernel_args *a, xe_status *st)
{
    switch (xe_dtype_size(a->in[1]->dtype)) {
    case 1: return launch_select<uint8_t>(a, st);
    case 2: return launch_select<uint16_t>(a, st);
    case 4: return launch_select<uint32_t>(a, st);
    case 8: return launch_select<uint64_t>(a, st);
    default: return unsupported(a, st);
    }
}

/* ---- cast ------------------------------------------------------------------------------ */

/* Storage value to double, as xe_load_f64 reads it (bool is != 0). */
template <typename S> __device__ __forceinline__ double to_f64(S v)
{
    return (double)v;
}
template <> __device__ __forceinline__ double to_f64<xe_f16>(xe_f16 v)
{
    return (double)__half2float(__ushort_as_half(v));
}
template <> __device__ __forceinline__ double to_f64<uint8_t>(uint8_t v)
{
    return v != 0 ? 1.0 : 0.0;
}

/* Double to storage, as cpu_elementwise.c's cast_row writes it. */
template <typename S> __device__ __forceinline__ S from_f64(double v);
template <> __device__ __forceinline__ float from_f64<float>(double v) { return (float)v; }
template <> __device__ __forceinline__ double from_f64<double>(double v) { return v; }
template <> __device__ __forceinline__ xe_f16 from_f64<xe_f16>(double v)
{
    return __half_as_ushort(__float2half_rn((float)v));
}
template <> __device__ __forceinline__ int32_t from_f64<int32_t>(double v) { return xe_f64_to_i32(v); }
template <> __device__ __forceinline__ int64_t from_f64<int64_t>(double v) { return xe_f64_to_i64(v); }
template <> __device__ __forceinline__ uint8_t from_f64<uint8_t>(double v) { return v != 0; }

/* One element of cast; integer to integer is exact (i64 → i32 wraps). */
template <typename TI, typename TO> struct CastOp {
    __device__ TO operator()(TI v) const
    {
        if constexpr (std::is_same<TI, int64_t>::value && std::is_same<TO, int64_t>::value)
            return v;
        else if constexpr (std::is_same<TI, int64_t>::value && std::is_same<TO, int32_t>::value)
            return (int32_t)(uint32_t)(uint64_t)v;
        else if constexpr (std::is_same<TI, int32_t>::value && std::is_same<TO, int64_t>::value)
            return (int64_t)v;
        else if constexpr (std::is_same<TI, int64_t>::value && std::is_same<TO, float>::value)
            return (float)v; /* one rounding, as cpu_elementwise.c's cast_row */
        else if constexpr (std::is_same<TI, int64_t>::value && std::is_same<TO, xe_f16>::value)
            return __half_as_ushort(__float2half_rn((float)v));
        else
            return from_f64<TO>(to_f64<TI>(v));
    }
};

/* Raw storage in, raw storage out: Num<> would convert f16 early, so cast
   uses a kernel of its own over the bit patterns. */
template <typename TI, typename TO>
__global__ void __launch_bounds__(XK_BLOCK)
    k_cast(const TI *__restrict__ x, TO *__restrict__ o, int64_t n)
{
    CastOp<TI, TO> f;
    int64_t step = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        o[i] = f(x[i]);
}

template <typename TI, typename TO> static xe_code launch_cast(const xe_kernel_args *a, xe_status *st)
{
    int64_t n = xe_tensor_numel(a->out);
    if (n == 0)
        return XE_OK;
    k_cast<TI, TO><<<xk_grid(n, XK_BLOCK), XK_BLOCK, 0, xk_stream()>>>(
        (const TI *)a->in[0]->data, (TO *)a->out->data, n);
    return xk_launched(a, "cast kernel", st);
}

template <typename TI> static xe_code cast_from(const xe_kernel_args *a, xe_status *st)
{
    switch (a->out->dtype) {
    case XE_F32: return launch_cast<TI, float>(a, st);
    case XE_F64: return launch_cast<TI, double>(a, st);
    case XE_F16: return launch_cast<TI, xe_f16>(a, st);
    case XE_I32: return launch_cast<TI, int32_t>(a, st);
    case XE_I64: return launch_cast<TI, int64_t>(a, st);
    case XE_BOOL: return launch_cast<TI, uint8_t>(a, st);
    default: return unsupported(a, st);
    }
}

extern "C" xe_code xe_gpu_cast(const xe_kernel_args *a, xe_status *st)
{
    switch (a->in[0]->dtype) {
    case XE_F32: return cast_from<float>(a, st);
    case XE_F64: return cast_from<double>(a, st);
    case XE_F16: return cast_from<xe_f16>(a, st);
    case XE_I32: return cast_from<int32_t>(a, st);
    case XE_I64: return cast_from<int64_t>(a, st);
    case XE_BOOL: return cast_from<uint8_t>(a, st);
    default: return unsupported(a, st);
    }
}
