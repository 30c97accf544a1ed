/*
 * The disk cache against a hostile folder: whatever is planted in place of
 * a cache file (a symlink to /dev/zero or to a good file elsewhere, a FIFO,
 * a folder, a device, a file of another user, a file others may write, a
 * file truncated at any length, a valid file of another key or target) is
 * never loaded: the run stays correct, the file is counted in
 * disk_rejects, one warning names it, and it is replaced where it can be.
 * A folder of another user or a symlinked folder is not used. Past
 * --cache_max_mb the least recently used modules are deleted (and temp
 * files of writers that died an hour ago).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <unistd.h>

#include "cache_impl.h"
#include "support/cachefx.h"
#include "compile.h"
#include "xg_impl.h"
#include "xlac/xlac.h"

static const char *graph_text = "xlac.graph v1\ninput x: f32[?,4]\n"
                                "a = mul(x, x)\nb = add(a, x)\noutput b\n";

typedef struct hostile {
    xt_cache_dir c; /* folder, graph, options */
    xt_capture err; /* stderr while captured */
} hostile;

static void hostile_init(hostile *h)
{
    xt_cache_dir_init(&h->c, "hostile", graph_text);
}

static void hostile_fini(hostile *h)
{
    xt_cache_dir_fini(&h->c);
}

/* Runs the cluster on [rows,4] and checks x*x+x; returns whether compiled code ran. */
static bool run_checked(xg_cache *c, const xe_graph *g, int rows)
{
    xe_status st;
    xe_shape sh = {2, {rows, 4}};
    xe_tensor *x = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st);
    cr_assert_not_null(x, "%s", st.msg);
    for (int i = 0; i < rows * 4; i++)
        ((float *)x->data)[i] = (float)(i % 7) - 3.0f;
    xe_tensor *in[1] = {x}, *out[1] = {NULL};
    xg_outcome oc = XG_FALLBACK;
    cr_assert_eq(xg_run_cluster(c, g, NULL, "cluster_0", XE_DEV_CPU, in, out, false, &oc, &st), XE_OK, "%s", st.msg);
    for (int i = 0; oc == XG_RAN && i < rows * 4; i++) {
        float v = ((float *)x->data)[i];
        cr_assert_eq(((float *)out[0]->data)[i], v * v + v, "element %d", i);
    }
    xe_tensor_release(out[0]);
    xe_tensor_release(x);
    return oc == XG_RAN;
}

/* Fills the cache with rows=6's module; returns its path. */
static char *fill(hostile *h)
{
    xe_status st;
    xg_cache *c = xg_cache_new(&h->c.o, &st);
    cr_assert(run_checked(c, h->c.g, 6));
    cr_assert_eq(xt_stats(c).compiles, 1);
    xg_cache_destroy(c);
    char *path = xt_module_path(h->c.dir);
    cr_assert_not_null(path, "no module in %s", h->c.dir);
    return path;
}

/*
 * After plant(path) replaced the cache file: a new cache compiles (nothing
 * loaded), counts one reject, warns once naming the file, runs correctly;
 * when replaced, a third cache loads the rebuilt file.
 */
static void planted_is_refused(void (*plant)(const char *path), bool replaced)
{
    hostile h;
    hostile_init(&h);
    char *path = fill(&h);
    plant(path);
    xt_capture_begin(&h.err);
    xe_status st;
    xg_cache *c = xg_cache_new(&h.c.o, &st);
    bool ran = run_checked(c, h.c.g, 6) && run_checked(c, h.c.g, 6);
    xg_stats s = xt_stats(c);
    xg_cache_destroy(c);
    char *err = xt_capture_end(&h.err);
    cr_assert(ran);
    cr_assert_eq(s.disk_hits, 0);
    cr_assert_eq(s.compiles, 1);
    cr_assert_eq(s.disk_rejects, 1);
    cr_assert_eq(xt_occurrences(err, "xlac: warning"), 1, "%s", err);
    cr_assert(strstr(err, strrchr(path, '/') + 1), "the warning names the file: %s", err);
    if (replaced) {
        struct stat sb;
        cr_assert_eq(lstat(path, &sb), 0);
        cr_assert(S_ISREG(sb.st_mode) && (sb.st_mode & 077) == 0 && sb.st_uid == geteuid());
        c = xg_cache_new(&h.c.o, &st);
        cr_assert(run_checked(c, h.c.g, 6));
        cr_assert_eq(xt_stats(c).disk_hits, 1);
        cr_assert_eq(xt_stats(c).disk_rejects, 0);
        xg_cache_destroy(c);
    }
    free(err);
    free(path);
    hostile_fini(&h);
}

static void symlink_to_dev_zero(const char *path)
{
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(symlink("/dev/zero", path), 0);
}

static void symlink_to_good_copy(const char *path)
{
    char copy[256], cmd[600];
    snprintf(copy, sizeof copy, "%s.elsewhere", path);
    snprintf(cmd, sizeof cmd, "mv %s %s", path, copy);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(symlink(copy, path), 0);
}

static void fifo(const char *path)
{
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(mkfifo(path, 0600), 0);
}

static void folder(const char *path)
{
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(mkdir(path, 0700), 0);
}

static void device(const char *path)
{
    cr_assert_eq(unlink(path), 0);
    if (mknod(path, S_IFCHR | 0600, makedev(1, 5)) != 0) /* /dev/zero's numbers; needs root */
        cr_skip_test("cannot make a device node here");
}

static void other_owner(const char *path)
{
    if (geteuid() != 0 || chown(path, 12345, 12345) != 0)
        cr_skip_test("chown to another user needs root");
}

static void mode_666(const char *path)
{
    cr_assert_eq(chmod(path, 0666), 0);
}

static void swap_in_other_key(const char *path)
{
    /* a valid file (magic, checksum) of another key: the key stored in it differs */
    unsigned char *buf = NULL;
    size_t len = 0;
    xe_status st;
    cr_assert_eq(xg_read_file(path, (void **)&buf, &len, &st), XE_OK);
    char other[64];
    xg_disk_name("another key", other, sizeof other);
    xg_disk d = {.dir = strndup(path, (size_t)(strrchr(path, '/') - path))};
    xg_artifact a = {.target = XG_TARGET_C, .code = "code", .code_len = 4, .meta = "meta"};
    xg_disk_store(&d, "another key", &a);
    char from[300];
    snprintf(from, sizeof from, "%s/%s", d.dir, other);
    cr_assert_eq(rename(from, path), 0);
    free(d.dir);
    free(buf);
}

Test(cache_hostile, symlink_to_dev_zero_is_not_followed, .timeout = 60)
{
    planted_is_refused(symlink_to_dev_zero, true);
}

Test(cache_hostile, symlink_to_a_good_file_elsewhere_is_not_followed)
{
    planted_is_refused(symlink_to_good_copy, true);
}

Test(cache_hostile, fifo_never_hangs, .timeout = 60)
{
    planted_is_refused(fifo, true);
}

Test(cache_hostile, folder_in_place_of_a_file)
{
    planted_is_refused(folder, false); /* rename cannot replace a folder: it stays, refused each run */
}

Test(cache_hostile, device_is_never_opened, .timeout = 60)
{
    planted_is_refused(device, true);
}

Test(cache_hostile, file_of_another_user)
{
    planted_is_refused(other_owner, true);
}

Test(cache_hostile, file_others_may_write)
{
    planted_is_refused(mode_666, true);
}

Test(cache_hostile, valid_file_of_another_key)
{
    planted_is_refused(swap_in_other_key, true);
}

Test(cache_hostile, truncated_at_every_length_is_rejected)
{
    hostile h;
    hostile_init(&h);
    char *path = fill(&h);
    unsigned char *buf = NULL;
    size_t len = 0;
    xe_status st;
    cr_assert_eq(xg_read_file(path, (void **)&buf, &len, &st), XE_OK);
    char *key = NULL;
    xe_type t = {XE_F32, {2, {6, 4}}};
    cr_assert_not_null(key = xg_signature_key(h.c.g, &t, XG_TARGET_C, 0, &h.c.o));
    xg_disk d = {.dir = h.c.dir};
    xg_artifact *a = NULL;
    cr_assert(xg_disk_load(&d, key, XG_TARGET_C, &a), "the whole file loads");
    xg_artifact_destroy(a);
    cr_assert_not(xg_disk_load(&d, key, XG_TARGET_CUDA, &a), "not for another target");
    atomic_store(&d.warned, false);
    xt_capture_begin(&h.err);
    for (size_t n = len; n-- > 0;) { /* shrinking the file in place: every length, quickly */
        cr_assert_eq(truncate(path, (off_t)n), 0);
        a = NULL;
        cr_assert_not(xg_disk_load(&d, key, XG_TARGET_C, &a), "truncated to %zu of %zu bytes", n, len);
    }
    char *err = xt_capture_end(&h.err);
    cr_assert_eq(atomic_load(&d.rejects), len + 1);
    cr_assert_eq(xt_occurrences(err, "xlac: warning"), 1, "once per run: %.500s", err);
    free(err);
    free(key);
    free(buf);
    free(path);
    hostile_fini(&h);
}

/* A folder that is not ours to trust: one warning, nothing written there, the run correct. */
static void folder_is_not_used(hostile *h, const char *dir)
{
    h->c.o.cache_dir = dir;
    xt_capture_begin(&h->err);
    xe_status st;
    xg_cache *c = xg_cache_new(&h->c.o, &st);
    bool ran = run_checked(c, h->c.g, 6) && run_checked(c, h->c.g, 7);
    xg_stats s = xt_stats(c);
    xg_cache_destroy(c);
    char *err = xt_capture_end(&h->err);
    cr_assert(ran);
    cr_assert_eq(s.compiles, 2);
    cr_assert_eq(xt_occurrences(err, "xlac: warning: cache folder"), 1, "%s", err);
    cr_assert_eq(xt_occurrences(err, "xlac: warning"), 1, "%s", err);
    free(err);
}

Test(cache_hostile, folder_of_another_user_is_not_used)
{
    hostile h;
    hostile_init(&h);
    char sub[128];
    snprintf(sub, sizeof sub, "%s/theirs", h.c.dir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    if (geteuid() != 0 || chown(sub, 12345, 12345) != 0)
        cr_skip_test("chown to another user needs root");
    folder_is_not_used(&h, sub);
    hostile_fini(&h);
}

Test(cache_hostile, symlinked_folder_is_not_used)
{
    hostile h;
    hostile_init(&h);
    char sub[128], link[128];
    snprintf(sub, sizeof sub, "%s/real", h.c.dir);
    snprintf(link, sizeof link, "%s/link", h.c.dir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    cr_assert_eq(symlink(sub, link), 0);
    folder_is_not_used(&h, link);
    hostile_fini(&h);
}

/* Issue 31: a cache folder inside a folder anyone may write (no sticky bit) could be swapped. */
Test(cache_hostile, folder_under_a_world_writable_parent_without_sticky_bit_is_not_used)
{
    hostile h;
    hostile_init(&h);
    char open_dir[128], sub[160];
    snprintf(open_dir, sizeof open_dir, "%s/open", h.c.dir);
    snprintf(sub, sizeof sub, "%s/cache", open_dir);
    cr_assert_eq(mkdir(open_dir, 0700), 0);
    cr_assert_eq(chmod(open_dir, 0777), 0); /* not the umask's choice */
    cr_assert_eq(mkdir(sub, 0700), 0);
    folder_is_not_used(&h, sub);
    cr_assert_eq(chmod(open_dir, 01777), 0); /* as /tmp: sticky, so others cannot rename ours */
    h.c.o.cache_dir = sub;
    xt_capture_begin(&h.err);
    xe_status st;
    xg_cache *c = xg_cache_new(&h.c.o, &st);
    cr_assert(run_checked(c, h.c.g, 6));
    xg_cache_destroy(c);
    char *err = xt_capture_end(&h.err);
    cr_assert_eq(xt_occurrences(err, "xlac: warning"), 0, "a sticky parent is fine: %s", err);
    free(err);
    cr_assert_eq(xt_module_count(sub), 1, "the cache was used");
    hostile_fini(&h);
}

/* Issue 31: a compiler identity file that others may write was replaced without a word. */
Test(cache_hostile, compiler_identity_file_others_may_write_is_one_warning)
{
    hostile h;
    hostile_init(&h);
    xe_status st;
    xg_cache *c = xg_cache_new(&h.c.o, &st);
    cr_assert(run_checked(c, h.c.g, 6));
    xg_cache_destroy(c);
    char cmd[300], *o = NULL;
    snprintf(cmd, sizeof cmd, "chmod 0666 %s/compiler-*.id && ls %s/compiler-*.id", h.c.dir, h.c.dir);
    cr_assert_eq(xt_sh("", cmd, &o), 0, "%s", o);
    free(o);
    xt_capture_begin(&h.err);
    c = xg_cache_new(&h.c.o, &st);
    cr_assert(run_checked(c, h.c.g, 6));
    xg_cache_destroy(c);
    char *err = xt_capture_end(&h.err);
    cr_assert_eq(xt_occurrences(err, "compiler identity file"), 1, "%s", err);
    cr_assert(strstr(err, "writable by group or others"), "%s", err);
    free(err);
    hostile_fini(&h);
}

/* Writes a file of size bytes named name in dir, last used `age` seconds ago. */
static void old_file(const char *dir, const char *name, size_t size, int age)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(ftruncate(fileno(f), (off_t)size), 0);
    fclose(f);
    struct timeval tv[2];
    gettimeofday(&tv[0], NULL);
    tv[0].tv_sec -= age;
    tv[1] = tv[0];
    cr_assert_eq(utimes(path, tv), 0);
}

static bool exists(const char *dir, const char *name)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

Test(cache_hostile, eviction_drops_least_recently_used_first)
{
    hostile h;
    hostile_init(&h);
    old_file(h.c.dir, "a.xlac", 1000, 300);
    old_file(h.c.dir, "b.xlac", 1000, 100);
    old_file(h.c.dir, "c.xlac", 1000, 200);
    old_file(h.c.dir, "d.xlac", 1000, 10);
    old_file(h.c.dir, "not-a-module", 5000, 1000);
    old_file(h.c.dir, ".e.xlac.Ab12Cd", 100, 7200); /* a dead writer's temp file */
    old_file(h.c.dir, ".f.xlac.Ef34Gh", 100, 10);   /* one being written now */
    cr_assert_eq(xg_disk_evict(h.c.dir, 2500), 2);
    cr_assert(!exists(h.c.dir, ".e.xlac.Ab12Cd") && exists(h.c.dir, ".f.xlac.Ef34Gh"));
    cr_assert(!exists(h.c.dir, "a.xlac") && !exists(h.c.dir, "c.xlac"));
    cr_assert(exists(h.c.dir, "b.xlac") && exists(h.c.dir, "d.xlac") && exists(h.c.dir, "not-a-module"));
    hostile_fini(&h);
}

Test(cache_hostile, store_past_cache_max_mb_evicts_old_modules_and_a_hit_counts_as_use)
{
    hostile h;
    hostile_init(&h);
    h.c.o.cache_max_mb = 1;
    old_file(h.c.dir, "old.xlac", 700 << 10, 1000);
    old_file(h.c.dir, "used.xlac", 330 << 10, 2000);
    char used[200];
    snprintf(used, sizeof used, "%s/used.xlac", h.c.dir);
    void *data = NULL;
    size_t len = 0;
    char why[100];
    cr_assert_eq(xg_disk_read(used, XG_DISK_FILE_MAX, &data, &len, why, sizeof why), XG_DISK_READ, "%s", why);
    free(data);
    xe_status st;
    xg_cache *c = xg_cache_new(&h.c.o, &st);
    for (int rows = 1; rows <= 2; rows++) /* two modules of a few KiB each push it past 1 MiB */
        cr_assert(run_checked(c, h.c.g, rows));
    xg_cache_destroy(c);
    cr_assert(!exists(h.c.dir, "old.xlac"), "the least recently used module goes first");
    cr_assert(exists(h.c.dir, "used.xlac"), "a file just read is recently used");
    hostile_fini(&h);
}

/* xlac-run with the plugin preloaded on h's folder; returns its stderr (malloc'd). */
static char *preloaded_run(hostile *h)
{
    char cmd[1024], err[160];
    snprintf(err, sizeof err, "%s.run-err", h->c.dir);
    snprintf(cmd, sizeof cmd,
             "ASAN_OPTIONS=\"$ASAN_OPTIONS:verify_asan_link_order=0\" "
             "LD_PRELOAD=%s/lib/libxlac.so XLAC_AUTO_JIT=1 XLAC_FLAGS='--stats --cache_dir=%s' "
             "%s/bin/xlac-run %s/examples/softmax.xg --seed 0 >/dev/null 2>%s",
             XLAC_BINARY_DIR, h->c.dir, XLAC_BINARY_DIR, XLAC_SOURCE_DIR, err);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    char *text = NULL;
    size_t len = 0;
    xe_status st;
    cr_assert_eq(xg_read_file(err, (void **)&text, &len, &st), XE_OK);
    unlink(err);
    return text;
}

Test(cache_hostile, stats_line_counts_disk_rejects)
{
    hostile h;
    hostile_init(&h);
    char *err = preloaded_run(&h);
    cr_assert(strstr(err, " compiles=1 ") && strstr(err, " disk_rejects=0 "), "%s", err);
    free(err);
    char *path = xt_module_path(h.c.dir);
    cr_assert_not_null(path);
    cr_assert_eq(chmod(path, 0666), 0);
    err = preloaded_run(&h);
    cr_assert(strstr(err, " compiles=1 ") && strstr(err, " disk_hits=0 ") && strstr(err, " disk_rejects=1 "), "%s",
              err);
    cr_assert_eq(xt_occurrences(err, "xlac: warning: disk cache file"), 1, "%s", err);
    cr_assert(strstr(err, "writable by group or others"), "%s", err);
    free(err);
    err = preloaded_run(&h); /* replaced by a good one */
    cr_assert(strstr(err, " compiles=0 ") && strstr(err, " disk_hits=1 ") && strstr(err, " disk_rejects=0 "), "%s",
              err);
    free(err);
    free(path);
    hostile_fini(&h);
}
