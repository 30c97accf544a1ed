/*
 * Sessions: a graph made ready to run (inferred, placed, rewritten by the
 * registered passes) and run any number of times with fed inputs.
 *
 * xe_exec is the running state that composite kernels receive: with it a
 * composite op runs its body op by op (the fallback path) and reports the
 * ops it ran in the placement log and the profile.
 */
#ifndef XLAC_SESSION_H
#define XLAC_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "xlac/graph.h"
#include "xlac/status.h"
#include "xlac/tensor.h"

typedef struct xe_session_options {
    xe_place_mode place; /* --device */
    xe_device device;    /* not XE_DEV_CPU: every op with a kernel on this device goes there
                            (xe_graph_place_on), and `place` is not used */
    bool log_placement;  /* one "placement: NODE OP DEVICE [CLUSTER]" line per executed node,
                            on the session's first run (every run with log_every) */
    FILE *log;           /* where placement lines go; NULL: stderr */
    bool
        no_passes; /* run no registered graph pass: the plain op-by-op graph (xlac-run --compare) */
    const char
        *profile_path; /* the process's trace (xlac/trace.h) is recorded while the session lives
                          and written to this file when the last recorder stops; NULL: none */
    bool log_every;    /* placement lines on every run (default: the first run only) */
    int threads;       /* CPU threads of each run (--threads): the per-op kernels, generated
                          loops and oneDNN share them; 0: the calling thread's current count */
    const char *plugin_config; /* handed to the registered passes (xe_pass_ctx.plugin_config) as it
                                  is; for libxlac.so, XLAC_FLAGS words (--auto_jit=N among them)
                                  applied over the process's configuration; NULL: the process's. The
                                  session keeps copies of this and profile_path */
    bool outputs_on_device;    /* outputs stay on the device that computed them (the run still waits
                                  for them); the caller copies them with xe_tensor_to_device. Default:
                                  every output comes back to the host */
} xe_session_options;

/*
 * The CPU's one thread count (executor/devices/cpu/threads.c): per-op kernels,
 * generated OpenMP loops and oneDNN all run on the calling thread's OpenMP
 * team. xe_set_threads(n) sets it for the calling thread (n <= 0: left as
 * is); xe_threads() reads it; xe_physical_cores() is xlac-run's default.
 */
void xe_set_threads(int n);
int xe_threads(void);
int xe_physical_cores(void);

typedef struct xe_session xe_session;
typedef struct xe_exec xe_exec;

/* How many graph passes plugins registered (0: no plugin loaded, or an inactive one). */
int xe_graph_pass_count(void);

/* Takes ownership of g (also on failure). Infers, places, runs passes. */
xe_session *xe_session_new(xe_graph *g, const xe_session_options *opt, xe_status *st);
void xe_session_destroy(xe_session *s);
/*
 * Stops the session's recording of the trace (opt.profile_path) now, as
 * its destruction would: the file is written when no other recorder is
 * left. No-op when the session records nothing or stopped already.
 */
xe_code xe_session_end_profiling(xe_session *s, xe_status *st);
/* The graph as it will run (after passes). */
const xe_graph *xe_session_graph(const xe_session *s);

/*
 * Runs once; several threads may run one session at once (the graph is
 * only read; the runs of a graph that holds a stateful op, random, are
 * serialised so that each draws the next numbers). Destroying the session
 * while a run is in progress is the caller's error.
 * inputs: one host or device tensor per graph input, in order,
 * whose dtype matches and whose shape matches the declared one where it is
 * known. outputs: filled with one new reference per graph output, on the
 * host; the caller releases them.
 */
xe_code xe_session_run(xe_session *s, xe_tensor *const *inputs, xe_tensor **outputs, xe_status *st);

/*
 * Runs graph g (a composite node's body) op by op inside a running session.
 * inputs are bound to g's inputs in order; outputs receive new references
 * on their producers' devices. label, when not NULL, is the cluster name
 * shown in placement lines; device_prefix ("XLA_") is put before the
 * device name there.
 */
xe_code xe_exec_graph(xe_exec *ex, const xe_graph *g, xe_tensor *const *inputs, xe_tensor **outputs,
                      const char *label, const char *device_prefix, xe_status *st);
/*
 * The same with no placement lines: a run that the user's graph did not
 * ask for (the plugin's per-op timing probe), whose results are dropped.
 */
xe_code xe_exec_graph_quiet(xe_exec *ex, const xe_graph *g, xe_tensor *const *inputs,
                            xe_tensor **outputs, xe_status *st);

/* For composite kernels that run compiled code: log body node n as placed. */
void xe_exec_log_placement(xe_exec *ex, const xe_node *n, const char *device_prefix,
                           const char *label);
/* Trace: records one slice [start_us, now) named name, category cat, when tracing (xlac/trace.h).
 */
void xe_exec_trace(xe_exec *ex, const char *name, const char *cat, double start_us);
/* Microseconds on a monotonic clock. */
double xe_now_us(void);

#endif
