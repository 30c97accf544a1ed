/*
 * What the code generator compiles: the predicate the plugin hands to the
 * clustering pass, and the code generator's default options.
 */
#include "xg.h"
#include "xlac/op.h"

void xg_options_default(xg_options *o)
{
    *o = (xg_options){
        .compile_threshold = 1,
        .dynamic_after = 2,
        .max_compiles_per_cluster = 16,
        .disk_cache = true,
        .cache_max_mb = 1024,
        .compile_timeout_s = 120,
        .cc = "cc",
        .tmp_dir = "/tmp",
    };
}

const char *xg_unsupported_reason(const xe_graph *g, const xe_node *n, xe_device dev, const xg_options *o)
{
    (void)g;
    const xe_op_def *d = xe_op_get(n->op);
    if (!d)
        return "no code generator";
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
    if (d->cls == XE_CLASS_MATMUL && dev == XE_DEV_GPU && n->type.dtype != XE_F32 && n->type.dtype != XE_F64)
        return "no code generator";
    if (n->type.shape.rank > XE_MAX_RANK)
        return "no code generator";
    return NULL;
}

bool xg_supports(const xe_graph *g, const xe_node *n, xe_device dev, const xg_options *o)
{
    return xg_unsupported_reason(g, n, dev, o) == NULL;
}
