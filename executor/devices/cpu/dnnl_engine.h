/*
 * Private: the CPU compute engine, oneDNN (libdnnl, OpenMP runtime), as the
 * per-op kernels of convolutions and f32 products use it. One engine per
 * process, one stream per thread, a scratch buffer per thread for
 * activations in the engine's blocked layout, and the two things every
 * primitive needs: a reorder between two layouts and a status turned into
 * the executor's message.
 *
 * oneDNN runs its loops on the calling thread's OpenMP team
 * (omp_get_max_threads() at execution), the same team the executor's own
 * kernels and the generated OpenMP loops use: one pool, one count.
 */
#ifndef XE_DNNL_ENGINE_H
#define XE_DNNL_ENGINE_H

#include <dnnl.h>
#include <stddef.h>

#include "xlac/op.h"

/* The process's CPU engine (created on first use); NULL when oneDNN cannot make one. */
dnnl_engine_t xe_dnnl_engine(void);
/* The calling thread's stream on that engine; NULL on failure. */
dnnl_stream_t xe_dnnl_stream(void);

/* XE_OK for dnnl_success, else a failure naming node n and what was tried. */
xe_code xe_dnnl_check(dnnl_status_t s, const xe_node *n, const char *what, xe_status *st);

/* Scratch slots of a thread (one per activation an op converts at a time). */
enum {
    XE_DNNL_SCRATCH_SRC,
    XE_DNNL_SCRATCH_DST,
    XE_DNNL_SCRATCH_WEIGHTS,
    XE_DNNL_SCRATCH_PRODUCT, /* a split int8 product's [A L | A H] (dnnl_matmul.c) */
    XE_DNNL_SCRATCH_COUNT
};
/* The calling thread's scratch buffer `slot`, at least bytes long, 64-byte aligned; NULL on OOM. */
void *xe_dnnl_scratch(int slot, size_t bytes);

/*
 * A reorder primitive from layout `from` to layout `to` (NULL when they are
 * the same layout: nothing to convert), in *r.
 */
xe_code xe_dnnl_reorder_make(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                             dnnl_primitive_t *r, const xe_node *n, xe_status *st);
/* Runs reorder r from src (layout from) into dst (layout to). */
xe_code xe_dnnl_reorder_run(dnnl_primitive_t r, const dnnl_memory_desc_t *from, const void *src,
                            const dnnl_memory_desc_t *to, void *dst, const xe_node *n,
                            xe_status *st);

/* One argument of a primitive: its index (DNNL_ARG_*), layout and data. */
typedef struct xe_dnnl_arg {
    int arg;
    const dnnl_memory_desc_t *md;
    const void *data;
} xe_dnnl_arg;
/* Executes primitive p with n_args arguments, memory objects wrapped around the callers' data. */
xe_code xe_dnnl_execute(dnnl_primitive_t p, const xe_dnnl_arg *args, int n_args, const xe_node *n,
                        xe_status *st);

/* A primitive of descriptor desc (attr may be NULL) and its descriptor, in *prim and *pd. */
xe_code xe_dnnl_primitive(const_dnnl_op_desc_t desc, const_dnnl_primitive_attr_t attr,
                          dnnl_primitive_t *prim, dnnl_primitive_desc_t *pd, const xe_node *n,
                          xe_status *st);

/*
 * A node's kept primitives: its kernel cache slot holds a shelf of up to
 * XE_DNNL_SHELF entries, one per shape it ran at, each made once and never
 * changed or freed until the slot is (so several threads may execute an
 * entry at once: programs are shared between sessions). Finding or adding
 * an entry holds one process-wide lock; executing does not.
 */
#define XE_DNNL_SHELF 8
typedef struct xe_dnnl_shelf {
    void *entry[XE_DNNL_SHELF];
    int n;
    void (*free_entry)(void *entry);
} xe_dnnl_shelf;
/* Takes the lock and returns slot's shelf (made on first use); NULL (lock released) on OOM. */
xe_dnnl_shelf *xe_dnnl_shelf_lock(xe_kernel_cache *slot, void (*free_entry)(void *entry));
void xe_dnnl_shelf_unlock(void);
/* Adds entry to a locked shelf; false when it is full (the caller frees entry after its run). */
bool xe_dnnl_shelf_add(xe_dnnl_shelf *s, void *entry);

/* Whether input k of the kernel's node is a constant of its graph (model weights: never change). */
bool xe_dnnl_input_is_const(const xe_kernel_args *a, int k);

/* Per-op kernels on the engine (f32). dnnl_conv.c, dnnl_matmul.c. */
xe_code xe_dnnl_conv2d(const xe_kernel_args *a, xe_status *st);
/*
 * What a conv can do to its output in the same primitive call (oneDNN
 * post-ops): the sum first, then at most one activation. Each keeps NaN as
 * the executor's ops do; oneDNN 2.6's relu and clip do not (a vector max
 * turns NaN into 0), so they are not offered.
 */
enum {
    XE_DNNL_POST_SUM = 1 << 0,       /* out = conv + residual (a tensor of the output's shape) */
    XE_DNNL_POST_GELU = 1 << 1,      /* out = gelu(out), the erf form */
    XE_DNNL_POST_GELU_TANH = 1 << 2, /* out = gelu(out), the tanh form */
    XE_DNNL_POST_SIGMOID = 1 << 3,   /* out = sigmoid(out) */
    XE_DNNL_POST_SILU = 1 << 4,      /* out = out * sigmoid(out) (swish, beta 1) */
    XE_DNNL_POST_HARDSWISH = 1 << 5, /* out = out * min(max(out / 6 + 1/2, 0), 1) */
    /* Layouts, not post-ops: the input (SRC) or the output and residual (DST), typed [N, C, H, W],
       are in the chain layout (xe_dnnl_chain_layout) in memory: a compiled cluster's chain of
       convs (codegen/plan/layout.c). */
    XE_DNNL_SRC_CHAIN = 1 << 6,
    XE_DNNL_DST_CHAIN = 1 << 7,
    XE_DNNL_LAYOUTS = XE_DNNL_SRC_CHAIN | XE_DNNL_DST_CHAIN,
};
/*
 * The layout of the values a chain of convs hands on, the one oneDNN 2.6's f32 convolutions work
 * in here, so that they read and write them in place: channels-last (nhwc) where the effective
 * ISA has AVX-512, blocks of 8 channels (nChw8c, C a multiple of 8) below it, where the jit:avx2
 * kernels picked nChw8c and every conv of a chain paid two reorders (0.1-0.6 ms each at batch 8
 * of a ResNet). xe_dnnl_chain_layout_set fixes it for the tests (dnnl_nhwc or dnnl_nChw8c;
 * dnnl_format_tag_undef: back to the ISA's choice) before any chained conv is made.
 */
dnnl_format_tag_t xe_dnnl_chain_layout(void);
void xe_dnnl_chain_layout_set(dnnl_format_tag_t tag);
/* conv2d (f32) with post-ops post (residual: the tensor summed in, NULL without SUM) into a->out;
   XE_ERR_UNSUPPORTED for what the engine cannot run (the caller runs the steps separately). */
xe_code xe_dnnl_conv2d_post(const xe_kernel_args *a, const xe_tensor *residual, unsigned post,
                            xe_status *st);
xe_code xe_dnnl_matmul(const xe_kernel_args *a, xe_status *st);
/* Whether oneDNN's int8 products and convolutions are exact here: its effective ISA has VNNI
   (AVX-512 or AVX2). Without it they sum pairs of u8 x s8 products in saturating int16. */
bool xe_dnnl_int8_exact(void);
/* quant_conv2d's quantization (infer/quant_conv.c): y[m] = scale[m] * acc + bias[m], quantized
   with y_scale and y_zero unless y_dt is f32. */
typedef struct xe_dnnl_quant {
    xe_dtype x_dt;      /* XE_U8 or XE_I8 */
    int32_t x_zero;     /* x's zero point */
    const float *scale; /* [M] */
    const float *bias;  /* [M]; NULL: none */
    xe_dtype y_dt;      /* XE_F32, XE_U8 or XE_I8 */
    float y_scale;      /* 1 for f32 */
    int32_t y_zero;
} xe_dnnl_quant;
/* quant_conv2d of window p (the caller's xe_window_read) on oneDNN's int8 convolution
   (dnnl_conv.c); XE_ERR_UNSUPPORTED where the engine cannot run it exactly (no VNNI) or at all:
   the caller runs its loop. */
struct xe_window;
xe_code xe_dnnl_quant_conv2d(const xe_kernel_args *a, const struct xe_window *p,
                             const xe_dnnl_quant *q, xe_status *st);
/* recurrent (f32, attributes r: recurrent.h) on oneDNN's RNN primitives (dnnl_recurrent.c);
   XE_ERR_UNSUPPORTED for what the engine cannot run. */
struct xe_recurrent;
xe_code xe_dnnl_recurrent(const xe_kernel_args *a, const struct xe_recurrent *r, xe_status *st);

#endif
