/*
 * The compile policy and queue: what a launch of a signature does (run
 * its program, compile it, or run per op), compiles here or on a
 * background thread, and demotion.
 *
 * Policy per cluster, in order:
 *   1. a signature seen fewer than compile_threshold times runs per op;
 *   2. after dynamic_after signatures of one shape pattern (ranks and which
 *      dims are 1), one shape-generic program serves every further shape;
 *   3. past max_compiles_per_cluster compiles the cluster runs per op;
 *   4. a failed compile, load or launch warns once per signature and that
 *      signature runs per op from then on (under must-compile it is an
 *      error naming the cluster);
 *   5. a program demoted (demote.c: its compiled runs were slower than
 *      the per-op runs of the same signature) runs per op from then on, and
 *      so does a later process that loads it from the disk cache, from its
 *      first run (its verdict, verdict.c), when the loss was clear or two
 *      processes found it; a closer one is measured again.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_state.h"
#include "compile.h"
#include "plan.h"
#include "xlac/session.h"
#include "xlac/trace.h"

/* ---- compiling ------------------------------------------------------------------------- */

typedef struct job {
    xg_cache *c;
    char *key, *name;
    char fp[40];    /* the cluster's fingerprint, as in the key */
    xe_graph *body; /* owned clone */
    xe_type *types;
    int n_in;
    bool generic;
    bool must; /* must-compile: a failure is the caller's error, not a warning */
    int owner; /* the trace owner of the thread that asked (xe_trace_owner) */
    xg_target target;
    int arch;
} job;

static void job_free(job *j)
{
    free(j->key);
    free(j->name);
    xe_graph_destroy(j->body);
    free(j->types);
    free(j);
}

/* Loads a module read from disk; false (a destroyed, refused) when it does not fit the cluster. */
static bool load_from_disk(job *j, xg_artifact **a, xg_program **prog, xe_status *st)
{
    (*a)->shape_generic = j->generic;
    if (xg_program_load(*a, j->body, j->types, &j->c->o, prog, st) == XE_OK)
        return true;
    char why[sizeof st->msg + 32];
    snprintf(why, sizeof why, "loading it failed: %s", st->msg);
    xg_disk_reject(&j->c->disk, j->key, why); /* stale: rebuild */
    xg_artifact_destroy(*a);
    *a = NULL;
    xe_status_clear(st);
    return false;
}

/* A compile begins or ends (any thread): timings that overlap one are not compared (demotion). */
static void compiling(xg_cache *c, bool begin)
{
    pthread_mutex_lock(&c->lock);
    c->compiling_now += begin ? 1 : -1;
    if (!begin)
        c->last_compile_end_us = xe_now_us();
    pthread_mutex_unlock(&c->lock);
}

/*
 * Disk hit, or build (and store); then load. Runs without the lock. On a
 * disk miss the build is claimed across processes (cache_lock.c): one
 * process sharing the folder builds, the others wait and load its file.
 */
static xe_code compile_job_inner(job *j, xg_program **prog, bool *disk_hit, double *ms,
                                 xe_status *st);

static xe_code compile_job(job *j, xg_program **prog, bool *disk_hit, double *ms, xe_status *st)
{
    compiling(j->c, true);
    xe_code code = compile_job_inner(j, prog, disk_hit, ms, st);
    compiling(j->c, false);
    return code;
}

static xe_code compile_job_inner(job *j, xg_program **prog, bool *disk_hit, double *ms,
                                 xe_status *st)
{
    xg_artifact *a = NULL;
    const xg_options *o = &j->c->o;
    if (o->on_compile)
        o->on_compile(o->on_compile_user, j->name, true);
    double t0 = xg_now_ms();
    /* with a dump folder every signature is built here, so that its dump is whole (source, plan,
     * log) */
    bool disk = !j->c->o.dump_dir;
    unsigned long long rejects = atomic_load(&j->c->disk.rejects);
    *disk_hit =
        disk && xg_disk_load(&j->c->disk, j->key, j->target, &a) && load_from_disk(j, &a, prog, st);
    /* a refused file is rebuilt here and replaced, without waiting for anyone */
    bool claim_it = disk && !*disk_hit && atomic_load(&j->c->disk.rejects) == rejects;
    xg_claim claim = claim_it ? xg_disk_claim(&j->c->disk, j->key, j->target, &a) : XG_CLAIM_NONE;
    if (claim == XG_CLAIM_LOADED)
        *disk_hit = load_from_disk(j, &a, prog, st);
    xe_code code = XE_OK;
    if (!*disk_hit) {
        code = xg_build(j->body, j->types, j->generic, j->target, j->arch, &j->c->o, &a, st);
        if (a && j->c->o.dump_dir) { /* a failed compile too: its source and log say why */
            xe_status ds;
            if (xg_dump_artifact(a, j->c->o.dump_dir, j->name, j->key, &ds) != XE_OK)
                xg_log(o, XG_LOG_WARNING, "dump failed: %s", ds.msg);
        }
        if (code == XE_OK)
            code = xg_program_load(a, j->body, j->types, &j->c->o, prog, st);
        if (code == XE_OK)
            xg_disk_store(&j->c->disk, j->key, a);
    }
    if (claim == XG_CLAIM_OURS)
        xg_disk_release(&j->c->disk, j->key);
    *ms = xg_now_ms() - t0;
    xg_artifact_destroy(a);
    if (xe_trace_on())
        xg_trace_compile(j->name, j->target, o->cc, *disk_hit, j->key, t0, *ms, code == XE_OK);
    if (o->on_compile)
        o->on_compile(o->on_compile_user, j->name, false);
    return code;
}

/* The ops of a cluster's body (its inputs left out). */
static int body_ops(const xe_graph *body)
{
    return body->n_nodes - body->n_inputs;
}

/* After a compile (outside the lock): one warning for a failure, at info a line for the rest. */
static void say_compiled(const job *j, xe_code code, bool disk_hit, double ms, const xe_status *st)
{
    const xg_options *o = &j->c->o;
    if (code != XE_OK && !j->must) {
        char first[400];
        xg_first_line(st->msg, first, sizeof first);
        xg_log(o, XG_LOG_WARNING, "%s failed to compile (%s); running it op by op", j->name, first);
    } else if (code == XE_OK && disk_hit) {
        xg_log(o, XG_LOG_INFO, "loaded %s (%d ops) from the disk cache in %.1f ms", j->name,
               body_ops(j->body), ms);
    } else if (code == XE_OK) {
        xg_log(o, XG_LOG_INFO, "compiled %s (%d ops%s, %s) in %.1f ms", j->name, body_ops(j->body),
               j->generic ? ", shape-generic" : "", xg_target_get(j->target)->name, ms);
    }
}

/* Records a finished compile under the lock; then warns on failure (once: the entry is marked
 * failed). Whether prog may run now: false when the entry is gone (out of memory: prog destroyed)
 * or an earlier process demoted it for sure (verdict.c; a close verdict is measured again). */
static bool finish_job(job *j, xe_code code, xg_program *prog, bool disk_hit, double ms,
                       const xe_status *st)
{
    xg_cache *c = j->c;
    xg_verdict v = {0}; /* an earlier process's verdict on the program (verdict.c) */
    bool had = code == XE_OK && disk_hit && !j->must && c->o.demote &&
               xg_verdict_load(&c->disk, j->key, &v);
    bool slow = had && xg_verdict_sure(&v);
    pthread_mutex_lock(&c->lock);
    xg_entry *e = xg_entry_get(c, j->key);
    xg_cluster_state *s = xg_cluster_get(c, j->fp, j->name);
    if (e) {
        e->compiling = false;
        e->prog = prog;
        e->failed = code != XE_OK;
        if (slow)
            xg_demoted_earlier(c, e, j->name, j->generic, v.compiled_us, v.per_op_us);
        else if (had)
            e->recheck = v.agreed;
    }
    if (code != XE_OK) {
        /* warned below; under must-compile the caller returns the error */
    } else if (disk_hit) {
        c->stats.disk_hits++;
        c->stats.disk_load_ms += ms;
    } else {
        c->stats.compiles++;
        c->stats.compile_ms += ms;
        if (s)
            s->compiles++;
    }
    if (!e)
        xg_program_destroy(prog);
    pthread_mutex_unlock(&c->lock);
    say_compiled(j, code, disk_hit, ms, st);
    if (had && e) {
        char path[4200];
        xg_verdict_path(&c->disk, j->key, path, sizeof path);
        if (slow)
            xg_log(&c->o, XG_LOG_WARNING,
                   "%s ran slower compiled (%.3f ms) than per op (%.3f ms) in an earlier run; it "
                   "runs per op (verdict %s: delete it, or --demote=0, to run it compiled)",
                   j->name, v.compiled_us / 1e3, v.per_op_us / 1e3, path);
        else
            xg_log(&c->o, XG_LOG_INFO,
                   "%s ran slower compiled (%.3f ms) than per op (%.3f ms) in an earlier run, too "
                   "close to hold on one run's word; it runs compiled and is measured again "
                   "(verdict %s)",
                   j->name, v.compiled_us / 1e3, v.per_op_us / 1e3, path);
    }
    return e && !slow;
}

static void *async_main(void *arg)
{
    job *j = arg;
    xe_trace_owner_swap(j->owner); /* its slices are the asking session's */
    if (xe_trace_on())
        xe_trace_name_thread("xlac compile");
    xg_program *prog = NULL;
    bool disk = false;
    double ms = 0;
    xe_status st;
    xe_status_clear(&st);
    xe_code code = compile_job(j, &prog, &disk, &ms, &st);
    (void)finish_job(j, code, prog, disk, ms, &st); /* nobody waits to run it */
    xg_cache *c = j->c;
    job_free(j);
    pthread_mutex_lock(&c->lock);
    c->async_running--;
    pthread_cond_broadcast(&c->async_done);
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* A job compiling key for l (a shape-generic program when key says so). */
static job *job_new(const xg_launch *l, const char *key, xe_status *st)
{
    job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->c = l->c;
    j->key = strdup(key);
    j->name = strdup(l->name);
    j->body = xe_graph_clone(l->body, st);
    j->n_in = l->body->n_inputs;
    j->types = calloc((size_t)j->n_in + 1, sizeof *j->types);
    j->generic = strstr(key, "|generic:") != NULL;
    j->must = l->must;
    j->owner = xe_trace_owner();
    const char *bar = strchr(key, '|'); /* key = "VERSION|FINGERPRINT|..." */
    snprintf(j->fp, sizeof j->fp, "%.*s", bar ? (int)strcspn(bar + 1, "|") : 0, bar ? bar + 1 : "");
    j->target = l->target;
    j->arch = l->arch;
    if (!j->key || !j->name || !j->body || !j->types) {
        job_free(j);
        return NULL;
    }
    for (int k = 0; k < j->n_in; k++)
        j->types[k] = (xe_type){l->inputs[k]->dtype, l->inputs[k]->shape};
    return j;
}

/* Past --max_compiles_per_cluster (must-compile aside): warns once, true. Under the lock. */
static bool over_budget(const xg_launch *l, xg_cluster_state *s)
{
    if (s->compiles < l->c->o.max_compiles_per_cluster || l->must)
        return false;
    if (!s->stopped_warned)
        xg_log(&l->c->o, XG_LOG_WARNING,
               "%s compiled %d times; it now runs op by op "
               "(raise --max_compiles_per_cluster)",
               l->name, s->compiles);
    s->stopped_warned = true;
    return true;
}

/* Whether l's inputs are the types of s's last signature that ran, and it still can. */
static bool same_as_last_hit(const xg_cluster_state *s, const xg_launch *l)
{
    if (!s->hit || !s->hit->prog || s->hit->failed || s->hit_n != l->n ||
        s->hit_target != l->target || s->hit_arch != l->arch)
        return false;
    xe_tensor *const *in = l->inputs;
    for (int k = 0; k < l->n; k++)
        if (in[k]->dtype != s->hit_types[k].dtype ||
            !xe_shape_equal(&in[k]->shape, &s->hit_types[k].shape))
            return false;
    return true;
}

/* s's last signature that ran is l's, of key and program entry e (its own entry sig). */
static void remember_hit(xg_cluster_state *s, xg_entry *e, xg_entry *sig, const char *key,
                         const xg_launch *l)
{
    int n = l->n;
    xe_tensor *const *in = l->inputs;
    char *k = strdup(key);
    xe_type *t = malloc(((size_t)n + 1) * sizeof *t);
    if (!k || !t) {
        free(k);
        free(t);
        return;
    }
    for (int i = 0; i < n; i++)
        t[i] = (xe_type){in[i]->dtype, in[i]->shape};
    free(s->hit_key);
    free(s->hit_types);
    s->hit = e;
    s->hit_sig = sig;
    s->hit_key = k;
    s->hit_types = t;
    s->hit_n = n;
    s->hit_target = l->target;
    s->hit_arch = l->arch;
}

bool xg_claim_compile(const xg_launch *l, xg_cluster_state *s, xg_entry *e)
{
    if (e->prog || e->failed || e->compiling || over_budget(l, s))
        return false;
    e->compiling = true;
    return true;
}

xg_decision xg_decide(xg_launch *l, xe_text *key, xg_entry **out, xg_entry **sig)
{
    xg_cache *c = l->c;
    const char **why = &l->info->reason;
    xg_cluster_state *s = xg_cluster_get(c, l->fp, l->name);
    if (s && same_as_last_hit(s, l) && !s->hit->slow) {
        xe_text_printf(key, "%s", s->hit_key);
        *out = s->hit;
        *sig = s->hit_sig;
        return XG_DECIDE_RUN;
    }
    xg_launch_key(l, NULL, key);
    xg_entry *e = key->oom ? NULL : xg_entry_get(c, key->buf);
    *sig = e;
    *why = WHY_OOM;
    if (!s || !e)
        return XG_DECIDE_FALLBACK;
    bool new_sig = e->seen == 0;
    e->seen++;
    char pat[40] = "";
    if (!e->prog && !e->failed && !e->compiling)
        xg_shape_pattern(l->body, l->inputs, l->n, pat);
    if (!e->prog && !e->failed && !e->compiling && xg_pattern_is_dynamic(c, s, pat, new_sig)) {
        xe_text_truncate(key, 0); /* this shape joins the pattern's shape-generic program */
        xg_launch_key(l, pat, key);
        int seen = e->seen;
        if (key->oom || !(e = xg_entry_get(c, key->buf)))
            return XG_DECIDE_FALLBACK; /* *why: WHY_OOM */
        if (e->seen < seen)
            e->seen = seen;
    }
    *out = e;
    *why = e->failed ? WHY_FAILED : e->slow ? WHY_SLOW : WHY_COMPILING;
    if (e->failed || e->slow || (e->compiling && !e->prog))
        return XG_DECIDE_FALLBACK;
    if (e->prog) {
        remember_hit(s, e, *sig, key->buf, l);
        return XG_DECIDE_RUN;
    }
    *why = WHY_THRESHOLD;
    if (e->seen < c->o.compile_threshold && !l->must)
        return XG_DECIDE_FALLBACK;
    *why = WHY_BUDGET;
    return xg_claim_compile(l, s, e) ? XG_DECIDE_COMPILE : XG_DECIDE_FALLBACK;
}

/*
 * Compiles (or loads) the program for key: on a background thread when
 * async (*prog stays NULL: per op this time), else here. A failure
 * without must-compile has already warned and leaves *prog NULL; so does a
 * program that an earlier process demoted (*slow set, verdict.c).
 */
static xe_code compile_now(xg_cache *c, job *j, bool async, xg_program **prog, bool *slow,
                           xe_status *st)
{
    pthread_t th;
    if (async) {
        pthread_mutex_lock(&c->lock);
        c->async_running++;
        pthread_mutex_unlock(&c->lock);
        if (pthread_create(&th, NULL, async_main, j) == 0) {
            pthread_detach(th);
            return XE_OK;
        }
        pthread_mutex_lock(&c->lock); /* no thread: compile here */
        c->async_running--;
        pthread_mutex_unlock(&c->lock);
    }
    bool disk = false, must = j->must;
    double ms = 0;
    xe_code code = compile_job(j, prog, &disk, &ms, st);
    xe_status keep = *st;
    if (!finish_job(j, code, *prog, disk, ms, &keep) && code == XE_OK) {
        *prog = NULL; /* the entry's, or gone: this call runs per op */
        *slow = true;
    }
    job_free(j);
    if (code != XE_OK) {
        *prog = NULL;
        if (must)
            return code;
        xe_status_clear(st);
    }
    return XE_OK;
}

xe_code xg_compile_signature(const xg_launch *l, const char *key, xg_program **prog, xe_status *st)
{
    xg_cache *c = l->c;
    job *j = job_new(l, key, st);
    if (j) {
        bool slow = false;
        xe_code code = compile_now(c, j, c->o.async_compilation && !l->must, prog, &slow, st);
        if (slow && l->info)
            l->info->reason = WHY_SLOW;
        return code;
    }
    if (st->code == XE_OK)
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
    xg_mark_failed(c, key, l->name, l->must ? NULL : "compile", st);
    if (l->must)
        return st->code;
    xe_status_clear(st);
    return XE_OK;
}
