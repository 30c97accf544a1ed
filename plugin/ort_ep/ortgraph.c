/*
 * An OrtGraph read into an xo_model: every node (op type, domain, name,
 * the values it reads and writes, its attributes as ONNX AttributeProto
 * bytes), every value (name, element type, dims with their symbolic names,
 * a constant initializer's OrtValue) and the graph's inputs and outputs,
 * through the OrtApi accessors alone. Nodes are put in a topological order
 * (onnxruntime's own order is not promised to be one). A node xlac never
 * takes (one with a subgraph or an attribute it cannot read) is kept with
 * its reason, so that the values around it stay known.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xo.h"

/* ---- values ------------------------------------------------------------------- */

/* FNV-1a of a name: the slot it starts from in the names table. */
static size_t name_hash(const char *name)
{
    size_t h = 1469598103934665603u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 1099511628211u;
    return h;
}

int xo_model_find(const xo_model *m, const char *name)
{
    if (!m->n_slots)
        return -1;
    for (size_t k = name_hash(name) & (m->n_slots - 1);; k = (k + 1) & (m->n_slots - 1)) {
        int v = m->slots[k];
        if (v < 0 || !strcmp(m->values[v].name, name))
            return v;
    }
}

/* Puts value v into the names table, growing it to keep it at most half full. */
static xe_code slot_add(xo_model *m, int v, xe_status *st)
{
    if (2 * (size_t)(m->n_values + 1) > m->n_slots) {
        size_t n = m->n_slots ? 2 * m->n_slots : 256;
        int *ns = malloc(n * sizeof *ns);
        if (!ns)
            return xe_fail(st, XE_ERR_NOMEM, "out of memory");
        memset(ns, 0xff, n * sizeof *ns);
        free(m->slots);
        m->slots = ns;
        m->n_slots = n;
        for (int k = 0; k < v; k++) /* the ones before v, again */
            for (size_t j = name_hash(m->values[k].name) & (n - 1);; j = (j + 1) & (n - 1))
                if (m->slots[j] < 0) {
                    m->slots[j] = k;
                    break;
                }
    }
    for (size_t j = name_hash(m->values[v].name) & (m->n_slots - 1);;
         j = (j + 1) & (m->n_slots - 1))
        if (m->slots[j] < 0) {
            m->slots[j] = v;
            return XE_OK;
        }
}

/* The type of vi into v (left unknown when it is not a tensor's). */
static xe_code read_type(const xo_api *a, const OrtValueInfo *vi, xo_value *v, xe_status *st)
{
    const OrtTypeInfo *ti = NULL;
    const OrtTensorTypeAndShapeInfo *tt = NULL;
    int kind = 0;
    size_t rank = 0;
    const char *params[XE_MAX_RANK] = {0};
    v->rank = -1;
    if (xo_check(a, XO(a->ort, GetValueInfoTypeInfo)(vi, &ti), "GetValueInfoTypeInfo", st) != XE_OK)
        return st->code;
    if (!ti ||
        xo_check(a, XO(a->ort, GetOnnxTypeFromTypeInfo)(ti, &kind), "GetOnnxTypeFromTypeInfo",
                 st) ||
        kind != XO_ONNX_TYPE_TENSOR)
        return st->code;
    if (xo_check(a, XO(a->ort, CastTypeInfoToTensorInfo)(ti, &tt), "CastTypeInfoToTensorInfo",
                 st) ||
        !tt ||
        xo_check(a, XO(a->ort, GetTensorElementType)(tt, &v->elem), "GetTensorElementType", st) ||
        xo_check(a, XO(a->ort, GetDimensionsCount)(tt, &rank), "GetDimensionsCount", st))
        return st->code;
    if (rank > XE_MAX_RANK)
        return XE_OK; /* more dims than xlac holds: the rank stays unknown */
    if (xo_check(a, XO(a->ort, GetDimensions)(tt, v->dims, rank), "GetDimensions", st) ||
        xo_check(a, XO(a->ort, GetSymbolicDimensions)(tt, params, rank), "GetSymbolicDimensions",
                 st))
        return st->code;
    for (size_t d = 0; d < rank; d++)
        if (params[d] && params[d][0] && !(v->params[d] = strdup(params[d])))
            return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    v->rank = (int)rank;
    return XE_OK;
}

/* The index of vi's value in m, added on first sight; -1 with *st set on failure. */
static int value_of(const xo_api *a, xo_model *m, const OrtValueInfo *vi, xe_status *st)
{
    const char *name = NULL;
    if (xo_check(a, XO(a->ort, GetValueInfoName)(vi, &name), "GetValueInfoName", st) != XE_OK)
        return -1;
    int found = xo_model_find(m, name ? name : "");
    if (found >= 0)
        return found;
    if (m->n_values == m->cap_values) {
        int cap = m->cap_values ? 2 * m->cap_values : 64;
        xo_value *nv = realloc(m->values, (size_t)cap * sizeof *nv);
        if (!nv)
            return xe_fail(st, XE_ERR_NOMEM, "out of memory"), -1;
        m->values = nv;
        m->cap_values = cap;
    }
    xo_value *v = &m->values[m->n_values];
    memset(v, 0, sizeof *v);
    v->producer = -1;
    if (!(v->name = strdup(name ? name : "")))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory"), -1;
    if (slot_add(m, m->n_values, st) != XE_OK) {
        free(v->name);
        return -1;
    }
    m->n_values++;
    bool is_const = false;
    if (read_type(a, vi, v, st) != XE_OK ||
        xo_check(a, XO(a->ort, ValueInfo_IsConstantInitializer)(vi, &is_const),
                 "ValueInfo_IsConstantInitializer", st) != XE_OK)
        return -1;
    if (is_const && xo_check(a, XO(a->ort, ValueInfo_GetInitializerValue)(vi, &v->init),
                             "ValueInfo_GetInitializerValue", st) != XE_OK)
        return -1;
    return m->n_values - 1;
}

/* ---- attributes ----------------------------------------------------------------- */

/* The bytes of attribute at of type type (ReadOpAttr asked for its size first); free them. */
static void *attr_bytes(const xo_api *a, const OrtOpAttr *at, int type, size_t *n, xe_status *st)
{
    *n = 0;
    OrtStatus *s = XO(a->ort, ReadOpAttr)(at, type, NULL, 0, n);
    if (s)
        XO(a->ort, ReleaseStatus)(s); /* too small: *n holds the size */
    void *buf = calloc(1, *n + 8);
    if (!buf) {
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    size_t len = *n;
    if (xo_check(a, XO(a->ort, ReadOpAttr)(at, type, buf, len, n), "ReadOpAttr", st) != XE_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* The lists and strings of an attribute (AttributeProto fields 4, 6-9). */
static xe_code attr_list(const xo_api *a, const OrtOpAttr *at, int type, xe_text *p, xe_status *st)
{
    size_t n;
    char *buf = attr_bytes(a, at, type, &n, st);
    if (!buf)
        return st->code;
    if (type == XO_ATTR_STRING) {
        xo_pb_int(p, 20, 3);
        xo_pb_bytes(p, 4, buf, n);
    } else if (type == XO_ATTR_INTS) {
        xo_pb_int(p, 20, 7);
        for (size_t k = 0; k < n / sizeof(int64_t); k++)
            xo_pb_int(p, 8, ((int64_t *)(void *)buf)[k]);
    } else if (type == XO_ATTR_FLOATS) {
        xo_pb_int(p, 20, 6);
        for (size_t k = 0; k < n / sizeof(float); k++)
            xo_pb_float(p, 7, ((float *)(void *)buf)[k]);
    } else { /* STRINGS: NUL-terminated, one after the other */
        xo_pb_int(p, 20, 8);
        for (size_t k = 0; k < n; k += strlen(buf + k) + 1)
            xo_pb_bytes(p, 9, buf + k, strnlen(buf + k, n - k));
    }
    free(buf);
    return XE_OK;
}

/* The value of attribute at into p (an AttributeProto under construction); *refuse when xlac cannot
   carry it; a number that is not its Gemm default (alpha, beta 1; transA, transB 0) clears
   n->plain_gemm. */
static xe_code attr_value(const xo_api *a, const OrtOpAttr *at, int type, xe_text *p, xo_node *nd,
                          xe_status *st)
{
    size_t n;
    if (type == XO_ATTR_INT || type == XO_ATTR_FLOAT) {
        union {
            int64_t i;
            float f;
        } u = {0};
        if (xo_check(a, XO(a->ort, ReadOpAttr)(at, type, &u, type == XO_ATTR_INT ? 8 : 4, &n),
                     "ReadOpAttr", st))
            return st->code;
        if (type == XO_ATTR_INT ? u.i != 0 : u.f != 1.0f)
            nd->plain_gemm = false;
        xo_pb_int(p, 20, type == XO_ATTR_INT ? 2 : 1);
        if (type == XO_ATTR_INT)
            xo_pb_int(p, 3, u.i);
        else
            xo_pb_float(p, 2, u.f);
        return XE_OK;
    }
    if (type == XO_ATTR_STRING || type == XO_ATTR_INTS || type == XO_ATTR_FLOATS ||
        type == XO_ATTR_STRINGS)
        return attr_list(a, at, type, p, st);
    nd->plain_gemm = false;
    if (type != XO_ATTR_TENSOR) {
        nd->refuse = "an attribute of a kind xlac does not read (a graph)";
        return XE_OK;
    }
    OrtValue *t = NULL;
    if (xo_check(a, XO(a->ort, OpAttr_GetTensorAttributeAsOrtValue)(at, &t),
                 "OpAttr_GetTensorAttributeAsOrtValue", st))
        return st->code;
    xo_pb_int(p, 20, 4);
    xe_code c = t ? xo_pb_tensor(a, p, 5, "", t, st) : XE_OK;
    XO(a->ort, ReleaseValue)(t);
    return c;
}

/* Every attribute of node n, as NodeProto field 5 entries into n->attrs. */
static xe_code read_attrs(const xo_api *a, xo_node *n, xe_status *st)
{
    size_t count = 0;
    if (xo_check(a, XO(a->ort, Node_GetNumAttributes)(n->node, &count), "Node_GetNumAttributes",
                 st))
        return st->code;
    const OrtOpAttr **at = calloc(count + 1, sizeof *at);
    if (!at)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    n->plain_gemm = !strcmp(n->op_type, "Gemm") && (!n->domain[0] || !strcmp(n->domain, "ai.onnx"));
    xe_code c = count ? xo_check(a, XO(a->ort, Node_GetAttributes)(n->node, at, count),
                                 "Node_GetAttributes", st)
                      : XE_OK;
    for (size_t k = 0; c == XE_OK && k < count; k++) {
        const char *name = NULL;
        int type = 0;
        if ((c = xo_check(a, XO(a->ort, OpAttr_GetName)(at[k], &name), "OpAttr_GetName", st)) !=
                XE_OK ||
            (c = xo_check(a, XO(a->ort, OpAttr_GetType)(at[k], &type), "OpAttr_GetType", st)) !=
                XE_OK)
            break;
        xe_text p = {0};
        xo_pb_str(&p, 1, name ? name : "");
        c = attr_value(a, at[k], type, &p, n, st);
        xo_pb_msg(&n->attrs, 5, &p);
    }
    free(at);
    return c;
}

/* ---- nodes -------------------------------------------------------------------------- */

/* Values of count value infos into *out (malloc'd; -1 for an absent one). */
static xe_code read_values(const xo_api *a, xo_model *m, const OrtValueInfo **vi, size_t count,
                           int **out, xe_status *st)
{
    if (!(*out = malloc((count + 1) * sizeof **out)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (size_t k = 0; k < count; k++)
        if (!vi[k])
            (*out)[k] = -1;
        else if (((*out)[k] = value_of(a, m, vi[k], st)) < 0)
            return st->code;
    return XE_OK;
}

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

/* The names, inputs and outputs of node k (n->node set). */
static xe_code read_io(const xo_api *a, xo_model *m, xo_node *n, xe_status *st)
{
    const char *op = NULL, *dom = NULL, *name = NULL;
    size_t ni = 0, no = 0, nsub = 0, nimp = 0;
    if (xo_check(a, XO(a->ort, Node_GetOperatorType)(n->node, &op), "Node_GetOperatorType", st) ||
        xo_check(a, XO(a->ort, Node_GetDomain)(n->node, &dom), "Node_GetDomain", st) ||
        xo_check(a, XO(a->ort, Node_GetName)(n->node, &name), "Node_GetName", st) ||
        xo_check(a, XO(a->ort, Node_GetNumInputs)(n->node, &ni), "Node_GetNumInputs", st) ||
        xo_check(a, XO(a->ort, Node_GetNumOutputs)(n->node, &no), "Node_GetNumOutputs", st) ||
        xo_check(a, XO(a->ort, Node_GetNumSubgraphs)(n->node, &nsub), "Node_GetNumSubgraphs", st) ||
        xo_check(a, XO(a->ort, Node_GetNumImplicitInputs)(n->node, &nimp),
                 "Node_GetNumImplicitInputs", st))
        return st->code;
    if (!(n->op_type = dup_or_empty(op)) || !(n->domain = dup_or_empty(dom)) ||
        !(n->name = dup_or_empty(name)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (nsub || nimp)
        n->refuse = "a node with a subgraph";
    /* a subgraph's reads of this graph's values (implicit inputs) count as the node's own, after
       its inputs: a value only a subgraph reads is still read, and a path through the node is still
       a path */
    const OrtValueInfo **vi = calloc(ni + nimp + no + 1, sizeof *vi);
    if (!vi)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    xe_code c =
        ni ? xo_check(a, XO(a->ort, Node_GetInputs)(n->node, vi, ni), "Node_GetInputs", st) : XE_OK;
    if (c == XE_OK && nimp)
        c = xo_check(a, XO(a->ort, Node_GetImplicitInputs)(n->node, vi + ni, nimp),
                     "Node_GetImplicitInputs", st);
    if (c == XE_OK && no)
        c = xo_check(a, XO(a->ort, Node_GetOutputs)(n->node, vi + ni + nimp, no), "Node_GetOutputs",
                     st);
    if (c == XE_OK && (c = read_values(a, m, vi, ni + nimp, &n->in, st)) == XE_OK)
        c = read_values(a, m, vi + ni + nimp, no, &n->out, st);
    n->n_in = (int)(ni + nimp);
    n->n_out = (int)no;
    free(vi);
    return c;
}

/* Node order: each node after the writers of the values it reads (Kahn's, stable in onnxruntime's
 * order). */
static xe_code topo_sort(xo_model *m, xe_status *st)
{
    int n = m->n_nodes, done = 0;
    int *order = malloc(((size_t)n + 1) * sizeof *order);
    bool *placed = calloc((size_t)n + 1, 1);
    bool *ready = calloc((size_t)m->n_values + 1, 1);
    xo_node *sorted = malloc(((size_t)n + 1) * sizeof *sorted);
    if (!order || !placed || !ready || !sorted) {
        free(order), free(placed), free(ready), free(sorted);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    for (int v = 0; v < m->n_values; v++)
        ready[v] = m->values[v].producer < 0;
    for (bool moved = true; moved && done < n;) {
        moved = false;
        for (int k = 0; k < n; k++) {
            bool ok = !placed[k];
            for (int j = 0; ok && j < m->nodes[k].n_in; j++)
                ok = m->nodes[k].in[j] < 0 || ready[m->nodes[k].in[j]];
            if (!ok)
                continue;
            placed[k] = moved = true;
            order[done++] = k;
            for (int j = 0; j < m->nodes[k].n_out; j++)
                if (m->nodes[k].out[j] >= 0)
                    ready[m->nodes[k].out[j]] = true;
        }
    }
    for (int k = 0; k < n; k++) /* a cycle (not a valid graph): the rest in their order */
        if (!placed[k])
            order[done++] = k;
    for (int k = 0; k < n; k++)
        sorted[k] = m->nodes[order[k]];
    free(m->nodes);
    m->nodes = sorted;
    for (int k = 0; k < n; k++)
        for (int j = 0; j < m->nodes[k].n_out; j++)
            if (m->nodes[k].out[j] >= 0)
                m->values[m->nodes[k].out[j]].producer = k;
    free(order), free(placed), free(ready);
    return XE_OK;
}

/* The graph's inputs (or outputs) as values into *out. */
static xe_code read_ends(const xo_api *a, xo_model *m, const OrtGraph *g, bool outputs,
                         xe_status *st)
{
    size_t n = 0;
    OrtStatus *s =
        outputs ? XO(a->ort, Graph_GetNumOutputs)(g, &n) : XO(a->ort, Graph_GetNumInputs)(g, &n);
    if (xo_check(a, s, outputs ? "Graph_GetNumOutputs" : "Graph_GetNumInputs", st))
        return st->code;
    const OrtValueInfo **vi = calloc(n + 1, sizeof *vi);
    if (!vi)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    s = !n        ? NULL
        : outputs ? XO(a->ort, Graph_GetOutputs)(g, vi, n)
                  : XO(a->ort, Graph_GetInputs)(g, vi, n);
    int *vals = NULL;
    xe_code c = xo_check(a, s, outputs ? "Graph_GetOutputs" : "Graph_GetInputs", st);
    if (c == XE_OK)
        c = read_values(a, m, vi, n, &vals, st);
    free(vi);
    int kept = 0;
    for (size_t k = 0; c == XE_OK && k < n; k++)
        if (vals[k] >= 0 && (outputs || !m->values[vals[k]].init))
            vals[kept++] = vals[k];
    if (outputs)
        for (int k = 0; c == XE_OK && k < kept; k++)
            m->values[vals[k]].graph_output = true;
    *(outputs ? &m->outputs : &m->inputs) = vals;
    *(outputs ? &m->n_outputs : &m->n_inputs) = kept;
    return c;
}

static xe_code read_opsets(const xo_api *a, xo_model *m, const OrtGraph *g, xe_status *st)
{
    size_t n = 0;
    const char **dom = NULL;
    if (xo_check(a, XO(a->ort, Graph_GetOnnxIRVersion)(g, &m->ir_version), "Graph_GetOnnxIRVersion",
                 st) ||
        xo_check(a, XO(a->ort, Graph_GetNumOperatorSets)(g, &n), "Graph_GetNumOperatorSets", st))
        return st->code;
    m->opset_domains = calloc(n + 1, sizeof *m->opset_domains);
    m->opset_versions = calloc(n + 1, sizeof *m->opset_versions);
    dom = calloc(n + 1, sizeof *dom);
    if (!m->opset_domains || !m->opset_versions || !dom) {
        free(dom);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    xe_code c = n ? xo_check(a, XO(a->ort, Graph_GetOperatorSets)(g, dom, m->opset_versions, n),
                             "Graph_GetOperatorSets", st)
                  : XE_OK;
    for (size_t k = 0; c == XE_OK && k < n; k++, m->n_opsets++)
        if (!(m->opset_domains[k] = dup_or_empty(dom[k])))
            c = xe_fail(st, XE_ERR_NOMEM, "out of memory");
    free(dom);
    return c;
}

static xe_code read_nodes(const xo_api *a, xo_model *m, const OrtGraph *g, xe_status *st)
{
    size_t n = 0;
    if (xo_check(a, XO(a->ort, Graph_GetNumNodes)(g, &n), "Graph_GetNumNodes", st))
        return st->code;
    const OrtNode **nodes = calloc(n + 1, sizeof *nodes);
    if (!nodes || !(m->nodes = calloc(n + 1, sizeof *m->nodes))) {
        free(nodes);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    xe_code c =
        n ? xo_check(a, XO(a->ort, Graph_GetNodes)(g, nodes, n), "Graph_GetNodes", st) : XE_OK;
    for (size_t k = 0; c == XE_OK && k < n; k++) {
        xo_node *nd = &m->nodes[m->n_nodes++];
        nd->node = nodes[k];
        if ((c = read_io(a, m, nd, st)) == XE_OK && !nd->refuse)
            c = read_attrs(a, nd, st);
        if (c == XE_OK && nd->attrs.oom)
            c = xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    for (int k = 0; c == XE_OK && k < m->n_nodes; k++) /* before the sort: writers by position */
        for (int j = 0; j < m->nodes[k].n_out; j++)
            if (m->nodes[k].out[j] >= 0)
                m->values[m->nodes[k].out[j]].producer = k;
    free(nodes);
    return c;
}

xe_code xo_model_read(const xo_api *a, const OrtGraph *graph, xo_model *m, xe_status *st)
{
    memset(m, 0, sizeof *m);
    xe_code c = read_opsets(a, m, graph, st);
    if (c == XE_OK)
        c = read_ends(a, m, graph, false, st);
    if (c == XE_OK)
        c = read_nodes(a, m, graph, st);
    if (c == XE_OK)
        c = read_ends(a, m, graph, true, st);
    if (c == XE_OK)
        c = topo_sort(m, st);
    if (c != XE_OK)
        xo_model_free(m);
    return c;
}

void xo_model_free(xo_model *m)
{
    for (int k = 0; k < m->n_values; k++) {
        free(m->values[k].name);
        if (m->values[k].owned)
            free((void *)m->values[k].data);
        if (m->values[k].weight)
            xe_keeper_release(&m->values[k].weight->keeper);
        for (int d = 0; d < XE_MAX_RANK; d++)
            free(m->values[k].params[d]);
    }
    for (int k = 0; k < m->n_nodes; k++) {
        xo_node *n = &m->nodes[k];
        free(n->op_type), free(n->domain), free(n->name), free(n->in), free(n->out);
        xe_text_free(&n->attrs);
    }
    for (int k = 0; k < m->n_opsets; k++)
        free(m->opset_domains[k]);
    free(m->opset_domains), free(m->opset_versions), free(m->values), free(m->slots),
        free(m->nodes);
    free(m->inputs), free(m->outputs);
    memset(m, 0, sizeof *m);
}
