/*
 * Devices the executor knows. A device is an instance made by the registry,
 * as a ggml backend is: an interface table (xe_device_ops,
 * executor/ir/device_impl.h, filled in the device's own folder under
 * executor/devices/) plus a context pointer of its own (the GPU's stream,
 * BLAS handle and pools; a test device's quarantine). The build lists the
 * device folders it has and a generated registry holds one line per kind
 * (gen/xe_devices.c); the registry makes one instance of each kind at the
 * start (CPU:0, GPU:0, ...) and more when asked (GPU:1 is
 * xe_device_get("gpu", 1), or the word "gpu:1"). A kind built as a library
 * of its own (CUDA: libxlac_cuda.so, loaded from beside
 * libxlac_executor.so) is loaded the first time one of its instances is
 * itself needed (availability, memory, kernels); a device's name, word and
 * label load nothing, and neither does a run placed on the CPU. A kind this
 * build lacks, or whose library is not there, answers "not available" with
 * the reason. Everything outside the device folders asks the instance
 * through the functions below and never tests which device it is.
 */
#ifndef XLAC_DEVICE_H
#define XLAC_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "xlac/status.h"

/* A device instance: its index in the registry. Instance 0 is the host CPU; the others are counted
   from the registry (xe_device_count), never named by a constant. */
typedef int xe_device;
/* the host CPU, the registry's first instance: host code and CPU-only ops run there */
#define XE_DEV_CPU 0
/* at most this many instances in a process: the size of per-device arrays */
#define XE_DEV_MAX 16

/* How many instances the registry holds now (one per kind of this build at the start, plus every
   instance asked for since, xe_device_get). */
int xe_device_count(void);
/* The instance of the kind whose word is `word` ("gpu") with ordinal n (GPU:1 is ("gpu", 1)), made
   the first time it is asked for; -1 when no kind has that word or the registry is full. */
xe_device xe_device_get(const char *word, int ordinal);
/* Its ordinal among the instances of its kind (GPU:1: 1). */
int xe_device_ordinal(xe_device dev);
/* True for the host CPU's instance (XE_DEV_CPU): where host code reads tensors and CPU-only ops
 * run. */
bool xe_device_is_host(xe_device dev);
/* The first instance placement may choose by itself that is available; XE_DEV_CPU when none is. */
xe_device xe_device_auto(void);
/* The first instance whose kind placement may choose, built or not (what "--device gpu" asks for,
   and names in its message); XE_DEV_CPU when no kind is one. */
xe_device xe_device_auto_kind(void);

/* "CPU:0", "GPU:1": the name in placement logs and dumps. */
const char *xe_device_name(xe_device dev);
/* "XLA_CPU:0", "XLA_GPU:1": the name of an op of a compiled cluster on dev. */
const char *xe_device_xla_name(xe_device dev);
/* "CPU", "CUDA": what the device is, in messages ("no CUDA device"). */
const char *xe_device_label(xe_device dev);
/* "cpu", "gpu": the word for dev's kind in flags (--devices=cpu,gpu) and options. */
const char *xe_device_word(xe_device dev);
/* The instance that `word` (len bytes) names: a kind's word ("gpu": its first instance) or a word
   and an ordinal ("gpu:1", made when first named); false when no kind of this build has the word.
 */
bool xe_device_by_word(const char *word, size_t len, xe_device *dev);
/* True when dev's buffers are host pointers (no copy is needed to read them on the CPU). */
bool xe_device_host_memory(xe_device dev);
/* True when placement may put ops on dev by itself (an accelerator, not a test device). */
bool xe_device_auto_place(xe_device dev);

/* True when this build has dev's kind (available or not; its library may be missing). */
bool xe_device_built(xe_device dev);
/* True once dev was found usable (detection runs on first call). */
bool xe_device_available(xe_device dev);
/* Why dev is not available ("xlac was built without this device", "CUDA device library not found:
   DIR/libxlac_cuda.so", "no CUDA driver (libcuda.so.1: ...)", "cudaGetDeviceCount: error 35 ...").
 */
const char *xe_device_unavailable_reason(xe_device dev);
/* The device's architecture (a GPU's compute capability, e.g. 90) and its unit count (SMs); 0:
 * none. */
int xe_device_arch(xe_device dev);
int xe_device_units(xe_device dev);

/*
 * State a layer above the devices keeps per instance (the CUDA target's cuBLASLt handle): the
 * value kept under `key` (the address of something of the caller's, one per kind of state), made
 * by make(dev) the first time and kept as long as the instance (the process). NULL when make
 * gave NULL (asked again later) or the instance holds XE_DEVICE_STATES values already. make must
 * not ask xe_device_state itself.
 */
#define XE_DEVICE_STATES 8
void *xe_device_state(xe_device dev, const void *key, void *(*make)(xe_device dev));

/* Memory and copies; synchronous with respect to the device's stream as seen by the host. */
void *xe_device_alloc(xe_device dev, size_t nbytes, xe_status *st);
void xe_device_free(xe_device dev, void *p, size_t nbytes);
/* n bytes from src on device `from` to dst on device `to` (staged through the host between two
 * devices). */
xe_code xe_device_copy(xe_device to, void *dst, xe_device from, const void *src, size_t n,
                       xe_status *st);
/* Waits for the device's queued work (a no-op on the CPU). */
xe_code xe_device_synchronize(xe_device dev, xe_status *st);
/* Waits for the queued work of every instance in use (one whose context was made): loads nothing.
 */
xe_code xe_device_synchronize_all(xe_status *st);
/* The device's stream and BLAS handle (a cudaStream_t, a cublasHandle_t); NULL where it has none.
 */
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

/* Whether this CPU runs 8-bit products and convolutions on its engine exactly (oneDNN's effective
   ISA has VNNI: devices/cpu/dnnl_engine.c). Without it they take exact loops, slower than the f32
   engine, so the ONNX importer keeps QDQ pairs in f32 (frontends/onnx/ops/qdq.c). */
bool xe_cpu_int8_engine(void);

/* The first GPU instance (xe_device_get("gpu", 0)) under the names the CUDA kernels, the CUDA
   target and the tests use. */
xe_device xe_gpu_device(void);
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
