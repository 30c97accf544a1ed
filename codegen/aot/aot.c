/*
 * Ahead-of-time compilation (xlac-compile): a cluster at its declared
 * input shapes, for a named target, without running it and without a GPU.
 * Writes the dump files (source, plan, log, PTX) and the binary
 * (CLUSTER.so, CLUSTER.cubin, or CLUSTER.ptx when NVRTC does not know
 * the architecture; CLUSTER.partK.cubin for each part of a program NVRTC
 * compiled in parts) into the output folder; with a seed folder, also
 * stores the program in that disk cache under the key the JIT forms for
 * the same cluster at the same shapes, so a deployment's first run loads
 * it instead of compiling.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "backend.h"
#include "compile.h"
#include "cache_impl.h"
#include "xg_impl.h"
#include "xlac/escape.h"

/* --seed-cache: the program stored in the disk cache at dir under the key the JIT looks up. */
static xe_code seed(const char *dir, const char *key, const xg_artifact *a, const xg_options *o,
                    xe_status *st)
{
    xg_disk d = {.dir = NULL};
    xg_disk_open(&d, dir); /* warns and stays closed when dir is unusable */
    if (!d.dir)
        return xe_fail(st, XE_ERR_IO, "--seed-cache %s: the folder cannot be used as a disk cache",
                       dir);
    d.max_bytes = (unsigned long long)o->cache_max_mb << 20;
    xg_disk_store(&d, key, a);
    char name[64], path[4200];
    xg_disk_name(key, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", d.dir, name);
    xe_code c = access(path, R_OK) == 0
                    ? XE_OK
                    : xe_fail(st, XE_ERR_IO, "--seed-cache: %s was not written", path);
    xg_disk_close(&d);
    return c;
}

/*
 * CLUSTER.so, CLUSTER.cubin or CLUSTER.ptx; a program compiled in parts: CLUSTER.partK.cubin per
 * part (CLUSTER: the cluster's name made a file name).
 */
static xe_code write_code(const xg_artifact *a, const xg_backend *b, const char *out_dir,
                          const char *cluster, xe_status *st)
{
    char path[4096], cluster_name[XE_ESC_MAX + 1];
    xe_esc_file_name(cluster_name, sizeof cluster_name, cluster);
    int n = xg_cubins_count(a->code, a->code_len);
    if (n <= 0) {
        snprintf(path, sizeof path, "%s/%s.%s", out_dir, cluster_name, b->compiler.code_ext(a));
        return xg_write_file(path, a->code, a->code_len, st);
    }
    xe_code c = XE_OK;
    for (int i = 0; i < n && c == XE_OK; i++) {
        size_t len;
        const void *image = xg_cubins_get(a->code, i, &len);
        snprintf(path, sizeof path, "%s/%s.part%d.%s", out_dir, cluster_name, i,
                 b->compiler.code_ext(a));
        c = xg_write_file(path, image, len, st);
    }
    return c;
}

xe_code xg_compile_ahead(const xe_graph *body, const char *cluster_name, xg_target target, int arch,
                         const char *out_dir, const char *seed_dir, const xg_options *o,
                         double *compiler_ms, bool *is_ptx, xe_status *st)
{
    xe_type *types = calloc((size_t)body->n_inputs + 1, sizeof *types);
    if (!types)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int k = 0; k < body->n_inputs; k++) {
        types[k] = body->nodes[body->inputs[k]]->type;
        if (!xe_shape_is_known(&types[k].shape)) {
            free(types);
            return xe_fail(st, XE_ERR_USAGE,
                           "%s: input %d has unknown dims; ahead-of-time compilation needs "
                           "declared shapes",
                           cluster_name, k);
        }
    }
    xg_options opt = *o;
    opt.dump_dir = out_dir;
    xg_artifact *a = NULL;
    xe_code c = xg_build(body, types, false, target, arch, &opt, &a, st);
    const xg_backend *b = xg_backend_for(target);
    char *key = xg_signature_key(body, types, target, b->compiler.arch(arch), o);
    free(types);
    if (c == XE_OK && compiler_ms)
        *compiler_ms = a->compiler_ms;
    if (c == XE_OK && is_ptx)
        *is_ptx = a->is_ptx;
    if (c == XE_OK) {
        c = xg_dump_artifact(a, out_dir, cluster_name, key, st);
    } else if (a) { /* the compiler failed: its source and log say why */
        xe_status ds;
        if (xg_dump_artifact(a, out_dir, cluster_name, key, &ds) != XE_OK)
            fprintf(stderr, "xlac-compile: warning: dump failed: %s\n", ds.msg);
    }
    if (c == XE_OK)
        c = write_code(a, b, out_dir, cluster_name, st);
    if (c == XE_OK && seed_dir)
        c = seed(seed_dir, key, a, o, st);
    xg_artifact_destroy(a);
    free(key);
    return c;
}
