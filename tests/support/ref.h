/*
 * Shared helpers for differential op tests: a deterministic random source,
 * random shapes and tensors, output buffers with guard bytes on both sides,
 * a one-node graph harness that runs an op's CPU kernel the way the
 * executor does, numpy-broadcast element access, and the comparison of a
 * result with a double-precision reference under a per-dtype tolerance.
 *
 * Tolerances (relative, with an absolute floor `scale` chosen by the
 * caller, e.g. the operands' magnitude for add/sub): f64 1e-12, f32 1e-5,
 * f16 1e-2, integers and bool exact. NaN matches NaN and nothing else; an
 * infinity matches only the same infinity.
 *
 * Helpers that cannot sensibly fail (allocation of test data) stop the
 * test with a Criterion assertion; the comparison helpers either return a
 * verdict (ref_close) or assert with the element and dtype named
 * (ref_expect, ref_expect_tensor).
 */
#ifndef XLAC_TEST_REF_H
#define XLAC_TEST_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xlac/xlac.h"

/* ---- deterministic random source -------------------------------------- */

/* Restarts the generator (each test should seed so it is reproducible). */
void ref_seed(uint64_t seed);
/* Uniform double in [0, 1). */
double ref_urand(void);
/* Uniform integer in [lo, hi]. */
int64_t ref_irand(int64_t lo, int64_t hi);

/* The six dtypes, for loops over "every dtype". */
extern const xe_dtype ref_all_dtypes[6];

/* ---- shapes and tensors ------------------------------------------------ */

/* A shape from a list: ref_shape(2, (int64_t[]){3, 4}). */
xe_shape ref_shape(int rank, const int64_t *dims);
/* Random rank in [0, max_rank], dims in [1, max_dim] with some 1s and, when
   allow_zero, an occasional 0. */
xe_shape ref_random_shape(int max_rank, int64_t max_dim, bool allow_zero);
/* A shape that broadcasts with s (dims set to 1, leading dims dropped). */
xe_shape ref_broadcast_partner(const xe_shape *s);
/* numpy broadcast of two shapes (asserts that they are compatible). */
xe_shape ref_broadcast(const xe_shape *a, const xe_shape *b);

/* A CPU tensor with values uniform in [lo, hi): floats as drawn (then
   rounded to the dtype), ints floored, bool 0/1 with probability 1/2. */
xe_tensor *ref_random_tensor(xe_dtype dt, const xe_shape *s, double lo, double hi);
/* A CPU tensor from doubles (each stored with xe_store_f64). */
xe_tensor *ref_tensor_from(xe_dtype dt, const xe_shape *s, const double *vals);
/* A CPU tensor of zeros. */
xe_tensor *ref_zeros(xe_dtype dt, const xe_shape *s);

/* ---- guarded output buffers -------------------------------------------- */

#define REF_GUARD_BYTES 64
#define REF_GUARD_FILL 0xA5

/* A tensor wrapped around the middle of a larger buffer filled with
   REF_GUARD_FILL, so that writes out of bounds are seen. */
typedef struct ref_guarded {
    unsigned char *raw; /* REF_GUARD_BYTES + bytes + REF_GUARD_BYTES */
    size_t bytes;       /* the tensor's own bytes */
    xe_tensor *t;       /* wraps raw + REF_GUARD_BYTES */
} ref_guarded;

xe_tensor *ref_guarded_new(ref_guarded *g, xe_dtype dt, const xe_shape *s);
/* Index of the first guard byte that changed (negative: before the data,
   counted from -1), or 0 when both guards are intact. */
long ref_guarded_damage(const ref_guarded *g);
void ref_guarded_free(ref_guarded *g);

/* ---- one-node harness -------------------------------------------------- */

/* A graph "input i0..iN-1; r = OP(i0, ..)" whose node r is run directly. */
typedef struct ref_op {
    xe_graph *g;
    xe_node *node; /* set attributes on it before ref_op_run / ref_op_infer */
} ref_op;

/* Builds the graph from input types (asserts on failure). */
xe_node *ref_op_new_types(ref_op *o, int op, const xe_type *in, int n_in);
/* The same with the types of tensors. */
xe_node *ref_op_new(ref_op *o, int op, xe_tensor *const *in, int n_in);
/* Runs the node's shape function (xe_node_infer); the message names the node. */
xe_code ref_op_infer(ref_op *o, xe_status *st);
/*
 * Infers the output type, runs the op's CPU kernel into a guarded buffer
 * (or lets a data-dependent op allocate its own), checks the guards and
 * returns a plain CPU copy of the output. state: the node's run counter
 * (NULL: a fresh one at 0). NULL with *st set when inference or the kernel
 * fails; a damaged guard is an XE_ERR_RUNTIME naming the byte.
 */
xe_tensor *ref_op_run(ref_op *o, xe_tensor *const *in, int n_in, uint64_t *state, xe_status *st);
void ref_op_free(ref_op *o);
/* src cast to dtype `to` by the cast kernel (through ref_op_run); fails the test when it refuses. */
xe_tensor *ref_cast(xe_tensor *src, xe_dtype to);

/* ---- references and comparison ---------------------------------------- */

/* Element of t that numpy broadcasting maps to flat index i of shape out. */
double ref_load_bcast(const xe_tensor *t, const xe_shape *out, int64_t i);
/* v as dtype dt stores it: rounded to f32 / f16, wrapped to i32 / i64
   (v must fit in int64 for integer dtypes), bool is v != 0. */
double ref_round(xe_dtype dt, double v);
/* Relative tolerance of a dtype (0 for integers and bool). */
double ref_tolerance(xe_dtype dt);
/* Whether got matches want under dt's tolerance with floor scale. */
bool ref_close(xe_dtype dt, double got, double want, double scale);
/* Asserts ref_close, naming what, the element index and the dtype. */
void ref_expect(const char *what, xe_dtype dt, int64_t i, double got, double want, double scale);
/* Asserts every element of got against want[i] (scale[i] or 1 when NULL). */
void ref_expect_tensor(const char *what, const xe_tensor *got, const double *want,
                       const double *scale);
/*
 * Asserts that got matches want, a reference run of the same graph (output
 * number out of the graph `text`, named in messages): same dtype and shape,
 * NaN only where want has NaN, infinities equal, and every other element
 * within tol times the largest finite magnitude of want (at least 1).
 */
void ref_expect_same_output(const xe_tensor *got, const xe_tensor *want, double tol, const char *text, int out);

#endif
