/*
 * Devices the executor knows. A device is a table of functions
 * (xe_device_ops, executor/ir/device_impl.h) filled in its own folder under
 * executor/ (cpu/, cuda/, ...); the build lists the folders it found and
 * a generated registry holds their tables. xe_device is a slot in that
 * registry: slot 0 is always the host CPU, slot 1 the GPU when the CUDA
 * folder is built (libxlac_cuda.so, loaded from beside libxlac_executor.so
 * the first time the device itself is needed: its availability, memory or
 * kernels; a slot's name, word and label load nothing, and neither does a
 * run placed on the CPU), and a slot whose device this
 * build lacks, or whose library is not there, answers "not available"
 * with the reason. Everything outside the device folders asks
 * the table through the functions below and never tests which device it is.
 */
#ifndef XLAC_DEVICE_H
#define XLAC_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "xlac/status.h"

typedef enum xe_device {
    XE_DEV_CPU,   /* slot 0: host memory, CPU kernels (executor/devices/cpu/) */
    XE_DEV_GPU,   /* slot 1: the GPU (executor/devices/cuda/ when the CUDA toolkit is found) */
    XE_DEV_EXTRA, /* slot 2: a device built for tests (executor/devices/cpu_debug/) */
    XE_DEV_COUNT
} xe_device;

/* "CPU:0", "GPU:0": the name in placement logs and dumps. */
const char *xe_device_name(xe_device dev);
/* "XLA_CPU:0", "XLA_GPU:0": the name of an op of a compiled cluster on dev. */
const char *xe_device_xla_name(xe_device dev);
/* "CPU", "CUDA": what the device is, in messages ("no CUDA device"). */
const char *xe_device_label(xe_device dev);
/* "cpu", "gpu": the word for dev in flags (--devices=cpu,gpu) and options. */
const char *xe_device_word(xe_device dev);
/* The slot whose word is `word` (len bytes); false when no device of this build has it. */
bool xe_device_by_word(const char *word, size_t len, xe_device *dev);
/* True when dev's buffers are host pointers (no copy is needed to read them on the CPU). */
bool xe_device_host_memory(xe_device dev);
/* True when placement may put ops on dev by itself (an accelerator, not a test device). */
bool xe_device_auto_place(xe_device dev);

/* True when this build has a device in dev's slot (available or not; its library may be missing). */
bool xe_device_built(xe_device dev);
/* True once dev was found usable (detection runs on first call). */
bool xe_device_available(xe_device dev);
/* Why dev is not available ("xlac was built without this device", "CUDA device library not found:
   DIR/libxlac_cuda.so", "no CUDA driver (libcuda.so.1: ...)", "cudaGetDeviceCount: error 35 ..."). */
const char *xe_device_unavailable_reason(xe_device dev);
/* The device's architecture (a GPU's compute capability, e.g. 90) and its unit count (SMs); 0: none. */
int xe_device_arch(xe_device dev);
int xe_device_units(xe_device dev);

/* Memory and copies; synchronous with respect to the device's stream as seen by the host. */
void *xe_device_alloc(xe_device dev, size_t nbytes, xe_status *st);
void xe_device_free(xe_device dev, void *p, size_t nbytes);
/* n bytes from src on device `from` to dst on device `to` (staged through the host between two devices). */
xe_code xe_device_copy(xe_device to, void *dst, xe_device from, const void *src, size_t n, xe_status *st);
/* Waits for the device's queued work (a no-op on the CPU). */
xe_code xe_device_synchronize(xe_device dev, xe_status *st);
/* The device's stream and BLAS handle (a cudaStream_t, a cublasHandle_t); NULL where it has none. */
void *xe_device_stream(xe_device dev);
void *xe_device_blas(xe_device dev, xe_status *st);

/*
 * Device time of work on dev's stream (the trace's device track): begin
 * (NULL: the device keeps no such time, or it failed), end after the work,
 * read once the stream is done (start on xe_now_us's clock, duration;
 * false: no time), free.
 */
typedef struct xe_device_timer xe_device_timer;
xe_device_timer *xe_device_timer_begin(xe_device dev);
void xe_device_timer_end(xe_device_timer *t);
bool xe_device_timer_read(xe_device_timer *t, double *start_us, double *dur_us);
void xe_device_timer_free(xe_device_timer *t);

/* The GPU slot's table under the names the CUDA target and the tests use. */
bool xe_gpu_available(void);
const char *xe_gpu_unavailable_reason(void);
int xe_gpu_arch(void);
int xe_gpu_sm_count(void);
void *xe_gpu_alloc(size_t nbytes, xe_status *st);
void xe_gpu_free(void *p);
xe_code xe_gpu_copy_to_device(void *dst, const void *src, size_t n, xe_status *st);
xe_code xe_gpu_copy_to_host(void *dst, const void *src, size_t n, xe_status *st);
xe_code xe_gpu_copy_device(void *dst, const void *src, size_t n, xe_status *st);
xe_code xe_gpu_synchronize(xe_status *st);
void *xe_gpu_stream(void);
void *xe_gpu_blas(xe_status *st);

#endif
