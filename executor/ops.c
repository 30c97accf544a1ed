/*
 * The op registry: the built-in table expanded from ops.def, plus the ops
 * that plugins register at run time. Each built-in op's shape function and
 * kernels are chosen from its class (and, for shape ops, its name) here,
 * in one place.
 */
#include <string.h>

#include "kernels.h"
#include "xlac/op.h"
#include "xlac/plugin.h"

#define XE_MAX_OPS 128

#ifdef XE_HAVE_CUDA
#define GPU(k) xe_gpu_##k
#else
#define GPU(k) NULL
#endif

#define KERNELS(k) .kernel = {[XE_DEV_CPU] = xe_cpu_##k, [XE_DEV_GPU] = GPU(k)}

/* Shape function and kernels of built-in op `op` of class cls. */
static void fill_builtin(xe_op_def *d, int op)
{
    switch (op) {
    case XE_OP_INPUT: *d = (xe_op_def){.infer = xe_infer_source}; return;
    case XE_OP_CONST: *d = (xe_op_def){.infer = xe_infer_source, KERNELS(const)}; return;
    case XE_OP_IOTA: *d = (xe_op_def){.infer = xe_infer_iota, KERNELS(iota)}; return;
    case XE_OP_GET: *d = (xe_op_def){0}; return; /* the executor resolves get itself */
    case XE_OP_RESHAPE: *d = (xe_op_def){.infer = xe_infer_reshape, KERNELS(reshape)}; return;
    case XE_OP_TRANSPOSE: *d = (xe_op_def){.infer = xe_infer_transpose, KERNELS(transpose)}; return;
    case XE_OP_BROADCAST_TO:
        *d = (xe_op_def){.infer = xe_infer_broadcast_to, KERNELS(broadcast_to)};
        return;
    case XE_OP_CONCAT: *d = (xe_op_def){.infer = xe_infer_concat, KERNELS(concat)}; return;
    case XE_OP_SLICE: *d = (xe_op_def){.infer = xe_infer_slice, KERNELS(slice)}; return;
    /* neural-network ops */
    case XE_OP_GATHER: *d = (xe_op_def){.infer = xe_infer_gather, KERNELS(gather)}; return;
    case XE_OP_TILE: *d = (xe_op_def){.infer = xe_infer_tile, KERNELS(tile)}; return;
    case XE_OP_PAD: *d = (xe_op_def){.infer = xe_infer_pad, KERNELS(pad)}; return;
    case XE_OP_CONV2D: *d = (xe_op_def){.infer = xe_infer_conv2d, KERNELS(conv2d)}; return;
    case XE_OP_MAX_POOL2D: *d = (xe_op_def){.infer = xe_infer_pool2d, KERNELS(max_pool2d)}; return;
    case XE_OP_AVG_POOL2D: *d = (xe_op_def){.infer = xe_infer_pool2d, KERNELS(avg_pool2d)}; return;
    case XE_OP_UNIQUE:
        *d = (xe_op_def){.infer = xe_infer_unique, .kernel = {[XE_DEV_CPU] = xe_cpu_unique}};
        return;
    default: break;
    }
    switch (d->cls) {
    case XE_CLASS_BINARY: *d = (xe_op_def){.infer = xe_infer_binary, KERNELS(binary)}; break;
    case XE_CLASS_COMPARE: *d = (xe_op_def){.infer = xe_infer_compare, KERNELS(compare)}; break;
    case XE_CLASS_LOGICAL: *d = (xe_op_def){.infer = xe_infer_logical, KERNELS(logical)}; break;
    case XE_CLASS_UNARY: *d = (xe_op_def){.infer = xe_infer_unary, KERNELS(unary)}; break;
    case XE_CLASS_SELECT: *d = (xe_op_def){.infer = xe_infer_select, KERNELS(select)}; break;
    case XE_CLASS_CAST: *d = (xe_op_def){.infer = xe_infer_cast, KERNELS(cast)}; break;
    case XE_CLASS_REDUCE: *d = (xe_op_def){.infer = xe_infer_reduce, KERNELS(reduce)}; break;
    case XE_CLASS_ARGMAX: *d = (xe_op_def){.infer = xe_infer_argmax, KERNELS(argmax)}; break;
    case XE_CLASS_MATMUL: *d = (xe_op_def){.infer = xe_infer_matmul, KERNELS(matmul)}; break;
    case XE_CLASS_SOFTMAX: *d = (xe_op_def){.infer = xe_infer_softmax, KERNELS(softmax)}; break;
    case XE_CLASS_RANDOM: *d = (xe_op_def){.infer = xe_infer_random, KERNELS(random)}; break;
    default: *d = (xe_op_def){0}; break;
    }
}

typedef struct builtin_row {
    const char *name;
    int min_in, max_in;
    xe_op_class cls;
    unsigned flags;
} builtin_row;

static const builtin_row builtin_rows[XE_OP_COUNT] = {
#define X(ENUM, nm, min_in, max_in, cls, fl) [XE_OP_##ENUM] = {nm, min_in, max_in, cls, fl},
#include "xlac/ops.def"
#undef X
};

static xe_op_def op_table[XE_MAX_OPS];
static int n_ops;

static void ensure_builtins(void)
{
    if (n_ops)
        return;
    for (int op = 0; op < XE_OP_COUNT; op++) {
        const builtin_row *r = &builtin_rows[op];
        xe_op_def *d = &op_table[op];
        d->cls = r->cls;
        fill_builtin(d, op);
        d->name = r->name;
        d->min_inputs = r->min_in;
        d->max_inputs = r->max_in;
        d->cls = r->cls;
        d->flags = r->flags;
        if (d->flags & XE_OPF_CPU_ONLY)
            d->kernel[XE_DEV_GPU] = NULL;
    }
    n_ops = XE_OP_COUNT;
}

const xe_op_def *xe_op_get(int op)
{
    ensure_builtins();
    return op >= 0 && op < n_ops ? &op_table[op] : NULL;
}

int xe_op_find(const char *name, size_t len)
{
    ensure_builtins();
    for (int op = 0; op < n_ops; op++)
        if (strlen(op_table[op].name) == len && memcmp(op_table[op].name, name, len) == 0)
            return op;
    return -1;
}

const char *xe_op_name(int op)
{
    const xe_op_def *d = xe_op_get(op);
    return d ? d->name : "?";
}

int xe_op_count(void)
{
    ensure_builtins();
    return n_ops;
}

int xe_plugin_abi_version(void)
{
    return XE_PLUGIN_ABI_VERSION;
}

int xe_register_op(const xe_op_def *def, xe_status *st)
{
    ensure_builtins();
    if (!def || !def->name || !*def->name)
        return xe_fail(st, XE_ERR_USAGE, "xe_register_op: op has no name"), -1;
    if (xe_op_find(def->name, strlen(def->name)) >= 0)
        return xe_fail(st, XE_ERR_USAGE, "xe_register_op: op '%s' already exists", def->name), -1;
    if (n_ops == XE_MAX_OPS)
        return xe_fail(st, XE_ERR_USAGE, "xe_register_op: op table full (%d ops)", XE_MAX_OPS), -1;
    op_table[n_ops] = *def;
    return n_ops++;
}
