/*
 * Private: the shape functions that ops.c puts into the op table and the
 * per-op kernels it names by id. Shape functions live in ir/infer/, CPU
 * kernels in devices/cpu/, GPU kernels in the .cu files of devices/cuda/
 * (built only when the CUDA toolkit is found). Each device's table lists
 * its kernels by xe_kernel_id; xe_op_kernel (op_kernel.c) reads them there.
 */
#ifndef XE_KERNELS_H
#define XE_KERNELS_H

#include "xlac/op.h"

/* Shape functions (infer/). */
xe_code xe_infer_source(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_iota(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_binary(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_compare(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                         xe_status *st);
xe_code xe_infer_logical(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                         xe_status *st);
xe_code xe_infer_unary(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_select(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_cast(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_reduce(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_argmax(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_reshape(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                         xe_status *st);
xe_code xe_infer_transpose(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                           xe_status *st);
xe_code xe_infer_broadcast_to(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                              xe_status *st);
xe_code xe_infer_concat(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_slice(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_matmul(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_softmax(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                         xe_status *st);
xe_code xe_infer_unique(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_det(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_bitcast(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                         xe_status *st);
xe_code xe_infer_nonzero(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                         xe_status *st);
xe_code xe_infer_random(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
/* neural-network ops (infer/nn.c) */
xe_code xe_infer_gather(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_tile(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_pad(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_conv2d(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_pool2d(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
/* recurrent (infer/recurrent.c) */
xe_code xe_infer_recurrent(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                           xe_status *st);
/* dynamic_quant_matmul (infer/quant_matmul.c) */
xe_code xe_infer_dynamic_quant_matmul(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                                      xe_status *st);
/* non_max_suppression (infer/nms.c) */
xe_code xe_infer_nms(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
/* grid_sample and deform_conv2d (infer/sample.c), roi_align and max_unpool (infer/roi.c) */
xe_code xe_infer_grid_sample(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                             xe_status *st);
xe_code xe_infer_deform_conv2d(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                               xe_status *st);
xe_code xe_infer_roi_align(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                           xe_status *st);
xe_code xe_infer_max_unpool(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                            xe_status *st);
/* quant_conv2d (infer/quant_conv.c) */
xe_code xe_infer_quant_conv2d(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                              xe_status *st);
/* quant_add (infer/quant_add.c) */
xe_code xe_infer_quant_add(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                           xe_status *st);
/* collectives (collective.c) */
xe_code xe_infer_collective(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                            xe_status *st);
/* Runs a collective node's engine call from in to out (host memory), mean included. */
xe_code xe_collective_run(const xe_kernel_args *a, const void *in, void *out, xe_status *st);
/* data /= size elementwise (integers: floor division): what mean adds to a sum. */
void xe_collective_mean(void *data, size_t count, xe_dtype dt, int size);

/* Per-op kernels: one list, expanded for each device prefix. */
#define XE_KERNEL_LIST(K)                                                                          \
    K(const)                                                                                       \
    K(iota)                                                                                        \
    K(binary)                                                                                      \
    K(compare)                                                                                     \
    K(logical)                                                                                     \
    K(unary)                                                                                       \
    K(select)                                                                                      \
    K(cast)                                                                                        \
    K(reduce)                                                                                      \
    K(argmax)                                                                                      \
    K(reshape)                                                                                     \
    K(transpose)                                                                                   \
    K(broadcast_to)                                                                                \
    K(concat)                                                                                      \
    K(slice)                                                                                       \
    K(matmul)                                                                                      \
    K(softmax)                                                                                     \
    K(random)                                                                                      \
    K(gather)                                                                                      \
    K(tile)                                                                                        \
    K(pad)                                                                                         \
    K(conv2d)                                                                                      \
    K(max_pool2d)                                                                                  \
    K(avg_pool2d)                                                                                  \
    K(all_reduce)                                                                                  \
    K(all_gather)                                                                                  \
    K(reduce_scatter)                                                                              \
    K(broadcast)

#define XE_DECLARE_CPU(k) xe_code xe_cpu_##k(const xe_kernel_args *a, xe_status *st);
#define XE_DECLARE_GPU(k) xe_code xe_gpu_##k(const xe_kernel_args *a, xe_status *st);
XE_KERNEL_LIST(XE_DECLARE_CPU)
XE_KERNEL_LIST(XE_DECLARE_GPU)
#undef XE_DECLARE_CPU
#undef XE_DECLARE_GPU
xe_code xe_cpu_unique(const xe_kernel_args *a, xe_status *st);    /* CPU only by design */
xe_code xe_cpu_nonzero(const xe_kernel_args *a, xe_status *st);   /* CPU only by design */
xe_code xe_cpu_bitcast(const xe_kernel_args *a, xe_status *st);   /* CPU only by design */
xe_code xe_cpu_det(const xe_kernel_args *a, xe_status *st);       /* CPU only by design */
xe_code xe_cpu_recurrent(const xe_kernel_args *a, xe_status *st); /* CPU only (oneDNN's RNN) */
xe_code xe_cpu_dynamic_quant_matmul(const xe_kernel_args *a, xe_status *st); /* CPU only */
xe_code xe_cpu_quant_conv2d(const xe_kernel_args *a, xe_status *st);         /* CPU only */
xe_code xe_cpu_quant_add(const xe_kernel_args *a, xe_status *st);            /* CPU only */
xe_code xe_cpu_nms(const xe_kernel_args *a, xe_status *st);           /* CPU only by design */
xe_code xe_cpu_grid_sample(const xe_kernel_args *a, xe_status *st);   /* CPU only */
xe_code xe_cpu_deform_conv2d(const xe_kernel_args *a, xe_status *st); /* CPU only */
xe_code xe_cpu_roi_align(const xe_kernel_args *a, xe_status *st);     /* CPU only */
xe_code xe_cpu_max_unpool(const xe_kernel_args *a, xe_status *st);    /* CPU only */

/* A per-op kernel's place in a device's kernel table (xe_device_ops.kernels). */
typedef enum xe_kernel_id {
#define XE_KERNEL_ID(k) XE_KERNEL_##k,
    XE_KERNEL_LIST(XE_KERNEL_ID)
#undef XE_KERNEL_ID
        XE_KERNEL_unique,           /* CPU only by design */
    XE_KERNEL_nonzero,              /* CPU only by design */
    XE_KERNEL_bitcast,              /* CPU only by design: a copy of the bytes */
    XE_KERNEL_det,                  /* CPU only by design: LU per matrix, in f64 */
    XE_KERNEL_recurrent,            /* CPU only: oneDNN's RNN primitive, or a loop */
    XE_KERNEL_dynamic_quant_matmul, /* CPU only: quantize in one pass, the int8 product, rescale */
    XE_KERNEL_quant_conv2d,         /* CPU only: oneDNN's int8 convolution, or an exact loop */
    XE_KERNEL_quant_add,            /* CPU only: dequantize, add, quantize in one pass */
    XE_KERNEL_nms,                  /* CPU only by design: a sort and a greedy pass per class */
    XE_KERNEL_grid_sample,          /* CPU only: a loop over the sampled points */
    XE_KERNEL_deform_conv2d,        /* CPU only: sampled columns times the weights */
    XE_KERNEL_roi_align,            /* CPU only: a loop over the regions' bins */
    XE_KERNEL_max_unpool,           /* CPU only: a scatter into zeros */
    XE_KERNEL_COUNT,
    XE_KERNEL_NONE = -1 /* the op has no per-op kernel */
} xe_kernel_id;

/* The kernel id of op table entry d (ops.c): XE_KERNEL_NONE for a built-in op without a per-op
   kernel, XE_KERNEL_COUNT for a registered op (whose kernels are its own d->kernel[]). */
xe_kernel_id xe_op_kernel_id(const xe_op_def *d);

/* A built-in op's row of ops.def (op_rows.c). */
typedef struct xe_op_row {
    const char *name;
    int min_in, max_in;
    xe_op_class cls;
    unsigned flags;
} xe_op_row;
/* Built-in op op's row; past the built-in ops a row named "?" with no flags. The shape functions
   and kernels of built-in ops read their op's name and flags here, below the registry. */
const xe_op_row *xe_op_row_of(int op);

#endif
