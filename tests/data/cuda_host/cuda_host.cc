/* The host versions of the executor's device allocator and copy (see cuda_runtime.h here). */
#include <stdlib.h>
#include <string.h>

#include "cuda_runtime.h"

extern "C" {
#include "xlac/status.h"

void *xe_host_gpu_alloc(size_t n, xe_status *st)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
    return p;
}

void xe_host_gpu_free(void *p)
{
    free(p);
}

xe_code xe_host_gpu_copy_to_host(void *d, const void *s, size_t n, xe_status *st)
{
    (void)st;
    memcpy(d, s, n);
    return XE_OK;
}
}
