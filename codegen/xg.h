/*
 * The code generator's public face, used by the plugin (and xlac-compile).
 * It receives a cluster as the executor's own IR (the body graph of an
 * xlac_launch node) and never sees the clustering pass's internals.
 *
 *   xg_supports      the predicate handed to the clustering pass
 *   xg_run_cluster   look up / compile / run one cluster for concrete inputs
 *   xg_compile_ahead compile a cluster at its declared shapes, no execution
 */
#ifndef XG_H
#define XG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xlac/graph.h"
#include "xlac/status.h"
#include "xlac/tensor.h"

/* A code-generation target: its index in the build's table of targets (gen/xg_targets.c, from
   XG_TARGETS in CMakeLists.txt), counted by xg_target_count, never named by a constant. */
typedef int xg_target;
#define XG_TARGET_MAX 8 /* at most this many targets in a build: the size of per-target arrays */

/* How many targets this build has. */
int xg_target_count(void);
/* The target called name, -1 when none is (xg_target_by_name says so as a bool). */
xg_target xg_target_named(const char *name);
/* The build's two targets as the tests name them: C11 + OpenMP (system cc, dlopen) and CUDA C
   (NVRTC, the CUDA runtime). */
#define XG_TARGET_C xg_target_named("c")
#define XG_TARGET_CUDA xg_target_named("cuda")

/* What callers outside codegen/ know of a target: the public part of its backend. */
typedef struct xg_target_info {
    const char *name;    /* "c", "cuda": --target, cache keys, dump file names */
    const char *device;  /* the word of the device kind its kernels run on ("cpu", "gpu") */
    bool uses_arch;      /* compiled for a device architecture (--arch) */
    bool system_cc;      /* compiled by the system C compiler (--cc / $CC names it) */
    bool host_program;   /* its programs are host code that an ahead-of-time entry point calls */
    const char *missing; /* why this build cannot compile for it; NULL: it can */
} xg_target_info;

const xg_target_info *xg_target_get(xg_target t);
/* The target called name ("c", "cuda"); false when none is. */
bool xg_target_by_name(const char *name, xg_target *t);
/* The target whose kernels run on dev's kind (the host target when none does). */
xg_target xg_target_for_device(xe_device dev);
/* The first instance of the device kind t's kernels run on (GPU:0 for cuda). */
xe_device xg_target_device(xg_target t);
/* The target whose programs are host code (xg_target_info.host_program): the AOT entry point's. */
xg_target xg_host_target(void);
/* The compile step in words, for messages: "cc", "NVRTC to cubin", "NVRTC to PTX". */
const char *xg_compiler_words(xg_target t, bool is_ptx);

/* How much a line says, as XLAC_LOG names it (the plugin reads it, plugin/flags.c). */
typedef enum xg_log_level {
    XG_LOG_ERROR,   /* XLAC_LOG=error: errors only */
    XG_LOG_WARNING, /* warning (the default): a cluster that fails to compile, a cache that is not
                       used */
    XG_LOG_INFO, /* info: one line per compile and disk load (cluster, ops, ms), per fallback reason
                  */
    XG_LOG_DEBUG, /* debug: every fallback */
} xg_log_level;

/* Defaults: plan/options.c's table (xg_options_table), the one place they are written. */
typedef struct xg_options {
    bool fast_math;        /* --fast_math: may reassociate floating-point math (changes code) */
    int compile_threshold; /* --compile_threshold */
    bool demote; /* --demote: compiled runs are measured against per-op runs of the same signature
                    (probed when none ran), and a slower program is sent per op */
    int dynamic_after;            /* --dynamic_after */
    int max_compiles_per_cluster; /* --max_compiles_per_cluster */
    bool async_compilation;       /* --async_compilation */
    bool disk_cache;              /* --disk_cache */
    const char *cache_dir; /* the disk cache's folder; NULL: none (the plugin resolves --cache_dir,
                              $XDG_CACHE_HOME/xlac, ~/.cache/xlac) */
    const char *dump_dir;  /* XLAC_DUMP_TO, NULL: no dumps */
    bool level2;           /* XLAC_AUTO_JIT=2: matmul (and on the CPU conv2d) is compilable */
    bool library_conv; /* conv2d may join CPU clusters as a library step (xlac-compile's programs
                          have no conv step yet: false) */
    const char *cc;    /* C compiler command (the plugin puts $CC here) */
    const char
        *tmp_dir;     /* folder for compiler and loader temp files (the plugin puts $TMPDIR here) */
    int cache_max_mb; /* --cache_max_mb (0: no limit): LRU eviction past it */
    int compile_timeout_s; /* --compile_timeout_s (0: none): the compiler is killed past it */
    /* called before (begin) and after each compile or disk load, on the thread doing it; NULL: none
     */
    void (*on_compile)(void *user, const char *cluster_name, bool begin);
    void *on_compile_user;
    /* every line the code generator gives (text without "xlac: LEVEL: " and newline), on any
       thread; the callee filters by level. NULL: warnings and errors to stderr (xg_log) */
    void (*log)(xg_log_level level, const char *text);
} xg_options;

/* One line through o->log: "cluster_0 failed to compile (...)"; see xg_options.log. */
void xg_log(const xg_options *o, xg_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

typedef enum xg_option_kind {
    XG_OPT_BOOL,   /* a bool field */
    XG_OPT_INT,    /* an int field */
    XG_OPT_STRING, /* a const char * field */
} xg_option_kind;

/* One row of the options table: an xg_options field, its default, and whether it changes generated
 * code. */
typedef struct xg_option {
    const char *name; /* as the flag is called ("fast_math"), and in signature keys */
    xg_option_kind kind;
    size_t field;          /* offsetof in xg_options */
    long long dflt;        /* XG_OPT_BOOL (0 or 1), XG_OPT_INT: the default */
    const char *dflt_text; /* XG_OPT_STRING: the default (NULL: none) */
    bool changes_code; /* the generated program depends on it: it is part of every signature key */
} xg_option;

/* The options table (every field but the callbacks); *n gets its length. */
const xg_option *xg_options_table(int *n);
/* Every option at its default (the table's); nothing is read from the environment (the caller
 * resolves it). */
void xg_options_default(xg_options *o);
/* Row r's value in o as text ("0", "16", "cc"; a NULL string as ""). */
void xg_option_value(const xg_options *o, const xg_option *r, char *buf, size_t len);

/* True when the code generator can compile node n (of graph g) on device dev. */
bool xg_supports(const xe_graph *g, const xe_node *n, xe_device dev, const xg_options *o);
/* Why not, when it cannot (a fixed, short phrase such as "no code generator"). */
const char *xg_unsupported_reason(const xe_graph *g, const xe_node *n, xe_device dev,
                                  const xg_options *o);

typedef struct xg_stats {
    uint64_t launches;   /* xg_run_cluster calls that ran compiled code */
    uint64_t compiles;   /* programs compiled (memory and disk misses) */
    uint64_t cache_hits; /* in-memory hits */
    uint64_t disk_hits;  /* programs loaded from the disk cache */
    uint64_t
        disk_rejects;   /* disk cache files refused: unsafe, truncated, corrupt, foreign or stale */
    uint64_t fallbacks; /* calls answered XG_FALLBACK */
    uint64_t
        demoted; /* signatures sent per op: compiled slower than per op (xg_cluster_per_op_time) */
    double compile_ms;   /* total time spent compiling */
    double disk_load_ms; /* total time spent loading programs from the disk cache */
} xg_stats;

typedef struct xg_cache xg_cache;

/* One per process; safe for several threads running sessions at once. */
xg_cache *xg_cache_new(const xg_options *o, xe_status *st);
void xg_cache_destroy(xg_cache *c);
void xg_cache_stats(xg_cache *c, xg_stats *out);
/* Waits until no background compile (--async_compilation) is running, so that stats are final. */
void xg_cache_wait(xg_cache *c);

typedef enum xg_outcome {
    XG_RAN,      /* outputs filled by compiled code */
    XG_FALLBACK, /* not (yet) compiled or failed: the caller runs the body per op */
} xg_outcome;

/* What one xg_run_cluster_info call did, for the trace and the reports. */
typedef struct xg_run_info {
    bool want_signature; /* in: fill signature (a copy of the key: only when someone reads it) */
    bool can_probe;      /* in: the caller runs the body per op once more when asked (probe) */
    bool probe;         /* out: run the body per op now, timed, and tell xg_cluster_per_op_time (the
                           per-op time demotion measures this signature's compiled runs against) */
    bool hit;           /* the program was in memory already */
    bool compiled;      /* this call compiled (or loaded from disk) the program it ran */
    double compile_ms;  /* time this call spent compiling or loading (0 when async) */
    const char *reason; /* XG_FALLBACK: why, a fixed phrase */
    char signature[200]; /* the signature key, cut to fit */
} xg_run_info;

/*
 * Runs cluster `body` (inputs bound in order, outputs in order) on dev;
 * fingerprint is xg_fingerprint(body) or NULL.
 * inputs live on dev; outputs receive new tensors on dev. On a compile
 * failure: with must_compile an error naming the cluster and the
 * compiler's first log line; without, one warning per signature on stderr
 * and *outcome = XG_FALLBACK.
 */
xe_code xg_run_cluster(xg_cache *c, const xe_graph *body, const char *fingerprint,
                       const char *cluster_name, xe_device dev, xe_tensor *const *inputs,
                       xe_tensor **outputs, bool must_compile, xg_outcome *outcome, xe_status *st);
/* The same, telling what it did in *info (hit or compile, the fallback's reason, the signature). */
xe_code xg_run_cluster_info(xg_cache *c, const xe_graph *body, const char *fingerprint,
                            const char *cluster_name, xe_device dev, xe_tensor *const *inputs,
                            xe_tensor **outputs, bool must_compile, xg_outcome *outcome,
                            xg_run_info *info, xe_status *st);

/*
 * The caller ran cluster `body` per op (an XG_FALLBACK, or a probe that
 * xg_run_info.probe asked for) on inputs in us microseconds: the
 * signature's per-op time, which its compiled runs are measured against.
 * Compiled code slower than that is demoted: that program runs per op
 * from then on (a warning, xg_stats.demoted, xg_cache_demotions).
 */
void xg_cluster_per_op_time(xg_cache *c, const xe_graph *body, const char *fingerprint,
                            xe_device dev, xe_tensor *const *inputs, double us);

/* One demotion: which cluster, at which input types, and the times compared. */
typedef struct xg_demotion {
    char cluster[128]; /* the cluster's name */
    char types[256];   /* the input types of the signature measured ("f32[64,8], f32[64,8]") */
    bool generic;      /* the program demoted is shape-generic: every shape it served runs per op */
    double compiled_us; /* fastest compiled run timed (the first excluded) */
    double per_op_us;   /* fastest per-op run of the same signature */
} xg_demotion;

/* Copies up to max of c's demotions, in the order they happened, into out; returns how many. */
int xg_cache_demotions(xg_cache *c, xg_demotion *out, int max);

/*
 * Hex XXH3-128 of a cluster body's canonical text (ops, attributes, dtypes,
 * wiring, constant values; not names or annotations): what the cache keys
 * on. xg_run_cluster computes it when given NULL; callers that launch the
 * same body often compute it once.
 */
void xg_fingerprint(const xe_graph *body, char out[40]);
/* The cache key of body at input types (fixed shapes), as the JIT forms it; malloc'd, NULL if out
 * of memory. */
char *xg_signature_key(const xe_graph *body, const xe_type *types, xg_target target, int arch,
                       const xg_options *o);

/*
 * The architecture NVRTC compiles for on a device of arch: arch itself
 * (a cubin), else the newest older one it knows (PTX, which the driver
 * compiles for the device); 0 when it knows none (or no CUDA in this build).
 */
int xg_nvrtc_arch_for(int arch);

/*
 * Ahead-of-time: compiles body at its declared (fully known) input shapes
 * for target (arch such as 90 for CUDA; ignored for C), writing the dump
 * files and the .so / .cubin (.ptx when NVRTC does not know arch) into
 * out_dir. No GPU needed. compiler_ms and is_ptx (may be NULL) get the
 * time spent in the compiler proper and whether the code is PTX.
 * seed_dir (NULL: none): a disk cache folder that also receives the
 * program, under the key the JIT looks up (xlac-compile --seed-cache).
 */
xe_code xg_compile_ahead(const xe_graph *body, const char *cluster_name, xg_target target, int arch,
                         const char *out_dir, const char *seed_dir, const xg_options *o,
                         double *compiler_ms, bool *is_ptx, xe_status *st);

/*
 * Ahead-of-time, the whole graph (target C): g is the clustered graph
 * (launch nodes: composite nodes annotated @cluster; `get`s pick their
 * outputs). Writes into out_dir NAME.h (int NAME_run(inputs..., outputs...)
 * with every buffer's dtype and shape), NAME.c and NAME.cluster_K.c (the
 * entry point and each cluster's generated kernels) and NAME.so, linked
 * with libxlac_executor.so from exec_lib_dir when a matmul step calls it.
 * name: the graph's name, made a C identifier NAME (so_path gets the
 * .so's path). Ops between clusters run per op through libxlac_executor
 * (xe_aot_graph_run); a node that cannot (a data-dependent shape, no CPU
 * kernel), or an input with `?` dims, is XE_ERR_UNSUPPORTED naming them.
 */
xe_code xg_aot_graph(const xe_graph *g, const char *name, const char *out_dir,
                     const char *exec_lib_dir, const xg_options *o, char *so_path, size_t so_len,
                     xe_status *st);

#endif
