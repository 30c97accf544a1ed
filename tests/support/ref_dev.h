/*
 * Shared helpers of the op tests that run one node on a chosen device:
 * the CPU through ref_op_run (guarded output), or the GPU (inputs copied
 * over, the op's GPU kernel, the output copied back), and the assertions
 * around a run: its output's shape and elements against a reference, or
 * the error that inference or parsing must give.
 */
#ifndef XLAC_TEST_REF_DEV_H
#define XLAC_TEST_REF_DEV_H

#include "support/ref.h"

/* Skips the current test, visibly, on a machine without a CUDA device. */
#define REF_SKIP_WITHOUT_GPU()                                                                     \
    do {                                                                                           \
        if (!xe_gpu_available())                                                                   \
            cr_skip_test("skipped: no CUDA device");                                               \
    } while (0)

/* Runs o's node on dev; a CPU copy of the output, or NULL with *st set when inference or the
   kernel fails. */
xe_tensor *ref_op_run_on(xe_device dev, ref_op *o, xe_tensor *const *in, int n_in, xe_status *st);
/* Runs on dev and asserts the output's shape and every element against want (scale: NULL for
   exact dtypes, else the per-element floor of ref_close). */
void ref_expect_run(xe_device dev, ref_op *o, xe_tensor *const *in, int n_in, const xe_shape *shape,
                    const double *want, const double *scale, const char *what);
/* Asserts that o's node fails to infer with a message containing part. */
void ref_expect_infer_error(ref_op *o, const char *part);
/* Asserts that text does not parse; returns the message (valid until the next call). */
const char *ref_parse_error(const char *text);
/* Runs the graph text op by op on the CPU (asserting it parses and runs); outputs into out. */
void ref_run_graph(const char *text, xe_tensor *const *in, xe_tensor **out);
/* Attribute setters that assert success. */
void ref_set_ints(xe_node *n, const char *name, int count, const int64_t *v);
void ref_set_int(xe_node *n, const char *name, int64_t v);

#endif
