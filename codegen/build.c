/*
 * From a cluster to an artifact: plan, emit, and the target's backend
 * compiles. Also the backend of each target, the compiler identity that
 * goes into cache keys, and the dump files of XLAC_DUMP_TO.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "compile.h"
#include "plan.h"
#include "share.h"
#include "xg_impl.h"
#include "xlac/io.h"
#include "xlac/session.h"

void xg_artifact_destroy(xg_artifact *a)
{
    if (!a)
        return;
    free(a->code);
    free(a->meta);
    free(a->source);
    free(a->plan_text);
    free(a->log);
    free(a->ptx);
    free(a);
}

static const xg_backend *const backends[] = {[XG_TARGET_C] = &xg_backend_c, [XG_TARGET_CUDA] = &xg_backend_cuda};
#define N_BACKENDS (sizeof backends / sizeof backends[0])

const xg_backend *xg_backend_for(xg_target target)
{
    return backends[target];
}

const xg_target_info *xg_target_get(xg_target t)
{
    return &backends[t]->info;
}

bool xg_target_by_name(const char *name, xg_target *t)
{
    for (size_t i = 0; i < N_BACKENDS; i++)
        if (strcmp(name, backends[i]->info.name) == 0) {
            *t = backends[i]->target;
            return true;
        }
    return false;
}

xg_target xg_target_for_device(xe_device dev)
{
    for (size_t i = 0; i < N_BACKENDS; i++)
        if (backends[i]->info.device == dev)
            return backends[i]->target;
    return XG_TARGET_C;
}

const char *xg_compiler_words(xg_target t, bool is_ptx)
{
    return backends[t]->compiler_words(is_ptx);
}

const char *xg_compiler_id(xg_target target, const xg_options *o)
{
    return xg_backend_for(target)->compiler_id(o);
}

/* The backend's compiler, timed; the assembly text too when dumps are on. */
static xe_code compile_source(const xg_backend *b, xg_artifact *a, const xg_options *o, xe_status *st)
{
    double t0 = xe_now_us();
    xe_code c = b->compile(a, o, st);
    a->compiler_ms = (xe_now_us() - t0) / 1e3;
    if (c == XE_OK && o->dump_dir && b->assembly)
        a->ptx = b->assembly(a, o);
    return c;
}

xe_code xg_build(const xe_graph *body, const xe_type *in_types, bool shape_generic, xg_target target, int arch,
                 const xg_options *o, xg_artifact **out, xe_status *st)
{
    xg_plan *p = NULL;
    xg_artifact *a = calloc(1, sizeof *a);
    if (!a)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    a->target = target;
    a->arch = xg_backend_for(target)->arch(arch);
    a->shape_generic = shape_generic;
    xg_shares shares = {0};
    xe_code c = xg_plan_build(body, in_types, shape_generic, &p, st);
    if (c == XE_OK && !(a->source = xg_emit_program_shared(p, target, &shares, st)))
        c = st->code;
    if (c == XE_OK && (!(a->plan_text = xg_plan_text(p, target)) || !xg_shares_append_text(&shares, &a->plan_text) ||
                       !(a->meta = strdup(a->plan_text))))
        c = xe_fail(st, XE_ERR_NOMEM, "out of memory");
    xg_shares_free(&shares);
    if (c == XE_OK)
        c = compile_source(xg_backend_for(target), a, o, st);
    xg_plan_destroy(p);
    if (c == XE_ERR_COMPILE && a->source) { /* kept for the dumps */
        *out = a;
        return c;
    }
    if (c != XE_OK) {
        xg_artifact_destroy(a);
        return c;
    }
    *out = a;
    return XE_OK;
}

static xe_code dump_one(const char *dir, int id, const char *cluster, const char *ext, const void *data,
                        size_t len, xe_status *st)
{
    if (!data)
        return XE_OK;
    char path[1024];
    snprintf(path, sizeof path, "%s/module_%04d.%s.%s", dir, id, cluster, ext);
    return xg_write_file(path, data, len, st);
}

#define MAX_MODULES 100000 /* module numbers 0000 to 99999 */

/* One more than the highest NNNN (below MAX_MODULES) of the folder's module_NNNN.* files; 0 if none. */
static long next_module_number(const char *dir)
{
    DIR *d = opendir(dir);
    long next = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        long id;
        int used = 0;
        if (sscanf(e->d_name, "module_%ld.%n", &id, &used) == 1 && used > 0 && id >= next && id < MAX_MODULES - 1)
            next = id + 1;
    }
    if (d)
        closedir(d);
    return next;
}

/*
 * Claims a module number in dir by creating its plan file (O_EXCL: threads
 * and processes dumping into one folder never take the same number): the
 * number after the folder's highest, else the first free one.
 */
static xe_code claim_module_number(const char *dir, const char *cluster_name, int *id, xe_status *st)
{
    long first = next_module_number(dir);
    for (int pass = 0; pass < 2; pass++)
        for (long k = pass ? 0 : first; k < MAX_MODULES; k++) {
            char path[1024];
            snprintf(path, sizeof path, "%s/module_%04ld.%s.plan.txt", dir, k, cluster_name);
            int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
            if (fd >= 0) {
                close(fd);
                *id = (int)k;
                return XE_OK;
            }
            if (errno != EEXIST)
                return xe_fail(st, XE_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        }
    return xe_fail(st, XE_ERR_IO, "%s: no free module number (%d in use)", dir, MAX_MODULES);
}

xe_code xg_dump_artifact(const xg_artifact *a, const char *dir, const char *cluster_name, const char *cache_key,
                         xe_status *st)
{
    int id = 0;
    if (xe_mkdirs(dir, 0777, st) != XE_OK || claim_module_number(dir, cluster_name, &id, st) != XE_OK)
        return st->code;
    char *plan = NULL;
    size_t n = (a->plan_text ? strlen(a->plan_text) : 0) + (cache_key ? strlen(cache_key) : 0) + 256;
    if (!(plan = malloc(n)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    char target[32];
    const xg_backend *b = xg_backend_for(a->target);
    b->target_text(a, target, sizeof target);
    snprintf(plan, n, "cluster: %s\ntarget: %s\ncache key: %s\n%s", cluster_name, target,
             cache_key ? cache_key : "-", a->plan_text ? a->plan_text : "");
    xe_code c = dump_one(dir, id, cluster_name, b->source_ext, a->source, a->source ? strlen(a->source) : 0, st);
    if (c == XE_OK)
        c = dump_one(dir, id, cluster_name, "plan.txt", plan, strlen(plan), st);
    if (c == XE_OK)
        c = dump_one(dir, id, cluster_name, "log", a->log ? a->log : "", a->log ? strlen(a->log) : 0, st);
    if (c == XE_OK && a->ptx)
        c = dump_one(dir, id, cluster_name, "ptx", a->ptx, strlen(a->ptx), st);
    free(plan);
    return c;
}
