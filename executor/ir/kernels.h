/*
 * Private: the shape functions and per-op kernels that ops.c puts into the
 * op table. Shape functions live in infer/, CPU kernels in cpu/, GPU
 * kernels in the .cu files of cuda/ (built only when the CUDA toolkit is
 * found). Each device's table lists its kernels by xe_kernel_id.
 */
#ifndef XE_KERNELS_H
#define XE_KERNELS_H

#include "xlac/op.h"

/* Shape functions (infer/). */
xe_code xe_infer_source(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_iota(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_binary(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_compare(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_logical(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_unary(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_select(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_cast(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_reduce(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_argmax(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_reshape(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_transpose(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_broadcast_to(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_concat(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_slice(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_matmul(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_softmax(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_unique(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_nonzero(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_random(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
/* neural-network ops (infer/nn.c) */
xe_code xe_infer_gather(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_tile(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_pad(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_conv2d(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
xe_code xe_infer_pool2d(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
/* collectives (collective.c) */
xe_code xe_infer_collective(const xe_node *n, const xe_type *in, int n_in, xe_type *out, xe_status *st);
/* Runs a collective node's engine call from in to out (host memory), mean included. */
xe_code xe_collective_run(const xe_kernel_args *a, const void *in, void *out, xe_status *st);
/* data /= size elementwise (integers: floor division): what mean adds to a sum. */
void xe_collective_mean(void *data, size_t count, xe_dtype dt, int size);

/* Per-op kernels: one list, expanded for each device prefix. */
#define XE_KERNEL_LIST(K) \
    K(const)              \
    K(iota)               \
    K(binary)             \
    K(compare)            \
    K(logical)            \
    K(unary)              \
    K(select)             \
    K(cast)               \
    K(reduce)             \
    K(argmax)             \
    K(reshape)            \
    K(transpose)          \
    K(broadcast_to)       \
    K(concat)             \
    K(slice)              \
    K(matmul)             \
    K(softmax)            \
    K(random)             \
    K(gather)             \
    K(tile)               \
    K(pad)                \
    K(conv2d)             \
    K(max_pool2d)         \
    K(avg_pool2d)         \
    K(all_reduce)         \
    K(all_gather)         \
    K(reduce_scatter)     \
    K(broadcast)

#define XE_DECLARE_CPU(k) xe_code xe_cpu_##k(const xe_kernel_args *a, xe_status *st);
#define XE_DECLARE_GPU(k) xe_code xe_gpu_##k(const xe_kernel_args *a, xe_status *st);
XE_KERNEL_LIST(XE_DECLARE_CPU)
XE_KERNEL_LIST(XE_DECLARE_GPU)
#undef XE_DECLARE_CPU
#undef XE_DECLARE_GPU
xe_code xe_cpu_unique(const xe_kernel_args *a, xe_status *st); /* CPU only by design */
xe_code xe_cpu_nonzero(const xe_kernel_args *a, xe_status *st); /* CPU only by design */

/* A per-op kernel's place in a device's kernel table (xe_device_ops.kernels). */
typedef enum xe_kernel_id {
#define XE_KERNEL_ID(k) XE_KERNEL_##k,
    XE_KERNEL_LIST(XE_KERNEL_ID)
#undef XE_KERNEL_ID
    XE_KERNEL_unique,  /* CPU only by design */
    XE_KERNEL_nonzero, /* CPU only by design */
    XE_KERNEL_COUNT,
    XE_KERNEL_NONE = -1 /* the op has no per-op kernel */
} xe_kernel_id;

#endif
