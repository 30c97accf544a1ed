/*
 * xlac's own ONNX ops, domain com.xlac: the collectives, which standard
 * ONNX lacks. AllReduce(reduce="sum|mean|max|min"), AllGather,
 * ReduceScatter(reduce=...) and Broadcast(root=0) map one to one onto the
 * executor's all_reduce, all_gather, reduce_scatter and broadcast
 * (docs/onnx.md); they are never folded at load time.
 */
#include "onnx_impl.h"
#include "xlac/comm.h"

xe_code ox_b_collective(ox_b *b)
{
    int x = ox_in(b, 0), op = b->entry->op;
    if (b->n_in != 1)
        return ox_invalid(b, "takes one input, got %d", b->n_in);
    ox_at at = {0};
    if (op == XE_OP_BROADCAST) {
        at = OX_I("root", ox_int(b, "root", 0));
    } else if (op != XE_OP_ALL_GATHER) {
        const char *r = ox_str(b, "reduce", "sum");
        if (xe_reduce_op_parse(r) < 0)
            return ox_invalid(b, "reduce='%s' must be 'sum', 'mean', 'max' or 'min'", r);
        at = OX_STR("reduce", r);
    }
    int y = ox_op(b, op, &x, 1, &at, op == XE_OP_ALL_GATHER ? 0 : 1);
    ox_out(b, 0, y);
    return ox_status(b);
}
