/*
 * Private to codegen/: the fusion plan of one cluster at concrete input
 * types. Every body node gets its concrete type; nodes whose values must
 * live in memory (inputs, constants that are not scalars, body outputs,
 * reductions, softmax, matmul, values with several uses) are
 * "materialized" and get a buffer; all others are computed inline, in
 * registers, by the kernels that read them. The plan is a list of steps:
 * fused loop kernels (one or several outputs of one shape), reduction
 * kernels (row or column order), softmax row kernels, and library calls
 * (matmul through BLAS).
 */
#ifndef XG_PLAN_H
#define XG_PLAN_H

#include "xg.h"

#define XG_MAX_OUTS 16
#define XG_MAX_INLINE                                                                              \
    32 /* ops in an inline chain before a value gets a buffer (bounds recursion) */

/*
 * How a GPU target covers a step with blocks of threads: a data slot of its
 * backend (xg_backend.geometry; codegen/targets/cuda/geometry.h holds the
 * CUDA target's numbers and what they mean). NULL for a target that runs
 * steps on host threads.
 */
typedef struct xg_geometry {
    int threads;        /* threads in a block */
    int split_blocks;   /* a reduction to one value is split over at most this many blocks */
    int col_tile;       /* a column reduction's outputs per tile (a block each) */
    int col_split_max;  /* blocks of a reduction whose rows are split into chunks, at most */
    int col_min_rows;   /* rows of a column chunk, at least */
    int row_min_chunk;  /* elements of a row-order chunk, at least */
    int argmax_block_k; /* argmax: a block per output over rows of at least this many elements */
} xg_geometry;

typedef enum xg_step_kind {
    XG_STEP_LOOP, /* elementwise and shape ops fused into one loop; several outputs of one shape */
    XG_STEP_REDUCE,  /* reduce_* or argmax, its producers computed inline */
    XG_STEP_SOFTMAX, /* softmax along one axis, one row at a time */
    XG_STEP_LIBRARY, /* matmul: a BLAS call */
    XG_STEP_ROW,     /* row reductions and what they feed, one row at a time, in phases */
} xg_step_kind;

/* What a ROW step does with each output. */
typedef enum xg_row_role {
    XG_ROW_LOOP,   /* a value of the row shape, computed inside a phase's loop over the row */
    XG_ROW_REDUCE, /* a reduction over the row, accumulated in a phase's loop, finished after it */
    XG_ROW_SCALAR, /* a value of the reduced shape (one per row), computed after a phase's loop */
} xg_row_role;

typedef struct xg_step {
    xg_step_kind kind;
    int n_outs;
    int outs[XG_MAX_OUTS]; /* body node indices this step writes */
    bool column;           /* REDUCE: reduced dims outside the kept ones (accumulate rows) */
    /* ROW: x is a value of the row shape (O rows of K, the reduced dims last); outs[k]
       has role[k] and is computed in phase[k]; a phase is one loop over the row. */
    int x;
    int n_phases;
    xg_row_role role[XG_MAX_OUTS];
    int phase[XG_MAX_OUTS];
    /* LOOP, ROW, SOFTMAX: runs on the rows of the matmul (LIBRARY step) before it, with the other
       such steps, a range of rows per thread (epilogue.c); backends without run_rows ignore it. */
    bool panel;
    /* LIBRARY (Q·Kᵀ): with its panel steps and the product after them, one fused attention
       (attention.c); backends without an attention slot ignore it. */
    bool attention;
} xg_step;

typedef struct xg_plan {
    const xe_graph *body;
    xe_type *types; /* concrete type of each body node */
    bool *mat;      /* materialized: has a buffer */
    int *uses;      /* consumers of each node (body outputs count) */
    int n_steps;
    xg_step *steps;
    bool generic; /* sizes read from S[] instead of literals */
    int *soff;    /* offset of each node's dims in S[] */
    int n_sizes;
    bool *chained; /* a rank-4 value kept in the engine's conv layout between convs (layout.c) */
} xg_plan;

/* values.c: the kind of step node n makes (loop, reduce, softmax, library). */
xg_step_kind xg_step_kind_of(const xe_node *n);
/* The node matmul node reads as input k, through a transpose of its last two dims (then *flip). */
int xg_matmul_operand(const xe_graph *b, const xe_type *types, int node, int k, bool *flip);
/*
 * Calls visit(ctx, buf) for each buffer that computing node reads: the
 * materialized values reached through its inline producers, and for a
 * matmul the source of a transposed operand it reads through the BLAS flag
 * (xg_matmul_operand), even where the transpose has a buffer of its own.
 * A buffer may be visited more than once.
 */
void xg_value_reads(const xg_plan *p, int node, void (*visit)(void *ctx, int buf), void *ctx);
/* Runs LIBRARY step node (a matmul) with dev's kernel on the plan's buffers, transposes read
 * through as flags. */
xe_code xg_run_matmul(const xg_plan *plan, xe_device dev, int node, xe_tensor **bufs,
                      xe_status *st);

/* Whether every read of node happens inside a step (the nodes marked in inside[], and what they
 * compute inline). */
bool xg_read_only_inside(const xg_plan *p, int node, const bool *inside);
/*
 * locals.c: inline ops under node i (0 when it has a buffer), from the depths of the nodes before
 * it (nodes come in topological order); what XG_MAX_INLINE bounds.
 */
int xg_inline_depth(const xg_plan *p, int i, const int *depth);
/* locals.c: drops the buffers of loop values that only their own multi-output loop reads. */
xe_code xg_plan_locals(xg_plan *p, xe_status *st);

/* epilogue.c: marks the steps that run on the rows of the matmul before them, a range per thread.
 */
xe_code xg_plan_panels(xg_plan *p, xe_status *st);
/* The matmul node whose panels step i runs on, or -1 when it is no panel step. */
int xg_panel_matmul(const xg_plan *p, int i);
/* Rows of node m's value (every dim but the last, flat): what a panel's r0, r1 count. */
int64_t xg_panel_rows(const xe_type *types, int m);
/* A panel step whose value no longer has its matmul's shape at these types (shape-generic calls):
 * the node, or -1. */
int xg_panel_mismatch(const xg_plan *p, int i, const xe_type *types);

/* attention.c: marks the matmul steps that start a fused attention (xg_step.attention). */
xe_code xg_plan_attention(xg_plan *p, xe_status *st);
/* The step of the ·V product of the fused attention step i starts, or -1. */
int xg_attention_product(const xg_plan *p, int i);
/* The step that starts the fused attention step j is a panel step or the product of, or -1. */
int xg_attention_start(const xg_plan *p, int j);
/* At these types, a node that breaks the shapes the attention group at step i relies on, or -1. */
int xg_attention_mismatch(const xg_plan *p, int i, const xe_type *types);

/* The activation of a BLAS epilogue (cuBLASLt's). */
typedef enum xg_epi_act {
    XG_EPI_NONE, /* the bias alone */
    XG_EPI_RELU, /* relu */
    XG_EPI_GELU, /* gelu(approximate=true): cuBLASLt's GELU is the tanh form */
} xg_epi_act;

/* A matmul whose next step is act(product + bias) only: one cuBLASLt call with an epilogue. */
typedef struct xg_blas_epi {
    int matmul, out; /* the product (read by nothing else) and the epilogue's one output */
    int bias;        /* a buffer of shape [N] or [1, N], or -1 */
    xg_epi_act act;
} xg_blas_epi;

/* Whether LIBRARY step i and the panel step after it are one f32 2-D matmul with a BLAS epilogue.
 */
bool xg_blas_epilogue(const xg_plan *p, int i, xg_blas_epi *e);

/* The activation of a conv epilogue (oneDNN's eltwise post-op). */
typedef enum xg_conv_act {
    XG_CONV_NONE,      /* the residual alone */
    XG_CONV_GELU,      /* gelu, the erf form */
    XG_CONV_GELU_TANH, /* gelu(approximate=true) */
    XG_CONV_SIGMOID,   /* sigmoid */
    XG_CONV_SILU,      /* mul(v, sigmoid(v)) */
    XG_CONV_HARDSWISH, /* mul(v, hard_sigmoid(v, alpha=1/6, beta=1/2)) */
} xg_conv_act;

/* A conv whose next step is act(conv), conv + residual or act(conv + residual) only (act: GELU,
   sigmoid, SiLU, HardSwish; never ReLU or Clip, whose oneDNN forms lose NaN). */
typedef struct xg_conv_epi {
    int conv, out; /* the conv (read by nothing else) and the step's one output, of its shape */
    int residual;  /* a buffer of the conv's shape and dtype summed in, or -1 */
    xg_conv_act act;
    bool src_chained, dst_chained; /* the conv's input, and out (and residual), are chained */
} xg_conv_epi;

/* lifetime.c: the input of step i's one output when the step only copies that materialized value
   into a reshape of it (a plain loop step, not a matmul's panel or inside an attention), else
   -1. On a host such a step does not run: its buffer is a view of the input's. */
int xg_step_view_source(const xg_plan *plan, int i);

/* Whether LIBRARY step i is an f32 conv2d whose next step the library can apply as post-ops. */
bool xg_conv_epilogue(const xg_plan *p, int i, xg_conv_epi *e);
/* Whether LIBRARY step i is a conv2d that reads or writes a chained value: e, the conv alone. */
bool xg_conv_layout(const xg_plan *p, int i, xg_conv_epi *e);

/* The channel counts a chained value may have: multiples of this, so that the engine's blocked
   layout (nChw8c, executor/devices/cpu/dnnl_engine.h) holds it without padding. */
#define XG_CHAIN_CHANNELS 8

/* layout.c: which rank-4 values stay in the engine's conv layout between the convs of the
   cluster (p->chained). */
void xg_plan_layouts(xg_plan *p);

/* Concrete types of every body node for the given input types. */
xe_code xg_body_types(const xe_graph *body, const xe_type *in_types, xe_type *types, xe_status *st);

xe_code xg_plan_build(const xe_graph *body, const xe_type *in_types, bool generic, xg_plan **out,
                      xe_status *st);
void xg_plan_destroy(xg_plan *p);
/* The plan's invariants (buffers written once, in order; one shape per loop); run by xg_plan_build.
 */
xe_code xg_plan_verify(const xg_plan *p, xe_status *st);
/* Fills S[] (n_sizes entries) from the plan's types. */
void xg_plan_sizes(const xg_plan *p, int64_t *S);
/* "kernel xg_k0: loop f32[4096,2048] -> t1, s (ops: mul add)" lines; malloc'd. */
char *xg_plan_text(const xg_plan *p, xg_target target);
/* Reduced-axes mask of a reduction or argmax node whose input has the given rank. */
void xg_reduce_mask(const xe_node *n, int rank, bool *mask);
/* Whether step i is a reduction to one value, split over blocks on the GPU (at the given types). */
bool xg_step_is_split(const xg_plan *p, int i, const xe_type *types);
/*
 * How a target covers step i at the plan's types: items of work (elements,
 * outputs, rows, or, with a GPU geometry g, column tiles) and whether each
 * item gets a block (cooperative reductions) rather than a thread. g NULL:
 * host threads (no tiles, no blocks).
 */
int64_t xg_step_items(const xg_plan *p, int i, const xe_type *types, const xg_geometry *g,
                      bool *block_per_item);
/*
 * GPU, a reduction (step i) to fewer block items (column tiles, or
 * outputs in row order) than max_blocks blocks fill: the chunks each
 * item's reduced range is split into (1: not split). The kernel reads it
 * back from the grid: chunks = gridDim.x / items.
 */
int64_t xg_step_chunks(const xg_plan *p, int i, const xe_type *types, const xg_geometry *g,
                       int64_t max_blocks);
/*
 * GPU: the blocks (of g->threads threads) step i is launched with at the
 * given types, on a device that holds max_blocks of them at once; 0:
 * nothing to launch.
 */
int64_t xg_launch_blocks(const xg_plan *p, int i, const xe_type *types, const xg_geometry *g,
                         int64_t max_blocks);
/*
 * GPU: the bytes of a kernel's argument block (struct xg_args: the buffer
 * pointers, the sizes, the workspace), written to args (cap bytes); 0 when
 * it does not fit. With args NULL, only the size.
 */
size_t xg_pack_args(const xg_plan *p, void *const *ptrs, const int64_t *S, void *workspace,
                    char *args, size_t cap);
/*
 * GPU: whether the kernels take their argument block through a device
 * pointer (const xg_args *) rather than by value: a cluster whose block
 * exceeds XG_ARGS_BY_VALUE bytes (kernel parameters are 4 KiB at most
 * before CUDA 12.1; a block grows by 8 bytes a node and 8 a size).
 */
#define XG_ARGS_BY_VALUE 4000
bool xg_args_in_memory(const xg_plan *p);
/*
 * The shapes step i relies on, at the types of one call (a shape-generic
 * program is called at others than it was planned at): the outputs of a
 * multi-output loop share one shape; a row kernel's values have the row
 * shape or the reduced one. Returns the first node that breaks them, or -1.
 */
int xg_step_shape_mismatch(const xg_plan *p, int i, const xe_type *types);
/* The items of a step as text: a count, or ? in a shape-generic plan ("4096 rows", "? rows"). */
void xg_items_text(const xg_plan *p, int64_t items, const char *unit, char *buf, size_t len);
/* Kernel name of step i ("xg_k3"). */
void xg_step_name(int i, char *buf, size_t len);

/* Emits the whole program for the plan: C11 + OpenMP or CUDA C++. malloc'd. */
char *xg_emit_program(const xg_plan *p, xg_target target, xe_status *st);
struct xg_shares;
/* The same, each kernel that is an earlier one's on other buffers left out and listed in shares
   (share.h), which the caller frees. */
char *xg_emit_program_shared(const xg_plan *p, xg_target target, struct xg_shares *shares,
                             xe_status *st);

#endif
