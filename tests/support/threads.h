/*
 * The threaded scenario shared by test_threads (Criterion) and tsan_threads
 * (a plain program for the ThreadSanitizer build): see threads.c.
 */
#ifndef XLAC_TEST_THREADS_H
#define XLAC_TEST_THREADS_H

#include <stdbool.h>

typedef struct xt_threads_result {
    char why[400];                 /* empty when every thread ran right */
    unsigned long long launches;  /* the --stats counters at the end */
    unsigned long long fallbacks;
    unsigned long long compiles;
} xt_threads_result;

/*
 * Installs the plugin (--async_compilation, no disk cache), runs n threads
 * until compiled code served 20 runs per thread, shuts the plugin down.
 * True when every run was right and each signature compiled at most once.
 */
bool xt_threads_run(int n, xt_threads_result *r);

#endif
