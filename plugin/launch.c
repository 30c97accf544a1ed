/*
 * The xlac_launch op: runs one cluster. Its state (flags, cache, counters)
 * is the plugin's xlac_state, handed over as the op's user data; the
 * flags it heeds are those of the session that made the node (@config). With the
 * code generator on, the compilation cache (created on first use from the flags)
 * looks the cluster up by its signature and runs compiled code; when it
 * answers XG_FALLBACK, or the code generator is off (--codegen=0), the
 * body runs with the executor's own per-op kernels, which gives outputs
 * bit-identical to the plain op-by-op run. Either way every op of the
 * cluster shows in the placement log as XLA_CPU:0 / XLA_GPU:0 with the
 * cluster's name. Counters feed --stats. A per-op run of a cluster is
 * timed and reported to the cache, which demotes a signature whose
 * compiled runs turn out slower (xg_cluster_per_op_time); when the cache
 * asks for it after a compiled run (xg_run_info.probe: nothing ran per
 * op before the compile, as with the default --compile_threshold=1), the
 * body runs per op once more, quietly, its outputs dropped, only to be
 * timed (probe).
 *
 * xlac_launch_run reads as the launch does: look up (or compile) and run
 * compiled code, else fall back to the body per op. Counters, replay
 * dumps (--dump_inputs), timers and reports are observers it calls at
 * fixed points (observe_*), never woven into those steps.
 */
#include <stdlib.h>
#include <string.h>

#include "xlac/session.h"
#include "xlac/trace.h"
#include "xlac_plugin.h"

/* The state's cache, NULL when codegen is off (for this launch's configuration f) or unavailable.
 */
static xg_cache *get_cache(xlac_state *s, const xlac_flags *f)
{
    if (!s->installed || !f->codegen)
        return NULL;
    pthread_mutex_lock(&s->cache_lock);
    if (!s->cache && !s->cache_failed) {
        xe_status st;
        xe_status_clear(&st);
        if (!(s->cache = xg_cache_new(&s->flags.xg, &st))) {
            s->cache_failed = true;
            xlac_log(XG_LOG_WARNING, "no compilation cache (%s); clusters run per op", st.msg);
        }
    }
    xg_cache *c = s->cache;
    pthread_mutex_unlock(&s->cache_lock);
    return c;
}

/* Placement lines for a body that ran as compiled code. */
static void log_compiled(const xe_kernel_args *a, const char *name)
{
    const xe_graph *body = a->node->body;
    for (int i = 0; i < body->n_nodes; i++)
        xe_exec_log_placement(a->exec, body->nodes[i], "XLA_", name);
}

/* One launch: what its steps read, and what its observers are told. */
typedef struct launch {
    const xe_kernel_args *a;
    xlac_state *s;
    const xe_node *n;
    const char *name;        /* the cluster's */
    const char *fingerprint; /* @fingerprint, NULL: computed */
    bool must;               /* must_compile: a failure to compile is an error */
    bool timed;              /* reports are on (xlac_report_timed): the observers time the launch */
    const xlac_flags *f;     /* the configuration of the session that made the node (config.c) */
    xg_cache *c;             /* NULL: codegen off or no cache, the body runs per op */
    xlac_launch_info li;
} launch;

/* Every field but the signature's text (a zeroed struct would clear 200 bytes per launch). */
static void launch_info_init(xlac_launch_info *li, const xlac_flags *f, bool timed)
{
    li->info.want_signature = timed;
    li->info.can_probe = true;
    li->info.hit = li->info.compiled = li->info.probe = false;
    li->info.compile_ms = 0;
    li->info.reason = NULL;
    li->info.signature[0] = '\0';
    li->ran = false;
    li->why = f->codegen ? "no compilation cache" : "--codegen=0";
    li->t0 = timed ? xe_now_us() : 0;
    li->t_fallback = 0;
    li->gpu = NULL;
}

static uint64_t hash_text(uint64_t h, const char *t)
{
    for (; *t; t++)
        h = (h ^ (unsigned char)*t) * 1099511628211ULL; /* FNV-1a */
    return h;
}

/* A launch ran per op: at info once per cluster and reason (the first 256), at debug every time. */
static void say_fallback(xlac_state *s, const char *name, const char *why)
{
    if (!xlac_log_on(XG_LOG_INFO))
        return;
    if (xlac_log_on(XG_LOG_DEBUG)) {
        xlac_log(XG_LOG_DEBUG, "%s ran op by op: %s", name, why);
        return;
    }
    uint64_t h = hash_text(hash_text(14695981039346656037ULL, name) * 31, why);
    bool fresh = true;
    pthread_mutex_lock(&s->report_lock);
    for (int i = 0; i < s->n_said && fresh; i++)
        fresh = s->said[i] != h;
    if (fresh && s->n_said < (int)(sizeof s->said / sizeof s->said[0]))
        s->said[s->n_said++] = h;
    else
        fresh = false;
    pthread_mutex_unlock(&s->report_lock);
    if (fresh)
        xlac_log(XG_LOG_INFO, "%s ran op by op: %s", name, why);
}

/* ---- the observers, called at fixed points of the launch ------------------------------------- */

/* The launch began: counted, its inputs dumped for replay (--dump_inputs), its clock started. */
static void observe_begin(launch *l)
{
    atomic_fetch_add(&l->s->n_launches, 1);
    xlac_replay_dump(l->s, l->n, l->name, l->a->in);
    l->timed = xlac_report_timed(l->s); /* off: this test is all a launch pays for reports */
    launch_info_init(&l->li, l->f, l->timed);
}

/* Compiled code is about to run: its device time is taken while tracing. */
static void observe_compiled_begin(launch *l)
{
    l->li.gpu = l->timed && xe_trace_on() ? xe_device_timer_begin(l->n->device) : NULL;
}

/* Compiled code ran (or the cache fell back): placement lines and the report when it ran. */
static void observe_compiled_end(launch *l, xe_code code, xg_outcome outcome)
{
    if (l->li.gpu)
        xe_device_timer_end(l->li.gpu);
    l->li.ran = code == XE_OK && outcome == XG_RAN;
    if (l->li.ran) {
        log_compiled(l->a, l->name);
        if (l->timed)
            xlac_report_launch(l->s, l->n, l->name, &l->li);
    }
    if (l->li.gpu)
        xe_device_timer_free(l->li.gpu);
    l->li.gpu = NULL;
}

/* The body is about to run per op: counted, noted for replay, its clock started. */
static double observe_fallback(launch *l)
{
    atomic_fetch_add(&l->s->n_fallbacks, 1);
    say_fallback(l->s, l->name, l->li.why ? l->li.why : "no reason given");
    xlac_replay_note_fallback(l->s, l->n, l->name);
    double t0 = xe_now_us();
    l->li.t_fallback = l->timed ? t0 : 0;
    return t0;
}

/* The per-op run ended: the report. */
static void observe_fallback_end(launch *l)
{
    if (l->timed)
        xlac_report_launch(l->s, l->n, l->name, &l->li);
}

/* ---- the launch: look up, run or compile, fall back ---------------------------------------------
 */

/* 1. Compiled code from the cache (looked up, or compiled now); *ran: it ran. */
static xe_code run_compiled(launch *l, xe_tensor **outs, int n_outs, bool *ran, xe_status *st)
{
    xg_outcome outcome = XG_FALLBACK;
    observe_compiled_begin(l);
    xe_code code = xg_run_cluster_info(l->c, l->n->body, l->fingerprint, l->name, l->n->device,
                                       l->a->in, outs, l->must, &outcome, &l->li.info, st);
    observe_compiled_end(l, code, outcome);
    *ran = l->li.ran;
    if (code != XE_OK || *ran)
        return code;
    l->li.why = l->li.info.reason;
    for (int i = 0; i < n_outs; i++) { /* whatever a fallback left behind */
        xe_tensor_release(outs[i]);
        outs[i] = NULL;
    }
    return XE_OK;
}

/* The body per op into outs, its wall time (the device drained on both sides) in *us; quiet: no
 * placement lines. */
static xe_code time_per_op(launch *l, xe_tensor **outs, bool quiet, double *us, xe_status *st)
{
    xe_device dev = l->n->device;
    xe_status ss;
    xe_status_clear(&ss);
    bool drained = !l->c || xe_device_synchronize(dev, &ss) == XE_OK;
    double t0 = xe_now_us();
    xe_code code = quiet
                       ? xe_exec_graph_quiet(l->a->exec, l->n->body, l->a->in, outs, st)
                       : xe_exec_graph(l->a->exec, l->n->body, l->a->in, outs, l->name, "XLA_", st);
    if (code == XE_OK && l->c && drained && xe_device_synchronize(dev, &ss) == XE_OK)
        *us = xe_now_us() - t0;
    return code;
}

/* 2. The body per op, through the runtime's entry (bit-identical to the op-by-op run). */
static xe_code run_per_op(launch *l, xe_tensor **outs, xe_status *st)
{
    observe_fallback(l);
    double us = 0;
    xe_code code = time_per_op(l, outs, false, &us, st);
    if (us > 0) /* what compiled code must beat, or be demoted (codegen/cache/demote.c) */
        xg_cluster_per_op_time(l->c, l->n->body, l->fingerprint, l->n->device, l->a->in, us);
    observe_fallback_end(l);
    return code;
}

/* 3. Asked after a compiled run: the body per op once more, timed, its outputs dropped (a failure
 * only means no time). */
static void probe_per_op(launch *l)
{
    int n_outs = l->n->body->n_outputs;
    xe_tensor *tmp[n_outs > 0 ? n_outs : 1];
    memset(tmp, 0, sizeof tmp);
    xe_status st;
    xe_status_clear(&st);
    double t0 = xe_now_us(), us = 0;
    if (time_per_op(l, tmp, true, &us, &st) == XE_OK && us > 0)
        xg_cluster_per_op_time(l->c, l->n->body, l->fingerprint, l->n->device, l->a->in, us);
    for (int i = 0; i < n_outs; i++)
        xe_tensor_release(tmp[i]);
    atomic_fetch_add(&l->s->n_probes, 1);
    xe_exec_trace(l->a->exec, l->name, "probe", t0);
}

xe_code xlac_launch_run(const xe_kernel_args *a, xe_tensor **outs, int n_outs, xe_status *st)
{
    const xe_node *n = a->node;
    if (!n->body)
        return xe_fail(st, XE_ERR_GRAPH, "xlac_launch %s has no body", n->name);
    if (n_outs != n->body->n_outputs)
        return xe_fail(st, XE_ERR_RUNTIME, "xlac_launch %s: %d outputs expected, %d given", n->name,
                       n->body->n_outputs, n_outs);
    launch l = {.a = a,
                .s = a->op_user,
                .n = n,
                .name = xe_node_attr_string(n, "@cluster", n->name),
                .fingerprint = xe_node_attr_string(n, "@fingerprint", NULL),
                .must = xe_node_attr_bool(n, "must_compile", false)};
    l.f = xlac_config_flags(l.s, xe_node_attr_int(n, "@config", 0));
    observe_begin(&l);
    l.c = get_cache(l.s, l.f);
    bool ran = false;
    if (l.c) {
        xe_code code = run_compiled(&l, outs, n_outs, &ran, st);
        if (code == XE_OK && ran && l.li.info.probe)
            probe_per_op(&l);
        if (code != XE_OK || ran)
            return code;
    }
    return run_per_op(&l, outs, st);
}

bool xlac_made_clusters(xlac_state *s)
{
    return atomic_load(&s->n_clusters) > 0 || atomic_load(&s->n_launches) > 0;
}

void xlac_launch_drain(xlac_state *s)
{
    pthread_mutex_lock(&s->cache_lock);
    if (s->cache)
        xg_cache_wait(s->cache);
    pthread_mutex_unlock(&s->cache_lock);
}

void xlac_print_stats(xlac_state *s, FILE *out)
{
    xg_stats cs = {0};
    pthread_mutex_lock(&s->cache_lock);
    if (s->cache)
        xg_cache_stats(s->cache, &cs);
    pthread_mutex_unlock(&s->cache_lock);
    fprintf(out,
            "xlac: stats clusters=%llu launches=%llu compiles=%llu cache_hits=%llu "
            "disk_hits=%llu disk_rejects=%llu fallbacks=%llu compile_ms=%.1f\n",
            (unsigned long long)atomic_load(&s->n_clusters),
            (unsigned long long)atomic_load(&s->n_launches), (unsigned long long)cs.compiles,
            (unsigned long long)cs.cache_hits, (unsigned long long)cs.disk_hits,
            (unsigned long long)cs.disk_rejects, (unsigned long long)atomic_load(&s->n_fallbacks),
            cs.compile_ms);
    /* the stats line is exactly the documented one; the time of disk-cache loads goes on its own
     * line */
    fprintf(out, "xlac: timing disk_load_ms=%.2f demoted=%llu probes=%llu\n", cs.disk_load_ms,
            (unsigned long long)cs.demoted, (unsigned long long)atomic_load(&s->n_probes));
}

int xlac_demotions(xlac_state *s, xg_demotion *d, int cap)
{
    int n = 0;
    pthread_mutex_lock(&s->cache_lock);
    if (s->cache)
        n = xg_cache_demotions(s->cache, d, cap);
    pthread_mutex_unlock(&s->cache_lock);
    return n;
}

void xlac_print_demotions(xlac_state *s, FILE *out)
{
    xg_demotion d[16];
    int n = xlac_demotions(s, d, (int)(sizeof d / sizeof d[0]));
    for (int i = 0; i < n; i++)
        fprintf(out, "xlac: demoted %s at %s: compiled %.3f ms, per op %.3f ms%s\n", d[i].cluster,
                d[i].types, d[i].compiled_us / 1e3, d[i].per_op_us / 1e3,
                d[i].generic ? " (its shape-generic program: every shape it served runs per op)"
                             : "");
}

void xlac_launch_shutdown(xlac_state *s)
{
    pthread_mutex_lock(&s->cache_lock);
    xg_cache_destroy(s->cache);
    s->cache = NULL;
    pthread_mutex_unlock(&s->cache_lock);
}
