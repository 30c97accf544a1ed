/*
 * ONNX external data: a tensor whose bytes lie in a file beside the model
 * (data_location = EXTERNAL; keys location, offset, length), which is how
 * exporters store weights (torch writes model.onnx.data; models over 2 GB
 * have no other way). Each file a model names is opened once per model,
 * beneath the model's folder (xe_open_beneath: no '..', no absolute path,
 * no symbolic link out, a regular file only), and mapped whole, read-only
 * and private (mmap PROT_READ, MAP_PRIVATE). A tensor then views the
 * mapping without a copy when its offset is a multiple of 64 (so its data
 * is as aligned as an allocated buffer's) and it is not bool (whose bytes
 * are made 0/1); any other is copied out of the mapping. A view holds the
 * mapping (an xe_tensor_keeper), so the mapping is unmapped when the model
 * and the last tensor that views it are gone. Every offset and length is
 * checked against the file's size, without overflow, before any byte is
 * touched.
 *
 * A model held in memory (xe_onnx_load_memory) has no folder: its external
 * data can only name blocks of the host's memory (xe_onnx_block, how the
 * onnxruntime EP hands over its weights), found by exact name, viewed or
 * copied by the same rule, each view holding the block's keeper.
 *
 * The mapped file must not be shrunk while a model from it is in use (a
 * read past its new end is SIGBUS), as with onnxruntime, which maps
 * external data too: docs/files-and-signals.md.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_impl.h"
#include "xlac/io.h"
#include "xlac/vec.h"

#define OX_VIEW_ALIGN                                                                              \
    64 /* a tensor at an offset that is a multiple of this is viewed, not copied */

/* One data file mapped whole; freed when the table and every view have let it go. */
typedef struct ox_mapping {
    xe_tensor_keeper keeper; /* first: the keeper is the mapping */
    void *base;              /* NULL for an empty file */
    size_t len;
} ox_mapping;

/* A location the model names, and its file's mapping. */
typedef struct ox_file {
    char *location;
    ox_mapping *map;
} ox_file;

/* A block of the host's memory that the model names (xe_onnx_block), kept for one load. */
typedef struct ox_block {
    char *name;
    const uint8_t *data;
    size_t len;
    xe_tensor_keeper *keeper; /* retained while the table holds it */
} ox_block;

struct ox_files {
    char *dir; /* the model's folder; NULL: a model held in memory, whose data are blocks */
    ox_file *v;
    int n, cap;
    ox_block *blocks;
    int n_blocks;
};

static void mapping_drop(xe_tensor_keeper *k)
{
    ox_mapping *m = (ox_mapping *)k;
    if (m->base)
        munmap(m->base, m->len);
    free(m);
}

ox_files *ox_files_new(const char *dir)
{
    ox_files *f = calloc(1, sizeof *f);
    if (f && !(f->dir = strdup(dir))) {
        free(f);
        f = NULL;
    }
    return f;
}

ox_files *ox_files_host(const xe_onnx_block *b, int n)
{
    ox_files *f = calloc(1, sizeof *f);
    if (f && !(f->blocks = calloc((size_t)n + 1, sizeof *f->blocks))) {
        free(f);
        return NULL;
    }
    for (int i = 0; f && i < n; i++) {
        ox_block *k = &f->blocks[f->n_blocks];
        *k = (ox_block){.name = strdup(b[i].name ? b[i].name : ""),
                        .data = b[i].data,
                        .len = b[i].len,
                        .keeper = b[i].keeper};
        if (!k->name) {
            ox_files_free(f);
            return NULL;
        }
        xe_keeper_retain(k->keeper);
        f->n_blocks++;
    }
    return f;
}

void ox_files_free(ox_files *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->n; i++) {
        free(f->v[i].location);
        xe_keeper_release(&f->v[i].map->keeper);
    }
    for (int i = 0; i < f->n_blocks; i++) {
        free(f->blocks[i].name);
        xe_keeper_release(f->blocks[i].keeper);
    }
    free(f->blocks);
    free(f->v);
    free(f->dir);
    free(f);
}

/* Whether an external-data location stays inside the model's folder. */
static bool safe_location(const char *loc)
{
    if (!loc[0] || loc[0] == '/')
        return false;
    for (const char *p = loc; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return false;
        p += n + (p[n] == '/');
    }
    return true;
}

/* A byte count: decimal digits only, as onnxruntime reads it (" 12", "+12", "12 " are refused). */
static xe_code ext_number(const char *v, const char *key, const char *what, int64_t *out,
                          xe_status *st)
{
    int64_t x = 0;
    bool ok = *v != '\0';
    for (const char *p = v; ok && *p; p++) {
        ok = *p >= '0' && *p <= '9' && x <= (INT64_MAX - (*p - '0')) / 10;
        x = ok ? x * 10 + (*p - '0') : x;
    }
    if (!ok)
        return xe_fail(st, XE_ERR_GRAPH, "%s: external data %s '%s' is not a byte count", what, key,
                       v);
    *out = x;
    return XE_OK;
}

/* The keys location, offset (0 when absent) and length (-1 when absent). */
static xe_code ext_fields(const Onnx__TensorProto *t, const char *what, const char **loc,
                          int64_t *off, int64_t *len, xe_status *st)
{
    *loc = NULL;
    *off = 0;
    *len = -1;
    for (size_t k = 0; k < t->n_external_data; k++) {
        const Onnx__StringStringEntryProto *e = t->external_data[k];
        const char *key = e && e->key ? e->key : "", *v = e && e->value ? e->value : "";
        if (!strcmp(key, "location"))
            *loc = v;
        else if (!strcmp(key, "offset") && ext_number(v, key, what, off, st) != XE_OK)
            return st->code;
        else if (!strcmp(key, "length") && ext_number(v, key, what, len, st) != XE_OK)
            return st->code;
    }
    if (!*loc || !safe_location(*loc))
        return xe_fail(st, XE_ERR_GRAPH,
                       "%s: external data location '%s' must be a relative path "
                       "inside the model's folder (no '..', not absolute)",
                       what, *loc ? *loc : "");
    return XE_OK;
}

/* The file at loc beneath the folder, opened (a regular file only) and mapped whole. */
static ox_mapping *map_file(const ox_files *f, const char *loc, const char *what, const char *path,
                            xe_status *st)
{
    int fd = xe_open_beneath(f->dir, loc, st);
    if (fd < 0) {
        xe_status_prefix(st, "%s: external data: ", what);
        return NULL;
    }
    struct stat sb;
    ox_mapping *m = NULL;
    if (fstat(fd, &sb) != 0)
        xe_fail(st, XE_ERR_IO, "%s: external data %s: %s", what, path, strerror(errno));
    else if ((uint64_t)sb.st_size > SIZE_MAX)
        xe_fail(st, XE_ERR_GRAPH, "%s: external data %s is too big to map", what, path);
    else if (!(m = calloc(1, sizeof *m)))
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (m) {
        *m = (ox_mapping){.keeper = {.refcount = 1, .drop = mapping_drop},
                          .len = (size_t)sb.st_size};
        m->base = m->len ? mmap(NULL, m->len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
        if (m->base == MAP_FAILED) {
            xe_fail(st, XE_ERR_IO, "%s: external data %s: cannot map: %s", what, path,
                    strerror(errno));
            free(m);
            m = NULL;
        }
    }
    close(fd);
    return m;
}

/* The mapping of location loc: mapped on its first use, kept in the table for the next tensors. */
static ox_mapping *file_mapping(ox_files *f, const char *loc, const char *what, const char *path,
                                xe_status *st)
{
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->v[i].location, loc))
            return f->v[i].map;
    ox_file *v = XE_VEC_GROW(f->v, f->cap, f->n + 1, 4);
    if (!v) {
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    f->v = v;
    char *name = strdup(loc);
    ox_mapping *m = name ? map_file(f, loc, what, path, st) : NULL;
    if (!name)
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (!m) {
        free(name);
        return NULL;
    }
    f->v[f->n++] = (ox_file){.location = name, .map = m};
    return m;
}

/* nbytes at `at`, inside k's memory: a view when aligned and not bool, else a copy. */
static xe_tensor *take(const uint8_t *at, xe_tensor_keeper *k, xe_dtype dt, const xe_shape *s,
                       size_t nbytes, xe_status *st)
{
    if (!nbytes) /* an empty file has no mapping to point into */
        return xe_tensor_new(dt, s, XE_DEV_CPU, st);
    if (dt != XE_BOOL && (uintptr_t)at % OX_VIEW_ALIGN == 0)
        return xe_tensor_view(dt, s, at, k, st);
    xe_tensor *x = xe_tensor_new(dt, s, XE_DEV_CPU, st);
    if (!x)
        return NULL;
    memcpy(x->data, at, nbytes);
    if (dt == XE_BOOL)
        for (size_t i = 0; i < nbytes; i++)
            ((uint8_t *)x->data)[i] = ((uint8_t *)x->data)[i] != 0;
    return x;
}

/* The bytes at off in the host's block called loc (the model is held in memory). */
static xe_tensor *host_tensor(const ox_files *f, const char *loc, int64_t off, xe_dtype dt,
                              const xe_shape *s, size_t nbytes, const char *what, xe_status *st)
{
    const ox_block *b = NULL;
    for (int i = 0; !b && i < f->n_blocks; i++)
        if (!strcmp(f->blocks[i].name, loc))
            b = &f->blocks[i];
    if (!b) {
        xe_fail(st, XE_ERR_GRAPH, "%s: external data '%s' names no block the host gave", what, loc);
        return NULL;
    }
    if ((uint64_t)off > b->len || nbytes > b->len - (uint64_t)off) {
        xe_fail(st, XE_ERR_GRAPH,
                "%s: the host's block '%s' holds %zu bytes, the tensor needs %zu at offset %lld",
                what, loc, b->len, nbytes, (long long)off);
        return NULL;
    }
    return take(b->data + off, b->keeper, dt, s, nbytes, st);
}

xe_tensor *ox_ext_tensor(ox_files *f, const Onnx__TensorProto *t, xe_dtype dt, const xe_shape *s,
                         const char *what, xe_status *st)
{
    const char *loc;
    int64_t off, len;
    char path[PATH_MAX];
    size_t nbytes = (size_t)xe_shape_numel(s) * xe_dtype_size(dt);
    if (!f) {
        xe_fail(st, XE_ERR_GRAPH, "%s: external data is not allowed here", what);
        return NULL;
    }
    if (ext_fields(t, what, &loc, &off, &len, st) != XE_OK)
        return NULL;
    if (len >= 0 && (uint64_t)len != nbytes) {
        xe_fail(st, XE_ERR_GRAPH, "%s: external data length %lld, the tensor needs %zu bytes", what,
                (long long)len, nbytes);
        return NULL;
    }
    if (!f->dir)
        return host_tensor(f, loc, off, dt, s, nbytes, what, st);
    if (snprintf(path, sizeof path, "%s/%s", f->dir, loc) >= (int)sizeof path) {
        xe_fail(st, XE_ERR_GRAPH, "%s: external data path too long", what);
        return NULL;
    }
    ox_mapping *m = file_mapping(f, loc, what, path, st);
    if (!m)
        return NULL;
    if ((uint64_t)off > m->len || nbytes > m->len - (uint64_t)off) {
        xe_fail(st, XE_ERR_GRAPH,
                "%s: external data %s holds %zu bytes, the tensor needs %zu at offset %lld", what,
                path, m->len, nbytes, (long long)off);
        return NULL;
    }
    return take((const uint8_t *)m->base + off, &m->keeper, dt, s, nbytes, st);
}
