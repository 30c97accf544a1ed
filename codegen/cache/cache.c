/*
 * The compilation cache and the cluster runtime (xg_run_cluster).
 *
 * A cluster is identified by its fingerprint: a hash of its canonical text
 * (ops, attributes, dtypes, wiring; not names or annotations). A signature
 * key adds the concrete input types, the device and architecture, the
 * flags that change generated code, the compiler's identity and a format
 * version. Keys map to loaded programs in memory (uthash, one mutex, never
 * held while compiling) and to files on disk (cache_disk.c).
 *
 * Policy per cluster, in order:
 *   1. a signature seen fewer than compile_threshold times runs per op;
 *   2. after dynamic_after signatures of one shape pattern (ranks and which
 *      dims are 1), one shape-generic program serves every further shape;
 *   3. past max_compiles_per_cluster compiles the cluster runs per op;
 *   4. a failed compile, load or launch warns once per signature and that
 *      signature runs per op from then on (under must-compile it is an
 *      error naming the cluster);
 *   5. a signature whose per-op runs were timed (xg_cluster_per_op_time:
 *      only the runs before a compile_threshold of 2 or more, and only
 *      those that overlapped no compile on any thread: the default
 *      threshold of 1 compares nothing) has its first compiled runs timed
 *      too, again only those that overlapped no compile; when the fastest
 *      of XG_DEMOTE_RUNS (the first excluded) is slower than the fastest
 *      per-op run, it is demoted: one line on stderr, and it runs per op
 *      from then on. Both sides are wall times of the same signature's
 *      work alone (the per-op body, the compiled program), never a
 *      compile's.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xe_hash.h"
#include <xxhash.h>

#include "backend.h"
#include "cache_impl.h"
#include "compile.h"
#include "plan.h"
#include "xlac/op.h"
#include "xlac/session.h"
#include "xlac/trace.h"

#define XG_DEMOTE_RUNS 3      /* compiled runs timed, after the first, before a verdict */
#define XG_DEMOTE_MARGIN 1.02 /* slower than per op by more than timing noise */

typedef struct entry {
    char *key;
    xg_program *prog;     /* loaded program, NULL until compiled */
    int seen;             /* times this signature was asked for */
    bool failed, compiling;
    bool slow;            /* demoted: its compiled runs were slower than its per-op runs */
    double per_op_us;     /* fastest per-op run reported (xg_cluster_per_op_time), 0: none */
    double run_us;        /* fastest compiled run timed, the first excluded */
    int timed;            /* compiled runs timed so far */
    UT_hash_handle hh;
} entry;

/* Per cluster (its name and fingerprint: twin clusters share programs, not budgets). */
typedef struct cluster_state {
    char id[200];         /* key: "fingerprint|name" */
    int compiles;
    int n_patterns;
    char patterns[16][40];  /* shape_pattern hashes */
    int pattern_sigs[16]; /* signatures seen per pattern */
    bool stopped_warned;
    /* the signature that ran last (the hot path of a loop that repeats one shape skips
       formatting and hashing its key): entry, key, input types, target */
    entry *hit;
    char *hit_key;
    xe_type *hit_types;
    int hit_n, hit_arch;
    xg_target hit_target;
    UT_hash_handle hh;
} cluster_state;

struct xg_cache {
    xg_options o;
    char *owned[4];       /* copies of o's strings (cache_dir, dump_dir, cc, tmp_dir): the caller's may go first */
    xg_disk disk;
    pthread_mutex_t lock;
    entry *entries;
    cluster_state *clusters;
    xg_stats stats;
    int async_running;
    pthread_cond_t async_done;
    int compiling_now;          /* compile_job calls under way, on any thread (under lock) */
    double last_compile_end_us; /* when the last one ended (xe_now_us), 0: none yet */
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- keys (cache_key.c) ---------------------------------------------------------------- */

static void signature_key(const xg_cache *c, const char *fp, xe_tensor *const *in, int n, const char *pattern,
                          xg_target target, int arch, xe_text *key)
{
    xg_key_of(fp, in, NULL, n, pattern, target, arch, &c->o, key);
}

char *xg_signature_key(const xe_graph *body, const xe_type *types, xg_target target, int arch, const xg_options *o)
{
    char fp[40];
    xe_text key = {0};
    xg_fingerprint(body, fp);
    xg_key_of(fp, NULL, types, body->n_inputs, NULL, target, arch, o, &key);
    return xe_text_take(&key);
}

/* ---- the cache --------------------------------------------------------------------- */

xg_cache *xg_cache_new(const xg_options *o, xe_status *st)
{
    xg_cache *c = calloc(1, sizeof *c);
    if (!c) {
        xe_fail(st, XE_ERR_NOMEM, "out of memory creating the compilation cache");
        return NULL;
    }
    c->o = *o;
    if (c->o.compile_threshold < 1)
        c->o.compile_threshold = 1;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->async_done, NULL);
    const char **strings[] = {&c->o.cache_dir, &c->o.dump_dir, &c->o.cc, &c->o.tmp_dir};
    for (int i = 0; i < 4; i++) {
        if (*strings[i] && !(c->owned[i] = strdup(*strings[i]))) {
            xg_cache_destroy(c);
            xe_fail(st, XE_ERR_NOMEM, "out of memory creating the compilation cache");
            return NULL;
        }
        *strings[i] = c->owned[i];
    }
    if (c->o.disk_cache)
        xg_disk_open(&c->disk, c->o.cache_dir);
    c->disk.max_bytes = (unsigned long long)c->o.cache_max_mb << 20;
    return c;
}

void xg_cache_wait(xg_cache *c)
{
    pthread_mutex_lock(&c->lock);
    while (c->async_running > 0)
        pthread_cond_wait(&c->async_done, &c->lock);
    pthread_mutex_unlock(&c->lock);
}

void xg_cache_destroy(xg_cache *c)
{
    if (!c)
        return;
    xg_cache_wait(c); /* background compiles finish first */
    entry *e, *t;
    HASH_ITER(hh, c->entries, e, t) {
        HASH_DEL(c->entries, e);
        xg_program_destroy(e->prog);
        free(e->key);
        free(e);
    }
    cluster_state *s, *u;
    HASH_ITER(hh, c->clusters, s, u) {
        HASH_DEL(c->clusters, s);
        free(s->hit_key);
        free(s->hit_types);
        free(s);
    }
    xg_disk_close(&c->disk);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->async_done);
    for (int i = 0; i < 4; i++)
        free(c->owned[i]);
    free(c);
}

void xg_cache_stats(xg_cache *c, xg_stats *out)
{
    pthread_mutex_lock(&c->lock);
    *out = c->stats;
    pthread_mutex_unlock(&c->lock);
    out->disk_rejects = atomic_load(&c->disk.rejects);
}

static entry *entry_get(xg_cache *c, const char *key)
{
    entry *e = NULL;
    HASH_FIND_STR(c->entries, key, e);
    if (e)
        return e;
    if (!(e = calloc(1, sizeof *e)) || !(e->key = strdup(key))) {
        free(e);
        return NULL;
    }
    HASH_ADD_KEYPTR(hh, c->entries, e->key, strlen(e->key), e);
    if (!xe_hash_added(e)) {
        free(e->key);
        free(e);
        return NULL;
    }
    return e;
}

static cluster_state *cluster_get(xg_cache *c, const char *fp, const char *name)
{
    char id[200]; /* "fp|name", without printf: this runs on every launch */
    size_t lf = strnlen(fp, 40), ln = name ? strnlen(name, 150) : 0;
    memcpy(id, fp, lf);
    id[lf] = '|';
    memcpy(id + lf + 1, name ? name : "", ln);
    id[lf + 1 + ln] = '\0';
    cluster_state *s = NULL;
    HASH_FIND_STR(c->clusters, id, s);
    if (s || !(s = calloc(1, sizeof *s)))
        return s;
    snprintf(s->id, sizeof s->id, "%s", id);
    HASH_ADD_STR(c->clusters, id, s);
    if (!xe_hash_added(s)) {
        free(s);
        return NULL;
    }
    return s;
}

/* Counts a new signature under its shape pattern; true when the pattern has gone generic. */
static bool pattern_is_dynamic(const xg_cache *c, cluster_state *s, const char *pattern, bool new_signature)
{
    int k = 0;
    while (k < s->n_patterns && strcmp(s->patterns[k], pattern))
        k++;
    if (k == s->n_patterns && k < 16) {
        snprintf(s->patterns[k], sizeof s->patterns[k], "%s", pattern);
        s->pattern_sigs[k] = 0;
        s->n_patterns++;
    }
    if (k == 16)
        return true;
    if (new_signature)
        s->pattern_sigs[k]++;
    return s->pattern_sigs[k] > c->o.dynamic_after;
}

/* ---- compiling ------------------------------------------------------------------------- */

typedef struct job {
    xg_cache *c;
    char *key, *name;
    char fp[40];      /* the cluster's fingerprint, as in the key */
    xe_graph *body;   /* owned clone */
    xe_type *types;
    int n_in;
    bool generic;
    bool must;        /* must-compile: a failure is the caller's error, not a warning */
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

/*
 * Disk hit, or build (and store); then load. Runs without the lock. On a
 * disk miss the build is claimed across processes (cache_lock.c): one
 * process sharing the folder builds, the others wait and load its file.
 */
/* A compile begins or ends (any thread): timings that overlap one are not compared (demotion). */
static void compiling(xg_cache *c, bool begin)
{
    pthread_mutex_lock(&c->lock);
    c->compiling_now += begin ? 1 : -1;
    if (!begin)
        c->last_compile_end_us = xe_now_us();
    pthread_mutex_unlock(&c->lock);
}

/* Under the lock: whether a run that ended now and took us microseconds overlapped no compile. */
static bool quiet_run(const xg_cache *c, double us)
{
    return c->compiling_now == 0 && (c->last_compile_end_us == 0 || c->last_compile_end_us < xe_now_us() - us);
}

static xe_code compile_job_inner(job *j, xg_program **prog, bool *disk_hit, double *ms, xe_status *st);

static xe_code compile_job(job *j, xg_program **prog, bool *disk_hit, double *ms, xe_status *st)
{
    compiling(j->c, true);
    xe_code code = compile_job_inner(j, prog, disk_hit, ms, st);
    compiling(j->c, false);
    return code;
}

static xe_code compile_job_inner(job *j, xg_program **prog, bool *disk_hit, double *ms, xe_status *st)
{
    xg_artifact *a = NULL;
    const xg_options *o = &j->c->o;
    if (o->on_compile)
        o->on_compile(o->on_compile_user, j->name, true);
    double t0 = now_ms();
    /* with a dump folder every signature is built here, so that its dump is whole (source, plan, log) */
    bool disk = !j->c->o.dump_dir;
    unsigned long long rejects = atomic_load(&j->c->disk.rejects);
    *disk_hit = disk && xg_disk_load(&j->c->disk, j->key, j->target, &a) && load_from_disk(j, &a, prog, st);
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
                fprintf(stderr, "xlac: warning: dump failed: %s\n", ds.msg);
        }
        if (code == XE_OK)
            code = xg_program_load(a, j->body, j->types, &j->c->o, prog, st);
        if (code == XE_OK)
            xg_disk_store(&j->c->disk, j->key, a);
    }
    if (claim == XG_CLAIM_OURS)
        xg_disk_release(&j->c->disk, j->key);
    *ms = now_ms() - t0;
    xg_artifact_destroy(a);
    if (xe_trace_on())
        xg_trace_compile(j->name, j->target, o->cc, *disk_hit, j->key, t0, *ms, code == XE_OK);
    if (o->on_compile)
        o->on_compile(o->on_compile_user, j->name, false);
    return code;
}

/* Records a finished compile under the lock; warns once on failure. */
static void finish_job(job *j, xe_code code, xg_program *prog, bool disk_hit, double ms, const xe_status *st)
{
    xg_cache *c = j->c;
    pthread_mutex_lock(&c->lock);
    entry *e = entry_get(c, j->key);
    cluster_state *s = cluster_get(c, j->fp, j->name);
    if (e) {
        e->compiling = false;
        e->prog = prog;
        e->failed = code != XE_OK;
    }
    if (code != XE_OK && !j->must) {
        char first[400];
        xg_first_line(st->msg, first, sizeof first);
        fprintf(stderr, "xlac: warning: %s failed to compile (%s); running it op by op\n", j->name, first);
    } else if (code != XE_OK) {
        /* must-compile: the caller returns the error */
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
}

static void *async_main(void *arg)
{
    job *j = arg;
    if (xe_trace_on())
        xe_trace_name_thread("xlac compile");
    xg_program *prog = NULL;
    bool disk = false;
    double ms = 0;
    xe_status st;
    xe_status_clear(&st);
    xe_code code = compile_job(j, &prog, &disk, &ms, &st);
    finish_job(j, code, prog, disk, ms, &st);
    xg_cache *c = j->c;
    job_free(j);
    pthread_mutex_lock(&c->lock);
    c->async_running--;
    pthread_cond_broadcast(&c->async_done);
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

static job *job_new(xg_cache *c, const char *key, const char *name, const xe_graph *body, xe_tensor *const *in,
                    bool generic, bool must, xg_target target, int arch, xe_status *st)
{
    job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->c = c;
    j->key = strdup(key);
    j->name = strdup(name);
    j->body = xe_graph_clone(body, st);
    j->n_in = body->n_inputs;
    j->types = calloc((size_t)j->n_in + 1, sizeof *j->types);
    j->generic = generic;
    j->must = must;
    const char *bar = strchr(key, '|'); /* key = "VERSION|FINGERPRINT|..." */
    snprintf(j->fp, sizeof j->fp, "%.*s", bar ? (int)strcspn(bar + 1, "|") : 0, bar ? bar + 1 : "");
    j->target = target;
    j->arch = arch;
    if (!j->key || !j->name || !j->body || !j->types) {
        job_free(j);
        return NULL;
    }
    for (int k = 0; k < j->n_in; k++)
        j->types[k] = (xe_type){in[k]->dtype, in[k]->shape};
    return j;
}

/* ---- the runtime ------------------------------------------------------------------------ */

typedef enum decision {
    RUN,      /* e->prog is ready */
    FALLBACK, /* run per op this time */
    COMPILE,  /* this thread compiles (e->compiling set) */
} decision;

/* Past --max_compiles_per_cluster (must-compile aside): warns once, true. Under the lock. */
static bool over_budget(xg_cache *c, cluster_state *s, const char *name, bool must)
{
    if (s->compiles < c->o.max_compiles_per_cluster || must)
        return false;
    if (!s->stopped_warned)
        fprintf(stderr, "xlac: warning: %s compiled %d times; it now runs op by op "
                        "(raise --max_compiles_per_cluster)\n", name, s->compiles);
    s->stopped_warned = true;
    return true;
}

/* Whether the inputs are the types of s's last signature that ran, and it still can. */
static bool same_as_last_hit(const cluster_state *s, xe_tensor *const *in, int n, xg_target target, int arch)
{
    if (!s->hit || !s->hit->prog || s->hit->failed || s->hit_n != n || s->hit_target != target ||
        s->hit_arch != arch)
        return false;
    for (int k = 0; k < n; k++)
        if (in[k]->dtype != s->hit_types[k].dtype || !xe_shape_equal(&in[k]->shape, &s->hit_types[k].shape))
            return false;
    return true;
}

static void remember_hit(cluster_state *s, entry *e, const char *key, xe_tensor *const *in, int n,
                         xg_target target, int arch)
{
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
    s->hit_key = k;
    s->hit_types = t;
    s->hit_n = n;
    s->hit_target = target;
    s->hit_arch = arch;
}

/* Whether this thread may compile e's program now (then e->compiling is set). Under the lock. */
static bool claim_compile(xg_cache *c, cluster_state *s, entry *e, const char *name, bool must)
{
    if (e->prog || e->failed || e->compiling || over_budget(c, s, name, must))
        return false;
    e->compiling = true;
    return true;
}

#define WHY_OOM "out of memory"
#define WHY_FAILED "failed to compile earlier"
#define WHY_SLOW "slower compiled than per op (demoted)"
#define WHY_COMPILING "being compiled (by another thread, or in the background)"
#define WHY_THRESHOLD "seen fewer than --compile_threshold times"
#define WHY_BUDGET "compiled --max_compiles_per_cluster times already"
#define WHY_ASYNC "compiling in the background (--async_compilation)"
#define WHY_COMPILE "compile failed"
#define WHY_SHAPES "the program cannot serve these shapes"
#define WHY_RUN "the compiled program failed to run"

/* Where decide answers FALLBACK, *why says why (one of the WHY_ phrases above). */
static decision decide(xg_cache *c, const char *fp, const char *name, const xe_graph *body, xe_tensor *const *in, int n,
                       xg_target target, int arch, bool must, xe_text *key, entry **out, const char **why)
{
    cluster_state *s = cluster_get(c, fp, name);
    if (s && same_as_last_hit(s, in, n, target, arch) && !s->hit->slow) {
        xe_text_printf(key, "%s", s->hit_key);
        *out = s->hit;
        return RUN;
    }
    signature_key(c, fp, in, n, NULL, target, arch, key);
    entry *e = key->oom ? NULL : entry_get(c, key->buf);
    *why = WHY_OOM;
    if (!s || !e)
        return FALLBACK;
    bool new_sig = e->seen == 0;
    e->seen++;
    char pat[40] = "";
    if (!e->prog && !e->failed && !e->compiling)
        xg_shape_pattern(body, in, n, pat);
    if (!e->prog && !e->failed && !e->compiling && pattern_is_dynamic(c, s, pat, new_sig)) {
        xe_text_truncate(key, 0); /* this shape joins the pattern's shape-generic program */
        signature_key(c, fp, in, n, pat, target, arch, key);
        int seen = e->seen;
        if (key->oom || !(e = entry_get(c, key->buf)))
            return FALLBACK; /* *why: WHY_OOM */
        if (e->seen < seen)
            e->seen = seen;
    }
    *out = e;
    *why = e->failed ? WHY_FAILED : e->slow ? WHY_SLOW : WHY_COMPILING;
    if (e->failed || e->slow || (e->compiling && !e->prog))
        return FALLBACK;
    if (e->prog) {
        remember_hit(s, e, key->buf, in, n, target, arch);
        return RUN;
    }
    *why = WHY_THRESHOLD;
    if (e->seen < c->o.compile_threshold && !must)
        return FALLBACK;
    *why = WHY_BUDGET;
    return claim_compile(c, s, e, name, must) ? COMPILE : FALLBACK;
}

/* The caller's fingerprint of body, or computed. */
static void fingerprint_of(const xe_graph *body, const char *fingerprint, char fp[40])
{
    if (fingerprint && strlen(fingerprint) < 40)
        snprintf(fp, 40, "%s", fingerprint);
    else
        xg_fingerprint(body, fp);
}

void xg_cluster_per_op_time(xg_cache *c, const xe_graph *body, const char *fingerprint, xe_device dev,
                            xe_tensor *const *inputs, double us)
{
    xg_target target = xg_target_for_device(dev);
    int arch = xg_backend_for(target)->device_arch();
    char fp[40];
    fingerprint_of(body, fingerprint, fp);
    xe_text key = {0};
    pthread_mutex_lock(&c->lock);
    signature_key(c, fp, inputs, body->n_inputs, NULL, target, arch, &key);
    entry *e = key.oom ? NULL : entry_get(c, key.buf);
    /* only the runs before --compile_threshold, and none that shared the machine with a compile */
    bool comparable = c->o.compile_threshold > 1 && e && !e->prog && !e->compiling && quiet_run(c, us);
    if (comparable && us > 0 && (e->per_op_us == 0 || us < e->per_op_us))
        e->per_op_us = us;
    pthread_mutex_unlock(&c->lock);
    xe_text_free(&key);
}

/* Whether e's next compiled run is timed for a verdict (under the lock). */
static bool wants_timing(const entry *e)
{
    return e && e->per_op_us > 0 && !e->slow && e->timed <= XG_DEMOTE_RUNS;
}

/* A timed compiled run of e; after XG_DEMOTE_RUNS of them (the first excluded), the verdict. */
static void note_run(xg_cache *c, entry *e, const char *name, double us)
{
    pthread_mutex_lock(&c->lock);
    if (!quiet_run(c, us)) { /* another thread compiled meanwhile: not like the per-op runs, not counted */
        pthread_mutex_unlock(&c->lock);
        return;
    }
    if (e->timed++ > 0 && (e->run_us == 0 || us < e->run_us))
        e->run_us = us;
    if (e->timed == XG_DEMOTE_RUNS + 1 && e->run_us > e->per_op_us * XG_DEMOTE_MARGIN) {
        e->slow = true;
        c->stats.demoted++;
        fprintf(stderr, "xlac: %s ran slower compiled (%.3f ms) than per op (%.3f ms), best of its runs; "
                "this signature runs per op from now on\n", name, e->run_us / 1e3, e->per_op_us / 1e3);
    }
    pthread_mutex_unlock(&c->lock);
}

static void count(xg_cache *c, uint64_t *counter)
{
    pthread_mutex_lock(&c->lock);
    (*counter)++;
    pthread_mutex_unlock(&c->lock);
}

/*
 * Compiles (or loads) the program for key: on a background thread when
 * async (*prog stays NULL: per op this time), else here. A failure
 * without must-compile has already warned and leaves *prog NULL.
 */
static xe_code compile_now(xg_cache *c, job *j, bool async, xg_program **prog, xe_status *st)
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
    finish_job(j, code, *prog, disk, ms, &keep);
    job_free(j);
    if (code != XE_OK) {
        *prog = NULL;
        if (must)
            return code;
        xe_status_clear(st);
    }
    return XE_OK;
}

/* Marks a signature failed (it runs per op from now on); warns once when what is given. */
static void mark_failed(xg_cache *c, const char *key, const char *name, const char *what, const xe_status *st)
{
    char first[400];
    xg_first_line(st->msg, first, sizeof first);
    pthread_mutex_lock(&c->lock);
    entry *e = NULL;
    HASH_FIND_STR(c->entries, key, e);
    if (e && !e->failed && what)
        fprintf(stderr, "xlac: warning: %s failed to %s (%s); running it op by op\n", name, what, first);
    if (e) {
        e->failed = true;
        e->compiling = false;
    }
    pthread_mutex_unlock(&c->lock);
}

/* Step 2 of xg_run_cluster: compile (or start compiling) the signature of key. */
static xe_code compile_signature(xg_cache *c, const char *key, const xe_graph *body, const char *name,
                                 xe_tensor *const *inputs, bool must, xg_target target, int arch,
                                 xg_program **prog, xe_status *st)
{
    bool generic = strstr(key, "|generic:") != NULL;
    job *j = job_new(c, key, name, body, inputs, generic, must, target, arch, st);
    if (j)
        return compile_now(c, j, c->o.async_compilation && !must, prog, st);
    if (st->code == XE_OK)
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
    mark_failed(c, key, name, must ? NULL : "compile", st);
    if (must)
        return st->code;
    xe_status_clear(st);
    return XE_OK;
}

/*
 * A shape its shape-generic program cannot serve (outputs of one kernel
 * that no longer share a shape): this signature's own program, found or
 * compiled now, within the cluster's budget. NULL: per op this time.
 */
static xg_program *specific_program(xg_cache *c, const char *fp, const xe_graph *body, const char *name,
                                    xe_tensor *const *inputs, bool must, xg_target target, int arch,
                                    xe_code *code, xe_status *st)
{
    xe_text key = {0};
    xg_program *prog = NULL;
    pthread_mutex_lock(&c->lock);
    signature_key(c, fp, inputs, body->n_inputs, NULL, target, arch, &key);
    entry *e = key.oom ? NULL : entry_get(c, key.buf);
    cluster_state *s = cluster_get(c, fp, name);
    if (e && e->prog)
        prog = e->prog;
    bool compile = e && s && claim_compile(c, s, e, name, must);
    pthread_mutex_unlock(&c->lock);
    if (compile && key.buf)
        *code = compile_signature(c, key.buf, body, name, inputs, must, target, arch, &prog, st);
    xe_text_free(&key);
    return prog;
}

/* compile_signature, telling *info how long it took and, when nothing is ready, why. */
static xe_code timed_compile(xg_cache *c, const char *key, const xe_graph *body, const char *name,
                             xe_tensor *const *inputs, bool must, xg_target target, int arch, xg_program **prog,
                             xg_run_info *info, xe_status *st)
{
    double t0 = now_ms();
    xe_code code = compile_signature(c, key, body, name, inputs, must, target, arch, prog, st);
    info->compile_ms = now_ms() - t0;
    info->compiled = *prog != NULL;
    info->reason = *prog ? NULL : c->o.async_compilation && !must ? WHY_ASYNC : WHY_COMPILE;
    return code;
}

/*
 * Step 3 of xg_run_cluster_info: runs *prog; a call the program cannot
 * serve (XE_ERR_UNSUPPORTED) goes to this signature's own program if this
 * one was shape-generic, else per op, quietly (an empty max: per op says
 * why). *prog is NULL when nothing ran.
 */
static xe_code run_step(xg_cache *c, const char *k, const char *fp, const xe_graph *body, const char *name,
                        xe_tensor *const *inputs, xe_tensor **outputs, bool must, xg_target target, int arch,
                        xg_program **prog, entry *timed, xg_run_info *info, xe_status *st)
{
    xe_code code = XE_OK;
    double t0 = timed ? xe_now_us() : 0;
    xe_code r = xg_program_run(*prog, inputs, body->n_inputs, outputs, body->n_outputs, st);
    if (r == XE_OK && timed) /* compiled runs timed against the per-op run: demotion */
        note_run(c, timed, name, xe_now_us() - t0);
    if (r == XE_ERR_UNSUPPORTED && strstr(k, "|generic:")) {
        xe_status_clear(st);
        *prog = specific_program(c, fp, body, name, inputs, must, target, arch, &code, st);
        r = code == XE_OK && *prog ? xg_program_run(*prog, inputs, body->n_inputs, outputs, body->n_outputs, st)
                                   : XE_OK;
    }
    if (code != XE_OK || r == XE_OK)
        return code;
    info->reason = r == XE_ERR_UNSUPPORTED ? WHY_SHAPES : WHY_RUN;
    if (r == XE_ERR_UNSUPPORTED) {
        xe_status_clear(st);
    } else if (must) {
        code = st->code;
    } else {
        mark_failed(c, k, name, "run", st);
        xe_status_clear(st);
    }
    *prog = NULL;
    return code;
}

xe_code xg_run_cluster(xg_cache *c, const xe_graph *body, const char *fingerprint, const char *cluster_name,
                       xe_device dev, xe_tensor *const *inputs, xe_tensor **outputs, bool must_compile,
                       xg_outcome *outcome, xe_status *st)
{
    xg_run_info info = {.want_signature = false};
    return xg_run_cluster_info(c, body, fingerprint, cluster_name, dev, inputs, outputs, must_compile, outcome,
                               &info, st);
}

xe_code xg_run_cluster_info(xg_cache *c, const xe_graph *body, const char *fingerprint, const char *cluster_name,
                            xe_device dev, xe_tensor *const *inputs, xe_tensor **outputs, bool must_compile,
                            xg_outcome *outcome, xg_run_info *info, xe_status *st)
{
    xg_target target = xg_target_for_device(dev);
    int arch = xg_backend_for(target)->device_arch();
    char fp[40];
    fingerprint_of(body, fingerprint, fp);
    xe_text key = {0};
    entry *e = NULL;
    *outcome = XG_FALLBACK;
    info->hit = info->compiled = false;
    info->compile_ms = 0;
    info->reason = NULL;
    /* 1. decide under the lock */
    pthread_mutex_lock(&c->lock);
    decision d = decide(c, fp, cluster_name, body, inputs, body->n_inputs, target, arch, must_compile, &key, &e,
                        &info->reason);
    bool failed_before = d == FALLBACK && e && e->failed;
    xg_program *prog = d == RUN ? e->prog : NULL;
    entry *timed = wants_timing(e) ? e : NULL;
    if (d == RUN)
        c->stats.cache_hits++;
    pthread_mutex_unlock(&c->lock);
    const char *k = key.buf ? key.buf : "";
    if (info->want_signature)
        snprintf(info->signature, sizeof info->signature, "%s", k);
    else
        info->signature[0] = '\0';
    info->hit = d == RUN;
    xe_code code = XE_OK;
    if (failed_before && must_compile)
        code = xe_fail(st, XE_ERR_COMPILE, "failed to compile earlier");
    /* 2. compile without it */
    if (code == XE_OK && d == COMPILE)
        code = timed_compile(c, k, body, cluster_name, inputs, must_compile, target, arch, &prog, info, st);
    /* 3. run, or leave it to the per-op path */
    if (code == XE_OK && prog)
        code = run_step(c, k, fp, body, cluster_name, inputs, outputs, must_compile, target, arch, &prog, timed,
                        info, st);
    xe_text_free(&key);
    if (code != XE_OK)
        return xe_status_prefix(st, "%s (must compile): ", cluster_name);
    count(c, prog ? &c->stats.launches : &c->stats.fallbacks);
    *outcome = prog ? XG_RAN : XG_FALLBACK;
    if (!prog && !info->reason)
        info->reason = WHY_SHAPES;
    return XE_OK;
}
