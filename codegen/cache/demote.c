/*
 * Demotion: a signature's compiled runs measured against its per-op runs,
 * and the program sent per op when it is the slower one.
 *
 *   1. per-op times: every per-op run of the signature the caller reports
 *      (xg_cluster_per_op_time), those before --compile_threshold and the
 *      probes alike, the fastest kept. A run that overlapped a compile on
 *      any thread is not counted: it shared the cores with the compiler.
 *   2. probes: with the default threshold nothing runs per op before the
 *      compile, so after a compiled run the caller is asked to run the body
 *      per op once more (xg_run_info.probe), until XG_PER_OP_RUNS per-op
 *      runs were measured (a first per-op run is cold: the library's
 *      primitives are made, fresh pages touched) or as many were asked.
 *      A shape-generic program has probes for one shape, the first it
 *      serves, and is measured at that shape only: the two sides are the
 *      same work.
 *   3. compiled times: once a per-op time is known, the next
 *      XG_DEMOTE_RUNS + 1 compiled runs of that signature are timed (the
 *      first excluded), again none that overlapped a compile.
 *   4. the verdict: fastest compiled slower than the fastest per-op by
 *      more than XG_DEMOTE_MARGIN and XG_DEMOTE_FLOOR_US (jitter of a run
 *      of a few microseconds is no verdict): the program is demoted (every shape a
 *      shape-generic one served), a warning, xg_stats.demoted, a record
 *      for xg_cache_demotions, and the verdict on disk (verdict.c), so that
 *      a later process loading the program from the disk cache runs it per
 *      op from its first run (compile_policy.c, xg_demoted_earlier) when
 *      the loss was clear; a close one that process measures again, and
 *      the verdict is rewritten (agreed by two: it holds) or removed.
 * Every field read here is under the cache's lock.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_state.h"
#include "xlac/session.h"

bool xg_quiet_run(const xg_cache *c, double us)
{
    return c->compiling_now == 0 &&
           (c->last_compile_end_us == 0 || c->last_compile_end_us < xe_now_us() - us);
}

/* 1. */
void xg_cluster_per_op_time(xg_cache *c, const xe_graph *body, const char *fingerprint,
                            xe_device dev, xe_tensor *const *inputs, double us)
{
    xg_launch l;
    xg_launch_init(&l, c, body, fingerprint, dev, inputs);
    xe_text key = {0};
    pthread_mutex_lock(&c->lock);
    xg_launch_key(&l, NULL, &key);
    xg_entry *e = key.oom ? NULL : xg_entry_get(c, key.buf);
    /* none that shared the machine with a compile (this signature's own, in the background, until
       its program is in), none of a signature that cannot compile */
    if (c->o.demote && e && !e->failed && !e->compiling && us > 0 && xg_quiet_run(c, us)) {
        e->per_op_n++;
        if (e->per_op_us == 0 || us < e->per_op_us)
            e->per_op_us = us;
    }
    pthread_mutex_unlock(&c->lock);
    xe_text_free(&key);
}

/* 2. */
bool xg_wants_probe(const xg_launch *l, xg_entry *sig, xg_entry *e)
{
    if (!l->c->o.demote || l->must || !sig || !e || !e->prog || e->slow || e->failed)
        return false;
    if (sig->per_op_n >= XG_PER_OP_RUNS || sig->probes >= XG_PER_OP_RUNS)
        return false;
    if (sig != e && e->probed && e->probed != sig) /* shape-generic: one shape is measured */
        return false;
    if (sig != e)
        e->probed = sig;
    sig->probes++;
    return true;
}

/* 3. */
bool xg_wants_timing(const xg_cache *c, const xg_entry *sig, const xg_entry *e)
{
    return c->o.demote && sig && e && sig->per_op_us > 0 && !e->slow &&
           sig->timed <= XG_DEMOTE_RUNS;
}

/* "f32[64,8], f32[64,8]": l's input types. */
static void input_types(const xg_launch *l, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int k = 0; k < l->n && at + 1 < len; k++) {
        char t[128];
        xe_type ty = {l->inputs[k]->dtype, l->inputs[k]->shape};
        xe_type_str(&ty, t, sizeof t);
        int w = snprintf(buf + at, len - at, "%s%s", k ? ", " : "", t);
        at += w > 0 ? (size_t)w : 0;
    }
}

/* 4., under the lock: e demoted on sig's times; remembered and said. */
static void demote(const xg_launch *l, const xg_entry *sig, xg_entry *e)
{
    xg_cache *c = l->c;
    e->slow = true;
    c->stats.demoted++;
    xg_demotion d = {.generic = sig != e, .compiled_us = sig->run_us, .per_op_us = sig->per_op_us};
    snprintf(d.cluster, sizeof d.cluster, "%s", l->name ? l->name : "");
    input_types(l, d.types, sizeof d.types);
    if (c->n_demotions < XG_DEMOTIONS_KEPT)
        c->demotions[c->n_demotions++] = d;
    if (d.generic)
        xg_log(&c->o, XG_LOG_WARNING,
               "%s ran slower compiled (%.3f ms) than per op (%.3f ms) at %s, best of its "
               "runs; its shape-generic program runs per op from now on, every shape it served",
               d.cluster, d.compiled_us / 1e3, d.per_op_us / 1e3, d.types);
    else
        xg_log(&c->o, XG_LOG_WARNING,
               "%s ran slower compiled (%.3f ms) than per op (%.3f ms), best of its "
               "runs; this signature runs per op from now on",
               d.cluster, d.compiled_us / 1e3, d.per_op_us / 1e3);
}

void xg_note_run(const xg_launch *l, xg_entry *sig, xg_entry *e, double us)
{
    xg_cache *c = l->c;
    char *key = NULL; /* the program's key, when its verdict on disk is written or removed */
    bool store = false;
    xg_verdict v = {0};
    pthread_mutex_lock(&c->lock);
    /* another thread compiled meanwhile: not like the per-op runs, not counted */
    if (xg_quiet_run(c, us) && !e->slow) {
        if (sig->timed++ > 0 && (sig->run_us == 0 || us < sig->run_us))
            sig->run_us = us;
        if (sig->timed == XG_DEMOTE_RUNS + 1) {
            store = sig->run_us > sig->per_op_us * XG_DEMOTE_MARGIN + XG_DEMOTE_FLOOR_US;
            if (store)
                demote(l, sig, e);
            v = (xg_verdict){sig->run_us, sig->per_op_us, e->recheck + 1};
            if (store || e->recheck)
                key = strdup(e->key);
            if (!store && e->recheck)
                xg_log(&c->o, XG_LOG_INFO,
                       "%s ran faster compiled (%.3f ms) than per op (%.3f ms) this time; the "
                       "earlier run's verdict is removed",
                       l->name ? l->name : "", sig->run_us / 1e3, sig->per_op_us / 1e3);
            e->recheck = 0;
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (key && store) /* outside the lock: a file */
        xg_verdict_store(&c->disk, key, &v);
    else if (key)
        xg_verdict_drop(&c->disk, key);
    free(key);
}

void xg_demoted_earlier(xg_cache *c, xg_entry *e, const char *name, bool generic,
                        double compiled_us, double per_op_us)
{
    e->slow = true;
    c->stats.demoted++;
    xg_demotion d = {.generic = generic, .compiled_us = compiled_us, .per_op_us = per_op_us};
    snprintf(d.cluster, sizeof d.cluster, "%s", name ? name : "");
    snprintf(d.types, sizeof d.types, "(an earlier run's verdict)");
    if (c->n_demotions < XG_DEMOTIONS_KEPT)
        c->demotions[c->n_demotions++] = d;
}

int xg_cache_demotions(xg_cache *c, xg_demotion *out, int max)
{
    pthread_mutex_lock(&c->lock);
    int n = c->n_demotions < max ? c->n_demotions : max;
    if (n > 0)
        memcpy(out, c->demotions, (size_t)n * sizeof *out);
    pthread_mutex_unlock(&c->lock);
    return n > 0 ? n : 0;
}
