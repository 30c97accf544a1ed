/*
 * The whole graph ahead of time (xlac-compile, target C): one function
 * that runs every cluster of the clustered graph in order, on the
 * caller's buffers, compiled with the system compiler into NAME.so, and
 * NAME.h declaring it with every buffer's dtype and shape, as tfcompile's
 * generated header does:
 *
 *   int mlp_run(const float *x, ... , float *y);   // x: f32[64,128], ...
 *
 * Clusters run their generated kernels (aot_cluster.c); an op between
 * clusters that runs per op is a per-op step: its one-node graph, as .xg
 * text in the program, runs through libxlac_executor (xe_aot_graph_run)
 * on the step's buffers. A node that cannot be either (a data-dependent
 * output shape, no CPU kernel, a composite outside every cluster) is
 * refused, by name, op and line, and so is an input whose shape is not
 * fully declared (no `?` dims: the entry point is compiled for one shape).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "aot_impl.h"
#include "compile.h"
#include "xlac/escape.h"
#include "xlac/io.h"
#include "xlac/op.h"

/* Per top-level node: the C expression of its buffer ("in_x", "c0_o1", "mlp_const3"). */
typedef struct walk {
    const xe_graph *g;
    char **expr;   /* per node, malloc'd, NULL for launch nodes */
    int *cluster;  /* per launch node: its cluster number K, else -1 */
    bool *per_op;  /* per node: a step run per op through libxlac_executor */
    char **params; /* per graph input, then per graph output: the parameter's name */
} walk;

/* Inputs, constants, clusters and the gets of their outputs: what the entry point binds or runs
 * itself. */
static bool aot_node(const xe_node *n)
{
    return n->op == XE_OP_INPUT || n->op == XE_OP_CONST || n->op == XE_OP_GET ||
           (n->body && xe_node_attr_string(n, "@cluster", NULL));
}

/* An op between clusters that the entry point runs per op (xe_aot_graph_run): a CPU kernel, a fixed
 * shape. */
static bool per_op_node(const xe_node *n)
{
    const xe_op_def *d = xe_op_get(n->op);
    return !aot_node(n) && !n->body && d && xe_op_kernel(d, XE_DEV_CPU) &&
           !(d->flags & XE_OPF_DATA_DEPENDENT_SHAPE) && xe_shape_is_known(&n->type.shape);
}

/* Why node n keeps the graph from having an entry point, or NULL. */
static const char *refusal(const xe_node *n)
{
    const xe_op_def *d = xe_op_get(n->op);
    if (n->op == XE_OP_INPUT)
        return xe_shape_is_known(&n->type.shape)
                   ? NULL
                   : "has unknown dims (give it a fixed shape in the graph)";
    if (aot_node(n) || per_op_node(n))
        return NULL;
    if (n->body)
        return "is a composite node outside every cluster";
    if (d && (d->flags & XE_OPF_DATA_DEPENDENT_SHAPE))
        return "has a data-dependent output shape";
    return d && xe_op_kernel(d, XE_DEV_CPU) ? "has unknown dims" : "has no CPU kernel";
}

/* Every node that cannot be part of the entry point, named in one error. */
static xe_code check_graph(const xe_graph *g, xe_status *st)
{
    xe_text t = {0};
    int bad = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_node *n = g->nodes[i];
        const char *why = refusal(n);
        if (why && bad++ < 8)
            xe_text_printf(&t, "%snode %s (%s) at %s:%d %s", bad > 1 ? "; " : "", n->name,
                           xe_node_op_name(n), g->file, n->line, why);
    }
    char *why = xe_text_take(&t);
    xe_code c = bad ? xe_fail(st, XE_ERR_UNSUPPORTED, "%s: no ahead-of-time entry point: %s%s",
                              g->file, why ? why : "", bad > 8 ? "; ..." : "")
                    : XE_OK;
    free(why);
    return c;
}

static void free_walk(walk *w)
{
    for (int i = 0; w->expr && i < w->g->n_nodes; i++)
        free(w->expr[i]);
    for (int i = 0; w->params && i < w->g->n_inputs + w->g->n_outputs; i++)
        free(w->params[i]);
    free(w->expr);
    free(w->cluster);
    free(w->per_op);
    free(w->params);
}

/* Unique parameter names: inputs first, then outputs (a clash gets _out, then _N). */
static xe_code name_params(walk *w, xe_status *st)
{
    const xe_graph *g = w->g;
    int np = g->n_inputs + g->n_outputs;
    for (int k = 0; k < np; k++) {
        const xe_node *n = g->nodes[k < g->n_inputs ? g->inputs[k] : g->outputs[k - g->n_inputs]];
        char *base = xe_esc_c_ident(n->name), buf[600];
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
            snprintf(buf, sizeof buf, "c%d_o%lld", w->cluster[n->inputs[0]],
                     (long long)xe_node_attr_int(n, "index", 0));
        } else if (per_op_node(n)) {
            snprintf(buf, sizeof buf, "p%d", i);
            w->per_op[i] = a->uses_executor = true;
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
        xe_text_printf(t, "%s\n    %s%s *%s /* %s */", k ? "," : "", in ? "const " : "",
                       xg_aot_ctype(n->type.dtype), w->params[k],
                       xe_type_str(&n->type, ty, sizeof ty));
    }
    if (g->n_inputs + g->n_outputs == 0)
        xe_text_printf(t, "void");
}

/* The output parameter that takes variable var directly (the first graph output that is it), or -1.
 */
static int direct_output(const walk *w, const char *var)
{
    const xe_graph *g = w->g;
    for (int k = 0; k < g->n_outputs; k++) {
        const char *e = w->expr[g->outputs[k]];
        if (e && strcmp(e, var) == 0)
            return k;
    }
    return -1;
}

/* `void *var`: a caller's output buffer, or a temporary of type t (own_var says which). */
static void emit_var(xg_aot *a, const walk *w, const char *var, const xe_type *t)
{
    int k = direct_output(w, var);
    if (k >= 0)
        xe_text_printf(&a->src, "    void *%s = %s;\n    int own_%s = 0;\n", var,
                       w->params[w->g->n_inputs + k], var);
    else
        xe_text_printf(
            &a->src,
            "    void *%s = malloc(%zu);\n    int own_%s = 1;\n    if (!%s)\n        rc = %d;\n",
            var, type_bytes(t) ? type_bytes(t) : 1, var, var, (int)XE_ERR_NOMEM);
}

/* Calls fn(a, var, type) for every value a cluster or a per-op step produces. */
static void each_var(xg_aot *a, const walk *w,
                     void (*fn)(xg_aot *, const walk *, const char *, const xe_type *))
{
    const xe_graph *g = w->g;
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_node *n = g->nodes[i];
        char var[64];
        for (int j = 0; w->cluster[i] >= 0 && j < n->n_tuple; j++) {
            snprintf(var, sizeof var, "c%d_o%d", w->cluster[i], j);
            fn(a, w, var, &n->tuple[j]);
        }
        if (w->per_op[i]) {
            snprintf(var, sizeof var, "p%d", i);
            fn(a, w, var, &n->type);
        }
    }
}

static void emit_free(xg_aot *a, const walk *w, const char *var, const xe_type *t)
{
    (void)w, (void)t;
    xe_text_printf(&a->src, "    if (own_%s)\n        free(%s);\n", var, var);
}

/* Node n alone as a graph: its inputs NAME.in0, ... of its producers' types, n itself (attributes
 * kept). */
static char *step_text(const xe_graph *g, const xe_node *n, xe_status *st)
{
    xe_graph *s = xe_graph_new(g->file);
    int *ins = calloc((size_t)n->n_inputs + 1, sizeof *ins), k = -1;
    xe_code c = s && ins ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int j = 0; c == XE_OK && j < n->n_inputs; j++) {
        char name[600];
        snprintf(name, sizeof name, "%s.in%d", n->name, j);
        if ((ins[j] = xe_graph_add_input(s, name, &g->nodes[n->inputs[j]]->type, st)) < 0)
            c = st->code;
    }
    if (c == XE_OK && (k = xe_graph_add_node(s, n->name, n->op, ins, n->n_inputs, st)) < 0)
        c = st->code;
    for (int j = 0; c == XE_OK && j < n->n_attrs; j++)
        if (n->attrs[j].name[0] != '@')
            c = xe_node_copy_attr(s->nodes[k], &n->attrs[j], st);
    if (c == XE_OK)
        c = xe_graph_add_output(s, k, st);
    char *text = c == XE_OK ? xe_write_string(s, st) : NULL;
    free(ins);
    xe_graph_destroy(s);
    return text;
}

/* A per-op step: the executor runs node i (its text parsed once) on the bound buffers. */
static xe_code emit_step(xg_aot *a, const walk *w, int i, xe_status *st)
{
    const xe_node *n = w->g->nodes[i];
    char *text = step_text(w->g, n, st);
    if (!text)
        return st->code;
    xe_text_printf(&a->src, "    if (rc == 0) { /* ");
    xe_esc_c_comment(&a->src, n->name);
    xe_text_printf(&a->src,
                   " = %s, per op (libxlac_executor) */\n        static void *h;\n"
                   "        static const char text[] =\n        ",
                   xe_node_op_name(n));
    xe_esc_c_string(&a->src, text);
    free(text);
    xe_text_printf(&a->src, ";\n        void *in[] = {");
    for (int j = 0; j < n->n_inputs; j++)
        xe_text_printf(&a->src, "%s, ", w->expr[n->inputs[j]]);
    xe_text_printf(&a->src,
                   "NULL};\n        void *out[] = {p%d, NULL};\n        rc = xe_aot_graph_run(&h, "
                   "text, in, out);\n"
                   "    }\n",
                   i);
    return XE_OK;
}

/* Clusters and per-op steps in graph order, then the outputs that are not a step's own buffer are
 * copied. */
static xe_code emit_body(xg_aot *a, const walk *w, xe_status *st)
{
    const xe_graph *g = w->g;
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_node *n = g->nodes[i];
        int K = w->cluster[i];
        if (w->per_op[i] && emit_step(a, w, i, st) != XE_OK)
            return st->code;
        if (K < 0)
            continue;
        xe_text_printf(&a->src, "    if (rc == 0) { /* ");
        xe_esc_c_comment(&a->src, n->name);
        xe_text_printf(&a->src, " */\n        void *in[] = {");
        for (int j = 0; j < n->n_inputs; j++)
            xe_text_printf(&a->src, "%s, ", w->expr[n->inputs[j]]);
        xe_text_printf(&a->src, "NULL};\n        void *out[] = {");
        for (int j = 0; j < n->n_tuple; j++)
            xe_text_printf(&a->src, "c%d_o%d, ", K, j);
        xe_text_printf(&a->src, "NULL};\n        rc = %s_cluster_%d(in, out);\n    }\n", a->prefix,
                       K);
    }
    for (int k = 0; k < g->n_outputs; k++) {
        const xe_node *o = g->nodes[g->outputs[k]];
        const char *p = w->params[g->n_inputs + k];
        xe_text_printf(&a->src,
                       "    if (rc == 0 && (void *)%s != %s)\n        memcpy(%s, %s, %zu);\n", p,
                       w->expr[g->outputs[k]], p, w->expr[g->outputs[k]], type_bytes(&o->type));
    }
    each_var(a, w, emit_free);
    xe_text_printf(&a->src, "    return rc;\n}\n");
    return XE_OK;
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
static void emit_shape_macros(xe_text *t, const char *prefix, const char *param, const xe_node *n,
                              bool in)
{
    char ty[128], *P = upper(prefix), *up = upper(param);
    const char *a = P ? P : "", *b = up ? up : "";
    xe_text_printf(t, "/* %s ", in ? "input" : "output");
    xe_esc_c_comment(t, n->name);
    xe_text_printf(t, ": %s */\n#define %s_%s_RANK %d\n#define %s_%s_SIZE %lld\n",
                   xe_type_str(&n->type, ty, sizeof ty), a, b, n->type.shape.rank, a, b,
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
    xe_text_printf(&t, "/*\n * Generated by xlac-compile from ");
    xe_esc_c_comment(&t, g->file);
    xe_text_printf(
        &t,
        " (target c): the whole graph as one function.\n"
        " * Buffers are dense, C order, of the dtype and shape given; outputs are written.\n"
        " * Returns 0, or an xe_code (nonzero) when a step failed (out of memory).\n"
        " * Link with %s.so; it finds the libxlac_executor.so copied beside it (RUNPATH $ORIGIN)\n"
        " * when the graph has a matmul or a per-op step: copy the folder as a whole.\n */\n",
        a->prefix);
    xe_text_printf(
        &t,
        "#ifndef %s_XLAC_H\n#define %s_XLAC_H\n\n#include <stdint.h>\n\n#ifdef __cplusplus\n"
        "extern \"C\" {\n#endif\n\n",
        P ? P : "", P ? P : "");
    free(P);
    for (int k = 0; k < g->n_inputs + g->n_outputs; k++) {
        bool in = k < g->n_inputs;
        emit_shape_macros(&t, a->prefix, w->params[k],
                          g->nodes[in ? g->inputs[k] : g->outputs[k - g->n_inputs]], in);
    }
    xe_text_printf(&t, "\nint %s_run(", a->prefix);
    emit_params(&t, w);
    xe_text_printf(&t, ");\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
    return xe_text_take(&t);
}

static xe_code write_text(const char *dir, const char *name, const char *ext, char *text,
                          xe_status *st)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
    xe_code c = text ? xg_write_file(path, text, strlen(text), st)
                     : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    free(text);
    return c;
}

/* Copies file from to to (mode 0755), whole. */
static xe_code copy_file(const char *from, const char *to, xe_status *st)
{
    char *data = NULL;
    size_t len = 0;
    if (xe_read_file(from, &data, &len, st) != XE_OK)
        return st->code;
    FILE *f = xe_fcreate(to, st);
    bool ok = f && fwrite(data, 1, len, f) == len;
    ok = (f && fclose(f) == 0) && ok;
    free(data);
    if (!ok || chmod(to, 0755) != 0)
        return xe_fail(st, XE_ERR_IO, "cannot write %s", to);
    return XE_OK;
}

/*
 * cc -shared -o NAME.so NAME.c NAME.cluster_*.c [-lxlac_executor]; the log goes to NAME.log on
 * failure. A program that calls the executor (a matmul, a per-op step) gets a copy of
 * libxlac_executor.so beside it and RUNPATH $ORIGIN: the folder runs wherever it is copied, with no
 * path of the build.
 */
static xe_code compile_all(xg_aot *a, const char *exec_lib_dir, const xg_options *o, xe_status *st)
{
    char so[4096], libdir[4200], from[4200], to[4200];
    snprintf(so, sizeof so, "%s/%s.so", a->dir, a->prefix);
    snprintf(libdir, sizeof libdir, "-L%s", a->dir);
    snprintf(from, sizeof from, "%s/libxlac_executor.so", exec_lib_dir);
    snprintf(to, sizeof to, "%s/libxlac_executor.so", a->dir);
    if (a->uses_executor && copy_file(from, to, st) != XE_OK)
        return st->code;
    const char *args[40] = {"-shared", "-fvisibility=hidden", "-o", so};
    int n = 4;
    for (int i = 0; i < a->n_sources && n < 34; i++)
        args[n++] = a->sources[i];
    if (a->uses_executor) {
        args[n++] = libdir;
        args[n++] =
            "-Wl,-rpath,$ORIGIN"; /* no shell between: $ORIGIN reaches the linker as it is */
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
    xe_text_printf(&a->src, "/* generated by xlac-compile from ");
    xe_esc_c_comment(&a->src, g->file);
    xe_text_printf(
        &a->src,
        ": every cluster of the graph and %s_run, which runs "
        "them in order (see %s.h) */\n#include <stdint.h>\n#include <stdlib.h>\n#include "
        "<string.h>\n\n"
        "#include \"%s.h\"\n\n"
        "int xe_aot_matmul(int dtype, const void *a, int a_rank, const int64_t *a_dims, int ta, "
        "const void *b, int b_rank,\n                  const int64_t *b_dims, int tb, void *c, "
        "int c_rank, const int64_t *c_dims); /* libxlac_executor */\n"
        "int xe_aot_graph_run(void **handle, const char *text, void *const *in, void *const "
        "*out);\n\n",
        a->prefix, a->prefix, a->prefix);
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
    each_var(a, w, emit_var);
    if ((c = emit_body(a, w, st)) != XE_OK ||
        (c = write_text(a->dir, a->prefix, "h", header_text(a, w), st)) != XE_OK)
        return c;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.c", a->dir, a->prefix);
    if ((c = write_text(a->dir, a->prefix, "c", xe_text_take(&a->src), st)) != XE_OK)
        return c;
    return xg_aot_add_source(a, path, st);
}

xe_code xg_aot_graph(const xe_graph *g, const char *name, const char *out_dir,
                     const char *exec_lib_dir, const xg_options *o, char *so_path, size_t so_len,
                     xe_status *st)
{
    if (check_graph(g, st) != XE_OK)
        return st->code;
    char *prefix = xe_esc_c_ident(name);
    walk w = {.g = g,
              .expr = calloc((size_t)g->n_nodes + 1, sizeof(char *)),
              .cluster = calloc((size_t)g->n_nodes + 1, sizeof(int)),
              .per_op = calloc((size_t)g->n_nodes + 1, sizeof(bool)),
              .params = calloc((size_t)(g->n_inputs + g->n_outputs) + 1, sizeof(char *))};
    xg_aot a = {.prefix = prefix, .dir = out_dir};
    xe_code c = prefix && w.expr && w.cluster && w.per_op && w.params
                    ? XE_OK
                    : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (c == XE_OK)
        c = generate(&a, &w, o, st);
    if (c == XE_OK)
        c = compile_all(&a, exec_lib_dir, o, st);
    if (c == XE_OK)
        snprintf(so_path, so_len, "%s/%s.so", out_dir, prefix);
    xe_text_free(&a.src);
    for (int i = 0; i < a.n_sources; i++)
        free(a.sources[i]);
    free(a.sources);
    free_walk(&w);
    free(prefix);
    return c;
}
