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
 *      error naming the cluster).
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

#define KEY_VERSION "xlac-cache-v4"

/* Hash of the code generator's sources (CMake): programs of another generator never match. */
extern const char xg_codegen_id[];

typedef struct entry {
    char *key;
    xg_program *prog;     /* loaded program, NULL until compiled */
    int seen;             /* times this signature was asked for */
    bool failed, compiling;
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
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- fingerprints and keys ----------------------------------------------------------- */

static void attr_text(xe_text *t, const xe_attr *a)
{
    xe_text_printf(t, " %s=", a->name);
    switch (a->kind) {
    case XE_ATTR_INT:
    case XE_ATTR_BOOL: xe_text_printf(t, "%lld", (long long)a->i); break;
    case XE_ATTR_FLOAT: xe_text_printf(t, "%a", a->f); break;
    case XE_ATTR_STRING: xe_text_printf(t, "\"%s\"", a->s); break;
    case XE_ATTR_DTYPE: xe_text_printf(t, "%s", xe_dtype_name(a->dtype)); break;
    case XE_ATTR_INTS:
        for (int k = 0; k < a->n; k++)
            xe_text_printf(t, "%s%lld", k ? "," : "[", (long long)a->ints[k]);
        xe_text_printf(t, "]");
        break;
    case XE_ATTR_FLOATS:
        for (int k = 0; k < a->n; k++)
            xe_text_printf(t, "%s%a", k ? "," : "[", a->floats[k]);
        xe_text_printf(t, "]");
        break;
    }
}

/* Canonical text of a body: node k is "%k", inputs by position, annotations left out. */
static void canonical_text(xe_text *t, const xe_graph *b)
{
    for (int i = 0; i < b->n_nodes; i++) {
        const xe_node *n = b->nodes[i];
        char ty[128];
        xe_text_printf(t, "%%%d=%s(", i, xe_op_name(n->op));
        for (int k = 0; k < n->n_inputs; k++)
            xe_text_printf(t, "%s%%%d", k ? "," : "", n->inputs[k]);
        xe_text_printf(t, ")");
        if (n->op == XE_OP_INPUT)
            xe_text_printf(t, ":%s", xe_type_str(&n->type, ty, sizeof ty));
        for (int k = 0; k < n->n_attrs; k++)
            if (n->attrs[k].name[0] != '@')
                attr_text(t, &n->attrs[k]);
        if (n->value) {
            char hex[33];
            xg_hash_hex(n->value->data, n->value->nbytes, hex);
            xe_text_printf(t, " value=%s:%s", xe_type_str(&(xe_type){n->value->dtype, n->value->shape}, ty, sizeof ty),
                           hex);
        }
        xe_text_printf(t, "\n");
    }
    for (int i = 0; i < b->n_outputs; i++)
        xe_text_printf(t, "out %%%d\n", b->outputs[i]);
}

void xg_hash_hex(const void *data, size_t len, char out[33])
{
    XXH128_hash_t h = XXH3_128bits(data ? data : "", len);
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
}

void xg_fingerprint(const xe_graph *body, char out[40])
{
    xe_text t = {0};
    canonical_text(&t, body);
    xg_hash_hex(t.buf, t.len, out);
    xe_text_free(&t);
}

/* One type's pattern: dtype, then per dim '1' or 'n'. */
static void type_pattern(const xe_type *t, xe_text *out)
{
    xe_text_printf(out, "%s:", xe_dtype_name(t->dtype));
    for (int d = 0; d < t->shape.rank; d++)
        xe_text_printf(out, "%c", t->shape.dims[d] == 1 ? '1' : 'n');
}

/*
 * Shape pattern: ranks and which dims are 1, of the inputs and of every
 * value the body computes from them (a slice or reshape can make a size-1
 * dim that the inputs do not have): what a shape-generic program depends
 * on, so one program per pattern serves every shape that has it. Written
 * as the 128-bit hash of that text (32 hex digits).
 */
static void shape_pattern(const xe_graph *body, xe_tensor *const *in, int n, char out[40])
{
    xe_text t = {0};
    xe_type *ins = calloc((size_t)n + 1, sizeof *ins);
    xe_type *types = calloc((size_t)body->n_nodes + 1, sizeof *types);
    for (int k = 0; ins && k < n; k++)
        ins[k] = (xe_type){in[k]->dtype, in[k]->shape};
    xe_status st;
    bool inferred = ins && types && xg_body_types(body, ins, types, &st) == XE_OK;
    const xe_type *ty = inferred ? types : ins; /* the inputs alone when inference fails */
    int count = !ins ? 0 : inferred ? body->n_nodes : n;
    for (int k = 0; k < count; k++) {
        xe_text_printf(&t, "%s", k ? ";" : "");
        type_pattern(&ty[k], &t);
    }
    xg_hash_hex(t.buf, t.len, out);
    xe_text_free(&t);
    free(ins);
    free(types);
}

/*
 * The key of a signature: its input types (of the tensors in, or types
 * when in is NULL), or (pattern given) its shape-generic program's pattern.
 */
static void key_of(const char *fp, xe_tensor *const *in, const xe_type *types, int n, const char *pattern,
                   xg_target target, int arch, const xg_options *o, xe_text *key)
{
    xe_text_printf(key, "%s-%s|%s|", KEY_VERSION, xg_codegen_id, fp);
    if (pattern) {
        xe_text_printf(key, "generic:%s", pattern);
    } else {
        for (int k = 0; k < n; k++) {
            char ty[128];
            xe_type t = in ? (xe_type){in[k]->dtype, in[k]->shape} : types[k];
            xe_text_printf(key, "%s%s", k ? ";" : "", xe_type_str(&t, ty, sizeof ty));
        }
    }
    xe_text_printf(key, "|%s|arch=%d|fast_math=%d|%s", xg_target_get(target)->name, arch, o->fast_math,
                   xg_compiler_id(target, o));
}

static void signature_key(const xg_cache *c, const char *fp, xe_tensor *const *in, int n, const char *pattern,
                          xg_target target, int arch, xe_text *key)
{
    key_of(fp, in, NULL, n, pattern, target, arch, &c->o, key);
}

char *xg_signature_key(const xe_graph *body, const xe_type *types, xg_target target, int arch, const xg_options *o)
{
    char fp[40];
    xe_text key = {0};
    xg_fingerprint(body, fp);
    key_of(fp, NULL, types, body->n_inputs, NULL, target, arch, o, &key);
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

void xg_cache_destroy(xg_cache *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    while (c->async_running > 0) /* background compiles finish first */
        pthread_cond_wait(&c->async_done, &c->lock);
    pthread_mutex_unlock(&c->lock);
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

/* Disk hit, or build (and store); then load. Runs without the lock. */
static xe_code compile_job(job *j, xg_program **prog, bool *disk_hit, double *ms, xe_status *st)
{
    xg_artifact *a = NULL;
    double t0 = now_ms();
    /* with a dump folder every signature is built here, so that its dump is whole (source, plan, log) */
    *disk_hit = !j->c->o.dump_dir && xg_disk_load(&j->c->disk, j->key, j->target, &a);
    xe_code code = XE_OK;
    if (*disk_hit) {
        a->shape_generic = j->generic;
        if (xg_program_load(a, j->body, j->types, &j->c->o, prog, st) != XE_OK) { /* stale: rebuild */
            char why[sizeof st->msg + 32];
            snprintf(why, sizeof why, "loading it failed: %s", st->msg);
            xg_disk_reject(&j->c->disk, j->key, why);
            xg_artifact_destroy(a);
            a = NULL;
            *disk_hit = false;
            xe_status_clear(st);
        }
    }
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
    *ms = now_ms() - t0;
    xg_artifact_destroy(a);
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

static decision decide(xg_cache *c, const char *fp, const char *name, const xe_graph *body, xe_tensor *const *in, int n,
                       xg_target target, int arch, bool must, xe_text *key, entry **out)
{
    cluster_state *s = cluster_get(c, fp, name);
    if (s && same_as_last_hit(s, in, n, target, arch)) {
        xe_text_printf(key, "%s", s->hit_key);
        *out = s->hit;
        return RUN;
    }
    signature_key(c, fp, in, n, NULL, target, arch, key);
    entry *e = key->oom ? NULL : entry_get(c, key->buf);
    if (!s || !e)
        return FALLBACK;
    bool new_sig = e->seen == 0;
    e->seen++;
    char pat[40] = "";
    if (!e->prog && !e->failed && !e->compiling)
        shape_pattern(body, in, n, pat);
    if (!e->prog && !e->failed && !e->compiling && pattern_is_dynamic(c, s, pat, new_sig)) {
        xe_text_truncate(key, 0); /* this shape joins the pattern's shape-generic program */
        signature_key(c, fp, in, n, pat, target, arch, key);
        int seen = e->seen;
        if (key->oom || !(e = entry_get(c, key->buf)))
            return FALLBACK;
        if (e->seen < seen)
            e->seen = seen;
    }
    *out = e;
    if (e->failed || (e->compiling && !e->prog))
        return FALLBACK;
    if (e->prog) {
        remember_hit(s, e, key->buf, in, n, target, arch);
        return RUN;
    }
    if (e->seen < c->o.compile_threshold && !must)
        return FALLBACK;
    return claim_compile(c, s, e, name, must) ? COMPILE : FALLBACK;
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

xe_code xg_run_cluster(xg_cache *c, const xe_graph *body, const char *fingerprint, const char *cluster_name,
                       xe_device dev, xe_tensor *const *inputs, xe_tensor **outputs, bool must_compile,
                       xg_outcome *outcome, xe_status *st)
{
    xg_target target = xg_target_for_device(dev);
    int arch = xg_backend_for(target)->device_arch();
    char fp[40];
    if (fingerprint && strlen(fingerprint) < sizeof fp)
        snprintf(fp, sizeof fp, "%s", fingerprint);
    else
        xg_fingerprint(body, fp);
    xe_text key = {0};
    entry *e = NULL;
    *outcome = XG_FALLBACK;
    /* 1. decide under the lock */
    pthread_mutex_lock(&c->lock);
    decision d = decide(c, fp, cluster_name, body, inputs, body->n_inputs, target, arch, must_compile, &key, &e);
    bool failed_before = d == FALLBACK && e && e->failed;
    xg_program *prog = d == RUN ? e->prog : NULL;
    if (d == RUN)
        c->stats.cache_hits++;
    pthread_mutex_unlock(&c->lock);
    const char *k = key.buf ? key.buf : "";
    xe_code code = XE_OK;
    if (failed_before && must_compile)
        code = xe_fail(st, XE_ERR_COMPILE, "failed to compile earlier");
    /* 2. compile without it */
    if (code == XE_OK && d == COMPILE)
        code = compile_signature(c, k, body, cluster_name, inputs, must_compile, target, arch, &prog, st);
    /* 3. run, or leave it to the per-op path; a call the program cannot serve
          (XE_ERR_UNSUPPORTED) goes to this signature's own program if this one
          was shape-generic, else per op, quietly (an empty max: per op says why) */
    xe_code r = XE_OK;
    if (code == XE_OK && prog)
        r = xg_program_run(prog, inputs, body->n_inputs, outputs, body->n_outputs, st);
    if (r == XE_ERR_UNSUPPORTED && strstr(k, "|generic:")) {
        xe_status_clear(st);
        prog = specific_program(c, fp, body, cluster_name, inputs, must_compile, target, arch, &code, st);
        r = code == XE_OK && prog ? xg_program_run(prog, inputs, body->n_inputs, outputs, body->n_outputs, st)
                                  : XE_OK;
    }
    if (code == XE_OK && r != XE_OK) {
        if (r == XE_ERR_UNSUPPORTED) {
            xe_status_clear(st);
        } else if (must_compile) {
            code = st->code;
        } else {
            mark_failed(c, k, cluster_name, "run", st);
            xe_status_clear(st);
        }
        prog = NULL;
    }
    xe_text_free(&key);
    if (code != XE_OK)
        return xe_status_prefix(st, "%s (must compile): ", cluster_name);
    count(c, prog ? &c->stats.launches : &c->stats.fallbacks);
    *outcome = prog ? XG_RAN : XG_FALLBACK;
    return XE_OK;
}
