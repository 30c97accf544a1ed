/*
 * tsan_threads: the threaded scenario of test_threads as a plain program,
 * built with -DXLAC_TSAN=ON (Criterion's forking arena cannot be mapped
 * beside ThreadSanitizer's shadow memory). Exit 0 when every run was
 * right; ThreadSanitizer makes a race exit 66 (halt_on_error=1: at once).
 */
#include <stdio.h>

#include "support/threads.h"

int main(void)
{
    xt_threads_result r;
    bool ok = xt_threads_run(8, &r);
    printf("tsan_threads: 8 threads: %s (launches=%llu fallbacks=%llu compiles=%llu)\n", ok ? "ok" : r.why,
           r.launches, r.fallbacks, r.compiles);
    return ok ? 0 : 1;
}
