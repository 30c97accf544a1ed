/*
 * The clustering of a large graph as one picture a person can read: one
 * box per cluster (its device, its op count and its ops by kind), one grey
 * box per reason for the ops left out (how many, and of which kinds), the
 * graph's inputs and outputs as two ellipses, and one arrow between two
 * boxes where tensors flow, labelled with how many. The per-op picture
 * (xc_dot_string, dump.c) has a box per op and becomes unreadable past a
 * few hundred; this one has a box per decision.
 */
#include <stdlib.h>

#include "hist.h"
#include "xc.h"
#include "xlac/escape.h"
#include "xlac/op.h"
#include "xlac/text.h"

#define OPS_PER_LINE 4 /* op kinds on one line of a box's label */

typedef struct groups {
    int n_clusters;
    xc_hist reasons; /* the distinct reasons of the ops left out, sorted */
    int *of;         /* per node: its box, or -1 for a graph input */
} groups;

static bool is_left_out(const xc_clustering *c, int i)
{
    return i >= c->n_nodes || c->cluster[i] < 0;
}

static const char *reason_at(const xc_clustering *c, int i)
{
    return i < c->n_nodes && c->reason[i] ? c->reason[i] : "unknown";
}

/* Boxes 0..n_clusters-1 are the clusters, then one per reason. */
static bool groups_make(groups *gr, const xe_graph *g, const xc_clustering *c)
{
    gr->n_clusters = c->n_clusters;
    gr->of = malloc((size_t)(g->n_nodes > 0 ? g->n_nodes : 1) * sizeof *gr->of);
    if (!xc_hist_init(&gr->reasons, g->n_nodes) || !gr->of)
        return false;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->op != XE_OP_INPUT && is_left_out(c, i))
            xc_hist_add(&gr->reasons, reason_at(c, i));
    for (int i = 0; i < g->n_nodes; i++)
        gr->of[i] = g->nodes[i]->op == XE_OP_INPUT ? -1
                    : !is_left_out(c, i)
                        ? c->cluster[i]
                        : gr->n_clusters + xc_hist_find(&gr->reasons, reason_at(c, i));
    return true;
}

static void groups_free(groups *gr)
{
    xc_hist_free(&gr->reasons);
    free(gr->of);
}

/* "matmul (3), add (4)" over the nodes of box `box`, sorted by name, OPS_PER_LINE a line. */
static bool print_op_kinds(xe_text *b, const xe_graph *g, const groups *gr, int box, int *count)
{
    xc_hist kinds;
    if (!xc_hist_init(&kinds, g->n_nodes)) {
        xc_hist_free(&kinds);
        return false;
    }
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (gr->of[i] == box) {
            xc_hist_add(&kinds, xe_node_op_name(g->nodes[i]));
            n++;
        }
    for (int k = 0; k < kinds.n; k++) {
        xe_text_printf(b, "%s", k == 0 ? "\\n" : k % OPS_PER_LINE ? ", " : ",\\n");
        xe_esc_dot(b, kinds.keys[k]);
        xe_text_printf(b, " (%d)", kinds.counts[k]);
    }
    xc_hist_free(&kinds);
    *count = n;
    return true;
}

static bool print_boxes(xe_text *b, const xe_graph *g, const xc_clustering *c, const groups *gr)
{
    for (int k = 0; k < gr->n_clusters + gr->reasons.n; k++) {
        const bool is_cluster = k < gr->n_clusters;
        xe_text b_ops = {0};
        int n = 0;
        if (!print_op_kinds(&b_ops, g, gr, k, &n)) {
            xe_text_free(&b_ops);
            return false;
        }
        xe_text_printf(b, "  g%d [label=\"", k);
        if (is_cluster) {
            const xc_cluster *cl = &c->clusters[k];
            xe_esc_dot(b, cl->name);
            xe_text_printf(b, "\\n%d op%s on %s%s", n, n == 1 ? "" : "s",
                           xc_xla_device_name(cl->device),
                           cl->must_compile ? ", must compile" : "");
        } else {
            xe_text_printf(b, "left out: ");
            xe_esc_dot(b, gr->reasons.keys[k - gr->n_clusters]);
            xe_text_printf(b, "\\n%d op%s", n, n == 1 ? "" : "s");
        }
        char *ops = xe_text_take(&b_ops);
        xe_text_printf(b, "%s\"%s];\n", ops ? ops : "",
                       is_cluster ? ", fillcolor=\"#cfe2ff\", color=\"#4a6fa5\""
                                  : ", fillcolor=\"#dddddd\", fontcolor=\"#555555\"");
        free(ops);
    }
    return true;
}

/* The arrows: tensors from box to box (a node's inputs, then the graph's outputs). */
static bool print_flows(xe_text *b, const xe_graph *g, const groups *gr)
{
    const int n_boxes = gr->n_clusters + gr->reasons.n, in = n_boxes, out = n_boxes + 1;
    const size_t side = (size_t)n_boxes + 2;
    int *flows = calloc(side * side, sizeof *flows);
    if (!flows)
        return false;
    for (int i = 0; i < g->n_nodes; i++) {
        if (gr->of[i] < 0)
            continue;
        for (int k = 0; k < g->nodes[i]->n_inputs; k++) {
            int p = g->nodes[i]->inputs[k], from = gr->of[p] < 0 ? in : gr->of[p];
            if (from != gr->of[i])
                flows[(size_t)from * side + (size_t)gr->of[i]]++;
        }
    }
    for (int k = 0; k < g->n_outputs; k++) {
        int o = g->outputs[k];
        flows[(size_t)(gr->of[o] < 0 ? in : gr->of[o]) * side + (size_t)out]++;
    }
    for (size_t s = 0; s < side; s++)
        for (size_t d = 0; d < side; d++)
            if (flows[s * side + d])
                xe_text_printf(b, "  %s%zu -> %s%zu [label=\"%d\"];\n",
                               s < (size_t)n_boxes ? "g" : "io", s,
                               d < (size_t)n_boxes ? "g" : "io", d, flows[s * side + d]);
    free(flows);
    return true;
}

char *xc_cluster_dot_string(const xe_graph *g, const xc_clustering *c, xe_status *st)
{
    groups gr = {0};
    xe_text b = {0};
    bool ok = groups_make(&gr, g, c);
    int n_in = 0, n_boxes = gr.n_clusters + gr.reasons.n;
    for (int i = 0; ok && i < g->n_nodes; i++)
        n_in += g->nodes[i]->op == XE_OP_INPUT;
    if (ok) {
        xe_text_printf(&b, "digraph xlac_clusters {\n  rankdir=TB;\n");
        xe_text_printf(&b, "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n"
                           "  edge [fontname=\"Helvetica\", fontsize=10];\n");
        xe_text_printf(&b,
                       "  io%d [label=\"graph inputs (%d)\", shape=ellipse, fillcolor=white];\n",
                       n_boxes, n_in);
        xe_text_printf(&b,
                       "  io%d [label=\"graph outputs (%d)\", shape=ellipse, fillcolor=white];\n",
                       n_boxes + 1, g->n_outputs);
        ok = print_boxes(&b, g, c, &gr) && print_flows(&b, g, &gr);
        xe_text_printf(&b, "}\n");
    }
    groups_free(&gr);
    char *text = ok ? xe_text_take(&b) : NULL;
    if (!ok)
        xe_text_free(&b);
    if (!text)
        xe_fail(st, XE_ERR_NOMEM, "out of memory writing the clusters' .dot graph");
    return text;
}
