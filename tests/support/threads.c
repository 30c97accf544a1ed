/*
 * The threaded scenario of test_threads (and of tsan_threads, the same
 * scenario without Criterion, whose forking arena does not start under
 * ThreadSanitizer): n threads, each with its own session over one graph
 * at its own batch size, share the plugin's memory cache and background
 * compiles. Every run's output is checked exactly (small integers, so any
 * summation order gives the same floats).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "threads.h"
#include "xlac/xlac.h"
#include "xlac_plugin.h"

#define COLS 16

static const char *graph_text = "xlac.graph v1\ninput x: f32[?,16]\n"
                                "y = mul(x, x)\nz = add(y, x)\ns = reduce_sum(z, axes=[1])\n"
                                "m = reduce_max(z, axes=[1])\noutput s\noutput m\n";

typedef struct worker {
    int rows;
    int runs;
    char why[300]; /* empty: every run was right */
} worker;

static atomic_bool stop;

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One run of the session at w->rows; false (why set) on an error or a wrong value. */
static bool run_once(worker *w, xe_session *s, xe_tensor *x)
{
    xe_status st;
    xe_tensor *out[2] = {NULL, NULL};
    if (xe_session_run(s, &x, out, &st) != XE_OK) {
        snprintf(w->why, sizeof w->why, "rows %d: %.250s", w->rows, st.msg);
        return false;
    }
    bool ok = true;
    for (int i = 0; ok && i < w->rows; i++) {
        float sum = 0, max = -1e30f;
        for (int j = 0; j < COLS; j++) {
            float v = ((float *)x->data)[i * COLS + j], z = v * v + v;
            sum += z;
            max = z > max ? z : max;
        }
        float got_s = ((float *)out[0]->data)[i], got_m = ((float *)out[1]->data)[i];
        if (got_s != sum || got_m != max) {
            snprintf(w->why, sizeof w->why, "rows %d, row %d: sum %g max %g, want %g %g", w->rows, i, got_s, got_m,
                     sum, max);
            ok = false;
        }
    }
    xe_tensor_release(out[0]);
    xe_tensor_release(out[1]);
    return ok;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    xe_status st;
    xe_graph *g = xe_parse_string(graph_text, "threads.xg", &st);
    xe_session *s = g ? xe_session_new(g, &(xe_session_options){0}, &st) : NULL;
    xe_shape sh = {2, {w->rows, COLS}};
    xe_tensor *x = s ? xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st) : NULL;
    if (!x) {
        snprintf(w->why, sizeof w->why, "setup: %.250s", st.msg);
        xe_session_destroy(s);
        return NULL;
    }
    for (int i = 0; i < w->rows * COLS; i++)
        ((float *)x->data)[i] = (float)((i * 7 + w->rows) % 5 - 2);
    while (!atomic_load(&stop) && run_once(w, s, x))
        w->runs++;
    xe_tensor_release(x);
    xe_session_destroy(s);
    return NULL;
}

/* The plugin, installed by xt_threads_run (one per process). */
static xlac_state state;

/* The counters of the --stats line. */
static void stats(unsigned long long *launches, unsigned long long *fallbacks, unsigned long long *compiles)
{
    char line[512] = "";
    FILE *m = fmemopen(line, sizeof line - 1, "w");
    xlac_print_stats(&state, m);
    fclose(m);
    const char *l = strstr(line, "launches="), *f = strstr(line, "fallbacks="), *c = strstr(line, "compiles=");
    *launches = l ? strtoull(l + 9, NULL, 10) : 0;
    *fallbacks = f ? strtoull(f + 10, NULL, 10) : 0;
    *compiles = c ? strtoull(c + 9, NULL, 10) : 0;
}

/* Stops the workers once compiled code has served min_compiled runs (or after 120 s). */
static void wait_for_compiled_runs(unsigned long long min_compiled, xt_threads_result *r)
{
    for (double t0 = seconds(); seconds() - t0 < 120;) {
        stats(&r->launches, &r->fallbacks, &r->compiles);
        if (r->launches - r->fallbacks >= min_compiled)
            break;
        struct timespec nap = {0, 20000000};
        nanosleep(&nap, NULL);
    }
    atomic_store(&stop, true);
}

bool xt_threads_run(int n, xt_threads_result *r)
{
    xe_status st;
    xlac_flags f;
    memset(r, 0, sizeof *r);
    xlac_state_init(&state);
    if (xlac_flags_parse(&f, &(xlac_env){.auto_jit = "1", .flags = "--async_compilation --disk_cache=0"}, &st) !=
            XE_OK ||
        xlac_plugin_install(&state, &f, &st) != XE_OK) {
        snprintf(r->why, sizeof r->why, "install: %.300s", st.msg);
        return false;
    }
    worker *w = calloc((size_t)n, sizeof *w);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    int started = 0;
    for (; w && th && started < n; started++) {
        w[started].rows = 1 + 3 * started; /* a batch size per thread */
        if (pthread_create(&th[started], NULL, worker_main, &w[started]) != 0)
            break;
    }
    wait_for_compiled_runs(20ull * (unsigned long long)n, r);
    for (int k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    stats(&r->launches, &r->fallbacks, &r->compiles);
    xlac_plugin_shutdown(&state);
    if (started < n)
        snprintf(r->why, sizeof r->why, "only %d threads started", started);
    for (int k = 0; k < started && !r->why[0]; k++)
        if (w[k].why[0] || w[k].runs == 0)
            snprintf(r->why, sizeof r->why, "thread %d: %s", k, w[k].why[0] ? w[k].why : "no run");
    if (!r->why[0] && r->launches - r->fallbacks < 20ull * (unsigned long long)n)
        snprintf(r->why, sizeof r->why, "too few compiled runs: launches=%llu fallbacks=%llu", r->launches,
                 r->fallbacks);
    if (!r->why[0] && r->compiles > (unsigned long long)n)
        snprintf(r->why, sizeof r->why, "%llu compiles for %d signatures", r->compiles, n);
    free(w);
    free(th);
    return !r->why[0];
}
