/*
 * What the user sees of the clustering: the graph annotated with
 * @cluster / @reason (a valid .xg once written), the same picture as
 * Graphviz (clusters as filled subgraphs, unclustered ops grey with their
 * reason, edges labelled with tensor types), and the summary (counts, an
 * op histogram per cluster, unclustered ops by op, and by reason with the
 * name of every node left out for it).
 */
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "xc.h"
#include "xlac/escape.h"
#include "xlac/op.h"
#include "xlac/text.h"

/* ---- annotation -------------------------------------------------------------- */

static xe_code annotate_node(xe_node *n, const xc_clustering *c, int i, xe_status *st)
{
    xe_node_remove_attr(n, "@cluster");
    xe_node_remove_attr(n, "@reason");
    int k = c->cluster[i];
    if (k >= 0) {
        if (xe_node_set_string(n, "@cluster", c->clusters[k].name, st) != XE_OK)
            return st->code;
        return xe_node_set_string(n, "@device", xc_xla_device_name(c->clusters[k].device), st);
    }
    if (c->reason[i])
        return xe_node_set_string(n, "@reason", c->reason[i], st);
    return XE_OK;
}

xe_graph *xc_annotate(const xe_graph *g, const xc_clustering *c, xe_status *st)
{
    xe_graph *a = xe_graph_clone(g, st);
    if (!a)
        return NULL;
    for (int i = 0; i < a->n_nodes && i < c->n_nodes; i++) {
        if (annotate_node(a->nodes[i], c, i, st) != XE_OK) {
            xe_graph_destroy(a);
            return NULL;
        }
    }
    return a;
}

/* ---- Graphviz ------------------------------------------------------------------ */

static const char *const palette[] = {"#cfe2ff", "#d1f2d1", "#ffe5c2",
                                      "#f3d1f4", "#fff3b0", "#c9f1f0"};
#define PALETTE_N ((int)(sizeof palette / sizeof palette[0]))

static bool is_output(const xe_graph *g, int i)
{
    for (int k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] == i)
            return true;
    return false;
}

/* One node statement: name, op, type, and what the clustering says. */
static void dot_node(xe_text *b, const xe_graph *g, const xc_clustering *c, int i,
                     const char *indent)
{
    const xe_node *n = g->nodes[i];
    char type[128] = "";
    if (!n->body)
        xe_type_str(&n->type, type, sizeof type);
    xe_text_printf(b, "%sn%d [label=\"", indent, i);
    xe_esc_dot(b, n->name);
    xe_text_printf(b, "\\n%s",
                   n->body ? xe_node_attr_string(n, "@op", xe_op_name(n->op)) : xe_op_name(n->op));
    if (n->body)
        xe_text_printf(b, "\\n%d ops on %s", n->body->n_nodes - n->body->n_inputs,
                       xe_node_attr_string(n, "@device", xe_device_name(n->device)));
    else
        xe_text_printf(b, "\\n%s", type);
    const char *why = c && i < c->n_nodes && c->cluster[i] < 0 ? c->reason[i] : NULL;
    if (why) {
        xe_text_printf(b, "\\n(");
        xe_esc_dot(b, why);
        xe_text_printf(b, ")");
    }
    xe_text_printf(b, "\"");
    if (n->op == XE_OP_INPUT)
        xe_text_printf(b, ", shape=ellipse");
    if (is_output(g, i))
        xe_text_printf(b, ", peripheries=2");
    if (why)
        xe_text_printf(b, ", fillcolor=\"#dddddd\", fontcolor=\"#555555\"");
    else if (n->body)
        xe_text_printf(b, ", fillcolor=\"%s\"", palette[i % PALETTE_N]);
    xe_text_printf(b, "];\n");
}

static void dot_cluster(xe_text *b, const xe_graph *g, const xc_clustering *c, int k)
{
    const xc_cluster *cl = &c->clusters[k];
    xe_text_printf(b, "  subgraph cluster_%d {\n", k);
    xe_text_printf(b, "    label=\"");
    xe_esc_dot(b, cl->name);
    xe_text_printf(b, " (%s, %d ops%s)\";\n", xc_xla_device_name(cl->device), cl->n_nodes,
                   cl->must_compile ? ", must compile" : "");
    xe_text_printf(b, "    style=filled; color=\"#4a6fa5\"; fillcolor=\"%s\";\n",
                   palette[k % PALETTE_N]);
    for (int j = 0; j < cl->n_nodes; j++)
        dot_node(b, g, c, cl->nodes[j], "    ");
    xe_text_printf(b, "  }\n");
}

static void dot_edges(xe_text *b, const xe_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_node *n = g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            const xe_node *p = g->nodes[n->inputs[k]];
            char type[128] = "tuple";
            if (!p->body)
                xe_type_str(&p->type, type, sizeof type);
            xe_text_printf(b, "  n%d -> n%d [label=\"%s\"];\n", n->inputs[k], i, type);
        }
    }
}

char *xc_dot_string(const xe_graph *g, const xc_clustering *c, xe_status *st)
{
    xe_text b = {0};
    xe_text_printf(&b, "digraph xlac {\n  rankdir=TB;\n");
    xe_text_printf(&b, "  node [shape=box, style=\"rounded,filled\", fillcolor=white, "
                       "fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", fontsize=10];\n");
    for (int k = 0; c && k < c->n_clusters; k++)
        dot_cluster(&b, g, c, k);
    for (int i = 0; i < g->n_nodes; i++)
        if (!c || i >= c->n_nodes || c->cluster[i] < 0)
            dot_node(&b, g, c, i, "  ");
    dot_edges(&b, g);
    xe_text_printf(&b, "}\n");
    char *text = xe_text_take(&b);
    if (!text)
        xe_fail(st, XE_ERR_NOMEM, "out of memory writing a .dot graph");
    return text;
}

/* ---- the summary ------------------------------------------------------------ */

/* "exp (1), neg (2)": counts in parentheses, apart from names that may end in digits (atan2). */
static void hist_print(FILE *f, const xc_hist *h)
{
    for (int i = 0; i < h->n; i++)
        fprintf(f, "%s%s (%d)", i ? ", " : "", h->keys[i], h->counts[i]);
    fprintf(f, "%s\n", h->n ? "" : "none");
}

static bool left_out(const xe_graph *g, const xc_clustering *c, int i)
{
    return i < c->n_nodes && c->cluster[i] < 0 && g->nodes[i]->op != XE_OP_INPUT;
}

static const char *reason_of(const xc_clustering *c, int i)
{
    return c->reason[i] ? c->reason[i] : "unknown";
}

/* One line per reason: "    REASON (N): name, name" with every node left out for it. */
static void print_reasons(FILE *f, const xe_graph *g, const xc_clustering *c,
                          const xc_hist *by_reason)
{
    for (int k = 0; k < by_reason->n; k++) {
        fprintf(f, "    %s (%d): ", by_reason->keys[k], by_reason->counts[k]);
        int shown = 0;
        for (int i = 0; i < g->n_nodes; i++)
            if (left_out(g, c, i) && strcmp(reason_of(c, i), by_reason->keys[k]) == 0)
                fprintf(f, "%s%s", shown++ ? ", " : "", g->nodes[i]->name);
        fprintf(f, "\n");
    }
}

static void summary_cluster(FILE *f, const xe_graph *g, const xc_cluster *cl)
{
    xc_hist h;
    if (!xc_hist_init(&h, cl->n_nodes)) {
        xc_hist_free(&h);
        fprintf(f, "%s: out of memory\n", cl->name);
        return;
    }
    for (int j = 0; j < cl->n_nodes; j++)
        xc_hist_add(&h, xe_node_op_name(g->nodes[cl->nodes[j]]));
    fprintf(f, "%s: %d ops on %s%s: ", cl->name, cl->n_nodes, xc_xla_device_name(cl->device),
            cl->must_compile ? " (jit block, must compile)" : "");
    hist_print(f, &h);
    xc_hist_free(&h);
}

static void summary_unclustered(FILE *f, const xe_graph *g, const xc_clustering *c)
{
    xc_hist by_op, by_reason;
    bool ok_op = xc_hist_init(&by_op, g->n_nodes), ok_reason = xc_hist_init(&by_reason, g->n_nodes);
    bool ok = ok_op && ok_reason; /* both initialised either way: both are freed below */
    int n = 0;
    for (int i = 0; ok && i < g->n_nodes; i++) {
        if (!left_out(g, c, i))
            continue;
        n++;
        xc_hist_add(&by_op, xe_node_op_name(g->nodes[i]));
        xc_hist_add(&by_reason, reason_of(c, i));
    }
    if (ok) {
        fprintf(f, "ops not clustered: %d\n  by op: ", n);
        hist_print(f, &by_op);
        fprintf(f, "  by reason:%s\n", by_reason.n ? "" : " none");
        print_reasons(f, g, c, &by_reason);
    } else {
        fprintf(f, "ops not clustered: out of memory\n");
    }
    xc_hist_free(&by_op);
    xc_hist_free(&by_reason);
}

void xc_write_summary(FILE *f, const xe_graph *g, const xc_clustering *c, int session_id)
{
    int ops = 0, clustered = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i]->op == XE_OP_INPUT)
            continue;
        ops++;
        clustered += i < c->n_nodes && c->cluster[i] >= 0;
    }
    fprintf(f, "xlac clustering summary (session %d, %s)\n", session_id, g->file);
    fprintf(f, "ops in the graph: %d (graph inputs not counted)\n", ops);
    fprintf(f, "clusters built: %d\n", c->n_clusters);
    fprintf(f, "ops clustered: %d\n", clustered);
    for (int k = 0; k < c->n_clusters; k++)
        summary_cluster(f, g, &c->clusters[k]);
    summary_unclustered(f, g, c);
}

/* ---- the summary as JSON (for --summary=FILE.json) --------------------------- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* "left_out": {"REASON": ["name", ...], ...}, reasons sorted. */
static void json_left_out(FILE *f, const xe_graph *g, const xc_clustering *c)
{
    xc_hist h;
    bool ok = xc_hist_init(&h, g->n_nodes);
    for (int i = 0; ok && i < g->n_nodes; i++)
        if (left_out(g, c, i))
            xc_hist_add(&h, reason_of(c, i));
    fputs("\"left_out\":{", f);
    for (int k = 0; ok && k < h.n; k++) {
        fputs(k ? "," : "", f);
        json_str(f, h.keys[k]);
        fputs(":[", f);
        int shown = 0;
        for (int i = 0; i < g->n_nodes; i++) {
            if (left_out(g, c, i) && strcmp(reason_of(c, i), h.keys[k]) == 0) {
                fputs(shown++ ? "," : "", f);
                json_str(f, g->nodes[i]->name);
            }
        }
        fputs("]", f);
    }
    fputs("}", f);
    xc_hist_free(&h);
}

void xc_write_summary_json(FILE *f, const xe_graph *g, const xc_clustering *c, int session_id,
                           const char *owner)
{
    int ops = 0;
    for (int i = 0; i < g->n_nodes; i++)
        ops += g->nodes[i]->op != XE_OP_INPUT;
    fprintf(f, "{\"session\":%d,\"file\":", session_id);
    json_str(f, g->file ? g->file : "");
    fputs(",\"composite\":", f);
    if (owner)
        json_str(f, owner);
    else
        fputs("null", f);
    fprintf(f, ",\"ops\":%d,\"clusters\":[", ops);
    for (int k = 0; k < c->n_clusters; k++) {
        const xc_cluster *cl = &c->clusters[k];
        fputs(k ? ",{\"name\":" : "{\"name\":", f);
        json_str(f, cl->name);
        fprintf(f, ",\"ops\":%d,\"device\":\"%s\",\"must_compile\":%s}", cl->n_nodes,
                xc_xla_device_name(cl->device), cl->must_compile ? "true" : "false");
    }
    fputs("],", f);
    json_left_out(f, g, c);
    fputs("}", f);
}
