/*
 * Shapes pinned at load (xe_onnx_options.pins): a graph input's whole
 * shape (xlac-run --shape NAME=d0,d1,...), or the symbolic dims of one name
 * (dim_param: xlac-run --dim batch=8, onnxruntime's
 * add_free_dimension_override_by_name) or of one denotation
 * (add_free_dimension_override_by_denotation). A pinned dim is a known dim
 * of the input's declared type: a model whose symbolic dims are all pinned
 * imports once, at those sizes, and a fed array of another size is refused
 * as for any dim the model declares. Every pin must name something; a pin
 * that matches no input or no dim, a shape of another rank, or one that
 * contradicts a dim the model declares is an error, all of them listed.
 */
#include <string.h>

#include "onnx_impl.h"

/* v's tensor shape, NULL when it has none. */
static const Onnx__TensorShapeProto *declared_shape(const Onnx__ValueInfoProto *v)
{
    const Onnx__TypeProto__Tensor *tt = v->type ? v->type->tensor_type : NULL;
    return tt ? tt->shape : NULL;
}

/* Whether pin p gives dim d of graph input v (its shape s) a value, into *value. */
static bool pin_gives(const xe_onnx_pin *p, const Onnx__ValueInfoProto *v,
                      const Onnx__TensorShapeProto *s, size_t d, int64_t *value)
{
    const Onnx__TensorShapeProto__Dimension *dim = s->dim[d];
    bool hit;
    switch (p->kind) {
    case XE_ONNX_PIN_SHAPE:
        hit = v->name && !strcmp(p->name, v->name) && (size_t)p->rank == s->n_dim;
        *value = hit ? p->dims[d] : 0;
        return hit;
    case XE_ONNX_PIN_DIM:
        hit = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
              dim->dim_param && !strcmp(dim->dim_param, p->name);
        break;
    default:
        hit = dim->denotation && !strcmp(dim->denotation, p->name);
        break;
    }
    *value = hit ? p->dims[0] : 0;
    return hit;
}

bool ox_pin_dim(const ox_ctx *c, const Onnx__ValueInfoProto *v, size_t d, int64_t *value)
{
    const Onnx__TensorShapeProto *s = declared_shape(v);
    for (int k = 0; c->opt && s && d < s->n_dim && k < c->opt->n_pins; k++)
        if (pin_gives(&c->opt->pins[k], v, s, d, value))
            return true;
    return false;
}

/* How a pin is named in messages. */
static const char *pin_word(const xe_onnx_pin *p)
{
    return p->kind == XE_ONNX_PIN_SHAPE ? "the shape pinned for input"
           : p->kind == XE_ONNX_PIN_DIM ? "the dim pinned by name"
                                        : "the dim pinned by denotation";
}

/* Checks pin p against graph input v (not an initializer); whether p names something in it. */
static bool check_against(ox_ctx *c, const xe_onnx_pin *p, const Onnx__ValueInfoProto *v)
{
    const Onnx__TensorShapeProto *s = declared_shape(v);
    if (p->kind == XE_ONNX_PIN_SHAPE && v->name && !strcmp(p->name, v->name) &&
        (!s || (size_t)p->rank != s->n_dim)) {
        if (s)
            ox_error_add(&c->errs, false, "%s: %s '%s' has rank %d, the model declares rank %zu",
                         c->path, pin_word(p), p->name, p->rank, s->n_dim);
        else
            ox_error_add(&c->errs, false, "%s: %s '%s': the model declares no shape for it",
                         c->path, pin_word(p), p->name);
        return true;
    }
    bool named = false;
    for (size_t d = 0; s && d < s->n_dim; d++) {
        int64_t value;
        if (!pin_gives(p, v, s, d, &value))
            continue;
        named = true;
        const Onnx__TensorShapeProto__Dimension *dim = s->dim[d];
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            dim->dim_value >= 0 && dim->dim_value != value)
            ox_error_add(&c->errs, false,
                         "%s: %s '%s' makes dim %zu of input '%s' %lld, the model declares %lld",
                         c->path, pin_word(p), p->name, d, v->name ? v->name : "", (long long)value,
                         (long long)dim->dim_value);
    }
    return named;
}

void ox_pins_check(ox_ctx *c)
{
    const Onnx__GraphProto *g = c->model->graph;
    for (int k = 0; c->opt && k < c->opt->n_pins; k++) {
        const xe_onnx_pin *p = &c->opt->pins[k];
        bool named = false, negative = false;
        for (int d = 0; d < (p->kind == XE_ONNX_PIN_SHAPE ? p->rank : 1); d++)
            negative = negative || p->dims[d] < 0;
        if (!p->name || negative || p->rank < 0 || p->rank > XE_MAX_RANK) {
            ox_error_add(&c->errs, false, "%s: %s '%s': dims must be 0 or more (rank 0 to %d)",
                         c->path, pin_word(p), p->name ? p->name : "", XE_MAX_RANK);
            continue;
        }
        for (size_t i = 0; i < g->n_input; i++)
            if (g->input[i]->name && !ox_is_initializer(g, g->input[i]->name))
                named = check_against(c, p, g->input[i]) || named;
        if (!named)
            ox_error_add(&c->errs, false, "%s: %s '%s' names no %s of the model", c->path,
                         pin_word(p), p->name,
                         p->kind == XE_ONNX_PIN_SHAPE ? "graph input" : "dim of a graph input");
    }
}
