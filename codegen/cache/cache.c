/*
 * The compilation cache proper: its entries (one per signature key), the
 * state of each cluster (compiles, shape patterns, the signature that ran
 * last), the keys, and the stats.
 *
 * A cluster is identified by its fingerprint: a hash of its canonical text
 * (ops, attributes, dtypes, wiring; not names or annotations). A signature
 * key adds the concrete input types, the device and architecture, the
 * flags that change generated code, the compiler's identity and a format
 * version. Keys map to loaded programs in memory (uthash, one mutex, never
 * held while compiling) and to files on disk (cache_disk.c). What to do
 * with a signature (run, compile, per op) is the compile policy's
 * (compile_policy.c); one launch is the run step's (codegen/run/run_step.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "cache_state.h"
#include "compile.h"
#include "plan.h"

double xg_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- keys (cache_key.c) ---------------------------------------------------------------- */

/* The caller's fingerprint of body, or computed. */
static void fingerprint_of(const xe_graph *body, const char *fingerprint, char fp[40])
{
    if (fingerprint && strlen(fingerprint) < 40)
        snprintf(fp, 40, "%s", fingerprint);
    else
        xg_fingerprint(body, fp);
}

void xg_launch_init(xg_launch *l, xg_cache *c, const xe_graph *body, const char *fingerprint,
                    xe_device dev, xe_tensor *const *inputs)
{
    *l = (xg_launch){
        .c = c, .body = body, .inputs = inputs, .n = body->n_inputs, .dev = dev, .key = ""};
    l->target = xg_target_for_device(dev);
    l->arch = xg_backend_for(l->target)->runner.device_arch(dev);
    fingerprint_of(body, fingerprint, l->fp);
}

void xg_launch_key(const xg_launch *l, const char *pattern, xe_text *key)
{
    xg_key_of(l->fp, l->inputs, NULL, l->n, pattern, l->target, l->arch, &l->c->o,
              xg_cache_compiler_id(l->c, l->target), key);
}

char *xg_signature_key(const xe_graph *body, const xe_type *types, xg_target target, int arch,
                       const xg_options *o)
{
    char fp[40];
    xe_text key = {0};
    xg_fingerprint(body, fp);
    xg_key_of(fp, NULL, types, body->n_inputs, NULL, target, arch, o,
              xg_compiler_id(target, o, NULL), &key);
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
    pthread_mutex_init(&c->compiler_lock, NULL);
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
    xg_entry *e, *t;
    HASH_ITER(hh, c->entries, e, t)
    {
        HASH_DEL(c->entries, e);
        xg_program_destroy(e->prog);
        free(e->key);
        free(e);
    }
    xg_cluster_state *s, *u;
    HASH_ITER(hh, c->clusters, s, u)
    {
        HASH_DEL(c->clusters, s);
        free(s->hit_key);
        free(s->hit_types);
        free(s);
    }
    xg_disk_close(&c->disk);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->compiler_lock);
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

xg_entry *xg_entry_get(xg_cache *c, const char *key)
{
    xg_entry *e = NULL;
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

xg_cluster_state *xg_cluster_get(xg_cache *c, const char *fp, const char *name)
{
    char id[200]; /* "fp|name", without printf: this runs on every launch */
    size_t lf = strnlen(fp, 40), ln = name ? strnlen(name, 150) : 0;
    memcpy(id, fp, lf);
    id[lf] = '|';
    memcpy(id + lf + 1, name ? name : "", ln);
    id[lf + 1 + ln] = '\0';
    xg_cluster_state *s = NULL;
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
bool xg_pattern_is_dynamic(const xg_cache *c, xg_cluster_state *s, const char *pattern,
                           bool new_signature)
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

void xg_cache_count(xg_cache *c, uint64_t *counter)
{
    pthread_mutex_lock(&c->lock);
    (*counter)++;
    pthread_mutex_unlock(&c->lock);
}

/* Marks a signature failed (it runs per op from now on); warns once when what is given. */
void xg_mark_failed(xg_cache *c, const char *key, const char *name, const char *what,
                    const xe_status *st)
{
    char first[400];
    xg_first_line(st->msg, first, sizeof first);
    pthread_mutex_lock(&c->lock);
    xg_entry *e = NULL;
    HASH_FIND_STR(c->entries, key, e);
    if (e && !e->failed && what)
        xg_log(&c->o, XG_LOG_WARNING, "%s failed to %s (%s); running it op by op", name, what,
               first);
    if (e) {
        e->failed = true;
        e->compiling = false;
    }
    pthread_mutex_unlock(&c->lock);
}
