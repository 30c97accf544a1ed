/*
 * An op's text in generated code: literals, binary and unary ops, casts,
 * and which ops are costly (worth a buffer rather than a second
 * computation). The same text serves C and CUDA: both call the functions
 * of executor/scalar.h, which every generated program starts with.
 */
#include <math.h>
#include <stdio.h>

#include "emit_impl.h"

void xg_literal(em *e, xe_dtype dt, double v, char *buf, size_t len)
{
    bool f = dt == XE_F32 || dt == XE_F16;
    if (isnan(v))
        snprintf(buf, len, f ? "(0.0f / 0.0f)" : "(0.0 / 0.0)");
    else if (isinf(v))
        snprintf(buf, len, f ? "(%s1.0f / 0.0f)" : "(%s1.0 / 0.0)", v < 0 ? "-" : "");
    else if (dt == XE_F64)
        snprintf(buf, len, "%a", v);
    else if (f)
        snprintf(buf, len, "%af", (double)(float)v);
    else if (dt == XE_BOOL)
        snprintf(buf, len, "%d", v != 0);
    else
        snprintf(buf, len, "((%s)%lldLL)", store_type(dt), (long long)v);
    (void)e;
}

/* Text of a binary op on values a, b of dtype dt. */
void xg_binary_text(int op, xe_dtype dt, const char *a, const char *b, char *buf, size_t len)
{
    bool fl = xe_dtype_is_float(dt), in = xe_dtype_is_int(dt);
    const char *s = sfx(dt);
    switch (op) {
    case XE_OP_ADD: in ? snprintf(buf, len, "xe_add_%s(%s, %s)", s, a, b) : snprintf(buf, len, "%s + %s", a, b); break;
    case XE_OP_SUB: in ? snprintf(buf, len, "xe_sub_%s(%s, %s)", s, a, b) : snprintf(buf, len, "%s - %s", a, b); break;
    case XE_OP_MUL: in ? snprintf(buf, len, "xe_mul_%s(%s, %s)", s, a, b) : snprintf(buf, len, "%s * %s", a, b); break;
    case XE_OP_DIV: in ? snprintf(buf, len, "xe_floordiv_%s(%s, %s)", s, a, b) : snprintf(buf, len, "%s / %s", a, b); break;
    case XE_OP_POW:
        if (in)
            snprintf(buf, len, "xe_pow_%s(%s, %s)", s, a, b);
        else
            snprintf(buf, len, "%s(%s, %s)", dt == XE_F64 ? "pow" : "powf", a, b);
        break;
    case XE_OP_MAXIMUM:
        if (fl)
            snprintf(buf, len, "xe_max_%s(%s, %s)", s, a, b);
        else if (dt == XE_BOOL)
            snprintf(buf, len, "(uint8_t)(%s | %s)", a, b);
        else
            snprintf(buf, len, "(%s > %s ? %s : %s)", a, b, a, b);
        break;
    case XE_OP_MINIMUM:
        if (fl)
            snprintf(buf, len, "xe_min_%s(%s, %s)", s, a, b);
        else if (dt == XE_BOOL)
            snprintf(buf, len, "(uint8_t)(%s & %s)", a, b);
        else
            snprintf(buf, len, "(%s < %s ? %s : %s)", a, b, a, b);
        break;
    case XE_OP_EQUAL: snprintf(buf, len, "(uint8_t)(%s == %s)", a, b); break;
    case XE_OP_NOT_EQUAL: snprintf(buf, len, "(uint8_t)(%s != %s)", a, b); break;
    case XE_OP_LESS: snprintf(buf, len, "(uint8_t)(%s < %s)", a, b); break;
    case XE_OP_LESS_EQUAL: snprintf(buf, len, "(uint8_t)(%s <= %s)", a, b); break;
    case XE_OP_GREATER: snprintf(buf, len, "(uint8_t)(%s > %s)", a, b); break;
    case XE_OP_GREATER_EQUAL: snprintf(buf, len, "(uint8_t)(%s >= %s)", a, b); break;
    case XE_OP_LOGICAL_AND: snprintf(buf, len, "(uint8_t)(%s & %s)", a, b); break;
    case XE_OP_LOGICAL_OR: snprintf(buf, len, "(uint8_t)(%s | %s)", a, b); break;
    default: snprintf(buf, len, "0"); break;
    }
}

bool xg_unary_text(const xe_node *n, xe_dtype dt, const char *a, char *buf, size_t len)
{
    const char *s = sfx(dt), *f = dt == XE_F64 ? "" : "f";
    bool in = xe_dtype_is_int(dt);
    switch (n->op) {
    case XE_OP_NEG: in ? snprintf(buf, len, "xe_sub_%s(0, %s)", s, a) : snprintf(buf, len, "-%s", a); break;
    case XE_OP_ABS: in ? snprintf(buf, len, "xe_abs_%s(%s)", s, a) : snprintf(buf, len, "fabs%s(%s)", f, a); break;
    case XE_OP_RELU: in ? snprintf(buf, len, "(%s < 0 ? 0 : %s)", a, a) : snprintf(buf, len, "xe_relu_%s(%s)", s, a); break;
    case XE_OP_EXP: snprintf(buf, len, "%s(%s)", dt == XE_F64 ? "exp" : "xe_exp_f32", a); break;
    case XE_OP_LOG: snprintf(buf, len, "log%s(%s)", f, a); break;
    case XE_OP_SQRT: snprintf(buf, len, "sqrt%s(%s)", f, a); break;
    case XE_OP_RSQRT: snprintf(buf, len, "xe_rsqrt_%s(%s)", s, a); break;
    case XE_OP_TANH: snprintf(buf, len, "%s(%s)", dt == XE_F64 ? "tanh" : "xe_tanh_f32", a); break;
    case XE_OP_SIGMOID: snprintf(buf, len, "xe_sigmoid_%s(%s)", s, a); break;
    case XE_OP_ERF: snprintf(buf, len, "erf%s(%s)", f, a); break;
    case XE_OP_SIN: snprintf(buf, len, "sin%s(%s)", f, a); break;
    case XE_OP_COS: snprintf(buf, len, "cos%s(%s)", f, a); break;
    case XE_OP_FLOOR: snprintf(buf, len, "floor%s(%s)", f, a); break;
    case XE_OP_CEIL: snprintf(buf, len, "ceil%s(%s)", f, a); break;
    case XE_OP_GELU:
        snprintf(buf, len, "xe_gelu_%s_%s(%s)", xe_node_attr_bool(n, "approximate", false) ? "tanh" : "erf", s, a);
        break;
    case XE_OP_LOGICAL_NOT: snprintf(buf, len, "(uint8_t)!%s", a); break;
    default: return false;
    }
    return true;
}

/* cast(x, to=DT) from a value of dtype from. */
void xg_cast_text(xe_dtype from, xe_dtype to, const char *a, char *buf, size_t len)
{
    if (to == XE_BOOL)
        snprintf(buf, len, "(uint8_t)(%s != 0)", a);
    else if (to == XE_I32 && xe_dtype_is_float(from))
        snprintf(buf, len, "xe_f64_to_i32((double)%s)", a);
    else if (to == XE_I64 && xe_dtype_is_float(from))
        snprintf(buf, len, "xe_f64_to_i64((double)%s)", a);
    else if (to == XE_I32 && from == XE_I64)
        snprintf(buf, len, "(int32_t)(uint32_t)(uint64_t)%s", a);
    else if (to == XE_F16 || to == XE_F32)
        snprintf(buf, len, "(float)(%s)", a);
    else
        snprintf(buf, len, "(%s)(%s)", value_type(to), a);
}


/* Ops worth a store and a load to compute once per element instead of once per phase. */
bool xg_costly_op(int op)
{
    switch (op) {
    case XE_OP_EXP: case XE_OP_LOG: case XE_OP_TANH: case XE_OP_SIGMOID: case XE_OP_GELU:
    case XE_OP_ERF: case XE_OP_SIN: case XE_OP_COS: case XE_OP_POW: return true;
    default: return false;
    }
}
