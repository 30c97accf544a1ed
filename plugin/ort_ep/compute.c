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
 * Compute wraps onnxruntime's input buffers as xlac tensors (no copy: the
 * weights among them are onnxruntime's constant initializers), runs the
 * session and copies each output into the buffer onnxruntime allocates
 * for it.
 */
#include <stdlib.h>
#include <string.h>

#include "xlac/session.h"
#include "xo.h"

struct xo_fused {
    OrtNodeComputeInfo info; /* first: onnxruntime's pointer is ours */
    const xo_api *a;
    xe_session *session;
    int n_in, n_out;
    int *in_pos;             /* per session input: its position among the fused node's inputs */
    int *out_pos;            /* per session output: its position among the fused node's outputs */
    char *config;            /* the session's XLAC_FLAGS words (kept: graphs are made per signature later) */
};

/* The xlac dtype of an ONNX element type; false for one xlac does not hold. */
static bool dtype_of(int elem, xe_dtype *dt)
{
    static const int map[][2] = {{1, XE_F32}, {2, XE_U8}, {3, XE_I8}, {4, XE_U16}, {5, XE_I16}, {6, XE_I32},
                                 {7, XE_I64}, {9, XE_BOOL}, {10, XE_F16}, {11, XE_F64}, {12, XE_U32},
                                 {13, XE_U64}, {16, XE_BF16}};
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
    if (xo_check(a, XO(a->ort, KernelContext_GetInput)(ctx, (size_t)f->in_pos[k], &v), "KernelContext_GetInput", st) ||
        xo_check(a, XO(a->ort, GetTensorTypeAndShape)(v, &info), "GetTensorTypeAndShape", st))
        return NULL;
    xe_code c = xo_check(a, XO(a->ort, GetTensorElementType)(info, &elem), "GetTensorElementType", st);
    if (c == XE_OK)
        c = xo_check(a, XO(a->ort, GetDimensionsCount)(info, &rank), "GetDimensionsCount", st);
    if (c == XE_OK && (rank > XE_MAX_RANK || !dtype_of(elem, &dt)))
        c = xe_fail(st, XE_ERR_UNSUPPORTED, "input %d: a type or rank xlac does not hold", f->in_pos[k]);
    if (c == XE_OK)
        c = xo_check(a, XO(a->ort, GetDimensions)(info, s.dims, rank), "GetDimensions", st);
    XO(a->ort, ReleaseTensorTypeAndShapeInfo)(info);
    if (c == XE_OK)
        c = xo_check(a, XO(a->ort, GetTensorMutableData)((OrtValue *)v, &data), "GetTensorMutableData", st);
    s.rank = (int)rank;
    return c == XE_OK ? xe_tensor_wrap(dt, &s, XE_DEV_CPU, data, st) : NULL;
}

/* Output t into the buffer onnxruntime allocates for output k of the fused node. */
static xe_code copy_output(const xo_fused *f, OrtKernelContext *ctx, int k, const xe_tensor *t, xe_status *st)
{
    const xo_api *a = f->a;
    OrtValue *v = NULL;
    void *data = NULL;
    if (xo_check(a, XO(a->ort, KernelContext_GetOutput)(ctx, (size_t)f->out_pos[k], t->shape.dims,
                                                         (size_t)t->shape.rank, &v), "KernelContext_GetOutput", st) ||
        xo_check(a, XO(a->ort, GetTensorMutableData)(v, &data), "GetTensorMutableData", st))
        return st->code;
    if (t->nbytes)
        memcpy(data, t->data, t->nbytes);
    return XE_OK;
}

static xe_code run(xo_fused *f, OrtKernelContext *ctx, xe_tensor **in, xe_tensor **out, xe_status *st)
{
    for (int k = 0; k < f->n_in; k++)
        if (!(in[k] = wrap_input(f, ctx, k, st)))
            return st->code;
    xo_enter(true);
    xe_code c = xe_session_run(f->session, in, out, st);
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
    xe_tensor **in = calloc((size_t)f->n_in + 1, sizeof *in), **out = calloc((size_t)f->n_out + 1, sizeof *out);
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
    free(f->in_pos), free(f->out_pos), free(f->config), free(f);
}

/* ---- Compile ---------------------------------------------------------------------------- */

/* pos[k]: where value vals[k]'s name lies among the fused node's inputs (or outputs). */
static xe_code positions(const xo_api *a, const OrtNode *fused, bool outputs, const xo_model *m, const int *vals,
                         int n, int *pos, xe_status *st)
{
    size_t count = 0;
    OrtStatus *s = outputs ? XO(a->ort, Node_GetNumOutputs)(fused, &count) : XO(a->ort, Node_GetNumInputs)(fused, &count);
    if (xo_check(a, s, "the fused node's Node_GetNum*", st))
        return st->code;
    const OrtValueInfo **vi = calloc(count + 1, sizeof *vi);
    if (!vi)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    s = !count ? NULL : outputs ? XO(a->ort, Node_GetOutputs)(fused, vi, count) : XO(a->ort, Node_GetInputs)(fused, vi, count);
    xe_code c = xo_check(a, s, "the fused node's Node_Get*", st);
    for (int k = 0; c == XE_OK && k < n; k++) {
        pos[k] = -1;
        for (size_t j = 0; pos[k] < 0 && j < count; j++) {
            const char *name = NULL;
            if (vi[j] && (c = xo_check(a, XO(a->ort, GetValueInfoName)(vi[j], &name), "GetValueInfoName", st)))
                break;
            if (name && !strcmp(name, m->values[vals[k]].name))
                pos[k] = (int)j;
        }
        if (c == XE_OK && pos[k] < 0)
            c = xe_fail(st, XE_ERR_RUNTIME, "the fused node has no %s %s", outputs ? "output" : "input",
                        m->values[vals[k]].name);
    }
    free(vi);
    return c;
}

/* The session of the fused node's graph, read as m. */
static xe_code build(xo_fused *f, const xo_model *m, const OrtNode *fused, xe_status *st)
{
    bool *take = malloc((size_t)m->n_nodes + 1);
    int *ins = NULL;
    if (!take)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    memset(take, 1, (size_t)m->n_nodes + 1);
    xe_graph *g = xo_model_import(f->a, m, take, m->outputs, m->n_outputs, &ins, &f->n_in, NULL, st);
    free(take);
    if (!g)
        return st->code;
    f->n_out = m->n_outputs;
    f->in_pos = malloc(((size_t)f->n_in + 1) * sizeof *f->in_pos);
    f->out_pos = malloc(((size_t)f->n_out + 1) * sizeof *f->out_pos);
    xe_code c = f->in_pos && f->out_pos ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (c == XE_OK)
        c = positions(f->a, fused, false, m, ins, f->n_in, f->in_pos, st);
    if (c == XE_OK)
        c = positions(f->a, fused, true, m, m->outputs, f->n_out, f->out_pos, st);
    free(ins);
    if (c != XE_OK) {
        xe_graph_destroy(g);
        return c;
    }
    xe_session_options o = {.place = XE_PLACE_CPU, .plugin_config = f->config};
    f->session = xe_session_new(g, &o, st); /* takes g; the pass runs here (or per signature at a first run) */
    return f->session ? XE_OK : st->code;
}

xe_code xo_compile(const xo_api *a, const OrtGraph *graph, const OrtNode *fused, const char *config,
                   OrtNodeComputeInfo **out, xe_status *st)
{
    xo_model m;
    *out = NULL;
    if (xo_model_read(a, graph, &m, st) != XE_OK)
        return st->code;
    xo_fused *f = calloc(1, sizeof *f);
    xe_code c = f && (!config || (f->config = strdup(config))) ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (c == XE_OK) {
        f->info = (OrtNodeComputeInfo){.ort_version_supported = XO_ORT_API_VERSION, .CreateState = create_state,
                                       .Compute = compute, .ReleaseState = release_state};
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
