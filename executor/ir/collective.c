/*
 * The collective ops: all_reduce, all_gather, reduce_scatter and
 * broadcast. Their shape function (all_gather multiplies the leading dim
 * by the world size, reduce_scatter divides it) and their CPU kernels,
 * which hand the bytes to the installed engine (xlac/comm.h: MPI under
 * mpirun, an identity with one rank). mean is a sum divided here, so an
 * engine only knows sum, max and min. Clustering never takes these ops
 * (XE_OPF_COLLECTIVE): every rank must run them in the same order.
 */
#include <string.h>

#include "kernels.h"
#include "xlac/comm.h"

/* The reduce attribute of an all_reduce or reduce_scatter node (validated by infer). */
static xe_reduce_op node_reduce(const xe_node *n)
{
    int op = xe_reduce_op_parse(xe_node_attr_string(n, "reduce", "sum"));
    return op < 0 ? XE_REDUCE_SUM : (xe_reduce_op)op;
}

static bool reduces(int op)
{
    return op == XE_OP_ALL_REDUCE || op == XE_OP_REDUCE_SCATTER;
}

/* reduce="sum|mean|max|min" on a numeric dtype MPI and NCCL both reduce. */
static xe_code check_reduce(const xe_node *n, xe_dtype dt, xe_status *st)
{
    const char *r = xe_node_attr_string(n, "reduce", "sum");
    if (xe_reduce_op_parse(r) < 0)
        return xe_fail(st, XE_ERR_GRAPH,
                       "reduce=\"%s\" must be \"sum\", \"mean\", \"max\" or \"min\"", r);
    if (dt != XE_F32 && dt != XE_F64 && dt != XE_I32 && dt != XE_I64)
        return xe_fail(st, XE_ERR_GRAPH, "%s reduces f32, f64, i32 or i64, not %s",
                       xe_op_row_of(n->op)->name, xe_dtype_name(dt));
    return XE_OK;
}

/* all_gather: leading dim times the world size; reduce_scatter: divided by it. */
static xe_code leading_dim(const xe_node *n, xe_type *out, int size, xe_status *st)
{
    if (out->shape.rank < 1)
        return xe_fail(st, XE_ERR_GRAPH, "%s needs an operand of rank >= 1, got a scalar",
                       xe_op_row_of(n->op)->name);
    int64_t *d0 = &out->shape.dims[0];
    if (*d0 == XE_DIM_UNKNOWN)
        return XE_OK;
    if (n->op == XE_OP_ALL_GATHER) {
        *d0 *= size;
        return XE_OK;
    }
    if (*d0 % size)
        return xe_fail(st, XE_ERR_GRAPH,
                       "reduce_scatter: the leading dim %lld is not divisible by the world size %d",
                       (long long)*d0, size);
    *d0 /= size;
    return XE_OK;
}

xe_code xe_infer_collective(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                            xe_status *st)
{
    (void)n_in;
    int size = xe_comm_size();
    *out = in[0];
    if (reduces(n->op) && check_reduce(n, in[0].dtype, st) != XE_OK)
        return st->code;
    if (n->op == XE_OP_BROADCAST) {
        int64_t root = xe_node_attr_int(n, "root", 0);
        if (root < 0 || root >= size)
            return xe_fail(st, XE_ERR_GRAPH, "broadcast: root=%lld is not a rank of a world of %d",
                           (long long)root, size);
    }
    if (n->op == XE_OP_ALL_GATHER || n->op == XE_OP_REDUCE_SCATTER)
        return leading_dim(n, out, size, st);
    return XE_OK;
}

/* out /= size, elementwise (integers: floor division). */
void xe_collective_mean(void *data, size_t count, xe_dtype dt, int size)
{
    for (size_t i = 0; i < count && size > 1; i++) {
        if (dt == XE_F32)
            ((float *)data)[i] /= (float)size;
        else if (dt == XE_F64)
            ((double *)data)[i] /= size;
        else if (dt == XE_I32) {
            int32_t *v = &((int32_t *)data)[i];
            *v = *v / size - (*v % size < 0);
        } else if (dt == XE_I64) {
            int64_t *v = &((int64_t *)data)[i];
            *v = *v / size - (*v % size < 0);
        }
    }
}

/* Prefixes an engine's message with the rank (the executor adds the node and op). */
static xe_code collective_fail(const xe_comm *c, xe_status *st)
{
    return xe_status_prefix(st, "rank %d of %d (%s): ", c->rank, c->size, c->name);
}

xe_code xe_collective_run(const xe_kernel_args *a, const void *in, void *out, xe_status *st)
{
    const xe_comm *c = xe_comm_get();
    const xe_node *n = a->node;
    xe_dtype dt = a->in[0]->dtype;
    size_t count = (size_t)xe_tensor_numel(a->in[0]);
    xe_reduce_op op = reduces(n->op) ? node_reduce(n) : XE_REDUCE_SUM;
    xe_reduce_op eop = op == XE_REDUCE_MEAN ? XE_REDUCE_SUM : op;
    xe_code rc = XE_OK;
    switch (n->op) {
    case XE_OP_ALL_REDUCE:
        rc = c->all_reduce(c->self, in, out, count, dt, eop, st);
        break;
    case XE_OP_ALL_GATHER:
        rc = c->all_gather(c->self, in, out, count, dt, st);
        break;
    case XE_OP_REDUCE_SCATTER:
        count = (size_t)xe_tensor_numel(a->out);
        rc = c->reduce_scatter(c->self, in, out, count, dt, eop, st);
        break;
    default:
        if (in != out && count)
            memcpy(out, in, count * xe_dtype_size(dt));
        rc = c->broadcast(c->self, out, count, dt, (int)xe_node_attr_int(n, "root", 0), st);
        break;
    }
    if (rc != XE_OK)
        return collective_fail(c, st);
    if (op == XE_REDUCE_MEAN)
        xe_collective_mean(out, (size_t)xe_tensor_numel(a->out), dt, c->size);
    return XE_OK;
}

xe_code xe_cpu_all_reduce(const xe_kernel_args *a, xe_status *st)
{
    return xe_collective_run(a, a->in[0]->data, a->out->data, st);
}

xe_code xe_cpu_all_gather(const xe_kernel_args *a, xe_status *st)
{
    return xe_collective_run(a, a->in[0]->data, a->out->data, st);
}

xe_code xe_cpu_reduce_scatter(const xe_kernel_args *a, xe_status *st)
{
    return xe_collective_run(a, a->in[0]->data, a->out->data, st);
}

xe_code xe_cpu_broadcast(const xe_kernel_args *a, xe_status *st)
{
    return xe_collective_run(a, a->in[0]->data, a->out->data, st);
}
