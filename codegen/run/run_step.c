/*
 * The run step of the cluster runtime (xg_run_cluster): one launch of a
 * cluster for concrete inputs. Under the cache's lock the compile policy
 * decides (codegen/cache/compile_policy.c); without it this thread
 * compiles when told to, then runs the program, or leaves the call to
 * the caller's per-op path (XG_FALLBACK) with the reason in xg_run_info.
 * One xg_launch carries the call's context through the steps.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cache_state.h"
#include "compile.h"
#include "plan.h"
#include "xlac/session.h"

/*
 * A shape its shape-generic program cannot serve (outputs of one kernel
 * that no longer share a shape): this signature's own program, found or
 * compiled now, within the cluster's budget. NULL: per op this time.
 */
static xg_program *specific_program(const xg_launch *l, xe_code *code, xe_status *st)
{
    xg_cache *c = l->c;
    xe_text key = {0};
    xg_program *prog = NULL;
    pthread_mutex_lock(&c->lock);
    xg_launch_key(l, NULL, &key);
    xg_entry *e = key.oom ? NULL : xg_entry_get(c, key.buf);
    xg_cluster_state *s = xg_cluster_get(c, l->fp, l->name);
    if (e && e->prog)
        prog = e->prog;
    bool compile = e && s && xg_claim_compile(l, s, e);
    pthread_mutex_unlock(&c->lock);
    if (compile && key.buf)
        *code = xg_compile_signature(l, key.buf, &prog, st);
    xe_text_free(&key);
    return prog;
}

/* Step 2: xg_compile_signature of l's key, telling l->info how long it took and, when nothing is
 * ready, why. */
static xe_code timed_compile(const xg_launch *l, xg_program **prog, xe_status *st)
{
    double t0 = xg_now_ms();
    l->info->reason = NULL; /* WHY_SLOW after it when an earlier process demoted the program */
    xe_code code = xg_compile_signature(l, l->key, prog, st);
    l->info->compile_ms = xg_now_ms() - t0;
    l->info->compiled = *prog != NULL;
    l->info->reason = *prog                                   ? NULL
                      : l->info->reason                       ? l->info->reason
                      : l->c->o.async_compilation && !l->must ? WHY_ASYNC
                                                              : WHY_COMPILE;
    return code;
}

/* Step 3's timed run (demotion): the device's queue drained on both sides, so that the time is the
 * program's. */
static xe_code timed_run(const xg_launch *l, xg_program *prog, const xg_timing *t, xe_status *st)
{
    const xe_graph *body = l->body;
    xe_status ss;
    xe_status_clear(&ss);
    bool drained = xe_device_synchronize(l->dev, &ss) == XE_OK;
    double t0 = xe_now_us();
    xe_code r = xg_program_run(prog, l->inputs, body->n_inputs, l->outputs, body->n_outputs, st);
    if (r == XE_OK && drained && xe_device_synchronize(l->dev, &ss) == XE_OK)
        xg_note_run(l, t->sig, t->e, xe_now_us() - t0);
    return r;
}

/*
 * Step 3: runs *prog (timed against the signature's per-op runs when t
 * says so: demotion); a call the program cannot serve
 * (XE_ERR_UNSUPPORTED) goes to this signature's own program if this one
 * was shape-generic, else per op, quietly (an empty max: per op says
 * why). *prog is NULL when nothing ran.
 */
static xe_code run_step(const xg_launch *l, xg_program **prog, const xg_timing *t, xe_status *st)
{
    const xe_graph *body = l->body;
    xe_code code = XE_OK;
    xe_code r = t->timed ? timed_run(l, *prog, t, st)
                         : xg_program_run(*prog, l->inputs, body->n_inputs, l->outputs,
                                          body->n_outputs, st);
    if (r == XE_ERR_UNSUPPORTED && strstr(l->key, "|generic:")) {
        xe_status_clear(st);
        *prog = specific_program(l, &code, st);
        bool again = code == XE_OK && *prog;
        r = again
                ? xg_program_run(*prog, l->inputs, body->n_inputs, l->outputs, body->n_outputs, st)
                : XE_OK;
    }
    if (code != XE_OK || r == XE_OK)
        return code;
    l->info->reason = r == XE_ERR_UNSUPPORTED ? WHY_SHAPES : WHY_RUN;
    if (r == XE_ERR_UNSUPPORTED) {
        xe_status_clear(st);
    } else if (l->must) {
        code = st->code;
    } else {
        xg_mark_failed(l->c, l->key, l->name, "run", st);
        xe_status_clear(st);
    }
    *prog = NULL;
    return code;
}

/* Step 4, after a run of program prog: whether the caller is asked for a per-op probe (demote.c).
 */
static bool probe_step(const xg_launch *l, const xg_program *prog, const xg_timing *t)
{
    if (!l->info->can_probe || !prog || !t->e || t->e->prog != prog)
        return false;
    pthread_mutex_lock(&l->c->lock);
    bool probe = xg_wants_probe(l, t->sig, t->e);
    pthread_mutex_unlock(&l->c->lock);
    return probe;
}

xe_code xg_run_cluster(xg_cache *c, const xe_graph *body, const char *fingerprint,
                       const char *cluster_name, xe_device dev, xe_tensor *const *inputs,
                       xe_tensor **outputs, bool must_compile, xg_outcome *outcome, xe_status *st)
{
    xg_run_info info = {.want_signature = false};
    return xg_run_cluster_info(c, body, fingerprint, cluster_name, dev, inputs, outputs,
                               must_compile, outcome, &info, st);
}

/* Step 1, under the lock: the policy's decision, the program to run (RUN) and the entries timed. */
static xg_decision decide_step(xg_launch *l, xe_text *key, xg_program **prog, xg_timing *t,
                               bool *failed_before)
{
    xg_cache *c = l->c;
    xg_entry *e = NULL, *sig = NULL;
    pthread_mutex_lock(&c->lock);
    xg_decision d = xg_decide(l, key, &e, &sig);
    *failed_before = d == XG_DECIDE_FALLBACK && e && e->failed;
    *prog = d == XG_DECIDE_RUN ? e->prog : NULL;
    *t = (xg_timing){.e = e, .sig = sig, .timed = xg_wants_timing(c, sig, e)};
    if (d == XG_DECIDE_RUN)
        c->stats.cache_hits++;
    pthread_mutex_unlock(&c->lock);
    return d;
}

xe_code xg_run_cluster_info(xg_cache *c, const xe_graph *body, const char *fingerprint,
                            const char *cluster_name, xe_device dev, xe_tensor *const *inputs,
                            xe_tensor **outputs, bool must_compile, xg_outcome *outcome,
                            xg_run_info *info, xe_status *st)
{
    xg_launch l;
    xg_launch_init(&l, c, body, fingerprint, dev, inputs);
    l.name = cluster_name;
    l.outputs = outputs;
    l.must = must_compile;
    l.info = info;
    xe_text key = {0};
    *outcome = XG_FALLBACK;
    info->hit = info->compiled = info->probe = false;
    info->compile_ms = 0;
    info->reason = NULL;
    xg_program *prog = NULL;
    xg_timing t = {0};
    bool failed_before = false;
    /* 1. decide under the lock */
    xg_decision d = decide_step(&l, &key, &prog, &t, &failed_before);
    l.key = key.buf ? key.buf : "";
    if (info->want_signature)
        snprintf(info->signature, sizeof info->signature, "%s", l.key);
    else
        info->signature[0] = '\0';
    info->hit = d == XG_DECIDE_RUN;
    xe_code code = XE_OK;
    if (failed_before && must_compile)
        code = xe_fail(st, XE_ERR_COMPILE, "failed to compile earlier");
    /* 2. compile without it */
    if (code == XE_OK && d == XG_DECIDE_COMPILE)
        code = timed_compile(&l, &prog, st);
    /* 3. run, or leave it to the per-op path */
    if (code == XE_OK && prog)
        code = run_step(&l, &prog, &t, st);
    /* 4. a per-op probe asked for (demotion) */
    info->probe = code == XE_OK && probe_step(&l, prog, &t);
    xe_text_free(&key);
    if (code != XE_OK)
        return xe_status_prefix(st, "%s (must compile): ", cluster_name);
    xg_cache_count(c, prog ? &c->stats.launches : &c->stats.fallbacks);
    *outcome = prog ? XG_RAN : XG_FALLBACK;
    if (!prog && !info->reason)
        info->reason = WHY_SHAPES;
    return XE_OK;
}
