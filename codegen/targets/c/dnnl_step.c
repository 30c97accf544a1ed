/*
 * The C target's library step for a convolution with its epilogue: the
 * step after a conv2d that is act(conv), conv + residual or
 * act(conv + residual), act one of GELU, sigmoid, SiLU, HardSwish
 * (xg_conv_epilogue; not ReLU or Clip, whose oneDNN forms lose NaN; act possibly between
 * reshapes of the conv's output, a conv1d's), runs inside the conv's oneDNN
 * call as post-ops (sum, then one eltwise), so the conv's output is written once, already finished,
 * instead of written, read back and written again by a generated loop. The primitive lives in the
 * conv node's slot of the program's kernel cache, as plain conv steps' do. What the engine refuses
 * (another dtype, a residual whose shape differs at this call) comes back as XE_ERR_UNSUPPORTED and
 * the two steps run apart. The same call runs a conv alone (no post-ops) whose input or output is
 * channels-last (layout.c), the sides said by layout bits.
 */
#include "cpu/dnnl_engine.h"
#include "program_impl.h"

xe_code xg_c_conv_epilogue(xg_program *p, const xg_conv_epi *e, xe_tensor **bufs, xe_status *st)
{
    const xe_node *n = p->body->nodes[e->conv];
    xe_tensor *in[3] = {NULL, NULL, NULL};
    for (int k = 0; k < n->n_inputs && k < 3; k++)
        in[k] = bufs[n->inputs[k]];
    xe_kernel_args a = {.graph = p->body,
                        .node = n,
                        .n_in = n->n_inputs,
                        .in = in,
                        .out = bufs[e->out],
                        .cache = &p->kcache[e->conv]};
    static const unsigned acts[] = {[XG_CONV_NONE] = 0,
                                    [XG_CONV_GELU] = XE_DNNL_POST_GELU,
                                    [XG_CONV_GELU_TANH] = XE_DNNL_POST_GELU_TANH,
                                    [XG_CONV_SIGMOID] = XE_DNNL_POST_SIGMOID,
                                    [XG_CONV_SILU] = XE_DNNL_POST_SILU,
                                    [XG_CONV_HARDSWISH] = XE_DNNL_POST_HARDSWISH};
    unsigned post = (e->residual >= 0 ? XE_DNNL_POST_SUM : 0) | acts[e->act] |
                    (e->src_chained ? XE_DNNL_SRC_CHAIN : 0) |
                    (e->dst_chained ? XE_DNNL_DST_CHAIN : 0);
    if (a.out->dtype != XE_F32 || (e->residual >= 0 && !bufs[e->residual]))
        return xe_fail(st, XE_ERR_UNSUPPORTED, "node %s: no conv epilogue here", n->name);
    return xe_dnnl_conv2d_post(&a, e->residual >= 0 ? bufs[e->residual] : NULL, post, st);
}
