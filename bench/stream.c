/*
 * xlac-stream: the memory-bandwidth roofline of this machine, measured the
 * way the benchmark counts bytes: a large multithreaded copy (OpenMP), bytes
 * read plus bytes written over the median time. Prints
 * "copy_gbs=%.1f bytes=%zu median_ms=%.3f".
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void copy(float *restrict dst, const float *restrict src, size_t n)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i];
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : (size_t)32 << 20; /* floats */
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    if (reps < 1 || reps > 1000 || n == 0) {
        fprintf(stderr, "usage: xlac-stream [FLOATS] [REPS]\n");
        return 2;
    }
    float *a = aligned_alloc(64, n * sizeof *a), *b = aligned_alloc(64, n * sizeof *b);
    double *t = malloc((size_t)reps * sizeof *t);
    if (!a || !b || !t) {
        fprintf(stderr, "xlac-stream: out of memory\n");
        return 1;
    }
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        a[i] = (float)i, b[i] = 0.0f; /* first touch by the threads that copy */
    copy(b, a, n);
    for (int r = 0; r < reps; r++) {
        double t0 = now_ms();
        copy(b, a, n);
        t[r] = now_ms() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    double med = t[reps / 2];
    size_t bytes = 2 * n * sizeof(float);
    printf("copy_gbs=%.1f bytes=%zu median_ms=%.3f threads=%d check=%g\n", bytes / med / 1e6, bytes,
           med, omp_get_max_threads(), (double)b[n - 1]);
    free(a);
    free(b);
    free(t);
    return 0;
}
