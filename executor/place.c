/*
 * Device placement: each op goes to the GPU when one is available, the
 * user did not ask for the CPU, and the op has a GPU kernel; otherwise to
 * the CPU (unique, for one, is CPU-only by design). Graph inputs live on
 * the host; the executor copies values between devices as consumers need.
 */
#include "xlac/op.h"

static xe_device place_node(const xe_graph *g, const xe_node *n, bool gpu)
{
    const xe_op_def *d = xe_op_get(n->op);
    if (n->op == XE_OP_INPUT)
        return XE_DEV_CPU;
    if (n->op == XE_OP_GET)
        return g->nodes[n->inputs[0]]->device;
    if (n->body) {
        for (int i = 0; i < n->body->n_nodes; i++) {
            const xe_node *b = n->body->nodes[i];
            if (b->op != XE_OP_INPUT && b->device == XE_DEV_GPU)
                return XE_DEV_GPU;
        }
        return XE_DEV_CPU;
    }
    return gpu && d && d->kernel[XE_DEV_GPU] ? XE_DEV_GPU : XE_DEV_CPU;
}

static void place_graph(xe_graph *g, bool gpu)
{
    for (int i = 0; i < g->n_nodes; i++) {
        xe_node *n = g->nodes[i];
        if (n->body)
            place_graph(n->body, gpu);
        n->device = place_node(g, n, gpu);
    }
}

xe_code xe_graph_place(xe_graph *g, xe_place_mode mode, xe_status *st)
{
    if (mode == XE_PLACE_GPU && !xe_gpu_available())
        return xe_fail(st, XE_ERR_DEVICE, "--device gpu: no CUDA device (%s)",
                       xe_gpu_unavailable_reason());
    place_graph(g, mode != XE_PLACE_CPU && xe_gpu_available());
    return XE_OK;
}
