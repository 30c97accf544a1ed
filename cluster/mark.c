/*
 * Mark for compilation: which ops of a graph are compiled, in which
 * clusters, and why every other op is left out.
 *
 * The graph is read, never changed. The steps:
 *   1. candidates: each op gets a reason to be left out, or none
 *      (graph inputs, constants, data-dependent and stateful ops, ops the
 *      code generator cannot compile, excluded devices and names, fuel);
 *   2. a cycle detector over every node of the graph, with its edges;
 *   3. jit blocks: all their ops are contracted into one cluster, or the
 *      pass fails naming the op that cannot be compiled;
 *   4. auto-clustering: for each op in index order, each of its input
 *      edges in order is contracted when both ends are candidates on the
 *      same device, the merged size stays under the maximum, and the
 *      contraction keeps the graph acyclic (a path through an op outside
 *      the cluster would turn into a cycle);
 *   5. clusters under the minimum size (or, at level 1, removing no
 *      intermediate tensor) are dissolved, and so are those the static cost
 *      model says cannot win: library products (matmul, conv2d) with only
 *      layout ops, or with fused work that saves too little beside them
 *      (saves_too_little);
 *   6. a constant whose every use lies in one cluster joins that cluster
 *      (so the code generator sees its value);
 *   7. clusters are named cluster_0, cluster_1, ... by their first op.
 * Every choice depends only on node indices, so the same graph gives the
 * same clusters with the same names.
 */
#include <stdlib.h>
#include <string.h>

#include "cycles.h"
#include "xc.h"
#include "xlac/op.h"

/* The static cost model (step 5): a launch saved is worth this many bytes not moved (about 1 us of
 * per-op dispatch at the 16 GB/s this machine streams, docs/codegen.md); a cluster with a library
 * product must save at least 1/XC_SAVED_RATIO of the bytes its ops move. */
#define XC_LAUNCH_BYTES ((int64_t)16 * 1024)
#define XC_SAVED_RATIO 32

typedef struct mark {
    const xe_graph *g;
    const xc_options *o;
    xc_clustering *res;
    xc_cycles *cyc;
    bool *cand;           /* per node: may join a cluster */
    int *rep;             /* per node: union-find parent (cluster representative) */
    int *size;            /* per representative: number of nodes */
    const char **refused; /* per node: why its last merge was refused, or NULL */
    int *group;           /* per representative: final cluster index, or -1 */
} mark;

void xc_options_default(xc_options *o)
{
    *o = (xc_options){
        .auto_cluster = true,
        .min_cluster_size = 2,
        .fuel = -1,
    };
    for (int d = 0; d < XE_DEV_MAX; d++)
        o->devices[d] = true;
}

void xc_clustering_destroy(xc_clustering *c)
{
    if (!c)
        return;
    for (int i = 0; c->reason && i < c->n_nodes; i++)
        free(c->reason[i]);
    for (int k = 0; c->clusters && k < c->n_clusters; k++) {
        free(c->clusters[k].name);
        free(c->clusters[k].nodes);
    }
    free(c->clusters);
    free(c->reason);
    free(c->cluster);
    free(c);
}

static void mark_free(mark *m)
{
    xc_cycles_destroy(m->cyc);
    free(m->cand);
    free(m->rep);
    free(m->size);
    free(m->refused);
    free(m->group);
}

static xe_code set_reason(mark *m, int i, const char *why, xe_status *st)
{
    free(m->res->reason[i]);
    m->res->reason[i] = NULL;
    m->cand[i] = why == NULL;
    if (why && !(m->res->reason[i] = strdup(why)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    return XE_OK;
}

static int find(mark *m, int i)
{
    while (m->rep[i] != i) {
        m->rep[i] = m->rep[m->rep[i]];
        i = m->rep[i];
    }
    return i;
}

/* ---- 1. candidates -------------------------------------------------------- */

static bool excluded_by_name(const xc_options *o, const xe_node *n)
{
    const char *name = xe_op_name(n->op);
    for (int k = 0; k < o->n_ops_to_exclude; k++)
        if (o->ops_to_exclude[k] && strcmp(o->ops_to_exclude[k], name) == 0)
            return true;
    return false;
}

/* Why node n may not be compiled (NULL: it may). */
static const char *node_reason(const mark *m, const xe_node *n)
{
    const xc_options *o = m->o;
    const xe_op_def *d = xe_op_get(n->op);
    bool jit = n->jit >= 0;
    if (n->op == XE_OP_INPUT)
        return XC_REASON_INPUT;
    if (n->op == XE_OP_CONST)
        return XC_REASON_CONSTANT;
    if (n->op == XE_OP_GET)
        return XC_REASON_TUPLE;
    if (n->body || (d && d->cls == XE_CLASS_COMPOSITE))
        return XC_REASON_COMPOSITE;
    if (!d)
        return XC_REASON_NO_CODEGEN;
    if (d->flags & XE_OPF_COLLECTIVE) /* a border: ranks must run them in one order */
        return XC_REASON_COLLECTIVE;
    if (d->flags & XE_OPF_DATA_DEPENDENT_SHAPE)
        return XC_REASON_DATA_DEPENDENT;
    if (d->flags & XE_OPF_STATEFUL)
        return XC_REASON_STATEFUL;
    if (!jit && !o->auto_cluster)
        return XC_REASON_AUTO_OFF;
    if (!jit && (n->device < 0 || n->device >= XE_DEV_MAX || !o->devices[n->device]))
        return XC_REASON_DEVICE;
    if (!jit && excluded_by_name(o, n))
        return XC_REASON_FLAG;
    const char *why = NULL;
    if (o->supports && !o->supports(m->g, n, n->device, jit, o->user, &why))
        return why && *why ? why : XC_REASON_NO_CODEGEN;
    return NULL;
}

static xe_code jit_error(const mark *m, const xe_node *n, const char *why, xe_status *st)
{
    char where[512];
    xe_node_where(m->g, n, where, sizeof where);
    return xe_fail(st, XE_ERR_GRAPH, "%s: node %s (%s) in a jit block cannot be compiled: %s",
                   where, n->name, xe_op_name(n->op), why);
}

static xe_code find_candidates(mark *m, xe_status *st)
{
    long long used = 0;
    for (int i = 0; i < m->g->n_nodes; i++) {
        const xe_node *n = m->g->nodes[i];
        const char *why = node_reason(m, n);
        bool jit = n->jit >= 0;
        if (jit && why && n->op != XE_OP_CONST && n->op != XE_OP_INPUT)
            return jit_error(m, n, why, st);
        if (!why && !jit && m->o->fuel >= 0 && used++ >= m->o->fuel)
            why = XC_REASON_FUEL;
        if (set_reason(m, i, why, st) != XE_OK)
            return st->code;
    }
    return XE_OK;
}

/* ---- 2. the cycle detector ------------------------------------------------- */

static xe_code build_cycles(mark *m, xe_status *st)
{
    const xe_graph *g = m->g;
    if (!(m->cyc = xc_cycles_new(g->n_nodes)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_node *n = g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int r = xc_cycles_insert_edge(m->cyc, n->inputs[k], i);
            if (r < 0)
                return xe_fail(st, XE_ERR_NOMEM, "out of memory");
            if (r == 0)
                return xe_fail(st, XE_ERR_GRAPH, "%s: node %s: the graph has a cycle", g->file,
                               n->name);
        }
    }
    return XE_OK;
}

/*
 * Contracts the clusters of a and b; 1 merged, 0 refused, -1 OOM. The one
 * with fewer edges is merged into the other (a contraction moves the edges
 * of the node merged away): a 10^4-way fan-in would otherwise move all of
 * its edges again at each of its 10^4 merges.
 */
static int merge(mark *m, int a, int b)
{
    int ra = find(m, a), rb = find(m, b);
    if (ra == rb)
        return 1;
    if (xc_cycles_degree(m->cyc, ra) < xc_cycles_degree(m->cyc, rb)) {
        int t = ra;
        ra = rb, rb = t;
    }
    int r = xc_cycles_contract(m->cyc, ra, rb);
    if (r == 1) {
        m->rep[rb] = ra;
        m->size[ra] += m->size[rb];
    }
    return r;
}

/* ---- 3. jit blocks ---------------------------------------------------------- */

static xe_code contract_jit_blocks(mark *m, xe_status *st)
{
    const xe_graph *g = m->g;
    for (int b = 0; b < g->n_jit; b++) {
        int first = -1;
        for (int i = 0; i < g->n_nodes; i++) {
            const xe_node *n = g->nodes[i];
            if (n->jit != b || !m->cand[i])
                continue;
            if (first < 0) {
                first = i;
                continue;
            }
            int r = merge(m, first, i);
            if (r < 0)
                return xe_fail(st, XE_ERR_NOMEM, "out of memory");
            if (r == 0)
                return jit_error(m, n,
                                 "an op outside the jit block lies between it and the "
                                 "block's other ops (one cluster would create a cycle)",
                                 st);
        }
    }
    return XE_OK;
}

/* ---- 4. auto-clustering ----------------------------------------------------- */

static bool mergeable(const mark *m, int p, int i)
{
    const xe_node *a = m->g->nodes[p], *b = m->g->nodes[i];
    return m->cand[p] && m->cand[i] && a->jit < 0 && b->jit < 0 && a->device == b->device;
}

static xe_code contract_edges(mark *m, xe_status *st)
{
    const xe_graph *g = m->g;
    int max = m->o->max_cluster_size;
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_node *n = g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int p = n->inputs[k];
            if (!mergeable(m, p, i) || find(m, p) == find(m, i))
                continue;
            if (max > 0 && m->size[find(m, p)] + m->size[find(m, i)] > max) {
                m->refused[p] = m->refused[i] = XC_REASON_MAX_SIZE;
                continue;
            }
            int r = merge(m, p, i);
            if (r < 0)
                return xe_fail(st, XE_ERR_NOMEM, "out of memory");
            if (r == 0)
                m->refused[p] = m->refused[i] = XC_REASON_CYCLE;
        }
    }
    return XE_OK;
}

/* ---- 5. dissolving ---------------------------------------------------------- */

/* Does the cluster rooted at root hold a value used only inside it? */
static bool removes_intermediate(mark *m, int root, const int *uses, const bool *outside)
{
    for (int i = 0; i < m->g->n_nodes; i++)
        if (m->cand[i] && find(m, i) == root && uses[i] > 0 && !outside[i])
            return true;
    return false;
}

/* outside[v]: v is a graph output or used by a node of another cluster. */
static bool *outside_uses(mark *m)
{
    const xe_graph *g = m->g;
    bool *outside = calloc((size_t)g->n_nodes + 1, sizeof *outside);
    if (!outside)
        return NULL;
    for (int i = 0; i < g->n_outputs; i++)
        outside[g->outputs[i]] = true;
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_node *n = g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int p = n->inputs[k];
            if (!m->cand[i] || !m->cand[p] || find(m, p) != find(m, i))
                outside[p] = true;
        }
    }
    return outside;
}

/* The cluster rooted at r holds library ops (matmul, conv2d) and, besides those, only layout
 * ops (transpose, reshape): it would run the same library calls as per op, plus a launch. The
 * last such op, or -1 when the cluster holds anything else. */
static int only_library(mark *m, int r)
{
    int lib = -1;
    for (int i = 0; i < m->g->n_nodes; i++) {
        if (!m->cand[i] || find(m, i) != r)
            continue;
        const xe_node *n = m->g->nodes[i];
        const xe_op_def *d = xe_op_get(n->op);
        if (d && (d->cls == XE_CLASS_MATMUL || n->op == XE_OP_CONV2D))
            lib = n->op;
        else if (n->op != XE_OP_TRANSPOSE && n->op != XE_OP_RESHAPE)
            return -1;
    }
    return lib;
}

/* The bytes of node i's value; -1 when a dim is unknown (the fed data decides). */
static int64_t value_bytes(const mark *m, int i)
{
    const xe_type *t = &m->g->nodes[i]->type;
    for (int k = 0; k < t->shape.rank; k++)
        if (t->shape.dims[k] < 0)
            return -1;
    return xe_shape_numel(&t->shape) * (int64_t)xe_dtype_size(t->dtype);
}

/* What the ops of the cluster rooted at r move, per op (inputs read, output written): *traffic;
 * what fusing them saves: *saved (each value used only inside written once and read per use no
 * more, and a launch per op but one). False when a size is not known. */
static bool cluster_bytes(mark *m, int r, const int *uses, const bool *outside, int64_t *traffic,
                          int64_t *saved)
{
    *traffic = 0;
    *saved = (int64_t)(m->size[r] - 1) * XC_LAUNCH_BYTES;
    for (int i = 0; i < m->g->n_nodes; i++) {
        if (!m->cand[i] || find(m, i) != r)
            continue;
        const xe_node *n = m->g->nodes[i];
        int64_t out = value_bytes(m, i);
        if (out < 0)
            return false;
        *traffic += out;
        for (int k = 0; k < n->n_inputs; k++) {
            int64_t in = value_bytes(m, n->inputs[k]);
            if (in < 0)
                return false;
            *traffic += in;
        }
        if (uses[i] > 0 && !outside[i])
            *saved += out * (1 + uses[i]);
    }
    return true;
}

/*
 * The static cost model's second rule: a cluster holding a library product
 * (matmul, conv2d: per op they run the same library call) whose fusion
 * saves less than 1/XC_SAVED_RATIO of the bytes its ops move. Its best
 * case is then within the demotion's margin (2 %, codegen/cache/demote.c),
 * where the compiled program's own costs (conversions at its borders, the
 * launch) decide, and a compile is paid for nothing. Bytes understate a
 * product's time (it is compute-bound), so the rule errs on keeping.
 */
static bool saves_too_little(mark *m, int r, const int *uses, const bool *outside)
{
    bool lib = false;
    for (int i = 0; i < m->g->n_nodes && !lib; i++) {
        const xe_op_def *d = m->cand[i] && find(m, i) == r ? xe_op_get(m->g->nodes[i]->op) : NULL;
        lib = d && (d->cls == XE_CLASS_MATMUL || m->g->nodes[i]->op == XE_OP_CONV2D);
    }
    int64_t traffic = 0, saved = 0;
    return lib && cluster_bytes(m, r, uses, outside, &traffic, &saved) &&
           saved * XC_SAVED_RATIO < traffic;
}

/* Why the cluster rooted at r is dissolved, NULL when it is kept. */
static const char *dissolve_reason(mark *m, int r, const int *uses, const bool *outside)
{
    if (m->g->nodes[r]->jit >= 0)
        return NULL;
    if (m->size[r] < m->o->min_cluster_size || m->size[r] < 1)
        return XC_REASON_TOO_SMALL;
    if (m->o->need_intermediate && !removes_intermediate(m, r, uses, outside))
        return XC_REASON_NO_INTERMEDIATE;
    int lib = only_library(m, r);
    if (lib >= 0)
        return lib == XE_OP_CONV2D ? XC_REASON_CONV_ALONE : XC_REASON_MATMUL_ALONE;
    if (saves_too_little(m, r, uses, outside))
        return XC_REASON_LITTLE_SAVED;
    return NULL;
}

static xe_code dissolve(mark *m, xe_status *st)
{
    const xe_graph *g = m->g;
    int *uses = xe_graph_use_counts(g);
    bool *outside = outside_uses(m);
    xe_code c = uses && outside ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    const char **why = calloc((size_t)g->n_nodes + 1, sizeof *why);
    if (c == XE_OK && !why)
        c = xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int i = 0; c == XE_OK && i < g->n_nodes; i++)
        if (m->cand[i] && find(m, i) == i)
            why[i] = dissolve_reason(m, i, uses, outside);
    for (int i = 0; c == XE_OK && i < g->n_nodes; i++) {
        const char *w = m->cand[i] ? why[find(m, i)] : NULL;
        if (w && strcmp(w, XC_REASON_TOO_SMALL) == 0 && m->size[find(m, i)] == 1 && m->refused[i])
            w = m->refused[i];
        if (w)
            c = set_reason(m, i, w, st);
    }
    free(why);
    free(uses);
    free(outside);
    return c;
}

/* ---- 6. constants ------------------------------------------------------------ */

/* The cluster representative all uses of const node i share, or -1. */
static int const_home(mark *m, int i, const int *uses, const bool *is_output)
{
    const xe_graph *g = m->g;
    if (g->nodes[i]->op != XE_OP_CONST || uses[i] == 0 || is_output[i])
        return -1;
    int home = -1;
    for (int u = i + 1; u < g->n_nodes; u++) {
        const xe_node *n = g->nodes[u];
        for (int k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] != i)
                continue;
            if (!m->cand[u] || (home >= 0 && find(m, u) != home))
                return -1;
            home = find(m, u);
        }
    }
    return home;
}

static xe_code pull_constants(mark *m, xe_status *st)
{
    const xe_graph *g = m->g;
    int *uses = xe_graph_use_counts(g);
    bool *is_output = calloc((size_t)g->n_nodes + 1, sizeof *is_output);
    xe_code c = uses && is_output ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int i = 0; c == XE_OK && i < g->n_outputs; i++)
        is_output[g->outputs[i]] = true;
    for (int i = 0; c == XE_OK && i < g->n_nodes; i++) {
        int home = const_home(m, i, uses, is_output);
        if (home < 0)
            continue;
        if ((c = set_reason(m, i, NULL, st)) == XE_OK) {
            m->rep[i] = home; /* no edge into a constant: contraction is safe */
            m->size[home]++;
        }
    }
    free(uses);
    free(is_output);
    return c;
}

/* ---- 7. naming ---------------------------------------------------------------- */

/* Clusters in the order of their first non-constant op. */
static xe_code number_clusters(mark *m, xe_status *st)
{
    const xe_graph *g = m->g;
    xc_clustering *res = m->res;
    for (int i = 0; i < g->n_nodes; i++) {
        int r = find(m, i);
        if (!m->cand[i] || g->nodes[i]->op == XE_OP_CONST || m->group[r] >= 0)
            continue;
        m->group[r] = res->n_clusters++;
    }
    res->clusters = calloc((size_t)(res->n_clusters ? res->n_clusters : 1), sizeof *res->clusters);
    if (!res->clusters)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int i = 0; i < g->n_nodes; i++) {
        int r = find(m, i);
        if (!m->cand[i] || m->group[r] < 0)
            continue;
        xc_cluster *k = &res->clusters[m->group[r]];
        if (!k->nodes && !(k->nodes = malloc((size_t)m->size[r] * sizeof *k->nodes)))
            return xe_fail(st, XE_ERR_NOMEM, "out of memory");
        k->nodes[k->n_nodes++] = i;
        res->cluster[i] = m->group[r];
    }
    return XE_OK;
}

/* Names, devices and the must-compile mark of each cluster. */
static xe_code describe_clusters(mark *m, xe_status *st)
{
    const xe_graph *g = m->g;
    xc_clustering *res = m->res;
    for (int k = 0; k < res->n_clusters; k++) {
        xc_cluster *c = &res->clusters[k];
        char name[32];
        snprintf(name, sizeof name, "cluster_%d", k);
        if (!(c->name = strdup(name)))
            return xe_fail(st, XE_ERR_NOMEM, "out of memory");
        const xe_node *first = NULL;
        for (int j = 0; j < c->n_nodes && !first; j++)
            if (g->nodes[c->nodes[j]]->op != XE_OP_CONST)
                first = g->nodes[c->nodes[j]];
        c->device = first ? first->device : XE_DEV_CPU;
        c->must_compile = first && first->jit >= 0;
    }
    return XE_OK;
}

/* ---- the pass ------------------------------------------------------------------ */

static xe_code mark_alloc(mark *m, xe_status *st)
{
    int n = m->g->n_nodes;
    size_t cnt = (size_t)n + 1;
    xc_clustering *res = m->res;
    res->n_nodes = n;
    res->cluster = malloc(cnt * sizeof *res->cluster);
    res->reason = calloc(cnt, sizeof *res->reason);
    m->cand = calloc(cnt, sizeof *m->cand);
    m->rep = malloc(cnt * sizeof *m->rep);
    m->size = malloc(cnt * sizeof *m->size);
    m->refused = calloc(cnt, sizeof *m->refused);
    m->group = malloc(cnt * sizeof *m->group);
    if (!res->cluster || !res->reason || !m->cand || !m->rep || !m->size || !m->refused ||
        !m->group)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        res->cluster[i] = -1;
        m->rep[i] = i;
        m->size[i] = 1;
        m->group[i] = -1;
    }
    return XE_OK;
}

xc_clustering *xc_mark_for_compilation(const xe_graph *g, const xc_options *o, xe_status *st)
{
    xc_options dflt;
    if (!o) {
        xc_options_default(&dflt);
        o = &dflt;
    }
    mark m = {.g = g, .o = o, .res = calloc(1, sizeof *m.res)};
    if (!m.res) {
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    xe_code c = mark_alloc(&m, st);
    if (c == XE_OK)
        c = find_candidates(&m, st); /* 1. */
    if (c == XE_OK)
        c = build_cycles(&m, st); /* 2. */
    if (c == XE_OK)
        c = contract_jit_blocks(&m, st); /* 3. */
    if (c == XE_OK)
        c = contract_edges(&m, st); /* 4. */
    if (c == XE_OK)
        c = dissolve(&m, st); /* 5. */
    if (c == XE_OK)
        c = pull_constants(&m, st); /* 6. */
    if (c == XE_OK && (c = number_clusters(&m, st)) == XE_OK)
        c = describe_clusters(&m, st); /* 7. */
    mark_free(&m);
    if (c != XE_OK) {
        xc_clustering_destroy(m.res);
        return NULL;
    }
    return m.res;
}
