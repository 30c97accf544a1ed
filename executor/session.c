/*
 * Sessions: the life of a graph from parse to results. Creating one infers
 * shapes, places ops on devices and runs the graph passes that plugins
 * registered (the xlac clustering pass among them); running one checks the
 * fed inputs against the declared types, runs the graph op by op and
 * brings the outputs to the host.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "xe_hash.h"

#include "exec_impl.h"
#include "xlac/device.h"
#include "xlac/op.h"
#include "xlac/plugin.h"

#define XE_MAX_PASSES 16

typedef struct pass {
    char name[64];
    xe_graph_pass_fn fn;
    void *user;
} pass;

static pass passes[XE_MAX_PASSES];
static int n_passes;
static atomic_int next_session_id;

struct xe_node_state {
    const xe_node *node; /* key */
    uint64_t counter;
    xe_kernel_cache cache;
    UT_hash_handle hh;
};

xe_code xe_register_graph_pass(const char *name, xe_graph_pass_fn fn, void *user, xe_status *st)
{
    if (!name || !fn)
        return xe_fail(st, XE_ERR_USAGE, "xe_register_graph_pass: name and function are required");
    if (n_passes == XE_MAX_PASSES)
        return xe_fail(st, XE_ERR_USAGE, "xe_register_graph_pass: at most %d passes", XE_MAX_PASSES);
    passes[n_passes] = (pass){.fn = fn, .user = user};
    snprintf(passes[n_passes].name, sizeof passes[n_passes].name, "%s", name);
    n_passes++;
    return XE_OK;
}

/* Node n's entry, created on first use; NULL on OOM. */
static struct xe_node_state *node_entry(xe_session *s, const xe_node *n)
{
    struct xe_node_state *e = NULL;
    HASH_FIND_PTR(s->states, &n, e);
    if (!e) {
        if (!(e = calloc(1, sizeof *e)))
            return NULL;
        e->node = n;
        HASH_ADD_PTR(s->states, node, e);
        if (!xe_hash_added(e)) {
            free(e);
            return NULL;
        }
    }
    return e;
}

uint64_t *xe_session_node_state(xe_session *s, const xe_node *n)
{
    struct xe_node_state *e = node_entry(s, n);
    return e ? &e->counter : NULL;
}

xe_kernel_cache *xe_session_node_cache(xe_session *s, const xe_node *n)
{
    struct xe_node_state *e = node_entry(s, n);
    return e ? &e->cache : NULL;
}

/*
 * One note when a dump names the plugin's launch op (xlac_launch) and no
 * plugin registered it. A user's own composite (`f = block(x) {...}`) is
 * an ordinary `call` and gets no note.
 */
static void note_unregistered(const xe_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const char *op = xe_node_attr_string(g->nodes[i], "@op", NULL);
        if (g->nodes[i]->op == XE_OP_CALL && op && !strncmp(op, "xlac_", 5)) {
            fprintf(stderr, "xlac: note: op '%s' is not registered (is libxlac.so loaded?); "
                            "running its body op by op\n", op);
            return;
        }
    }
}

int xe_graph_pass_count(void)
{
    return n_passes;
}

static xe_code run_passes(xe_session *s, xe_graph **g, xe_status *st)
{
    xe_pass_ctx ctx = {.session_id = s->id, .place_mode = s->opt.place, .plugin_config = s->opt.plugin_config};
    for (int i = 0; i < n_passes && !s->opt.no_passes; i++) {
        /* an error in the user's graph names its line already; others name the pass */
        if (passes[i].fn(g, &ctx, passes[i].user, st) != XE_OK)
            return st->code == XE_ERR_GRAPH ? st->code : xe_status_prefix(st, "graph pass %s: ", passes[i].name);
    }
    return XE_OK;
}

/* Whether g (or a body in it) holds a stateful op. */
static bool has_stateful(const xe_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_op_def *d = xe_op_get(g->nodes[i]->op);
        if ((d && (d->flags & XE_OPF_STATEFUL)) || (g->nodes[i]->body && has_stateful(g->nodes[i]->body)))
            return true;
    }
    return false;
}

/* g on the device the options name, else by the place mode. */
static xe_code place_session(const xe_session *s, xe_graph *g, xe_status *st)
{
    if (s->opt.device != XE_DEV_CPU)
        return xe_graph_place_on(g, s->opt.device, st);
    return xe_graph_place(g, s->opt.place, st);
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
    if ((opt->profile_path && !s->own_profile_path) || (opt->plugin_config && !s->own_plugin_config))
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
        if (xe_trace_start(s->opt.profile_path, st) != XE_OK)
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
    if (xe_session_prepare(s, &s->graph, st) != XE_OK)
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
    return xe_trace_stop(st);
}

xe_code xe_session_prepare(xe_session *s, xe_graph **g, xe_status *st)
{
    if (xe_graph_infer(*g, st) != XE_OK || place_session(s, *g, st) != XE_OK || run_passes(s, g, st) != XE_OK)
        return st->code;
    note_unregistered(*g);
    return XE_OK;
}

void xe_session_destroy(xe_session *s)
{
    if (!s)
        return;
    xe_status st;
    xe_status_clear(&st);
    if (xe_session_end_profiling(s, &st) != XE_OK)
        fprintf(stderr, "xlac: warning: %s\n", st.msg);
    struct xe_node_state *e, *tmp;
    HASH_ITER(hh, s->states, e, tmp) {
        HASH_DEL(s->states, e);
        if (e->cache.free)
            e->cache.free(e->cache.data);
        free(e);
    }
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

xe_code xe_session_run(xe_session *s, xe_tensor *const *inputs, xe_tensor **outputs,
                       xe_status *st)
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

/* Runs prepared graph g once (xe_session_run's contract). */
static xe_code run_graph(xe_session *s, const xe_graph *g, xe_tensor *const *inputs,
                         xe_tensor **outputs, xe_status *st)
{
    bool log = s->opt.log_placement && (s->opt.log_every || !atomic_exchange(&s->placement_logged, true));
    xe_exec ex = {.session = s, .log = log ? (s->opt.log ? s->opt.log : stderr) : NULL};
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
        c = s->opt.outputs_on_device ? xe_device_synchronize(XE_DEV_GPU, st)
                                     : xe_tensors_to_device(outputs, g->n_outputs, XE_DEV_CPU, st);
    if (c != XE_OK) {
        for (int i = 0; i < g->n_outputs; i++) {
            xe_tensor_release(outputs[i]);
            outputs[i] = NULL;
        }
    }
    return c;
}
