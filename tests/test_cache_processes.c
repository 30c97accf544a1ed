/*
 * Several processes on one disk cache: four started at once on a cold
 * folder, the same cluster, two shapes in common and one of their own:
 * every process is correct and builds or loads each signature once, and
 * each signature is built once in total (the others wait and load it); a
 * later process loads every module and compiles nothing. A process killed
 * (SIGKILL) while it writes a module leaves no file under a module's name,
 * only its temp file: the next run compiles, refuses nothing, and the run
 * after it loads what that one wrote.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/cachefx.h"
#include "xg_impl.h"
#include "xlac/xlac.h"

static const char *graph_text = "xlac.graph v1\ninput x: f32[?,4]\n"
                                "a = mul(x, x)\nb = add(a, x)\ns = reduce_sum(b, axes=[1])\noutput s\n";

static char dir[64];
static xe_graph *graph;

static void setup(void)
{
    xe_status st;
    snprintf(dir, sizeof dir, "/tmp/xlac-procs-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    graph = xe_parse_string(graph_text, "p.xg", &st);
    cr_assert_not_null(graph, "%s", st.msg);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    xe_graph_destroy(graph);
}

static xg_options options(const char *cc)
{
    xg_options o;
    xg_options_default(&o);
    o.cache_dir = dir;
    o.dynamic_after = 100; /* one program per shape */
    if (cc)
        o.cc = cc;
    return o;
}

/* Runs the cluster at [rows,4]: 1 compiled and right, 0 per op, -1 wrong or an error (no asserts: children call it). */
static int run_rows(xg_cache *c, int rows)
{
    xe_status st;
    xe_shape sh = {2, {rows, 4}};
    xe_tensor *x = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st), *in[1] = {x}, *out[1] = {NULL};
    if (!x)
        return -1;
    for (int i = 0; i < rows * 4; i++)
        ((float *)x->data)[i] = (float)(i % 5 - 2);
    xg_outcome oc = XG_FALLBACK;
    int r = xg_run_cluster(c, graph, NULL, "cluster_0", XE_DEV_CPU, in, out, false, &oc, &st) == XE_OK ? 0 : -1;
    for (int i = 0; r == 0 && oc == XG_RAN && i < rows; i++) {
        float want = 0;
        for (int j = 0; j < 4; j++) {
            float v = (float)((i * 4 + j) % 5 - 2);
            want += v * v + v;
        }
        if (((float *)out[0]->data)[i] != want)
            r = -1;
    }
    if (r == 0 && oc == XG_RAN)
        r = 1;
    xe_tensor_release(out[0]);
    xe_tensor_release(x);
    return r;
}

/*
 * Child p: shapes 6, 7 (shared) and 10 + p, twice each; exits with its
 * count of compiles when all ran right, each built or loaded once (100: not).
 */
static void child(int p)
{
    xe_status st;
    xg_options o = options(NULL);
    xg_cache *c = xg_cache_new(&o, &st);
    int rows[3] = {6, 7, 10 + p}, bad = !c;
    for (int round = 0; !bad && round < 2; round++)
        for (int k = 0; k < 3; k++)
            bad |= run_rows(c, rows[(k + p) % 3]) != 1;
    xg_stats s = c ? xt_stats(c) : (xg_stats){0};
    bad |= s.compiles + s.disk_hits != 3 || s.disk_rejects != 0;
    xg_cache_destroy(c);
    _exit(bad ? 100 : (int)s.compiles);
}

Test(cache_processes, four_processes_on_one_cold_cache, .init = setup, .fini = teardown, .timeout = 300)
{
    pid_t pid[4];
    int compiles = 0;
    for (int p = 0; p < 4; p++) {
        pid[p] = fork();
        cr_assert_geq(pid[p], 0);
        if (pid[p] == 0)
            child(p);
    }
    for (int p = 0; p < 4; p++) {
        int status = 0;
        cr_assert_eq(waitpid(pid[p], &status, 0), pid[p]);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) < 100, "process %d: status %#x", p, status);
        compiles += WEXITSTATUS(status);
    }
    /* one build per signature in total (cache_lock.c): 6 and 7 shared, 10..13 one each */
    cr_assert_eq(compiles, 6);
    xe_status st;
    xg_options o = options(NULL);
    xg_cache *c = xg_cache_new(&o, &st);
    int rows[6] = {6, 7, 10, 11, 12, 13};
    for (int k = 0; k < 6; k++)
        cr_assert_eq(run_rows(c, rows[k]), 1, "rows %d", rows[k]);
    cr_assert_eq(xt_stats(c).compiles, 0);
    cr_assert_eq(xt_stats(c).disk_hits, 6);
    cr_assert_eq(xt_stats(c).disk_rejects, 0);
    xg_cache_destroy(c);
}

/* Whether dir holds a temp file of a module being written (".<hex>.xlac.XXXXXX"). */
static bool writing(void)
{
    DIR *d = opendir(dir);
    bool found = false;
    for (struct dirent *e; d && !found && (e = readdir(d));)
        found = e->d_name[0] == '.' && strstr(e->d_name, ".xlac.");
    if (d)
        closedir(d);
    return found;
}

Test(cache_processes, killed_while_writing_leaves_no_torn_module, .init = setup, .fini = teardown, .timeout = 300)
{
    /* a compiler whose shared object carries 96 MiB of padding: its write takes long enough to be caught */
    char cc[128];
    snprintf(cc, sizeof cc, "%s-padcc", dir);
    FILE *f = fopen(cc, "w");
    cr_assert_not_null(f);
    fprintf(f, "#!/bin/sh\ncc \"$@\" || exit 1\n"
               "for a; do case \"$prev\" in -o) head -c 100663296 /dev/zero >> \"$a\";; esac; prev=$a; done\n");
    fclose(f);
    chmod(cc, 0700);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        xe_status st;
        xg_options o = options(cc);
        xg_cache *c = xg_cache_new(&o, &st);
        _exit(c && run_rows(c, 6) == 1 ? 0 : 1);
    }
    bool caught = false;
    for (int i = 0; i < 200000 && !caught; i++) { /* up to about a minute */
        caught = writing();
        if (!caught)
            nanosleep(&(struct timespec){0, 200000}, NULL);
    }
    kill(pid, SIGKILL);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    unlink(cc);
    cr_assert(caught && WIFSIGNALED(status), "the writer was killed while writing (status %#x)", status);
    cr_assert_eq(xt_module_count(dir), 0, "no module under its own name, only the temp file");
    xe_status st;
    xg_options o = options(NULL);
    xg_cache *c = xg_cache_new(&o, &st);
    cr_assert_eq(run_rows(c, 6), 1);
    cr_assert_eq(xt_stats(c).compiles, 1);
    cr_assert_eq(xt_stats(c).disk_rejects, 0);
    xg_cache_destroy(c);
    c = xg_cache_new(&o, &st);
    cr_assert_eq(run_rows(c, 6), 1);
    cr_assert_eq(xt_stats(c).disk_hits, 1);
    xg_cache_destroy(c);
}
