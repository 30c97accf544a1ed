/*
 * An op's kernel on a device. A built-in op's kernels live in the device
 * tables alone (xe_device_ops.kernels, by the kernel id ops.c gives the
 * op): the entry is read from the device's table, which loads the
 * device's library the first time (device_load.c). A registered op brings
 * its own kernels (xe_op_def.kernel). CPU-only ops (XE_OPF_CPU_ONLY) have
 * no kernel anywhere else.
 */
#include "device_impl.h"
#include "kernels.h"

xe_kernel_fn xe_op_kernel(const xe_op_def *d, xe_device dev)
{
    if (!d || dev >= XE_DEV_COUNT)
        return NULL;
    xe_kernel_id k = xe_op_kernel_id(d);
    if (k == XE_KERNEL_COUNT)
        return d->kernel[dev];
    if (k == XE_KERNEL_NONE || (dev != XE_DEV_CPU && (d->flags & XE_OPF_CPU_ONLY)))
        return NULL;
    const xe_kernel_fn *kernels = xe_device_ops_of(dev)->kernels;
    return kernels ? kernels[k] : NULL;
}
