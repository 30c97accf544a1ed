/*
 * Builders of ONNX's elementwise ops: one executor op each where there is
 * one, and short decompositions otherwise (LeakyRelu = select(x < 0,
 * alpha x, x), HardSigmoid = max(0, min(1, alpha x + beta)), Reciprocal =
 * 1 / x, integer Div truncating toward zero from the executor's floor
 * division, ...). Scalars are constants of the operand's dtype.
 */
#include <math.h>
#include <string.h>

#include "onnx_impl.h"

/* The table entry being built (table.c sets it before calling a builder). */

static xe_dtype dt_of(ox_b *b, int x)
{
    return x < 0 ? XE_F32 : ox_type(b, x)->dtype;
}

/* A scalar constant of x's dtype. */
static int like(ox_b *b, int x, double v)
{
    return x < 0 ? -1 : ox_scalar(b, dt_of(b, x), v);
}

static xe_code done(ox_b *b, int y)
{
    ox_out(b, 0, y);
    return ox_status(b);
}

xe_code ox_b_unary(ox_b *b)
{
    return done(b, ox_un(b, b->entry->op, ox_in(b, 0)));
}

xe_code ox_b_binary(ox_b *b)
{
    if (b->entry->op == XE_OP_ADD && ox_qdq_add(b)) /* between QDQ pairs: qdq.c */
        return ox_status(b);
    return done(b, ox_bin(b, b->entry->op, ox_in(b, 0), ox_in(b, 1)));
}

/* Xor: not_equal on bools. */
xe_code ox_b_xor(ox_b *b)
{
    return done(b, ox_bin(b, XE_OP_NOT_EQUAL, ox_in(b, 0), ox_in(b, 1)));
}

/* Sum, Max, Min, Mean: a chain over every input. */
xe_code ox_b_variadic(ox_b *b)
{
    if (b->n_in < 1)
        return ox_invalid(b, "needs at least one input");
    int op = b->entry->op == XE_OP_DIV ? XE_OP_ADD : b->entry->op, y = ox_in(b, 0);
    for (int k = 1; k < b->n_in; k++)
        y = ox_bin(b, op, y, ox_in(b, k));
    if (b->entry->op == XE_OP_DIV) /* Mean */
        y = ox_bin(b, XE_OP_DIV, y, like(b, y, b->n_in));
    return done(b, y);
}

/* Integer a / b truncated toward zero: floor division plus one where the signs differ. */
static int trunc_div(ox_b *b, int x, int y)
{
    int q = ox_bin(b, XE_OP_DIV, x, y);
    int r = ox_bin(b, XE_OP_SUB, x, ox_bin(b, XE_OP_MUL, q, y));
    int zero = like(b, x, 0);
    int differ =
        ox_bin(b, XE_OP_NOT_EQUAL, ox_bin(b, XE_OP_LESS, x, zero), ox_bin(b, XE_OP_LESS, y, zero));
    int fix = ox_bin(b, XE_OP_LOGICAL_AND, ox_bin(b, XE_OP_NOT_EQUAL, r, zero), differ);
    return ox_select(b, fix, ox_bin(b, XE_OP_ADD, q, like(b, q, 1)), q);
}

xe_code ox_b_div(ox_b *b)
{
    int x = ox_in(b, 0), y = ox_in(b, 1);
    if (x >= 0 && xe_dtype_is_integer(dt_of(b, x)))
        return done(b, trunc_div(b, x, y));
    return done(b, ox_bin(b, XE_OP_DIV, x, y));
}

/* C's fmod(x, y) for floats: x - trunc(x / y) y, and x itself where y is infinite and x is not. */
static int float_fmod(ox_b *b, int x, int y)
{
    int q = ox_bin(b, XE_OP_DIV, x, y), zero = like(b, x, 0);
    int t = ox_select(b, ox_bin(b, XE_OP_LESS, q, zero), ox_un(b, XE_OP_CEIL, q),
                      ox_un(b, XE_OP_FLOOR, q));
    int r = ox_bin(b, XE_OP_SUB, x, ox_bin(b, XE_OP_MUL, t, y));
    int inf_y = ox_bin(b, XE_OP_EQUAL, ox_un(b, XE_OP_ABS, y), like(b, y, INFINITY));
    int finite_x = ox_bin(b, XE_OP_EQUAL, ox_bin(b, XE_OP_SUB, x, x), zero);
    return ox_select(b, ox_bin(b, XE_OP_LOGICAL_AND, inf_y, finite_x), x, r);
}

/* Mod: fmod=0 takes the divisor's sign (numpy's mod), fmod=1 the dividend's (C's fmod). */
xe_code ox_b_mod(ox_b *b)
{
    int x = ox_in(b, 0), y = ox_in(b, 1);
    bool fmod = ox_int(b, "fmod", 0) != 0, is_int = x >= 0 && xe_dtype_is_integer(dt_of(b, x));
    if (is_int) {
        int q = fmod ? trunc_div(b, x, y) : ox_bin(b, XE_OP_DIV, x, y);
        return done(b, ox_bin(b, XE_OP_SUB, x, ox_bin(b, XE_OP_MUL, q, y)));
    }
    int r = float_fmod(b, x, y), zero = like(b, x, 0);
    if (fmod)
        return done(b, r);
    int differ =
        ox_bin(b, XE_OP_NOT_EQUAL, ox_bin(b, XE_OP_LESS, y, zero), ox_bin(b, XE_OP_LESS, r, zero));
    int fix = ox_bin(b, XE_OP_LOGICAL_AND, ox_bin(b, XE_OP_NOT_EQUAL, r, zero), differ);
    return done(b, ox_select(b, fix, ox_bin(b, XE_OP_ADD, r, y), r));
}

xe_code ox_b_pow(ox_b *b)
{
    int x = ox_in(b, 0), small = ox_pow_small(b, x, ox_in(b, 1)); /* x^3 as products (rewrite.c) */
    if (small >= 0 || b->failed)
        return done(b, small);
    return done(b, ox_bin(b, XE_OP_POW, x, ox_cast(b, ox_in(b, 1), dt_of(b, x))));
}

/* BitShift: direction LEFT or RIGHT; a count of the operand's width or more gives 0. */
xe_code ox_b_bit_shift(ox_b *b)
{
    const char *dir = ox_str(b, "direction", "");
    int op = !strcmp(dir, "LEFT")    ? XE_OP_SHIFT_LEFT
             : !strcmp(dir, "RIGHT") ? XE_OP_SHIFT_RIGHT
                                     : -1;
    if (op < 0)
        return ox_invalid(b, "direction must be LEFT or RIGHT, got '%s'", dir);
    return done(b, ox_bin(b, op, ox_in(b, 0), ox_in(b, 1)));
}

xe_code ox_b_reciprocal(ox_b *b)
{
    int x = ox_in(b, 0);
    return done(b, ox_bin(b, XE_OP_DIV, like(b, x, 1), x));
}

xe_code ox_b_leaky_relu(ox_b *b)
{
    int x = ox_in(b, 0);
    int neg = ox_bin(b, XE_OP_LESS, x, like(b, x, 0));
    return done(
        b, ox_select(b, neg, ox_bin(b, XE_OP_MUL, x, like(b, x, ox_float(b, "alpha", 0.01))), x));
}

xe_code ox_b_prelu(ox_b *b)
{
    int x = ox_in(b, 0), slope = ox_in(b, 1);
    int neg = ox_bin(b, XE_OP_LESS, x, like(b, x, 0));
    return done(b, ox_select(b, neg, ox_bin(b, XE_OP_MUL, x, slope), x));
}

xe_code ox_b_thresholded_relu(ox_b *b)
{
    int x = ox_in(b, 0);
    int big = ox_bin(b, XE_OP_GREATER, x, like(b, x, ox_float(b, "alpha", 1.0)));
    return done(b, ox_select(b, big, x, like(b, x, 0)));
}

/* alpha (exp(x) - 1) */
static int expm1_scaled(ox_b *b, int x, double alpha)
{
    int e = ox_bin(b, XE_OP_SUB, ox_un(b, XE_OP_EXP, x), like(b, x, 1));
    return ox_bin(b, XE_OP_MUL, e, like(b, x, alpha));
}

xe_code ox_b_elu(ox_b *b)
{
    int x = ox_in(b, 0);
    int neg = ox_bin(b, XE_OP_LESS, x, like(b, x, 0));
    return done(b, ox_select(b, neg, expm1_scaled(b, x, ox_float(b, "alpha", 1.0)), x));
}

xe_code ox_b_selu(ox_b *b)
{
    int x = ox_in(b, 0);
    double alpha = ox_float(b, "alpha", 1.67326319217681884765625);
    double gamma = ox_float(b, "gamma", 1.05070102214813232421875);
    int pos = ox_bin(b, XE_OP_GREATER, x, like(b, x, 0));
    int y = ox_select(b, pos, x, expm1_scaled(b, x, alpha));
    return done(b, ox_bin(b, XE_OP_MUL, y, like(b, x, gamma)));
}

/* Celu: max(0, x) + min(0, alpha (exp(x / alpha) - 1)) */
xe_code ox_b_celu(ox_b *b)
{
    int x = ox_in(b, 0);
    double alpha = ox_float(b, "alpha", 1.0);
    int e = expm1_scaled(b, ox_bin(b, XE_OP_DIV, x, like(b, x, alpha)), alpha);
    int zero = like(b, x, 0);
    return done(b, ox_bin(b, XE_OP_ADD, ox_bin(b, XE_OP_MAXIMUM, x, zero),
                          ox_bin(b, XE_OP_MINIMUM, e, zero)));
}

/* max(0, min(1, alpha x + beta)) */
static int hard_sigmoid(ox_b *b, int x, double alpha, double beta)
{
    int y = ox_bin(b, XE_OP_ADD, ox_bin(b, XE_OP_MUL, x, like(b, x, alpha)), like(b, x, beta));
    return ox_bin(b, XE_OP_MAXIMUM, ox_bin(b, XE_OP_MINIMUM, y, like(b, x, 1)), like(b, x, 0));
}

xe_code ox_b_hard_sigmoid(ox_b *b)
{
    return done(b,
                hard_sigmoid(b, ox_in(b, 0), ox_float(b, "alpha", 0.2), ox_float(b, "beta", 0.5)));
}

xe_code ox_b_hard_swish(ox_b *b)
{
    int x = ox_in(b, 0);
    return done(b, ox_bin(b, XE_OP_MUL, x, hard_sigmoid(b, x, 1.0 / 6.0, 0.5)));
}

xe_code ox_b_softsign(ox_b *b)
{
    int x = ox_in(b, 0);
    return done(
        b, ox_bin(b, XE_OP_DIV, x, ox_bin(b, XE_OP_ADD, ox_un(b, XE_OP_ABS, x), like(b, x, 1))));
}

/* log(exp(x) + 1), as ONNX's reference computes it */
static int softplus(ox_b *b, int x)
{
    return ox_un(b, XE_OP_LOG, ox_bin(b, XE_OP_ADD, ox_un(b, XE_OP_EXP, x), like(b, x, 1)));
}

xe_code ox_b_softplus(ox_b *b)
{
    return done(b, softplus(b, ox_in(b, 0)));
}

xe_code ox_b_mish(ox_b *b)
{
    int x = ox_in(b, 0);
    return done(b, ox_bin(b, XE_OP_MUL, x, ox_un(b, XE_OP_TANH, softplus(b, x))));
}

/* x sigmoid(alpha x) */
static int swish(ox_b *b, int x)
{
    int ax = ox_bin(b, XE_OP_MUL, x, like(b, x, ox_float(b, "alpha", 1.0)));
    return ox_bin(b, XE_OP_MUL, x, ox_un(b, XE_OP_SIGMOID, ax));
}

xe_code ox_b_swish(ox_b *b)
{
    return done(b, swish(b, ox_in(b, 0)));
}

/* SwiGLU (opset 28): Swish(A) B, as its function body (no broadcasting: A and B of one shape). */
xe_code ox_b_swiglu(ox_b *b)
{
    int a = ox_in(b, 0), v = ox_in(b, 1);
    const xe_shape *as = &ox_type(b, a)->shape, *vs = &ox_type(b, v)->shape;
    if (a >= 0 && v >= 0 && xe_shape_is_known(as) && xe_shape_is_known(vs) &&
        !xe_shape_equal(as, vs))
        return ox_invalid(b, "SwiGLU's A and B must have one shape (no broadcasting)");
    return done(b, ox_bin(b, XE_OP_MUL, swish(b, a), v));
}

xe_code ox_b_shrink(ox_b *b)
{
    int x = ox_in(b, 0);
    double bias = ox_float(b, "bias", 0.0), lambd = ox_float(b, "lambd", 0.5);
    int lo = ox_bin(b, XE_OP_LESS, x, like(b, x, -lambd));
    int hi = ox_bin(b, XE_OP_GREATER, x, like(b, x, lambd));
    int y = ox_select(b, hi, ox_bin(b, XE_OP_SUB, x, like(b, x, bias)), like(b, x, 0));
    return done(b, ox_select(b, lo, ox_bin(b, XE_OP_ADD, x, like(b, x, bias)), y));
}

xe_code ox_b_sign(ox_b *b)
{
    int x = ox_in(b, 0), zero = like(b, x, 0);
    int neg = ox_select(b, ox_bin(b, XE_OP_LESS, x, zero), like(b, x, -1), zero);
    return done(b, ox_select(b, ox_bin(b, XE_OP_GREATER, x, zero), like(b, x, 1), neg));
}

xe_code ox_b_isnan(ox_b *b)
{
    int x = ox_in(b, 0);
    return done(b, ox_bin(b, XE_OP_NOT_EQUAL, x, x));
}

xe_code ox_b_isinf(ox_b *b)
{
    int x = ox_in(b, 0);
    bool pos = ox_int(b, "detect_positive", 1) != 0, neg = ox_int(b, "detect_negative", 1) != 0;
    int p = ox_bin(b, XE_OP_EQUAL, x, like(b, x, INFINITY));
    int n = ox_bin(b, XE_OP_EQUAL, x, like(b, x, -INFINITY));
    if (pos && neg)
        return done(b, ox_bin(b, XE_OP_LOGICAL_OR, p, n));
    if (pos || neg)
        return done(b, pos ? p : n);
    return done(b, ox_bin(b, XE_OP_LOGICAL_AND, p, n)); /* both off: all false */
}

/* Tan Sinh Cosh Asinh Acosh Atanh from exp, log, sqrt, sin and cos. */
xe_code ox_b_trig(ox_b *b)
{
    int x = ox_in(b, 0), one = like(b, x, 1), half = like(b, x, 0.5), y = -1;
    const char *t = b->np->op_type;
    if (!strcmp(t, "Tan"))
        y = ox_bin(b, XE_OP_DIV, ox_un(b, XE_OP_SIN, x), ox_un(b, XE_OP_COS, x));
    else if (!strcmp(t, "Sinh") || !strcmp(t, "Cosh"))
        y = ox_bin(b, XE_OP_MUL, half,
                   ox_bin(b, t[0] == 'S' ? XE_OP_SUB : XE_OP_ADD, ox_un(b, XE_OP_EXP, x),
                          ox_un(b, XE_OP_EXP, ox_un(b, XE_OP_NEG, x))));
    else if (!strcmp(t, "Asinh") || !strcmp(t, "Acosh"))
        y = ox_un(b, XE_OP_LOG,
                  ox_bin(b, XE_OP_ADD, x,
                         ox_un(b, XE_OP_SQRT,
                               ox_bin(b, t[1] == 's' ? XE_OP_ADD : XE_OP_SUB,
                                      ox_bin(b, XE_OP_MUL, x, x), one))));
    else /* Atanh */
        y = ox_bin(b, XE_OP_MUL, half,
                   ox_un(b, XE_OP_LOG,
                         ox_bin(b, XE_OP_DIV, ox_bin(b, XE_OP_ADD, one, x),
                                ox_bin(b, XE_OP_SUB, one, x))));
    return done(b, y);
}

/* Round: to the nearest integer, ties to even (the op round, nearbyint). */
xe_code ox_b_round(ox_b *b)
{
    return done(b, ox_round_even(b, ox_in(b, 0)));
}

int ox_round_even(ox_b *b, int x)
{
    return ox_un(b, XE_OP_ROUND, x);
}

xe_code ox_b_gelu(ox_b *b)
{
    const char *approx = ox_str(b, "approximate", "none");
    if (strcmp(approx, "none") && strcmp(approx, "tanh"))
        return ox_unsupported(b, "attribute approximate='%s' is not supported", approx);
    ox_at a = OX_BOOL("approximate", !strcmp(approx, "tanh"));
    int x = ox_in(b, 0);
    return done(b, ox_op(b, XE_OP_GELU, &x, 1, &a, 1));
}

/* Dropout's mask at inference: all ones (x's dtype before opset 10, bool since), x's shape. */
static xe_code dropout_mask(ox_b *b, int x)
{
    if (x < 0)
        return ox_status(b);
    const xe_type *t = ox_type(b, x);
    if (!xe_shape_is_known(&t->shape))
        return ox_unsupported(b, "the mask output of Dropout needs known dims");
    int one = ox_scalar(b, b->opset < 10 ? t->dtype : XE_BOOL, 1.0);
    ox_at at = OX_INTS("shape", t->shape.dims, t->shape.rank);
    return ox_out(b, 1, ox_op(b, XE_OP_BROADCAST_TO, &one, 1, &at, 1));
}

/* Identity, and Dropout at inference (its mask all ones). */
xe_code ox_b_identity(ox_b *b)
{
    if (b->np->n_output > 1 && b->np->output[1][0] && dropout_mask(b, ox_in(b, 0)) != XE_OK)
        return ox_status(b);
    if (b->n_in > 2 && ox_in(b, 2) >= 0) {
        const xe_tensor *t = ox_need_const(b, 2, "training_mode");
        if (t &&
            xe_load_f64(t->data, t->dtype, 0) != 0) { /* training: the identity only at ratio 0 */
            const xe_tensor *r = ox_in(b, 1) >= 0 ? ox_need_const(b, 1, "ratio") : NULL;
            if (!r || xe_load_f64(r->data, r->dtype, 0) != 0)
                return ox_unsupported(
                    b, "training_mode=true is not supported (inference only) but at ratio 0");
        }
    }
    return done(b, ox_in(b, 0));
}

xe_code ox_b_where(ox_b *b)
{
    return done(b, ox_select(b, ox_in(b, 0), ox_in(b, 1), ox_in(b, 2)));
}

/* Clip: min and max from attributes (opset < 11) or optional inputs. */
xe_code ox_b_clip(ox_b *b)
{
    int x = ox_in(b, 0), y = x;
    if (b->opset < 11) {
        y = ox_bin(b, XE_OP_MAXIMUM, y, like(b, x, ox_float(b, "min", -INFINITY)));
        return done(b, ox_bin(b, XE_OP_MINIMUM, y, like(b, x, ox_float(b, "max", INFINITY))));
    }
    if (ox_in(b, 1) >= 0)
        y = ox_bin(b, XE_OP_MAXIMUM, y, ox_in(b, 1));
    if (ox_in(b, 2) >= 0)
        y = ox_bin(b, XE_OP_MINIMUM, y, ox_in(b, 2));
    return done(b, y); /* no bounds: x itself */
}

/* Cast and CastLike: executor dtypes only, default rounding; saturate (float8 targets only, as
   ONNX says) becomes the cast's own attribute when it is 0. */
static xe_code cast_to(ox_b *b, int32_t to)
{
    xe_dtype dt;
    if (!ox_dtype(to, &dt))
        return ox_unsupported(b, "cast to %s is not supported", ox_dtype_name(to));
    int64_t saturate = ox_int(b, "saturate", 1);
    if (saturate != 0 && saturate != 1)
        return ox_invalid(b, "attribute saturate=%lld is not 0 or 1", (long long)saturate);
    const char *mode = ox_str(b, "round_mode", "up");
    if (strcmp(mode, "up"))
        return ox_unsupported(b, "attribute round_mode='%s' is not supported", mode);
    int x = ox_in(b, 0);
    ox_at a[2] = {OX_DT("to", dt), OX_BOOL("saturate", false)};
    return done(
        b, ox_op(b, XE_OP_CAST, &x, 1, a, saturate == 0 && xe_dtype_is_lowp_float(dt) ? 2 : 1));
}

xe_code ox_b_cast(ox_b *b)
{
    return cast_to(b, (int32_t)ox_int(b, "to", 0));
}

/* A dtype whose values sit one per byte narrower than the byte (i4 u4 i2 u2 f4e2m1): its
 * stored bytes are not its bits, so BitCast has nothing to keep. */
static bool sub_byte(xe_dtype dt)
{
    return dt == XE_I4 || dt == XE_U4 || dt == XE_I2 || dt == XE_U2 || dt == XE_F4E2M1;
}

/* BitCast: x's bytes as another dtype of the same width (the executor's bitcast). */
xe_code ox_b_bitcast(ox_b *b)
{
    int32_t to = (int32_t)ox_int(b, "to", 0);
    xe_dtype dt;
    int x = ox_in(b, 0);
    if (x < 0)
        return ox_status(b);
    xe_dtype from = dt_of(b, x);
    if (!ox_dtype(to, &dt) || sub_byte(dt) || sub_byte(from))
        return ox_unsupported(b, "BitCast from %s to %s is not supported", xe_dtype_name(from),
                              ox_dtype_name(to));
    if (dt == XE_BOOL && from != XE_BOOL)
        return ox_unsupported(b, "BitCast to bool is not supported (a byte other than 0 or 1 is "
                                 "no bool)");
    if (xe_dtype_size(dt) != xe_dtype_size(from))
        return ox_invalid(b, "BitCast from %s to %s: the widths differ", xe_dtype_name(from),
                          xe_dtype_name(dt));
    if (dt == from)
        return done(b, x);
    ox_at a = OX_DT("to", dt);
    return done(b, ox_op(b, XE_OP_BITCAST, &x, 1, &a, 1));
}

/* Det: the executor's det (LU in f64 per matrix). */
xe_code ox_b_det(ox_b *b)
{
    int x = ox_in(b, 0);
    if (x < 0)
        return ox_status(b);
    if (!xe_dtype_is_float(dt_of(b, x)))
        return ox_unsupported(b, "Det of %s is not supported (f16, f32, f64)",
                              xe_dtype_name(dt_of(b, x)));
    return done(b, ox_un(b, XE_OP_DET, x));
}

xe_code ox_b_cast_like(ox_b *b)
{
    int t = ox_in(b, 1);
    return t < 0 ? ox_status(b) : cast_to(b, ox_onnx_dtype(dt_of(b, t)));
}
