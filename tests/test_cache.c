/*
 * The compilation cache through its public face (xg_run_cluster): hits,
 * new shapes, the switch to one shape-generic program, the compile limit,
 * the compile threshold, the disk cache (a second cache on the same
 * folder compiles nothing; corrupt, truncated and foreign files are misses
 * that get replaced; an unsafe, read-only or uncreatable folder is not
 * used, with one warning), a compiler that fails (one warning per
 * signature, per-op fallback; an error under must-compile), dumps,
 * fingerprints that ignore names, many threads on one cache, and
 * background compilation.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <math.h>

#include "cache_impl.h"
#include "support/cachefx.h"
#include "xg_impl.h"
#include "xlac/xlac.h"

static const char *text = "xlac.graph v1\ninput x: f32[?,8]\ninput y: f32[?,8]\n"
                          "a = mul(x, y)\nb = add(a, x)\ns = reduce_sum(b, axes=[1])\noutput s\n";

typedef xt_cache_dir fixture;

static void fixture_init(fixture *f)
{
    xt_cache_dir_init(f, "cache-test", text);
}

static void fixture_fini(fixture *f)
{
    xt_cache_dir_fini(f);
}

/* The name the cluster runs under (twin clusters: two names, one fingerprint). */
static const char *cluster_name = "cluster_0";

/*
 * Runs the cluster at [rows, 8]: 1 when compiled code ran with the right
 * values, 0 when it answered per op, -1 on an error or a wrong value
 * (no Criterion asserts: worker threads call this too).
 */
static int try_rows(xg_cache *c, const xe_graph *g, int rows, char *why, size_t why_len)
{
    xe_status st;
    xe_shape sh = {2, {rows, 8}};
    xe_tensor *x = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st), *y = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st);
    if (!x || !y) {
        snprintf(why, why_len, "%.300s", st.msg);
        xe_tensor_release(x);
        xe_tensor_release(y);
        return -1;
    }
    for (int i = 0; i < rows * 8; i++) {
        ((float *)x->data)[i] = (float)(i % 5);
        ((float *)y->data)[i] = 2.0f;
    }
    xe_tensor *in[2] = {x, y}, *out[1] = {NULL};
    xg_outcome oc = XG_FALLBACK;
    int r = 0;
    if (xg_run_cluster(c, g, NULL, cluster_name, XE_DEV_CPU, in, out, false, &oc, &st) != XE_OK) {
        snprintf(why, why_len, "%.300s", st.msg);
        r = -1;
    } else if (oc == XG_RAN) {
        r = out[0] && out[0]->shape.rank == 1 && out[0]->shape.dims[0] == rows ? 1 : -1;
        snprintf(why, why_len, "wrong output shape");
        for (int i = 0; r == 1 && i < rows; i++) {
            double want = 0;
            for (int j = 0; j < 8; j++)
                want += 3.0 * (double)((i * 8 + j) % 5);
            double got = ((float *)out[0]->data)[i];
            if (!(got - want <= 1e-4 * (1 + want) && want - got <= 1e-4 * (1 + want))) { /* NaN fails */
                snprintf(why, why_len, "row %d: %g, want %g", i, got, want);
                r = -1;
            }
        }
        xe_tensor_release(out[0]);
    }
    xe_tensor_release(x);
    xe_tensor_release(y);
    return r;
}

/* Runs the cluster at [rows, 8]; returns whether compiled code ran, checks the value. */
static bool run_rows(xg_cache *c, const xe_graph *g, int rows)
{
    char why[512] = "";
    int r = try_rows(c, g, rows, why, sizeof why);
    cr_assert_geq(r, 0, "rows=%d: %s", rows, why);
    return r == 1;
}

Test(cache, hit_and_new_shape)
{
    fixture f;
    fixture_init(&f);
    xe_status st;
    xg_cache *c = xg_cache_new(&f.o, &st);
    cr_assert(run_rows(c, f.g, 4));
    cr_assert(run_rows(c, f.g, 4));
    cr_assert_eq(xt_stats(c).compiles, 1);
    cr_assert_eq(xt_stats(c).cache_hits, 1);
    cr_assert(run_rows(c, f.g, 5));
    cr_assert_eq(xt_stats(c).compiles, 2);
    /* the last signature that ran is remembered: alternating shapes still get their own programs */
    for (int k = 0; k < 4; k++)
        cr_assert(run_rows(c, f.g, k % 2 ? 5 : 4));
    cr_assert_eq(xt_stats(c).compiles, 2);
    cr_assert_eq(xt_stats(c).cache_hits, 5);
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
        cr_assert(run_rows(c, f.g, rows), "rows=%d ran per op", rows);
    /* dynamic_after=2: two specialised programs, then one shape-generic one */
    cr_assert_eq(xt_stats(c).compiles, 3, "compiles=%llu", (unsigned long long)xt_stats(c).compiles);
    cr_assert(run_rows(c, f.g, 1000));
    cr_assert(run_rows(c, f.g, 3));
    cr_assert_eq(xt_stats(c).compiles, 3);
    cr_assert_eq(xt_stats(c).fallbacks, 0);
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
    cr_assert_eq(xt_stats(c).compiles, 2);
    xg_cache_destroy(c);
    fixture_fini(&f);
}

/*
 * --max_compiles_per_cluster is per cluster: two clusters with one
 * fingerprint share the programs (a shape one compiled is a hit for the
 * other) but each has its own budget.
 */
Test(cache, compile_limit_is_per_cluster_and_programs_are_shared)
{
    fixture f;
    fixture_init(&f);
    xe_status st;
    f.o.dynamic_after = 100;
    f.o.max_compiles_per_cluster = 1;
    f.o.disk_cache = false;
    xg_cache *c = xg_cache_new(&f.o, &st);
    cluster_name = "cluster_0";
    cr_assert(run_rows(c, f.g, 3));
    cluster_name = "cluster_1";
    cr_assert(run_rows(c, f.g, 5)); /* its own budget */
    cr_assert(run_rows(c, f.g, 3)); /* cluster_0's program: a hit */
    cr_assert_not(run_rows(c, f.g, 7));
    cluster_name = "cluster_0";
    cr_assert(run_rows(c, f.g, 5)); /* cluster_1's program */
    cr_assert_not(run_rows(c, f.g, 9));
    cr_assert_eq(xt_stats(c).compiles, 2);
    cr_assert_eq(xt_stats(c).cache_hits, 2);
    xg_cache_destroy(c);
    fixture_fini(&f);
}

/*
 * The shape pattern of a generic program covers the values the body
 * computes: a slice that is one row at some shapes and two at others gets
 * a program for each pattern, and no shape falls back to per op.
 */
Test(cache, generic_programs_follow_size_one_dims_inside_the_body)
{
    fixture f;
    fixture_init(&f);
    xe_status st;
    f.o.disk_cache = false;
    xe_graph *g = xe_parse_string("xlac.graph v1\ninput x: f32[?,?]\na = neg(x)\n"
                                  "b = slice(a, begin=[1,0], end=[3,100])\nc = exp(b)\noutput c\n", "s.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xg_cache *c = xg_cache_new(&f.o, &st);
    const int rows[] = {4, 5, 2, 6, 7, 8, 2, 9};
    for (int i = 0; i < 8; i++) {
        xe_shape sh = {2, {rows[i], 3}};
        xe_tensor *x = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st), *out[1] = {NULL};
        for (int k = 0; k < rows[i] * 3; k++)
            ((float *)x->data)[k] = (float)k;
        xg_outcome oc = XG_FALLBACK;
        cr_assert_eq(xg_run_cluster(c, g, NULL, "cluster_0", XE_DEV_CPU, &x, out, false, &oc, &st), XE_OK, "%s",
                     st.msg);
        cr_assert_eq(oc, XG_RAN, "rows=%d ran per op", rows[i]);
        int64_t n = rows[i] >= 3 ? 2 : 1;
        cr_assert_eq(out[0]->shape.dims[0], n);
        for (int k = 0; k < n * 3; k++) /* row 1 on: x[3 + k] */
            cr_assert_float_eq(((float *)out[0]->data)[k], expf(-(float)(3 + k)), 1e-6f, "rows=%d k=%d", rows[i], k);
        xe_tensor_release(out[0]);
        xe_tensor_release(x);
    }
    cr_assert_eq(xt_stats(c).fallbacks, 0);
    cr_assert_leq(xt_stats(c).compiles, 4, "two programs per pattern at most before it goes generic");
    xg_cache_destroy(c);
    xe_graph_destroy(g);
    fixture_fini(&f);
}

/*
 * A shape that the pattern's generic program cannot serve (two outputs
 * that shared a kernel at the build shape, [n,8] both when b has no
 * columns, no longer share a shape) gets its own program, not per op.
 */
Test(cache, generic_program_refusing_a_shape_gives_way_to_a_specific_one)
{
    fixture f;
    fixture_init(&f);
    xe_status st;
    f.o.disk_cache = false;
    f.o.dynamic_after = 0;
    xe_graph *g = xe_parse_string("xlac.graph v1\ninput a: f32[?,1]\ninput w: f32[8]\ninput b: f32[?,?]\n"
                                  "p = mul(w, a)\nc = concat(p, b, axis=1)\nd = exp(p)\noutput c\noutput d\n",
                                  "m.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xg_cache *c = xg_cache_new(&f.o, &st);
    const int64_t shapes[][2] = {{8, 0}, {7, 3}, {7, 3}};
    for (int i = 0; i < 3; i++) {
        int64_t n = shapes[i][0], m = shapes[i][1];
        xe_shape sa = {2, {n, 1}}, sw = {1, {8}}, sb = {2, {n, m}};
        xe_tensor *in[3] = {xe_tensor_new(XE_F32, &sa, XE_DEV_CPU, &st), xe_tensor_new(XE_F32, &sw, XE_DEV_CPU, &st),
                            xe_tensor_new(XE_F32, &sb, XE_DEV_CPU, &st)};
        for (int64_t k = 0; k < n; k++)
            ((float *)in[0]->data)[k] = 0.1f * (float)k;
        for (int k = 0; k < 8; k++)
            ((float *)in[1]->data)[k] = (float)k;
        for (int64_t k = 0; k < n * m; k++)
            ((float *)in[2]->data)[k] = -1.0f;
        xe_tensor *out[2] = {NULL, NULL};
        xg_outcome oc = XG_FALLBACK;
        cr_assert_eq(xg_run_cluster(c, g, NULL, "cluster_0", XE_DEV_CPU, in, out, false, &oc, &st), XE_OK, "%s",
                     st.msg);
        cr_assert_eq(oc, XG_RAN, "call %d ran per op", i);
        cr_assert_eq(out[0]->shape.dims[1], 8 + m);
        for (int64_t r = 0; r < n; r++)
            for (int k = 0; k < 8; k++) {
                float want = 0.1f * (float)r * (float)k;
                cr_assert_float_eq(((float *)out[0]->data)[r * (8 + m) + k], want, 1e-6f);
                cr_assert_float_eq(((float *)out[1]->data)[r * 8 + k], expf(want), 1e-5f * expf(want));
            }
        for (int j = 0; j < 2; j++)
            xe_tensor_release(out[j]);
        for (int j = 0; j < 3; j++)
            xe_tensor_release(in[j]);
    }
    cr_assert_eq(xt_stats(c).compiles, 2, "the generic program and one for [7,3]");
    cr_assert_eq(xt_stats(c).fallbacks, 0);
    xg_cache_destroy(c);
    xe_graph_destroy(g);
    fixture_fini(&f);
}

Test(cache, second_cache_on_the_same_folder_compiles_nothing)
{
    fixture f;
    fixture_init(&f);
    xe_status st;
    xg_cache *c1 = xg_cache_new(&f.o, &st);
    cr_assert(run_rows(c1, f.g, 6));
    cr_assert_eq(xt_module_count(f.dir), 1);
    xg_cache_destroy(c1);
    xg_cache *c2 = xg_cache_new(&f.o, &st);
    cr_assert(run_rows(c2, f.g, 6));
    cr_assert_eq(xt_stats(c2).compiles, 0);
    cr_assert_eq(xt_stats(c2).disk_hits, 1);
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
    char *path = xt_module_path(f.dir);
    cr_assert_not_null(path);
    damage(path);
    xg_cache *c2 = xg_cache_new(&f.o, &st);
    cr_assert(run_rows(c2, f.g, 6));
    cr_assert_eq(xt_stats(c2).disk_hits, 0);
    cr_assert_eq(xt_stats(c2).compiles, 1);
    xg_cache_destroy(c2);
    xg_cache *c3 = xg_cache_new(&f.o, &st); /* replaced by a good one */
    cr_assert(run_rows(c3, f.g, 6));
    cr_assert_eq(xt_stats(c3).disk_hits, 1);
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
    cr_assert_eq(xt_module_count(f.dir), 0);
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
    int ran, per_op, wrong;
    char why[512];
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < 25; i++) {
        int r = try_rows(w->c, w->g, 3 + i % 3, w->why, sizeof w->why);
        w->ran += r == 1;
        w->per_op += r == 0;
        w->wrong += r < 0;
    }
    return NULL;
}

Test(cache, threads_share_one_cache)
{
    fixture f;
    fixture_init(&f);
    xe_status st;
    f.o.dynamic_after = 100;
    xg_cache *c = xg_cache_new(&f.o, &st);
    enum { N = 8 };
    pthread_t th[N];
    worker w[N];
    for (int i = 0; i < N; i++) {
        w[i] = (worker){.c = c, .g = f.g};
        cr_assert_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    int ran = 0, per_op = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(w[i].wrong, 0, "thread %d: %s", i, w[i].why);
        ran += w[i].ran;
        per_op += w[i].per_op;
    }
    xg_stats s = xt_stats(c);
    cr_assert_eq(s.compiles + s.disk_hits, 3, "one compile per shape, whichever thread got there first");
    cr_assert_eq((int)s.launches, ran);
    cr_assert_eq((int)s.fallbacks, per_op);
    cr_assert_gt(ran, 0, "ran=%d per_op=%d", ran, per_op); /* while one thread compiles, the others run per op */
    for (int rows = 3; rows < 6; rows++) /* every program landed */
        cr_assert(run_rows(c, f.g, rows));
    cr_assert_eq(xt_stats(c).compiles + xt_stats(c).disk_hits, 3);
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
    cr_assert_eq(xt_stats(c).compiles, 1);
    xg_cache_destroy(c);
    fixture_fini(&f);
}

/* ---- warnings: stderr captured into a temp file --------------------------------------- */

/* Runs the fixture's cluster three times at two shapes with the folder as set up; returns stderr. */
static char *run_with_unusable_folder(fixture *f)
{
    xt_capture k;
    xt_capture_begin(&k);
    xe_status st;
    xg_cache *c = xg_cache_new(&f->o, &st);
    bool ran = c && run_rows(c, f->g, 6) && run_rows(c, f->g, 6) && run_rows(c, f->g, 7);
    xg_stats s = c ? xt_stats(c) : (xg_stats){0};
    xg_cache_destroy(c);
    char *err = xt_capture_end(&k);
    cr_assert(ran, "%s", err);
    cr_assert_eq(s.compiles, 2);
    cr_assert_eq(s.disk_hits, 0);
    return err;
}

Test(cache, unsafe_folder_warns_once)
{
    fixture f;
    fixture_init(&f);
    chmod(f.dir, 0775); /* group-writable */
    char *err = run_with_unusable_folder(&f);
    cr_assert_eq(xt_occurrences(err, "xlac: warning: cache folder"), 1, "%s", err);
    cr_assert_eq(xt_occurrences(err, "xlac: warning"), 1, "%s", err);
    cr_assert_eq(xt_module_count(f.dir), 0);
    free(err);
    fixture_fini(&f);
}

Test(cache, uncreatable_folder_warns_once_and_runs)
{
    fixture f;
    fixture_init(&f);
    char file[128], sub[160];
    snprintf(file, sizeof file, "%s/a-file", f.dir);
    FILE *fp = fopen(file, "w");
    cr_assert_not_null(fp);
    fclose(fp);
    snprintf(sub, sizeof sub, "%s/cache", file); /* under a plain file: cannot exist */
    f.o.cache_dir = sub;
    char *err = run_with_unusable_folder(&f);
    cr_assert_eq(xt_occurrences(err, "xlac: warning"), 1, "%s", err);
    free(err);
    fixture_fini(&f);
}

Test(cache, read_only_folder_warns_once_and_runs)
{
    fixture f;
    fixture_init(&f);
    chmod(f.dir, 0500);
    if (geteuid() == 0) { /* root writes anyway: the cache must still work */
        xe_status st;
        xg_cache *c = xg_cache_new(&f.o, &st);
        cr_assert(run_rows(c, f.g, 6));
        xg_cache_destroy(c);
    } else {
        char *err = run_with_unusable_folder(&f);
        cr_assert_eq(xt_occurrences(err, "xlac: warning"), 1, "%s", err);
        cr_assert_eq(xt_module_count(f.dir), 0);
        free(err);
    }
    chmod(f.dir, 0700);
    fixture_fini(&f);
}

Test(cache, failed_compile_warns_once_per_signature_and_runs_per_op)
{
    fixture f;
    fixture_init(&f);
    f.o.cc = "/nonexistent/xlac-test-cc";
    f.o.disk_cache = false;
    xt_capture k;
    xt_capture_begin(&k);
    xe_status st;
    xg_cache *c = xg_cache_new(&f.o, &st);
    bool ran = run_rows(c, f.g, 4) || run_rows(c, f.g, 4) || run_rows(c, f.g, 4) || run_rows(c, f.g, 5);
    xg_stats s = xt_stats(c);
    char *err = xt_capture_end(&k);
    cr_assert_not(ran);
    cr_assert_eq(s.compiles, 0);
    cr_assert_eq(s.launches, 0);
    cr_assert_eq(s.fallbacks, 4);
    cr_assert_eq(xt_occurrences(err, "xlac: warning: cluster_0 failed to compile ("), 2, "%s", err);
    cr_assert_eq(xt_occurrences(err, "running it op by op"), 2, "%s", err);
    cr_assert(strstr(err, "xlac-test-cc"), "the warning names the compiler's failure: %s", err);
    free(err);

    /* under must-compile the same failure is an error naming the cluster */
    xe_shape sh = {2, {9, 8}};
    xe_tensor *x = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st), *y = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st);
    xe_tensor *in[2] = {x, y}, *out[1] = {NULL};
    xg_outcome oc = XG_RAN;
    cr_assert_eq(xg_run_cluster(c, f.g, NULL, "cluster_0", XE_DEV_CPU, in, out, true, &oc, &st), XE_ERR_COMPILE);
    cr_assert(strstr(st.msg, "cluster_0"), "%s", st.msg);
    cr_assert(strstr(st.msg, "must compile"), "%s", st.msg);
    cr_assert_null(out[0]);
    cr_assert_eq(oc, XG_FALLBACK);
    /* and again, from the failed entry */
    cr_assert_eq(xg_run_cluster(c, f.g, NULL, "cluster_0", XE_DEV_CPU, in, out, true, &oc, &st), XE_ERR_COMPILE);
    cr_assert(strstr(st.msg, "cluster_0"), "%s", st.msg);
    xe_tensor_release(x);
    xe_tensor_release(y);
    xg_cache_destroy(c);
    fixture_fini(&f);
}

Test(cache, must_compile_compiles_below_the_threshold)
{
    fixture f;
    fixture_init(&f);
    f.o.compile_threshold = 5;
    f.o.disk_cache = false;
    xe_status st;
    xg_cache *c = xg_cache_new(&f.o, &st);
    xe_shape sh = {2, {3, 8}};
    xe_tensor *x = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st), *y = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st);
    for (int i = 0; i < 24; i++) {
        ((float *)x->data)[i] = (float)i;
        ((float *)y->data)[i] = -1.0f;
    }
    xe_tensor *in[2] = {x, y}, *out[1] = {NULL};
    xg_outcome oc;
    cr_assert_eq(xg_run_cluster(c, f.g, NULL, "cluster_0", XE_DEV_CPU, in, out, true, &oc, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(oc, XG_RAN);
    for (int r = 0; r < 3; r++) /* x*y + x = 0 */
        cr_assert_float_eq(((float *)out[0]->data)[r], 0.0f, 1e-6);
    xe_tensor_release(out[0]);
    xe_tensor_release(x);
    xe_tensor_release(y);
    cr_assert_eq(xt_stats(c).compiles, 1);
    xg_cache_destroy(c);
    fixture_fini(&f);
}

Test(cache, dumps_name_the_cluster_and_hold_the_key)
{
    fixture f;
    fixture_init(&f);
    char dump[128];
    snprintf(dump, sizeof dump, "%s/dump", f.dir);
    f.o.dump_dir = dump;
    f.o.disk_cache = false;
    xe_status st;
    xg_cache *c = xg_cache_new(&f.o, &st);
    cr_assert(run_rows(c, f.g, 4));
    cr_assert(run_rows(c, f.g, 4)); /* a hit dumps nothing new */
    xg_cache_destroy(c);
    DIR *d = opendir(dump);
    cr_assert_not_null(d);
    int plans = 0, sources = 0;
    char plan[400] = "";
    for (struct dirent *e; (e = readdir(d));) {
        if (strstr(e->d_name, ".cluster_0.plan.txt")) {
            plans++;
            snprintf(plan, sizeof plan, "%s/%s", dump, e->d_name);
        }
        sources += strstr(e->d_name, ".cluster_0.c") != NULL;
    }
    closedir(d);
    cr_assert_eq(plans, 1);
    cr_assert_eq(sources, 1);
    FILE *fp = fopen(plan, "r");
    cr_assert_not_null(fp);
    char *text = calloc(1, 65536);
    size_t n = fread(text, 1, 65535, fp);
    fclose(fp);
    text[n] = '\0';
    cr_assert(strstr(text, "cache key: xlac-cache-"), "%s", text);
    cr_assert(strstr(text, "f32[4,8]"), "%s", text);
    free(text);
    fixture_fini(&f);
}
