/*
 * Private to the emitter (emit*.c, backend_*.c): its state and the pieces
 * its files share. emit.c holds the sink, index maps and values;
 * emit_scalar.c an op's text; emit_loop.c loop kernels; emit_reduce.c and
 * emit_row.c reductions, row kernels and softmax; the backends the text
 * that differs by target.
 */
#ifndef XG_EMIT_IMPL_H
#define XG_EMIT_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "op_text.h"
#include "plan.h"
#include "share.h"
#include "xlac/op.h"
#include "xlac/text.h"

#define MAX_MEMO 1024

typedef struct idx {
    int rank;
    char d[XE_MAX_RANK][24]; /* per dim: a variable or literal */
    char flat[24];           /* flat offset in the value's shape, "" if unknown */
} idx;

typedef struct memo {
    int node;
    char key[200];
    char var[16];
} memo;

struct kept_kernel;

typedef struct em {
    xe_text text; /* the generated program */
    bool oom, unsupported;
    char why[160];
    const xg_plan *p;
    const xg_backend *b; /* the target's dialect and hooks */
    bool panel;     /* the kernel runs over a panel's rows [r0, r1) on one thread (a panel step,
                       backend's panel_rows_loop) */
    bool narrow;    /* index math in 32 bits (xg_idx is int): CUDA, fixed shapes, every tensor under
                       2^30 */
    size_t decl_at; /* where the current kernel's pointer declarations go (xg_kernel_end) */
    size_t kernel_at, sig_at; /* where the current step's text and its kernel's signature begin */
    int step;                 /* the current step */
    xg_shares
        *shares; /* steps that run an earlier step's kernel (share.h); NULL: none looked for */
    struct kept_kernel *kept; /* the kernels kept so far, by identity (xg_kernel_end) */
    int n_kept, cap_kept;
    int var;
    unsigned char *var_flags; /* per index variable vN: XG_VAR_* (xg_let_index) */
    int cap_var_flags;
    uint64_t opaque_strides; /* the current kernel's strides 2^b read from xg_s<2^b> (bit b) */
    int64_t nest_l; /* a fixed-shape CPU loop nest's inner length L (i = r * L + j); 0: none */
    bool nest_rows; /* the CPU loop nest splits its rows (among threads, or a panel's), each row
                       one simd loop; false: its inner loop is the one split */
    int n_memo;
    memo m[MAX_MEMO];
    char (*rowvar)[16]; /* row kernels: the register holding a node's value for the current row */
    /* Row kernels on the CPU: the pass being printed (phase, its element's idx, -1 / NULL
       outside one) and the row cache (row_cache_plan): per node, the phases that compute
       it at that element (found by a dry run), and the phase that keeps it (-1: none). */
    int row_ph, row_x;
    const idx *row_ix;
    bool rc_dry;
    unsigned *rc_phases;
    int *rc_first;
} em;

/* The reduction's combine step, init value and OpenMP reduction identifier. */
typedef struct red_ops {
    const char *acc_type, *init, *omp;
    const char
        *combine; /* printf format of the combined value: %1$s the accumulator, %2$s the value */
    bool key; /* f32 max/min over int32 keys (scalar.h's xe_maxkey_f32): xe_of_key_f32 finishes */
} red_ops;

/* ---- emit_out.c ---- */

/* The one printf-like sink of all generated text. */
void xg_out(em *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- emit.c ---- */

/* Dim d of node's shape: a literal, or S[k] in shape-generic programs. */
void xg_dim_text(const em *e, int node, int d, char *buf, size_t len);
/* Elements of node's shape, as text. */
void xg_numel_text(const em *e, int node, char *buf, size_t len);
/* What an index variable depends on (xg_let_index; 0 for a literal or an outer loop's). */
enum {
    XG_VAR_INNER = 1,     /* on the innermost loop's index (i, j, k) */
    XG_VAR_SCATTERED = 2, /* a / or % of such a value, or built from one: the compiler cannot
                             prove a load at it contiguous (a gather) */
    XG_VAR_F16_TWIN = 4,  /* a value: vN is v(N-1) rounded to f16 (xg_emit_compute), so a store
                             of vN converts v(N-1) (xg_emit_store) */
};
/* The XG_VAR_* of index text (a variable, a literal, "i"). */
unsigned xg_index_flags(const em *e, const char *text);
/* xg_idx vN = expr; (name gets vN; its XG_VAR_* recorded) */
void xg_let_index(em *e, char *name, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The float value x rounded to f16 and back, as text: the backend's f16_round, else h2f(f2h(x)). */
void xg_f16_round_text(const em *e, const char *x, char *buf, size_t len);
void xg_idx_from_flat(em *e, int node, const char *flat, idx *ix);
void xg_flat_of(em *e, int node, const idx *ix, char *buf, size_t len);
void xg_memo_add(em *e, int node, const idx *ix, const char *var);
/* The value of node at ix: memoized, loaded when materialized, else computed. */
const char *xg_emit_val(em *e, int node, const idx *ix, char *var, size_t len);
void xg_emit_load(em *e, int node, const idx *ix, char *var, size_t len);
void xg_emit_compute(em *e, int node, const idx *ix, char *var, size_t len);
void xg_emit_store(em *e, int node, const char *flat, const char *v);
/* A kernel's signature (the backend's); xg_kernel_end, once its body is printed, declares the
 * buffers it uses. */
void xg_kernel_begin(em *e, int step);
void xg_kernel_end(em *e);

/* ---- emit_scalar.c: an op's text ---- */

void xg_cast_text(xe_dtype from, xe_dtype to, const char *a, char *buf, size_t len);
bool xg_costly_op(int op);
/* scalar.h's common part and the sections of the ops the program uses (backends' preludes). */
void xg_emit_scalar_text(em *e);

/* ---- emit_loop.c, emit_reduce.c, emit_row.c: kernels ---- */

void xg_emit_loop_kernel(em *e, int step, const xg_step *s);
/* emit_f16_rows.c: a loop nest body's f16 loads and stores at its element through float stack
   rows; the body rewritten (malloc'd), the rows' declarations and fills appended to before, their
   drains to after; NULL when nothing is staged. */
char *xg_stage_f16_rows(em *e, const char *body, xe_text *before, xe_text *after);
void xg_emit_reduce_kernel(em *e, int step, const xg_step *s);
void xg_emit_row_kernel(em *e, int step, const xg_step *s);
void xg_emit_softmax_kernel(em *e, int step, const xg_step *s);

red_ops xg_red_ops_for(int op, xe_dtype dt);
red_ops xg_red_ops_vec(const em *e, int op, xe_dtype dt);
void xg_emit_combine(em *e, const red_ops *r, const char *acc, const char *v);
void xg_part_size(const em *e, int x, const bool *mask, bool want, char *buf, size_t len);
void xg_reduce_idx(em *e, int x, const bool *mask, const char *o, const char *k, bool column,
                   idx *ix);
void xg_emit_accumulate(em *e, int x, const bool *mask, const char *o, bool column,
                        const red_ops *ro, const char *acc);
void xg_emit_finish(em *e, const xe_node *r, xe_dtype dt, const char *acc, const char *K, char *buf,
                    size_t len);
void xg_emit_serial_reduce(em *e, const xe_node *r, int x, const bool *mask, int node, bool column,
                           bool simd);

/* ---- small helpers ---- */

/* The loop over a row kernel's rows: all of them, or a panel's (on one thread). */
static inline const char *rows_loop(const em *e)
{
    return e->panel ? e->b->render.panel_rows_loop : e->b->render.rows_loop;
}

/* The suffix of an index literal: none in 32-bit index math, where LL would widen it again. */
static inline const char *LL(const em *e)
{
    return e->narrow ? "" : "LL";
}

static inline const char *store_type(xe_dtype dt)
{
    static const char *const t[XE_DTYPE_COUNT] = {
        [XE_F32] = "float",      [XE_F64] = "double",         [XE_F16] = "uint16_t",
        [XE_I32] = "int32_t",    [XE_I64] = "int64_t",        [XE_BOOL] = "uint8_t",
        [XE_U8] = "uint8_t",     [XE_I8] = "int8_t",          [XE_I16] = "int16_t",
        [XE_U16] = "uint16_t",   [XE_U32] = "uint32_t",       [XE_U64] = "uint64_t",
        [XE_BF16] = "uint16_t",  [XE_F8E4M3FN] = "uint8_t",   [XE_F8E4M3FNUZ] = "uint8_t",
        [XE_F8E5M2] = "uint8_t", [XE_F8E5M2FNUZ] = "uint8_t", [XE_I4] = "int8_t",
        [XE_U4] = "uint8_t",     [XE_I2] = "int8_t",          [XE_U2] = "uint8_t",
        [XE_F4E2M1] = "uint8_t", [XE_F8E8M0] = "uint8_t"};
    return dt < XE_DTYPE_COUNT ? t[dt] : "void";
}

/* Type a value is computed in: f16 and bf16 compute in float. (The narrow dtypes do not
   reach the emitter: plan/supports.c keeps them out of clusters.) */
static inline const char *value_type(xe_dtype dt)
{
    return dt == XE_F16 || dt == XE_BF16 ? "float" : store_type(dt);
}

/* Suffix of the scalar.h function variants: f32 for f16/f32, f64, i32, i64. */
static inline const char *sfx(xe_dtype dt)
{
    switch (dt) {
    case XE_F64:
        return "f64";
    case XE_I32:
        return "i32";
    case XE_I64:
        return "i64";
    default:
        return "f32";
    }
}

static inline const xe_shape *shape_of(const em *e, int node)
{
    return &e->p->types[node].shape;
}

static inline void new_var(em *e, char *name, size_t len)
{
    snprintf(name, len, "v%d", e->var++);
}

/* Whether the kernel whose body (after its signature) was just printed runs an earlier one's: then
   its step is recorded in e->shares and the caller drops its text (emit_share.c). */
bool xg_kernel_shared(em *e, const char *body);
void xg_kept_free(em *e);

#endif
