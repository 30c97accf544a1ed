/*
 * The graph IR: construction, names, attributes, deep copy, destruction.
 * Nodes are kept in a topological order; a name table (uthash) maps names
 * to node indices for the parser and for passes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xe_hash.h"

#include "xlac/graph.h"
#include "xlac/op.h"
#include "xlac/vec.h"

typedef struct xe_name_entry {
    char *name; /* key: the node's own name string */
    int index;
    UT_hash_handle hh;
} xe_name_entry;

xe_graph *xe_graph_new(const char *file)
{
    xe_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->file = strdup(file ? file : "<string>");
    if (!g->file) {
        free(g);
        return NULL;
    }
    return g;
}

static void attr_free(xe_attr *a)
{
    free(a->name);
    free(a->s);
    free(a->ints);
    free(a->floats);
}

static void node_free(xe_node *n)
{
    if (!n)
        return;
    free(n->name);
    free(n->inputs);
    for (int i = 0; i < n->n_attrs; i++)
        attr_free(&n->attrs[i]);
    free(n->attrs);
    free(n->tuple);
    xe_tensor_release(n->value);
    xe_graph_destroy(n->body);
    free(n);
}

static void maker_release(xe_graph_maker *m)
{
    if (m && __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        if (m->release)
            m->release(m->user);
        free(m);
    }
}

void xe_graph_set_maker(xe_graph *g, xe_graph_maker *maker)
{
    maker_release(g->maker);
    maker->refs = 1;
    g->maker = maker;
}

xe_graph *xe_graph_specialise(const xe_graph *g, const xe_shape *input_shapes, xe_status *st)
{
    if (!g->maker) {
        xe_fail(st, XE_ERR_USAGE, "%s: the graph is not built per input shape", g->file);
        return NULL;
    }
    return g->maker->make(g->maker->user, input_shapes, g->n_inputs, st);
}

void xe_graph_destroy(xe_graph *g)
{
    if (!g)
        return;
    maker_release(g->maker);
    xe_name_entry *e, *tmp;
    HASH_ITER(hh, g->names, e, tmp)
    {
        HASH_DEL(g->names, e);
        free(e);
    }
    for (int i = 0; i < g->n_nodes; i++)
        node_free(g->nodes[i]);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    free(g->file);
    free(g);
}

int xe_graph_find(const xe_graph *g, const char *name)
{
    xe_name_entry *e = NULL;
    HASH_FIND_STR(g->names, name, e);
    return e ? e->index : -1;
}

char *xe_graph_fresh_name(const xe_graph *g, const char *base)
{
    size_t len = strlen(base) + 24;
    char *s = malloc(len);
    if (!s)
        return NULL;
    snprintf(s, len, "%s", base);
    for (int k = 1; xe_graph_find(g, s) >= 0; k++)
        snprintf(s, len, "%s_%d", base, k);
    return s;
}

static bool grow_nodes(xe_graph *g)
{
    xe_node **nodes = XE_VEC_GROW(g->nodes, g->cap_nodes, g->n_nodes + 1, 16);
    if (!nodes)
        return false;
    g->nodes = nodes;
    return true;
}

static xe_node *node_new(const char *name, int op, const int *inputs, int n_inputs)
{
    xe_node *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->name = strdup(name);
    n->inputs = n_inputs ? malloc((size_t)n_inputs * sizeof *n->inputs) : NULL;
    if (!n->name || (n_inputs && !n->inputs)) {
        node_free(n);
        return NULL;
    }
    if (n_inputs)
        memcpy(n->inputs, inputs, (size_t)n_inputs * sizeof *inputs);
    n->n_inputs = n_inputs;
    n->op = op;
    n->jit = -1;
    return n;
}

int xe_graph_add_node(xe_graph *g, const char *name, int op, const int *inputs, int n_inputs,
                      xe_status *st)
{
    char *fresh = NULL;
    if (!name) {
        char base[32];
        snprintf(base, sizeof base, "_%d", g->n_nodes);
        name = fresh = xe_graph_fresh_name(g, base);
        if (!fresh)
            return xe_fail(st, XE_ERR_NOMEM, "out of memory"), -1;
    }
    if (xe_graph_find(g, name) >= 0) {
        free(fresh);
        return xe_fail(st, XE_ERR_GRAPH, "name '%s' is already defined", name), -1;
    }
    for (int i = 0; i < n_inputs; i++) {
        if (inputs[i] < 0 || inputs[i] >= g->n_nodes) {
            free(fresh);
            return xe_fail(st, XE_ERR_GRAPH, "node '%s': input %d out of range", name, i), -1;
        }
    }
    xe_node *n = node_new(name, op, inputs, n_inputs);
    xe_name_entry *e = calloc(1, sizeof *e);
    free(fresh);
    if (!n || !e || !grow_nodes(g)) {
        node_free(n);
        free(e);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory adding a node"), -1;
    }
    e->name = n->name;
    e->index = g->n_nodes;
    HASH_ADD_KEYPTR(hh, g->names, e->name, strlen(e->name), e);
    if (!xe_hash_added(e)) {
        node_free(n);
        free(e);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory adding a node"), -1;
    }
    g->nodes[g->n_nodes] = n;
    return g->n_nodes++;
}

static bool append_int(int **arr, int *n, int v)
{
    int *a = realloc(*arr, (size_t)(*n + 1) * sizeof *a);
    if (!a)
        return false;
    a[(*n)++] = v;
    *arr = a;
    return true;
}

int xe_graph_add_input(xe_graph *g, const char *name, const xe_type *type, xe_status *st)
{
    int idx = xe_graph_add_node(g, name, XE_OP_INPUT, NULL, 0, st);
    if (idx < 0)
        return -1;
    g->nodes[idx]->type = *type;
    if (!append_int(&g->inputs, &g->n_inputs, idx))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory"), -1;
    return idx;
}

xe_code xe_graph_add_output(xe_graph *g, int node, xe_status *st)
{
    if (node < 0 || node >= g->n_nodes)
        return xe_fail(st, XE_ERR_GRAPH, "output node %d out of range", node);
    if (!append_int(&g->outputs, &g->n_outputs, node))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    return XE_OK;
}

/* ---- attributes ---------------------------------------------------------- */

const xe_attr *xe_node_attr(const xe_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

int64_t xe_node_attr_int(const xe_node *n, const char *name, int64_t dflt)
{
    const xe_attr *a = xe_node_attr(n, name);
    return a && (a->kind == XE_ATTR_INT || a->kind == XE_ATTR_BOOL) ? a->i : dflt;
}

double xe_node_attr_float(const xe_node *n, const char *name, double dflt)
{
    const xe_attr *a = xe_node_attr(n, name);
    if (!a)
        return dflt;
    if (a->kind == XE_ATTR_FLOAT)
        return a->f;
    return a->kind == XE_ATTR_INT ? (double)a->i : dflt;
}

bool xe_node_attr_bool(const xe_node *n, const char *name, bool dflt)
{
    const xe_attr *a = xe_node_attr(n, name);
    return a && a->kind == XE_ATTR_BOOL ? a->i != 0 : dflt;
}

const char *xe_node_attr_string(const xe_node *n, const char *name, const char *dflt)
{
    const xe_attr *a = xe_node_attr(n, name);
    return a && a->kind == XE_ATTR_STRING ? a->s : dflt;
}

void xe_node_remove_attr(xe_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++) {
        if (strcmp(n->attrs[i].name, name) == 0) {
            attr_free(&n->attrs[i]);
            memmove(&n->attrs[i], &n->attrs[i + 1],
                    (size_t)(n->n_attrs - i - 1) * sizeof *n->attrs);
            n->n_attrs--;
            return;
        }
    }
}

/* Takes ownership of a's buffers; replaces an attribute of the same name in place. */
static xe_code attr_put(xe_node *n, xe_attr *a, xe_status *st)
{
    for (int i = 0; i < n->n_attrs; i++) {
        if (strcmp(n->attrs[i].name, a->name) == 0) {
            attr_free(&n->attrs[i]);
            n->attrs[i] = *a;
            return XE_OK;
        }
    }
    xe_attr *attrs = realloc(n->attrs, (size_t)(n->n_attrs + 1) * sizeof *attrs);
    if (!attrs) {
        attr_free(a);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory setting an attribute");
    }
    n->attrs = attrs;
    n->attrs[n->n_attrs++] = *a;
    return XE_OK;
}

/* Puts name = value on n, value's buffers already its own (freed on failure). */
static xe_code attr_set(xe_node *n, const char *name, xe_attr value, xe_status *st)
{
    if (!(value.name = strdup(name))) {
        attr_free(&value);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    return attr_put(n, &value, st);
}

/* *out = a malloc'd copy of count elements of size bytes (NULL: none); false if out of memory. */
static bool copy_array(const void *v, int count, size_t size, void **out)
{
    *out = NULL;
    if (count <= 0)
        return true;
    if (!(*out = malloc((size_t)count * size)))
        return false;
    memcpy(*out, v, (size_t)count * size);
    return true;
}

xe_code xe_node_set_int(xe_node *n, const char *name, int64_t v, xe_status *st)
{
    return attr_set(n, name, (xe_attr){.kind = XE_ATTR_INT, .i = v}, st);
}

xe_code xe_node_set_float(xe_node *n, const char *name, double v, xe_status *st)
{
    return attr_set(n, name, (xe_attr){.kind = XE_ATTR_FLOAT, .f = v}, st);
}

xe_code xe_node_set_bool(xe_node *n, const char *name, bool v, xe_status *st)
{
    return attr_set(n, name, (xe_attr){.kind = XE_ATTR_BOOL, .i = v}, st);
}

xe_code xe_node_set_dtype(xe_node *n, const char *name, xe_dtype v, xe_status *st)
{
    return attr_set(n, name, (xe_attr){.kind = XE_ATTR_DTYPE, .dtype = v}, st);
}

xe_code xe_node_set_string(xe_node *n, const char *name, const char *v, xe_status *st)
{
    char *copy = strdup(v);
    if (!copy)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    return attr_set(n, name, (xe_attr){.kind = XE_ATTR_STRING, .s = copy}, st);
}

xe_code xe_node_set_ints(xe_node *n, const char *name, const int64_t *v, int count, xe_status *st)
{
    void *copy;
    if (!copy_array(v, count, sizeof *v, &copy))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    return attr_set(n, name, (xe_attr){.kind = XE_ATTR_INTS, .n = count, .ints = copy}, st);
}

xe_code xe_node_set_floats(xe_node *n, const char *name, const double *v, int count, xe_status *st)
{
    void *copy;
    if (!copy_array(v, count, sizeof *v, &copy))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    return attr_set(n, name, (xe_attr){.kind = XE_ATTR_FLOATS, .n = count, .floats = copy}, st);
}

xe_code xe_node_copy_attr(xe_node *dst, const xe_attr *a, xe_status *st)
{
    switch (a->kind) {
    case XE_ATTR_INT:
        return xe_node_set_int(dst, a->name, a->i, st);
    case XE_ATTR_FLOAT:
        return xe_node_set_float(dst, a->name, a->f, st);
    case XE_ATTR_BOOL:
        return xe_node_set_bool(dst, a->name, a->i != 0, st);
    case XE_ATTR_STRING:
        return xe_node_set_string(dst, a->name, a->s, st);
    case XE_ATTR_DTYPE:
        return xe_node_set_dtype(dst, a->name, a->dtype, st);
    case XE_ATTR_INTS:
        return xe_node_set_ints(dst, a->name, a->ints, a->n, st);
    case XE_ATTR_FLOATS:
        return xe_node_set_floats(dst, a->name, a->floats, a->n, st);
    }
    return xe_fail(st, XE_ERR_GRAPH, "attribute '%s' has an unknown kind", a->name);
}

/* ---- copies and queries -------------------------------------------------- */

xe_code xe_node_copy_payload(xe_node *d, const xe_node *s, xe_status *st)
{
    d->type = s->type;
    d->line = s->line;
    d->col = s->col;
    d->jit = s->jit;
    d->device = s->device;
    for (int i = 0; i < s->n_attrs; i++)
        if (xe_node_copy_attr(d, &s->attrs[i], st) != XE_OK)
            return st->code;
    if (s->value)
        d->value = xe_tensor_retain(s->value); /* constants are immutable */
    if (s->n_tuple) {
        d->tuple = malloc((size_t)s->n_tuple * sizeof *d->tuple);
        if (!d->tuple)
            return xe_fail(st, XE_ERR_NOMEM, "out of memory");
        memcpy(d->tuple, s->tuple, (size_t)s->n_tuple * sizeof *d->tuple);
        d->n_tuple = s->n_tuple;
    }
    if (s->body && !(d->body = xe_graph_clone(s->body, st)))
        return st->code;
    return XE_OK;
}

xe_graph *xe_graph_clone(const xe_graph *g, xe_status *st)
{
    xe_graph *c = xe_graph_new(g->file);
    if (!c) {
        xe_fail(st, XE_ERR_NOMEM, "out of memory cloning a graph");
        return NULL;
    }
    c->n_jit = g->n_jit;
    if ((c->maker = g->maker))
        __atomic_add_fetch(&c->maker->refs, 1, __ATOMIC_ACQ_REL);
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_node *s = g->nodes[i];
        int idx = xe_graph_add_node(c, s->name, s->op, s->inputs, s->n_inputs, st);
        if (idx < 0 || xe_node_copy_payload(c->nodes[idx], s, st) != XE_OK)
            goto fail;
    }
    for (int i = 0; i < g->n_inputs; i++)
        if (!append_int(&c->inputs, &c->n_inputs, g->inputs[i]))
            goto nomem;
    for (int i = 0; i < g->n_outputs; i++)
        if (!append_int(&c->outputs, &c->n_outputs, g->outputs[i]))
            goto nomem;
    return c;
nomem:
    xe_fail(st, XE_ERR_NOMEM, "out of memory cloning a graph");
fail:
    xe_graph_destroy(c);
    return NULL;
}

int *xe_graph_use_counts(const xe_graph *g)
{
    int *counts = calloc((size_t)g->n_nodes + 1, sizeof *counts);
    if (!counts)
        return NULL;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i]->n_inputs; k++)
            counts[g->nodes[i]->inputs[k]]++;
    for (int i = 0; i < g->n_outputs; i++)
        counts[g->outputs[i]]++;
    return counts;
}

const char *xe_node_where(const xe_graph *g, const xe_node *n, char *buf, size_t len)
{
    if (n->line > 0)
        snprintf(buf, len, "%s:%d:%d", g->file, n->line, n->col);
    else
        snprintf(buf, len, "%s", g->file);
    return buf;
}
