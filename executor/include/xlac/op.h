/*
 * The op registry. Built-in ops come from ops.def; a plugin adds more at
 * run time with xe_register_op (see plugin.h). An op is described by an
 * xe_op_def: arity, class, flags, a shape function and a kernel per device.
 */
#ifndef XLAC_OP_H
#define XLAC_OP_H

#include <stdint.h>

#include "xlac/graph.h"
#include "xlac/status.h"
#include "xlac/tensor.h"

typedef enum xe_op {
#define X(ENUM, name, min_in, max_in, cls, flags) XE_OP_##ENUM,
#include "xlac/ops.def"
#undef X
    XE_OP_COUNT
} xe_op;

typedef enum xe_op_class {
    XE_CLASS_SOURCE,    /* no inputs: input, const, iota */
    XE_CLASS_STRUCTURE, /* get: picks a tuple element */
    XE_CLASS_BINARY,    /* same-dtype arithmetic with broadcasting */
    XE_CLASS_COMPARE,   /* same-dtype comparison to bool, with broadcasting */
    XE_CLASS_LOGICAL,   /* bool operands, bool result, with broadcasting */
    XE_CLASS_UNARY,     /* elementwise, one operand */
    XE_CLASS_SELECT,    /* select(cond, a, b), broadcasting all three */
    XE_CLASS_CAST,      /* cast(x, to=DTYPE) */
    XE_CLASS_REDUCE,    /* reduce_*(axes=[..], keepdims=false) */
    XE_CLASS_ARGMAX,    /* argmax(axis=.., keepdims=false) -> i64 */
    XE_CLASS_SHAPE,     /* reshape transpose broadcast_to concat slice */
    XE_CLASS_MATMUL,    /* batched matmul */
    XE_CLASS_SOFTMAX,   /* softmax(axis=-1) */
    XE_CLASS_UNIQUE, /* data-dependent length: unique's sorted distinct values, nonzero's positions
                      */
    XE_CLASS_RANDOM, /* random_normal / random_uniform */
    XE_CLASS_COMPOSITE,  /* a node with a body graph (registered ops only) */
    XE_CLASS_NN,         /* gather tile pad conv2d max_pool2d avg_pool2d: no code generator */
    XE_CLASS_COLLECTIVE, /* all_reduce all_gather reduce_scatter broadcast: across ranks */
} xe_op_class;

enum xe_op_flags {
    XE_OPF_FLOAT_ONLY = 1 << 0,           /* operand must be f16/f32/f64 */
    XE_OPF_BOOL_ONLY = 1 << 1,            /* operand must be bool */
    XE_OPF_DATA_DEPENDENT_SHAPE = 1 << 2, /* output shape known only after running */
    XE_OPF_CPU_ONLY = 1 << 3,             /* no GPU kernel by design */
    XE_OPF_STATEFUL = 1 << 4,             /* output differs run to run */
    XE_OPF_COSTLY = 1 << 5,               /* worth a store and a load to compute once (fusion) */
    XE_OPF_COLLECTIVE = 1 << 6,           /* talks to the other ranks: never clustered */
    XE_OPF_SCALAR_CALL =
        1 << 7, /* f32 math is a libm call no compiler vectorizes: a loop of its own */
    XE_OPF_KERNEL_CACHE = 1 << 8, /* its CPU kernel keeps a per-node cache (xe_kernel_args.cache) */
    XE_OPF_INT_ONLY = 1 << 9,     /* operands must be integers (i32 i64 and the narrow ones) */
    XE_OPF_VIEW = 1 << 10, /* the output is its first input's bytes under another shape: run op by
                              op on a host device, it views them (xe_tensor_alias), no copy */
};

/* An expression column of ops.def that the op does not define on that type. */
#define XE_NA 0

/* Most float attributes an elementwise op's expressions use (a0, a1, ...). */
#define XE_MAX_OP_FLOATS 4

/* One attribute a built-in op accepts (attrs.def). */
typedef struct xe_op_attr {
    const char *name;
    xe_attr_kind kind;
    double dflt; /* numbers and bools; lists and dtypes have none */
} xe_op_attr;

/*
 * What a kernel keeps from one run of a node to the next (a compute
 * library's primitive, constant weights in the library's layout): data
 * and the function that frees it, both set by the kernel. The session or
 * compiled program that runs the node owns the slot and calls free(data)
 * when it ends.
 */
typedef struct xe_kernel_cache {
    void *data;
    void (*free)(void *data);
} xe_kernel_cache;

/* Everything a kernel gets. */
typedef struct xe_kernel_args {
    const xe_graph *graph; /* the graph that holds node (for messages) */
    const xe_node *node;   /* attributes, name, static type */
    int n_in;
    xe_tensor *const *in;   /* inputs, already on the node's device */
    xe_tensor *out;         /* allocated with the inferred shape; NULL for
                               XE_OPF_DATA_DEPENDENT_SHAPE ops, which set *out_ret */
    xe_tensor **out_ret;    /* where data-dependent ops store their new output */
    uint64_t *state;        /* per-node state that survives runs (RNG counter) */
    struct xe_exec *exec;   /* the running session, for composite ops */
    void *op_user;          /* the op definition's user data (xe_op_def.user) */
    xe_kernel_cache *cache; /* XE_OPF_KERNEL_CACHE ops: the node's slot; NULL: nothing kept */
} xe_kernel_args;

typedef xe_code (*xe_kernel_fn)(const xe_kernel_args *a, xe_status *st);

/*
 * Shape function: from input types (unknown dims allowed) and the node's
 * attributes, the output type. The message names no node: the caller
 * prefixes file:line:col and the node.
 */
typedef xe_code (*xe_infer_fn)(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                               xe_status *st);

/*
 * Composite kernel: runs a node with a body graph; outputs are one tensor
 * per tuple element, on the node's device.
 */
typedef xe_code (*xe_composite_fn)(const xe_kernel_args *a, xe_tensor **outs, int n_outs,
                                   xe_status *st);

typedef struct xe_op_def {
    const char *name;
    int min_inputs, max_inputs; /* max -1: any number */
    xe_op_class cls;
    unsigned flags;                  /* xe_op_flags */
    xe_infer_fn infer;               /* NULL for composite ops */
    xe_kernel_fn kernel[XE_DEV_MAX]; /* a registered op's kernels by device instance, NULL where it
                                        has none on a device; a built-in op's live in the device
                                        tables alone: read an op's kernel with xe_op_kernel */
    xe_composite_fn composite;       /* composite ops; NULL runs the body op by op */
    const char *device_prefix;       /* composite ops: "XLA_" in placement logs */
    void *user;                      /* a plugin's state for its kernels: xe_kernel_args.op_user */
} xe_op_def;

/*
 * fn(ctx, r0, r1) over rows [0, rows) of width cols (flat over every dim
 * but the last: batch element b's row m is b*M + m), cut into one range
 * per thread of the calling thread's OpenMP team (one range when there are
 * fewer than 32768 elements in all): a compiled cluster's epilogue over a
 * product that the engine computed whole.
 */
typedef void (*xe_panel_fn)(void *ctx, int64_t r0, int64_t r1);
void xe_cpu_rows(int64_t rows, int64_t cols, xe_panel_fn fn, void *ctx);
/*
 * The same for ranges that each make library calls of their own on their
 * thread alone (xe_cpu_sgemm): one range per thread, each of at least
 * min_part rows, so that a small problem is not cut finer than a block.
 */
void xe_cpu_row_blocks(int64_t rows, int64_t min_part, xe_panel_fn fn, void *ctx);
/* The flat index of the batch element of an operand with batch dims opb that batch element flat of
   a product with batch dims outb reads (dims broadcast as numpy's matmul does). */
int64_t xe_matmul_batch_index(const xe_shape *opb, const xe_shape *outb, int64_t flat);
/* c = op(a)·op(b), m×k times k×n, row-major f32 (op: a transpose where asked), on the calling
   thread alone (OpenBLAS, one thread): a caller's own blocks of a product
   (executor/devices/cpu/matmul.c says why). */
void xe_cpu_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                  const float *b, int64_t ldb, float *c, int64_t ldc);

/* transpose's permutation of a node (default: reversed axes), validated. */
xe_code xe_transpose_perm(const xe_node *n, int rank, int *perm, xe_status *st);
/* slice's bounds along one dim of size n, Python semantics: [*b, *e). */
void xe_slice_bounds(int64_t begin, int64_t end, int64_t n, int64_t *b, int64_t *e);

/* Definition of an op id; NULL if out of range. */
const xe_op_def *xe_op_get(int op);
/* d's kernel on dev, NULL where it has none: a built-in op's entry in dev's table, a registered
   op's d->kernel[dev]. A device built as a library of its own (libxlac_cuda.so) is loaded first. */
xe_kernel_fn xe_op_kernel(const xe_op_def *d, xe_device dev);
/* Id of an op by name, -1 if unknown. */
int xe_op_find(const char *name, size_t len);
const char *xe_op_name(int op);
/* Number of registered ops (built-in plus plugin ones). */
int xe_op_count(void);

/* Whether an op computes each output element from the same element of its
   operands: binary, compare, logical, unary, select and cast. */
bool xe_op_is_elementwise(int op);
/* Whether n's op has an XV row in ops.def whose bool attribute n sets. */
bool xe_op_variant(const xe_node *n);
/* NULL when op may take operands in[0..n_in) and give out (narrow dtypes:
   xlac/dtype.h), else why not: the narrow types go through data movement,
   casts, comparisons, select and elementwise arithmetic only. */
const char *xe_op_narrow_reason(int op, const xe_type *in, int n_in, const xe_type *out);
/* The attributes a built-in op accepts, in attrs.def order, and their count
   in *n; NULL for ops that accept anything (plugin ops, call). */
const xe_op_attr *xe_op_attrs(int op, int *n);
/* The row of attribute name of op; NULL if op does not take it. */
const xe_op_attr *xe_op_attr_find(int op, const char *name, size_t len);
/* What a value of kind k looks like, for messages ("true or false"). */
const char *xe_attr_kind_what(xe_attr_kind k);
/* Whether attribute a has the kind of row t (an integer passes for a float;
   lists pass: the shape functions check them). */
bool xe_op_attr_kind_ok(const xe_op_attr *t, const xe_attr *a);
/* Checks that every attribute of n that the table knows has the table's kind
   (an integer passes for a float); the message names the attribute. */
xe_code xe_op_check_attr_kinds(const xe_node *n, xe_status *st);
/* n's attribute `name` as a number (int, float or bool), else its table default. */
double xe_op_attr_value(const xe_node *n, const char *name);
/* The values of n's float attributes (a0, a1, ... of ops.def), defaults
   for absent ones; returns their count. */
int xe_op_float_attrs(const xe_node *n, double a[XE_MAX_OP_FLOATS]);

#endif
