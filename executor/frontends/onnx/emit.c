/*
 * Emitting executor nodes for an ONNX node (see build.c for the contract):
 * ox_op and its short forms, constants, ONNX inputs that must be known at
 * load time, and binding a node as an ONNX output.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

/* The base of helper names: the ONNX node's name, else its first output's. */
static const char *base_name(const ox_b *b)
{
    if (b->np->name && b->np->name[0])
        return b->np->name;
    return b->np->n_output && b->np->output[0][0] ? b->np->output[0] : b->np->op_type;
}

static xe_code set_attr(xe_node *n, const ox_at *a, xe_status *st)
{
    switch (a->kind) {
    case XE_ATTR_INT:
        return xe_node_set_int(n, a->name, a->i, st);
    case XE_ATTR_BOOL:
        return xe_node_set_bool(n, a->name, a->i != 0, st);
    case XE_ATTR_FLOAT:
        return xe_node_set_float(n, a->name, a->f, st);
    case XE_ATTR_DTYPE:
        return xe_node_set_dtype(n, a->name, a->dt, st);
    case XE_ATTR_STRING:
        return xe_node_set_string(n, a->name, a->s, st);
    default:
        return xe_node_set_ints(n, a->name, a->ints, a->n, st);
    }
}

/* Whether a shape's element count (known dims) fits comfortably in 64 bits. */
static bool size_fits(const xe_shape *s)
{
    int64_t n = 1;
    for (int d = 0; d < s->rank; d++) {
        int64_t v = s->dims[d] > 0 ? s->dims[d] : 1;
        if (n > (INT64_MAX / 16) / v)
            return false;
        n *= v;
    }
    return true;
}

/* A new node; value (taken, even on failure) is a const's. */
static int new_node(ox_b *b, int op, const int *in, int n_in, const ox_at *at, int n_at,
                    xe_tensor *value)
{
    if (b->failed) {
        xe_tensor_release(value);
        return -1;
    }
    for (int k = 0; k < n_in; k++)
        if (in[k] < 0) {
            ox_invalid(b, "internal: operand %d of %s is missing", k, xe_op_name(op));
            return -1;
        }
    ox_ctx *c = b->c;
    int x = xe_graph_add_node(c->g, NULL, op, in, n_in, &b->st);
    if (x < 0) {
        xe_tensor_release(value);
        b->failed = true;
        return -1;
    }
    xe_node *n = c->g->nodes[x];
    n->value = value;
    if (value)
        n->type = (xe_type){value->dtype, value->shape};
    for (int k = 0; k < n_at; k++)
        if (set_attr(n, &at[k], &b->st) != XE_OK) {
            b->failed = true;
            return -1;
        }
    char name[300];
    snprintf(name, sizeof name, "%s.%d", base_name(b), ++b->helpers);
    if (ox_want_name(c, x, name, NULL, &b->st) != XE_OK ||
        xe_node_infer(c->g, n, &b->st) != XE_OK) {
        b->failed = true;
        return -1;
    }
    if (!size_fits(&n->type.shape)) {
        ox_invalid(b, "a %s result's dims overflow a 64-bit size", xe_op_name(op));
        return -1;
    }
    if (ox_fold(c, x, &b->st) != XE_OK) {
        b->failed = true;
        return -1;
    }
    return x;
}

/* Whether op has no kernel for the bf16 among its operands' types but has one for them as f32:
   a product, a reduction, a softmax, a convolution. */
static bool bf16_wants_f32(ox_b *b, int op, const int *in, int n_in)
{
    xe_type t[OX_MAX_IO];
    bool bf16 = false;
    if (n_in > OX_MAX_IO)
        return false;
    for (int k = 0; k < n_in; k++) {
        if (in[k] < 0)
            return false;
        t[k] = *ox_type(b, in[k]);
        bf16 = bf16 || t[k].dtype == XE_BF16;
    }
    if (!bf16 || !xe_op_narrow_reason(op, t, n_in, NULL))
        return false;
    for (int k = 0; k < n_in; k++)
        t[k].dtype = t[k].dtype == XE_BF16 ? XE_F32 : t[k].dtype;
    return !xe_op_narrow_reason(op, t, n_in, NULL);
}

/*
 * Every node goes through here. An op with no bf16 kernel computes in f32: its bf16 operands are
 * widened (exact) and an f32 result is rounded back to bf16 once (to nearest even, NaN kept), as
 * the engine's f16 kernels accumulate in float and round once.
 */
int ox_op(ox_b *b, int op, const int *in, int n_in, const ox_at *at, int n_at)
{
    if (b->failed || !bf16_wants_f32(b, op, in, n_in))
        return new_node(b, op, in, n_in, at, n_at, NULL);
    int wide[OX_MAX_IO];
    for (int k = 0; k < n_in; k++)
        wide[k] = ox_type(b, in[k])->dtype == XE_BF16 ? ox_cast(b, in[k], XE_F32) : in[k];
    int y = new_node(b, op, wide, n_in, at, n_at, NULL);
    return y >= 0 && ox_type(b, y)->dtype == XE_F32 ? ox_cast(b, y, XE_BF16) : y;
}

int ox_un(ox_b *b, int op, int x)
{
    return ox_op(b, op, &x, 1, NULL, 0);
}

int ox_bin(ox_b *b, int op, int x, int y)
{
    int in[2] = {x, y};
    return ox_op(b, op, in, 2, NULL, 0);
}

int ox_select(ox_b *b, int cond, int x, int y)
{
    int in[3] = {cond, x, y};
    return ox_op(b, XE_OP_SELECT, in, 3, NULL, 0);
}

int ox_cast(ox_b *b, int x, xe_dtype dt)
{
    if (x < 0 || b->failed || ox_type(b, x)->dtype == dt)
        return b->failed ? -1 : x;
    ox_at a = OX_DT("to", dt);
    return ox_op(b, XE_OP_CAST, &x, 1, &a, 1);
}

int ox_const(ox_b *b, xe_tensor *t)
{
    if (!t && !b->failed)
        ox_invalid(b, "%s", "out of memory");
    if (!t)
        return -1;
    return new_node(b, XE_OP_CONST, NULL, 0, NULL, 0, t);
}

xe_tensor *ox_new_tensor(ox_b *b, xe_dtype dt, const xe_shape *s)
{
    if (b->failed)
        return NULL;
    int64_t n = 1;
    for (int d = 0; d < s->rank; d++)
        if (s->dims[d] >= 0 && (__builtin_mul_overflow(n, s->dims[d], &n) || n > OX_FOLD_MAX))
            return ox_unsupported(b, "a constant built at load would hold more than %d elements",
                                  OX_FOLD_MAX),
                   NULL;
    if (!ox_fold_charge(b->c, n))
        return ox_unsupported(
                   b,
                   "the model's constants built at load exceed its budget (twice its weights "
                   "plus %d elements)",
                   OX_FOLD_MAX),
               NULL;
    xe_tensor *t = xe_tensor_new(dt, s, XE_DEV_CPU, &b->st);
    b->failed = !t;
    return t;
}

int ox_scalar(ox_b *b, xe_dtype dt, double v)
{
    if (b->failed)
        return -1;
    xe_shape s = {0};
    xe_tensor *t = xe_tensor_new(dt, &s, XE_DEV_CPU, &b->st);
    if (t)
        xe_store_f64(t->data, dt, 0, v);
    return ox_const(b, t);
}

int ox_ints_const(ox_b *b, const int64_t *v, int n)
{
    if (b->failed)
        return -1;
    xe_shape s = {.rank = 1, .dims = {n}};
    xe_tensor *t = xe_tensor_new(XE_I64, &s, XE_DEV_CPU, &b->st);
    if (t && n)
        memcpy(t->data, v, (size_t)n * sizeof *v);
    return ox_const(b, t);
}

int ox_reshape(ox_b *b, int x, const int64_t *dims, int rank)
{
    if (x >= 0 && x < b->c->g->n_nodes && b->c->g->nodes[x]->op == XE_OP_RESHAPE &&
        !xe_node_attr(b->c->g->nodes[x], "copy"))
        x = b->c->g->nodes[x]->inputs[0]; /* a reshape of a reshape is one reshape */
    ox_at a = OX_INTS("shape", dims, rank);
    return ox_op(b, XE_OP_RESHAPE, &x, 1, &a, 1);
}

int ox_transpose(ox_b *b, int x, const int *perm, int rank)
{
    int64_t p[XE_MAX_RANK];
    for (int d = 0; d < rank; d++)
        p[d] = perm[d];
    ox_at a = OX_INTS("perm", p, rank);
    return ox_op(b, XE_OP_TRANSPOSE, &x, 1, &a, 1);
}

int ox_reduce(ox_b *b, int op, int x, const int64_t *axes, int n_axes, bool keepdims)
{
    ox_at a[2] = {OX_INTS("axes", axes, n_axes), OX_BOOL("keepdims", keepdims)};
    return ox_op(b, op, &x, 1, a, 2);
}

int ox_slice(ox_b *b, int x, const int64_t *begin, const int64_t *end)
{
    if (x < 0 || b->failed)
        return -1;
    int r = ox_rank(b, x);
    ox_at a[2] = {OX_INTS("begin", begin, r), OX_INTS("end", end, r)};
    return ox_op(b, XE_OP_SLICE, &x, 1, a, 2);
}

const xe_type *ox_type(ox_b *b, int x)
{
    static const xe_type none = {.dtype = XE_F32}; /* of a failed node: a scalar, never used */
    return x < 0 || x >= b->c->g->n_nodes ? &none : &b->c->g->nodes[x]->type;
}

int ox_rank(ox_b *b, int x)
{
    return x < 0 ? 0 : b->c->g->nodes[x]->type.shape.rank;
}

int ox_in(ox_b *b, int k)
{
    return k < b->n_in ? b->in[k] : -1;
}

const ox_seq *ox_in_seq(ox_b *b, int k)
{
    const ox_seq *s = k < b->n_in ? b->seq[k] : NULL;
    if (!s && !b->failed)
        ox_invalid(b, "input %d must be a sequence, got %s", k,
                   k < b->n_in && b->in[k] >= 0 ? "a tensor" : "none");
    return b->failed ? NULL : s;
}

xe_code ox_out_seq(ox_b *b, int k, const ox_seq *s)
{
    if (b->failed)
        return b->st.code;
    if ((size_t)k >= b->np->n_output || !b->np->output[k][0])
        return XE_OK;
    if (ox_value_set_seq(b->c, b->np->output[k], s, &b->st) != XE_OK)
        return b->failed = true, b->st.code;
    return XE_OK;
}

int ox_n_out(ox_b *b)
{
    return (int)b->np->n_output;
}

/* Position of graph input node x among the graph's inputs, -1 if it is none. */
static int input_position(const xe_graph *g, int x)
{
    for (int k = 0; k < g->n_inputs; k++)
        if (g->inputs[k] == x)
            return k;
    return -1;
}

/* The ONNX name of graph input node x: the value that names it (NULL if none does). */
static const char *graph_input_name(ox_ctx *c, int x)
{
    for (const ox_value *v = c->values; v; v = v->hh.next)
        if (v->node == x && !v->seq)
            return v->name;
    return NULL;
}

/* A graph input's value from the caller's bind function as a const node, by the input's own
 * name; -1 when it is not known. */
static int bind_graph_input(ox_b *b, int x)
{
    const xe_onnx_options *o = b->c->opt;
    const char *name = graph_input_name(b->c, x);
    int pos = input_position(b->c->g, x);
    xe_tensor *t = o && o->bind && name && pos >= 0 ? o->bind(name, pos, o->user) : NULL;
    if (!t)
        return -1;
    const xe_type *want = &b->c->g->nodes[x]->type;
    bool ok = t->dtype == want->dtype && t->shape.rank == want->shape.rank;
    for (int d = 0; ok && d < t->shape.rank; d++)
        ok = want->shape.dims[d] < 0 || want->shape.dims[d] == t->shape.dims[d];
    if (!ok) {
        ox_invalid(b, "input '%s': the fed value does not match the declared type", name);
        return -1;
    }
    return ox_const(b, xe_tensor_retain(t));
}

#define OX_RESOLVE_NODES 256 /* the most nodes recomputed at load for one operand */

/* Node x again, from constants, where it is computed only from constants and graph inputs the
 * caller binds (a pad amount computed from a fed shape input, say): a const node, or -1. Each
 * node is recomputed by its own op and attributes, then folded; *budget caps the walk. */
static int resolve(ox_b *b, int x, int *budget)
{
    xe_graph *g = b->c->g;
    const xe_node *n = g->nodes[x];
    if (n->op == XE_OP_CONST)
        return x;
    if (n->op == XE_OP_INPUT)
        return bind_graph_input(b, x);
    const xe_op_def *d = xe_op_get(n->op);
    if (--*budget < 0 || b->failed || !d || n->n_inputs == 0 || n->n_inputs > OX_MAX_IO ||
        n->body || (d->flags & (XE_OPF_STATEFUL | XE_OPF_COLLECTIVE)))
        return -1;
    int in[OX_MAX_IO];
    for (int k = 0; k < n->n_inputs; k++)
        if ((in[k] = resolve(b, g->nodes[x]->inputs[k], budget)) < 0)
            return -1;
    int y = xe_graph_add_node(g, NULL, g->nodes[x]->op, in, g->nodes[x]->n_inputs, &b->st);
    if (y < 0)
        return b->failed = true, -1;
    n = g->nodes[x];
    for (int a = 0; a < n->n_attrs; a++)
        if (xe_node_copy_attr(g->nodes[y], &n->attrs[a], &b->st) != XE_OK)
            return b->failed = true, -1;
    char name[300];
    snprintf(name, sizeof name, "%s.%d", base_name(b), ++b->helpers);
    if (ox_want_name(b->c, y, name, NULL, &b->st) != XE_OK ||
        xe_node_infer(g, g->nodes[y], &b->st) != XE_OK || ox_fold(b->c, y, &b->st) != XE_OK)
        return b->failed = true, -1;
    return g->nodes[y]->op == XE_OP_CONST ? y : -1;
}

const xe_tensor *ox_need_const(ox_b *b, int k, const char *what)
{
    int x = ox_in(b, k);
    if (b->failed)
        return NULL;
    if (x < 0) {
        ox_invalid(b, "input %d (%s) is missing", k, what);
        return NULL;
    }
    const xe_node *n = b->c->g->nodes[x];
    if (n->op == XE_OP_INPUT && (x = bind_graph_input(b, x)) >= 0) {
        b->in[k] = x;
        n = b->c->g->nodes[x];
    }
    int budget = OX_RESOLVE_NODES;
    if (n->op != XE_OP_CONST && n->op != XE_OP_INPUT && (x = resolve(b, x, &budget)) >= 0) {
        b->in[k] = x;
        n = b->c->g->nodes[x];
    }
    if (n->op == XE_OP_CONST)
        return n->value;
    if (!b->failed)
        ox_unsupported(b,
                       "input %d (%s, '%s') is not supported unless it is known at load time "
                       "(a constant, an initializer, or computed from them)",
                       k, what, b->np->input[k]);
    return NULL;
}

int ox_const_ints(ox_b *b, int k, const char *what, int64_t *v, int cap)
{
    const xe_tensor *t = ox_need_const(b, k, what);
    if (!t)
        return -1;
    int64_t n = xe_tensor_numel(t);
    if (!xe_dtype_is_int(t->dtype)) {
        ox_invalid(b, "input %d (%s) must hold integers, it is %s", k, what,
                   xe_dtype_name(t->dtype));
        return -1;
    }
    if (n > cap) {
        ox_unsupported(b, "input %d (%s) has %lld values, at most %d are supported", k, what,
                       (long long)n, cap);
        return -1;
    }
    for (int64_t i = 0; i < n; i++)
        v[i] = t->dtype == XE_I64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
    return (int)n;
}

/* Whether value name is one of the graph's outputs. */
static bool is_graph_output(const ox_ctx *c, const char *name)
{
    const Onnx__GraphProto *g = c->model->graph;
    for (size_t k = 0; k < g->n_output; k++)
        if (g->output[k]->name && !strcmp(g->output[k]->name, name))
            return true;
    return false;
}

xe_code ox_out(ox_b *b, int k, int x)
{
    return ox_out_of(b, b->np, k, x);
}

xe_code ox_out_of(ox_b *b, const Onnx__NodeProto *np, int k, int x)
{
    if (b->failed || x < 0)
        return b->failed ? b->st.code : ox_invalid(b, "internal: output %d was not produced", k);
    if ((size_t)k >= np->n_output || !np->output[k][0])
        return XE_OK; /* an optional output the model does not use */
    ox_ctx *c = b->c;
    const char *out = np->output[k], *node = np->name ? np->name : "";
    if (x >= b->first && !c->final[x]) {
        int named = 0;
        for (size_t j = 0; j < np->n_output; j++)
            named += np->output[j][0] != '\0';
        bool by_node = node[0] && named == 1 && !is_graph_output(c, out);
        if (ox_want_name(c, x, by_node ? node : out, node, &b->st) != XE_OK)
            return b->failed = true, b->st.code;
        c->final[x] = 1;
    }
    if (ox_value_set(c, out, x, &b->st) != XE_OK)
        return b->failed = true, b->st.code;
    return XE_OK;
}

int ox_take(ox_b *b, int x, int axis, const int64_t *idx, int64_t n)
{
    if (x < 0 || b->failed)
        return -1;
    if (n < 1 || n > 256) {
        ox_unsupported(b, "picking %lld positions along an axis is not supported (1 to 256 are)",
                       (long long)n);
        return -1;
    }
    int parts[256], k = 0, r = ox_rank(b, x);
    bool whole = ox_type(b, x)->shape.dims[axis] == n;
    for (int64_t i = 0; whole && i < n; i++)
        whole = idx[i] == i;
    if (whole) /* every position in order: x itself, so that reshapes around it merge */
        return x;
    for (int64_t i = 0; i < n;) {
        int64_t j = i + 1; /* a run of consecutive positions is one slice */
        while (j < n && idx[j] == idx[j - 1] + 1)
            j++;
        int64_t beg[XE_MAX_RANK], end[XE_MAX_RANK];
        for (int d = 0; d < r; d++) {
            beg[d] = d == axis ? idx[i] : 0;
            end[d] = d == axis ? idx[j - 1] + 1 : INT64_MAX;
        }
        parts[k++] = ox_slice(b, x, beg, end);
        i = j;
    }
    ox_at at = OX_I("axis", axis);
    return k == 1 ? parts[0] : ox_op(b, XE_OP_CONCAT, parts, k, &at, 1);
}
