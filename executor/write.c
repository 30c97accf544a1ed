/*
 * The .xg writer: xe_graph → text that parses back to the same graph.
 * Floats are printed with enough digits to round-trip (%.17g for f64 and
 * attributes, %.9g for f32 values), jit blocks are re-opened around runs
 * of nodes of the same block, and composite bodies are indented.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xlac/io.h"
#include "xlac/op.h"

typedef struct out {
    char *buf;
    size_t len, cap;
    bool oom;
} out;

static void emit(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void emit(out *o, const char *fmt, ...)
{
    if (o->oom)
        return;
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            o->oom = true;
            return;
        }
        if (o->len + (size_t)n < o->cap) {
            o->len += (size_t)n;
            return;
        }
        size_t cap = (o->cap + (size_t)n + 1) * 2;
        char *b = realloc(o->buf, cap);
        if (!b) {
            o->oom = true;
            return;
        }
        o->buf = b;
        o->cap = cap;
    }
}

static void emit_double(out *o, double v, const char *fmt)
{
    if (isnan(v))
        emit(o, "nan");
    else if (isinf(v))
        emit(o, v > 0 ? "inf" : "-inf");
    else {
        char buf[40];
        snprintf(buf, sizeof buf, fmt, v);
        /* keep a float a float: 1 → 1.0 */
        if (!strpbrk(buf, ".eE"))
            strcat(buf, ".0");
        emit(o, "%s", buf);
    }
}

static void emit_string(out *o, const char *s)
{
    emit(o, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            emit(o, "\\%c", *s);
        else if (*s == '\n')
            emit(o, "\\n");
        else if (*s == '\t')
            emit(o, "\\t");
        else
            emit(o, "%c", *s);
    }
    emit(o, "\"");
}

static void emit_attr_value(out *o, const xe_attr *a)
{
    switch (a->kind) {
    case XE_ATTR_INT:
        emit(o, "%lld", (long long)a->i);
        break;
    case XE_ATTR_FLOAT:
        emit_double(o, a->f, "%.17g");
        break;
    case XE_ATTR_BOOL:
        emit(o, "%s", a->i ? "true" : "false");
        break;
    case XE_ATTR_STRING:
        emit_string(o, a->s);
        break;
    case XE_ATTR_DTYPE:
        emit(o, "%s", xe_dtype_name(a->dtype));
        break;
    case XE_ATTR_INTS:
        emit(o, "[");
        for (int k = 0; k < a->n; k++)
            emit(o, "%s%lld", k ? "," : "", (long long)a->ints[k]);
        emit(o, "]");
        break;
    case XE_ATTR_FLOATS:
        emit(o, "[");
        for (int k = 0; k < a->n; k++) {
            emit(o, "%s", k ? "," : "");
            emit_double(o, a->floats[k], "%.17g");
        }
        emit(o, "]");
        break;
    }
}

static void emit_type(out *o, const xe_type *t)
{
    char buf[256];
    emit(o, "%s", xe_type_str(t, buf, sizeof buf));
}

/* Prints a const's literal: one value when all are equal, else a flat list. */
static void emit_const_value(out *o, const xe_tensor *v)
{
    int64_t n = xe_tensor_numel(v);
    bool splat = n > 0;
    for (int64_t k = 1; splat && k < n; k++)
        splat = memcmp((const char *)v->data + k * xe_dtype_size(v->dtype), v->data,
                       xe_dtype_size(v->dtype)) == 0;
    int64_t count = splat ? 1 : n;
    if (!splat)
        emit(o, "[");
    for (int64_t k = 0; k < count; k++) {
        if (k)
            emit(o, ",");
        switch (v->dtype) {
        case XE_I64:
            emit(o, "%lld", (long long)((const int64_t *)v->data)[k]);
            break;
        case XE_I32:
            emit(o, "%d", ((const int32_t *)v->data)[k]);
            break;
        case XE_BOOL:
            emit(o, "%s", ((const uint8_t *)v->data)[k] ? "true" : "false");
            break;
        case XE_F64:
            emit_double(o, ((const double *)v->data)[k], "%.17g");
            break;
        default:
            emit_double(o, xe_load_f64(v->data, v->dtype, k), "%.9g");
            break;
        }
    }
    if (!splat)
        emit(o, "]");
}

static void emit_graph(out *o, const xe_graph *g, int indent);

/* Attributes in order; `@op` of calls is printed as the op name instead. */
static void emit_node(out *o, const xe_graph *g, const xe_node *n, int indent)
{
    const char *opname = xe_op_name(n->op);
    if (n->op == XE_OP_CALL && xe_node_attr_string(n, "@op", NULL))
        opname = xe_node_attr_string(n, "@op", NULL);
    emit(o, "%*s%s = %s(", indent, "", n->name, opname);
    if (n->op == XE_OP_CONST && n->value) {
        emit_type(o, &(xe_type){n->value->dtype, n->value->shape});
        emit(o, ", ");
        emit_const_value(o, n->value);
    }
    bool first = n->op != XE_OP_CONST;
    for (int k = 0; k < n->n_inputs; k++, first = false)
        emit(o, "%s%s", first ? "" : ", ", g->nodes[n->inputs[k]]->name);
    for (int k = 0; k < n->n_attrs; k++) {
        if (n->op == XE_OP_CALL && strcmp(n->attrs[k].name, "@op") == 0)
            continue;
        emit(o, "%s%s=", first ? "" : ", ", n->attrs[k].name);
        emit_attr_value(o, &n->attrs[k]);
        first = false;
    }
    emit(o, ")");
    if (n->body) {
        emit(o, " {\n");
        emit_graph(o, n->body, indent + 2);
        emit(o, "%*s}", indent, "");
    }
    emit(o, "\n");
}

static void emit_input(out *o, const xe_node *n, int indent)
{
    emit(o, "%*sinput %s: ", indent, "", n->name);
    emit_type(o, &n->type);
    for (int k = 0; k < n->n_attrs; k++) {
        emit(o, " %s=", n->attrs[k].name);
        emit_attr_value(o, &n->attrs[k]);
    }
    emit(o, "\n");
}

/* Nodes, jit blocks re-opened around runs of one index (top level only: bodies have none), outputs.
 */
static void emit_graph(out *o, const xe_graph *g, int indent)
{
    int open_jit = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_node *n = g->nodes[i];
        int jit = indent == 0 && n->jit >= 0 ? n->jit : -1;
        if (jit != open_jit) {
            if (open_jit >= 0)
                emit(o, "%*s}\n", indent, "");
            if (jit >= 0)
                emit(o, "%*sjit {\n", indent, "");
            open_jit = jit;
        }
        int in = indent + (open_jit >= 0 ? 2 : 0);
        if (n->op == XE_OP_INPUT)
            emit_input(o, n, in);
        else
            emit_node(o, g, n, in);
    }
    if (open_jit >= 0)
        emit(o, "%*s}\n", indent, "");
    for (int i = 0; i < g->n_outputs; i++)
        emit(o, "%*soutput %s\n", indent, "", g->nodes[g->outputs[i]]->name);
}

char *xe_write_string(const xe_graph *g, xe_status *st)
{
    out o = {0};
    emit(&o, "xlac.graph v1\n");
    emit_graph(&o, g, 0);
    if (o.oom) {
        free(o.buf);
        xe_fail(st, XE_ERR_NOMEM, "out of memory writing a graph");
        return NULL;
    }
    return o.buf;
}

xe_code xe_write_file(const xe_graph *g, const char *path, xe_status *st)
{
    char *text = xe_write_string(g, st);
    if (!text)
        return st->code;
    FILE *f = fopen(path, "w");
    if (!f) {
        free(text);
        return xe_fail(st, XE_ERR_IO, "%s: cannot write: %m", path);
    }
    size_t len = strlen(text);
    bool ok = fwrite(text, 1, len, f) == len;
    ok &= fclose(f) == 0;
    free(text);
    return ok ? XE_OK : xe_fail(st, XE_ERR_IO, "%s: write failed", path);
}
