/*
 * The xlac graph pass, run by the executor on every session's graph after
 * inference and placement. With XLAC_AUTO_JIT=0 and no jit block it does
 * nothing at all. Otherwise:
 *   1. clustering options from the flags (the level's predicate);
 *   2. mark for compilation (a jit block that cannot compile fails here);
 *   3. encapsulation: each cluster becomes one xlac_launch node;
 *   4. with --clustering_debug: dumps (.xg and .dot before marking, marked,
 *      after encapsulation) and the summary, to files and stderr.
 * Also the registration of the op and the pass (xlac_plugin_install), both
 * with the plugin's state (xlac_state) as their user data.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "xlac/io.h"
#include "xlac/op.h"
#include "xlac/text.h"
#include "xlac/trace.h"
#include "xlac_plugin.h"

/* ---- the predicate ---------------------------------------------------------- */

static bool fusible_at_level1(int op)
{
    if (xe_op_is_elementwise(op))
        return true;
    switch (xe_op_get(op)->cls) {
    case XE_CLASS_REDUCE:
    case XE_CLASS_ARGMAX:
    case XE_CLASS_SHAPE:
    case XE_CLASS_SOFTMAX:
        return true;
    default:
        return false;
    }
}

bool xlac_supports(const xe_graph *g, const xe_node *n, xe_device dev, bool must_compile,
                   void *user, const char **reason)
{
    const xlac_flags *f = user;
    const xe_op_def *d = xe_op_get(n->op);
    if (!d) {
        *reason = XC_REASON_NO_CODEGEN;
        return false;
    }
    if (!must_compile && f->auto_jit == 1 && !fusible_at_level1(n->op)) {
        *reason = XC_REASON_LEVEL1;
        return false;
    }
    xg_options o = f->xg;
    o.level2 = must_compile || f->auto_jit >= 2;
    if (xg_supports(g, n, dev, &o))
        return true;
    *reason = xg_unsupported_reason(g, n, dev, &o);
    return false;
}

void xlac_cluster_options(const xlac_flags *f, xc_options *o)
{
    xc_options_default(o);
    o->auto_cluster = f->auto_jit > 0;
    o->min_cluster_size = f->min_cluster_size;
    o->max_cluster_size = f->max_cluster_size;
    for (int d = 0; d < XE_DEV_MAX; d++)
        o->devices[d] = f->devices[d];
    o->ops_to_exclude = (const char *const *)f->ops_to_exclude;
    o->n_ops_to_exclude = f->n_ops_to_exclude;
    o->fuel = f->clustering_fuel;
    o->need_intermediate = f->auto_jit == 1;
    o->supports = xlac_supports;
    o->user = (void *)f;
}

/* ---- dumps -------------------------------------------------------------------- */

/* A graph dump that cannot be written warns (naming the file); the run goes on without it. */
static void dump_failed(xe_status *st)
{
    xlac_log(XG_LOG_WARNING, "graph dump not written (%s); the run goes on", st->msg);
    xe_status_clear(st);
}

static xe_code write_text(const char *path, const char *text, xe_status *st)
{
    FILE *f = xe_fcreate(path, st);
    if (!f)
        return st->code;
    bool ok = fputs(text, f) >= 0;
    ok = fclose(f) == 0 && ok;
    return ok ? XE_OK : xe_fail(st, XE_ERR_IO, "cannot write %s", path);
}

/* DIR/STAGE_N.xg and DIR/STAGE_N.dot of g (c: the clustering, or NULL); with c, also
 * DIR/STAGE_N.clusters.dot, the picture of its decisions. */
static xe_code dump_stage(const char *dir, const char *stage, int id, const xe_graph *g,
                          const xc_clustering *c, xe_status *st)
{
    char path[4096];
    xe_graph *annotated = c ? xc_annotate(g, c, st) : NULL;
    if (c && !annotated)
        return st->code;
    snprintf(path, sizeof path, "%s/%s_%d.xg", dir, stage, id);
    xe_code code = xe_write_file(annotated ? annotated : g, path, st);
    xe_graph_destroy(annotated);
    char *dot = code == XE_OK ? xc_dot_string(g, c, st) : NULL;
    if (code == XE_OK && !dot)
        code = st->code;
    if (dot) {
        snprintf(path, sizeof path, "%s/%s_%d.dot", dir, stage, id);
        code = write_text(path, dot, st);
        free(dot);
    }
    char *boxes = code == XE_OK && c ? xc_cluster_dot_string(g, c, st) : NULL;
    if (code == XE_OK && c && !boxes)
        code = st->code;
    if (boxes) { /* beside the per-op picture: one box per cluster and per reason */
        snprintf(path, sizeof path, "%s/%s_%d.clusters.dot", dir, stage, id);
        code = write_text(path, boxes, st);
        free(boxes);
    }
    return code;
}

/* The summary on stderr and, when the dump folder is there (dir_ok), in it. */
static xe_code dump_summary(xlac_state *s, const xe_graph *g, const xc_clustering *c, int id,
                            const char *owner, bool dir_ok, xe_status *st)
{
    const char *dir = s->flags.dump_graph_prefix;
    if (owner)
        fprintf(stderr, "xlac: the body of composite node %s:\n", owner);
    xc_write_summary(stderr, g, c, id);
    if (owner)
        return XE_OK; /* a composite's body: its summary goes to stderr only */
    if (dir && !dir_ok)
        return XE_OK; /* already warned */
    if (!dir) {
        if (!atomic_exchange(&s->warned_no_prefix, true))
            fprintf(stderr, "xlac: note: --clustering_debug without XLAC_DUMP_GRAPH_PREFIX=DIR: "
                            "no graph dumps written\n");
        return XE_OK;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/clustering_summary_%d.txt", dir, id);
    FILE *f = xe_fcreate(path, st);
    if (!f)
        return st->code;
    xc_write_summary(f, g, c, id);
    return fclose(f) == 0 ? XE_OK : xe_fail(st, XE_ERR_IO, "cannot write %s", path);
}

/* ---- the pass ------------------------------------------------------------------ */

/* A composite's body gets clusters named after it: "f.cluster_0" (names stay unique in a process).
 */
static xe_code prefix_clusters(xc_clustering *c, const char *owner, xe_status *st)
{
    for (int k = 0; owner && k < c->n_clusters; k++) {
        xe_text t = {0};
        xe_text_printf(&t, "%s.%s", owner, c->clusters[k].name);
        char *name = xe_text_take(&t);
        if (!name)
            return xe_fail(st, XE_ERR_NOMEM, "out of memory");
        free(c->clusters[k].name);
        c->clusters[k].name = name;
    }
    return XE_OK;
}

/*
 * Steps 2-4 on g; *out receives the encapsulated graph (NULL: unchanged).
 * owner: the composite node whose body g is (no dumps then), NULL for the session's graph.
 */
static xe_code cluster_graph(xlac_state *s, const xlac_flags *f, const xe_graph *g, int id,
                             const char *owner, xe_graph **out, xe_status *st)
{
    const char *dir = s->flags.dump_graph_prefix;
    bool dumps = f->clustering_debug && dir && !owner;
    xc_options o;
    xlac_cluster_options(f, &o); /* 1. */
    if (dumps && xe_mkdirs(dir, 0777, st) != XE_OK) {
        dump_failed(st);
        dumps = false;
    }
    if (dumps && dump_stage(dir, "before_mark_for_compilation", id, g, NULL, st) != XE_OK)
        dump_failed(st);
    xc_clustering *c = xc_mark_for_compilation(g, &o, st); /* 2. */
    if (!c)
        return st->code;
    xe_code code = prefix_clusters(c, owner, st);
    if (c->n_clusters && !(*out = xc_encapsulate(g, c, s->launch_op, st))) /* 3. */
        code = st->code;
    if (code == XE_OK && dumps &&
        dump_stage(dir, "mark_for_compilation", id, g, c, st) != XE_OK) /* 4. */
        dump_failed(st);
    if (code == XE_OK && dumps &&
        dump_stage(dir, "after_encapsulation", id, *out ? *out : g, NULL, st) != XE_OK)
        dump_failed(st);
    if (code == XE_OK && f->clustering_debug &&
        dump_summary(s, g, c, id, owner, dumps, st) != XE_OK)
        dump_failed(st);
    if (code == XE_OK)
        xlac_report_graph(s, g, c, id, owner);
    xc_clustering_destroy(c);
    return code;
}

/*
 * The bodies of composite nodes that are not launches (`f = block(x) {...}`,
 * run by the executor op by op) are clustered on their own, innermost
 * first; their clusters are named after the node ("f.cluster_0").
 */
static xe_code cluster_bodies(xlac_state *s, const xlac_flags *f, xe_graph *g, int id,
                              xe_status *st)
{
    for (int i = 0; i < g->n_nodes; i++) {
        xe_node *n = g->nodes[i];
        if (n->op != XE_OP_CALL || !n->body)
            continue;
        xe_graph *nb = NULL;
        if (cluster_bodies(s, f, n->body, id, st) != XE_OK ||
            cluster_graph(s, f, n->body, id, n->name, &nb, st) != XE_OK) {
            xe_graph_destroy(nb);
            return st->code;
        }
        if (nb) {
            xe_graph_destroy(n->body);
            n->body = nb;
        }
    }
    return XE_OK;
}

/*
 * Each launch node carries its body's fingerprint, so a launch does not
 * hash the body again, and the number of the session configuration it was
 * made with (@config, absent for the process's: config.c); every launch
 * node counts as a cluster in --stats (those of a re-run dump too, and
 * those inside composite bodies).
 */
static xe_code stamp_launch_nodes(xlac_state *s, xe_graph *g, int config, xe_status *st)
{
    unsigned long long clusters = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        xe_node *n = g->nodes[i];
        if (n->op == XE_OP_CALL && n->body && stamp_launch_nodes(s, n->body, config, st) != XE_OK)
            return st->code;
        if (n->op != s->launch_op || !n->body)
            continue;
        char fp[40];
        xg_fingerprint(n->body, fp);
        if (xe_node_set_string(n, "@fingerprint", fp, st) != XE_OK)
            return st->code;
        if ((config || xe_node_attr_int(n, "@config", 0)) &&
            xe_node_set_int(n, "@config", config, st) != XE_OK)
            return st->code;
        clusters++;
    }
    atomic_fetch_add(&s->n_clusters, clusters);
    return XE_OK;
}

xe_code xlac_pass(xe_graph **g, const xe_pass_ctx *ctx, void *user, xe_status *st)
{
    xlac_state *s = user;
    if (!s->installed)
        return XE_OK;
    atomic_fetch_add(&s->n_sessions, 1);
    xe_graph *ng = NULL;
    int id = ctx ? ctx->session_id : 0, config = 0;
    if (xlac_config_for(s, ctx ? ctx->plugin_config : NULL, &config, st) != XE_OK)
        return st->code;
    const xlac_flags *f = xlac_config_flags(s, config);
    /* the opposite of dump_summary's note (so the same once-flag) */
    if (s->flags.dump_graph_prefix && !f->clustering_debug && f->auto_jit != 0 &&
        !atomic_exchange(&s->warned_no_prefix, true))
        xlac_log(XG_LOG_WARNING,
                 "XLAC_DUMP_GRAPH_PREFIX is set without --clustering_debug: "
                 "no graph dumps are written (XLAC_FLAGS=--clustering_debug writes them)");
    if ((f->auto_jit != 0 || (*g)->n_jit != 0) &&
        cluster_graph(s, f, *g, id, NULL, &ng, st) != XE_OK) {
        xe_graph_destroy(ng);
        return st->code;
    }
    if (ng) {
        xe_graph_destroy(*g);
        *g = ng;
    }
    if (f->auto_jit != 0 && cluster_bodies(s, f, *g, id, st) != XE_OK)
        return st->code;
    if (stamp_launch_nodes(s, *g, config, st) != XE_OK)
        return st->code;
    return xlac_check_ranks(*g, s->launch_op, st);
}

/* ---- installation ---------------------------------------------------------------- */

static xe_code register_all(xlac_state *s, const char *op_name, const char *pass_name,
                            xe_graph_pass_fn pass, xe_status *st)
{
    if (xe_plugin_abi_version() != XE_PLUGIN_ABI_VERSION)
        return xe_fail(st, XE_ERR_USAGE,
                       "libxlac.so was built for executor plugin ABI %d but the executor has %d",
                       XE_PLUGIN_ABI_VERSION, xe_plugin_abi_version());
    xe_op_def def = {
        .name = op_name,
        .min_inputs = 0,
        .max_inputs = -1,
        .cls = XE_CLASS_COMPOSITE,
        .composite = xlac_launch_run,
        .device_prefix = "XLA_",
        .user = s,
    };
    int op = xe_register_op(&def, st);
    if (op < 0)
        return st->code;
    if (xe_register_graph_pass(pass_name, pass, s, st) != XE_OK)
        return st->code;
    s->launch_op = op;
    return XE_OK;
}

void xlac_state_init(xlac_state *s)
{
    memset(s, 0, sizeof *s);
    s->launch_op = -1;
    pthread_mutex_init(&s->cache_lock, NULL);
    pthread_mutex_init(&s->replay_lock, NULL);
    pthread_mutex_init(&s->report_lock, NULL);
    pthread_mutex_init(&s->config_lock, NULL);
}

xe_code xlac_plugin_install(xlac_state *s, xlac_flags *f, xe_status *st)
{
    return xlac_plugin_install_as(s, f, "xlac_launch", "xlac", xlac_pass, st);
}

xe_code xlac_plugin_install_as(xlac_state *s, xlac_flags *f, const char *op_name,
                               const char *pass_name, xe_graph_pass_fn pass, xe_status *st)
{
    if (s->launch_op < 0 && register_all(s, op_name, pass_name, pass, st) != XE_OK)
        return st->code;
    if (s->installed)
        xlac_flags_free(&s->flags);
    s->flags = *f;
    memset(f, 0, sizeof *f);
    s->installed = true;
    return xlac_report_setup(s, st);
}

void xlac_plugin_shutdown(xlac_state *s)
{
    xlac_progress_stop();
    xlac_launch_shutdown(s);
    xlac_replay_free(s);
    if (s->tracing &&
        !atomic_load(&s->n_sessions)) { /* a wrapper (timeout, bash -c) that ran nothing */
        xe_trace_discard(s->tracing);
    } else if (s->tracing) { /* after the cache: background compiles are in it */
        xe_status st;
        xe_status_clear(&st);
        if (xe_trace_stop(s->tracing, &st) != XE_OK)
            fprintf(stderr, "xlac: error: %s\n", st.msg);
    }
    free(s->tracing);
    s->tracing = NULL;
    xlac_report_free(s);
    xlac_config_free(s);
    if (s->installed)
        xlac_flags_free(&s->flags);
    s->installed = false;
}
