/*
 * GPU kernels of the elementwise ops: binary arithmetic, comparisons,
 * logical ops, unary functions, select and cast.
 *
 * One launch per op. Operands are addressed through the broadcast map of
 * broadcast.h (xk_map): when every operand collapses to one merged dim
 * (same shapes, or a scalar against a tensor) the offsets are i * stride
 * (stride 0 or 1); otherwise each index is decomposed over the merged dims,
 * in 32-bit arithmetic when the output is small enough. The arithmetic is
 * the CPU kernels' text: one functor per op expanded from the ops.def
 * expressions (C operators plus the functions of scalar.h), f16 computed
 * in float and rounded once (cpu/elementwise.c does the same).
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

/* ---- binary ops, comparisons, logical ops and unary ops: the ops.def expressions ---- */

/* Whether an ops.def column is XE_NA: the op is not defined on that type. */
static constexpr bool na(const char *s)
{
    return s[0] == 'X' && s[1] == 'E' && s[2] == '_' && s[3] == 'N' && s[4] == 'A' && !s[5];
}

/* ops.def rows other than the ones asked for below expand to nothing. */
#define X(ENUM, name, min_in, max_in, cls, flags)

/* One functor per two-operand op: an overload per compute type, the types it
   defines, and whether it yields bool (comparisons, logical ops). */
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b)                                              \
    struct B_##E {                                                                             \
        static constexpr bool has_f32 = !na(#f32), has_f64 = !na(#f64), has_i32 = !na(#i32),   \
                              has_i64 = !na(#i64), has_bool = !na(#b);                         \
        static constexpr bool to_bool = (cls) != XE_CLASS_BINARY;                              \
        __device__ float operator()(float x, float y) const { return (void)x, (void)y, f32; }  \
        __device__ double operator()(double x, double y) const { return (void)x, (void)y, f64; } \
        __device__ int32_t operator()(int32_t x, int32_t y) const                              \
        {                                                                                      \
            return (void)x, (void)y, i32;                                                      \
        }                                                                                      \
        __device__ int64_t operator()(int64_t x, int64_t y) const                              \
        {                                                                                      \
            return (void)x, (void)y, i64;                                                      \
        }                                                                                      \
        __device__ uint8_t operator()(uint8_t x, uint8_t y) const { return (void)x, (void)y, b; } \
    };
#include "xlac/ops.def"
#undef XB

/* The op's float attributes a0..a3 as locals of compute type T. */
#define ATTRS(T)                                                                               \
    const T a0 = (T)at[0], a1 = (T)at[1], a2 = (T)at[2], a3 = (T)at[3];                         \
    (void)a0, (void)a1, (void)a2, (void)a3

/* One functor per unary op (U_), and per XV row (V_: the expressions when its
   attribute is set); at holds the op's float attributes. */
#define XU(E, nm, fl, f32, f64, i32, i64, b)                                                   \
    struct U_##E {                                                                             \
        static constexpr bool has_f32 = !na(#f32), has_f64 = !na(#f64), has_i32 = !na(#i32),   \
                              has_i64 = !na(#i64), has_bool = !na(#b);                         \
        double at[XE_MAX_OP_FLOATS];                                                           \
        __device__ float operator()(float x) const { ATTRS(float); return (void)x, f32; }       \
        __device__ double operator()(double x) const { ATTRS(double); return (void)x, f64; }    \
        __device__ int32_t operator()(int32_t x) const { return (void)x, i32; }                \
        __device__ int64_t operator()(int64_t x) const { return (void)x, i64; }                \
        __device__ uint8_t operator()(uint8_t x) const { return (void)x, b; }                  \
    };
#define XV(E, attr, f32, f64)                                                                  \
    struct V_##E {                                                                             \
        static constexpr bool has_f32 = true, has_f64 = true, has_i32 = false, has_i64 = false, \
                              has_bool = false;                                                \
        double at[XE_MAX_OP_FLOATS];                                                           \
        __device__ float operator()(float x) const { ATTRS(float); return f32; }               \
        __device__ double operator()(double x) const { ATTRS(double); return f64; }            \
        __device__ int32_t operator()(int32_t x) const { return x; }                           \
        __device__ int64_t operator()(int64_t x) const { return x; }                           \
        __device__ uint8_t operator()(uint8_t x) const { return x; }                           \
    };
#include "xlac/ops.def"
#undef XU
#undef XV
#undef ATTRS

/* A two-operand launch with operands of storage type TI. */
template <typename TI, typename F> static xe_code launch2(const xe_kernel_args *a, F f, xe_status *st)
{
    if constexpr (F::to_bool)
        return launch_binary<TI, uint8_t>(a, f, st);
    else
        return launch_binary<TI, TI>(a, f, st);
}

/* The launch for the operand's dtype, where the op defines it (F::has_*). */
template <typename F> static xe_code binary_typed(const xe_kernel_args *a, F f, xe_status *st)
{
    switch (a->in[0]->dtype) {
    case XE_F32: if constexpr (F::has_f32) return launch2<float>(a, f, st); break;
    case XE_F16: if constexpr (F::has_f32) return launch2<xe_f16>(a, f, st); break;
    case XE_F64: if constexpr (F::has_f64) return launch2<double>(a, f, st); break;
    case XE_I32: if constexpr (F::has_i32) return launch2<int32_t>(a, f, st); break;
    case XE_I64: if constexpr (F::has_i64) return launch2<int64_t>(a, f, st); break;
    case XE_BOOL: if constexpr (F::has_bool) return launch2<uint8_t>(a, f, st); break;
    default: break;
    }
    return unsupported(a, st);
}

static xe_code two_operands(const xe_kernel_args *a, xe_status *st)
{
    switch (a->node->op) {
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) case XE_OP_##E: return binary_typed(a, B_##E(), st);
#include "xlac/ops.def"
#undef XB
    default: return unsupported(a, st);
    }
}

extern "C" xe_code xe_gpu_binary(const xe_kernel_args *a, xe_status *st)
{
    return two_operands(a, st);
}

extern "C" xe_code xe_gpu_compare(const xe_kernel_args *a, xe_status *st)
{
    return two_operands(a, st);
}

extern "C" xe_code xe_gpu_logical(const xe_kernel_args *a, xe_status *st)
{
    return two_operands(a, st);
}

template <typename F> static xe_code unary_typed(const xe_kernel_args *a, F f, xe_status *st)
{
    xe_op_float_attrs(a->node, f.at);
    switch (a->in[0]->dtype) {
    case XE_F32: if constexpr (F::has_f32) return launch_unary<float, float>(a, f, st); break;
    case XE_F16: if constexpr (F::has_f32) return launch_unary<xe_f16, xe_f16>(a, f, st); break;
    case XE_F64: if constexpr (F::has_f64) return launch_unary<double, double>(a, f, st); break;
    case XE_I32: if constexpr (F::has_i32) return launch_unary<int32_t, int32_t>(a, f, st); break;
    case XE_I64: if constexpr (F::has_i64) return launch_unary<int64_t, int64_t>(a, f, st); break;
    case XE_BOOL: if constexpr (F::has_bool) return launch_unary<uint8_t, uint8_t>(a, f, st); break;
    default: break;
    }
    return unsupported(a, st);
}

extern "C" xe_code xe_gpu_unary(const xe_kernel_args *a, xe_status *st)
{
    if (xe_op_variant(a->node)) {
        switch (a->node->op) {
#define XV(E, attr, f32, f64) case XE_OP_##E: return unary_typed(a, V_##E(), st);
#include "xlac/ops.def"
#undef XV
        default: break;
        }
    }
    switch (a->node->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) case XE_OP_##E: return unary_typed(a, U_##E(), st);
#include "xlac/ops.def"
#undef XU
    default: return unsupported(a, st);
    }
}
#undef X

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

/* Double to storage, as cpu/elementwise.c's cast_row writes it. */
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
            return (float)v; /* one rounding, as cpu/elementwise.c's cast_row */
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
