/*
 * The op registry: the built-in table made from ops.def's rows
 * (op_rows.c), plus the ops that plugins register at run time. Each
 * built-in op's shape function and kernel id are chosen from its class
 * (and, for shape ops, its name) here, in one place. The kernels
 * themselves live in each device's table alone: xe_op_kernel (op_kernel.c)
 * reads a built-in op's entry there by the id this file gives it.
 */
#include <stdint.h>
#include <string.h>

#include "kernels.h"
#include "xlac/op.h"
#include "xlac/plugin.h"

#define XE_MAX_OPS 128

/* A built-in op's shape function and the kernel (by xe_kernel_id) that every device runs it with.
 */
typedef struct builtin_impl {
    xe_infer_fn infer;
    xe_kernel_id kernel;
} builtin_impl;

#define IMPL(infer_name, kernel_name)                                                              \
    ((builtin_impl){xe_infer_##infer_name, XE_KERNEL_##kernel_name})

/* Built-in op `op` among the CPU-only ones (data-dependent counts, engine steps, ONNX's samplers);
   XE_KERNEL_COUNT for any other. */
static builtin_impl impl_by_cpu_op(int op)
{
    switch (op) {
    case XE_OP_UNIQUE:
        return IMPL(unique, unique);
    case XE_OP_NONZERO:
        return IMPL(nonzero, nonzero);
    case XE_OP_BITCAST:
        return IMPL(bitcast, bitcast);
    case XE_OP_DET:
        return IMPL(det, det);
    case XE_OP_RECURRENT:
        return IMPL(recurrent, recurrent);
    case XE_OP_DYNAMIC_QUANT_MATMUL:
        return IMPL(dynamic_quant_matmul, dynamic_quant_matmul);
    case XE_OP_QUANT_CONV2D:
        return IMPL(quant_conv2d, quant_conv2d);
    case XE_OP_QUANT_ADD:
        return IMPL(quant_add, quant_add);
    case XE_OP_NON_MAX_SUPPRESSION:
        return IMPL(nms, nms);
    case XE_OP_GRID_SAMPLE:
        return IMPL(grid_sample, grid_sample);
    case XE_OP_DEFORM_CONV2D:
        return IMPL(deform_conv2d, deform_conv2d);
    case XE_OP_ROI_ALIGN:
        return IMPL(roi_align, roi_align);
    case XE_OP_MAX_UNPOOL:
        return IMPL(max_unpool, max_unpool);
    default:
        return (builtin_impl){NULL, XE_KERNEL_COUNT}; /* decided by its class */
    }
}

/* Built-in op `op` by its name (shape and data-movement ops, nn ops, collectives). */
static builtin_impl impl_by_op(int op)
{
    switch (op) {
    case XE_OP_INPUT:
        return (builtin_impl){xe_infer_source, XE_KERNEL_NONE};
    case XE_OP_CONST:
        return IMPL(source, const);
    case XE_OP_IOTA:
        return IMPL(iota, iota);
    case XE_OP_GET:
        return (builtin_impl){NULL, XE_KERNEL_NONE}; /* the executor resolves get itself */
    case XE_OP_RESHAPE:
        return IMPL(reshape, reshape);
    case XE_OP_TRANSPOSE:
        return IMPL(transpose, transpose);
    case XE_OP_BROADCAST_TO:
        return IMPL(broadcast_to, broadcast_to);
    case XE_OP_CONCAT:
        return IMPL(concat, concat);
    case XE_OP_SLICE:
        return IMPL(slice, slice);
    /* neural-network ops */
    case XE_OP_GATHER:
        return IMPL(gather, gather);
    case XE_OP_TILE:
        return IMPL(tile, tile);
    case XE_OP_PAD:
        return IMPL(pad, pad);
    case XE_OP_CONV2D:
        return IMPL(conv2d, conv2d);
    case XE_OP_MAX_POOL2D:
        return IMPL(pool2d, max_pool2d);
    case XE_OP_AVG_POOL2D:
        return IMPL(pool2d, avg_pool2d);
    case XE_OP_ALL_REDUCE:
        return IMPL(collective, all_reduce);
    case XE_OP_ALL_GATHER:
        return IMPL(collective, all_gather);
    case XE_OP_REDUCE_SCATTER:
        return IMPL(collective, reduce_scatter);
    case XE_OP_BROADCAST:
        return IMPL(collective, broadcast);
    default:
        return impl_by_cpu_op(op);
    }
}

/* Built-in op of class cls that impl_by_op does not name. */
static builtin_impl impl_by_class(xe_op_class cls)
{
    switch (cls) {
    case XE_CLASS_BINARY:
        return IMPL(binary, binary);
    case XE_CLASS_COMPARE:
        return IMPL(compare, compare);
    case XE_CLASS_LOGICAL:
        return IMPL(logical, logical);
    case XE_CLASS_UNARY:
        return IMPL(unary, unary);
    case XE_CLASS_SELECT:
        return IMPL(select, select);
    case XE_CLASS_CAST:
        return IMPL(cast, cast);
    case XE_CLASS_REDUCE:
        return IMPL(reduce, reduce);
    case XE_CLASS_ARGMAX:
        return IMPL(argmax, argmax);
    case XE_CLASS_MATMUL:
        return IMPL(matmul, matmul);
    case XE_CLASS_SOFTMAX:
        return IMPL(softmax, softmax);
    case XE_CLASS_RANDOM:
        return IMPL(random, random);
    default:
        return (builtin_impl){NULL, XE_KERNEL_NONE};
    }
}

/* Built-in op `op`'s shape function and kernel, by its name else by its class d->cls. */
static builtin_impl impl_of(const xe_op_def *d, int op)
{
    builtin_impl impl = impl_by_op(op);
    return impl.kernel == XE_KERNEL_COUNT ? impl_by_class(d->cls) : impl;
}

static xe_op_def op_table[XE_MAX_OPS];
static int n_ops;

static void ensure_builtins(void)
{
    if (n_ops)
        return;
    for (int op = 0; op < XE_OP_COUNT; op++) {
        const xe_op_row *r = xe_op_row_of(op);
        xe_op_def *d = &op_table[op];
        *d = (xe_op_def){.name = r->name,
                         .min_inputs = r->min_in,
                         .max_inputs = r->max_in,
                         .cls = r->cls,
                         .flags = r->flags};
        d->infer = impl_of(d, op).infer;
    }
    n_ops = XE_OP_COUNT;
}

xe_kernel_id xe_op_kernel_id(const xe_op_def *d)
{
    ensure_builtins();
    uintptr_t at = (uintptr_t)d, first = (uintptr_t)op_table;
    uintptr_t end = (uintptr_t)(op_table + XE_OP_COUNT);
    if (at < first || at >= end)
        return XE_KERNEL_COUNT; /* a registered op: its own kernel[] */
    int op = (int)((at - first) / sizeof op_table[0]);
    return impl_of(d, op).kernel;
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

const char *xe_node_op_name(const xe_node *n)
{
    const char *op = n->op == XE_OP_CALL ? xe_node_attr_string(n, "@op", NULL) : NULL;
    return op ? op : xe_op_name(n->op);
}

int xe_op_count(void)
{
    ensure_builtins();
    return n_ops;
}

/* Whether any of the types is a narrow dtype. */
static bool any_narrow(const xe_type *in, int n_in, const xe_type *out)
{
    bool narrow = out && xe_dtype_is_narrow(out->dtype);
    for (int k = 0; k < n_in; k++)
        narrow = narrow || xe_dtype_is_narrow(in[k].dtype);
    return narrow;
}

/* Whether any of the types is a storage dtype (float8, the sub-byte integers). */
static bool any_storage(const xe_type *in, int n_in, const xe_type *out)
{
    bool storage = out && xe_dtype_is_storage(out->dtype);
    for (int k = 0; k < n_in; k++)
        storage = storage || xe_dtype_is_storage(in[k].dtype);
    return storage;
}

/* The storage dtypes move, select and cast: their kernels copy bytes or convert through double. */
static const char *storage_reason(int op, const xe_op_def *d)
{
    switch (d->cls) {
    case XE_CLASS_STRUCTURE:
    case XE_CLASS_COMPOSITE:
    case XE_CLASS_SELECT:
    case XE_CLASS_CAST:
    case XE_CLASS_SHAPE:
        return NULL;
    case XE_CLASS_SOURCE:
        return op == XE_OP_IOTA ? "iota has no storage dtypes" : NULL;
    default:
        return op == XE_OP_GATHER || op == XE_OP_TILE || op == XE_OP_PAD || op == XE_OP_BITCAST
                   ? NULL
                   : "the storage dtypes (float8, f4e2m1, i4 u4 i2 u2) have no kernel for this op "
                     "(cast them first)";
    }
}

const char *xe_op_narrow_reason(int op, const xe_type *in, int n_in, const xe_type *out)
{
    const xe_op_def *d = xe_op_get(op);
    if (!d || op >= XE_OP_COUNT || !any_narrow(in, n_in, out))
        return NULL; /* plugin ops check their own dtypes */
    if (any_storage(in, n_in, out))
        return storage_reason(op, d);
    switch (d->cls) {
    case XE_CLASS_STRUCTURE:
    case XE_CLASS_COMPOSITE:
    case XE_CLASS_COMPARE:
    case XE_CLASS_LOGICAL:
    case XE_CLASS_UNARY:
    case XE_CLASS_SELECT:
    case XE_CLASS_CAST:
    case XE_CLASS_SHAPE:
        return NULL;
    case XE_CLASS_SOURCE:
        return op == XE_OP_IOTA ? "iota has no narrow dtypes" : NULL;
    case XE_CLASS_BINARY:
        return op == XE_OP_POW && n_in > 0 && in[0].dtype == XE_U64 ? "pow has no u64 kernel"
                                                                    : NULL;
    case XE_CLASS_NN:
        return op == XE_OP_GATHER || op == XE_OP_TILE || op == XE_OP_PAD || op == XE_OP_BITCAST ||
                       op == XE_OP_DYNAMIC_QUANT_MATMUL || op == XE_OP_QUANT_CONV2D ||
                       op == XE_OP_QUANT_ADD
                   /* 8-bit operands: their shape functions check */
                   ? NULL
                   : "the narrow dtypes (u8 i8 i16 u16 u32 u64 bf16) have no kernel for this op";
    case XE_CLASS_MATMUL: /* u8/i8 operands: the exact i32 product (cpu/matmul.c) */
        return out && n_in == 2 && (in[0].dtype == XE_U8 || in[0].dtype == XE_I8) &&
                       (in[1].dtype == XE_U8 || in[1].dtype == XE_I8) && out->dtype == XE_I32
                   ? NULL
                   : "matmul's narrow dtypes are u8 and i8 operands (an i32 product)";
    default:
        return "the narrow dtypes (u8 i8 i16 u16 u32 u64 bf16) have no kernel for this op";
    }
}

bool xe_op_is_elementwise(int op)
{
    const xe_op_def *d = xe_op_get(op);
    if (!d)
        return false;
    switch (d->cls) {
    case XE_CLASS_BINARY:
    case XE_CLASS_COMPARE:
    case XE_CLASS_LOGICAL:
    case XE_CLASS_UNARY:
    case XE_CLASS_SELECT:
    case XE_CLASS_CAST:
        return true;
    default:
        return false;
    }
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
