/*
 * Running a graph op by op. Values live in one slot per node; a value is
 * materialised on each device that needs it (copies happen on demand) and
 * released after its last use. Before each op its output type is inferred
 * again from the actual input shapes, so `?` dims and data-dependent ops
 * (unique) work. Composite nodes run their registered kernel or, without
 * one, their body op by op through this same function.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec_impl.h"
#include "xlac/op.h"

typedef struct value {
    xe_tensor *on[XE_DEV_MAX]; /* the value on each device instance where it exists */
    xe_tensor **tuple;         /* composite nodes: one tensor per element */
    int n_tuple;
    int uses_left; /* released when it reaches zero */
} value;

typedef struct run {
    xe_exec *ex;
    const xe_graph *g;
    value *vals;
    const char *label;  /* cluster name for placement lines, or NULL */
    const char *prefix; /* "XLA_" inside a compiled cluster, "" otherwise */
    bool quiet;         /* no placement lines (xe_exec_graph_quiet) */
} run;

void xe_exec_log_placement(xe_exec *ex, const xe_node *n, const char *device_prefix,
                           const char *label)
{
    if (!ex || !ex->log || n->op == XE_OP_INPUT || n->op == XE_OP_GET || n->body)
        return;
    fprintf(ex->log, "placement: %s %s %s%s%s%s\n", n->name, xe_op_name(n->op),
            device_prefix ? device_prefix : "", xe_device_name(n->device), label ? " " : "",
            label ? label : "");
}

void xe_exec_trace(xe_exec *ex, const char *name, const char *cat, double start_us)
{
    (void)ex;
    if (xe_trace_on())
        xe_trace_slice(name, cat, start_us, xe_now_us() - start_us, NULL);
}

/*
 * The trace's slice of an op run per op: its op, device, output type and,
 * inside a cluster that fell back, the cluster. Only called while tracing.
 */
static void trace_op(const run *r, const xe_node *n, const xe_tensor *out, double t0,
                     xe_device_timer *gt)
{
    double t1 = xe_now_us();
    char type[128] = "", label[256] = "", args[600];
    if (out)
        xe_type_str(&(xe_type){out->dtype, out->shape}, type, sizeof type);
    xe_trace_json_escape(r->label ? r->label : "", label, sizeof label);
    snprintf(args, sizeof args, "\"op\":\"%s\",\"device\":\"%s%s\",\"type\":\"%s\"%s%s%s",
             xe_op_name(n->op), r->prefix, xe_device_name(n->device), type,
             r->label ? ",\"cluster\":\"" : "", label, r->label ? "\"" : "");
    xe_trace_slice(n->name, xe_op_name(n->op), t0, t1 - t0, args);
    double gs, gd;
    if (gt && xe_device_timer_read(gt, &gs, &gd)) /* the kernel's own time, on the stream's track */
        xe_trace_slice_gpu(xe_device_ordinal(n->device), n->name, xe_op_name(n->op), gs, gd, args);
}

static void value_clear(value *v)
{
    for (int d = 0; d < XE_DEV_MAX; d++)
        xe_tensor_release(v->on[d]);
    for (int i = 0; i < v->n_tuple; i++)
        xe_tensor_release(v->tuple[i]);
    free(v->tuple);
    memset(v, 0, sizeof *v);
}

/* Any materialisation of a value (the first device that has it). */
static xe_tensor *value_any(const value *v)
{
    for (int d = 0; d < XE_DEV_MAX; d++)
        if (v->on[d])
            return v->on[d];
    return NULL;
}

/* The value on dev, copied there on first need. */
static xe_tensor *value_on(value *v, xe_device dev, xe_status *st)
{
    if (v->on[dev])
        return v->on[dev];
    xe_tensor *src = value_any(v);
    if (!src) {
        xe_fail(st, XE_ERR_RUNTIME, "internal: value used before it was computed");
        return NULL;
    }
    v->on[dev] = xe_tensor_to_device(src, dev, st);
    return v->on[dev];
}

static void use_done(run *r, int idx)
{
    if (--r->vals[idx].uses_left <= 0)
        value_clear(&r->vals[idx]);
}

static xe_code node_fail(const run *r, const xe_node *n, xe_status *st)
{
    char where[512];
    xe_node_where(r->g, n, where, sizeof where);
    /* a composite's body names its own failing node, at its line in the same file: enough */
    size_t file_len = strcspn(where, ":");
    if (n->body && !strncmp(st->msg, where, file_len) && st->msg[file_len] == ':')
        return st->code;
    return xe_status_prefix(st, "%s: node %s (%s): ", where, n->name, xe_node_op_name(n));
}

/* Inputs of n on its device (borrowed references). */
static xe_code gather_inputs(run *r, const xe_node *n, xe_device dev, xe_tensor **in, xe_status *st)
{
    for (int i = 0; i < n->n_inputs; i++) {
        if (!(in[i] = value_on(&r->vals[n->inputs[i]], dev, st)))
            return st->code;
    }
    return XE_OK;
}

/* The output type for the actual inputs. */
static xe_code infer_actual(const xe_node *n, const xe_op_def *d, xe_tensor *const *in,
                            xe_type *out, xe_status *st)
{
    xe_type *types = malloc((size_t)(n->n_inputs ? n->n_inputs : 1) * sizeof *types);
    if (!types)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n->n_inputs; i++)
        types[i] = (xe_type){in[i]->dtype, in[i]->shape};
    *out = n->type;
    xe_code c = d->infer(n, types, n->n_inputs, out, st);
    if (c == XE_OK)
        c = xe_type_check_size(out, st);
    free(types);
    return c;
}

/* Whether n's output (of type t) is its first input's bytes as they are, on a host device: a view
 * op (reshape), or a cast to the type it has (the ONNX importer's copy that names a graph output,
 * an Identity's). */
static bool views_input(const xe_node *n, const xe_op_def *d, xe_tensor *const *in,
                        const xe_type *t)
{
    if (n->n_inputs < 1 || in[0]->device != n->device || !xe_device_is_host(n->device) ||
        in[0]->dtype != t->dtype)
        return false;
    return (d->flags & XE_OPF_VIEW) || n->op == XE_OP_CAST;
}

/* Runs a regular op; *result receives the new output on the node's device. */
static xe_code run_kernel(run *r, const xe_node *n, const xe_op_def *d, xe_tensor **in,
                          xe_tensor **result, xe_status *st)
{
    xe_device dev = n->device;
    xe_kernel_fn kernel = xe_op_kernel(d, dev);
    if (!kernel)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "no %s kernel", xe_device_name(dev));
    if (n->op == XE_OP_CONST && n->value && n->value->device == dev) {
        *result = xe_tensor_retain(n->value); /* shared, never copied per run (model weights) */
        return XE_OK;
    }
    xe_type t;
    if (infer_actual(n, d, in, &t, st) != XE_OK)
        return st->code;
    if (views_input(n, d, in, &t))
        return (*result = xe_tensor_alias(in[0], &t.shape, st)) ? XE_OK : st->code;
    xe_tensor *out = NULL;
    bool dynamic = d->flags & XE_OPF_DATA_DEPENDENT_SHAPE;
    if (!dynamic && !(out = xe_tensor_new(t.dtype, &t.shape, dev, st)))
        return st->code;
    xe_tensor *ret = NULL;
    xe_kernel_args a = {
        .graph = r->g,
        .node = n,
        .n_in = n->n_inputs,
        .in = in,
        .out = out,
        .out_ret = &ret,
        .exec = r->ex,
        .op_user = d->user,
    };
    if ((d->flags & XE_OPF_STATEFUL) && !(a.state = xe_node_state_counter(r->ex->states, n))) {
        xe_tensor_release(out);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    if ((d->flags & XE_OPF_KERNEL_CACHE) && xe_device_is_host(dev) &&
        !(a.cache = xe_node_state_cache(r->ex->states, n))) {
        xe_tensor_release(out);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    if (kernel(&a, st) != XE_OK) {
        xe_tensor_release(out);
        xe_tensor_release(ret);
        return st->code != XE_OK ? st->code : xe_fail(st, XE_ERR_RUNTIME, "kernel failed");
    }
    *result = dynamic ? ret : out;
    if (!*result)
        return xe_fail(st, XE_ERR_RUNTIME, "kernel produced no output");
    return XE_OK;
}

/* Runs a composite node: its registered kernel, or its body op by op. */
static xe_code run_composite(run *r, const xe_node *n, const xe_op_def *d, xe_tensor **in, value *v,
                             xe_status *st)
{
    v->tuple = calloc((size_t)(n->n_tuple ? n->n_tuple : 1), sizeof *v->tuple);
    if (!v->tuple)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    v->n_tuple = n->n_tuple;
    const char *label = xe_node_attr_string(n, "@cluster", n->name);
    if (!d->composite)
        return xe_exec_graph(r->ex, n->body, in, v->tuple, d->device_prefix ? label : r->label,
                             d->device_prefix ? d->device_prefix : r->prefix, st);
    xe_kernel_args a = {
        .graph = r->g, .node = n, .n_in = n->n_inputs, .in = in, .exec = r->ex, .op_user = d->user};
    return d->composite(&a, v->tuple, n->n_tuple, st);
}

static xe_code run_get(run *r, const xe_node *n, value *v, xe_status *st)
{
    const value *src = &r->vals[n->inputs[0]];
    int64_t k = xe_node_attr_int(n, "index", -1);
    if (k < 0 || k >= src->n_tuple || !src->tuple[k])
        return xe_fail(st, XE_ERR_RUNTIME, "get: element %lld missing", (long long)k);
    xe_tensor *t = src->tuple[k];
    v->on[t->device] = xe_tensor_retain(t);
    return XE_OK;
}

/* Position of input node i among the graph's inputs, -1 if it is not one. */
static int input_position(const xe_graph *g, int i)
{
    for (int k = 0; k < g->n_inputs; k++)
        if (g->inputs[k] == i)
            return k;
    return -1;
}

/* Runs node i of the graph, filling its value slot. */
static xe_code run_node(run *r, int i, xe_tensor *const *inputs, xe_status *st)
{
    const xe_node *n = r->g->nodes[i];
    const xe_op_def *d = xe_op_get(n->op);
    value *v = &r->vals[i];
    if (n->op == XE_OP_INPUT) {
        int pos = input_position(r->g, i);
        if (pos < 0 || !inputs[pos])
            return xe_fail(st, XE_ERR_RUNTIME, "input '%s' was not fed", n->name);
        v->on[inputs[pos]->device] = xe_tensor_retain(inputs[pos]);
        return XE_OK;
    }
    if (n->op == XE_OP_GET)
        return run_get(r, n, v, st);
    xe_tensor **in = calloc((size_t)(n->n_inputs ? n->n_inputs : 1), sizeof *in);
    if (!in)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    bool tracing = xe_trace_on();
    double t0 = tracing ? xe_now_us() : 0;
    xe_code c;
    if (n->body) {
        c = XE_OK;
        if (d->composite) /* a kernel wants everything on its device */
            c = gather_inputs(r, n, n->device, in, st);
        else /* body ops fetch what they need themselves */
            for (int k = 0; k < n->n_inputs; k++)
                in[k] = value_any(&r->vals[n->inputs[k]]);
        if (c == XE_OK) /* a composite kernel records its own slice (the plugin's launch does) */
            c = run_composite(r, n, d, in, v, st);
    } else {
        xe_tensor *out = NULL;
        c = gather_inputs(r, n, n->device, in, st);
        xe_device_timer *gt = c == XE_OK && tracing ? xe_device_timer_begin(n->device) : NULL;
        if (c == XE_OK && (c = run_kernel(r, n, d, in, &out, st)) == XE_OK)
            v->on[n->device] = out;
        xe_device_timer_end(gt);
        if (c == XE_OK && tracing)
            c = xe_device_synchronize(n->device, st);
        if (c == XE_OK) {
            if (!r->quiet)
                xe_exec_log_placement(r->ex, n, r->prefix, r->label);
            if (tracing)
                trace_op(r, n, out, t0, gt);
        }
        xe_device_timer_free(gt);
    }
    free(in);
    return c;
}

/* Releases the inputs of node i that have no further use. */
static void release_inputs(run *r, int i)
{
    const xe_node *n = r->g->nodes[i];
    for (int k = 0; k < n->n_inputs; k++)
        use_done(r, n->inputs[k]);
    if (r->vals[i].uses_left <= 0)
        value_clear(&r->vals[i]);
}

/* Runs r's graph on inputs into outputs (xe_exec_graph, xe_exec_graph_quiet). */
static xe_code exec_graph(run r, xe_tensor *const *inputs, xe_tensor **outputs, xe_status *st)
{
    const xe_graph *g = r.g;
    int *uses = xe_graph_use_counts(g);
    r.vals = calloc((size_t)g->n_nodes + 1, sizeof *r.vals);
    if (!uses || !r.vals) {
        free(uses);
        free(r.vals);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < g->n_nodes; i++)
        r.vals[i].uses_left = uses[i];
    free(uses);
    xe_code c = XE_OK;
    for (int i = 0; i < g->n_nodes && c == XE_OK; i++) {
        if ((c = run_node(&r, i, inputs, st)) != XE_OK)
            node_fail(&r, g->nodes[i], st);
        else
            release_inputs(&r, i);
    }
    for (int i = 0; i < g->n_outputs && c == XE_OK; i++)
        outputs[i] = xe_tensor_retain(value_any(&r.vals[g->outputs[i]]));
    for (int i = 0; i < g->n_nodes; i++)
        value_clear(&r.vals[i]);
    free(r.vals);
    return c;
}

xe_code xe_exec_graph(xe_exec *ex, const xe_graph *g, xe_tensor *const *inputs, xe_tensor **outputs,
                      const char *label, const char *device_prefix, xe_status *st)
{
    run r = {.ex = ex, .g = g, .label = label, .prefix = device_prefix ? device_prefix : ""};
    return exec_graph(r, inputs, outputs, st);
}

xe_code xe_exec_graph_quiet(xe_exec *ex, const xe_graph *g, xe_tensor *const *inputs,
                            xe_tensor **outputs, xe_status *st)
{
    run r = {.ex = ex, .g = g, .prefix = "", .quiet = true};
    return exec_graph(r, inputs, outputs, st);
}
