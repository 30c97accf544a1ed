/*
 * Sessions: the life of a graph from parse to results. Creating one
 * prepares its graph (prepare.c: shapes inferred, ops placed on devices,
 * the graph passes that plugins registered, the xlac clustering pass among
 * them); running one checks the fed inputs against the declared types,
 * runs the graph op by op (exec.c, handed the session's per-node state
 * store) and brings the outputs to the host.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "exec_impl.h"
#include "xlac/device.h"
#include "xlac/op.h"
#include "xlac/plugin.h"

static atomic_int next_session_id;

/* Whether g (or a body in it) holds a stateful op. */
static bool has_stateful(const xe_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_op_def *d = xe_op_get(g->nodes[i]->op);
        if ((d && (d->flags & XE_OPF_STATEFUL)) ||
            (g->nodes[i]->body && has_stateful(g->nodes[i]->body)))
            return true;
    }
    return false;
}

/*
 * The options, their strings copied: a graph pass runs at each new input shape's first run, long
 * after the caller's strings (a Python temporary) may be gone.
 */
static xe_code own_options(xe_session *s, const xe_session_options *opt, xe_status *st)
{
    s->opt = *opt;
    s->own_profile_path = opt->profile_path ? strdup(opt->profile_path) : NULL;
    s->own_plugin_config = opt->plugin_config ? strdup(opt->plugin_config) : NULL;
    s->opt.profile_path = s->own_profile_path;
    s->opt.plugin_config = s->own_plugin_config;
    if ((opt->profile_path && !s->own_profile_path) ||
        (opt->plugin_config && !s->own_plugin_config))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory creating a session");
    return XE_OK;
}

xe_session *xe_session_new(xe_graph *g, const xe_session_options *opt, xe_status *st)
{
    xe_session *s = calloc(1, sizeof *s);
    if (!s) {
        xe_graph_destroy(g);
        xe_fail(st, XE_ERR_NOMEM, "out of memory creating a session");
        return NULL;
    }
    s->graph = g;
    s->id = atomic_fetch_add(&next_session_id, 1);
    pthread_mutex_init(&s->run_lock, NULL);
    if (opt && own_options(s, opt, st) != XE_OK)
        goto fail;
    if (s->opt.profile_path) {
        if (xe_trace_start_for(s->opt.profile_path, s->id + 1, st) != XE_OK)
            goto fail;
        s->tracing = true;
    }
    if (g->maker) { /* prepared per input-shape signature, on the runs (specialise.c) */
        s->stateful = has_stateful(g);
        if (!(s->specs = xe_specs_new())) {
            xe_fail(st, XE_ERR_NOMEM, "out of memory creating a session");
            goto fail;
        }
        return s;
    }
    int was = xe_trace_owner_swap(s->id + 1); /* the clustering pass's slices are this session's */
    xe_code c = xe_session_prepare(s, &s->graph, st);
    xe_trace_owner_swap(was);
    if (c != XE_OK)
        goto fail;
    s->stateful = has_stateful(s->graph);
    return s;
fail:
    xe_session_destroy(s);
    return NULL;
}

xe_code xe_session_end_profiling(xe_session *s, xe_status *st)
{
    if (!s->tracing)
        return XE_OK;
    s->tracing = false;
    return xe_trace_stop(s->opt.profile_path, st);
}

void xe_session_destroy(xe_session *s)
{
    if (!s)
        return;
    xe_status st;
    xe_status_clear(&st);
    if (xe_session_end_profiling(s, &st) != XE_OK)
        fprintf(stderr, "xlac: warning: %s\n", st.msg);
    xe_node_states_free(&s->states);
    xe_specs_destroy(s->specs);
    xe_graph_destroy(s->graph);
    pthread_mutex_destroy(&s->run_lock);
    free(s->own_profile_path);
    free(s->own_plugin_config);
    free(s);
}

const xe_graph *xe_session_graph(const xe_session *s)
{
    return s->graph;
}

/* A fed tensor must match the declared dtype and every known dim. */
static xe_code check_feed(const xe_node *in, const xe_tensor *t, xe_status *st)
{
    bool ok = t && t->dtype == in->type.dtype && t->shape.rank == in->type.shape.rank;
    for (int d = 0; ok && d < t->shape.rank; d++)
        ok = in->type.shape.dims[d] < 0 || in->type.shape.dims[d] == t->shape.dims[d];
    if (ok)
        return XE_OK;
    char want[128], got[128] = "nothing";
    if (t)
        xe_type_str(&(xe_type){t->dtype, t->shape}, got, sizeof got);
    return xe_fail(st, XE_ERR_USAGE, "input %s: expected %s, got %s", in->name,
                   xe_type_str(&in->type, want, sizeof want), got);
}

static xe_code run_graph(xe_session *s, const xe_graph *g, xe_tensor *const *inputs,
                         xe_tensor **outputs, xe_status *st);

/* The trace's "run K" slice (every launch and op of the run lies inside it) and the run totals. */
static void trace_run(xe_session *s, int mode, double t0)
{
    double t1 = xe_now_us();
    int k = atomic_fetch_add(&s->runs, 1);
    if (mode & XE_TRACE_TOTALS)
        xe_trace_run_add(t1 - t0);
    if (!(mode & XE_TRACE_EVENTS))
        return;
    char name[32], args[64];
    snprintf(name, sizeof name, "run %d", k);
    snprintf(args, sizeof args, "\"session\":%d,\"run\":%d", s->id, k);
    xe_trace_slice(name, "run", t0, t1 - t0, args);
}

/* xe_session_run on this thread, its trace owner set. */
static xe_code run_fed(xe_session *s, xe_tensor *const *inputs, xe_tensor **outputs, xe_status *st)
{
    const xe_graph *g = s->graph;
    for (int i = 0; i < g->n_inputs; i++)
        if (check_feed(g->nodes[g->inputs[i]], inputs[i], st) != XE_OK)
            return st->code;
    xe_set_threads(s->opt.threads); /* this thread's team: kernels, generated loops, oneDNN */
    if (!s->specs)
        return run_graph(s, g, inputs, outputs, st);
    xe_spec_use u;
    if (xe_specs_get(s, inputs, &u, st) != XE_OK)
        return st->code;
    xe_tensor **all = malloc((size_t)(g->n_inputs + u.n_extras + 1) * sizeof *all);
    xe_code c = all ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int k = 0; all && k < g->n_inputs + u.n_extras; k++)
        all[k] = k < g->n_inputs ? inputs[k] : u.extras[k - g->n_inputs];
    if (c == XE_OK)
        c = run_graph(s, u.graph, all, outputs, st);
    free(all);
    xe_specs_put(s, &u);
    return c;
}

xe_code xe_session_run(xe_session *s, xe_tensor *const *inputs, xe_tensor **outputs, xe_status *st)
{
    int was = xe_trace_owner_swap(s->id + 1); /* its slices go to its profile (trace.h) */
    xe_code c = run_fed(s, inputs, outputs, st);
    xe_trace_owner_swap(was);
    return c;
}

/* Runs prepared graph g once (xe_session_run's contract). */
static xe_code run_graph(xe_session *s, const xe_graph *g, xe_tensor *const *inputs,
                         xe_tensor **outputs, xe_status *st)
{
    bool log =
        s->opt.log_placement && (s->opt.log_every || !atomic_exchange(&s->placement_logged, true));
    xe_exec ex = {.states = &s->states, .log = log ? (s->opt.log ? s->opt.log : stderr) : NULL};
    for (int i = 0; i < g->n_outputs; i++)
        outputs[i] = NULL;
    int mode = atomic_load_explicit(&xe_trace_mode, memory_order_relaxed);
    double t0 = mode ? xe_now_us() : 0;
    if (s->stateful)
        pthread_mutex_lock(&s->run_lock);
    xe_code c = xe_exec_graph(&ex, g, inputs, outputs, NULL, "", st);
    if (s->stateful)
        pthread_mutex_unlock(&s->run_lock);
    if (mode)
        trace_run(s, mode, t0);
    if (c == XE_OK)
        c = s->opt.outputs_on_device ? xe_device_synchronize_all(st)
                                     : xe_tensors_to_device(outputs, g->n_outputs, XE_DEV_CPU, st);
    if (c != XE_OK) {
        for (int i = 0; i < g->n_outputs; i++) {
            xe_tensor_release(outputs[i]);
            outputs[i] = NULL;
        }
    }
    return c;
}
