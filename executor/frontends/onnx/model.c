/*
 * Loading an ONNX model: the file is mapped and unpacked by protobuf-c
 * (a file it refuses is reported with diag.c's byte offset and field), the
 * ai.onnx opset is read, initializers become constants, graph inputs become
 * `input` nodes (dim_param and missing dims are `?`), and every node is
 * built by its op table entry. Nothing stops at the first unsupported node:
 * each one is listed, and the import fails only at the end. A node whose
 * inputs come from an unimportable node is still checked (op type, opset,
 * attribute names) but not built. names.c then gives the nodes their final
 * names and drops the ones no output needs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_impl.h"
#include "xlac/io.h"

xe_graph *ox_finish(ox_ctx *c, xe_status *st); /* names.c */

/* The model's opset_import version of domain dom ("" and "ai.onnx" alike), as written; -1 when
 * none. */
static long long domain_opset(const ox_ctx *c, const char *dom)
{
    bool onnx = !dom[0] || !strcmp(dom, "ai.onnx");
    for (size_t k = 0; k < c->model->n_opset_import; k++) {
        const char *d = c->model->opset_import[k]->domain ? c->model->opset_import[k]->domain : "";
        if (onnx ? !d[0] || !strcmp(d, "ai.onnx") : !strcmp(d, dom))
            return (long long)c->model->opset_import[k]->version;
    }
    return onnx && !c->model->n_opset_import ? 1 : -1;
}

/* "node 'NAME' (OpType, domain D, opset N)" into buf: N is the opset the model imports for D. */
static const char *node_label(const ox_ctx *c, const Onnx__NodeProto *np, char *buf, size_t cap)
{
    const char *dom = np->domain && np->domain[0] ? np->domain : "ai.onnx";
    long long v = domain_opset(c, dom);
    char opset[48];
    if (v < 0)
        snprintf(opset, sizeof opset, "no opset imported");
    else
        snprintf(opset, sizeof opset, "opset %lld", v);
    if (np->name && np->name[0])
        snprintf(buf, cap, "node '%s' (%s, domain %s, %s)", np->name, np->op_type, dom, opset);
    else
        snprintf(buf, cap, "node with output '%s' (%s, domain %s, %s)",
                 np->n_output ? np->output[0] : "", np->op_type, dom, opset);
    return buf;
}

static void node_error(ox_ctx *c, const Onnx__NodeProto *np, bool unsupported, const char *msg)
{
    char label[512];
    ox_error_add(&c->errs, unsupported, "%s: %s: %s", c->path,
                 node_label(c, np, label, sizeof label), msg);
}

/* Every output of np names an unimportable value. */
static void poison_outputs(ox_ctx *c, const Onnx__NodeProto *np, xe_status *st)
{
    for (size_t k = 0; k < np->n_output; k++)
        if (np->output[k][0])
            ox_value_set(c, np->output[k], -1, st);
}

/* An attribute the entry does not read, or one given by reference: unsupported. */
static bool check_attrs(ox_ctx *c, const Onnx__NodeProto *np, const ox_entry *e)
{
    bool ok = true;
    for (size_t k = 0; k < np->n_attribute; k++) {
        const Onnx__AttributeProto *a = np->attribute[k];
        const char *name = a->name ? a->name : "";
        size_t n = strlen(name);
        const char *p = e->attrs;
        bool known = false;
        while (n && p && (p = strstr(p, name)) && !known) {
            known = (p == e->attrs || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0');
            p += n;
        }
        if (!known || (a->ref_attr_name && a->ref_attr_name[0])) {
            char msg[300];
            snprintf(msg, sizeof msg, "attribute '%s' is not supported", name);
            node_error(c, np, true, msg);
            ok = false;
        }
    }
    return ok;
}

/* The table entry for np, or NULL with the error listed. */
static const ox_entry *entry_for(ox_ctx *c, const Onnx__NodeProto *np)
{
    bool xlac = np->domain && !strcmp(np->domain, OX_XLAC_DOMAIN), known = xlac;
    bool ms = np->domain && !strcmp(np->domain, OX_MS_DOMAIN);
    if (np->domain && np->domain[0] && strcmp(np->domain, "ai.onnx") && !xlac && !ms) {
        node_error(c, np, true,
                   "op domain is not supported (only ai.onnx, " OX_XLAC_DOMAIN " and " OX_MS_DOMAIN
                   " are)");
        return NULL;
    }
    const char *type = np->op_type ? np->op_type : "";
    const ox_entry *e = xlac ? ox_find_xlac_op(type)
                        : ms ? ox_find_ms_op(type)
                             : ox_find_op(type, c->opset, &known);
    if (!e && ms) {
        char ops[256], msg[400];
        ox_ms_op_list(ops, sizeof ops);
        snprintf(msg, sizeof msg,
                 "onnxruntime's contrib op is not supported (of " OX_MS_DOMAIN ", xlac reads %s)",
                 ops);
        node_error(c, np, true, msg);
    } else if (!e)
        node_error(c, np, true,
                   known ? "op is not supported at this opset" : "op is not supported");
    return e && check_attrs(c, np, e) ? e : NULL;
}

typedef enum gathered {
    GATHERED,   /* every input has its node */
    UNIMPORTED, /* some input comes from a node that could not be imported (listed already) */
    UNDEFINED,  /* an input is not defined (listed here) */
} gathered;

/* Input k, a sequence, into b->seq[k] if the builder takes sequences; false (listed) if not. */
static bool gather_seq(ox_ctx *c, const Onnx__NodeProto *np, ox_b *b, size_t k)
{
    const ox_value *v = np->input[k][0] ? ox_value_find(c, np->input[k]) : NULL;
    if (!v || !v->seq)
        return true;
    if (!ox_takes_sequences(b->entry)) {
        char msg[600];
        snprintf(msg, sizeof msg, "input '%.500s' is a sequence, which this op does not take",
                 np->input[k]);
        node_error(c, np, true, msg);
        return false;
    }
    b->seq[k] = v->seq;
    return true;
}

/* The inputs' nodes into b (-1 where a producer could not be imported). */
static gathered gather(ox_ctx *c, const Onnx__NodeProto *np, ox_b *b)
{
    if (np->n_input > OX_MAX_IO || np->n_output > OX_MAX_IO) {
        node_error(c, np, true, "more than 64 inputs or outputs are not supported");
        return UNDEFINED;
    }
    gathered r = GATHERED;
    b->n_in = (int)np->n_input;
    for (size_t k = 0; k < np->n_input; k++) {
        bool found = true;
        b->in[k] = np->input[k][0] ? ox_value_get(c, np->input[k], &found) : -1;
        if (!found) {
            char msg[600];
            snprintf(msg, sizeof msg, "input '%.500s' is not defined before it is used",
                     np->input[k]);
            node_error(c, np, false, msg);
            return UNDEFINED;
        }
        if (!gather_seq(c, np, b, k))
            return UNDEFINED;
        if (np->input[k][0] && b->in[k] < 0 && !b->seq[k])
            r = UNIMPORTED;
    }
    return r;
}

/* The type the model declares for value name (its value_info or a graph output); false when none
 * fits. */
static bool declared_type(const ox_ctx *c, const char *name, xe_type *t)
{
    const Onnx__GraphProto *g = c->model->graph;
    for (size_t k = 0; k < g->n_value_info + g->n_output; k++) {
        const Onnx__ValueInfoProto *v =
            k < g->n_value_info ? g->value_info[k] : g->output[k - g->n_value_info];
        const Onnx__TypeProto__Tensor *tt = v->type ? v->type->tensor_type : NULL;
        if (!v->name || strcmp(v->name, name) || !tt || !tt->shape ||
            tt->shape->n_dim > XE_MAX_RANK || !ox_dtype(tt->elem_type, &t->dtype))
            continue;
        t->shape.rank = (int)tt->shape->n_dim;
        for (size_t d = 0; d < tt->shape->n_dim; d++) {
            const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
            bool known = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                         dim->dim_value >= 0 && dim->dim_value < (1LL << 40);
            t->shape.dims[d] = known ? dim->dim_value : XE_DIM_UNKNOWN;
        }
        return true;
    }
    return false;
}

/*
 * A node whose inputs come from a node that could not be imported is still
 * checked as far as its own builder goes (an attribute or dtype it does not
 * support), so that every unsupported node is listed at once: each missing
 * input becomes a placeholder of the type the model declares for it
 * (value_info, as exported or shape-inferred models carry), and only an
 * "unsupported" answer is listed. Without a declared type, the node's op,
 * domain and attribute names were checked already (entry_for) and nothing
 * more can be. The import fails anyway: the placeholders never run.
 */
static void check_behind_unimported(ox_ctx *c, const Onnx__NodeProto *np, const ox_entry *e,
                                    ox_b *b, xe_status *st)
{
    for (int k = 0; k < b->n_in; k++) {
        xe_type t;
        char name[32];
        if (!np->input[k][0] || b->in[k] >= 0)
            continue;
        snprintf(name, sizeof name, "_unimported%d", c->g->n_nodes);
        if (!declared_type(c, np->input[k], &t) ||
            (b->in[k] = xe_graph_add_input(c->g, name, &t, st)) < 0)
            return;
    }
    b->first = c->g->n_nodes;
    if ((e->build(b) != XE_OK || b->failed) && b->st.code == XE_ERR_UNSUPPORTED)
        node_error(c, np, true, b->st.msg);
}

static void build_node(ox_ctx *c, const Onnx__NodeProto *np, xe_status *st)
{
    if (ox_absorbed(c, np))
        return;
    const ox_entry *e = entry_for(c, np);
    ox_b b = {.c = c, .np = np, .entry = e, .opset = c->opset, .first = c->g->n_nodes};
    xe_status_clear(&b.st);
    gathered got = e ? gather(c, np, &b) : UNDEFINED;
    if (got != GATHERED) {
        if (got == UNIMPORTED)
            check_behind_unimported(c, np, e, &b, st);
        poison_outputs(c, np, st);
        return;
    }
    xe_code code = e->build(&b);
    for (size_t k = 0; code == XE_OK && !b.failed && k < np->n_output; k++) {
        const ox_value *v = np->output[k][0] ? ox_value_find(c, np->output[k]) : NULL;
        if (np->output[k][0] && (!v || (v->node < 0 && !v->seq)))
            ox_unsupported(&b, "output %zu ('%s') is not supported", k, np->output[k]);
    }
    if (b.failed || code != XE_OK) {
        node_error(c, np, b.st.code == XE_ERR_UNSUPPORTED, b.st.msg);
        poison_outputs(c, np, st);
    }
}

/* A graph input's declared type; false (error listed) for non-tensors and odd dtypes. */
static bool input_type(ox_ctx *c, const Onnx__ValueInfoProto *v, int position, xe_type *t)
{
    const char *name = v->name ? v->name : "";
    const Onnx__TypeProto__Tensor *tt = v->type ? v->type->tensor_type : NULL;
    if (!tt) {
        ox_error_add(&c->errs, true, "%s: graph input '%s': only tensor inputs are supported",
                     c->path, name);
        return false;
    }
    if (!ox_dtype(tt->elem_type, &t->dtype)) {
        ox_error_add(&c->errs, true, "%s: graph input '%s': dtype %s is not supported", c->path,
                     name, ox_dtype_name(tt->elem_type));
        return false;
    }
    if (!tt->shape || tt->shape->n_dim > XE_MAX_RANK) {
        ox_error_add(&c->errs, true, "%s: graph input '%s': %s", c->path, name,
                     tt->shape ? "rank above 8 is not supported"
                               : "an input without a shape (unknown rank) is not supported");
        return false;
    }
    t->shape.rank = (int)tt->shape->n_dim;
    int64_t numel = 1;
    for (size_t d = 0; d < tt->shape->n_dim; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
        bool known = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                     dim->dim_value >= 0;
        t->shape.dims[d] = known ? dim->dim_value : XE_DIM_UNKNOWN;
        int64_t pinned;
        if (ox_pin_dim(c, v, d, &pinned)) /* checked against the declaration (pins.c) */
            known = (t->shape.dims[d] = pinned) >= 0;
        if (!known && c->pin && c->pin[position].rank == t->shape.rank)
            t->shape.dims[d] = c->pin[position].dims[d];
        int64_t size = known ? t->shape.dims[d] : 0;
        if (size && numel > (INT64_MAX / 16) / size) {
            ox_error_add(&c->errs, false, "%s: graph input '%s': its dims overflow a 64-bit size",
                         c->path, name);
            return false;
        }
        numel *= size ? size : 1;
    }
    return true;
}

/* Initializers as constants; graph inputs (that are not initializers) as inputs, with the
 * caller's pins (pins.c, checked by load). */
static xe_code add_sources(ox_ctx *c, xe_status *st)
{
    const Onnx__GraphProto *g = c->model->graph;
    for (size_t k = 0; k < g->n_initializer; k++) {
        const Onnx__TensorProto *t = g->initializer[k];
        if (!t->name || !t->name[0]) { /* "" is how a node says an optional input is absent */
            ox_error_add(&c->errs, false, "%s: initializer %zu has no name", c->path, k);
            continue;
        }
        char what[600];
        snprintf(what, sizeof what, "initializer '%.500s'", t->name ? t->name : "");
        xe_status ts;
        xe_status_clear(&ts);
        xe_tensor *v = c->inits && c->inits[k] ? xe_tensor_retain(c->inits[k])
                                               : ox_tensor(t, c->files, what, &ts);
        if (v && c->inits && !c->inits[k])
            c->inits[k] = xe_tensor_retain(v);
        int x = v ? xe_graph_add_node(c->g, NULL, XE_OP_CONST, NULL, 0, st) : -1;
        if (!v)
            ox_error_add(&c->errs, ts.code == XE_ERR_UNSUPPORTED, "%s: %s", c->path, ts.msg);
        if (v && x < 0) {
            xe_tensor_release(v);
            return st->code;
        }
        if (x >= 0) {
            c->g->nodes[x]->value = v;
            c->g->nodes[x]->type = (xe_type){v->dtype, v->shape};
            if (ox_want_name(c, x, t->name ? t->name : "w", NULL, st) != XE_OK)
                return st->code;
        }
        if (ox_value_set(c, t->name ? t->name : "", x, st) != XE_OK)
            return st->code;
    }
    for (size_t k = 0, pos = 0; k < g->n_input; k++) {
        const char *name = g->input[k]->name ? g->input[k]->name : "";
        xe_type t;
        if (!name[0]) {
            ox_error_add(&c->errs, false, "%s: graph input %zu has no name", c->path, k);
            continue;
        }
        if (ox_is_initializer(g, name))
            continue;
        int x = -1;
        char tmp[32];
        snprintf(tmp, sizeof tmp, "_in%zu", k);
        if (input_type(c, g->input[k], (int)pos++, &t) &&
            (x = xe_graph_add_input(c->g, tmp, &t, st)) < 0)
            return st->code;
        if ((x >= 0 && ox_want_name(c, x, name, name, st) != XE_OK) ||
            ox_value_set(c, name, x, st) != XE_OK)
            return st->code;
    }
    return XE_OK;
}

/* The ai.onnx opset; an error listed when it is outside what we import. */
static void read_opset(ox_ctx *c)
{
    /* IR version 2 and older name no opset: the first (domain_opset's 1) */
    long long v = domain_opset(c, "");
    /* a version beyond int is kept beyond the table (never truncated to a small one) */
    c->opset = v > OX_MAX_OPSET ? OX_MAX_OPSET + 1 : (int)v;
    if (v < 0) /* valid ONNX (a model of other domains only), but none that xlac imports */
        ox_error_add(&c->errs, true,
                     "%s: the model imports no ai.onnx opset (opset_import names none)", c->path);
    else if (v < OX_MIN_OPSET || v > OX_MAX_OPSET)
        ox_error_add(&c->errs, true,
                     "%s: ai.onnx opset %lld is not supported (opsets %d to %d are)", c->path, v,
                     OX_MIN_OPSET, OX_MAX_OPSET);
}

/* Builds every node of g (a graph or a subgraph) in c, in topological order (order.c); errors go
 * to c->errs. Out of memory for the order: the file's order. */
static void build_nodes(ox_ctx *c, const Onnx__GraphProto *g, xe_status *st)
{
    size_t *order = ox_node_order(g);
    for (size_t k = 0; k < g->n_node; k++)
        build_node(c, g->node[order ? order[k] : k], st);
    free(order);
}

/* Builds the whole graph into c->g; errors go to c->errs. */
static xe_code build_graph(ox_ctx *c, xe_status *st)
{
    const Onnx__GraphProto *g = c->model->graph;
    if (!g) {
        ox_error_add(&c->errs, false, "%s: the model has no graph", c->path);
        return XE_OK;
    }
    read_opset(c);
    if (add_sources(c, st) != XE_OK)
        return st->code;
    build_nodes(c, g, st);
    for (size_t k = 0; k < g->n_output; k++) {
        bool found;
        const char *name = g->output[k]->name ? g->output[k]->name : "";
        ox_value_get(c, name, &found);
        const ox_value *v = found ? ox_value_find(c, name) : NULL;
        if (!name[0])
            ox_error_add(&c->errs, false, "%s: graph output %zu has no name", c->path, k);
        else if (!found)
            ox_error_add(&c->errs, false, "%s: graph output '%s' is produced by no node", c->path,
                         name);
        else if (v->seq && (c->pin || !v->seq->n))
            ox_error_add(&c->errs, true,
                         "%s: graph output '%s' is a sequence%s, which is not supported (a "
                         "sequence of n tensors is n graph outputs where its length does not "
                         "depend on the input sizes)",
                         c->path, name,
                         v->seq->n ? " in a graph built per input size" : " of none");
    }
    if (!g->n_output)
        ox_error_add(&c->errs, false, "%s: the graph has no outputs", c->path);
    return XE_OK;
}

/* Unpacks len bytes of a ModelProto; NULL with *st naming the offset and field on failure. */
static Onnx__ModelProto *unpack_bytes(const void *data, size_t len, const char *path, xe_status *st)
{
    char deep[600];
    if (!ox_precheck(data, len, &onnx__model_proto__descriptor, deep, sizeof deep)) {
        xe_fail(st, XE_ERR_PARSE, "%s: not imported: %s", path, deep);
        return NULL;
    }
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, data ? data : (const uint8_t *)"");
    if (!m) {
        char why[600];
        ox_diagnose(data, len, &onnx__model_proto__descriptor, why, sizeof why);
        xe_fail(st, XE_ERR_PARSE, "%s: not a valid ONNX model: %s%s", path, why,
                len > 0x7fffffffu ? " (a .onnx file over 2 GB is beyond protobuf's limit: keep "
                                    "the weights in external data files)"
                                  : "");
    }
    return m;
}

/* Maps the file and unpacks it; NULL with *st naming the offset and field on failure. */
static Onnx__ModelProto *unpack_file(const char *path, xe_status *st)
{
    int fd = xe_open_regular(path, st); /* a FIFO is refused, not waited on */
    struct stat sb;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &sb) != 0) {
        xe_fail(st, XE_ERR_IO, "%s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    size_t len = (size_t)sb.st_size;
    void *data = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (len && data == MAP_FAILED) {
        xe_fail(st, XE_ERR_IO, "%s: cannot map the file: %s", path, strerror(errno));
        return NULL;
    }
    Onnx__ModelProto *m = unpack_bytes(data, len, path, st);
    if (data)
        munmap(data, len);
    return m;
}

/* What a model built per input-shape signature keeps (the maker's user data). */
typedef struct ox_model {
    Onnx__ModelProto *model;
    char *path;
    ox_files *files;   /* its external data files, mapped on first use */
    xe_tensor **inits; /* per initializer, loaded on first use */
    size_t n_inits;
} ox_model;

static void ctx_free(ox_ctx *c)
{
    ox_value *v, *tmp;
    HASH_ITER(hh, c->values, v, tmp)
    {
        HASH_DEL(c->values, v);
        ox_seq_free(v->seq);
        free(v->name);
        free(v);
    }
    for (int i = 0; i < c->cap_names; i++) {
        free(c->want[i]);
        free(c->orig[i]);
    }
    free(c->want);
    free(c->orig);
    free(c->final);
    free(c->absorbed);
    ox_errors_free(&c->errs);
    xe_graph_destroy(c->g);
}

/* The error list as *st: a count line, then as many lines as fit. */
static xe_code report(ox_ctx *c, xe_status *st)
{
    xe_fail(st, XE_ERR_GRAPH, "%s: cannot import the model: %d unsupported, %d invalid\n%s",
            c->path, c->errs.n_unsupported, c->errs.n_other, c->errs.text ? c->errs.text : "");
    if (c->opt && c->opt->report)
        *c->opt->report = c->errs.text ? strdup(c->errs.text) : NULL;
    return st->code;
}

/* One import of m; pin (may be NULL) gives the unknown input dims values. */
static xe_graph *import(ox_model *m, const xe_onnx_options *opt, const xe_shape *pin, xe_status *st)
{
    ox_ctx c = {.path = m->path,
                .files = m->files,
                .opt = opt,
                .model = m->model,
                .pin = pin,
                .inits = m->inits,
                .build_nodes = build_nodes};
    ox_fold_budget(&c);
    if (!(c.g = xe_graph_new(m->path))) {
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (opt && opt->report)
        *opt->report = NULL;
    xe_graph *out = NULL;
    if (build_graph(&c, st) == XE_OK) {
        if (c.errs.n_unsupported + c.errs.n_other)
            report(&c, st);
        else
            out = ox_finish(&c, st);
    }
    ctx_free(&c);
    return out;
}

/* Whether every node of the graph has a table entry that takes its attributes (entry_for's
 * checks, which no size changes): its ops are ones xlac imports. */
static bool ops_known(ox_model *m)
{
    ox_ctx c = {.path = m->path, .model = m->model, .build_nodes = build_nodes};
    read_opset(&c);
    const Onnx__GraphProto *g = m->model->graph;
    for (size_t k = 0; k < g->n_node && !c.errs.n_unsupported && !c.errs.n_other; k++)
        entry_for(&c, g->node[k]);
    bool known = !c.errs.n_unsupported && !c.errs.n_other;
    ctx_free(&c);
    return known;
}

static void model_free(void *user)
{
    ox_model *m = user;
    if (!m)
        return;
    for (size_t k = 0; m->inits && k < m->n_inits; k++)
        xe_tensor_release(m->inits[k]);
    free(m->inits);
    if (m->model)
        onnx__model_proto__free_unpacked(m->model, NULL);
    free(m->path);
    ox_files_free(m->files);
    free(m);
}

/* The maker: the model imported at these input shapes. */
static xe_graph *make(void *user, const xe_shape *shapes, int n, xe_status *st)
{
    (void)n;
    return import(user, NULL, shapes, st);
}

/* Whether a graph input has a dim that is not a known value. */
static bool has_symbolic_dims(const xe_graph *g)
{
    for (int k = 0; k < g->n_inputs; k++) {
        const xe_shape *s = &g->nodes[g->inputs[k]]->type.shape;
        for (int d = 0; d < s->rank; d++)
            if (s->dims[d] < 0)
                return true;
    }
    return false;
}

/* The maker for m on g: the graph built per input-shape signature; g's inputs take the declared
 * types. False (g destroyed) when the two disagree on the inputs. */
static bool give_maker(ox_model *m, xe_graph *g, const xe_graph *declared, int n, xe_status *st)
{
    xe_graph_maker *mk = calloc(1, sizeof *mk);
    if (!mk || n != g->n_inputs || n != declared->n_inputs) {
        if (!mk)
            xe_fail(st, XE_ERR_NOMEM, "out of memory");
        free(mk);
        xe_graph_destroy(g);
        return false;
    }
    for (int k = 0; k < n; k++)
        g->nodes[g->inputs[k]]->type = declared->nodes[declared->inputs[k]]->type;
    *mk = (xe_graph_maker){.make = make, .release = model_free, .user = m};
    xe_graph_set_maker(g, mk);
    return true;
}

/*
 * For the onnxruntime EP, which must know at load which nodes it runs
 * (nodes_at_load): the model imported at probe sizes (ox_probe_shapes) for
 * its nodes, with a maker that imports it again per
 * input-shape signature. NULL (the probe's errors in *st) when the probe
 * import fails: the graph stays with onnxruntime.
 */
static xe_graph *probed(ox_model *m, const xe_graph *declared, const xe_onnx_options *opt,
                        xe_status *st)
{
    int n;
    xe_shape *probe = ox_probe_shapes(m->model->graph, &n);
    xe_graph *g = probe ? import(m, opt, probe, st) : NULL;
    if (!probe)
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
    free(probe);
    return g && give_maker(m, g, declared, n, st) ? g : NULL;
}

/* The probe's sizes dropped from g's outputs: they keep their rank and dtype, every dim unknown. */
static void forget_sizes(xe_graph *g)
{
    for (int k = 0; k < g->n_outputs; k++) {
        xe_shape *s = &g->nodes[g->outputs[k]]->type.shape;
        for (int d = 0; d < s->rank; d++)
            s->dims[d] = XE_DIM_UNKNOWN;
    }
}

/*
 * A model whose import needs its symbolic dims (shape computations over
 * them), which the import with `?` dims (its errors in *st) could not fold:
 * the declared graph (its inputs, and per output a stand-in of its declared
 * type) and a maker, so that the nodes are built at each fed signature,
 * where every shape computation folds and an error names the real sizes.
 * No size is made up. An output that declares no shape takes its rank
 * (only) from an import at probe sizes; when that fails too, or an op,
 * domain or attribute is one that xlac does not import, the first
 * import's errors stand.
 */
static xe_graph *per_signature(ox_model *m, const xe_graph *declared, const xe_onnx_options *opt,
                               xe_status *st)
{
    char **report = opt ? opt->report : NULL, *first_report = report ? *report : NULL;
    if (report) /* the first import's list: a probe import writes its own */
        *report = NULL;
    xe_graph *g = NULL;
    xe_status first = *st, why;
    xe_status_clear(st);
    xe_status_clear(&why);
    if (opt && opt->nodes_at_load) {
        g = probed(m, declared, opt, st);
    } else if (first.code == XE_ERR_GRAPH && ops_known(m)) {
        g = ox_declared_graph(m->model->graph, m->path, declared, st);
        if (g && !give_maker(m, g, declared, declared->n_inputs, st)) {
            g = NULL;                                      /* destroyed */
        } else if (!g && st->code == XE_ERR_UNSUPPORTED) { /* an output declares no shape */
            why = *st;
            xe_status_clear(st);
            if ((g = probed(m, declared, opt, st))) /* its rank, from the probe's nodes */
                forget_sizes(g);
        }
    }
    if (g || (opt && opt->nodes_at_load)) { /* built, or the probe's errors are the EP's */
        free(first_report);
        return g;
    }
    if (report) { /* the first import's errors stand */
        free(*report);
        *report = first_report;
    }
    if (st->code != XE_ERR_NOMEM) {
        *st = first;
        size_t len = strlen(st->msg);
        if (why.code != XE_OK)
            snprintf(st->msg + len, sizeof st->msg - len, "\n%s", why.msg);
    }
    return NULL;
}

/* The declared inputs alone (their types with symbolic dims, the caller's pins applied), or
 * NULL. */
static xe_graph *declared_inputs(ox_model *m, const xe_onnx_options *opt)
{
    ox_ctx c = {.path = m->path,
                .files = m->files,
                .opt = opt,
                .model = m->model,
                .build_nodes = build_nodes};
    xe_status st;
    xe_status_clear(&st);
    if (!(c.g = xe_graph_new(m->path)))
        return NULL;
    const Onnx__GraphProto *g = m->model->graph;
    for (size_t k = 0, pos = 0; k < g->n_input; k++) {
        xe_type t;
        char tmp[32];
        snprintf(tmp, sizeof tmp, "_in%zu", k);
        if (!ox_is_initializer(g, g->input[k]->name ? g->input[k]->name : "") &&
            (!input_type(&c, g->input[k], (int)pos++, &t) ||
             xe_graph_add_input(c.g, tmp, &t, &st) < 0))
            break;
    }
    xe_graph *out = c.g;
    c.g = NULL;
    ctx_free(&c);
    return out;
}

/* The caller's pins against the model (pins.c): false, every problem in *st, before any import. */
static bool pins_fit(ox_model *m, const xe_onnx_options *opt, xe_status *st)
{
    if (!opt || !opt->n_pins || !m->model->graph)
        return true;
    ox_ctx c = {.path = m->path, .opt = opt, .model = m->model, .build_nodes = build_nodes};
    ox_pins_check(&c);
    bool fit = !c.errs.n_unsupported && !c.errs.n_other;
    if (!fit)
        report(&c, st);
    ctx_free(&c);
    return fit;
}

/* m's first import, and the model kept for a maker when it has symbolic dims; m is taken. */
static xe_graph *load(ox_model *m, const xe_onnx_options *opt, xe_status *st)
{
    if (!pins_fit(m, opt, st)) {
        model_free(m);
        return NULL;
    }
    /* initializers kept from the first import for a second (per_signature): loaded once */
    m->n_inits = m->model->graph ? m->model->graph->n_initializer : 0;
    if (!(m->inits = calloc(m->n_inits + 1, sizeof *m->inits))) {
        model_free(m);
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    xe_graph *g = import(m, opt, NULL, st);
    if (!g && m->model->graph) {
        xe_graph *declared = declared_inputs(m, opt);
        if (declared && has_symbolic_dims(declared)) {
            g = per_signature(m, declared, opt, st);
            if (g)
                m = NULL; /* the maker owns it */
        }
        xe_graph_destroy(declared);
    }
    model_free(m);
    return g;
}

/* A model for path; files: the folder of its external data (NULL: none allowed). */
static ox_model *model_new(const char *path, const char *files, xe_status *st)
{
    ox_model *m = calloc(1, sizeof *m);
    if (m && !(m->path = strdup(path)))
        m->path = NULL;
    if (m && files)
        m->files = ox_files_new(files);
    if (!m || !m->path || (files && !m->files)) {
        model_free(m);
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return m;
}

xe_graph *xe_onnx_load(const char *path, const xe_onnx_options *opt, xe_status *st)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
    ox_model *m = dir ? model_new(path, dir, st) : NULL;
    if (!dir)
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
    free(dir);
    if (!m)
        return NULL;
    if (!(m->model = unpack_file(path, st))) {
        model_free(m);
        return NULL;
    }
    return load(m, opt, st);
}

xe_graph *xe_onnx_load_memory(const void *data, size_t len, const char *name,
                              const xe_onnx_options *opt, xe_status *st)
{
    ox_model *m = model_new(name, NULL, st);
    if (!m)
        return NULL;
    if (opt && opt->n_blocks > 0 && !(m->files = ox_files_host(opt->blocks, opt->n_blocks))) {
        model_free(m);
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (!(m->model = unpack_bytes(data, len, name, st))) {
        model_free(m);
        return NULL;
    }
    return load(m, opt, st);
}
