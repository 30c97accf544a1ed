/*
 * Device placement: each op goes to the first accelerator (a device that
 * placement may choose by itself, in registry order) that is available
 * and has a kernel for it, unless the user asked for the CPU; otherwise to
 * the CPU (unique, for one, is CPU-only by design; so is every op on a
 * narrow dtype, u8 .. bf16, which only the CPU kernels know). A placement on
 * the CPU asks no accelerator whether it is there (a CUDA build does not load
 * its device library for it). A composite node goes
 * where its body's ops went. Graph inputs live on the host; the executor
 * copies values between devices as consumers need.
 */
#include "xlac/device.h"
#include "xlac/op.h"

/* Whether n or an operand has a narrow dtype (xlac/dtype.h): the CPU kernels alone have them. */
static bool touches_narrow(const xe_graph *g, const xe_node *n)
{
    bool narrow = xe_dtype_is_narrow(n->type.dtype);
    for (int k = 0; k < n->n_inputs && !narrow; k++)
        narrow = xe_dtype_is_narrow(g->nodes[n->inputs[k]]->type.dtype);
    return narrow;
}

static xe_device place_node(const xe_graph *g, const xe_node *n, xe_device acc)
{
    const xe_op_def *d = xe_op_get(n->op);
    if (n->op == XE_OP_INPUT)
        return XE_DEV_CPU;
    if (n->op == XE_OP_GET)
        return g->nodes[n->inputs[0]]->device;
    if (n->body) {
        for (int i = 0; i < n->body->n_nodes; i++) {
            const xe_node *b = n->body->nodes[i];
            if (b->op != XE_OP_INPUT && !xe_device_is_host(b->device))
                return b->device;
        }
        return XE_DEV_CPU;
    }
    return xe_op_kernel(d, acc) && !touches_narrow(g, n) ? acc : XE_DEV_CPU;
}

static void place_graph(xe_graph *g, xe_device acc)
{
    for (int i = 0; i < g->n_nodes; i++) {
        xe_node *n = g->nodes[i];
        if (n->body)
            place_graph(n->body, acc);
        n->device = place_node(g, n, acc);
    }
}

xe_code xe_graph_place_on(xe_graph *g, xe_device dev, xe_status *st)
{
    if (!xe_device_available(dev))
        return xe_fail(st, XE_ERR_DEVICE, "no %s device (%s)", xe_device_label(dev),
                       xe_device_unavailable_reason(dev));
    place_graph(g, dev);
    return XE_OK;
}

xe_code xe_graph_place(xe_graph *g, xe_place_mode mode, xe_status *st)
{
    if (mode ==
        XE_PLACE_CPU) { /* no accelerator is asked about: none of their libraries is loaded */
        place_graph(g, XE_DEV_CPU);
        return XE_OK;
    }
    xe_device acc = xe_device_auto(); /* the first available accelerator, else the host */
    xe_device want = xe_device_auto_kind();
    if (mode == XE_PLACE_GPU && xe_device_is_host(acc))
        return xe_fail(st, XE_ERR_DEVICE, "--device gpu: no %s device (%s)", xe_device_label(want),
                       xe_device_unavailable_reason(want));
    place_graph(g, acc);
    return XE_OK;
}
