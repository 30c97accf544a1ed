/*
 * Run timings for --iterations: each timed run's wall-clock time in
 * milliseconds, reported as the median (the mean of the two middle runs
 * for an even count) and the minimum, which are what a benchmark harness
 * reads from the last stdout line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "xlac/session.h"

xe_code cli_timing_init(cli_timing *t, int cap, xe_status *st)
{
    t->n = 0;
    t->cap = cap;
    t->ms = calloc((size_t)cap + 1, sizeof *t->ms);
    return t->ms ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of memory for %d timings", cap);
}

void cli_timing_add(cli_timing *t, double ms)
{
    if (t->n < t->cap)
        t->ms[t->n++] = ms;
}

void cli_timing_merge(cli_timing *dst, const cli_timing *src)
{
    for (int i = 0; i < src->n; i++)
        cli_timing_add(dst, src->ms[i]);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void cli_timing_report(cli_timing *t, const char *feed)
{
    if (t->n == 0)
        return;
    qsort(t->ms, (size_t)t->n, sizeof *t->ms, cmp_double);
    double median = t->n % 2 ? t->ms[t->n / 2] : (t->ms[t->n / 2 - 1] + t->ms[t->n / 2]) / 2;
    fputs("time ", stdout);
    if (feed)
        printf("feed=%s ", feed);
    printf("median_ms=%.3f min_ms=%.3f iterations=%d threads=%d\n", median, t->ms[0], t->n,
           xe_threads());
}

void cli_timing_free(cli_timing *t)
{
    free(t->ms);
    t->ms = NULL;
    t->n = t->cap = 0;
}
