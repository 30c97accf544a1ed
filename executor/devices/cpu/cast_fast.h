/*
 * The common casts of quantized models over whole tensors (cast_fast.c),
 * tried by the CPU cast kernel before its element-by-element walk.
 */
#ifndef XLAC_CPU_CAST_FAST_H
#define XLAC_CPU_CAST_FAST_H

#include <stdbool.h>

#include "kernels.h"

/* Casts a->in[0] into a->out when both have one shape and the pair has a loop here; false if not. */
bool xe_cpu_cast_fast(const xe_kernel_args *a);

#endif
