/*
 * The compilation cache through its public face (xg_run_cluster): hits,
 * new shapes, the switch to one shape-generic program, the compile limit,
 * the compile threshold, the disk cache (a second cache on the same
 * folder compiles nothing; corrupt, truncated and foreign files are misses
 * that get replaced; an unsafe folder is not used), fingerprints that
 * ignore names, and many threads on one cache.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_impl.h"
#include "xg_impl.h"
#include "xlac/xlac.h"

static const char *text = "xlac.graph v1\ninput x: f32[?,8]\ninput y: f32[?,8]\n"
                          "a = mul(x, y)\nb = add(a, x)\ns = reduce_sum(b, axes=[1])\noutput s\n";

typedef struct fixture {
    char dir[64];
    xe_graph *g;
    xg_options o;
} fixture;

static void fixture_init(fixture *f)
{
    xe_status st;
    snprintf(f->dir, sizeof f->dir, "/tmp/xlac-cache-test-XXXXXX");
    cr_assert_not_null(mkdtemp(f->dir));
    chmod(f->dir, 0700);
    f->g = xe_parse_string(text, "c.xg", &st);
    cr_assert_not_null(f->g, "%s", st.msg);
    xg_options_default(&f->o);
    f->o.cache_dir = f->dir;
}

static void fixture_fini(fixture *f)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    cr_assert_eq(system(cmd), 0);
    xe_graph_destroy(f->g);
}

/* Runs the cluster at [rows, 8]; returns whether compiled code ran, checks the value. */
static bool run_rows(xg_cache *c, const xe_graph *g, int rows)
{
    xe_status st;
    xe_shape sh = {2, {rows, 8}};
    xe_tensor *x = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st), *y = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st);
    for (int i = 0; i < rows * 8; i++) {
        ((float *)x->data)[i] = (float)(i % 5);
        ((float *)y->data)[i] = 2.0f;
    }
    xe_tensor *in[2] = {x, y}, *out[1] = {NULL};
    xg_outcome oc;
    cr_assert_eq(xg_run_cluster(c, g, NULL, "cluster_0", XE_DEV_CPU, in, out, false, &oc, &st), XE_OK, "%s", st.msg);
    if (oc == XG_RAN) {
        cr_assert_eq(out[0]->shape.dims[0], rows);
        for (int r = 0; r < rows; r++) {
            float want = 0;
            for (int j = 0; j < 8; j++)
                want += 3.0f * (float)((r * 8 + j) % 5);
            cr_assert_float_eq(((float *)out[0]->data)[r], want, 1e-4);
        }
        xe_tensor_release(out[0]);
    }
    xe_tensor_release(x);
    xe_tensor_release(y);
    return oc == XG_RAN;
}

static xg_stats stats_of(xg_cache *c)
{
    xg_stats s;
    xg_cache_stats(c, &s);
    return s;
}

Test(cache, hit_and_new_shape)
{
    fixture f;
    fixture_init(&f);
    xe_status st;
    xg_cache *c = xg_cache_new(&f.o, &st);
    cr_assert(run_rows(c, f.g, 4));
    cr_assert(run_rows(c, f.g, 4));
    cr_assert_eq(stats_of(c).compiles, 1);
    cr_assert_eq(stats_of(c).cache_hits, 1);
    cr_assert(run_rows(c, f.g, 5));
    cr_assert_eq(stats_of(c).compiles, 2);
    xg_cache_destroy(c);
    fixture_fini(&f);
}

Test(cache, many_batch_sizes_compile_a_handful_of_times)
{
    fixture f;
    fixture_init(&f);
    xe_status st;
    xg_cache *c = xg_cache_new(&f.o, &st);
    for (int rows = 2; rows < 42; rows += 2)
        cr_assert(run_rows(c, f.g, rows) || true);
    /* dynamic_after=2: two specialised programs, then one shape-generic one */
    cr_assert_leq(stats_of(c).compiles, 3, "compiles=%llu", (unsigned long long)stats_of(c).compiles);
    cr_assert(run_rows(c, f.g, 1000));
    cr_assert_leq(stats_of(c).compiles, 3);
    xg_cache_destroy(c);
    fixture_fini(&f);
}

Test(cache, threshold_and_compile_limit)
{
    fixture f;
    fixture_init(&f);
    xe_status st;
    f.o.compile_threshold = 2;
    f.o.dynamic_after = 100;
    f.o.max_compiles_per_cluster = 2;
    f.o.disk_cache = false;
    xg_cache *c = xg_cache_new(&f.o, &st);
    cr_assert_not(run_rows(c, f.g, 3)); /* first sight: per op */
    cr_assert(run_rows(c, f.g, 3));     /* second: compiled */
    cr_assert_not(run_rows(c, f.g, 4));
    cr_assert(run_rows(c, f.g, 4));
    cr_assert_not(run_rows(c, f.g, 5));
    cr_assert_not(run_rows(c, f.g, 5)); /* limit reached: per op from now on */
    cr_assert_eq(stats_of(c).compiles, 2);
    xg_cache_destroy(c);
    fixture_fini(&f);
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strstr(e->d_name, ".xlac") != NULL && e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static char *only_file(const char *dir)
{
    DIR *d = opendir(dir);
    char *path = NULL;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strstr(e->d_name, ".xlac") && e->d_name[0] != '.' && asprintf(&path, "%s/%s", dir, e->d_name) < 0)
            path = NULL;
    if (d)
        closedir(d);
    return path;
}

Test(cache, second_cache_on_the_same_folder_compiles_nothing)
{
    fixture f;
    fixture_init(&f);
    xe_status st;
    xg_cache *c1 = xg_cache_new(&f.o, &st);
    cr_assert(run_rows(c1, f.g, 6));
    cr_assert_eq(count_files(f.dir), 1);
    xg_cache_destroy(c1);
    xg_cache *c2 = xg_cache_new(&f.o, &st);
    cr_assert(run_rows(c2, f.g, 6));
    cr_assert_eq(stats_of(c2).compiles, 0);
    cr_assert_eq(stats_of(c2).disk_hits, 1);
    xg_cache_destroy(c2);
    fixture_fini(&f);
}

/* Damages the cached file with fn, then a new cache must recompile and replace it. */
static void damaged_file_is_a_miss(void (*damage)(const char *path))
{
    fixture f;
    fixture_init(&f);
    xe_status st;
    xg_cache *c1 = xg_cache_new(&f.o, &st);
    cr_assert(run_rows(c1, f.g, 6));
    xg_cache_destroy(c1);
    char *path = only_file(f.dir);
    cr_assert_not_null(path);
    damage(path);
    xg_cache *c2 = xg_cache_new(&f.o, &st);
    cr_assert(run_rows(c2, f.g, 6));
    cr_assert_eq(stats_of(c2).disk_hits, 0);
    cr_assert_eq(stats_of(c2).compiles, 1);
    xg_cache_destroy(c2);
    xg_cache *c3 = xg_cache_new(&f.o, &st); /* replaced by a good one */
    cr_assert(run_rows(c3, f.g, 6));
    cr_assert_eq(stats_of(c3).disk_hits, 1);
    xg_cache_destroy(c3);
    free(path);
    fixture_fini(&f);
}

static void truncate_half(const char *path)
{
    struct stat sb;
    stat(path, &sb);
    cr_assert_eq(truncate(path, sb.st_size / 2), 0);
}

static void flip_a_byte(const char *path)
{
    FILE *f = fopen(path, "r+b");
    fseek(f, 200, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, 200, SEEK_SET);
    fputc(ch ^ 0x5a, f);
    fclose(f);
}

static void replace_with_junk(const char *path)
{
    FILE *f = fopen(path, "wb");
    fputs("XLACBIN1 but not really a cache file", f);
    fclose(f);
}

Test(cache, truncated_file_is_a_miss)
{
    damaged_file_is_a_miss(truncate_half);
}

Test(cache, corrupt_file_is_a_miss)
{
    damaged_file_is_a_miss(flip_a_byte);
}

Test(cache, foreign_file_is_a_miss)
{
    damaged_file_is_a_miss(replace_with_junk);
}

Test(cache, group_writable_folder_is_not_used)
{
    fixture f;
    fixture_init(&f);
    chmod(f.dir, 0777);
    xe_status st;
    xg_cache *c = xg_cache_new(&f.o, &st);
    cr_assert(run_rows(c, f.g, 6));
    cr_assert_eq(count_files(f.dir), 0);
    xg_cache_destroy(c);
    fixture_fini(&f);
}

Test(cache, fingerprint_ignores_names_and_annotations)
{
    xe_status st;
    const char *a = "xlac.graph v1\ninput x: f32[4]\ny = exp(x)\noutput y\n";
    const char *b = "xlac.graph v1\ninput q: f32[4]\nz = exp(q, @cluster=\"cluster_9\")\noutput z\n";
    const char *c = "xlac.graph v1\ninput x: f32[4]\ny = tanh(x)\noutput y\n";
    xe_graph *ga = xe_parse_string(a, "a", &st), *gb = xe_parse_string(b, "b", &st), *gc = xe_parse_string(c, "c", &st);
    char fa[40], fb[40], fc[40];
    xg_fingerprint(ga, fa);
    xg_fingerprint(gb, fb);
    xg_fingerprint(gc, fc);
    cr_assert_str_eq(fa, fb);
    cr_assert_str_neq(fa, fc);
    xe_graph_destroy(ga);
    xe_graph_destroy(gb);
    xe_graph_destroy(gc);
}

typedef struct worker {
    xg_cache *c;
    const xe_graph *g;
    bool ok;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    w->ok = true;
    for (int i = 0; i < 20; i++)
        run_rows(w->c, w->g, 3 + i % 2);
    return NULL;
}

Test(cache, threads_share_one_cache)
{
    fixture f;
    fixture_init(&f);
    xe_status st;
    xg_cache *c = xg_cache_new(&f.o, &st);
    pthread_t th[4];
    worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){c, f.g, false};
        pthread_create(&th[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_assert(w[i].ok);
    }
    cr_assert_leq(stats_of(c).compiles, 2);
    xg_cache_destroy(c);
    fixture_fini(&f);
}

Test(cache, async_compilation_runs_per_op_until_ready)
{
    fixture f;
    fixture_init(&f);
    xe_status st;
    f.o.async_compilation = true;
    f.o.disk_cache = false;
    xg_cache *c = xg_cache_new(&f.o, &st);
    cr_assert_not(run_rows(c, f.g, 7)); /* compiling in the background: per op now */
    bool ran = false;
    for (int i = 0; i < 600 && !ran; i++) { /* up to a minute */
        ran = run_rows(c, f.g, 7);
        if (!ran)
            usleep(100000);
    }
    cr_assert(ran, "the background compile never finished");
    cr_assert_eq(stats_of(c).compiles, 1);
    xg_cache_destroy(c);
    fixture_fini(&f);
}
