/*
 * Private to codegen/: the one interface of a code generation target, in
 * three parts. What renders its code (xg_renderer) is data (the dialect's
 * strings and switches the emitter prints or tests) plus hooks for the
 * text that differs in shape (the prelude, a kernel's signature, a
 * reduction's kernel body, a block-wide combine); what compiles it
 * (xg_compiler) is the compiler's driver and identity; what runs it
 * (xg_runner) loads, launches and unloads the result. The
 * emitter walks a plan once and asks the backend; nothing outside
 * codegen/targets/NAME/ knows which target it serves. As in
 * ggml, each backend is a struct filled with designated initializers; an
 * optional slot is NULL.
 */
#ifndef XG_BACKEND_H
#define XG_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "xg_impl.h"

struct em;      /* emit_impl.h: the emitter's state */
struct red_ops; /* emit_impl.h: a reduction's combine, init and OpenMP identifier */
struct idx;     /* emit_impl.h: a symbolic index */

/* What renders a target's code: the dialect the one emitter walk prints, the hooks for the text
   that differs in shape, what the planner may hand it, and the plan's text. */
typedef struct xg_renderer {
    const char *source_ext; /* extension of the generated source's dump: "c", "cu" */

    /* -- dialect: text the emitter prints as it is -- */
    const char *restrict_kw; /* qualifier of a buffer pointer ("restrict", "__restrict__") */
    const char *flat_loop; /* a loop of i over [0, n), one element per iteration (several lines) */
    const char
        *rows_loop; /* a loop of o over [0, O) rows, each row whole (its own thread or block) */
    const char *
        panel_rows_loop; /* rows_loop over a panel's rows [r0, r1) on one thread; NULL: no panels */
    const char *pass_loop; /* one pass of k over a row's [0, K), shared by the row's threads */
    const char *barrier;   /* a statement that waits for the row's threads; NULL: one thread */
    const char
        *first_thread; /* prefix of a statement only one thread of the row runs ("" when one) */
    const char
        *shared_kw; /* qualifier of the arrays block_reduce combines through (with block_reduce) */
    const char *h2f, *f2h; /* f16 <-> f32 (scalar.h): "xe_h2f_vec" in C (branch-free: the loop
                              vectorizes), "xe_h2f" in CUDA; the same bits either way */
    const char *f16_round; /* a float rounded to f16 and back, one function (scalar.h's
                              xe_f16_round_vec in C); NULL: h2f(f2h(x)) */
    const char *h2f_row, *f2h_row; /* n f16 values <-> n floats, (from, to, n): a loop nest's f16
                                      rows staged in float stack rows (emit_f16_rows.c); NULL:
                                      none */
    bool f16_word_gather;     /* an f16 load at an index the compiler cannot prove contiguous reads
                                 the aligned 32-bit word holding it and shifts (emit.c): gcc has no
                                 16-bit gather, and one such load kept the whole loop scalar */
    bool opaque_pow2_strides; /* an inner loop's constant stride that is a power of two of 32
                                 elements or more is read from a variable set once per kernel
                                 (xg_kernel_end): gcc 12 vectorizes no loop whose access has
                                 such a constant stride ("no vectype"), a run-time one it does */
    bool simd_pragmas;        /* per-pass "#pragma omp simd reduction(...)" */
    bool row_cache;           /* a row kernel may keep costly values in a per-row stack buffer */
    bool narrow_index;        /* index math may be 32-bit when every tensor is small */

    /* -- emitter hooks -- */
    void (*prelude)(struct em *e); /* the program's first lines: types, scalar.h, declarations */
    void (*kernel_signature)(struct em *e,
                             const char *name); /* up to and with the body's "{" and B, S */
    /* A loop of rank > 1 as a nest: opens the rows' loops, sets ix at (r, j), returns the inner
       loop's pragma; the emitter hoists what depends on the row only. NULL: one flat loop. */
    const char *(*nest_begin)(struct em *e, int root, struct idx *ix);
    /* The body of reduction step i (reduce r of x over mask) after the kernel's signature. */
    void (*reduce)(struct em *e, int step, const xg_step *s, const xe_node *r, int x,
                   const bool *mask);
    /* Combines acc over the row's threads through shared array sh; NULL when a row is one thread.
     */
    void (*block_reduce)(struct em *e, const struct red_ops *ro, const char *acc, const char *sh);

    /* -- what it compiles -- */
    /* Why this target cannot compile node n that the planner otherwise could (a short phrase); NULL
       slot or result: it can. */
    const char *(*unsupported)(const xe_node *n);
    /* How a step is covered by blocks of threads (a GPU's launch geometry); NULL: host threads. */
    const xg_geometry *geometry;

    /* -- plan text -- */
    void (*plan_header)(const xg_plan *p, char *buf,
                        size_t len); /* lines after "plan:"; NULL: none */
    void (*launch_text)(const xg_plan *p, int i, char *buf, size_t len); /* how step i runs */
} xg_renderer;

/* What compiles the rendered source: the compiler's driver, its identity for cache keys, the
   names of what it writes. */
typedef struct xg_compiler {
    int (*arch)(int requested); /* the architecture an artifact is built for (C: 0) */
    /* The compiler's version text, for cache keys; *known: it answered (a text that says it could
       not be asked is never remembered). Asking may cost a process or a library's load. */
    const char *(*compiler_id)(const xg_options *o, bool *known);
    /* What the compiler's files are now, cheaply (paths and stats): compiler_id is remembered on
       disk under it (codegen/cache/compiler_memo.c); false: not told, compiler_id is asked. */
    bool (*compiler_stamp)(const xg_options *o, xe_text *out);
    void (*target_text)(const xg_artifact *a, char *buf, size_t len); /* "c", "cuda sm_90" */
    const char *(*code_ext)(
        const xg_artifact *a);                  /* extension of the compiled code: so, cubin, ptx */
    const char *(*compiler_words)(bool is_ptx); /* "cc", "NVRTC to cubin": xg_compiler_words */
    /* a->source to a->code, a->log (and a->is_ptx); build.c times it. */
    xe_code (*compile)(xg_artifact *a, const xg_options *o, xe_status *st);
    /* The compiled code's assembly text for the dumps (malloc'd); NULL slot: none. */
    char *(*assembly)(const xg_artifact *a, const xg_options *o);
} xg_compiler;

/* What runs the compiled code: loading it for a device, launching its steps, its library steps. */
typedef struct xg_runner {
    int (*device_arch)(xe_device dev); /* the architecture of the instance dev (C: 0) */
    xe_code (*load)(xg_program *p, const xg_artifact *a, const xg_options *o,
                    xe_status *st); /* p->fn, private part */
    xe_code (*launch)(xg_program *p, int step, const xe_type *types, void *const *ptrs,
                      const int64_t *S, xe_status *st);
    /* Runs panel step `step` over rows [r0, r1) on the calling thread (epilogue.c); NULL: no
     * panels. */
    void (*run_rows)(xg_program *p, int step, void *const *ptrs, const int64_t *S, int64_t r0,
                     int64_t r1);
    /* A matmul and its epilogue step as one library call (xg_blas_epilogue: the GPU's cuBLASLt);
       XE_ERR_UNSUPPORTED: run them as two steps. NULL: none. */
    xe_code (*matmul_epilogue)(xg_program *p, const xg_blas_epi *e, xe_tensor **bufs,
                               xe_status *st);
    /* A conv and its epilogue step as one library call with post-ops (xg_conv_epilogue: the CPU's
       oneDNN, targets/c/dnnl_step.c); XE_ERR_UNSUPPORTED: run them as two steps. NULL: none. */
    xe_code (*conv_epilogue)(xg_program *p, const xg_conv_epi *e, xe_tensor **bufs, xe_status *st);
    /* Steps [first, pv] as one fused attention (xg_step.attention: the C target's, a block of rows
       at a time with the scores in per-thread tiles, targets/c/attention_step.c); needs run_rows.
       The values the group writes have no buffers. NULL: the steps run one by one. */
    xe_code (*attention)(xg_program *p, int first, int pv, const xe_type *types, xe_tensor **bufs,
                         void *const *ptrs, const int64_t *S, xe_status *st);
    void (*unload)(
        xg_program *p); /* frees what load took (also after a load that failed half way) */
} xg_runner;

/* A target: its public facts and its three parts. */
typedef struct xg_backend {
    xg_target_info
        info; /* name, device kind, whether it uses an arch, whether this build has it (xg.h) */
    xg_renderer render;
    xg_compiler compiler;
    xg_runner runner;
} xg_backend;

extern const xg_backend xg_backend_c, xg_backend_cuda;
/* Generated by CMake (gen/xg_targets.c, from XG_TARGETS): every target's backend in XG_TARGETS'
   order (a target is its index there), and their count (at most XG_TARGET_MAX). Read through
   registry.c's look-ups. */
extern const xg_backend *const xg_backend_table[];
extern const size_t xg_backend_count;

/* The backend of a target. */
const xg_backend *xg_backend_for(xg_target target);

#endif
