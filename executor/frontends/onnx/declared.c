/*
 * The graph as a model's declaration gives it (model.c, for a model whose
 * import needs sizes for its symbolic dims and whose ops are all ones xlac
 * imports): its inputs of the declared types and, per output, a stand-in
 * const of the declared type. The session never runs it: the
 * graph maker builds the nodes at the first fed shapes.
 */
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

#define OX_PROBE_DIM 3 /* an unknown dim's size in the probe import: not 1, which broadcasts */

bool ox_is_initializer(const Onnx__GraphProto *g, const char *name)
{
    for (size_t k = 0; k < g->n_initializer; k++)
        if (g->initializer[k]->name && !strcmp(g->initializer[k]->name, name))
            return true;
    return false;
}

/* A graph output's declared type (symbolic dims unknown); false when it declares no tensor type. */
static bool output_type(const Onnx__ValueInfoProto *v, xe_type *t)
{
    const Onnx__TypeProto__Tensor *tt = v->type ? v->type->tensor_type : NULL;
    if (!tt || !ox_dtype(tt->elem_type, &t->dtype) || !tt->shape || tt->shape->n_dim > XE_MAX_RANK)
        return false;
    t->shape.rank = (int)tt->shape->n_dim;
    for (int d = 0; d < t->shape.rank; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
        bool known = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                     dim->dim_value >= 0;
        t->shape.dims[d] = known ? dim->dim_value : XE_DIM_UNKNOWN;
    }
    return true;
}

/* Graph output k of the declared graph: a stand-in const of its declared type, never run. */
static xe_code declared_output(xe_graph *g, const Onnx__ValueInfoProto *v, xe_status *st)
{
    xe_type t;
    const char *value = v->name ? v->name : "";
    if (!output_type(v, &t))
        return xe_fail(st, XE_ERR_UNSUPPORTED,
                       "graph output '%s' declares no tensor type with a shape", value);
    char *want = ox_sanitize(value), *name = want ? xe_graph_fresh_name(g, want) : NULL;
    xe_shape empty = {.rank = 1, .dims = {0}};
    xe_tensor *z = name ? xe_tensor_new(t.dtype, &empty, XE_DEV_CPU, st) : NULL;
    int x = z ? xe_graph_add_node(g, name, XE_OP_CONST, NULL, 0, st) : -1;
    xe_code code = !name         ? xe_fail(st, XE_ERR_NOMEM, "out of memory")
                   : z && x >= 0 ? XE_OK
                                 : st->code;
    if (code == XE_OK) {
        g->nodes[x]->value = z;
        g->nodes[x]->type = t;
        z = NULL;
        if (strcmp(name, value))
            code = xe_node_set_string(g->nodes[x], "@output", value, st);
    }
    if (code == XE_OK)
        code = xe_graph_add_output(g, x, st);
    xe_tensor_release(z);
    free(name);
    free(want);
    return code;
}

/*
 * The graph as its declaration gives it, for a model whose import needs
 * real sizes: inputs of the declared types, named as the import names them,
 * and per output a stand-in of its declared type. The maker builds the
 * nodes at the first fed shapes (a session never runs these). NULL with *st
 * set when an output declares no type.
 */
xe_graph *ox_declared_graph(const Onnx__GraphProto *og, const char *path, const xe_graph *declared,
                            xe_status *st)
{
    xe_graph *g = xe_graph_new(path);
    xe_code code = g ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (size_t k = 0, pos = 0; k < og->n_input && code == XE_OK; k++) {
        const char *name = og->input[k]->name ? og->input[k]->name : "";
        if (ox_is_initializer(og, name))
            continue;
        if ((int)pos >= declared->n_inputs) { /* declared stops at an input of no tensor type */
            code =
                xe_fail(st, XE_ERR_UNSUPPORTED, "graph input '%s' declares no tensor type", name);
            break;
        }
        char *want = ox_sanitize(name), *fresh = want ? xe_graph_fresh_name(g, want) : NULL;
        const xe_node *d = declared->nodes[declared->inputs[pos++]];
        int x = fresh ? xe_graph_add_input(g, fresh, &d->type, st) : -1;
        code = !fresh ? xe_fail(st, XE_ERR_NOMEM, "out of memory") : x < 0 ? st->code : XE_OK;
        if (code == XE_OK && strcmp(fresh, name))
            code = xe_node_set_string(g->nodes[x], "@onnx", name, st);
        free(fresh);
        free(want);
    }
    for (size_t k = 0; k < og->n_output && code == XE_OK; k++)
        code = declared_output(g, og->output[k], st);
    if (code != XE_OK) {
        xe_graph_destroy(g);
        return NULL;
    }
    return g;
}

/* Per graph input (initializers left out), the shape its unknown dims take in the probe import. */
xe_shape *ox_probe_shapes(const Onnx__GraphProto *og, int *n)
{
    xe_shape *p = calloc(og->n_input + 1, sizeof *p);
    *n = 0;
    for (size_t k = 0; p && k < og->n_input; k++) {
        const Onnx__ValueInfoProto *v = og->input[k];
        const Onnx__TypeProto__Tensor *tt = v->type ? v->type->tensor_type : NULL;
        if (ox_is_initializer(og, v->name ? v->name : ""))
            continue;
        xe_shape *s = &p[(*n)++];
        s->rank = tt && tt->shape && tt->shape->n_dim <= XE_MAX_RANK ? (int)tt->shape->n_dim : 0;
        for (int d = 0; d < s->rank; d++)
            s->dims[d] = OX_PROBE_DIM;
    }
    return p;
}
