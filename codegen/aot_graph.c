/*
 * The whole graph ahead of time (xlac-compile, target C): one function
 * that runs every cluster of the clustered graph in order, on the
 * caller's buffers, compiled with the system compiler into NAME.so, and
 * NAME.h declaring it with every buffer's dtype and shape, as tfcompile's
 * generated header does:
 *
 *   int mlp_run(const float *x, ... , float *y);   // x: f32[64,128], ...
 *
 * Only graphs that are clusters all the way (inputs, constants, launch
 * nodes and the `get`s that pick their outputs) have such an entry point:
 * a node that would run per op is refused, by name, op and line, and so is
 * an input whose shape is not fully declared (no `?` dims: the entry point
 * is compiled for one shape).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aot_impl.h"
#include "compile.h"
#include "xlac/op.h"

/* Per top-level node: the C expression of its buffer ("in_x", "c0_o1", "mlp_const3"). */
typedef struct walk {
    const xe_graph *g;
    char **expr;    /* per node, malloc'd, NULL for launch nodes */
    int *cluster;   /* per launch node: its cluster number K, else -1 */
    char **params;  /* per graph input, then per graph output: the parameter's name */
} walk;

/* The node is allowed at the top of an ahead-of-time graph. */
static bool aot_node(const xe_node *n)
{
    return n->op == XE_OP_INPUT || n->op == XE_OP_CONST || n->op == XE_OP_GET ||
           (n->body && xe_node_attr_string(n, "@cluster", NULL));
}

/* Every node that would run per op, and every input without a fixed shape, named in one error. */
static xe_code check_graph(const xe_graph *g, xe_status *st)
{
    xe_text t = {0};
    int bad = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_node *n = g->nodes[i];
        char ty[128];
        if (!aot_node(n) && bad++ < 8)
            xe_text_printf(&t, "%snode %s (%s) at %s:%d runs per op", bad > 1 ? "; " : "", n->name,
                           xe_op_name(n->op), g->file, n->line);
        else if (n->op == XE_OP_INPUT && !xe_shape_is_known(&n->type.shape) && bad++ < 8)
            xe_text_printf(&t, "%sinput %s is %s (give it a fixed shape in the graph)", bad > 1 ? "; " : "",
                           n->name, xe_type_str(&n->type, ty, sizeof ty));
    }
    char *why = xe_text_take(&t);
    xe_code c = bad ? xe_fail(st, XE_ERR_UNSUPPORTED,
                              "%s: no ahead-of-time entry point: %s%s (it covers graphs whose every op is in a "
                              "cluster, at fixed shapes)",
                              g->file, why ? why : "", bad > 8 ? "; ..." : "")
                    : XE_OK;
    free(why);
    return c;
}

/* name made a C identifier: other characters become '_', a leading digit gets one in front. */
static char *c_ident(const char *name)
{
    size_t n = strlen(name);
    char *s = malloc(n + 2), *p = s;
    if (!s)
        return NULL;
    if (!isalpha((unsigned char)name[0]) && name[0] != '_')
        *p++ = '_';
    for (size_t i = 0; i < n; i++)
        *p++ = isalnum((unsigned char)name[i]) ? name[i] : '_';
    *p = '\0';
    return s;
}

static void free_walk(walk *w)
{
    for (int i = 0; w->expr && i < w->g->n_nodes; i++)
        free(w->expr[i]);
    for (int i = 0; w->params && i < w->g->n_inputs + w->g->n_outputs; i++)
        free(w->params[i]);
    free(w->expr);
    free(w->cluster);
    free(w->params);
}

/* Unique parameter names: inputs first, then outputs (a clash gets _out, then _N). */
static xe_code name_params(walk *w, xe_status *st)
{
    const xe_graph *g = w->g;
    int np = g->n_inputs + g->n_outputs;
    for (int k = 0; k < np; k++) {
        const xe_node *n = g->nodes[k < g->n_inputs ? g->inputs[k] : g->outputs[k - g->n_inputs]];
        char *base = c_ident(n->name), buf[600];
        if (!base)
            return xe_fail(st, XE_ERR_NOMEM, "out of memory");
        snprintf(buf, sizeof buf, "%s", base);
        for (int j = 0, tries = 0; j < k; j++)
            if (strcmp(w->params[j], buf) == 0) {
                tries++;
                if (tries == 1)
                    snprintf(buf, sizeof buf, "%s_out", base);
                else
                    snprintf(buf, sizeof buf, "%s_%d", base, tries);
                j = -1; /* check the new name against all */
            }
        free(base);
        if (!(w->params[k] = strdup(buf)))
            return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    return XE_OK;
}

static size_t type_bytes(const xe_type *t)
{
    return (size_t)xe_shape_numel(&t->shape) * xe_dtype_size(t->dtype);
}

/* The buffer expression of every node; constants emitted as byte arrays. */
static xe_code bind_nodes(xg_aot *a, walk *w, xe_status *st)
{
    const xe_graph *g = w->g;
    int clusters = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_node *n = g->nodes[i];
        char buf[700];
        buf[0] = '\0';
        w->cluster[i] = -1;
        if (n->op == XE_OP_INPUT) {
            for (int k = 0; k < g->n_inputs; k++)
                if (g->inputs[k] == i)
                    snprintf(buf, sizeof buf, "(void *)%s", w->params[k]);
        } else if (n->op == XE_OP_CONST) {
            snprintf(buf, sizeof buf, "%s_const%d", a->prefix, i);
            xg_aot_bytes(&a->src, buf, n->value);
            snprintf(buf, sizeof buf, "(void *)%s_const%d", a->prefix, i);
        } else if (n->op == XE_OP_GET) {
            snprintf(buf, sizeof buf, "c%d_o%lld", w->cluster[n->inputs[0]], (long long)xe_node_attr_int(n, "index", 0));
        } else {
            w->cluster[i] = clusters++;
            continue;
        }
        if (!(w->expr[i] = strdup(buf)))
            return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    return XE_OK;
}

/* The parameter list: `const float *x, ..., float *y` (comments give each buffer's type). */
static void emit_params(xe_text *t, const walk *w)
{
    const xe_graph *g = w->g;
    for (int k = 0; k < g->n_inputs + g->n_outputs; k++) {
        bool in = k < g->n_inputs;
        const xe_node *n = g->nodes[in ? g->inputs[k] : g->outputs[k - g->n_inputs]];
        char ty[128];
        xe_text_printf(t, "%s\n    %s%s *%s /* %s */", k ? "," : "", in ? "const " : "", xg_aot_ctype(n->type.dtype),
                       w->params[k], xe_type_str(&n->type, ty, sizeof ty));
    }
    if (g->n_inputs + g->n_outputs == 0)
        xe_text_printf(t, "void");
}

/* The output parameter that takes cluster K's output J directly (the first graph output that is it), or -1. */
static int direct_output(const walk *w, int K, int J)
{
    const xe_graph *g = w->g;
    char want[64];
    snprintf(want, sizeof want, "c%d_o%d", K, J);
    for (int k = 0; k < g->n_outputs; k++) {
        const char *e = w->expr[g->outputs[k]];
        if (e && strcmp(e, want) == 0)
            return k;
    }
    return -1;
}

/* Every cluster output's variable: a caller's output buffer, or a temporary. */
static void emit_temps(xg_aot *a, const walk *w)
{
    const xe_graph *g = w->g;
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_node *n = g->nodes[i];
        int K = w->cluster[i];
        for (int j = 0; K >= 0 && j < n->n_tuple; j++) {
            int k = direct_output(w, K, j);
            if (k >= 0)
                xe_text_printf(&a->src, "    void *c%d_o%d = %s;\n    int own_c%d_o%d = 0;\n", K, j,
                               w->params[g->n_inputs + k], K, j);
            else
                xe_text_printf(&a->src, "    void *c%d_o%d = malloc(%zu);\n    int own_c%d_o%d = 1;\n"
                                        "    if (!c%d_o%d)\n        rc = %d;\n",
                               K, j, type_bytes(&n->tuple[j]) ? type_bytes(&n->tuple[j]) : 1, K, j, K, j,
                               (int)XE_ERR_NOMEM);
        }
    }
}

/* Each cluster in graph order, then the outputs that are not a cluster's own buffer are copied. */
static void emit_body(xg_aot *a, const walk *w)
{
    const xe_graph *g = w->g;
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_node *n = g->nodes[i];
        int K = w->cluster[i];
        if (K < 0)
            continue;
        xe_text_printf(&a->src, "    if (rc == 0) { /* %s */\n        void *in[] = {", n->name);
        for (int j = 0; j < n->n_inputs; j++)
            xe_text_printf(&a->src, "%s, ", w->expr[n->inputs[j]]);
        xe_text_printf(&a->src, "NULL};\n        void *out[] = {");
        for (int j = 0; j < n->n_tuple; j++)
            xe_text_printf(&a->src, "c%d_o%d, ", K, j);
        xe_text_printf(&a->src, "NULL};\n        rc = %s_cluster_%d(in, out);\n    }\n", a->prefix, K);
    }
    for (int k = 0; k < g->n_outputs; k++) {
        const xe_node *o = g->nodes[g->outputs[k]];
        const char *p = w->params[g->n_inputs + k];
        xe_text_printf(&a->src, "    if (rc == 0 && (void *)%s != %s)\n        memcpy(%s, %s, %zu);\n", p,
                       w->expr[g->outputs[k]], p, w->expr[g->outputs[k]], type_bytes(&o->type));
    }
    for (int i = 0; i < g->n_nodes; i++)
        for (int j = 0; w->cluster[i] >= 0 && j < g->nodes[i]->n_tuple; j++)
            xe_text_printf(&a->src, "    if (own_c%d_o%d)\n        free(c%d_o%d);\n", w->cluster[i], j,
                           w->cluster[i], j);
    xe_text_printf(&a->src, "    return rc;\n}\n");
}

/* name in capitals (the header's macros), malloc'd. */
static char *upper(const char *name)
{
    char *up = strdup(name);
    for (char *c = up; c && *c; c++)
        *c = (char)toupper((unsigned char)*c);
    return up;
}

/* PREFIX_NAME_RANK, _SIZE (elements), _DIM0... of one buffer. */
static void emit_shape_macros(xe_text *t, const char *prefix, const char *param, const xe_node *n, bool in)
{
    char ty[128], *P = upper(prefix), *up = upper(param);
    const char *a = P ? P : "", *b = up ? up : "";
    xe_text_printf(t, "/* %s %s: %s */\n#define %s_%s_RANK %d\n#define %s_%s_SIZE %lld\n", in ? "input" : "output",
                   n->name, xe_type_str(&n->type, ty, sizeof ty), a, b, n->type.shape.rank, a, b,
                   (long long)xe_shape_numel(&n->type.shape));
    for (int d = 0; d < n->type.shape.rank; d++)
        xe_text_printf(t, "#define %s_%s_DIM%d %lld\n", a, b, d, (long long)n->type.shape.dims[d]);
    free(P);
    free(up);
}

/* NAME.h: the entry point with every buffer's dtype and shape, and the shapes as constants. */
static char *header_text(const xg_aot *a, const walk *w)
{
    const xe_graph *g = w->g;
    xe_text t = {0};
    char *P = upper(a->prefix);
    xe_text_printf(&t, "/*\n * Generated by xlac-compile from %s (target c): the whole graph as one function.\n"
                       " * Buffers are dense, C order, of the dtype and shape given; outputs are written.\n"
                       " * Returns 0, or an xe_code (nonzero) when a step failed (out of memory).\n"
                       " * Link with %s.so (it needs libxlac_executor.so when the graph has a matmul).\n */\n",
                   g->file, a->prefix);
    xe_text_printf(&t, "#ifndef %s_XLAC_H\n#define %s_XLAC_H\n\n#include <stdint.h>\n\n#ifdef __cplusplus\n"
                       "extern \"C\" {\n#endif\n\n", P ? P : "", P ? P : "");
    free(P);
    for (int k = 0; k < g->n_inputs + g->n_outputs; k++) {
        bool in = k < g->n_inputs;
        emit_shape_macros(&t, a->prefix, w->params[k], g->nodes[in ? g->inputs[k] : g->outputs[k - g->n_inputs]], in);
    }
    xe_text_printf(&t, "\nint %s_run(", a->prefix);
    emit_params(&t, w);
    xe_text_printf(&t, ");\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
    return xe_text_take(&t);
}

static xe_code write_text(const char *dir, const char *name, const char *ext, char *text, xe_status *st)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
    xe_code c = text ? xg_write_file(path, text, strlen(text), st) : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    free(text);
    return c;
}

/* cc -shared -o NAME.so NAME.c NAME.cluster_*.c [-lxlac_executor]; the log goes to NAME.log on failure. */
static xe_code compile_all(xg_aot *a, const char *exec_lib_dir, const xg_options *o, xe_status *st)
{
    char so[4096], libdir[4200], rpath[4200];
    snprintf(so, sizeof so, "%s/%s.so", a->dir, a->prefix);
    snprintf(libdir, sizeof libdir, "-L%s", exec_lib_dir);
    snprintf(rpath, sizeof rpath, "-Wl,-rpath,%s", exec_lib_dir);
    const char *args[40] = {"-shared", "-fvisibility=hidden", "-o", so};
    int n = 4;
    for (int i = 0; i < a->n_sources && n < 34; i++)
        args[n++] = a->sources[i];
    if (a->uses_executor) {
        args[n++] = libdir;
        args[n++] = rpath;
        args[n++] = "-lxlac_executor";
    }
    args[n] = NULL;
    char *log = NULL;
    xe_code c = xg_cc_run(o->cc, o->tmp_dir, args, o->fast_math, o->compile_timeout_s, &log, st);
    if (c != XE_OK) {
        xe_status ls;
        write_text(a->dir, a->prefix, "log", log, &ls);
        log = NULL;
    }
    free(log);
    return c;
}

/* NAME.c's opening: includes, the executor's matmul. */
static void emit_opening(xg_aot *a, const xe_graph *g)
{
    xe_text_printf(&a->src, "/* generated by xlac-compile from %s: every cluster of the graph and %s_run, which runs "
                            "them in order (see %s.h) */\n#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n\n"
                            "#include \"%s.h\"\n\n"
                            "int xe_aot_matmul(int dtype, const void *a, int a_rank, const int64_t *a_dims, int ta, "
                            "const void *b, int b_rank,\n                  const int64_t *b_dims, int tb, void *c, "
                            "int c_rank, const int64_t *c_dims); /* libxlac_executor */\n\n",
                   g->file, a->prefix, a->prefix, a->prefix);
}

static xe_code generate(xg_aot *a, walk *w, const xg_options *o, xe_status *st)
{
    const xe_graph *g = w->g;
    emit_opening(a, g);
    xe_code c = name_params(w, st);
    if (c == XE_OK)
        c = bind_nodes(a, w, st);
    for (int i = 0; c == XE_OK && i < g->n_nodes; i++)
        if (w->cluster[i] >= 0)
            c = xg_aot_cluster(a, g->nodes[i], w->cluster[i], o, st);
    if (c != XE_OK)
        return c;
    xe_text_printf(&a->src, "__attribute__((visibility(\"default\"))) int %s_run(", a->prefix);
    emit_params(&a->src, w);
    xe_text_printf(&a->src, ")\n{\n    int rc = 0;\n");
    emit_temps(a, w);
    emit_body(a, w);
    if ((c = write_text(a->dir, a->prefix, "h", header_text(a, w), st)) != XE_OK)
        return c;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.c", a->dir, a->prefix);
    if ((c = write_text(a->dir, a->prefix, "c", xe_text_take(&a->src), st)) != XE_OK)
        return c;
    return xg_aot_add_source(a, path, st);
}

xe_code xg_aot_graph(const xe_graph *g, const char *name, const char *out_dir, const char *exec_lib_dir,
                     const xg_options *o, xe_status *st)
{
    if (check_graph(g, st) != XE_OK)
        return st->code;
    char *prefix = c_ident(name);
    walk w = {.g = g,
              .expr = calloc((size_t)g->n_nodes + 1, sizeof(char *)),
              .cluster = calloc((size_t)g->n_nodes + 1, sizeof(int)),
              .params = calloc((size_t)(g->n_inputs + g->n_outputs) + 1, sizeof(char *))};
    xg_aot a = {.prefix = prefix, .dir = out_dir};
    xe_code c = prefix && w.expr && w.cluster && w.params ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (c == XE_OK)
        c = generate(&a, &w, o, st);
    if (c == XE_OK)
        c = compile_all(&a, exec_lib_dir, o, st);
    xe_text_free(&a.src);
    for (int i = 0; i < a.n_sources; i++)
        free(a.sources[i]);
    free(a.sources);
    free_walk(&w);
    free(prefix);
    return c;
}
