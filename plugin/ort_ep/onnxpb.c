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
    /* TensorProto.DataType: FLOAT UINT8 INT8 UINT16 INT16 INT32 INT64 STRING BOOL FLOAT16 DOUBLE
       UINT32 UINT64 COMPLEX64 COMPLEX128 BFLOAT16 */
    static const unsigned char size[] = {0, 4, 1, 1, 2, 2, 4, 8, 0, 1, 2, 8, 4, 8, 0, 0, 2};
    return elem > 0 && elem < (int)sizeof size ? size[elem] : 0;
}

xe_code xo_pb_tensor(const xo_api *a, xe_text *t, int field, const char *name, const OrtValue *v,
                     xe_status *st)
{
    OrtTensorTypeAndShapeInfo *info = NULL;
    int elem = 0;
    size_t rank = 0;
    int64_t dims[XE_MAX_RANK];
    void *data = NULL;
    if (xo_check(a, XO(a->ort, GetTensorTypeAndShape)(v, &info), "GetTensorTypeAndShape", st))
        return st->code;
    xe_code c =
        xo_check(a, XO(a->ort, GetTensorElementType)(info, &elem), "GetTensorElementType", st);
    if (c == XE_OK)
        c = xo_check(a, XO(a->ort, GetDimensionsCount)(info, &rank), "GetDimensionsCount", st);
    if (c == XE_OK && (rank > XE_MAX_RANK || !xo_elem_size(elem)))
        c = xe_fail(st, XE_ERR_UNSUPPORTED, "tensor %s: a type or rank xlac does not hold", name);
    if (c == XE_OK)
        c = xo_check(a, XO(a->ort, GetDimensions)(info, dims, rank), "GetDimensions", st);
    XO(a->ort, ReleaseTensorTypeAndShapeInfo)(info);
    if (c == XE_OK)
        c = xo_check(a, XO(a->ort, GetTensorMutableData)((OrtValue *)v, &data),
                     "GetTensorMutableData", st);
    if (c != XE_OK)
        return c;
    size_t n = xo_elem_size(elem);
    for (size_t d = 0; d < rank; d++)
        n *= (size_t)(dims[d] > 0 ? dims[d] : 0);
    xo_pb_tensor_raw(t, field, name, elem, (int)rank, dims, data, n);
    return XE_OK;
}

void xo_pb_tensor_raw(xe_text *t, int field, const char *name, int elem, int rank,
                      const int64_t *dims, const void *data, size_t n)
{
    xe_text p = {0};
    for (int d = 0; d < rank; d++)
        xo_pb_int(&p, 1, dims[d]);
    xo_pb_int(&p, 2, elem);
    xo_pb_str(&p, 8, name);
    xo_pb_bytes(&p, 9, n ? data : "", n);
    xo_pb_msg(t, field, &p);
}

/* ---- the model ---------------------------------------------------------------- */

/* A value's size in bytes by its type (0 when its rank or element type is not known). */
static size_t value_bytes(const xo_value *v)
{
    size_t n = xo_elem_size(v->elem);
    for (int d = 0; d < v->rank; d++)
        n *= (size_t)(v->dims[d] > 0 ? v->dims[d] : 0);
    return v->rank >= 0 ? n : 0;
}

/* An initializer's size in bytes (0 when it is not one, or its type is not one xlac holds). */
static size_t init_bytes(const xo_value *v)
{
    return v->init ? value_bytes(v) : 0;
}

static bool embedded(const xo_value *v)
{
    return v->init && v->rank >= 0 && xo_elem_size(v->elem) && init_bytes(v) <= XO_EMBED_MAX_BYTES;
}

/* Whether v is a big initializer of a type xlac holds, every dim known: external data when
   imported. */
static bool external(const xo_value *v)
{
    bool known = (v->init || v->weight) && !v->data && v->rank >= 0 && xo_elem_size(v->elem);
    for (int d = 0; known && d < v->rank; d++)
        known = v->dims[d] >= 0;
    return known && !embedded(v);
}

/* Value v's TensorProto from its kept or fed bytes (v->data). */
static void data_tensor(xe_text *g, const xo_value *v, const char *name)
{
    size_t n = xo_elem_size(v->elem);
    for (int d = 0; d < v->rank; d++)
        n *= (size_t)(v->dims[d] > 0 ? v->dims[d] : 0);
    xo_pb_tensor_raw(g, 5, name, v->elem, v->rank, v->dims, v->data, n);
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
    xo_pb_str(&p, 6,
              n->name); /* doc_string: onnxruntime's name of the node, for a reader of the dump */
    xo_pb_str(&p, 7, n->domain);
    xe_text_append(&p, n->attrs.buf ? n->attrs.buf : "", n->attrs.len);
    if (n->attrs.oom)
        p.oom = true;
    xo_pb_msg(g, 1, &p);
}

/* The blocks of one import's external data (xe_onnx_block), their names beside them. */
typedef struct xo_blocks {
    xe_onnx_block *b;
    char (*names)[32];
    int n;
} xo_blocks;

/* What one write keeps: per value whether a taken node writes it, and whether it was listed. */
typedef struct writer {
    const xo_api *a;
    const xo_model *m;
    const bool *take;
    bool *made, *listed;
    int *ins, n_ins;
    int *unfold;       /* per node: a Gemm's x (unfold_gemm), -2 for its trailing Reshape, -1 */
    xo_blocks *blocks; /* NULL: big initializers are inputs (the dump) */
    xe_text g;
} writer;

/* ---- onnxruntime's MatMulAddFusion, undone ----------------------------------------------------
 */

/* Whether z has x's dims but the last, then n: the shape a Linear layer on x gives. */
static bool same_lead(const xo_value *x, const xo_value *z, int64_t n)
{
    if (z->rank != x->rank || z->dims[z->rank - 1] != n)
        return false;
    for (int d = 0; d < x->rank - 1; d++)
        if (x->dims[d] >= 0 ? x->dims[d] != z->dims[d]
                            : z->dims[d] >= 0 || !x->params[d] || !z->params[d] ||
                                  strcmp(x->params[d], z->params[d]))
            return false;
    return true;
}

/* The one node reading value y, as input 0 of a taken Reshape with one output; -1 if it is not so.
 */
static int reshape_reader(const writer *w, int y)
{
    const xo_model *m = w->m;
    int reader = -1;
    for (int q = 0; q < m->n_nodes; q++)
        for (int j = 0; j < m->nodes[q].n_in; j++)
            if (m->nodes[q].in[j] == y) {
                if (reader >= 0 || j != 0)
                    return -1;
                reader = q;
            }
    if (reader < 0 || !w->take[reader] || strcmp(m->nodes[reader].op_type, "Reshape") ||
        m->nodes[reader].n_out != 1 || m->nodes[reader].out[0] < 0)
        return -1;
    return reader;
}

/*
 * onnxruntime's basic level rewrites a Linear layer on x [.., K] (MatMul +
 * Add) as Reshape(x -> [M, K]) -> Gemm(W, C) -> Reshape(-> x's dims but the
 * last, N), before it hands the graph over; xlac ran that form of a 2-layer
 * encoder 1.4x slower than the MatMul + Add (bench/ort_ep_bench.py's
 * encoder, docs/onnxruntime-ep.md). For such a Gemm k (its attributes the
 * defaults, C of rank <= 1, the Gemm's only reader the trailing Reshape,
 * both Reshapes taken): x, and *tail the trailing Reshape; else -1. The
 * write then gives xlac MatMul(x, W) + C on x's dims and the trailing
 * Reshape as an Identity; the leading one is left unread. Same nodes, same
 * values: only how xlac reads them changes.
 */
static int unfold_gemm(const writer *w, int k, int *tail)
{
    const xo_model *m = w->m;
    const xo_node *g = &m->nodes[k];
    if (!g->plain_gemm || g->n_in < 2 || g->n_out != 1 || g->in[0] < 0 || g->in[1] < 0 ||
        g->out[0] < 0)
        return -1;
    int a = g->in[0], c = g->n_in > 2 ? g->in[2] : -1, r = m->values[a].producer;
    if (r < 0 || !w->take[r] || strcmp(m->nodes[r].op_type, "Reshape") || m->nodes[r].in[0] < 0)
        return -1;
    const xo_value *x = &m->values[m->nodes[r].in[0]], *av = &m->values[a],
                   *wt = &m->values[g->in[1]];
    if (x->rank < 3 || av->rank != 2 || wt->rank != 2 || x->dims[x->rank - 1] <= 0 ||
        x->dims[x->rank - 1] != av->dims[1] || wt->dims[1] <= 0 ||
        m->values[g->out[0]].graph_output ||
        (c >= 0 && m->values[c].name[0] && (m->values[c].rank < 0 || m->values[c].rank > 1)))
        return -1;
    int t = reshape_reader(w, g->out[0]);
    if (t < 0 || !same_lead(x, &m->values[m->nodes[t].out[0]], wt->dims[1]))
        return -1;
    *tail = t;
    return m->nodes[r].in[0];
}

/* w->unfold for every taken node. */
static void find_unfolds(writer *w)
{
    for (int k = 0; k < w->m->n_nodes; k++)
        w->unfold[k] = -1;
    for (int k = 0, t; k < w->m->n_nodes; k++)
        if (w->take[k] && w->unfold[k] == -1 && (w->unfold[k] = unfold_gemm(w, k, &t)) >= 0)
            w->unfold[t] = -2;
}

/* One NodeProto: op, name, inputs and outputs by name (no attributes), onnxruntime's name as
 * doc_string. */
static void simple_node(xe_text *g, const char *op, const char *name, const char *const *in,
                        int n_in, const char *out, const char *doc)
{
    xe_text p = {0};
    for (int j = 0; j < n_in; j++)
        xo_pb_str(&p, 1, in[j]);
    xo_pb_str(&p, 2, out);
    xo_pb_str(&p, 3, name);
    xo_pb_str(&p, 4, op);
    xo_pb_str(&p, 6, doc);
    xo_pb_str(&p, 7, "");
    xo_pb_msg(g, 1, &p);
}

/* Gemm k unfolded on x: MatMul(x, W) (+ C), writing its output value; its trailing Reshape t an
 * Identity. */
static void unfolded_protos(const writer *w, int k, xe_text *g)
{
    const xo_model *m = w->m;
    const xo_node *n = &m->nodes[k];
    char x[32], wt[32], c[32], y[32], mm[40], name[32], name_mm[40];
    bool bias = n->n_in > 2 && n->in[2] >= 0 && m->values[n->in[2]].name[0];
    snprintf(x, sizeof x, "v%d", w->unfold[k]);
    snprintf(wt, sizeof wt, "v%d", n->in[1]);
    snprintf(c, sizeof c, "v%d", bias ? n->in[2] : 0);
    snprintf(y, sizeof y, "v%d", n->out[0]);
    snprintf(mm, sizeof mm, "v%d.mm", n->out[0]);
    snprintf(name, sizeof name, "n%d", k);
    snprintf(name_mm, sizeof name_mm, "n%d.mm", k);
    const char *mm_in[2] = {x, wt}, *add_in[2] = {mm, c};
    simple_node(g, "MatMul", bias ? name_mm : name, mm_in, 2, bias ? mm : y, n->name);
    if (bias)
        simple_node(g, "Add", name, add_in, 2, y, n->name);
}

/* The trailing Reshape t of an unfolded Gemm, as Identity(its input). */
static void identity_proto(const writer *w, int t, xe_text *g)
{
    const xo_node *n = &w->m->nodes[t];
    char in[32], out[32], name[32];
    snprintf(in, sizeof in, "v%d", n->in[0]);
    snprintf(out, sizeof out, "v%d", n->out[0]);
    snprintf(name, sizeof name, "n%d", t);
    const char *ins[1] = {in};
    simple_node(g, "Identity", name, ins, 1, out, n->name);
}

/* Big initializer j as a TensorProto whose data is external, in a block named name: the weight's
   copy, or onnxruntime's bytes. */
static xe_code external_tensor(writer *w, int j, const char *name, xe_status *st)
{
    const xo_value *v = &w->m->values[j];
    void *data = v->weight ? v->weight->data : NULL;
    if (!v->weight &&
        xo_check(w->a, XO(w->a->ort, GetTensorMutableData)((OrtValue *)v->init, &data),
                 "GetTensorMutableData", st))
        return st->code;
    xo_blocks *bs = w->blocks;
    size_t n = value_bytes(v);
    snprintf(bs->names[bs->n], sizeof bs->names[bs->n], "%s", name);
    bs->b[bs->n] = (xe_onnx_block){.name = bs->names[bs->n],
                                   .data = data,
                                   .len = n,
                                   .keeper = v->weight ? &v->weight->keeper : NULL};
    bs->n++;
    char len[32];
    snprintf(len, sizeof len, "%zu", n);
    xe_text p = {0}, loc = {0}, size = {0};
    for (int d = 0; d < v->rank; d++)
        xo_pb_int(&p, 1, v->dims[d]);
    xo_pb_int(&p, 2, v->elem);
    xo_pb_str(&p, 8, name);
    xo_pb_str(&loc, 1, "location");
    xo_pb_str(&loc, 2, name);
    xo_pb_msg(&p, 13, &loc);
    xo_pb_str(&size, 1, "length");
    xo_pb_str(&size, 2, len);
    xo_pb_msg(&p, 13, &size);
    xo_pb_int(&p, 14, 1); /* data_location EXTERNAL */
    xo_pb_msg(&w->g, 5, &p);
    return XE_OK;
}

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
            if (w->m->values[v].data) {
                data_tensor(&w->g, &w->m->values[v], name);
            } else if (embedded(&w->m->values[v])) {
                if (xo_pb_tensor(w->a, &w->g, 5, name, w->m->values[v].init, st) != XE_OK)
                    return st->code;
            } else if (w->blocks && external(&w->m->values[v])) {
                if (external_tensor(w, v, name, st) != XE_OK)
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

/* Outputs: those asked for, else every written value a node not taken reads or the graph returns.
 */
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

static char *write_model(const xo_api *a, const xo_model *m, const bool *take, const int *outputs,
                         int n_outputs, size_t *len, int **in_values, int *n_in_values,
                         xo_blocks *blocks, xe_status *st)
{
    writer w = {.a = a, .m = m, .take = take, .blocks = blocks};
    w.made = calloc((size_t)m->n_values + 1, 1);
    w.listed = calloc((size_t)m->n_values + 1, 1);
    w.ins = malloc(((size_t)m->n_values + 1) * sizeof *w.ins);
    xe_code c = w.made && w.listed && w.ins ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int k = 0; c == XE_OK && k < m->n_nodes; k++)
        for (int j = 0; take[k] && j < m->nodes[k].n_out; j++)
            if (m->nodes[k].out[j] >= 0)
                w.made[m->nodes[k].out[j]] = true;
    w.unfold = malloc(((size_t)m->n_nodes + 1) * sizeof *w.unfold);
    if (c == XE_OK && !w.unfold)
        c = xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (c == XE_OK)
        find_unfolds(&w);
    for (int k = 0; c == XE_OK && k < m->n_nodes; k++)
        if (take[k] && w.unfold[k] >= 0)
            unfolded_protos(&w, k, &w.g);
        else if (take[k] && w.unfold[k] == -2)
            identity_proto(&w, k, &w.g);
        else if (take[k])
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
    free(w.made), free(w.listed), free(w.unfold);
    if (out) {
        *in_values = w.ins;
        *n_in_values = w.n_ins;
    } else {
        free(w.ins);
    }
    return out;
}

char *xo_model_write(const xo_api *a, const xo_model *m, const bool *take, const int *outputs,
                     int n_outputs, size_t *len, int **in_values, int *n_in_values, xe_status *st)
{
    return write_model(a, m, take, outputs, n_outputs, len, in_values, n_in_values, NULL, st);
}

xe_graph *xo_model_import(const xo_api *a, const xo_model *m, const bool *take, const int *outputs,
                          int n_outputs, int **in_values, int *n_in_values, char **report,
                          xe_status *st)
{
    size_t len = 0;
    xo_blocks bs = {.b = calloc((size_t)m->n_values + 1, sizeof *bs.b),
                    .names = calloc((size_t)m->n_values + 1, sizeof *bs.names)};
    char *bytes = bs.b && bs.names ? write_model(a, m, take, outputs, n_outputs, &len, in_values,
                                                 n_in_values, &bs, st)
                                   : NULL;
    if (!bs.b || !bs.names)
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
    xe_graph *g = NULL;
    if (bytes) {
        xe_onnx_options o = {.report = report,
                             .nodes_at_load = true, /* what is taken must import */
                             .blocks = bs.b,
                             .n_blocks = bs.n};
        g = xe_onnx_load_memory(bytes, len, "<onnxruntime graph>", &o, st);
    }
    free(bytes), free(bs.b), free(bs.names);
    return g;
}

/* ---- what a failed import needs, and a model that outlives its graph -------------------- */

/* The value named just before s in report ("'v<J>') is not ..." with s at its closing quote), -1 if
 * none. */
static int named_value(const xo_model *m, const char *report, const char *s)
{
    const char *q = s;
    while (q > report && q[-1] >= '0' && q[-1] <= '9')
        q--;
    if (q == s || q - report < 2 || q[-1] != 'v' || q[-2] != '\'')
        return -1;
    long v = strtol(q, NULL, 10);
    return v >= 0 && v < m->n_values ? (int)v : -1;
}

/* A value fed from outside the nodes taken whose value can be part of a signature: an integer
   tensor of rank at most 1, no initializer (shape arithmetic computed outside). */
static bool shape_like(const xo_value *x)
{
    return !x->init && !x->data && !x->weight && x->rank >= 0 && x->rank <= 1 &&
           (x->elem == 7 || x->elem == 6); /* INT64, INT32 */
}

/* Whether value v traces back through the taken nodes (seen: per value) to shape-like values and
 * constants. */
static bool trace(const xo_model *m, const bool *take, int v, char *seen, int *stack)
{
    int top = 0;
    stack[top++] = v;
    seen[v] = 1;
    while (top > 0) {
        const xo_value *x = &m->values[v = stack[--top]];
        int k = x->producer;
        if (k < 0 || !take[k]) { /* a leaf: computed outside, a graph input or an initializer */
            if (!x->init && !x->data && !x->weight && !shape_like(x))
                return false;
            continue;
        }
        if (!strcmp(m->nodes[k].op_type, "Shape") || !strcmp(m->nodes[k].op_type, "Size"))
            continue;
        for (int j = 0; j < m->nodes[k].n_in; j++) {
            int u = m->nodes[k].in[j];
            if (u >= 0 && m->values[u].name[0] && !seen[u])
                seen[stack[top++] = u] = 1;
        }
    }
    return true;
}

/* Every shape-like value the taken nodes read and none of them writes, into out; their count. */
static int shape_like_inputs(const xo_model *m, const bool *take, char *listed, int *out)
{
    int n = 0;
    memset(listed, 0, (size_t)m->n_values);
    for (int k = 0; k < m->n_nodes; k++)
        for (int j = 0; take[k] && j < m->nodes[k].n_in; j++) {
            int v = m->nodes[k].in[j], w = v >= 0 ? m->values[v].producer : -1;
            if (v >= 0 && m->values[v].name[0] && !listed[v] && (w < 0 || !take[w]) &&
                shape_like(&m->values[v]))
                listed[v] = 1, out[n++] = v;
        }
    return n;
}

int xo_value_inputs(const xo_model *m, const bool *take, const char *report, int **vals)
{
    static const char needle[] = "') is not supported unless it is known at load time";
    *vals = NULL;
    char *seen = calloc((size_t)m->n_values + 1, 1);
    int *stack = malloc(((size_t)m->n_values + 1) * sizeof *stack);
    int *out = malloc(((size_t)m->n_values + 1) * sizeof *out), n = 0;
    bool ok = seen && stack && out && report && strstr(report, needle);
    for (const char *s = report; ok && (s = strstr(s, needle)); s += sizeof needle - 1) {
        int v = named_value(m, report, s);
        ok = v >= 0 && (seen[v] || trace(m, take, v, seen, stack));
    }
    /* all of them, not only those named: the importer names the first it misses on each path */
    if (ok)
        n = shape_like_inputs(m, take, seen, out);
    free(seen), free(stack);
    if (!out)
        return -1;
    if (!n) {
        free(out);
        return 0;
    }
    *vals = out;
    return n;
}

xe_code xo_model_keep(const xo_api *a, xo_model *m, xe_status *st)
{
    for (int k = 0; k < m->n_values; k++) {
        xo_value *v = &m->values[k];
        if (embedded(v)) {
            void *src = NULL;
            size_t n = init_bytes(v);
            if (xo_check(a, XO(a->ort, GetTensorMutableData)((OrtValue *)v->init, &src),
                         "GetTensorMutableData", st))
                return st->code;
            void *copy = malloc(n + 1);
            if (!copy)
                return xe_fail(st, XE_ERR_NOMEM, "out of memory");
            if (n)
                memcpy(copy, src, n);
            v->data = copy;
            v->owned = true;
        }
        v->init = NULL;
    }
    return XE_OK;
}

static void weight_drop(xe_tensor_keeper *k)
{
    xo_weight *w = (xo_weight *)k;
    free(w->data);
    free(w);
}

xe_code xo_model_own_weights(const xo_api *a, xo_model *m, xe_status *st)
{
    for (int k = 0; k < m->n_values; k++) {
        xo_value *v = &m->values[k];
        if (!v->init || v->weight || !external(v))
            continue;
        void *src = NULL;
        size_t n = value_bytes(v);
        if (xo_check(a, XO(a->ort, GetTensorMutableData)((OrtValue *)v->init, &src),
                     "GetTensorMutableData", st))
            return st->code;
        xo_weight *w = calloc(1, sizeof *w);
        void *data = aligned_alloc(64, (n + 63) / 64 * 64 + 64);
        if (!w || !data) {
            free(w), free(data);
            return xe_fail(st, XE_ERR_NOMEM, "out of memory (a copy of initializer %s, %zu bytes)",
                           v->name, n);
        }
        if (n)
            memcpy(data, src, n);
        *w = (xo_weight){.keeper = {.refcount = 1, .drop = weight_drop}, .data = data, .len = n};
        v->weight = w;
    }
    return XE_OK;
}
