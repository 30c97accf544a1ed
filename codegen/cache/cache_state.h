/*
 * Private to the compilation cache (codegen/cache/) and its run step
 * (codegen/run/run_step.c): the in-memory cache's entries and per-cluster
 * state (cache.c), the compile policy and queue that decide, claim and
 * compile signatures (compile_policy.c), and the launch context that one
 * xg_run_cluster call threads through them.
 *
 * Every field of an entry, a cluster state and the cache's stats is read
 * and written under the cache's lock; nothing compiles while it is held.
 */
#ifndef XG_CACHE_STATE_H
#define XG_CACHE_STATE_H

#include <pthread.h>
#include <stdbool.h>

#include "xe_hash.h"

#include "cache_impl.h"
#include "xlac/text.h"

#define XG_DEMOTE_RUNS 3      /* compiled runs timed, after the first, before a verdict */
#define XG_DEMOTE_MARGIN 1.02 /* slower than per op by more than timing noise */
#define XG_DEMOTE_FLOOR_US                                                                         \
    5 /* and by more than this: a few-microsecond run's jitter is no verdict */
#define XG_PER_OP_RUNS                                                                             \
    2 /* per-op runs of a signature measured (the fastest kept): probes stop there */
#define XG_DEMOTIONS_KEPT 64 /* demotions remembered for xg_cache_demotions */

/* Why a call runs per op (xg_run_info.reason): fixed phrases. */
#define WHY_OOM "out of memory"
#define WHY_FAILED "failed to compile earlier"
#define WHY_SLOW "slower compiled than per op (demoted)"
#define WHY_COMPILING "being compiled (by another thread, or in the background)"
#define WHY_THRESHOLD "seen fewer than --compile_threshold times"
#define WHY_BUDGET "compiled --max_compiles_per_cluster times already"
#define WHY_ASYNC "compiling in the background (--async_compilation)"
#define WHY_COMPILE "compile failed"
#define WHY_SHAPES "the program cannot serve these shapes"
#define WHY_RUN "the compiled program failed to run"

/* One signature key's program and history. */
typedef struct xg_entry {
    char *key;
    xg_program *prog; /* loaded program, NULL until compiled */
    int seen;         /* times this signature was asked for */
    bool failed, compiling;
    bool slow;   /* demoted: its compiled runs were slower than its per-op runs */
    int recheck; /* loaded with an earlier process's close verdict (verdict.c), agreed by this
                    many: measured again, the verdict rewritten or removed */
    /* the measurements are the signature's (a shape-generic program's are in the entry of the
       shape measured) */
    double per_op_us;        /* fastest per-op run reported (xg_cluster_per_op_time), 0: none */
    int per_op_n;            /* per-op runs measured (none that overlapped a compile) */
    int probes;              /* per-op runs asked of the caller (xg_run_info.probe) */
    double run_us;           /* fastest compiled run timed, the first excluded */
    int timed;               /* compiled runs timed so far */
    struct xg_entry *probed; /* a shape-generic program's: the one shape it has probes run for */
    UT_hash_handle hh;
} xg_entry;

/* Per cluster (its name and fingerprint: twin clusters share programs, not budgets). */
typedef struct xg_cluster_state {
    char id[200]; /* key: "fingerprint|name" */
    int compiles;
    int n_patterns;
    char patterns[16][40]; /* shape_pattern hashes */
    int pattern_sigs[16];  /* signatures seen per pattern */
    bool stopped_warned;
    /* the signature that ran last (the hot path of a loop that repeats one shape skips
       formatting and hashing its key): entry, key, input types, target */
    xg_entry *hit;
    xg_entry *hit_sig; /* its signature's own entry (hit itself, unless hit is shape-generic) */
    char *hit_key;
    xe_type *hit_types;
    int hit_n, hit_arch;
    xg_target hit_target;
    UT_hash_handle hh;
} xg_cluster_state;

struct xg_cache {
    xg_options o;
    char *owned[4]; /* copies of o's strings (cache_dir, dump_dir, cc, tmp_dir): the caller's may go
                       first */
    xg_disk disk;
    pthread_mutex_t lock;
    xg_entry *entries;
    xg_cluster_state *clusters;
    xg_stats stats;
    int async_running;
    pthread_cond_t async_done;
    int compiling_now;          /* compile_job calls under way, on any thread (under lock) */
    double last_compile_end_us; /* when the last one ended (xe_now_us), 0: none yet */
    xg_demotion demotions[XG_DEMOTIONS_KEPT]; /* the first demotions (demote.c) */
    int n_demotions;
    /* each target's compiler id, once told (compiler_memo.c; under compiler_lock, taken after lock)
     */
    pthread_mutex_t compiler_lock;
    bool compiler_told[XG_TARGET_MAX];
    char compiler_id[XG_TARGET_MAX][256];
};

/* The compiler id of target t in c's keys: asked once a process, remembered on disk
 * (compiler_memo.c). */
const char *xg_cache_compiler_id(xg_cache *c, xg_target t);

/* One launch of a cluster: what xg_run_cluster_info was asked, and what it has found so far. */
typedef struct xg_launch {
    xg_cache *c;
    const xe_graph *body;
    const char *name;         /* the cluster's name, for messages */
    char fp[40];              /* body's fingerprint */
    xe_tensor *const *inputs; /* n of them (body->n_inputs), on the target's device */
    int n;
    xe_tensor **outputs; /* body->n_outputs; NULL when nothing runs (xg_cluster_per_op_time) */
    xe_device dev;       /* where the inputs live and the program runs */
    xg_target target;
    int arch;
    bool must;         /* must-compile: a failure is the caller's error, not a warning */
    const char *key;   /* the signature key decided on ("" until then) */
    xg_run_info *info; /* what the call did; NULL when nothing runs */
} xg_launch;

/* What a launch measures for demotion (demote.c): its program's entry and its signature's. */
typedef struct xg_timing {
    xg_entry *e;   /* the entry whose program runs (shape-generic or the signature's own) */
    xg_entry *sig; /* the signature's own entry, where its times are kept */
    bool timed;    /* this run is timed */
} xg_timing;

typedef enum xg_decision {
    XG_DECIDE_RUN,      /* the entry's program is ready */
    XG_DECIDE_FALLBACK, /* run per op this time (info->reason says why) */
    XG_DECIDE_COMPILE,  /* this thread compiles (the entry's compiling set) */
} xg_decision;

/* ---- cache.c: entries, cluster state, keys, stats ----------------------------------------- */

/* CLOCK_MONOTONIC in milliseconds. */
double xg_now_ms(void);
/*
 * l for a launch of body (fingerprint: xg_fingerprint(body) or NULL) on
 * dev with inputs; must, outputs and info start false and NULL, key "".
 */
void xg_launch_init(xg_launch *l, xg_cache *c, const xe_graph *body, const char *fingerprint,
                    xe_device dev, xe_tensor *const *inputs);
/* Appends l's signature key to key; pattern given, its shape-generic program's key. */
void xg_launch_key(const xg_launch *l, const char *pattern, xe_text *key);
/* Under the lock: key's entry, made on first use; NULL when out of memory. */
xg_entry *xg_entry_get(xg_cache *c, const char *key);
/* Under the lock: the state of cluster name of fingerprint fp, made on first use; NULL when out of
 * memory. */
xg_cluster_state *xg_cluster_get(xg_cache *c, const char *fp, const char *name);
/* Under the lock: counts a new signature under its shape pattern; true when the pattern has gone
 * generic. */
bool xg_pattern_is_dynamic(const xg_cache *c, xg_cluster_state *s, const char *pattern,
                           bool new_signature);
/* Adds one to a counter of c->stats (takes the lock). */
void xg_cache_count(xg_cache *c, uint64_t *counter);
/* Marks a signature failed (it runs per op from now on); warns once when what is given. Takes the
 * lock. */
void xg_mark_failed(xg_cache *c, const char *key, const char *name, const char *what,
                    const xe_status *st);

/* ---- compile_policy.c: decide, claim, compile (here or in the background), demote ---------- */

/*
 * Under the lock: what l does now. Fills key with the signature key and
 * *out with its entry (when there is one), *sig with the entry of l's own
 * signature (*out itself unless *out is a shape-generic program's); on
 * XG_DECIDE_FALLBACK l->info->reason says why.
 */
xg_decision xg_decide(xg_launch *l, xe_text *key, xg_entry **out, xg_entry **sig);
/* Under the lock: whether this thread may compile e's program now (then e->compiling is set). */
bool xg_claim_compile(const xg_launch *l, xg_cluster_state *s, xg_entry *e);
/*
 * Compiles (or starts compiling, --async_compilation) the program of key
 * for l, without the lock. *prog is NULL when nothing is ready; an error
 * only under must-compile.
 */
xe_code xg_compile_signature(const xg_launch *l, const char *key, xg_program **prog, xe_status *st);

/* ---- demote.c: per-op and compiled times of a signature, probes, the verdict ----------------- */

/* Under the lock: whether a run that ended now and took us microseconds overlapped no compile. */
bool xg_quiet_run(const xg_cache *c, double us);
/* Under the lock: whether the next run of program entry e for signature sig is timed. */
bool xg_wants_timing(const xg_cache *c, const xg_entry *sig, const xg_entry *e);
/*
 * Under the lock: whether the caller should run l per op once more, timed,
 * after e's program ran for signature sig (then counted as asked).
 */
bool xg_wants_probe(const xg_launch *l, xg_entry *sig, xg_entry *e);
/*
 * A timed compiled run of program entry e for l's signature sig (takes the
 * lock); after XG_DEMOTE_RUNS of them (the first excluded), the verdict.
 */
void xg_note_run(const xg_launch *l, xg_entry *sig, xg_entry *e, double us);
/* Under the lock: program entry e (cluster name), loaded from disk, was demoted by an earlier
 * process on these times (verdict.c): demoted now, counted and recorded. */
void xg_demoted_earlier(xg_cache *c, xg_entry *e, const char *name, bool generic,
                        double compiled_us, double per_op_us);

#endif
