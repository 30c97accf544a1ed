/*
 * Private to the runtime: the state shared by session.c (lifecycle,
 * feeding), prepare.c (inference, placement, passes), specialise.c (graphs
 * per signature), node_state.c (per-node state) and exec.c (running a
 * graph op by op).
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
typedef struct xe_specs xe_specs;           /* specialise.c: graphs per input-shape signature */

struct xe_session {
    xe_graph *graph;         /* as it runs, after passes */
    xe_session_options opt;  /* the caller's, its strings the session's own copies (below) */
    char *own_profile_path;  /* opt.profile_path points here */
    char *own_plugin_config; /* opt.plugin_config points here: the passes read it at every new shape
                              */
    int id;                  /* process-wide session number */
    bool tracing;            /* opt.profile_path started the process's trace */
    atomic_bool
        placement_logged;  /* a run logged placement lines (once per session, unless log_every) */
    atomic_int runs;       /* runs so far (the trace's "run K") */
    xe_node_state *states; /* per-node state of stateful ops */
    bool stateful;         /* the graph holds a stateful op (random): its runs take run_lock */
    pthread_mutex_t
        run_lock;    /* serialises the runs of a stateful graph (each draws the next numbers) */
    xe_specs *specs; /* graph->maker: the prepared graph of each signature fed */
};

struct xe_exec {
    xe_node_state **states; /* the session's per-node state store (node_state.c) */
    FILE *log;              /* placement log, NULL when off */
};

/* node_state.c: the counter of stateful node n in *states (0 on first use); NULL on OOM. */
uint64_t *xe_node_state_counter(xe_node_state **states, const xe_node *n);
/* The kernel cache slot of node n (empty on first use, freed with the store); NULL on OOM. */
xe_kernel_cache *xe_node_state_cache(xe_node_state **states, const xe_node *n);
/* Frees every entry of *states (and each cache through its free). */
void xe_node_states_free(xe_node_state **states);

/* prepare.c: infers, places and runs the registered passes on *g (which a pass may replace). */
xe_code xe_session_prepare(xe_session *s, xe_graph **g, xe_status *st);

/* specialise.c */
xe_specs *xe_specs_new(void);
void xe_specs_destroy(xe_specs *c);
/* A run's loan of a prepared graph: the graph, the values of its extra inputs. */
typedef struct xe_spec_use {
    xe_graph *graph;
    xe_tensor **extras;
    int n_extras;
    int slot; /* -1: not cached (own holds it) */
    struct spec *own;
} xe_spec_use;
/* The prepared graph for the shapes of in (built on a miss); give it back with xe_specs_put. */
xe_code xe_specs_get(xe_session *s, xe_tensor *const *in, xe_spec_use *u, xe_status *st);
void xe_specs_put(xe_session *s, xe_spec_use *u);
/* generalise.c: a (built at the fed shapes) rewritten to serve every size, b the same model
   built with each symbolic dim of tmpl one larger; NULL when what differs cannot be rewritten.
   *extras: the values of the inputs it adds after tmpl's; why (why_len bytes, may be NULL): the
   first thing that could not be rewritten, or empty. */
xe_graph *xe_generalise(const xe_graph *a, const xe_graph *b, const xe_graph *tmpl,
                        xe_tensor ***extras, int *n_extras, char *why, size_t why_len);

#endif
