/*
 * TensorProto -> xe_tensor. A tensor's data may be in raw_data (little
 * endian bytes), in one of the typed repeated fields (float_data,
 * int32_data for bool, f16, bf16, float8 (their bits) and the 8- and 16-bit
 * integers too (the 4- and 2-bit ones and float4 packed as in raw_data, a byte per entry),
 * int64_data, double_data, uint64_data for u32 and u64), or in a file beside the model
 * (data_location = EXTERNAL, keys location/offset/length), which is how exporters store weights:
 * extdata.c maps the file and views or copies the tensor out of it. Every size is checked before
 * anything is allocated: dims non-negative, the element count computed
 * without overflow, and the data present equal to count x item size.
 * The host is little endian (x86-64, aarch64), as raw_data is.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"
#include "xlac/io.h"

static const char *const type_names[] = {
    "UNDEFINED",      "FLOAT",      "UINT8",          "INT8",       "UINT16",    "INT16",
    "INT32",          "INT64",      "STRING",         "BOOL",       "FLOAT16",   "DOUBLE",
    "UINT32",         "UINT64",     "COMPLEX64",      "COMPLEX128", "BFLOAT16",  "FLOAT8E4M3FN",
    "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",      "INT4",      "FLOAT4E2M1",
    "FLOAT8E8M0",     "UINT2",      "INT2",           "FLOAT6E2M3", "FLOAT6E3M2"};

const char *ox_dtype_name(int32_t t)
{
    return t >= 0 && t < (int32_t)(sizeof type_names / sizeof *type_names) ? type_names[t]
                                                                           : "an unknown type";
}

/* Each dtype's TensorProto number (0: none); the types after onnx.proto's list by their numbers. */
static const int32_t onnx_number[XE_DTYPE_COUNT] = {
    [XE_F32] = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
    [XE_F64] = ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE,
    [XE_F16] = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16,
    [XE_I32] = ONNX__TENSOR_PROTO__DATA_TYPE__INT32,
    [XE_I64] = ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
    [XE_BOOL] = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL,
    [XE_U8] = ONNX__TENSOR_PROTO__DATA_TYPE__UINT8,
    [XE_I8] = ONNX__TENSOR_PROTO__DATA_TYPE__INT8,
    [XE_I16] = ONNX__TENSOR_PROTO__DATA_TYPE__INT16,
    [XE_U16] = ONNX__TENSOR_PROTO__DATA_TYPE__UINT16,
    [XE_U32] = ONNX__TENSOR_PROTO__DATA_TYPE__UINT32,
    [XE_U64] = ONNX__TENSOR_PROTO__DATA_TYPE__UINT64,
    [XE_BF16] = ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16,
    [XE_F8E4M3FN] = 17,
    [XE_F8E4M3FNUZ] = 18,
    [XE_F8E5M2] = 19,
    [XE_F8E5M2FNUZ] = 20,
    [XE_U4] = 21,
    [XE_I4] = 22,
    [XE_F4E2M1] = 23,
    [XE_F8E8M0] = 24,
    [XE_U2] = 25,
    [XE_I2] = 26};

bool ox_dtype(int32_t t, xe_dtype *out)
{
    for (int d = 0; t > 0 && d < XE_DTYPE_COUNT; d++)
        if (onnx_number[d] == t) {
            *out = (xe_dtype)d;
            return true;
        }
    return false;
}

int32_t ox_onnx_dtype(xe_dtype dt)
{
    return dt < XE_DTYPE_COUNT ? onnx_number[dt] : 0;
}

/* The shape, with the element count checked against overflow. */
static xe_code tensor_shape(const Onnx__TensorProto *t, xe_dtype dt, const char *what, xe_shape *s,
                            xe_status *st)
{
    if (t->n_dims > XE_MAX_RANK)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "%s: rank %zu is above %d", what, t->n_dims,
                       XE_MAX_RANK);
    int64_t numel = 1, limit = INT64_MAX / 8 / (int64_t)xe_dtype_size(dt);
    s->rank = (int)t->n_dims;
    for (size_t d = 0; d < t->n_dims; d++) {
        if (t->dims[d] < 0)
            return xe_fail(st, XE_ERR_GRAPH, "%s: dim %zu is negative (%lld)", what, d,
                           (long long)t->dims[d]);
        if (t->dims[d] && numel > limit / t->dims[d])
            return xe_fail(st, XE_ERR_GRAPH, "%s: its dims overflow a 64-bit element count", what);
        numel *= t->dims[d];
        s->dims[d] = t->dims[d];
    }
    return XE_OK;
}

/* How many values the typed field that dtype dt uses holds. */
static size_t typed_count(const Onnx__TensorProto *t, xe_dtype dt)
{
    switch (dt) {
    case XE_F32:
        return t->n_float_data;
    case XE_F64:
        return t->n_double_data;
    case XE_I64:
        return t->n_int64_data;
    case XE_U32:
    case XE_U64:
        return t->n_uint64_data;
    default:
        return t
            ->n_int32_data; /* i32, bool, f16 and bf16 (their bits), the 8- and 16-bit integers */
    }
}

/* How many bytes (raw_data) or int32_data entries n values of dt take: i4 u4 i2 u2 f4e2m1 packed.
 */
static size_t stored_count(xe_dtype dt, int64_t n)
{
    int per = 8 / xe_dtype_bits(dt);
    return xe_dtype_is_packed(dt) ? (size_t)((n + per - 1) / per) : (size_t)n * xe_dtype_size(dt);
}

/* The data present must be what the dims need, checked before allocating. */
static xe_code check_present(const Onnx__TensorProto *t, xe_dtype dt, int64_t numel,
                             const char *what, xe_status *st)
{
    size_t nbytes = stored_count(dt, numel), have = typed_count(t, dt);
    size_t want = xe_dtype_is_packed(dt) ? nbytes : (size_t)numel; /* packed in int32_data too */
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return XE_OK; /* ox_ext_tensor checks the file's size before reading */
    if (t->has_raw_data && t->raw_data.len != nbytes)
        return xe_fail(st, XE_ERR_GRAPH, "%s: raw_data holds %zu bytes, its dims need %zu", what,
                       t->raw_data.len, nbytes);
    if (!t->has_raw_data && have != want)
        return xe_fail(st, XE_ERR_GRAPH, "%s: holds %zu values, its dims need %zu%s", what, have,
                       want, xe_dtype_is_packed(dt) ? " (packed)" : "");
    return XE_OK;
}

/* Copies the typed values (their count checked by check_present) into x. */
static void from_typed(const Onnx__TensorProto *t, xe_tensor *x)
{
    int64_t n = xe_tensor_numel(x);
    for (int64_t i = 0; i < n; i++) {
        switch (x->dtype) {
        case XE_F32:
            ((float *)x->data)[i] = t->float_data[i];
            break;
        case XE_F64:
            ((double *)x->data)[i] = t->double_data[i];
            break;
        case XE_I64:
            ((int64_t *)x->data)[i] = t->int64_data[i];
            break;
        case XE_I32:
            ((int32_t *)x->data)[i] = t->int32_data[i];
            break;
        case XE_F16:
        case XE_BF16:
        case XE_I16:
        case XE_U16:
            ((uint16_t *)x->data)[i] = (uint16_t)t->int32_data[i];
            break;
        case XE_U8:
        case XE_I8:
        case XE_F8E4M3FN:
        case XE_F8E4M3FNUZ:
        case XE_F8E5M2:
        case XE_F8E5M2FNUZ:
        case XE_F8E8M0:
            ((uint8_t *)x->data)[i] = (uint8_t)t->int32_data[i];
            break;
        case XE_U32:
            ((uint32_t *)x->data)[i] = (uint32_t)t->uint64_data[i];
            break;
        case XE_U64:
            ((uint64_t *)x->data)[i] = t->uint64_data[i];
            break;
        default:
            ((uint8_t *)x->data)[i] = t->int32_data[i] != 0;
            break;
        }
    }
}

/* A packed tensor (i4 u4 i2 u2 f4e2m1) from its bytes (raw_data, or one per int32_data entry). */
static xe_code fill_packed(const Onnx__TensorProto *t, xe_tensor *x, xe_status *st)
{
    int64_t n = xe_tensor_numel(x);
    size_t len = stored_count(x->dtype, n);
    const uint8_t *packed = t->has_raw_data ? t->raw_data.data : NULL;
    uint8_t *bytes = NULL;
    if (!packed && len) {
        if (!(bytes = malloc(len)))
            return xe_fail(st, XE_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < len; i++)
            bytes[i] = (uint8_t)t->int32_data[i];
        packed = bytes;
    }
    if (n)
        xe_subbyte_unpack(packed, n, x->dtype, x->data);
    free(bytes);
    return XE_OK;
}

static void fill(const Onnx__TensorProto *t, xe_tensor *x)
{
    if (t->has_raw_data) {
        if (x->nbytes)
            memcpy(x->data, t->raw_data.data, x->nbytes);
        if (x->dtype == XE_BOOL)
            for (size_t i = 0; i < x->nbytes; i++)
                ((uint8_t *)x->data)[i] = ((uint8_t *)x->data)[i] != 0;
        return;
    }
    from_typed(t, x);
}

xe_tensor *ox_tensor(const Onnx__TensorProto *t, ox_files *files, const char *what, xe_status *st)
{
    xe_dtype dt;
    xe_shape s;
    if (!ox_dtype(t->data_type, &dt)) {
        xe_fail(st, XE_ERR_UNSUPPORTED, "%s: dtype %s is not supported", what,
                ox_dtype_name(t->data_type));
        return NULL;
    }
    if (tensor_shape(t, dt, what, &s, st) != XE_OK ||
        check_present(t, dt, xe_shape_numel(&s), what, st) != XE_OK)
        return NULL;
    bool external =
        t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (external && xe_dtype_is_packed(dt)) {
        xe_fail(st, XE_ERR_UNSUPPORTED, "%s: packed %s data in an external file is not supported",
                what, xe_dtype_name(dt));
        return NULL;
    }
    if (external)
        return ox_ext_tensor(files, t, dt, &s, what, st);
    xe_tensor *x = xe_tensor_new(dt, &s, XE_DEV_CPU, st);
    if (x && xe_dtype_is_packed(dt) && fill_packed(t, x, st) != XE_OK) {
        xe_tensor_release(x);
        return NULL;
    }
    if (x && !xe_dtype_is_packed(dt))
        fill(t, x);
    return x;
}

xe_tensor *xe_onnx_read_tensor(const char *path, char **name, xe_status *st)
{
    char *data;
    size_t len;
    *name = NULL;
    if (xe_read_file(path, &data, &len, st) != XE_OK)
        return NULL;
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, (const uint8_t *)data);
    xe_tensor *x = NULL;
    if (!t) {
        char why[512];
        ox_diagnose((const uint8_t *)data, len, &onnx__tensor_proto__descriptor, why, sizeof why);
        xe_fail(st, XE_ERR_PARSE, "%s: not a valid TensorProto: %s", path, why);
    } else if ((x = ox_tensor(t, NULL, path, st)) && !(*name = strdup(t->name ? t->name : ""))) {
        xe_tensor_release(x);
        x = NULL;
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    if (t)
        onnx__tensor_proto__free_unpacked(t, NULL);
    free(data);
    return x;
}
