/*
 * The dump files of XLAC_DUMP_TO: each built module's source, plan (with
 * its cache key), compiler log and assembly, numbered module_NNNN so that
 * threads and processes dumping into one folder never take one number.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "compile.h"
#include "xg_impl.h"
#include "xlac/escape.h"
#include "xlac/io.h"

static xe_code dump_one(const char *dir, int id, const char *cluster, const char *ext,
                        const void *data, size_t len, xe_status *st)
{
    if (!data)
        return XE_OK;
    char path[1024];
    snprintf(path, sizeof path, "%s/module_%04d.%s.%s", dir, id, cluster, ext);
    return xg_write_file(path, data, len, st);
}

#define MAX_MODULES 100000 /* module numbers 0000 to 99999 */

/* One more than the highest NNNN (below MAX_MODULES) of the folder's module_NNNN.* files; 0 if
 * none. */
static long next_module_number(const char *dir)
{
    DIR *d = opendir(dir);
    long next = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        long id;
        int used = 0;
        if (sscanf(e->d_name, "module_%ld.%n", &id, &used) == 1 && used > 0 && id >= next &&
            id < MAX_MODULES - 1)
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
static xe_code claim_module_number(const char *dir, const char *cluster_name, int *id,
                                   xe_status *st)
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

xe_code xg_dump_artifact(const xg_artifact *a, const char *dir, const char *cluster,
                         const char *cache_key, xe_status *st)
{
    int id = 0;
    char
        cluster_name[XE_ESC_MAX + 1]; /* in the files' names: the cluster's name made a file name */
    xe_esc_file_name(cluster_name, sizeof cluster_name, cluster);
    if (xe_mkdirs(dir, 0777, st) != XE_OK ||
        claim_module_number(dir, cluster_name, &id, st) != XE_OK)
        return st->code;
    char *plan = NULL;
    size_t n =
        (a->plan_text ? strlen(a->plan_text) : 0) + (cache_key ? strlen(cache_key) : 0) + 256;
    if (!(plan = malloc(n)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    char target[32];
    const xg_backend *b = xg_backend_for(a->target);
    b->compiler.target_text(a, target, sizeof target);
    snprintf(plan, n, "cluster: %s\ntarget: %s\ncache key: %s\n%s", cluster_name, target,
             cache_key ? cache_key : "-", a->plan_text ? a->plan_text : "");
    xe_code c = dump_one(dir, id, cluster_name, b->render.source_ext, a->source,
                         a->source ? strlen(a->source) : 0, st);
    if (c == XE_OK)
        c = dump_one(dir, id, cluster_name, "plan.txt", plan, strlen(plan), st);
    if (c == XE_OK)
        c = dump_one(dir, id, cluster_name, "log", a->log ? a->log : "",
                     a->log ? strlen(a->log) : 0, st);
    if (c == XE_OK && a->ptx)
        c = dump_one(dir, id, cluster_name, "ptx", a->ptx, strlen(a->ptx), st);
    free(plan);
    return c;
}
