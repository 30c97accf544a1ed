/*
 * Private to codegen/: the boundary between code generation (plan, emit,
 * compile, load, run: fusion.c emit*.c cc.c nvrtc.c program*.c) and the
 * compilation cache (cache*.c, signature.c, run.c).
 *
 * An artifact is what the cache stores: the compiled code (a shared
 * object's bytes for C, a cubin for CUDA) plus the plan's metadata text
 * that xg_program_load needs to run it (kernels, launch dims, buffers),
 * so a second process that finds the artifact on disk compiles nothing.
 */
#ifndef XG_IMPL_H
#define XG_IMPL_H

#include <stddef.h>

#include "xg.h"
#include "xlac/text.h"

typedef struct xg_artifact {
    xg_target target;
    int arch;           /* CUDA: compute capability (90); C: 0 */
    bool shape_generic; /* sizes are kernel arguments, not constants */
    void *code;         /* .so bytes, cubin bytes, or PTX text (is_ptx) */
    bool is_ptx; /* CUDA: NVRTC did not know the architecture, so code is PTX for the newest it
                    knows */
    size_t code_len;
    char *meta;         /* plan metadata, NUL-terminated text */
    char *source;       /* generated source (for dumps); may be NULL when loaded from disk */
    char *plan_text;    /* human-readable plan (for dumps); may be NULL */
    char *log;          /* compiler log; may be NULL */
    char *ptx;          /* CUDA: PTX text for dumps; may be NULL */
    double compiler_ms; /* time in the compiler proper (cc or NVRTC's cubin), not the dump's PTX */
} xg_artifact;

void xg_artifact_destroy(xg_artifact *a);

/*
 * Plans, emits and compiles body for concrete input types in_types (one
 * per body input). shape_generic: sizes become kernel arguments, valid for
 * every shape with the same ranks and broadcast pattern. arch: CUDA
 * compute capability. On failure the compiler's log is in the message;
 * when the compiler itself failed (XE_ERR_COMPILE), *out still holds the
 * source, plan and log (no code) for the dumps, and the caller destroys it.
 */
xe_code xg_build(const xe_graph *body, const xe_type *in_types, bool shape_generic,
                 xg_target target, int arch, const xg_options *o, xg_artifact **out, xe_status *st);

/* The compiler's identity in cache keys ("gcc (Debian 12.2.0-14) 12.2.0", "nvrtc 13.0"), asked of
   it (a process, or NVRTC's load); *known (may be NULL): it answered. xg_cache_compiler_id
   remembers it. */
const char *xg_compiler_id(xg_target target, const xg_options *o, bool *known);
/* The target's compiler files as they are now, cheaply (backend.h's compiler_stamp); false: not
 * told. */
bool xg_compiler_stamp(xg_target target, const xg_options *o, xe_text *out);

typedef struct xg_program xg_program;

/*
 * Loads an artifact built for body at in_types (dlopen of a private temp
 * file in o->tmp_dir / cudaLibraryLoadData). The program keeps its own copy of the body
 * and re-derives the plan, which must match the artifact's metadata.
 */
xe_code xg_program_load(const xg_artifact *a, const xe_graph *body, const xe_type *in_types,
                        const xg_options *o, xg_program **out, xe_status *st);
/* Runs with inputs on the program's device; outputs are new tensors there. */
xe_code xg_program_run(xg_program *p, xe_tensor *const *inputs, int n_inputs, xe_tensor **outputs,
                       int n_outputs, xe_status *st);
void xg_program_destroy(xg_program *p);

/* Writes module_NNNN.CLUSTER.{cu,c,ptx,plan.txt,log} into dir (NNNN a process-wide counter). */
xe_code xg_dump_artifact(const xg_artifact *a, const char *dir, const char *cluster_name,
                         const char *cache_key, xe_status *st);

#endif
