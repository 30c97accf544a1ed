/*
 * The op registry: the built-in table expanded from ops.def, plus the ops
 * that plugins register at run time. Each built-in op's shape function and
 * kernels are chosen from its class (and, for shape ops, its name) here,
 * in one place. The attribute table (attrs.def) is read here too.
 */
#include <string.h>

#include "device_impl.h"
#include "kernels.h"
#include "xlac/op.h"
#include "xlac/plugin.h"

#define XE_MAX_OPS 128

/* A built-in op's shape function and the kernel (by xe_kernel_id) that every device runs it with. */
typedef struct builtin_impl {
    xe_infer_fn infer;
    xe_kernel_id kernel;
} builtin_impl;

#define IMPL(infer_name, kernel_name) ((builtin_impl){xe_infer_##infer_name, XE_KERNEL_##kernel_name})

/* Built-in op `op` by its name (shape and data-movement ops, nn ops, collectives). */
static builtin_impl impl_by_op(int op)
{
    switch (op) {
    case XE_OP_INPUT: return (builtin_impl){xe_infer_source, XE_KERNEL_NONE};
    case XE_OP_CONST: return IMPL(source, const);
    case XE_OP_IOTA: return IMPL(iota, iota);
    case XE_OP_GET: return (builtin_impl){NULL, XE_KERNEL_NONE}; /* the executor resolves get itself */
    case XE_OP_RESHAPE: return IMPL(reshape, reshape);
    case XE_OP_TRANSPOSE: return IMPL(transpose, transpose);
    case XE_OP_BROADCAST_TO: return IMPL(broadcast_to, broadcast_to);
    case XE_OP_CONCAT: return IMPL(concat, concat);
    case XE_OP_SLICE: return IMPL(slice, slice);
    /* neural-network ops */
    case XE_OP_GATHER: return IMPL(gather, gather);
    case XE_OP_TILE: return IMPL(tile, tile);
    case XE_OP_PAD: return IMPL(pad, pad);
    case XE_OP_CONV2D: return IMPL(conv2d, conv2d);
    case XE_OP_MAX_POOL2D: return IMPL(pool2d, max_pool2d);
    case XE_OP_AVG_POOL2D: return IMPL(pool2d, avg_pool2d);
    case XE_OP_ALL_REDUCE: return IMPL(collective, all_reduce);
    case XE_OP_ALL_GATHER: return IMPL(collective, all_gather);
    case XE_OP_REDUCE_SCATTER: return IMPL(collective, reduce_scatter);
    case XE_OP_BROADCAST: return IMPL(collective, broadcast);
    case XE_OP_UNIQUE: return IMPL(unique, unique);
    case XE_OP_NONZERO: return IMPL(nonzero, nonzero);
    default: return (builtin_impl){NULL, XE_KERNEL_COUNT}; /* decided by its class */
    }
}

/* Built-in op of class cls that impl_by_op does not name. */
static builtin_impl impl_by_class(xe_op_class cls)
{
    switch (cls) {
    case XE_CLASS_BINARY: return IMPL(binary, binary);
    case XE_CLASS_COMPARE: return IMPL(compare, compare);
    case XE_CLASS_LOGICAL: return IMPL(logical, logical);
    case XE_CLASS_UNARY: return IMPL(unary, unary);
    case XE_CLASS_SELECT: return IMPL(select, select);
    case XE_CLASS_CAST: return IMPL(cast, cast);
    case XE_CLASS_REDUCE: return IMPL(reduce, reduce);
    case XE_CLASS_ARGMAX: return IMPL(argmax, argmax);
    case XE_CLASS_MATMUL: return IMPL(matmul, matmul);
    case XE_CLASS_SOFTMAX: return IMPL(softmax, softmax);
    case XE_CLASS_RANDOM: return IMPL(random, random);
    default: return (builtin_impl){NULL, XE_KERNEL_NONE};
    }
}

/* Built-in op `op`'s shape function and kernel, by its name else by its class d->cls. */
static builtin_impl impl_of(const xe_op_def *d, int op)
{
    builtin_impl impl = impl_by_op(op);
    return impl.kernel == XE_KERNEL_COUNT ? impl_by_class(d->cls) : impl;
}

/* d's entry for its kernel on dev, from dev's table (NULL: the table is not known yet), or none. */
static void set_kernel(xe_op_def *d, xe_kernel_id k, xe_device dev, const xe_kernel_fn *kernels)
{
    bool cpu_only = dev != XE_DEV_CPU && (d->flags & XE_OPF_CPU_ONLY);
    d->kernel[dev] = kernels && k != XE_KERNEL_NONE && !cpu_only ? kernels[k] : NULL;
}

/*
 * Shape function and kernels of built-in op `op` of class d->cls: each device's entry for its
 * kernel, of the devices whose table is here (a module's slot gets its entries when it loads:
 * xe_ops_device_loaded).
 */
static void fill_builtin(xe_op_def *d, int op)
{
    builtin_impl impl = impl_of(d, op);
    d->infer = impl.infer;
    for (int dev = 0; dev < XE_DEV_COUNT; dev++) {
        const xe_device_ops *o = xe_device_module_built((xe_device)dev) ? xe_device_module_loaded((xe_device)dev)
                                                                       : xe_device_slot_facts((xe_device)dev);
        set_kernel(d, impl.kernel, (xe_device)dev, o ? o->kernels : NULL);
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
        *d = (xe_op_def){.name = r->name, .min_inputs = r->min_in, .max_inputs = r->max_in, .cls = r->cls,
                         .flags = r->flags};
        fill_builtin(d, op);
    }
    n_ops = XE_OP_COUNT;
}

void xe_ops_device_loaded(xe_device dev, const xe_kernel_fn *kernels)
{
    ensure_builtins();
    for (int op = 0; op < XE_OP_COUNT; op++)
        set_kernel(&op_table[op], impl_of(&op_table[op], op).kernel, dev, kernels);
}

xe_kernel_fn xe_op_kernel(const xe_op_def *d, xe_device dev)
{
    if (!d || dev >= XE_DEV_COUNT)
        return NULL;
    if (xe_device_module_built(dev))
        xe_device_module_ops(dev); /* loaded the first time: its kernels join the table */
    return d->kernel[dev];
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
    case XE_CLASS_SHAPE: return NULL;
    case XE_CLASS_SOURCE: return op == XE_OP_IOTA ? "iota has no storage dtypes" : NULL;
    default:
        return op == XE_OP_GATHER || op == XE_OP_TILE || op == XE_OP_PAD
                   ? NULL
                   : "the storage dtypes (float8, f4e2m1, i4 u4 i2 u2) have no kernel for this op (cast them first)";
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
    case XE_CLASS_SHAPE: return NULL;
    case XE_CLASS_SOURCE: return op == XE_OP_IOTA ? "iota has no narrow dtypes" : NULL;
    case XE_CLASS_BINARY:
        return op == XE_OP_POW && n_in > 0 && in[0].dtype == XE_U64 ? "pow has no u64 kernel" : NULL;
    case XE_CLASS_NN:
        return op == XE_OP_GATHER || op == XE_OP_TILE || op == XE_OP_PAD
                   ? NULL
                   : "the narrow dtypes (u8 i8 i16 u16 u32 u64 bf16) have no kernel for this op";
    default: return "the narrow dtypes (u8 i8 i16 u16 u32 u64 bf16) have no kernel for this op";
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
    case XE_CLASS_CAST: return true;
    default: return false;
    }
}

bool xe_op_variant(const xe_node *n)
{
    switch (n->op) {
#define X(ENUM, nm, min_in, max_in, cls, fl)
#define XV(ENUM, attr, f32, f64)                                                           \
    case XE_OP_##ENUM: return xe_op_attr_value(n, #attr) != 0;
#include "xlac/ops.def"
#undef XV
#undef X
    default: return false;
    }
}

/* ---- attributes (attrs.def) ------------------------------------------------- */

static const int attr_op[] = {
#define XA(ENUM, nm, kind, dflt) XE_OP_##ENUM,
#include "xlac/attrs.def"
#undef XA
};

static const xe_op_attr attr_rows[] = {
#define XA(ENUM, nm, kind, dflt) {nm, kind, dflt},
#include "xlac/attrs.def"
#undef XA
};

#define N_ATTR_ROWS ((int)(sizeof attr_op / sizeof attr_op[0]))

const xe_op_attr *xe_op_attrs(int op, int *n)
{
    *n = 0;
    if (op < 0 || op >= XE_OP_COUNT || op == XE_OP_CALL)
        return NULL;
    int first = 0;
    while (first < N_ATTR_ROWS && attr_op[first] != op)
        first++;
    while (first + *n < N_ATTR_ROWS && attr_op[first + *n] == op)
        (*n)++;
    return &attr_rows[first]; /* rows of one op are adjacent in attrs.def */
}

const xe_op_attr *xe_op_attr_find(int op, const char *name, size_t len)
{
    int n;
    const xe_op_attr *a = xe_op_attrs(op, &n);
    for (int k = 0; k < n; k++)
        if (strlen(a[k].name) == len && memcmp(a[k].name, name, len) == 0)
            return &a[k];
    return NULL;
}

const char *xe_attr_kind_what(xe_attr_kind k)
{
    switch (k) {
    case XE_ATTR_INT: return "an integer";
    case XE_ATTR_FLOAT: return "a number";
    case XE_ATTR_BOOL: return "true or false";
    case XE_ATTR_STRING: return "a \"string\"";
    case XE_ATTR_DTYPE: return "a dtype such as f32";
    default: return "a list";
    }
}

bool xe_op_attr_kind_ok(const xe_op_attr *t, const xe_attr *a)
{
    if (t->kind == XE_ATTR_INTS || t->kind == XE_ATTR_FLOATS)
        return true; /* a list: the shape function checks it */
    return a->kind == t->kind || (t->kind == XE_ATTR_FLOAT && a->kind == XE_ATTR_INT);
}

xe_code xe_op_check_attr_kinds(const xe_node *n, xe_status *st)
{
    for (int k = 0; k < n->n_attrs; k++) {
        const xe_attr *a = &n->attrs[k];
        const xe_op_attr *t = xe_op_attr_find(n->op, a->name, strlen(a->name));
        if (t && !xe_op_attr_kind_ok(t, a))
            return xe_fail(st, XE_ERR_GRAPH, "%s must be %s", t->name, xe_attr_kind_what(t->kind));
    }
    return XE_OK;
}

double xe_op_attr_value(const xe_node *n, const char *name)
{
    const xe_attr *a = xe_node_attr(n, name);
    if (a && (a->kind == XE_ATTR_INT || a->kind == XE_ATTR_BOOL))
        return (double)a->i;
    if (a && a->kind == XE_ATTR_FLOAT)
        return a->f;
    const xe_op_attr *t = xe_op_attr_find(n->op, name, strlen(name));
    return t ? t->dflt : 0.0;
}

int xe_op_float_attrs(const xe_node *n, double a[XE_MAX_OP_FLOATS])
{
    int n_rows, count = 0;
    const xe_op_attr *t = xe_op_attrs(n->op, &n_rows);
    for (int k = 0; k < n_rows && count < XE_MAX_OP_FLOATS; k++)
        if (t[k].kind == XE_ATTR_FLOAT)
            a[count++] = xe_op_attr_value(n, t[k].name);
    for (int k = count; k < XE_MAX_OP_FLOATS; k++)
        a[k] = 0.0;
    return count;
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
