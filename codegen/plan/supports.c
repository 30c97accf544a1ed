/*
 * What the code generator compiles: the predicate the plugin hands to the
 * clustering pass (the default options are plan/options.c's table).
 */
#include <stdlib.h>

#include "backend.h"
#include "op_text.h"
#include "xg.h"
#include "xlac/op.h"

/* An op with an ops.def expression needs one for its operands' dtype (the emitter prints it). */
static bool emits_text(const xe_graph *g, const xe_node *n, const xe_op_def *d)
{
    if (d->cls != XE_CLASS_BINARY && d->cls != XE_CLASS_COMPARE && d->cls != XE_CLASS_LOGICAL &&
        d->cls != XE_CLASS_UNARY)
        return true;
    if (!g || n->n_inputs < 1)
        return true; /* no operands to look at: the emitter decides */
    return xg_op_text(n, g->nodes[n->inputs[0]]->type.dtype, NULL, NULL, NULL, 0);
}

/*
 * conv2d joins a cluster at level 2 as a library step where the target runs
 * conv steps (its backend's conv_epilogue slot: the C target's oneDNN): the same
 * cached oneDNN primitive the per-op kernel runs (program.c), so a cluster
 * that holds it is never slower than op by op there, and the elementwise
 * ops around it (bias, activation, residual add) fuse into loops instead
 * of each being an op; residual adds between conv blocks join the same
 * cluster (with the convs outside, a cluster holding both ends of a block
 * is a real cycle through the convs).
 */
static bool conv_step(const xe_node *n, const xg_backend *b, const xg_options *o)
{
    return b->runner.conv_epilogue && o && o->level2 &&
           o->library_conv && /* the target runs conv steps */
           (n->type.dtype == XE_F32 || n->type.dtype == XE_F64);
}

/* Whether n or one of its operands has a narrow dtype (xlac/dtype.h). */
static bool touches_narrow(const xe_graph *g, const xe_node *n)
{
    bool narrow = xe_dtype_is_narrow(n->type.dtype);
    for (int k = 0; g && k < n->n_inputs && !narrow; k++)
        narrow = xe_dtype_is_narrow(g->nodes[n->inputs[k]]->type.dtype);
    return narrow;
}

const char *xg_unsupported_reason(const xe_graph *g, const xe_node *n, xe_device dev,
                                  const xg_options *o)
{
    const xe_op_def *d = xe_op_get(n->op);
    if (!d)
        return "no code generator";
    if (d->flags & XE_OPF_COLLECTIVE)
        return "collective";
    if (d->flags & XE_OPF_DATA_DEPENDENT_SHAPE)
        return "data-dependent output shape";
    if (d->flags & XE_OPF_STATEFUL)
        return "stateful";
    if (n->body || n->op == XE_OP_INPUT || n->op == XE_OP_GET || n->op >= XE_OP_COUNT)
        return "no code generator";
    if (touches_narrow(g, n)) /* op_text.c has no columns for them: they run op by op */
        return "the code generator has no narrow dtypes (u8 i8 i16 u16 u32 u64 bf16, float8, "
               "f4e2m1, i4 u4 i2 u2)";
    const xg_backend *b = xg_backend_for(xg_target_for_device(dev));
    if (n->op == XE_OP_CONV2D && conv_step(n, b, o))
        return NULL;           /* a library step: the engine's conv primitive (run/program.c) */
    if (d->cls == XE_CLASS_NN) /* gather tile pad pools, conv2d where the target has no conv step */
        return "no code generator";
    if (d->cls == XE_CLASS_MATMUL && !(o && o->level2))
        return "matmul needs XLAC_AUTO_JIT=2";
    const char *why = b->render.unsupported ? b->render.unsupported(n) : NULL;
    if (why)
        return why;
    if (n->type.shape.rank > XE_MAX_RANK)
        return "no code generator";
    if (!emits_text(g, n, d))
        return "no code generator for this op on its operands' dtype";
    return NULL;
}

bool xg_supports(const xe_graph *g, const xe_node *n, xe_device dev, const xg_options *o)
{
    return xg_unsupported_reason(g, n, dev, o) == NULL;
}
