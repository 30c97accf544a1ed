/*
 * The process's one clock (xe_now_us, xlac/session.h): microseconds on
 * CLOCK_MONOTONIC. Traces, timers, reports and the devices all read it,
 * so it is a leaf at the bottom of the tree.
 */
#include <time.h>

#include "xlac/session.h"

double xe_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}
