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
 * compiled runs turn out slower (xg_cluster_per_op_time).
 */
#include <stdlib.h>

#include "xlac/session.h"
#include "xlac/trace.h"
#include "xlac_plugin.h"

/* The state's cache, NULL when codegen is off (for this launch's configuration f) or unavailable. */
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

/* Every field but the signature's text (a zeroed struct would clear 200 bytes per launch). */
static void launch_info_init(xlac_launch_info *li, const xlac_flags *f, bool timed)
{
    li->info.want_signature = timed;
    li->info.hit = li->info.compiled = false;
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

xe_code xlac_launch_run(const xe_kernel_args *a, xe_tensor **outs, int n_outs, xe_status *st)
{
    xlac_state *s = a->op_user;
    const xe_node *n = a->node;
    const char *name = xe_node_attr_string(n, "@cluster", n->name);
    bool must = xe_node_attr_bool(n, "must_compile", false);
    if (!n->body)
        return xe_fail(st, XE_ERR_GRAPH, "xlac_launch %s has no body", n->name);
    if (n_outs != n->body->n_outputs)
        return xe_fail(st, XE_ERR_RUNTIME, "xlac_launch %s: %d outputs expected, %d given", n->name,
                       n->body->n_outputs, n_outs);
    atomic_fetch_add(&s->n_launches, 1);
    xlac_replay_dump(s, n, name, a->in);
    bool timed = xlac_report_timed(s); /* off: this branch is all a launch pays for reports */
    /* the configuration of the session that made this node (config.c) */
    const xlac_flags *f = xlac_config_flags(s, xe_node_attr_int(n, "@config", 0));
    xlac_launch_info li;
    launch_info_init(&li, f, timed);
    xg_cache *c = get_cache(s, f);
    if (c) {
        xg_outcome outcome = XG_FALLBACK;
        li.gpu = timed && xe_trace_on() ? xe_device_timer_begin(n->device) : NULL;
        xe_code code = xg_run_cluster_info(c, n->body, xe_node_attr_string(n, "@fingerprint", NULL), name,
                                           n->device, a->in, outs, must, &outcome, &li.info, st);
        if (li.gpu)
            xe_device_timer_end(li.gpu);
        li.ran = code == XE_OK && outcome == XG_RAN;
        if (li.ran) {
            log_compiled(a, name);
            if (timed)
                xlac_report_launch(s, n, name, &li);
        }
        if (li.gpu)
            xe_device_timer_free(li.gpu);
        li.gpu = NULL;
        if (code != XE_OK || li.ran)
            return code;
        li.why = li.info.reason;
        for (int i = 0; i < n_outs; i++) { /* whatever a fallback left behind */
            xe_tensor_release(outs[i]);
            outs[i] = NULL;
        }
    }
    atomic_fetch_add(&s->n_fallbacks, 1);
    say_fallback(s, name, li.why ? li.why : "no reason given");
    xlac_replay_note_fallback(s, n, name);
    double t0 = xe_now_us();
    li.t_fallback = timed ? t0 : 0;
    xe_code code = xe_exec_graph(a->exec, n->body, a->in, outs, name, "XLA_", st);
    if (c && code == XE_OK) /* what compiled code must beat, or be demoted (codegen/cache/compile_policy.c) */
        xg_cluster_per_op_time(c, n->body, xe_node_attr_string(n, "@fingerprint", NULL), n->device, a->in,
                               xe_now_us() - t0);
    if (timed)
        xlac_report_launch(s, n, name, &li);
    return code;
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
    /* the stats line is exactly the documented one; the time of disk-cache loads goes on its own line */
    fprintf(out, "xlac: timing disk_load_ms=%.2f demoted=%llu\n", cs.disk_load_ms, (unsigned long long)cs.demoted);
}

void xlac_launch_shutdown(xlac_state *s)
{
    pthread_mutex_lock(&s->cache_lock);
    xg_cache_destroy(s->cache);
    s->cache = NULL;
    pthread_mutex_unlock(&s->cache_lock);
}
