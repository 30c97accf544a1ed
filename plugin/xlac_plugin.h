/*
 * The plugin's core, shared by libxlac.so (whose ELF constructor calls
 * xlac_plugin_install), xlac-compile and the tests, which drive it without
 * LD_PRELOAD:
 *
 *   pass.c    the graph pass: mark, encapsulate, dumps, summary
 *   launch.c  the xlac_launch op: compiled code, or the per-op fallback
 */
#ifndef XLAC_PLUGIN_CORE_H
#define XLAC_PLUGIN_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "flags.h"
#include "xc.h"
#include "xlac/plugin.h"
#include "xlac/trace.h"

/* Per cluster (by name), for --summary (report.c, summary.c). */
typedef struct xlac_cluster_report {
    char *name;
    int ops;
    unsigned long long launches, hits, compiled, fallbacks;
    double launch_us;  /* every launch, compiles and fallbacks included */
    double hit_us;     /* launches that ran a program already in memory */
    double compile_us; /* compiles (and disk loads) inside launches */
    double ran_us;     /* launches that ran compiled code, their compiles left out */
} xlac_cluster_report;

/* One launch, as the trace and the summary see it (launch.c to report.c). */
typedef struct xlac_launch_info {
    xg_run_info info;  /* what the cache did */
    bool ran;          /* compiled code ran (else the body ran per op) */
    const char *why;   /* !ran: the reason */
    double t0;         /* the launch began (xe_now_us) */
    double t_fallback; /* !ran: the per-op run began */
    xe_device_timer
        *gpu; /* the compiled kernels' device time (tracing, on a device that keeps one), or NULL */
} xlac_launch_info;

/*
 * What the plugin keeps for its process: the flags, the launch op's id,
 * the compilation cache and the --stats counters. libxlac.so's entry
 * (preload.c) holds the one instance; the pass and the launch op receive
 * it as the user data of their registrations and read no global.
 */
typedef struct xlac_replay xlac_replay; /* replay.c: one cluster dumped with --dump_inputs */
typedef struct xlac_config xlac_config; /* config.c: one session's configuration */

#define XLAC_MAX_CONFIGS 64 /* distinct session configurations in one process */

typedef struct xlac_state {
    xlac_flags flags; /* the configuration, once installed */
    bool installed;   /* flags hold the configuration */
    int launch_op;    /* xlac_launch's op id, -1 before registration */
    atomic_bool
        warned_no_prefix;       /* the note on --clustering_debug vs XLAC_DUMP_GRAPH_PREFIX: once */
    pthread_mutex_t cache_lock; /* guards cache and cache_failed */
    xg_cache *cache;            /* created by the first launch from flags.xg */
    bool cache_failed;          /* creation failed once: clusters stay per op */
    atomic_ullong n_sessions;   /* sessions the pass saw: none, and the process writes no report */
    double family_start; /* when the run began ($XLAC_RUN_START): xe_publish's rule for reports */
    atomic_ullong n_clusters;    /* clusters built by the pass */
    atomic_ullong n_launches;    /* launch op executions */
    atomic_ullong n_fallbacks;   /* of which ran per op */
    atomic_ullong n_probes;      /* per-op runs only to be timed, after a compiled run (demotion) */
    pthread_mutex_t replay_lock; /* guards the replay entries */
    xlac_replay *replays;        /* clusters dumped for replay (--dump_inputs) */
    int n_replays, cap_replays;
    atomic_ullong n_compiling;   /* compiles begun (the terminal's progress line) */
    char *tracing;               /* the file --trace is recording (owned); NULL: none */
    pthread_mutex_t report_lock; /* guards graphs and reports */
    char **graphs;               /* --summary: each clustered graph's summary as JSON */
    int n_graphs, cap_graphs;
    xlac_cluster_report *reports; /* --summary: per cluster */
    int n_reports, cap_reports;
    uint64_t said[256];          /* XLAC_LOG=info: the (cluster, reason) fallbacks logged already */
    int n_said;                  /* under report_lock */
    pthread_mutex_t config_lock; /* guards n_configs and the writing of configs */
    _Atomic(xlac_config *) configs[XLAC_MAX_CONFIGS]; /* configuration k+1 (config.c); 0 is flags */
    int n_configs;
} xlac_state;

/* An empty state: not installed, nothing registered. */
void xlac_state_init(xlac_state *s);
/*
 * Registers the xlac_launch op and the clustering pass with s as their
 * user data (once: one state per process) and makes *f s's flags, taking
 * over what it owns (*f is zeroed). A second call only replaces the
 * flags. Checks the ABI version.
 */
xe_code xlac_plugin_install(xlac_state *s, xlac_flags *f, xe_status *st);
/*
 * The same under other names, with another pass function (that calls
 * xlac_pass): a second host of the plugin in one process (the onnxruntime
 * EP beside libxlac.so) registers its own launch op and pass.
 */
xe_code xlac_plugin_install_as(xlac_state *s, xlac_flags *f, const char *op_name,
                               const char *pass_name, xe_graph_pass_fn pass, xe_status *st);

/*
 * The clustering predicate of the flags' level: level 1 only fusible ops
 * (elementwise, reductions, argmax, shape ops, select, cast, softmax);
 * level 2 and jit blocks everything xg_supports says. user: xlac_flags.
 */
bool xlac_supports(const xe_graph *g, const xe_node *n, xe_device dev, bool must_compile,
                   void *user, const char **reason);
/* Clustering options from flags (the predicate above included). */
void xlac_cluster_options(const xlac_flags *f, xc_options *o);

/*
 * The number of the session configuration text names (config.c): 0 for
 * NULL or blank text (the process's flags), else the process's flags with
 * text's words applied, made on first use. A bad text is XE_ERR_USAGE.
 */
xe_code xlac_config_for(xlac_state *s, const char *text, int *id, xe_status *st);
/* The flags of configuration id (a launch node's @config); the process's for 0 or an unknown id. */
const xlac_flags *xlac_config_flags(xlac_state *s, int64_t id);
void xlac_config_free(xlac_state *s);

/* The graph pass (user: the xlac_state). */
xe_code xlac_pass(xe_graph **g, const xe_pass_ctx *ctx, void *user, xe_status *st);
/* The launch op's composite kernel (a->op_user: the xlac_state). */
xe_code xlac_launch_run(const xe_kernel_args *a, xe_tensor **outs, int n_outs, xe_status *st);

/*
 * --dump_inputs: writes the replay folder of launch node n (cluster name)
 * from its inputs in, unless a body of its fingerprint was dumped already
 * (replay.c). A folder that cannot be written is a warning.
 */
void xlac_replay_dump(xlac_state *s, const xe_node *n, const char *name, xe_tensor *const *in);
/* After a launch of n ran per op: once per dumped cluster, a note naming its replay command. */
void xlac_replay_note_fallback(xlac_state *s, const xe_node *n, const char *name);
void xlac_replay_free(xlac_state *s);
/* The log (log.c): a line "xlac: LEVEL: text" to stderr or the host's sink, when the level is on.
 */
typedef void (*xlac_log_sink)(int level, const char *text);
/* Sets the process's level (an xg_log_level; another value keeps it) and sink (NULL: stderr);
   returns the level it had. */
int xlac_log_set(int level, xlac_log_sink sink);
bool xlac_log_on(xg_log_level level);
void xlac_log_text(xg_log_level level, const char *text); /* xg_options.log */
void xlac_log(xg_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The progress line on a terminal (progress.c): xg_options.on_compile, and its end at shutdown. */
void xlac_progress_compile(void *user, const char *name, bool begin);
void xlac_progress_stop(void);
bool xlac_progress_shown(void); /* the line is on the terminal now: a log line erases it first */

/* Reports (report.c, summary.c): the trace, the progress line and the summary's state, at install.
 */
xe_code xlac_report_setup(xlac_state *s, xe_status *st);
/* --summary: keeps the clustering summary of g (owner: the composite whose body g is, or NULL). */
void xlac_report_graph(xlac_state *s, const xe_graph *g, const xc_clustering *c, int id,
                       const char *owner);
/* A launch of node n is over: its trace slices and its counts. Call only when li->t0 was taken. */
void xlac_report_launch(xlac_state *s, const xe_node *n, const char *name,
                        const xlac_launch_info *li);
/* Whether launches are timed (a trace or a summary is on): with both off, one load and one test. */
static inline bool xlac_report_timed(const xlac_state *s)
{
    return xe_trace_on() || s->flags.summary_path;
}
/* Writes --summary's file (at exit, after background compiles). */
xe_code xlac_report_write(xlac_state *s, int interrupted, xe_status *st);
void xlac_report_free(xlac_state *s);

/* Whether any cluster was formed (a jit block counts) or launched in this process. */
bool xlac_made_clusters(xlac_state *s);
/* "xlac: stats clusters=... launches=... ..." */
void xlac_print_stats(xlac_state *s, FILE *out);
/* The demoted programs (at most cap) into d, under the cache's lock; their count. */
int xlac_demotions(xlac_state *s, xg_demotion *d, int cap);
/* One line per demoted program ("xlac: demoted cluster_0 at f32[64,8]: compiled 1.200 ms, per op
 * 1.000 ms"), after --stats' two lines; nothing when none was. */
void xlac_print_demotions(xlac_state *s, FILE *out);
/* Waits for the background compiles still running (--async_compilation), so that stats are final.
 */
void xlac_launch_drain(xlac_state *s);
/* Frees the compilation cache (launch.c). */
void xlac_launch_shutdown(xlac_state *s);
/*
 * With more than one rank (xlac/comm.h): fails on every rank, naming the
 * first differing cluster, unless all ranks have the same clustered graph
 * (plugin/ranks.c).
 */
xe_code xlac_check_ranks(const xe_graph *g, int launch_op, xe_status *st);
/* Frees the compilation cache and the flags (at exit); no session may run after. */
void xlac_plugin_shutdown(xlac_state *s);

#endif
