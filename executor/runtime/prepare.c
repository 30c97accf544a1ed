/*
 * Preparing a graph to run: shapes inferred, ops placed on devices, then
 * the graph passes that plugins registered (the xlac clustering pass among
 * them). A session prepares its graph when it is made, specialise.c each
 * graph it builds for an input-shape signature; both call this file,
 * which calls neither.
 */
#include <stdio.h>
#include <string.h>

#include "exec_impl.h"
#include "xlac/plugin.h"

#define XE_MAX_PASSES 16

typedef struct pass {
    char name[64];
    xe_graph_pass_fn fn;
    void *user;
} pass;

static pass passes[XE_MAX_PASSES];
static int n_passes;

xe_code xe_register_graph_pass(const char *name, xe_graph_pass_fn fn, void *user, xe_status *st)
{
    if (!name || !fn)
        return xe_fail(st, XE_ERR_USAGE, "xe_register_graph_pass: name and function are required");
    if (n_passes == XE_MAX_PASSES)
        return xe_fail(st, XE_ERR_USAGE, "xe_register_graph_pass: at most %d passes",
                       XE_MAX_PASSES);
    passes[n_passes] = (pass){.fn = fn, .user = user};
    snprintf(passes[n_passes].name, sizeof passes[n_passes].name, "%s", name);
    n_passes++;
    return XE_OK;
}

/*
 * One note when a dump names the plugin's launch op (xlac_launch) and no
 * plugin registered it. A user's own composite (`f = block(x) {...}`) is
 * an ordinary `call` and gets no note.
 */
static void note_unregistered(const xe_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const char *op = xe_node_attr_string(g->nodes[i], "@op", NULL);
        if (g->nodes[i]->op == XE_OP_CALL && op && !strncmp(op, "xlac_", 5)) {
            fprintf(stderr,
                    "xlac: note: op '%s' is not registered (is libxlac.so loaded?); "
                    "running its body op by op\n",
                    op);
            return;
        }
    }
}

int xe_graph_pass_count(void)
{
    return n_passes;
}

static xe_code run_passes(xe_session *s, xe_graph **g, xe_status *st)
{
    xe_pass_ctx ctx = {
        .session_id = s->id, .place_mode = s->opt.place, .plugin_config = s->opt.plugin_config};
    for (int i = 0; i < n_passes && !s->opt.no_passes; i++) {
        /* an error in the user's graph names its line already; others name the pass */
        if (passes[i].fn(g, &ctx, passes[i].user, st) != XE_OK)
            return st->code == XE_ERR_GRAPH
                       ? st->code
                       : xe_status_prefix(st, "graph pass %s: ", passes[i].name);
    }
    return XE_OK;
}

/* g on the device the options name, else by the place mode. */
static xe_code place_session(const xe_session *s, xe_graph *g, xe_status *st)
{
    if (!xe_device_is_host(s->opt.device))
        return xe_graph_place_on(g, s->opt.device, st);
    return xe_graph_place(g, s->opt.place, st);
}

xe_code xe_session_prepare(xe_session *s, xe_graph **g, xe_status *st)
{
    if (xe_graph_infer(*g, st) != XE_OK || place_session(s, *g, st) != XE_OK ||
        run_passes(s, g, st) != XE_OK)
        return st->code;
    note_unregistered(*g);
    return XE_OK;
}
