/* Shared helpers for the cache tests (cachefx.h). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachefx.h"
#include "xlac/io.h"

void xt_capture_begin(xt_capture *k)
{
    snprintf(k->path, sizeof k->path, "/tmp/xlac-test-err-XXXXXX");
    int fd = mkstemp(k->path);
    cr_assert_geq(fd, 0);
    fflush(stderr);
    k->saved = dup(2);
    cr_assert_geq(dup2(fd, 2), 0);
    close(fd);
}

char *xt_capture_end(xt_capture *k)
{
    fflush(stderr);
    dup2(k->saved, 2);
    close(k->saved);
    FILE *f = fopen(k->path, "rb");
    cr_assert_not_null(f);
    char *buf = calloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = '\0';
    fclose(f);
    unlink(k->path);
    return buf;
}

xg_stats xt_stats(xg_cache *c)
{
    xg_stats s;
    xg_cache_stats(c, &s);
    return s;
}

static bool is_module(const char *name)
{
    return name[0] != '.' && strstr(name, ".xlac") != NULL;
}

int xt_module_count(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += is_module(e->d_name);
    if (d)
        closedir(d);
    return n;
}

char *xt_module_path(const char *dir)
{
    DIR *d = opendir(dir);
    char *path = NULL;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!is_module(e->d_name))
            continue;
        free(path);
        if (asprintf(&path, "%s/%s", dir, e->d_name) < 0)
            path = NULL;
    }
    if (d)
        closedir(d);
    return path;
}

void xt_cache_dir_init(xt_cache_dir *k, const char *tag, const char *graph_text)
{
    xe_status st;
    snprintf(k->dir, sizeof k->dir, "/tmp/xlac-%s-XXXXXX", tag);
    cr_assert_not_null(mkdtemp(k->dir));
    chmod(k->dir, 0700);
    k->g = xe_parse_string(graph_text, "fixture.xg", &st);
    cr_assert_not_null(k->g, "%s", st.msg);
    xg_options_default(&k->o);
    k->o.cache_dir = k->dir;
}

void xt_cache_dir_fini(xt_cache_dir *k)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s'; rm -rf '%s'", k->dir, k->dir);
    cr_assert_eq(system(cmd), 0);
    xe_graph_destroy(k->g);
}

void xt_mul_add_inputs(int rows, xe_tensor *in[2])
{
    xe_status st;
    xe_shape sh = {2, {rows, 8}};
    for (int k = 0; k < 2; k++) {
        in[k] = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st);
        cr_assert_not_null(in[k], "%s", st.msg);
    }
    for (int i = 0; i < rows * 8; i++) {
        ((float *)in[0]->data)[i] = (float)(i % 7);
        ((float *)in[1]->data)[i] = 0.5f;
    }
}

void xt_mul_add_check(xe_tensor *out, int rows)
{
    for (int i = 0; i < rows * 8; i++)
        cr_assert_float_eq(((float *)out->data)[i], 1.5f * (float)(i % 7), 1e-6, "element %d", i);
    xe_tensor_release(out);
}
