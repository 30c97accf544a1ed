/*
 * A flat C API for foreign-function interfaces (Python's ctypes): an
 * opaque session handle and functions that take and return only ints,
 * int64s, strings and pointers, so that no C struct has to be mirrored on
 * the other side. Every fallible function returns an xe_code (0 is XE_OK)
 * and writes its message, NUL-terminated, into err[err_len].
 *
 * Names and types of inputs and outputs are the graph's as loaded (before
 * the passes rewrite it). io selects the side: 0 inputs, 1 outputs. A dim
 * is -1 where it is unknown. Results of a run stay in the session until
 * the next run, xe_capi_clear or xe_capi_close.
 */
#ifndef XLAC_CAPI_H
#define XLAC_CAPI_H

#include <stddef.h>
#include <stdint.h>

typedef struct xe_capi_session xe_capi_session;

/* Loads the model at path and makes a session; device: "cpu", "gpu", "auto", or a device and its
   number ("gpu:1": that instance, xlac/device.h). */
int xe_capi_open(const char *path, const char *device, xe_capi_session **out, char *err,
                 size_t err_len);
void xe_capi_close(xe_capi_session *s);

#define XE_CAPI_LOG_PLACEMENT 1 /* flags: placement lines on the session's first run (stderr) */
/*
 * The same with the session's own configuration: plugin_config is handed
 * to the registered passes (libxlac.so: XLAC_FLAGS words such as
 * "--auto_jit=2", over the process's; NULL: the process's); profile_path,
 * when not NULL or empty, records the trace while the session lives (see
 * xe_session_options); flags: XE_CAPI_* bits.
 */
int xe_capi_open_with(const char *path, const char *device, const char *plugin_config,
                      const char *profile_path, int flags, xe_capi_session **out, char *err,
                      size_t err_len);
/*
 * The same with symbolic dims of an ONNX model pinned at load (onnxruntime's
 * free dimension overrides): pin k sets every input dim whose dim_param
 * (kinds[k] 0) or denotation (kinds[k] 1) is names[k] to values[k]; a pin
 * that names no dim of the model, or contradicts one it declares, fails the
 * open with every such problem listed.
 */
int xe_capi_open_pinned(const char *path, const char *device, const char *plugin_config,
                        const char *profile_path, int flags, int n_pins, const int *kinds,
                        const char *const *names, const int64_t *values, xe_capi_session **out,
                        char *err, size_t err_len);
/* Writes the session's graph as it runs (after the passes: clustered) as .xg text to path. */
int xe_capi_write_graph(const xe_capi_session *s, const char *path, char *err, size_t err_len);
/* Stops the session's trace recording (profile_path); the file is written once no recorder is left.
 */
int xe_capi_end_profiling(xe_capi_session *s, char *err, size_t err_len);
/* The devices the session's ops are placed on: bit 1 << d for instance d (xlac/device.h): 1 << 0
   the CPU, 1 << 1 the first GPU. */
int xe_capi_devices(const xe_capi_session *s);

int xe_capi_count(const xe_capi_session *s, int io);
const char *xe_capi_name(const xe_capi_session *s, int io, int i);
int xe_capi_dtype(const xe_capi_session *s, int io, int i);
int xe_capi_rank(const xe_capi_session *s, int io, int i);
int64_t xe_capi_dim(const xe_capi_session *s, int io, int i, int d);

/*
 * Runs once. data[k], dtypes[k], ranks[k]: input k's host buffer (wrapped,
 * not copied; C order), dtype and rank; dims: every input's dims, one after
 * the other.
 */
int xe_capi_run(xe_capi_session *s, void *const *data, const int *dtypes, const int *ranks,
                const int64_t *dims, char *err, size_t err_len);

/*
 * Runs once like xe_capi_run, but hands the outputs to the caller: outs[i]
 * receives output i as a tensor handle to free with xe_capi_tensor_free.
 * Nothing is kept in the session, so several threads may run one session
 * at once; xe_capi_close must wait for them (the caller's lock).
 */
int xe_capi_run_into(xe_capi_session *s, void *const *data, const int *dtypes, const int *ranks,
                     const int64_t *dims, void **outs, char *err, size_t err_len);
/* A tensor handle's dtype, rank, dims, host data and size. */
int xe_capi_tensor_dtype(const void *t);
int xe_capi_tensor_rank(const void *t);
int64_t xe_capi_tensor_dim(const void *t, int d);
const void *xe_capi_tensor_data(const void *t);
size_t xe_capi_tensor_nbytes(const void *t);
/* 1 when nothing else holds the handle's host buffer (not an input, a constant or another output).
 */
int xe_capi_tensor_exclusive(const void *t);

/* Output i of the last run: dtype, rank, dims, host data and its size. */
int xe_capi_result_dtype(const xe_capi_session *s, int i);
int xe_capi_result_rank(const xe_capi_session *s, int i);
int64_t xe_capi_result_dim(const xe_capi_session *s, int i, int d);
const void *xe_capi_result_data(const xe_capi_session *s, int i);
size_t xe_capi_result_nbytes(const xe_capi_session *s, int i);
/*
 * Hands output i over to the caller when nothing else holds its buffer
 * (not an input, a constant or another output): returns a handle to free
 * with xe_capi_tensor_free, or NULL, and the caller copies the data.
 */
void *xe_capi_result_take(xe_capi_session *s, int i);
void xe_capi_tensor_free(void *t);
/* Releases the last run's outputs. */
void xe_capi_clear(xe_capi_session *s);

/* Dtype codes are 0 .. xe_capi_dtype_count()-1, named "f32", "i64", ... */
int xe_capi_dtype_count(void);
const char *xe_capi_dtype_name(int dt);
/* "parse error", "usage error", ... for an xe_code. */
const char *xe_capi_code_name(int code);

/*
 * For programs xlac-compile generated (executor/tools/aot/aot.c): C = matmul(A, B,
 * transpose_a, transpose_b) on host buffers in C order, dtype an xe_dtype,
 * with the executor's CPU kernel (BLAS for f32 and f64). Returns an xe_code.
 */
int xe_aot_matmul(int dtype, const void *a, int a_rank, const int64_t *a_dims, int transpose_a,
                  const void *b, int b_rank, const int64_t *b_dims, int transpose_b, void *c,
                  int c_rank, const int64_t *c_dims);

/*
 * For programs xlac-compile generated: runs the graph in .xg text (one op
 * that runs per op between clusters) with the executor's CPU kernels on
 * host buffers in[] (its inputs, in order), copying its outputs into
 * out[]. The session is made on the first call, stored in *handle (a
 * static of the caller's, NULL at first) and kept; calls are serialized
 * by one lock. Returns an xe_code; a failure is also one line on stderr.
 */
int xe_aot_graph_run(void **handle, const char *text, void *const *in, void *const *out);

#endif
