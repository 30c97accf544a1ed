/*
 * GPU kernels of the collective ops (this folder is built with the CUDA toolkit only).
 * With NCCL (XE_HAVE_NCCL, when CMake finds it) a world of several ranks
 * runs each collective on the device over NCCL, on the executor's stream:
 * one communicator per process, its id sent from rank 0 through the
 * installed engine (MPI). Without NCCL, or for what NCCL lacks (the mean
 * of integers), a GPU rank copies its operand to host memory, runs the
 * CPU path (MPI) and copies the result back, and says so once. In a world
 * of one rank every collective is a device copy.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "xlac/comm.h"
#include "xlac/device.h"

#ifdef XE_HAVE_NCCL
#include <nccl.h>
#endif

/* Through host memory: device -> host, the CPU path, host -> device. */
static xe_code staged(const xe_kernel_args *a, xe_status *st)
{
    static atomic_bool said;
    if (!atomic_exchange(&said, true))
        fprintf(stderr, "xlac: collectives on the GPU go through host memory and %s (%s)\n",
                xe_comm_get()->name,
#ifdef XE_HAVE_NCCL
                "NCCL lacks this reduction");
#else
                "this build has no NCCL");
#endif
    size_t nin = a->in[0]->nbytes, nout = a->out->nbytes;
    void *hin = malloc(nin ? nin : 1), *hout = malloc(nout ? nout : 1);
    xe_code c =
        hin && hout ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of host memory for a collective");
    if (c == XE_OK && nin)
        c = xe_gpu_copy_to_host(hin, a->in[0]->data, nin, st);
    if (c == XE_OK)
        c = xe_collective_run(a, hin, hout, st);
    if (c == XE_OK && nout && (c = xe_gpu_copy_to_device(a->out->data, hout, nout, st)) == XE_OK)
        c = xe_gpu_synchronize(st); /* before hout is freed */
    free(hin);
    free(hout);
    return c;
}

#ifdef XE_HAVE_NCCL
static ncclComm_t nccl;
static int nccl_state; /* 0: not tried, 1: ready, -1: failed (staged from then on) */

static bool nccl_type(xe_dtype dt, ncclDataType_t *t)
{
    switch (dt) {
    case XE_F32:
        *t = ncclFloat32;
        return true;
    case XE_F64:
        *t = ncclFloat64;
        return true;
    case XE_F16:
        *t = ncclFloat16;
        return true;
    case XE_I32:
        *t = ncclInt32;
        return true;
    case XE_I64:
        *t = ncclInt64;
        return true;
    default:
        *t = ncclUint8;
        return true; /* bool: moved, never reduced */
    }
}

/* The communicator: rank 0's id reaches every rank through the installed engine. */
static bool nccl_ready(const xe_comm *c)
{
    if (nccl_state)
        return nccl_state > 0;
    ncclUniqueId id;
    xe_status st;
    xe_status_clear(&st);
    nccl_state = -1;
    if ((c->rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) ||
        c->broadcast(c->self, &id, sizeof id, XE_BOOL, 0, &st) != XE_OK)
        return false;
    ncclResult_t r = ncclCommInitRank(&nccl, c->size, id, c->rank);
    if (r != ncclSuccess) {
        fprintf(stderr, "xlac: NCCL unusable (%s): collectives go through host memory\n",
                ncclGetErrorString(r));
        return false;
    }
    nccl_state = 1;
    return true;
}

static ncclRedOp_t nccl_op(const xe_node *n)
{
    int op = xe_reduce_op_parse(xe_node_attr_string(n, "reduce", "sum"));
    return op == XE_REDUCE_MAX    ? ncclMax
           : op == XE_REDUCE_MIN  ? ncclMin
           : op == XE_REDUCE_MEAN ? ncclAvg
                                  : ncclSum;
}

/* One collective over NCCL on the executor's stream. */
static ncclResult_t nccl_run(const xe_kernel_args *a, ncclDataType_t t)
{
    const xe_node *n = a->node;
    const void *in = a->in[0]->data;
    void *out = a->out->data;
    cudaStream_t s = (cudaStream_t)xe_gpu_stream();
    size_t count = (size_t)xe_tensor_numel(a->in[0]);
    switch (n->op) {
    case XE_OP_ALL_REDUCE:
        return ncclAllReduce(in, out, count, t, nccl_op(n), nccl, s);
    case XE_OP_ALL_GATHER:
        return ncclAllGather(in, out, count, t, nccl, s);
    case XE_OP_REDUCE_SCATTER:
        return ncclReduceScatter(in, out, (size_t)xe_tensor_numel(a->out), t, nccl_op(n), nccl, s);
    default:
        return ncclBroadcast(in, out, count, t, (int)xe_node_attr_int(n, "root", 0), nccl, s);
    }
}
#endif

static xe_code gpu_collective(const xe_kernel_args *a, xe_status *st)
{
    const xe_comm *c = xe_comm_get();
    if (c->size == 1) /* a copy: every collective is the identity in a world of one */
        return a->out->nbytes ? xe_gpu_copy_device(a->out->data, a->in[0]->data, a->out->nbytes, st)
                              : XE_OK;
#ifdef XE_HAVE_NCCL
    ncclDataType_t t;
    bool int_mean =
        (a->in[0]->dtype == XE_I32 || a->in[0]->dtype == XE_I64) &&
        xe_reduce_op_parse(xe_node_attr_string(a->node, "reduce", "sum")) == XE_REDUCE_MEAN;
    if (!int_mean && nccl_type(a->in[0]->dtype, &t) && nccl_ready(c)) {
        ncclResult_t r = nccl_run(a, t);
        return r == ncclSuccess ? XE_OK
                                : xe_fail(st, XE_ERR_DEVICE, "rank %d of %d (nccl): %s", c->rank,
                                          c->size, ncclGetErrorString(r));
    }
#endif
    return staged(a, st);
}

xe_code xe_gpu_all_reduce(const xe_kernel_args *a, xe_status *st)
{
    return gpu_collective(a, st);
}

xe_code xe_gpu_all_gather(const xe_kernel_args *a, xe_status *st)
{
    return gpu_collective(a, st);
}

xe_code xe_gpu_reduce_scatter(const xe_kernel_args *a, xe_status *st)
{
    return gpu_collective(a, st);
}

xe_code xe_gpu_broadcast(const xe_kernel_args *a, xe_status *st)
{
    return gpu_collective(a, st);
}
