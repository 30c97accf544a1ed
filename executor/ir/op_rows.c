/*
 * What the tables say about each built-in op, read without the registry:
 * its row of ops.def (name, arity, class, flags) and its attributes
 * (attrs.def: their kinds and defaults, and a node's values read against
 * them). A leaf below the registry (ops.c), which copies these rows into
 * the op table: the shape functions and kernels of built-in ops read them
 * here, so that they never call back into the registry that names them.
 */
#include <string.h>

#include "kernels.h"
#include "xlac/graph.h"

static const xe_op_row builtin_rows[XE_OP_COUNT] = {
#define X(ENUM, nm, min_in, max_in, cls, fl) [XE_OP_##ENUM] = {nm, min_in, max_in, cls, fl},
#include "xlac/ops.def"
#undef X
};

static const xe_op_row unknown_row = {"?", 0, 0, XE_CLASS_COMPOSITE, 0};

const xe_op_row *xe_op_row_of(int op)
{
    return op >= 0 && op < XE_OP_COUNT ? &builtin_rows[op] : &unknown_row;
}

bool xe_op_variant(const xe_node *n)
{
    switch (n->op) {
#define X(ENUM, nm, min_in, max_in, cls, fl)
#define XV(ENUM, attr, f32, f64)                                                                   \
    case XE_OP_##ENUM:                                                                             \
        return xe_op_attr_value(n, #attr) != 0;
#include "xlac/ops.def"
#undef XV
#undef X
    default:
        return false;
    }
}

/* ---- attributes (attrs.def) ------------------------------------------------- */

static const int attr_op[] = {
#define XA(ENUM, nm, kind, dflt) XE_OP_##ENUM,
#include "xlac/attrs.def"
#undef XA
};

static const xe_op_attr attr_rows[] = {
#define XA(ENUM, nm, kind, dflt) {nm, kind, dflt},
#include "xlac/attrs.def"
#undef XA
};

#define N_ATTR_ROWS ((int)(sizeof attr_op / sizeof attr_op[0]))

const xe_op_attr *xe_op_attrs(int op, int *n)
{
    *n = 0;
    if (op < 0 || op >= XE_OP_COUNT || op == XE_OP_CALL)
        return NULL;
    int first = 0;
    while (first < N_ATTR_ROWS && attr_op[first] != op)
        first++;
    while (first + *n < N_ATTR_ROWS && attr_op[first + *n] == op)
        (*n)++;
    return &attr_rows[first]; /* rows of one op are adjacent in attrs.def */
}

const xe_op_attr *xe_op_attr_find(int op, const char *name, size_t len)
{
    int n;
    const xe_op_attr *a = xe_op_attrs(op, &n);
    for (int k = 0; k < n; k++)
        if (strlen(a[k].name) == len && memcmp(a[k].name, name, len) == 0)
            return &a[k];
    return NULL;
}

const char *xe_attr_kind_what(xe_attr_kind k)
{
    switch (k) {
    case XE_ATTR_INT:
        return "an integer";
    case XE_ATTR_FLOAT:
        return "a number";
    case XE_ATTR_BOOL:
        return "true or false";
    case XE_ATTR_STRING:
        return "a \"string\"";
    case XE_ATTR_DTYPE:
        return "a dtype such as f32";
    default:
        return "a list";
    }
}

bool xe_op_attr_kind_ok(const xe_op_attr *t, const xe_attr *a)
{
    if (t->kind == XE_ATTR_INTS || t->kind == XE_ATTR_FLOATS)
        return true; /* a list: the shape function checks it */
    return a->kind == t->kind || (t->kind == XE_ATTR_FLOAT && a->kind == XE_ATTR_INT);
}

xe_code xe_op_check_attr_kinds(const xe_node *n, xe_status *st)
{
    for (int k = 0; k < n->n_attrs; k++) {
        const xe_attr *a = &n->attrs[k];
        const xe_op_attr *t = xe_op_attr_find(n->op, a->name, strlen(a->name));
        if (t && !xe_op_attr_kind_ok(t, a))
            return xe_fail(st, XE_ERR_GRAPH, "%s must be %s", t->name, xe_attr_kind_what(t->kind));
    }
    return XE_OK;
}

double xe_op_attr_value(const xe_node *n, const char *name)
{
    const xe_attr *a = xe_node_attr(n, name);
    if (a && (a->kind == XE_ATTR_INT || a->kind == XE_ATTR_BOOL))
        return (double)a->i;
    if (a && a->kind == XE_ATTR_FLOAT)
        return a->f;
    const xe_op_attr *t = xe_op_attr_find(n->op, name, strlen(name));
    return t ? t->dflt : 0.0;
}

int xe_op_float_attrs(const xe_node *n, double a[XE_MAX_OP_FLOATS])
{
    int n_rows, count = 0;
    const xe_op_attr *t = xe_op_attrs(n->op, &n_rows);
    for (int k = 0; k < n_rows && count < XE_MAX_OP_FLOATS; k++)
        if (t[k].kind == XE_ATTR_FLOAT)
            a[count++] = xe_op_attr_value(n, t[k].name);
    for (int k = count; k < XE_MAX_OP_FLOATS; k++)
        a[k] = 0.0;
    return count;
}
