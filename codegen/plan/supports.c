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

const char *xg_unsupported_reason(const xe_graph *g, const xe_node *n, xe_device dev, const xg_options *o)
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
    if (d->cls == XE_CLASS_NN) /* gather tile pad conv2d pools: per-op kernels only */
        return "no code generator";
    if (d->cls == XE_CLASS_MATMUL && !(o && o->level2))
        return "matmul needs XLAC_AUTO_JIT=2";
    const xg_backend *b = xg_backend_for(xg_target_for_device(dev));
    const char *why = b->unsupported ? b->unsupported(n) : NULL;
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
