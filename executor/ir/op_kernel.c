/*
 * An op's kernel on a device. A built-in op's kernels live in the device
 * tables alone (xe_device_ops.kernels, by the kernel id ops.c gives the
 * op): the entry is read from the table of the device's instance, which
 * loads the device's library the first time (device_load.c). A registered
 * op brings its own kernels (xe_op_def.kernel, by instance). CPU-only ops
 * (XE_OPF_CPU_ONLY) have no kernel anywhere but on the host.
 */
#include "device_impl.h"
#include "kernels.h"

xe_kernel_fn xe_op_kernel(const xe_op_def *d, xe_device dev)
{
    if (!d || dev < 0 || dev >= xe_device_count())
        return NULL;
    xe_kernel_id k = xe_op_kernel_id(d);
    if (k == XE_KERNEL_COUNT)
        return d->kernel[dev];
    if (k == XE_KERNEL_NONE || (!xe_device_is_host(dev) && (d->flags & XE_OPF_CPU_ONLY)))
        return NULL;
    const xe_kernel_fn *kernels = xe_device_instance_of(dev)->ops->kernels;
    return kernels ? kernels[k] : NULL;
}
