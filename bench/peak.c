/*
 * The machine's f32 peak for the real-models bench (bench/real_models.py):
 * one large oneDNN GEMM (dnnl_sgemm, row-major C = A * B), best of N runs
 * after one warm-up, with the thread count of OMP_NUM_THREADS. Prints
 *   peak m=M n=N k=K threads=T best_ms=... gflops=...
 * usage: peak [M N K [REPS]]   (default 2048 2048 2048 10)
 * Built by real_models.py: cc -O3 -fopenmp peak.c -o peak -ldnnl
 */
#include <dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float *filled(size_t n, unsigned seed)
{
    float *p = malloc(n * sizeof *p);
    if (!p)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (float)((seed >> 9) & 0xffff) / 65536.0f - 0.5f;
    }
    return p;
}

int main(int argc, char **argv)
{
    long m = argc > 3 ? atol(argv[1]) : 2048, n = argc > 3 ? atol(argv[2]) : 2048;
    long k = argc > 3 ? atol(argv[3]) : 2048;
    int reps = argc > 4 ? atoi(argv[4]) : 10;
    if (m <= 0 || n <= 0 || k <= 0 || reps <= 0) {
        fprintf(stderr, "peak: usage: peak [M N K [REPS]]\n");
        return 2;
    }
    float *a = filled((size_t)m * k, 1), *b = filled((size_t)k * n, 2), *c = filled((size_t)m * n, 3);
    int rc = 1;
    if (!a || !b || !c) {
        fprintf(stderr, "peak: out of memory\n");
        goto done;
    }
    double best = 1e30;
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
        double t0 = now_s();
        if (dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, k, b, n, 0.0f, c, n) != dnnl_success) {
            fprintf(stderr, "peak: dnnl_sgemm failed\n");
            goto done;
        }
        double t = now_s() - t0;
        if (r >= 0 && t < best)
            best = t;
    }
    printf("peak m=%ld n=%ld k=%ld threads=%d best_ms=%.3f gflops=%.1f\n", m, n, k, omp_get_max_threads(),
           best * 1e3, 2.0 * m * n * k / best * 1e-9);
    rc = 0;
done:
    free(a);
    free(b);
    free(c);
    return rc;
}
