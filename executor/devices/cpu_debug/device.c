/*
 * The cpu_debug device: a test device, built only with
 * -DXLAC_DEVICE_CPU_DEBUG=ON (scripts/test.sh's plain build), that runs
 * the CPU kernels on memory of its own and poisons what is freed. A freed
 * buffer is filled with 0xFF bytes (a NaN in every float type, -1 in
 * every signed integer) and kept in a quarantine of the last QUARANTINE
 * buffers before it is really freed, so a kernel or an executor path that
 * reads a buffer after releasing it reads NaNs instead of stale numbers.
 * Its memory is not "host memory" to the executor: every value crosses
 * to and from it through the copy functions, as it would to a GPU, so the
 * executor's device paths run on a machine without one. Each instance
 * (DEBUG:0, DEBUG:1, ...) keeps its quarantine in its own context. It is
 * also the worked example of docs/adding-a-backend.md.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"

#define QUARANTINE 64
#define POISON 0xFF

/* Every buffer carries its size in front of it, so free can poison it whole. */
typedef struct debug_header {
    size_t nbytes;
    size_t pad[7]; /* keeps the data 64-byte aligned */
} debug_header;

/* An instance's context: its own quarantine, so two instances (DEBUG:0, DEBUG:1) poison apart. */
typedef struct debug_ctx {
    pthread_mutex_t lock;
    debug_header *held[QUARANTINE];
    int next;
} debug_ctx;

/* Every instance's context, drained at exit (instances live as long as the process). */
static struct {
    pthread_mutex_t lock;
    debug_ctx *made[XE_DEV_MAX];
    int n;
} contexts = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *debug_init(int ordinal)
{
    (void)ordinal;
    debug_ctx *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    pthread_mutex_init(&q->lock, NULL);
    pthread_mutex_lock(&contexts.lock);
    if (contexts.n < XE_DEV_MAX)
        contexts.made[contexts.n++] = q;
    pthread_mutex_unlock(&contexts.lock);
    return q;
}

static void *debug_alloc(void *ctx, size_t nbytes, xe_status *st)
{
    (void)ctx;
    debug_header *h = aligned_alloc(64, sizeof *h + (nbytes + 63) / 64 * 64);
    if (!h) {
        xe_fail(st, XE_ERR_NOMEM, "cpu_debug: out of memory (%zu bytes)", nbytes);
        return NULL;
    }
    h->nbytes = nbytes;
    return h + 1;
}

/* Poisons the buffer and keeps it; the buffer QUARANTINE frees ago is really freed. */
static void debug_free(void *ctx, void *p, size_t nbytes)
{
    (void)nbytes;
    debug_ctx *q = ctx;
    debug_header *h = (debug_header *)p - 1;
    memset(p, POISON, h->nbytes);
    pthread_mutex_lock(&q->lock);
    debug_header *old = q->held[q->next];
    q->held[q->next] = h;
    q->next = (q->next + 1) % QUARANTINE;
    pthread_mutex_unlock(&q->lock);
    free(old);
}

__attribute__((destructor)) static void quarantine_drain(void)
{
    for (int k = 0; k < contexts.n; k++)
        for (int i = 0; i < QUARANTINE; i++) {
            free(contexts.made[k]->held[i]);
            contexts.made[k]->held[i] = NULL;
        }
}

static xe_code debug_copy(void *ctx, void *dst, const void *src, size_t n, xe_status *st)
{
    (void)ctx;
    (void)st;
    memcpy(dst, src, n);
    return XE_OK;
}

const xe_device_ops xe_device_cpu_debug = {
    .name = "DEBUG",
    .xla_name = "XLA_DEBUG",
    .word = "debug",
    .label = "cpu-debug",
    .init = debug_init,
    .alloc = debug_alloc,
    .free = debug_free,
    .copy_from_host = debug_copy,
    .copy_to_host = debug_copy,
    .copy_within = debug_copy,
    .kernels = xe_cpu_kernels, /* the CPU's own, on this device's memory */
};
