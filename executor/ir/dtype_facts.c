/*
 * What each element type is: its name, its size in bytes and in bits, and
 * the classes the rest of the tree asks about (float, integer, narrow,
 * float8, sub-byte, storage). A leaf: dtype.c's conversions and lowp.c's
 * low-precision codecs both read it, and it reads neither.
 */
#include <string.h>

#include "xlac/dtype.h"

static const struct {
    const char *name;
    size_t size;
} dtype_info[XE_DTYPE_COUNT] = {
    [XE_F32] = {"f32", 4},
    [XE_F64] = {"f64", 8},
    [XE_F16] = {"f16", 2},
    [XE_I32] = {"i32", 4},
    [XE_I64] = {"i64", 8},
    [XE_BOOL] = {"bool", 1},
    [XE_U8] = {"u8", 1},
    [XE_I8] = {"i8", 1},
    [XE_I16] = {"i16", 2},
    [XE_U16] = {"u16", 2},
    [XE_U32] = {"u32", 4},
    [XE_U64] = {"u64", 8},
    [XE_BF16] = {"bf16", 2},
    [XE_F8E4M3FN] = {"f8e4m3fn", 1},
    [XE_F8E4M3FNUZ] = {"f8e4m3fnuz", 1},
    [XE_F8E5M2] = {"f8e5m2", 1},
    [XE_F8E5M2FNUZ] = {"f8e5m2fnuz", 1},
    [XE_I4] = {"i4", 1},
    [XE_U4] = {"u4", 1},
    [XE_I2] = {"i2", 1},
    [XE_U2] = {"u2", 1},
    [XE_F4E2M1] = {"f4e2m1", 1},
    [XE_F8E8M0] = {"f8e8m0", 1},
};

size_t xe_dtype_size(xe_dtype dt)
{
    return dt < XE_DTYPE_COUNT ? dtype_info[dt].size : 0;
}

const char *xe_dtype_name(xe_dtype dt)
{
    return dt < XE_DTYPE_COUNT ? dtype_info[dt].name : "?";
}

bool xe_dtype_parse(const char *s, size_t len, xe_dtype *out)
{
    if (!s)
        return false;
    for (int i = 0; i < XE_DTYPE_COUNT; i++) {
        if (strlen(dtype_info[i].name) == len && memcmp(dtype_info[i].name, s, len) == 0) {
            *out = (xe_dtype)i;
            return true;
        }
    }
    return false;
}

bool xe_dtype_is_float(xe_dtype dt)
{
    return dt == XE_F32 || dt == XE_F64 || dt == XE_F16 || dt == XE_BF16;
}

bool xe_dtype_is_int(xe_dtype dt)
{
    return dt == XE_I32 || dt == XE_I64;
}

bool xe_dtype_is_integer(xe_dtype dt)
{
    return xe_dtype_is_int(dt) ||
           (xe_dtype_is_narrow(dt) && dt != XE_BF16 && !xe_dtype_is_lowp_float(dt));
}

bool xe_dtype_is_unsigned(xe_dtype dt)
{
    return dt == XE_U8 || dt == XE_U16 || dt == XE_U32 || dt == XE_U64 || dt == XE_U4 ||
           dt == XE_U2;
}

bool xe_dtype_is_narrow(xe_dtype dt)
{
    return dt >= XE_U8 && dt < XE_DTYPE_COUNT;
}

bool xe_dtype_is_float8(xe_dtype dt)
{
    return dt >= XE_F8E4M3FN && dt <= XE_F8E5M2FNUZ;
}

bool xe_dtype_is_subbyte(xe_dtype dt)
{
    return dt >= XE_I4 && dt <= XE_U2;
}

bool xe_dtype_is_lowp_float(xe_dtype dt)
{
    return xe_dtype_is_float8(dt) || dt == XE_F4E2M1 || dt == XE_F8E8M0;
}

bool xe_dtype_is_packed(xe_dtype dt)
{
    return xe_dtype_is_subbyte(dt) || dt == XE_F4E2M1;
}

bool xe_dtype_is_storage(xe_dtype dt)
{
    return xe_dtype_is_lowp_float(dt) || xe_dtype_is_subbyte(dt);
}

int xe_dtype_bits(xe_dtype dt)
{
    return dt == XE_I4 || dt == XE_U4 || dt == XE_F4E2M1 ? 4
           : dt == XE_I2 || dt == XE_U2                  ? 2
                                                         : 8 * (int)xe_dtype_size(dt);
}
