/*
 * The op registry: the built-in table expanded from ops.def, plus the ops
 * that plugins register at run time. Each built-in op's shape function and
 * kernels are chosen from its class (and, for shape ops, its name) here,
 * in one place. The attribute table (attrs.def) is read here too.
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
    case XE_OP_ALL_REDUCE: *d = (xe_op_def){.infer = xe_infer_collective, KERNELS(all_reduce)}; return;
    case XE_OP_ALL_GATHER: *d = (xe_op_def){.infer = xe_infer_collective, KERNELS(all_gather)}; return;
    case XE_OP_REDUCE_SCATTER:
        *d = (xe_op_def){.infer = xe_infer_collective, KERNELS(reduce_scatter)};
        return;
    case XE_OP_BROADCAST: *d = (xe_op_def){.infer = xe_infer_collective, KERNELS(broadcast)}; return;
    case XE_OP_UNIQUE:
        *d = (xe_op_def){.infer = xe_infer_unique, .kernel = {[XE_DEV_CPU] = xe_cpu_unique}};
        return;
    case XE_OP_NONZERO:
        *d = (xe_op_def){.infer = xe_infer_nonzero, .kernel = {[XE_DEV_CPU] = xe_cpu_nonzero}};
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
