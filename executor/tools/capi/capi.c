/*
 * The flat C API of capi.h, over sessions: a handle keeps the session, a
 * copy of the loaded graph's input and output names and types (the passes
 * may rename the session's own graph), and the outputs of the last run.
 * Inputs are wrapped, never copied, so the caller's buffers must outlive
 * xe_capi_run and the results that may alias them (a graph that returns
 * its input); the caller copies results or takes them before freeing its
 * inputs.
 */
#include <stdlib.h>
#include <string.h>

#include "xlac/capi.h"
#include "xlac/xlac.h"

struct xe_capi_session {
    xe_session *s;
    int n[2];        /* inputs, outputs */
    char **names[2]; /* per side, as loaded */
    xe_type *types[2];
    xe_tensor **outs; /* last run's outputs, NULL where none */
};

/* The one place a model file becomes a graph: .xg text or an ONNX model, picked by content;
 * pins (may be NULL) fix symbolic dims of an ONNX model. */
static xe_graph *capi_load(const char *path, const xe_onnx_pin *pins, int n_pins, xe_status *st)
{
    xe_onnx_options o = {.pins = pins, .n_pins = n_pins};
    return xe_load_graph(path, n_pins ? &o : NULL, st);
}

static int fail_out(const xe_status *st, char *err, size_t err_len)
{
    if (err && err_len)
        snprintf(err, err_len, "%s", st->msg);
    return (int)st->code;
}

/* device = "auto" | "cpu" | "gpu" | kind ":" ordinal ("gpu:1": that instance, opt->device) */
static xe_code parse_device(const char *device, xe_session_options *opt, xe_status *st)
{
    xe_place_mode *mode = &opt->place;
    if (device && strchr(device, ':') && xe_device_by_word(device, strlen(device), &opt->device))
        *mode = xe_device_is_host(opt->device) ? XE_PLACE_CPU : XE_PLACE_GPU;
    else if (!device || !strcmp(device, "auto"))
        *mode = XE_PLACE_AUTO;
    else if (!strcmp(device, "cpu"))
        *mode = XE_PLACE_CPU;
    else if (!strcmp(device, "gpu"))
        *mode = XE_PLACE_GPU;
    else
        return xe_fail(st, XE_ERR_USAGE, "device '%s': expected cpu, gpu or auto", device);
    return XE_OK;
}

/* Copies the names and types of one side (io) of g into h. */
static xe_code copy_side(xe_capi_session *h, const xe_graph *g, int io, xe_status *st)
{
    int n = io ? g->n_outputs : g->n_inputs;
    const int *idx = io ? g->outputs : g->inputs;
    h->n[io] = n;
    h->names[io] = calloc((size_t)n + 1, sizeof(char *));
    h->types[io] = calloc((size_t)n + 1, sizeof(xe_type));
    if (!h->names[io] || !h->types[io])
        return xe_fail(st, XE_ERR_NOMEM, "out of memory opening %s", g->file);
    for (int i = 0; i < n; i++) {
        const xe_node *node = g->nodes[idx[i]];
        h->types[io][i] = node->type;
        /* an output goes by the model's name for it (an ONNX output passing an input through: x,
         * not x_1) */
        const char *name = io ? xe_node_attr_string(node, "@output", node->name) : node->name;
        if (!(h->names[io][i] = strdup(name)))
            return xe_fail(st, XE_ERR_NOMEM, "out of memory opening %s", g->file);
    }
    return XE_OK;
}

int xe_capi_open(const char *path, const char *device, xe_capi_session **out, char *err,
                 size_t err_len)
{
    return xe_capi_open_with(path, device, NULL, NULL, 0, out, err, err_len);
}

int xe_capi_open_with(const char *path, const char *device, const char *plugin_config,
                      const char *profile_path, int flags, xe_capi_session **out, char *err,
                      size_t err_len)
{
    return xe_capi_open_pinned(path, device, plugin_config, profile_path, flags, 0, NULL, NULL,
                               NULL, out, err, err_len);
}

/* The pins of xe_capi_open_pinned as the importer takes them; NULL (*st set) when they are not
 * valid or memory runs out. */
static xe_onnx_pin *make_pins(int n, const int *kinds, const char *const *names,
                              const int64_t *values, xe_status *st)
{
    xe_onnx_pin *p = calloc((size_t)n + 1, sizeof *p);
    if (!p)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory"), NULL;
    for (int k = 0; k < n; k++) {
        if ((kinds[k] != 0 && kinds[k] != 1) || !names[k]) {
            free(p);
            return xe_fail(st, XE_ERR_USAGE,
                           "pin %d: a kind of 0 (dim name) or 1 (denotation) "
                           "and a name are needed",
                           k),
                   NULL;
        }
        p[k] = (xe_onnx_pin){.kind = kinds[k] ? XE_ONNX_PIN_DENOTATION : XE_ONNX_PIN_DIM,
                             .name = names[k],
                             .dims = {values[k]}};
    }
    return p;
}

int xe_capi_open_pinned(const char *path, const char *device, const char *plugin_config,
                        const char *profile_path, int flags, int n_pins, const int *kinds,
                        const char *const *names, const int64_t *values, xe_capi_session **out,
                        char *err, size_t err_len)
{
    xe_status st;
    xe_status_clear(&st);
    *out = NULL;
    xe_session_options opt = {.plugin_config = plugin_config,
                              .profile_path = profile_path && *profile_path ? profile_path : NULL,
                              .log_placement = (flags & XE_CAPI_LOG_PLACEMENT) != 0};
    if (parse_device(device, &opt, &st) != XE_OK)
        return fail_out(&st, err, err_len);
    xe_onnx_pin *pins = n_pins > 0 ? make_pins(n_pins, kinds, names, values, &st) : NULL;
    if (n_pins > 0 && !pins)
        return fail_out(&st, err, err_len);
    xe_capi_session *h = calloc(1, sizeof *h);
    if (!h) {
        free(pins);
        return fail_out(&(xe_status){XE_ERR_NOMEM, "out of memory"}, err, err_len);
    }
    xe_graph *g = capi_load(path, pins, n_pins > 0 ? n_pins : 0, &st);
    free(pins);
    if (!g || copy_side(h, g, 0, &st) != XE_OK || copy_side(h, g, 1, &st) != XE_OK ||
        !(h->outs = calloc((size_t)h->n[1] + 1, sizeof *h->outs))) {
        if (st.code == XE_OK)
            xe_fail(&st, XE_ERR_NOMEM, "out of memory opening %s", path);
        xe_graph_destroy(g);
        xe_capi_close(h);
        return fail_out(&st, err, err_len);
    }
    if (!(h->s = xe_session_new(g, &opt, &st))) { /* takes g */
        xe_capi_close(h);
        return fail_out(&st, err, err_len);
    }
    *out = h;
    return XE_OK;
}

void xe_capi_close(xe_capi_session *h)
{
    if (!h)
        return;
    xe_capi_clear(h);
    for (int io = 0; io < 2; io++) {
        for (int i = 0; h->names[io] && i < h->n[io]; i++)
            free(h->names[io][i]);
        free(h->names[io]);
        free(h->types[io]);
    }
    free(h->outs);
    xe_session_destroy(h->s);
    free(h);
}

static bool valid(const xe_capi_session *h, int io, int i)
{
    return h && (io == 0 || io == 1) && i >= 0 && i < h->n[io];
}

int xe_capi_count(const xe_capi_session *h, int io)
{
    return h && (io == 0 || io == 1) ? h->n[io] : -1;
}

const char *xe_capi_name(const xe_capi_session *h, int io, int i)
{
    return valid(h, io, i) ? h->names[io][i] : NULL;
}

int xe_capi_dtype(const xe_capi_session *h, int io, int i)
{
    return valid(h, io, i) ? (int)h->types[io][i].dtype : -1;
}

int xe_capi_rank(const xe_capi_session *h, int io, int i)
{
    return valid(h, io, i) ? h->types[io][i].shape.rank : -1;
}

int64_t xe_capi_dim(const xe_capi_session *h, int io, int i, int d)
{
    if (!valid(h, io, i) || d < 0 || d >= h->types[io][i].shape.rank)
        return -1;
    return h->types[io][i].shape.dims[d];
}

/* Wraps the fed buffers; on failure releases what it wrapped. */
static xe_code wrap_inputs(const xe_capi_session *h, void *const *data, const int *dtypes,
                           const int *ranks, const int64_t *dims, xe_tensor **ins, xe_status *st)
{
    const int64_t *d = dims;
    for (int k = 0; k < h->n[0]; k++) {
        if (dtypes[k] < 0 || dtypes[k] >= XE_DTYPE_COUNT || ranks[k] < 0 ||
            ranks[k] > XE_MAX_RANK) {
            xe_fail(st, XE_ERR_USAGE, "input %s: bad dtype code %d or rank %d", h->names[0][k],
                    dtypes[k], ranks[k]);
        } else {
            xe_shape sh = xe_shape_make(ranks[k], d);
            d += ranks[k];
            ins[k] = xe_tensor_wrap((xe_dtype)dtypes[k], &sh, XE_DEV_CPU, data[k], st);
        }
        if (!ins[k]) {
            for (int j = 0; j < k; j++)
                xe_tensor_release(ins[j]);
            return st->code;
        }
    }
    return XE_OK;
}

int xe_capi_run(xe_capi_session *h, void *const *data, const int *dtypes, const int *ranks,
                const int64_t *dims, char *err, size_t err_len)
{
    if (!h)
        return fail_out(&(xe_status){XE_ERR_USAGE, "xe_capi_run: no session"}, err, err_len);
    xe_capi_clear(h);
    return xe_capi_run_into(h, data, dtypes, ranks, dims, (void **)h->outs, err, err_len);
}

int xe_capi_run_into(xe_capi_session *h, void *const *data, const int *dtypes, const int *ranks,
                     const int64_t *dims, void **outs, char *err, size_t err_len)
{
    xe_status st;
    xe_status_clear(&st);
    if (!h)
        return fail_out(&(xe_status){XE_ERR_USAGE, "xe_capi_run: no session"}, err, err_len);
    xe_tensor **ins = calloc((size_t)h->n[0] + 1, sizeof *ins);
    if (!ins)
        return fail_out(&(xe_status){XE_ERR_NOMEM, "out of memory"}, err, err_len);
    if (wrap_inputs(h, data, dtypes, ranks, dims, ins, &st) == XE_OK) {
        xe_session_run(h->s, ins, (xe_tensor **)outs, &st);
        for (int k = 0; k < h->n[0]; k++)
            xe_tensor_release(ins[k]);
    }
    free(ins);
    return st.code == XE_OK ? XE_OK : fail_out(&st, err, err_len);
}

int xe_capi_tensor_dtype(const void *t)
{
    return t ? (int)((const xe_tensor *)t)->dtype : -1;
}

int xe_capi_tensor_rank(const void *t)
{
    return t ? ((const xe_tensor *)t)->shape.rank : -1;
}

int64_t xe_capi_tensor_dim(const void *t, int d)
{
    const xe_tensor *x = t;
    return x && d >= 0 && d < x->shape.rank ? x->shape.dims[d] : -1;
}

const void *xe_capi_tensor_data(const void *t)
{
    return t ? ((const xe_tensor *)t)->data : NULL;
}

size_t xe_capi_tensor_nbytes(const void *t)
{
    return t ? ((const xe_tensor *)t)->nbytes : 0;
}

int xe_capi_tensor_exclusive(const void *t)
{
    const xe_tensor *x = t;
    return x && !x->borrowed && xe_device_is_host(x->device) &&
           __atomic_load_n(&x->refcount, __ATOMIC_ACQUIRE) == 1;
}

int xe_capi_write_graph(const xe_capi_session *h, const char *path, char *err, size_t err_len)
{
    xe_status st;
    xe_status_clear(&st);
    if (!h || xe_write_file(xe_session_graph(h->s), path, &st) != XE_OK)
        return fail_out(h ? &st : &(xe_status){XE_ERR_USAGE, "xe_capi_write_graph: no session"},
                        err, err_len);
    return XE_OK;
}

/* The devices that g's nodes (bodies included) are placed on, as bits 1 << xe_device. */
static int devices_of(const xe_graph *g)
{
    int bits = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i]->op != XE_OP_INPUT && g->nodes[i]->op != XE_OP_CONST)
            bits |= 1 << g->nodes[i]->device;
        if (g->nodes[i]->body)
            bits |= devices_of(g->nodes[i]->body);
    }
    return bits;
}

int xe_capi_end_profiling(xe_capi_session *h, char *err, size_t err_len)
{
    xe_status st;
    xe_status_clear(&st);
    if (h && xe_session_end_profiling(h->s, &st) != XE_OK)
        return fail_out(&st, err, err_len);
    return XE_OK;
}

int xe_capi_devices(const xe_capi_session *h)
{
    return h ? devices_of(xe_session_graph(h->s)) : 0;
}

static const xe_tensor *result(const xe_capi_session *h, int i)
{
    return valid(h, 1, i) ? h->outs[i] : NULL;
}

int xe_capi_result_dtype(const xe_capi_session *h, int i)
{
    const xe_tensor *t = result(h, i);
    return t ? (int)t->dtype : -1;
}

int xe_capi_result_rank(const xe_capi_session *h, int i)
{
    const xe_tensor *t = result(h, i);
    return t ? t->shape.rank : -1;
}

int64_t xe_capi_result_dim(const xe_capi_session *h, int i, int d)
{
    const xe_tensor *t = result(h, i);
    return t && d >= 0 && d < t->shape.rank ? t->shape.dims[d] : -1;
}

const void *xe_capi_result_data(const xe_capi_session *h, int i)
{
    const xe_tensor *t = result(h, i);
    return t ? t->data : NULL;
}

size_t xe_capi_result_nbytes(const xe_capi_session *h, int i)
{
    const xe_tensor *t = result(h, i);
    return t ? t->nbytes : 0;
}

void *xe_capi_result_take(xe_capi_session *h, int i)
{
    xe_tensor *t = valid(h, 1, i) ? h->outs[i] : NULL;
    /* the same tensor twice among the outputs holds two references */
    if (!t || t->borrowed || !xe_device_is_host(t->device) ||
        __atomic_load_n(&t->refcount, __ATOMIC_ACQUIRE) != 1)
        return NULL;
    h->outs[i] = NULL;
    return t;
}

void xe_capi_tensor_free(void *t)
{
    xe_tensor_release(t);
}

void xe_capi_clear(xe_capi_session *h)
{
    for (int i = 0; h && h->outs && i < h->n[1]; i++) {
        xe_tensor_release(h->outs[i]);
        h->outs[i] = NULL;
    }
}

int xe_capi_dtype_count(void)
{
    return XE_DTYPE_COUNT;
}

const char *xe_capi_dtype_name(int dt)
{
    return dt >= 0 && dt < XE_DTYPE_COUNT ? xe_dtype_name((xe_dtype)dt) : NULL;
}

const char *xe_capi_code_name(int code)
{
    return xe_code_name((xe_code)code);
}
