/*
 * Threads: 8 threads, each with its own session over the same graph and
 * its own batch size, share the plugin's one memory cache and its
 * background compiles (--async_compilation); every run's output is checked
 * while programs are compiled, published and reused under them
 * (support/threads.c). scripts/test.sh runs the same scenario in a
 * ThreadSanitizer build (-DXLAC_TSAN=ON, bin/tsan_threads), where a data
 * race fails the run.
 */
#include <criterion/criterion.h>

#include "support/threads.h"

Test(threads, eight_sessions_share_one_cache_and_compile_queue, .timeout = 600)
{
    xt_threads_result r;
    bool ok = xt_threads_run(8, &r);
    cr_assert(ok, "%s", r.why);
    cr_assert_geq(r.launches - r.fallbacks, 160, "compiled code ran: launches=%llu fallbacks=%llu", r.launches,
                  r.fallbacks);
}
