/*
 * ops.def's expressions compiled into the tests: the column of a dtype,
 * evaluated with x, y (and the attributes a0..a3) as locals of that
 * dtype's compute type, floats in double.
 */
#include "support/optable.h"

#include <string.h>

#include "scalar.h"
#include "xlac/op.h"

#define X(ENUM, name, min_in, max_in, cls, flags)

bool optable_has_expr(int op)
{
    switch (op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b) case XE_OP_##E:
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) case XE_OP_##E:
#include "xlac/ops.def"
#undef XU
#undef XB
        return true;
    default:
        return false;
    }
}

const char *optable_variant_attr(int op)
{
    switch (op) {
#define XV(E, attr, f32, f64)                                                                      \
    case XE_OP_##E:                                                                                \
        return #attr;
#include "xlac/ops.def"
#undef XV
    default:
        return NULL;
    }
}

/* Whether a column's text is XE_NA. */
#define NA(col) (strcmp(#col, "XE_NA") == 0)

/* The float column in double (f64's expression: the double-precision reference). */
static bool eval_double(const xe_node *n, double x, double y, double *out)
{
    double at[XE_MAX_OP_FLOATS];
    xe_op_float_attrs(n, at);
    double a0 = at[0], a1 = at[1], a2 = at[2], a3 = at[3];
    (void)a0, (void)a1, (void)a2, (void)a3, (void)y;
    if (xe_op_variant(n)) {
        switch (n->op) {
#define XV(E, attr, f32, f64)                                                                      \
    case XE_OP_##E:                                                                                \
        *out = (f64);                                                                              \
        return true;
#include "xlac/ops.def"
#undef XV
        default:
            break;
        }
    }
    switch (n->op) {
#define XU(E, nm, fl, f32, f64, i32, i64, b)                                                       \
    case XE_OP_##E:                                                                                \
        *out = (double)(f64);                                                                      \
        return !NA(f64);
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b)                                                  \
    case XE_OP_##E:                                                                                \
        *out = (double)(f64);                                                                      \
        return !NA(f64);
#include "xlac/ops.def"
#undef XU
#undef XB
    default:
        return false;
    }
}

/* The integer and bool columns in their own types. */
static bool eval_int(const xe_node *n, xe_dtype dt, double xd, double yd, double *out)
{
    int32_t x32 = (int32_t)xd, y32 = (int32_t)yd;
    int64_t x64 = (int64_t)xd, y64 = (int64_t)yd;
    uint8_t xb = xd != 0, yb = yd != 0;
    (void)x32, (void)y32, (void)x64, (void)y64, (void)xb, (void)yb;
    switch (n->op) {
#define CASE(E, i32, i64, b)                                                                       \
    case XE_OP_##E:                                                                                \
        if (dt == XE_I32) {                                                                        \
            int32_t x = x32, y = y32;                                                              \
            (void)x, (void)y;                                                                      \
            *out = (double)(i32);                                                                  \
            return !NA(i32);                                                                       \
        }                                                                                          \
        if (dt == XE_I64) {                                                                        \
            int64_t x = x64, y = y64;                                                              \
            (void)x, (void)y;                                                                      \
            *out = (double)(i64);                                                                  \
            return !NA(i64);                                                                       \
        }                                                                                          \
        {                                                                                          \
            uint8_t x = xb, y = yb;                                                                \
            (void)x, (void)y;                                                                      \
            *out = (double)(b);                                                                    \
            return !NA(b);                                                                         \
        }
#define XU(E, nm, fl, f32, f64, i32, i64, b) CASE(E, i32, i64, b)
#define XB(E, nm, cls, fl, f32, f64, i32, i64, b) CASE(E, i32, i64, b)
#include "xlac/ops.def"
#undef XU
#undef XB
#undef CASE
    default:
        return false;
    }
}

bool optable_eval(const xe_node *n, xe_dtype dt, double x, double y, double *out)
{
    if (xe_dtype_is_float(dt))
        return eval_double(n, x, y, out);
    return eval_int(n, dt, x, y, out);
}
