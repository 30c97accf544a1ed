/*
 * An xo_model, or the part of it a GetCapability or a Compile is about,
 * written as an ONNX ModelProto in protobuf's wire format (the few message
 * fields xlac's ONNX front end reads) and imported from memory. Values are
 * named v<J> and nodes n<K> after their indices in the model, so that the
 * names of the graph xlac builds from it (an ONNX node's output node is
 * named after it, its helpers n<K>.<I>, a graph output after its value)
 * lead back to onnxruntime's nodes (capability.c). Small constant
 * initializers are written in, so that shapes and axes fold at import as
 * they do from a file; bigger ones become graph inputs, fed at each run
 * with onnxruntime's own buffers (no copy of a model's weights).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xlac/onnx.h"
#include "xo.h"

/* ---- the wire format ------------------------------------------------------- */

void xo_pb_varint(xe_text *t, uint64_t v)
{
    unsigned char b[10];
    int n = 0;
    do {
        b[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    xe_text_append(t, b, (size_t)n);
}

static void tag(xe_text *t, int field, int wire)
{
    xo_pb_varint(t, ((uint64_t)field << 3) | (uint64_t)wire);
}

void xo_pb_int(xe_text *t, int field, int64_t v)
{
    tag(t, field, 0);
    xo_pb_varint(t, (uint64_t)v);
}

void xo_pb_float(xe_text *t, int field, float f)
{
    unsigned char b[4];
    memcpy(b, &f, 4); /* little-endian, as the wire format */
    tag(t, field, 5);
    xe_text_append(t, b, 4);
}

void xo_pb_bytes(xe_text *t, int field, const void *data, size_t n)
{
    tag(t, field, 2);
    xo_pb_varint(t, n);
    xe_text_append(t, data, n);
}

void xo_pb_str(xe_text *t, int field, const char *s)
{
    xo_pb_bytes(t, field, s, strlen(s));
}

void xo_pb_msg(xe_text *t, int field, xe_text *sub)
{
    if (sub->oom)
        t->oom = true;
    xo_pb_bytes(t, field, sub->buf ? sub->buf : "", sub->len);
    xe_text_free(sub);
}

size_t xo_elem_size(int elem)
{
    /* TensorProto.DataType: FLOAT UINT8 INT8 UINT16 INT16 INT32 INT64 STRING BOOL FLOAT16 DOUBLE UINT32 UINT64
       COMPLEX64 COMPLEX128 BFLOAT16 */
    static const unsigned char size[] = {0, 4, 1, 1, 2, 2, 4, 8, 0, 1, 2, 8, 4, 8, 0, 0, 2};
    return elem > 0 && elem < (int)sizeof size ? size[elem] : 0;
}

xe_code xo_pb_tensor(const xo_api *a, xe_text *t, int field, const char *name, const OrtValue *v, xe_status *st)
{
    OrtTensorTypeAndShapeInfo *info = NULL;
    int elem = 0;
    size_t rank = 0;
    int64_t dims[XE_MAX_RANK];
    void *data = NULL;
    if (xo_check(a, XO(a->ort, GetTensorTypeAndShape)(v, &info), "GetTensorTypeAndShape", st))
        return st->code;
    xe_code c = xo_check(a, XO(a->ort, GetTensorElementType)(info, &elem), "GetTensorElementType", st);
    if (c == XE_OK)
        c = xo_check(a, XO(a->ort, GetDimensionsCount)(info, &rank), "GetDimensionsCount", st);
    if (c == XE_OK && (rank > XE_MAX_RANK || !xo_elem_size(elem)))
        c = xe_fail(st, XE_ERR_UNSUPPORTED, "tensor %s: a type or rank xlac does not hold", name);
    if (c == XE_OK)
        c = xo_check(a, XO(a->ort, GetDimensions)(info, dims, rank), "GetDimensions", st);
    XO(a->ort, ReleaseTensorTypeAndShapeInfo)(info);
    if (c == XE_OK)
        c = xo_check(a, XO(a->ort, GetTensorMutableData)((OrtValue *)v, &data), "GetTensorMutableData", st);
    if (c != XE_OK)
        return c;
    size_t n = xo_elem_size(elem);
    xe_text p = {0};
    for (size_t d = 0; d < rank; d++) {
        xo_pb_int(&p, 1, dims[d]);
        n *= (size_t)(dims[d] > 0 ? dims[d] : 0);
    }
    xo_pb_int(&p, 2, elem);
    xo_pb_str(&p, 8, name);
    xo_pb_bytes(&p, 9, n ? data : "", n);
    xo_pb_msg(t, field, &p);
    return XE_OK;
}

/* ---- the model ---------------------------------------------------------------- */

/* An initializer's size in bytes (0 when it is not one, or its type is not one xlac holds). */
static size_t init_bytes(const xo_value *v)
{
    size_t n = xo_elem_size(v->elem);
    for (int d = 0; d < v->rank; d++)
        n *= (size_t)(v->dims[d] > 0 ? v->dims[d] : 0);
    return v->init && v->rank >= 0 ? n : 0;
}

static bool embedded(const xo_value *v)
{
    return v->init && v->rank >= 0 && xo_elem_size(v->elem) && init_bytes(v) <= XO_EMBED_MAX_BYTES;
}

/* A ValueInfoProto of value j as field `field` of t. */
static xe_code value_info(const xo_model *m, int j, xe_text *t, int field, xe_status *st)
{
    const xo_value *v = &m->values[j];
    if (!xo_elem_size(v->elem))
        return xe_fail(st, XE_ERR_UNSUPPORTED, "value %s: no tensor type xlac holds", v->name);
    char name[32];
    snprintf(name, sizeof name, "v%d", j);
    xe_text vi = {0}, tp = {0}, tt = {0}, sh = {0};
    xo_pb_str(&vi, 1, name);
    xo_pb_int(&tt, 1, v->elem);
    for (int d = 0; d < v->rank; d++) {
        xe_text dim = {0};
        if (v->dims[d] >= 0)
            xo_pb_int(&dim, 1, v->dims[d]);
        else if (v->params[d])
            xo_pb_str(&dim, 2, v->params[d]);
        xo_pb_msg(&sh, 1, &dim);
    }
    if (v->rank >= 0)
        xo_pb_msg(&tt, 2, &sh);
    xo_pb_msg(&tp, 1, &tt);
    xo_pb_msg(&vi, 2, &tp);
    xo_pb_msg(t, field, &vi);
    return XE_OK;
}

static void node_proto(const xo_model *m, int k, xe_text *g)
{
    const xo_node *n = &m->nodes[k];
    char name[32];
    xe_text p = {0};
    for (int j = 0; j < n->n_in; j++) {
        bool absent = n->in[j] < 0 || !m->values[n->in[j]].name[0];
        snprintf(name, sizeof name, "v%d", n->in[j]);
        xo_pb_str(&p, 1, absent ? "" : name);
    }
    for (int j = 0; j < n->n_out; j++) {
        bool absent = n->out[j] < 0 || !m->values[n->out[j]].name[0];
        snprintf(name, sizeof name, "v%d", n->out[j]);
        xo_pb_str(&p, 2, absent ? "" : name);
    }
    snprintf(name, sizeof name, "n%d", k);
    xo_pb_str(&p, 3, name);
    xo_pb_str(&p, 4, n->op_type);
    xo_pb_str(&p, 6, n->name); /* doc_string: onnxruntime's name of the node, for a reader of the dump */
    xo_pb_str(&p, 7, n->domain);
    xe_text_append(&p, n->attrs.buf ? n->attrs.buf : "", n->attrs.len);
    if (n->attrs.oom)
        p.oom = true;
    xo_pb_msg(g, 1, &p);
}

/* What one write keeps: per value whether a taken node writes it, and whether it was listed. */
typedef struct writer {
    const xo_api *a;
    const xo_model *m;
    const bool *take;
    bool *made, *listed;
    int *ins, n_ins;
    xe_text g;
} writer;

/* Inputs: the values taken nodes read and none writes, first read first. */
static xe_code graph_inputs(writer *w, xe_status *st)
{
    char name[32];
    for (int k = 0; k < w->m->n_nodes; k++) {
        const xo_node *n = &w->m->nodes[k];
        for (int j = 0; w->take[k] && j < n->n_in; j++) {
            int v = n->in[j];
            if (v < 0 || !w->m->values[v].name[0] || w->made[v] || w->listed[v])
                continue;
            w->listed[v] = true;
            snprintf(name, sizeof name, "v%d", v);
            if (embedded(&w->m->values[v])) {
                if (xo_pb_tensor(w->a, &w->g, 5, name, w->m->values[v].init, st) != XE_OK)
                    return st->code;
            } else if (value_info(w->m, v, &w->g, 11, st) != XE_OK) {
                return st->code;
            } else {
                w->ins[w->n_ins++] = v;
            }
        }
    }
    return XE_OK;
}

/* One output: its type when known, else its name alone (xlac infers it). */
static void graph_output(writer *w, int v)
{
    xe_status st;
    xe_status_clear(&st);
    if (value_info(w->m, v, &w->g, 12, &st) == XE_OK)
        return;
    char name[32];
    xe_text vi = {0};
    snprintf(name, sizeof name, "v%d", v);
    xo_pb_str(&vi, 1, name);
    xo_pb_msg(&w->g, 12, &vi);
}

/* Outputs: those asked for, else every written value a node not taken reads or the graph returns. */
static void graph_outputs(writer *w, const int *outputs, int n_outputs)
{
    if (outputs) {
        for (int k = 0; k < n_outputs; k++)
            graph_output(w, outputs[k]);
        return;
    }
    const xo_model *m = w->m;
    for (int k = 0; k < m->n_nodes; k++)
        for (int j = 0; !w->take[k] && j < m->nodes[k].n_in; j++)
            if (m->nodes[k].in[j] >= 0 && w->made[m->nodes[k].in[j]])
                w->listed[m->nodes[k].in[j]] = true; /* listed: read outside */
    for (int v = 0; v < m->n_values; v++)
        if (w->made[v] && (w->listed[v] || m->values[v].graph_output))
            graph_output(w, v);
}

/* The ModelProto around graph g. */
static char *model_proto(const xo_model *m, xe_text *g, size_t *len)
{
    xe_text t = {0};
    xo_pb_int(&t, 1, m->ir_version > 0 ? m->ir_version : 8);
    xo_pb_str(&t, 2, "xlac onnxruntime EP");
    for (int k = 0; k < m->n_opsets; k++) {
        xe_text o = {0};
        xo_pb_str(&o, 1, m->opset_domains[k]);
        xo_pb_int(&o, 2, m->opset_versions[k]);
        xo_pb_msg(&t, 8, &o);
    }
    xo_pb_msg(&t, 7, g);
    *len = t.len;
    return t.oom ? (xe_text_free(&t), NULL) : t.buf ? t.buf : calloc(1, 1);
}

char *xo_model_write(const xo_api *a, const xo_model *m, const bool *take, const int *outputs, int n_outputs,
                     size_t *len, int **in_values, int *n_in_values, xe_status *st)
{
    writer w = {.a = a, .m = m, .take = take};
    w.made = calloc((size_t)m->n_values + 1, 1);
    w.listed = calloc((size_t)m->n_values + 1, 1);
    w.ins = malloc(((size_t)m->n_values + 1) * sizeof *w.ins);
    xe_code c = w.made && w.listed && w.ins ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int k = 0; c == XE_OK && k < m->n_nodes; k++)
        for (int j = 0; take[k] && j < m->nodes[k].n_out; j++)
            if (m->nodes[k].out[j] >= 0)
                w.made[m->nodes[k].out[j]] = true;
    for (int k = 0; c == XE_OK && k < m->n_nodes; k++)
        if (take[k])
            node_proto(m, k, &w.g);
    xo_pb_str(&w.g, 2, "onnxruntime");
    if (c == XE_OK)
        c = graph_inputs(&w, st);
    if (c == XE_OK)
        graph_outputs(&w, outputs, n_outputs);
    char *out = c == XE_OK ? model_proto(m, &w.g, len) : NULL;
    if (c == XE_OK && !out)
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
    xe_text_free(&w.g);
    free(w.made), free(w.listed);
    if (out) {
        *in_values = w.ins;
        *n_in_values = w.n_ins;
    } else {
        free(w.ins);
    }
    return out;
}

xe_graph *xo_model_import(const xo_api *a, const xo_model *m, const bool *take, const int *outputs,
                          int n_outputs, int **in_values, int *n_in_values, char **report, xe_status *st)
{
    size_t len = 0;
    char *bytes = xo_model_write(a, m, take, outputs, n_outputs, &len, in_values, n_in_values, st);
    if (!bytes)
        return NULL;
    xe_onnx_options o = {.report = report};
    xe_graph *g = xe_onnx_load_memory(bytes, len, "<onnxruntime graph>", &o, st);
    free(bytes);
    if (!g) {
        free(*in_values);
        *in_values = NULL;
    }
    return g;
}
