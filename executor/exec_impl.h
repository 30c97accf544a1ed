/*
 * Private: the state shared by session.c (lifecycle, passes, feeding) and
 * exec.c (running a graph op by op).
 */
#ifndef XE_EXEC_IMPL_H
#define XE_EXEC_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "xlac/op.h"
#include "xlac/trace.h"
#include "xlac/session.h"

typedef struct xe_node_state xe_node_state; /* uthash: node pointer -> run counter, kernel cache */

struct xe_session {
    xe_graph *graph;          /* as it runs, after passes */
    xe_session_options opt;
    int id;                   /* process-wide session number */
    bool tracing;             /* opt.profile_path started the process's trace */
    atomic_bool placement_logged; /* a run logged placement lines (once per session, unless log_every) */
    atomic_int runs;          /* runs so far (the trace's "run K") */
    xe_node_state *states;    /* per-node state of stateful ops */
    bool stateful;            /* the graph holds a stateful op (random): its runs take run_lock */
    pthread_mutex_t run_lock; /* serialises the runs of a stateful graph (each draws the next numbers) */
};

struct xe_exec {
    xe_session *session;
    FILE *log;                /* placement log, NULL when off */
};

/* The counter of stateful node n (created at 0 on first use); NULL on OOM. */
uint64_t *xe_session_node_state(xe_session *s, const xe_node *n);
/* The kernel cache slot of node n (created empty on first use, freed with the session); NULL on OOM. */
xe_kernel_cache *xe_session_node_cache(xe_session *s, const xe_node *n);

#endif
