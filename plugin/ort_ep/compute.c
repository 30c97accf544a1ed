/*
 * Compile and Compute. A fused node's graph (the group GetCapability
 * handed over) is read and imported again, exactly as GetCapability tried
 * it, and becomes an xlac session: its pass (the EP's, xlac_pass) clusters
 * it, the launch op runs the cluster through the code generator and the
 * shared compilation cache, and a graph with symbolic dims is built per
 * input-shape signature at its first run, as xlac-run's sessions do. What
 * the launch cannot compile (a compiler that fails, a signature demoted)
 * runs xlac's per-op kernels, with the code generator's one warning per
 * signature: onnxruntime's kernels are not called back.
 *
 * A group that needs the values of some of its inputs (a Reshape's shape
 * that onnxruntime computes outside it, from symbolic dims: shape
 * arithmetic shared with another group) is built at its runs instead, once
 * per signature: the fed shapes of its inputs and the fed values of those
 * small integer inputs, written into the model as constants so that every
 * shape folds at import. Up to XO_MAX_SIGNATURES sessions are kept; the
 * least recently used one no run holds makes room for a new one.
 *
 * The fused node's big constant initializers (its weights) are copied once,
 * here, and its graphs hold them as constants (xo_model_own_weights): a
 * product's weights are then packed once into the engine's layout, as
 * xlac-run's are, not read from onnxruntime's plain buffers at each run.
 * onnxruntime still hands them to Compute; they are not read there.
 *
 * Compute wraps onnxruntime's other input buffers as xlac tensors (no
 * copy), runs the session and copies each output into the buffer
 * onnxruntime allocates for it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "xlac/session.h"
#include "xo.h"

#define XO_MAX_SIGNATURES 8

/* One build of a fused node made per signature. */
typedef struct xo_sig {
    xe_shape *shapes;      /* per key: the fed shape */
    unsigned char *values; /* the value inputs' fed bytes, one after the other */
    size_t n_values;
    xe_session *session; /* NULL: the slot is free */
    int n_in;
    int *in_pos;   /* per session input: its key */
    int busy;      /* runs holding it */
    uint64_t used; /* tick of its last use */
} xo_sig;

struct xo_fused {
    OrtNodeComputeInfo info; /* first: onnxruntime's pointer is ours */
    const xo_api *a;
    xe_session *session; /* NULL when built per signature (below) */
    int n_in, n_out;
    int *
        in_pos; /* per session input (per key, below): its position among the fused node's inputs */
    int *out_pos; /* per session output: its position among the fused node's outputs */
    char *config; /* the session's XLAC_FLAGS words (kept: graphs are made per signature later) */
    /* built per signature: the model kept (xo_model_keep), its inputs (keys: n_in of them, as
       values) and whether each one's value is part of the signature */
    xo_model m;
    int *keys;
    bool *is_value;
    pthread_mutex_t lock;
    bool locked; /* lock initialised */
    xo_sig sigs[XO_MAX_SIGNATURES];
    uint64_t tick;
};

/* The xlac dtype of an ONNX element type; false for one xlac does not hold. */
static bool dtype_of(int elem, xe_dtype *dt)
{
    static const int map[][2] = {{1, XE_F32},  {2, XE_U8},   {3, XE_I8},   {4, XE_U16},
                                 {5, XE_I16},  {6, XE_I32},  {7, XE_I64},  {9, XE_BOOL},
                                 {10, XE_F16}, {11, XE_F64}, {12, XE_U32}, {13, XE_U64},
                                 {16, XE_BF16}};
    for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
        if (map[k][0] == elem) {
            *dt = (xe_dtype)map[k][1];
            return true;
        }
    return false;
}

/* ---- Compute --------------------------------------------------------------------------- */

/* Input k of the fused node as an xlac tensor over onnxruntime's buffer. */
static xe_tensor *wrap_input(const xo_fused *f, OrtKernelContext *ctx, int k, xe_status *st)
{
    const xo_api *a = f->a;
    const OrtValue *v = NULL;
    OrtTensorTypeAndShapeInfo *info = NULL;
    int elem = 0;
    size_t rank = 0;
    xe_shape s = {0};
    void *data = NULL;
    xe_dtype dt = XE_F32;
    if (xo_check(a, XO(a->ort, KernelContext_GetInput)(ctx, (size_t)f->in_pos[k], &v),
                 "KernelContext_GetInput", st) ||
        xo_check(a, XO(a->ort, GetTensorTypeAndShape)(v, &info), "GetTensorTypeAndShape", st))
        return NULL;
    xe_code c =
        xo_check(a, XO(a->ort, GetTensorElementType)(info, &elem), "GetTensorElementType", st);
    if (c == XE_OK)
        c = xo_check(a, XO(a->ort, GetDimensionsCount)(info, &rank), "GetDimensionsCount", st);
    if (c == XE_OK && (rank > XE_MAX_RANK || !dtype_of(elem, &dt)))
        c = xe_fail(st, XE_ERR_UNSUPPORTED, "input %d: a type or rank xlac does not hold",
                    f->in_pos[k]);
    if (c == XE_OK)
        c = xo_check(a, XO(a->ort, GetDimensions)(info, s.dims, rank), "GetDimensions", st);
    XO(a->ort, ReleaseTensorTypeAndShapeInfo)(info);
    if (c == XE_OK)
        c = xo_check(a, XO(a->ort, GetTensorMutableData)((OrtValue *)v, &data),
                     "GetTensorMutableData", st);
    s.rank = (int)rank;
    return c == XE_OK ? xe_tensor_wrap(dt, &s, XE_DEV_CPU, data, st) : NULL;
}

/* Output t into the buffer onnxruntime allocates for output k of the fused node. */
static xe_code copy_output(const xo_fused *f, OrtKernelContext *ctx, int k, const xe_tensor *t,
                           xe_status *st)
{
    const xo_api *a = f->a;
    OrtValue *v = NULL;
    void *data = NULL;
    if (xo_check(a,
                 XO(a->ort, KernelContext_GetOutput)(ctx, (size_t)f->out_pos[k], t->shape.dims,
                                                     (size_t)t->shape.rank, &v),
                 "KernelContext_GetOutput", st) ||
        xo_check(a, XO(a->ort, GetTensorMutableData)(v, &data), "GetTensorMutableData", st))
        return st->code;
    if (t->nbytes)
        memcpy(data, t->data, t->nbytes);
    return XE_OK;
}

/* ---- built per signature ------------------------------------------------------------- */

static void sig_clear(xo_sig *e)
{
    xe_session_destroy(e->session);
    free(e->shapes), free(e->values), free(e->in_pos);
    memset(e, 0, sizeof *e);
}

/* Whether e was built for these inputs: their shapes, and the values of the value inputs. */
static bool sig_matches(const xo_fused *f, const xo_sig *e, xe_tensor *const *in)
{
    size_t at = 0;
    for (int k = 0; k < f->n_in; k++) {
        const xe_shape *a = &e->shapes[k], *b = &in[k]->shape;
        if (a->rank != b->rank || memcmp(a->dims, b->dims, (size_t)a->rank * sizeof *a->dims))
            return false;
        if (f->is_value[k]) {
            if (at + in[k]->nbytes > e->n_values ||
                memcmp(e->values + at, in[k]->data, in[k]->nbytes))
                return false;
            at += in[k]->nbytes;
        }
    }
    return at == e->n_values;
}

/* The key that value v is, -1 if none. */
static int key_of(const xo_fused *f, int v)
{
    for (int k = 0; k < f->n_in; k++)
        if (f->keys[k] == v)
            return k;
    return -1;
}

/* The model at the fed shapes, with the value inputs' fed values written in, imported (called
 * locked). */
static xe_graph *sig_import(xo_fused *f, xe_tensor *const *in, int **ins, int *n_ins, xe_status *st)
{
    bool *take = malloc((size_t)f->m.n_nodes + 1);
    if (!take) {
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    memset(take, 1, (size_t)f->m.n_nodes + 1);
    for (int k = 0; k < f->n_in; k++) {
        xo_value *v = &f->m.values[f->keys[k]];
        v->rank = in[k]->shape.rank;
        memcpy(v->dims, in[k]->shape.dims, (size_t)v->rank * sizeof *v->dims);
        v->data = f->is_value[k] ? in[k]->data : NULL;
    }
    xe_graph *g =
        xo_model_import(f->a, &f->m, take, f->m.outputs, f->m.n_outputs, ins, n_ins, NULL, st);
    for (int k = 0; k < f->n_in; k++)
        f->m.values[f->keys[k]].data =
            NULL; /* the fed buffers are onnxruntime's, for this run only */
    free(take);
    return g;
}

/* A session for these inputs into e (free), called locked. */
static xe_code sig_build(xo_fused *f, xo_sig *e, xe_tensor *const *in, xe_status *st)
{
    int *ins = NULL, n_ins = 0;
    xe_graph *g = sig_import(f, in, &ins, &n_ins, st);
    size_t n = 0;
    for (int k = 0; k < f->n_in; k++)
        n += f->is_value[k] ? in[k]->nbytes : 0;
    e->shapes = malloc(((size_t)f->n_in + 1) * sizeof *e->shapes);
    e->values = malloc(n + 1);
    e->in_pos = malloc(((size_t)n_ins + 1) * sizeof *e->in_pos);
    xe_code c = !g                                    ? st->code
                : e->shapes && e->values && e->in_pos ? XE_OK
                                                      : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int j = 0; c == XE_OK && j < n_ins; j++)
        if ((e->in_pos[j] = key_of(f, ins[j])) < 0)
            c = xe_fail(st, XE_ERR_RUNTIME,
                        "an input of the signature's graph is none of the fused node's");
    free(ins);
    for (int k = 0; c == XE_OK && k < f->n_in; k++) {
        e->shapes[k] = in[k]->shape;
        if (f->is_value[k] && in[k]->nbytes)
            memcpy(e->values + e->n_values, in[k]->data, in[k]->nbytes);
        e->n_values += f->is_value[k] ? in[k]->nbytes : 0;
    }
    e->n_in = n_ins;
    xe_session_options o = {.place = XE_PLACE_CPU, .plugin_config = f->config};
    if (c == XE_OK && !(e->session = xe_session_new(g, &o, st))) /* takes g */
        c = st->code;
    else if (c != XE_OK)
        xe_graph_destroy(g);
    if (c != XE_OK)
        sig_clear(e);
    return c;
}

/* The slot for these inputs, held (busy) for one run: found, or built into a free or the least
   recently used idle slot; *tmp when every slot is held by a run (then built for this run alone).
   NULL with *st set. */
static xo_sig *sig_take(xo_fused *f, xe_tensor *const *in, xo_sig *tmp, xe_status *st)
{
    xo_sig *e = NULL, *idle = NULL;
    pthread_mutex_lock(&f->lock);
    for (int k = 0; !e && k < XO_MAX_SIGNATURES; k++) {
        xo_sig *s = &f->sigs[k];
        if (s->session && sig_matches(f, s, in))
            e = s;
        else if (!s->busy && (!idle || !s->session || (idle->session && s->used < idle->used)))
            idle = s;
    }
    if (!e) {
        e = idle ? idle : tmp;
        sig_clear(e);
        if (sig_build(f, e, in, st) != XE_OK)
            e = NULL;
    }
    if (e) {
        e->busy++;
        e->used = ++f->tick;
    }
    pthread_mutex_unlock(&f->lock);
    return e;
}

static xe_code run_signature(xo_fused *f, xe_tensor **in, xe_tensor **out, xe_status *st)
{
    xo_sig tmp = {0};
    xo_sig *e = sig_take(f, in, &tmp, st);
    if (!e)
        return st->code;
    xe_tensor **sin = malloc(((size_t)e->n_in + 1) * sizeof *sin);
    xe_code c = sin ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int j = 0; c == XE_OK && j < e->n_in; j++)
        sin[j] = in[e->in_pos[j]];
    if (c == XE_OK)
        c = xe_session_run(e->session, sin, out, st);
    free(sin);
    pthread_mutex_lock(&f->lock);
    e->busy--;
    pthread_mutex_unlock(&f->lock);
    if (e == &tmp)
        sig_clear(&tmp);
    return c;
}

static xe_code run(xo_fused *f, OrtKernelContext *ctx, xe_tensor **in, xe_tensor **out,
                   xe_status *st)
{
    for (int k = 0; k < f->n_in; k++)
        if (!(in[k] = wrap_input(f, ctx, k, st)))
            return st->code;
    xo_enter(true);
    xe_code c =
        f->session ? xe_session_run(f->session, in, out, st) : run_signature(f, in, out, st);
    xo_enter(false);
    for (int k = 0; c == XE_OK && k < f->n_out; k++)
        c = copy_output(f, ctx, k, out[k], st);
    return c;
}

static OrtStatus *compute(OrtNodeComputeInfo *self, void *state, OrtKernelContext *ctx)
{
    xo_fused *f = (xo_fused *)self;
    (void)state;
    xe_status st;
    xe_status_clear(&st);
    xe_tensor **in = calloc((size_t)f->n_in + 1, sizeof *in),
              **out = calloc((size_t)f->n_out + 1, sizeof *out);
    xe_code c = in && out ? run(f, ctx, in, out, &st) : xe_fail(&st, XE_ERR_NOMEM, "out of memory");
    for (int k = 0; in && k < f->n_in; k++)
        xe_tensor_release(in[k]);
    for (int k = 0; out && k < f->n_out; k++)
        xe_tensor_release(out[k]);
    free(in), free(out);
    return c == XE_OK ? NULL : xo_status(f->a, XO_ORT_EP_FAIL, "%s", st.msg);
}

static OrtStatus *create_state(OrtNodeComputeInfo *self, OrtNodeComputeContext *ctx, void **state)
{
    (void)ctx;
    *state = self;
    return NULL;
}

static void release_state(OrtNodeComputeInfo *self, void *state)
{
    (void)self, (void)state; /* the state is the compute info itself */
}

void xo_compute_info_free(OrtNodeComputeInfo *info)
{
    xo_fused *f = (xo_fused *)info;
    if (!f)
        return;
    xe_session_destroy(f->session);
    for (int k = 0; k < XO_MAX_SIGNATURES; k++)
        sig_clear(&f->sigs[k]);
    if (f->locked)
        pthread_mutex_destroy(&f->lock);
    xo_model_free(&f->m);
    free(f->keys), free(f->is_value);
    free(f->in_pos), free(f->out_pos), free(f->config), free(f);
}

/* ---- Compile ---------------------------------------------------------------------------- */

/* pos[k]: where value vals[k]'s name lies among the fused node's inputs (or outputs). */
static xe_code positions(const xo_api *a, const OrtNode *fused, bool outputs, const xo_model *m,
                         const int *vals, int n, int *pos, xe_status *st)
{
    size_t count = 0;
    OrtStatus *s = outputs ? XO(a->ort, Node_GetNumOutputs)(fused, &count)
                           : XO(a->ort, Node_GetNumInputs)(fused, &count);
    if (xo_check(a, s, "the fused node's Node_GetNum*", st))
        return st->code;
    const OrtValueInfo **vi = calloc(count + 1, sizeof *vi);
    if (!vi)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    s = !count    ? NULL
        : outputs ? XO(a->ort, Node_GetOutputs)(fused, vi, count)
                  : XO(a->ort, Node_GetInputs)(fused, vi, count);
    xe_code c = xo_check(a, s, "the fused node's Node_Get*", st);
    for (int k = 0; c == XE_OK && k < n; k++) {
        pos[k] = -1;
        for (size_t j = 0; pos[k] < 0 && j < count; j++) {
            const char *name = NULL;
            if (vi[j] && (c = xo_check(a, XO(a->ort, GetValueInfoName)(vi[j], &name),
                                       "GetValueInfoName", st)))
                break;
            if (name && !strcmp(name, m->values[vals[k]].name))
                pos[k] = (int)j;
        }
        if (c == XE_OK && pos[k] < 0)
            c = xe_fail(st, XE_ERR_RUNTIME, "the fused node has no %s %s",
                        outputs ? "output" : "input", m->values[vals[k]].name);
    }
    free(vi);
    return c;
}

/*
 * A fused node built per signature (its import failed for want of the values
 * of some inputs): the model kept in f, its inputs as keys, the values among
 * them marked. ins (taken) are the inputs of the failed import.
 */
static xe_code defer(xo_fused *f, xo_model *m, int *ins, const int *vals, int n_vals, xe_status *st)
{
    f->keys = ins;
    f->is_value = calloc((size_t)f->n_in + 1, sizeof *f->is_value);
    if (!f->is_value)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int j = 0; j < n_vals; j++) {
        int k = key_of(f, vals[j]);
        if (k < 0)
            return xe_fail(st, XE_ERR_RUNTIME, "value %s: needed, and no input of the fused node",
                           m->values[vals[j]].name);
        f->is_value[k] = true;
    }
    if (xo_model_keep(f->a, m, st) != XE_OK)
        return st->code;
    if (pthread_mutex_init(&f->lock, NULL))
        return xe_fail(st, XE_ERR_RUNTIME, "pthread_mutex_init failed");
    f->locked = true;
    f->m = *m; /* f owns the model now */
    memset(m, 0, sizeof *m);
    return XE_OK;
}

/* The fused node's graph, read as m, imported: *g its session's graph, or NULL when it needs input
   values (then *vals, *n_vals name them). ins: its inputs. */
static xe_code import_fused(xo_fused *f, const xo_model *m, xe_graph **g, int **ins, int **vals,
                            int *n_vals, xe_status *st)
{
    bool *take = malloc((size_t)m->n_nodes + 1);
    char *report = NULL;
    *n_vals = 0;
    if (!take)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    memset(take, 1, (size_t)m->n_nodes + 1);
    *g = xo_model_import(f->a, m, take, m->outputs, m->n_outputs, ins, &f->n_in, &report, st);
    if (!*g && *ins && (*n_vals = xo_value_inputs(m, take, report ? report : st->msg, vals)) > 0)
        xe_status_clear(st);
    free(take), free(report);
    return *g || *n_vals > 0 ? XE_OK
           : st->code        ? st->code
                             : xe_fail(st, XE_ERR_NOMEM, "out of memory");
}

/* The session of the fused node's graph, read as m (or what building it per signature needs). */
static xe_code build(xo_fused *f, xo_model *m, const OrtNode *fused, xe_status *st)
{
    xe_graph *g = NULL;
    int *ins = NULL, *vals = NULL, n_vals = 0;
    if (import_fused(f, m, &g, &ins, &vals, &n_vals, st) != XE_OK) {
        free(ins);
        return st->code;
    }
    f->n_out = m->n_outputs;
    f->in_pos = malloc(((size_t)f->n_in + 1) * sizeof *f->in_pos);
    f->out_pos = malloc(((size_t)f->n_out + 1) * sizeof *f->out_pos);
    xe_code c = f->in_pos && f->out_pos ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (c == XE_OK)
        c = positions(f->a, fused, false, m, ins, f->n_in, f->in_pos, st);
    if (c == XE_OK)
        c = positions(f->a, fused, true, m, m->outputs, f->n_out, f->out_pos, st);
    if (c == XE_OK && !g) {
        c = defer(f, m, ins, vals, n_vals, st); /* takes ins */
        ins = NULL;
    }
    free(ins), free(vals);
    if (c != XE_OK || !g) {
        xe_graph_destroy(g);
        return c;
    }
    xe_session_options o = {.place = XE_PLACE_CPU, .plugin_config = f->config};
    f->session = xe_session_new(
        g, &o, st); /* takes g; the pass runs here (or per signature at a first run) */
    return f->session ? XE_OK : st->code;
}

/*
 * A fused node's session configuration: the EP's words, with --clustering_debug off. GetCapability
 * printed the summary (and wrote the dumps) of the whole graph already; each fused node's session,
 * and each of its signatures, would print it again for its part (and write dumps under session
 * numbers that GetCapability's graph numbers share).
 */
static char *session_config(const char *config)
{
    xe_text t = {0};
    xe_text_printf(&t, "%s%s--clustering_debug=0", config ? config : "",
                   config && config[0] ? " " : "");
    return xe_text_take(&t);
}

xe_code xo_compile(const xo_api *a, const OrtGraph *graph, const OrtNode *fused, const char *config,
                   OrtNodeComputeInfo **out, xe_status *st)
{
    xo_model m;
    *out = NULL;
    if (xo_model_read(a, graph, &m, st) != XE_OK)
        return st->code;
    if (xo_model_own_weights(a, &m, st) != XE_OK) { /* the session outlives Compile's graph */
        xo_model_free(&m);
        return st->code;
    }
    xo_fused *f = calloc(1, sizeof *f);
    xe_code c = f && (f->config = session_config(config))
                    ? XE_OK
                    : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (c == XE_OK) {
        f->info = (OrtNodeComputeInfo){.ort_version_supported = XO_ORT_API_VERSION,
                                       .CreateState = create_state,
                                       .Compute = compute,
                                       .ReleaseState = release_state};
        f->a = a;
        c = build(f, &m, fused, st);
    }
    xo_model_free(&m);
    if (c != XE_OK) {
        xo_compute_info_free(f ? &f->info : NULL);
        return c;
    }
    *out = &f->info;
    return XE_OK;
}
