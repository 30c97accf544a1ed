/*
 * Element types, shapes and the (dtype, shape) pair called a type.
 * f16 values are stored as IEEE binary16 bit patterns in uint16_t; the
 * conversions here round to nearest even and are used by every CPU kernel.
 * bf16 (bfloat16: the top half of a binary32) is stored as uint16_t too and
 * converted from f32 with round to nearest even (NaN stays a quiet NaN).
 *
 * The narrow types (u8 i8 i16 u16 u32 u64 bf16) came after the others: they
 * go through data movement, cast, comparisons, select and the elementwise
 * ops that ONNX defines on them (xe_dtype_narrow_ok in xlac/op.h says which
 * ops); any other op on them is refused as unsupported, never computed wrong.
 *
 * The low-precision storage types came last (executor/ir/lowp.c): the four
 * float8 kinds of ONNX (one byte, the bits), float4 e2m1 and the 4- and
 * 2-bit integers, the last two held one value per byte in memory
 * (sign-extended for the signed integers) and packed only in ONNX
 * TensorProto (low bits first). They are narrow types
 * too, but go through data movement, select and cast alone (cast to float8
 * rounds to nearest even and saturates unless its attribute saturate is
 * false; a cast to the small integers keeps the low bits, as numpy's does).
 */
#ifndef XLAC_DTYPE_H
#define XLAC_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum xe_dtype {
    XE_F32,        /* IEEE binary32 */
    XE_F64,        /* IEEE binary64 */
    XE_F16,        /* IEEE binary16, stored as uint16_t */
    XE_I32,        /* int32_t */
    XE_I64,        /* int64_t */
    XE_BOOL,       /* uint8_t holding 0 or 1 */
    XE_U8,         /* uint8_t */
    XE_I8,         /* int8_t */
    XE_I16,        /* int16_t */
    XE_U16,        /* uint16_t */
    XE_U32,        /* uint32_t */
    XE_U64,        /* uint64_t */
    XE_BF16,       /* bfloat16, stored as uint16_t */
    XE_F8E4M3FN,   /* float8 e4m3fn: bias 7, no inf, NaN S.1111.111, max 448; one byte (its bits) */
    XE_F8E4M3FNUZ, /* float8 e4m3fnuz: bias 8, no inf, no -0, NaN 0x80, max 240 */
    XE_F8E5M2,     /* float8 e5m2: bias 15, inf and NaN as IEEE, max 57344 */
    XE_F8E5M2FNUZ, /* float8 e5m2fnuz: bias 16, no inf, no -0, NaN 0x80, max 57344 */
    XE_I4,         /* 4-bit signed integer, one per byte: int8_t in [-8, 7] */
    XE_U4,         /* 4-bit unsigned integer, one per byte: uint8_t in [0, 15] */
    XE_I2,         /* 2-bit signed integer, one per byte: int8_t in [-2, 1] */
    XE_U2,         /* 2-bit unsigned integer, one per byte: uint8_t in [0, 3] */
    XE_F4E2M1, /* float4 e2m1: bias 1, no inf, no NaN, max 6; one per byte (the 4 bits, sign bit 3)
                */
    XE_F8E8M0, /* float8 e8m0fnu: 2^(bits - 127), unsigned, no zero, NaN 0xff; one byte */
    XE_DTYPE_COUNT
} xe_dtype;

#define XE_MAX_RANK 8
#define XE_DIM_UNKNOWN (-1)

typedef struct xe_shape {
    int rank;                  /* 0 for a scalar */
    int64_t dims[XE_MAX_RANK]; /* XE_DIM_UNKNOWN where the fed data decides */
} xe_shape;

typedef struct xe_type {
    xe_dtype dtype;
    xe_shape shape;
} xe_type;

typedef uint16_t xe_f16;

size_t xe_dtype_size(xe_dtype dt);
const char *xe_dtype_name(xe_dtype dt); /* "f32" */
bool xe_dtype_parse(const char *s, size_t len, xe_dtype *out);
bool xe_dtype_is_float(xe_dtype dt);    /* f16 f32 f64 */
bool xe_dtype_is_int(xe_dtype dt);      /* i32 i64 (the index types) */
bool xe_dtype_is_integer(xe_dtype dt);  /* every integer type: i32 i64 u8 i8 i16 u16 u32 u64 */
bool xe_dtype_is_unsigned(xe_dtype dt); /* u8 u16 u32 u64 */
bool xe_dtype_is_narrow(
    xe_dtype dt); /* u8 i8 i16 u16 u32 u64 bf16 and the storage types: the later types */
bool xe_dtype_is_float8(xe_dtype dt);     /* f8e4m3fn f8e4m3fnuz f8e5m2 f8e5m2fnuz */
bool xe_dtype_is_subbyte(xe_dtype dt);    /* i4 u4 i2 u2: one value per byte in memory */
bool xe_dtype_is_lowp_float(xe_dtype dt); /* the float8 kinds, f4e2m1 and f8e8m0 */
bool xe_dtype_is_packed(xe_dtype dt);  /* i4 u4 i2 u2 f4e2m1: packed in ONNX, one per byte here */
bool xe_dtype_is_storage(xe_dtype dt); /* the float8 kinds, f4e2m1 and the sub-byte integers */
int xe_dtype_bits(xe_dtype dt);        /* bits of one value: 4 for i4, 8 for f8e5m2, 32 for f32 */

float xe_f16_to_f32(xe_f16 h);
xe_f16 xe_f32_to_f16(float f);
float xe_bf16_to_f32(uint16_t b);
uint16_t xe_f32_to_bf16(float f); /* round to nearest even; NaN stays NaN */

/* float8 (dt one of the four kinds, or f4e2m1) <-> double: decoding is exact; encoding rounds
   to nearest even, and a value beyond the largest finite one gives it (saturate) or else inf
   (e5m2) or NaN (the other float8 kinds, which have no inf); NaN gives the kind's NaN, -0 gives
   0 in the fnuz kinds. f4e2m1 has neither inf nor NaN: it always saturates, and NaN gives -0
   (0x8), as ONNX's reference (ml_dtypes) does. f8e8m0 (a power of two) takes v's f32 exponent
   and rounds up when v's f32 mantissa is not zero (ONNX's round_mode "up"), the sign dropped;
   inf and NaN give NaN (0xff), and so does rounding past 2^127 unless saturate. */
double xe_f8_to_f64(uint8_t bits, xe_dtype dt);
uint8_t xe_f8_from_f64(double v, xe_dtype dt, bool saturate);
/* The largest finite value of float8 kind (or f4e2m1) dt. */
double xe_f8_max(xe_dtype dt);
/* v's low bits as sub-byte integer dt (i4 u4 i2 u2): two's complement wrap, as numpy's astype. */
uint8_t xe_subbyte_wrap(int64_t v, xe_dtype dt);
/* n values of sub-byte dt packed in ceil(n * bits / 8) bytes (the first value in the lowest bits)
   to one per byte (sign-extended for i4 and i2), and back. */
void xe_subbyte_unpack(const uint8_t *packed, int64_t n, xe_dtype dt, uint8_t *out);
void xe_subbyte_pack(const uint8_t *vals, int64_t n, xe_dtype dt, uint8_t *packed);

/*
 * Reads element i of a buffer of dtype dt as a double, and writes one
 * (to an integer: NaN gives 0, out of range saturates; u64 and i64 beyond
 * 2^53 are not exact through a double).
 */
double xe_load_f64(const void *buf, xe_dtype dt, int64_t i);
void xe_store_f64(void *buf, xe_dtype dt, int64_t i, double v);

/* Number of elements; -1 when any dim is unknown. */
int64_t xe_shape_numel(const xe_shape *s);
/* The most elements a type may have (2^48): dims beyond it are an error, never an overflow. */
#define XE_MAX_ELEMS ((int64_t)1 << 48)
/* Whether the product of s's known dims (a zero dim included) is at most XE_MAX_ELEMS. */
bool xe_shape_size_ok(const xe_shape *s);
bool xe_shape_equal(const xe_shape *a, const xe_shape *b);
bool xe_shape_is_known(const xe_shape *s);
xe_shape xe_shape_make(int rank, const int64_t *dims);
/* Row-major strides in elements. */
void xe_shape_strides(const xe_shape *s, int64_t *strides);
/* Prints "f32[2,?,3]" into buf; returns buf. */
char *xe_type_str(const xe_type *t, char *buf, size_t len);
char *xe_shape_str(const xe_shape *s, char *buf, size_t len);

/*
 * numpy broadcasting of two shapes. Unknown dims broadcast with 1 or with
 * each other to unknown. Returns false when the shapes are incompatible.
 */
bool xe_shape_broadcast(const xe_shape *a, const xe_shape *b, xe_shape *out);

#endif
