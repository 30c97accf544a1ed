/*
 * Element values and shapes: f16 and bf16 conversion, loads and stores
 * through double, shapes and broadcasting (what each dtype is, its name,
 * size and class, is dtype_facts.c, below this file and lowp.c). The f16
 * conversions live in scalar.h (shared with the GPU kernels and the
 * generated code) and round to nearest even, so every path agrees.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "scalar.h"
#include "scalar_narrow.h"
#include "xlac/dtype.h"

float xe_f16_to_f32(xe_f16 h)
{
    return xe_h2f(h);
}

xe_f16 xe_f32_to_f16(float f)
{
    return xe_f2h(f);
}

float xe_bf16_to_f32(uint16_t b)
{
    return xe_bf2f(b);
}

uint16_t xe_f32_to_bf16(float f)
{
    return xe_f2bf(f);
}

double xe_load_f64(const void *buf, xe_dtype dt, int64_t i)
{
    switch (dt) {
    case XE_F32:
        return ((const float *)buf)[i];
    case XE_F64:
        return ((const double *)buf)[i];
    case XE_F16:
        return xe_f16_to_f32(((const xe_f16 *)buf)[i]);
    case XE_I32:
        return ((const int32_t *)buf)[i];
    case XE_I64:
        return (double)((const int64_t *)buf)[i];
    case XE_BOOL:
        return ((const uint8_t *)buf)[i] != 0;
    case XE_U8:
        return ((const uint8_t *)buf)[i];
    case XE_I8:
        return ((const int8_t *)buf)[i];
    case XE_I16:
        return ((const int16_t *)buf)[i];
    case XE_U16:
        return ((const uint16_t *)buf)[i];
    case XE_U32:
        return ((const uint32_t *)buf)[i];
    case XE_U64:
        return (double)((const uint64_t *)buf)[i];
    case XE_BF16:
        return xe_bf2f(((const uint16_t *)buf)[i]);
    case XE_I4:
    case XE_I2:
        return ((const int8_t *)buf)[i];
    case XE_U4:
    case XE_U2:
        return ((const uint8_t *)buf)[i];
    default:
        return xe_f8_to_f64(((const uint8_t *)buf)[i], dt); /* NaN for none */
    }
}

void xe_store_f64(void *buf, xe_dtype dt, int64_t i, double v)
{
    switch (dt) {
    case XE_F32:
        ((float *)buf)[i] = (float)v;
        break;
    case XE_F64:
        ((double *)buf)[i] = v;
        break;
    case XE_F16:
        ((xe_f16 *)buf)[i] = xe_f32_to_f16((float)v);
        break;
    case XE_I32:
        ((int32_t *)buf)[i] = xe_f64_to_i32(v);
        break; /* NaN and out of range: as cast does */
    case XE_I64:
        ((int64_t *)buf)[i] = xe_f64_to_i64(v);
        break;
    case XE_BOOL:
        ((uint8_t *)buf)[i] = v != 0;
        break;
    case XE_U8:
        ((uint8_t *)buf)[i] = (uint8_t)xe_f64_to_range(v, 0, UINT8_MAX);
        break;
    case XE_I8:
        ((int8_t *)buf)[i] = (int8_t)xe_f64_to_range(v, INT8_MIN, INT8_MAX);
        break;
    case XE_I16:
        ((int16_t *)buf)[i] = (int16_t)xe_f64_to_range(v, INT16_MIN, INT16_MAX);
        break;
    case XE_U16:
        ((uint16_t *)buf)[i] = (uint16_t)xe_f64_to_range(v, 0, UINT16_MAX);
        break;
    case XE_U32:
        ((uint32_t *)buf)[i] = (uint32_t)xe_f64_to_range(v, 0, UINT32_MAX);
        break;
    case XE_U64:
        ((uint64_t *)buf)[i] = xe_f64_to_u64(v);
        break;
    case XE_BF16:
        ((uint16_t *)buf)[i] = xe_f2bf((float)v);
        break;
    case XE_I4:
    case XE_U4:
    case XE_I2:
    case XE_U2:
        ((uint8_t *)buf)[i] = xe_subbyte_wrap(xe_f64_to_i64(v), dt);
        break; /* wraps, as cast does */
    default:
        if (xe_dtype_is_lowp_float(dt))
            ((uint8_t *)buf)[i] = xe_f8_from_f64(v, dt, true); /* saturates: ONNX's default */
        break;
    }
}

bool xe_shape_size_ok(const xe_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] == 0)
            return true;
    for (int i = 0; i < s->rank; i++) {
        int64_t d = s->dims[i];
        if (d > XE_MAX_ELEMS || (d > 0 && n > XE_MAX_ELEMS / d))
            return false;
        n *= d > 0 ? d : 1;
    }
    return true;
}

int64_t xe_shape_numel(const xe_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i] < 0)
            return -1;
        n *= s->dims[i];
    }
    return n;
}

bool xe_shape_equal(const xe_shape *a, const xe_shape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

bool xe_shape_is_known(const xe_shape *s)
{
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] < 0)
            return false;
    return true;
}

xe_shape xe_shape_make(int rank, const int64_t *dims)
{
    xe_shape s = {.rank = rank};
    for (int i = 0; i < rank && i < XE_MAX_RANK; i++)
        s.dims[i] = dims[i];
    return s;
}

void xe_shape_strides(const xe_shape *s, int64_t *strides)
{
    int64_t acc = 1;
    for (int i = s->rank - 1; i >= 0; i--) {
        strides[i] = acc;
        acc *= s->dims[i] > 0 ? s->dims[i] : 1;
    }
}

char *xe_shape_str(const xe_shape *s, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < s->rank && used < len; i++) {
        if (s->dims[i] < 0)
            used += (size_t)snprintf(buf + used, len - used, "%s?", i ? "," : "");
        else
            used += (size_t)snprintf(buf + used, len - used, "%s%lld", i ? "," : "",
                                     (long long)s->dims[i]);
    }
    if (used < len)
        snprintf(buf + used, len - used, "]");
    return buf;
}

char *xe_type_str(const xe_type *t, char *buf, size_t len)
{
    char shape[256];
    snprintf(buf, len, "%s%s", xe_dtype_name(t->dtype),
             xe_shape_str(&t->shape, shape, sizeof shape));
    return buf;
}

bool xe_shape_broadcast(const xe_shape *a, const xe_shape *b, xe_shape *out)
{
    int rank = a->rank > b->rank ? a->rank : b->rank;
    xe_shape r = {.rank = rank};
    for (int i = 0; i < rank; i++) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da == db)
            r.dims[i] = da;
        else if (da == 1)
            r.dims[i] = db;
        else if (db == 1)
            r.dims[i] = da;
        else if (da < 0 || db < 0)
            r.dims[i] = da < 0 ? db : da; /* unknown against known n: must be n (or 1) */
        else
            return false;
    }
    *out = r;
    return true;
}
