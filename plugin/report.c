/*
 * What the plugin tells a person about a run, beyond --stats:
 *   - the trace (XLAC_FLAGS=--trace=FILE.json): every launch is a slice with
 *     the cluster, its signature, hit or miss and the ops inside; a launch
 *     that runs per op holds a "fallback" slice with the reason;
 *   - the summary file (--summary=FILE.json), written at exit: each
 *     clustered graph's summary (nodes left out, by reason) and per cluster
 *     launches, cache hits, compile ms and mean launch time, and the share
 *     of the run's time spent in clusters, per-op kernels and compiling;
 *   - the log (log.c): XLAC_LOG's level, and the progress line on a
 *     terminal while clusters compile (progress.c), nothing of it when
 *     stderr is not a terminal.
 * Launch times are taken only while a trace or a summary is on: with both
 * off a launch pays one branch.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xlac/session.h"
#include "xlac/trace.h"
#include "xlac/text.h"
#include "xlac_plugin.h"
#include "xlac/vec.h"

/* ---- setup ------------------------------------------------------------------------ */

xe_code xlac_report_setup(xlac_state *s, xe_status *st)
{
    xlac_log_set(s->flags.log_level, NULL);
    s->flags.xg.log = xlac_log_text;
    if (isatty(STDERR_FILENO)) { /* progress.c */
        s->flags.xg.on_compile = xlac_progress_compile;
        s->flags.xg.on_compile_user = s;
    }
    if (s->flags.summary_path)
        xe_trace_totals_on();
    if (s->tracing || !s->flags.trace_path)
        return XE_OK;
    if (!(s->tracing = strdup(s->flags.trace_path)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory starting a trace");
    if (xe_trace_start(s->tracing, st) != XE_OK) {
        free(s->tracing);
        s->tracing = NULL;
        return xe_status_prefix(st, "XLAC_FLAGS: --trace: ");
    }
    xe_trace_set_family(s->tracing, s->family_start);
    return XE_OK;
}

/* ---- the clustering ------------------------------------------------------------- */

void xlac_report_graph(xlac_state *s, const xe_graph *g, const xc_clustering *c, int id,
                       const char *owner)
{
    if (!s->flags.summary_path)
        return;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    xc_write_summary_json(f, g, c, id, owner);
    if (fclose(f) != 0) {
        free(text);
        return;
    }
    pthread_mutex_lock(&s->report_lock);
    char **grown = XE_VEC_GROW(s->graphs, s->cap_graphs, s->n_graphs + 1, 8);
    if (grown) {
        s->graphs = grown;
        s->graphs[s->n_graphs++] = text;
        text = NULL;
    }
    pthread_mutex_unlock(&s->report_lock);
    free(text);
}

/* ---- launches ----------------------------------------------------------------------- */

/* Under the lock: the report of cluster name, created on first use; NULL when out of memory. */
static xlac_cluster_report *report_get(xlac_state *s, const char *name, int ops)
{
    for (int i = 0; i < s->n_reports; i++)
        if (strcmp(s->reports[i].name, name) == 0)
            return &s->reports[i];
    xlac_cluster_report *grown = XE_VEC_GROW(s->reports, s->cap_reports, s->n_reports + 1, 8);
    if (!grown)
        return NULL;
    s->reports = grown;
    xlac_cluster_report *r = &s->reports[s->n_reports];
    *r = (xlac_cluster_report){.name = strdup(name), .ops = ops};
    if (!r->name)
        return NULL;
    s->n_reports++;
    return r;
}

static int body_ops(const xe_graph *body)
{
    return body->n_nodes - body->n_inputs;
}

static void count_launch(xlac_state *s, const xe_node *n, const char *name,
                         const xlac_launch_info *li, double us)
{
    pthread_mutex_lock(&s->report_lock);
    xlac_cluster_report *r = report_get(s, name, body_ops(n->body));
    if (r) {
        r->launches++;
        r->launch_us += us;
        r->compile_us += li->info.compile_ms * 1e3;
        r->compiled += li->info.compiled;
        r->fallbacks += !li->ran;
        if (li->ran)
            r->ran_us += us - li->info.compile_ms * 1e3;
        if (li->info.hit && li->ran) {
            r->hits++;
            r->hit_us += us;
        }
    }
    pthread_mutex_unlock(&s->report_lock);
}

/* The ops inside, "t:mul,u:add", escaped for JSON, into buf[len]. */
static void ops_inside(const xe_graph *body, char *buf, size_t len)
{
    xe_text t = {0};
    for (int i = 0; i < body->n_nodes; i++)
        if (body->nodes[i]->op != XE_OP_INPUT)
            xe_text_printf(&t, "%s%s:%s", t.len ? "," : "", body->nodes[i]->name,
                           xe_node_op_name(body->nodes[i]));
    xe_trace_json_escape(t.buf ? t.buf : "", buf, len);
    xe_text_free(&t);
}

static const char *cache_word(const xlac_launch_info *li)
{
    if (li->info.hit && li->ran)
        return "hit";
    return li->info.compiled ? "miss: compiled" : "miss: ran per op";
}

static void trace_launch(const xe_node *n, const char *name, const xlac_launch_info *li, double t1)
{
    char ename[256], sig[400], ops[2048], why[256], args[3200];
    xe_trace_json_escape(name, ename, sizeof ename);
    xe_trace_json_escape(li->info.signature[0] ? li->info.signature
                                               : xe_node_attr_string(n, "@fingerprint", ""),
                         sig, sizeof sig);
    ops_inside(n->body, ops, sizeof ops);
    xe_trace_json_escape(li->why ? li->why : "", why, sizeof why);
    snprintf(args, sizeof args,
             "\"cluster\":\"%s\",\"signature\":\"%s\",\"cache\":\"%s\",\"compile_ms\":%.3f,\"ops\":"
             "\"%s\"%s%s%s",
             ename, sig, cache_word(li), li->info.compile_ms, ops,
             li->ran ? "" : ",\"fallback\":\"", li->ran ? "" : why, li->ran ? "" : "\"");
    xe_trace_slice(name, "cluster launch", li->t0, t1 - li->t0, args);
    double gs, gd;
    if (li->gpu &&
        xe_device_timer_read(li->gpu, &gs, &gd)) /* the compiled kernels, on the stream's track */
        xe_trace_slice_gpu(0, name, "cluster kernels", gs, gd, args);
    if (!li->ran) {
        snprintf(args, sizeof args, "\"cluster\":\"%s\",\"reason\":\"%s\"", ename, why);
        char slice[300];
        snprintf(slice, sizeof slice, "fallback %s", name);
        xe_trace_slice(slice, "fallback", li->t_fallback, t1 - li->t_fallback, args);
    }
}

void xlac_report_launch(xlac_state *s, const xe_node *n, const char *name,
                        const xlac_launch_info *li)
{
    double t1 = xe_now_us();
    if (xe_trace_on())
        trace_launch(n, name, li, t1);
    if (s->flags.summary_path)
        count_launch(s, n, name, li, t1 - li->t0);
}
