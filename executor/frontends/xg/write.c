/*
 * The .xg writer: xe_graph → text that parses back to the same graph.
 * Floats are printed with enough digits to round-trip (%.17g for f64 and
 * attributes, %.9g for f32 values), jit blocks are re-opened around runs
 * of nodes of the same block, and composite bodies are indented. With
 * xe_write_file_consts, big constants go to binary .npy files beside the
 * text (const(TYPE, file="NAME.npy")) instead of decimal literals.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xlac/io.h"
#include "xlac/op.h"
#include "xlac/text.h"

static void emit_double(xe_text *o, double v, const char *fmt)
{
    if (isnan(v))
        xe_text_printf(o, "nan");
    else if (isinf(v))
        xe_text_printf(o, v > 0 ? "inf" : "-inf");
    else {
        char buf[40];
        snprintf(buf, sizeof buf, fmt, v);
        /* keep a float a float: 1 → 1.0 */
        if (!strpbrk(buf, ".eE"))
            strcat(buf, ".0");
        xe_text_printf(o, "%s", buf);
    }
}

static void emit_string(xe_text *o, const char *s)
{
    xe_text_printf(o, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            xe_text_printf(o, "\\%c", *s);
        else if (*s == '\n')
            xe_text_printf(o, "\\n");
        else if (*s == '\t')
            xe_text_printf(o, "\\t");
        else
            xe_text_printf(o, "%c", *s);
    }
    xe_text_printf(o, "\"");
}

static void emit_attr_value(xe_text *o, const xe_attr *a)
{
    switch (a->kind) {
    case XE_ATTR_INT:
        xe_text_printf(o, "%lld", (long long)a->i);
        break;
    case XE_ATTR_FLOAT:
        emit_double(o, a->f, "%.17g");
        break;
    case XE_ATTR_BOOL:
        xe_text_printf(o, "%s", a->i ? "true" : "false");
        break;
    case XE_ATTR_STRING:
        emit_string(o, a->s);
        break;
    case XE_ATTR_DTYPE:
        xe_text_printf(o, "%s", xe_dtype_name(a->dtype));
        break;
    case XE_ATTR_INTS:
        xe_text_printf(o, "[");
        for (int k = 0; k < a->n; k++)
            xe_text_printf(o, "%s%lld", k ? "," : "", (long long)a->ints[k]);
        xe_text_printf(o, "]");
        break;
    case XE_ATTR_FLOATS:
        xe_text_printf(o, "[");
        for (int k = 0; k < a->n; k++) {
            xe_text_printf(o, "%s", k ? "," : "");
            emit_double(o, a->floats[k], "%.17g");
        }
        xe_text_printf(o, "]");
        break;
    }
}

static void emit_type(xe_text *o, const xe_type *t)
{
    char buf[256];
    xe_text_printf(o, "%s", xe_type_str(t, buf, sizeof buf));
}

/* Prints a const's literal: one value when all are equal, else a flat list. */
static void emit_const_value(xe_text *o, const xe_tensor *v)
{
    int64_t n = xe_tensor_numel(v);
    bool splat = n > 0;
    for (int64_t k = 1; splat && k < n; k++)
        splat = memcmp((const char *)v->data + k * xe_dtype_size(v->dtype), v->data,
                       xe_dtype_size(v->dtype)) == 0;
    int64_t count = splat ? 1 : n;
    if (!splat)
        xe_text_printf(o, "[");
    for (int64_t k = 0; k < count; k++) {
        if (k)
            xe_text_printf(o, ",");
        switch (v->dtype) {
        case XE_I64:
            xe_text_printf(o, "%lld", (long long)((const int64_t *)v->data)[k]);
            break;
        case XE_I32:
            xe_text_printf(o, "%d", ((const int32_t *)v->data)[k]);
            break;
        case XE_BOOL:
            xe_text_printf(o, "%s", ((const uint8_t *)v->data)[k] ? "true" : "false");
            break;
        case XE_U64:
            xe_text_printf(o, "%llu", (unsigned long long)((const uint64_t *)v->data)[k]);
            break;
        case XE_U8:
        case XE_I8:
        case XE_I16:
        case XE_U16:
        case XE_U32:
        case XE_I4:
        case XE_U4:
        case XE_I2:
        case XE_U2:
            xe_text_printf(o, "%.0f",
                           xe_load_f64(v->data, v->dtype, k)); /* exact: 32 bits at most */
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
        xe_text_printf(o, "]");
}

/*
 * Where constants go: with dir set, one of at least min_elems elements is
 * written as DIR/PREFIXNAME.npy and printed as file="PREFIXNAME.npy"
 * (prefix: the composite nodes around it, "f." for the body of f, so that
 * names stay unique in the folder); the first failure stays in st. The
 * storage dtypes (float8, i4 ...) stay literals: .npy does not name them.
 */
typedef struct const_files {
    const char *dir; /* NULL: every constant as a literal */
    int64_t min_elems;
    char prefix[512];
    xe_status *st;
    xe_code code;
} const_files;

/* The constant's file (written now) into o as file="NAME.npy"; false to print it as a literal. */
static bool emit_const_file(xe_text *o, const xe_node *n, const_files *cf)
{
    if (!cf || !cf->dir || cf->code != XE_OK || xe_tensor_numel(n->value) < cf->min_elems ||
        !xe_device_is_host(n->value->device) ||
        xe_dtype_is_storage(n->value->dtype)) /* .npy does not read them back */
        return false;
    char name[1024], path[4096];
    snprintf(name, sizeof name, "%s%s.npy", cf->prefix, n->name);
    snprintf(path, sizeof path, "%s/%s", cf->dir, name);
    if ((cf->code = xe_npy_write(path, n->value, cf->st)) != XE_OK)
        return false;
    xe_text_printf(o, "file=");
    emit_string(o, name);
    return true;
}

static void emit_graph(xe_text *o, const xe_graph *g, int indent, const_files *cf);

/* Attributes in order; `@op` of calls is printed as the op name instead. */
static void emit_node(xe_text *o, const xe_graph *g, const xe_node *n, int indent, const_files *cf)
{
    const char *opname = xe_op_name(n->op);
    if (n->op == XE_OP_CALL && xe_node_attr_string(n, "@op", NULL))
        opname = xe_node_attr_string(n, "@op", NULL);
    xe_text_printf(o, "%*s%s = %s(", indent, "", n->name, opname);
    if (n->op == XE_OP_CONST && n->value) {
        emit_type(o, &(xe_type){n->value->dtype, n->value->shape});
        xe_text_printf(o, ", ");
        if (!emit_const_file(o, n, cf))
            emit_const_value(o, n->value);
    }
    bool first = n->op != XE_OP_CONST;
    for (int k = 0; k < n->n_inputs; k++, first = false)
        xe_text_printf(o, "%s%s", first ? "" : ", ", g->nodes[n->inputs[k]]->name);
    for (int k = 0; k < n->n_attrs; k++) {
        if (n->op == XE_OP_CALL && strcmp(n->attrs[k].name, "@op") == 0)
            continue;
        xe_text_printf(o, "%s%s=", first ? "" : ", ", n->attrs[k].name);
        emit_attr_value(o, &n->attrs[k]);
        first = false;
    }
    xe_text_printf(o, ")");
    if (n->body) {
        xe_text_printf(o, " {\n");
        size_t len = cf ? strlen(cf->prefix) : 0;
        if (cf)
            snprintf(cf->prefix + len, sizeof cf->prefix - len, "%s.", n->name);
        emit_graph(o, n->body, indent + 2, cf);
        if (cf)
            cf->prefix[len] = '\0';
        xe_text_printf(o, "%*s}", indent, "");
    }
    xe_text_printf(o, "\n");
}

static void emit_input(xe_text *o, const xe_node *n, int indent)
{
    xe_text_printf(o, "%*sinput %s: ", indent, "", n->name);
    emit_type(o, &n->type);
    for (int k = 0; k < n->n_attrs; k++) {
        xe_text_printf(o, " %s=", n->attrs[k].name);
        emit_attr_value(o, &n->attrs[k]);
    }
    xe_text_printf(o, "\n");
}

/* Nodes, jit blocks re-opened around runs of one index (top level only: bodies have none), outputs.
 */
static void emit_graph(xe_text *o, const xe_graph *g, int indent, const_files *cf)
{
    int open_jit = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_node *n = g->nodes[i];
        int jit = indent == 0 && n->jit >= 0 ? n->jit : -1;
        if (jit != open_jit) {
            if (open_jit >= 0)
                xe_text_printf(o, "%*s}\n", indent, "");
            if (jit >= 0)
                xe_text_printf(o, "%*sjit {\n", indent, "");
            open_jit = jit;
        }
        int in = indent + (open_jit >= 0 ? 2 : 0);
        if (n->op == XE_OP_INPUT)
            emit_input(o, n, in);
        else
            emit_node(o, g, n, in, cf);
    }
    if (open_jit >= 0)
        xe_text_printf(o, "%*s}\n", indent, "");
    for (int i = 0; i < g->n_outputs; i++)
        xe_text_printf(o, "%*soutput %s\n", indent, "", g->nodes[g->outputs[i]]->name);
}

static char *write_string(const xe_graph *g, const_files *cf, xe_status *st)
{
    xe_text o = {0};
    xe_text_printf(&o, "xlac.graph v1\n");
    emit_graph(&o, g, 0, cf);
    char *text = xe_text_take(&o);
    if (cf && cf->code != XE_OK) {
        free(text);
        return NULL;
    }
    if (!text)
        xe_fail(st, XE_ERR_NOMEM, "out of memory writing a graph");
    return text;
}

char *xe_write_string(const xe_graph *g, xe_status *st)
{
    return write_string(g, NULL, st);
}

xe_code xe_write_file(const xe_graph *g, const char *path, xe_status *st)
{
    return xe_write_file_consts(g, path, 0, st);
}

xe_code xe_write_file_consts(const xe_graph *g, const char *path, int64_t min_elems, xe_status *st)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    const_files cf = {
        .dir = min_elems > 0 ? dir : NULL, .min_elems = min_elems, .st = st, .code = XE_OK};
    char *text = write_string(g, &cf, st);
    if (!text)
        return st->code;
    FILE *f = xe_fcreate(path, st);
    if (!f) {
        free(text);
        return st->code;
    }
    size_t len = strlen(text);
    bool ok = fwrite(text, 1, len, f) == len;
    ok &= fclose(f) == 0;
    free(text);
    return ok ? XE_OK : xe_fail(st, XE_ERR_IO, "%s: write failed", path);
}
