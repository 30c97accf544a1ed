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
 * executor's device paths run on a machine without one. It is also the
 * worked example of docs/adding-a-backend.md.
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

static struct {
    pthread_mutex_t lock;
    debug_header *held[QUARANTINE];
    int next;
} quarantine = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *debug_alloc(size_t nbytes, xe_status *st)
{
    debug_header *h = aligned_alloc(64, sizeof *h + (nbytes + 63) / 64 * 64);
    if (!h) {
        xe_fail(st, XE_ERR_NOMEM, "cpu_debug: out of memory (%zu bytes)", nbytes);
        return NULL;
    }
    h->nbytes = nbytes;
    return h + 1;
}

/* Poisons the buffer and keeps it; the buffer QUARANTINE frees ago is really freed. */
static void debug_free(void *p, size_t nbytes)
{
    (void)nbytes;
    debug_header *h = (debug_header *)p - 1;
    memset(p, POISON, h->nbytes);
    pthread_mutex_lock(&quarantine.lock);
    debug_header *old = quarantine.held[quarantine.next];
    quarantine.held[quarantine.next] = h;
    quarantine.next = (quarantine.next + 1) % QUARANTINE;
    pthread_mutex_unlock(&quarantine.lock);
    free(old);
}

__attribute__((destructor)) static void quarantine_drain(void)
{
    for (int i = 0; i < QUARANTINE; i++) {
        free(quarantine.held[i]);
        quarantine.held[i] = NULL;
    }
}

static xe_code debug_copy(void *dst, const void *src, size_t n, xe_status *st)
{
    (void)st;
    memcpy(dst, src, n);
    return XE_OK;
}

const xe_device_ops xe_device_cpu_debug = {
    .slot = XE_DEV_EXTRA,
    .name = "DEBUG:0",
    .xla_name = "XLA_DEBUG:0",
    .word = "debug",
    .label = "cpu-debug",
    .alloc = debug_alloc,
    .free = debug_free,
    .copy_from_host = debug_copy,
    .copy_to_host = debug_copy,
    .copy_within = debug_copy,
    .kernels = xe_cpu_kernels, /* the CPU's own, on this device's memory */
};
