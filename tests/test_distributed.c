/*
 * Ranks end to end: the real xlac-run under `mpirun --oversubscribe`
 * (docs/distributed.md), on a CPU-only build:
 *   - every collective's values on 2 ranks (--feed-shard, --save-all-ranks);
 *   - examples/train_step.xg, 5 SGD steps: 4 ranks on the sharded global
 *     batch give the weights one process gets on the whole batch (f32
 *     tolerance), op by op and clustered (libxlac.so preloaded,
 *     XLAC_AUTO_JIT=2), and the 4 ranks on a cold disk cache compile each
 *     signature once in total;
 *   - a rank killed mid-run (SIGKILL) or hung ends the job with a clear
 *     error within the stated timeout (--collective-timeout);
 *   - ranks whose clusters differ fail on every rank, naming the cluster;
 *   - without mpirun a graph with collectives runs in a world of one rank.
 * Skipped, with the reason printed, when xlac-run has no MPI or there is
 * no mpirun on PATH.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xlac/xlac.h"
#include "support/tmpdir.h"

extern char **environ;

#define XLAC_RUN XLAC_BINARY_DIR "/bin/xlac-run"
#define LIBXLAC XLAC_BINARY_DIR "/lib/libxlac.so"
#define EXAMPLES XLAC_SOURCE_DIR "/examples"

/* No run may take longer: a hang fails the test instead of blocking it. */
#define RUN_LIMIT_S 60

static void make_tmp(void)
{
    xt_tmp_make("/tmp/xlac_dist_XXXXXX");
}

TestSuite(dist, .init = make_tmp, .fini = xt_tmp_fini, .timeout = 150);

/* Skips the test unless xlac-run has MPI and mpirun is on PATH. */
static void need_mpi(void)
{
#ifndef XLAC_HAVE_MPI
    fprintf(stderr, "skipped: xlac-run built without MPI (install libopenmpi-dev)\n");
    cr_skip_test("xlac-run built without MPI");
#else
    if (system("command -v mpirun >/dev/null 2>&1") != 0) {
        fprintf(stderr, "skipped: no mpirun on PATH (install openmpi-bin)\n");
        cr_skip_test("no mpirun on PATH");
    }
#endif
}

typedef struct result {
    int rc;         /* exit status, 128 + signal, or -1 when killed at RUN_LIMIT_S */
    double seconds; /* wall time */
    char *out;      /* stdout and stderr, together */
} result;

/*
 * The environment without LD_PRELOAD and XLAC_*, plus MPI's root permission.
 * Under the sanitizers, LeakSanitizer unwinds malloc's callers the slow way:
 * OpenMPI's libraries have no frame pointers, and only a full stack shows
 * the library that tests/lsan.supp names for what MPI_Init keeps.
 */
static void child_env(char **envp, int cap)
{
    int n = 0;
#ifdef XLAC_SANITIZE
    static char lsan[600];
    snprintf(lsan, sizeof lsan, "LSAN_OPTIONS=suppressions=%s/tests/lsan.supp:fast_unwind_on_malloc=0",
             XLAC_SOURCE_DIR);
    envp[n++] = lsan;
#endif
    for (char **e = environ; *e && n < cap - 5; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "XLAC_", 5) && strncmp(*e, "LSAN_OPTIONS=", 13))
            envp[n++] = *e;
    envp[n++] = "OMPI_ALLOW_RUN_AS_ROOT=1";
    envp[n++] = "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1";
    envp[n++] = "OMPI_MCA_btl_vader_single_copy_mechanism=none"; /* containers without ptrace */
    envp[n] = NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs argv (found on PATH) in its own process group; kills the group past RUN_LIMIT_S. */
static result run(const char *const *argv)
{
    char *envp[400], out[600];
    child_env(envp, 400);
    snprintf(out, sizeof out, "%s/.out", xt_tmp);
    double t0 = now_s();
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        setpgid(0, 0);
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            _exit(120);
        dup2(fd, 1);
        dup2(fd, 2);
        environ = envp;
        execvp(argv[0], (char *const *)argv);
        _exit(121);
    }
    int status = 0;
    result r = {.rc = -1};
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (now_s() - t0 > RUN_LIMIT_S) {
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            r.seconds = now_s() - t0;
            r.out = xt_read_file(out, NULL);
            return r;
        }
        nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
    }
    r.seconds = now_s() - t0;
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = xt_read_file(out, NULL);
    return r;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; p && (p = strstr(p, what)); p++)
        n++;
    return n;
}

/* argv += the xlac-run arguments of a training run of `steps` steps, saving to save. */
static int train_args(const char **argv, int n, int steps, const char *save, bool shard)
{
    static char it[16];
    static const char *const weights[] = {"w1", "b1", "w2", "b2"};
    static char inputs[4][300], carries[4][40];
    snprintf(it, sizeof it, "%d", steps);
    argv[n++] = XLAC_RUN;
    argv[n++] = EXAMPLES "/train_step.xg";
    argv[n++] = "--feed";
    argv[n++] = EXAMPLES "/feeds/train_batch";
    if (shard)
        argv[n++] = "--feed-shard";
    for (int k = 0; k < 4; k++) {
        snprintf(inputs[k], sizeof inputs[k], "%s=%s/feeds/train_init/%s.npy", weights[k], EXAMPLES, weights[k]);
        snprintf(carries[k], sizeof carries[k], "%s_next=%s", weights[k], weights[k]);
        argv[n++] = "--input";
        argv[n++] = inputs[k];
        argv[n++] = "--carry";
        argv[n++] = carries[k];
    }
    argv[n++] = "--iterations";
    argv[n++] = it;
    argv[n++] = "--save-outputs";
    argv[n++] = save;
    argv[n] = NULL;
    return n;
}

/* The head of an mpirun command line: ranks, and -x for each of env (NULL-terminated). */
static int mpirun_args(const char **argv, int ranks, const char *const *env)
{
    static char np[16];
    int n = 0;
    snprintf(np, sizeof np, "%d", ranks);
    argv[n++] = "mpirun";
    argv[n++] = "--oversubscribe";
    argv[n++] = "-n";
    argv[n++] = np;
    for (int i = 0; env && env[i]; i++) {
        argv[n++] = "-x";
        argv[n++] = env[i];
    }
    return n;
}

static xe_tensor *load(const char *dir, const char *name)
{
    char p[700];
    xe_status st;
    snprintf(p, sizeof p, "%s/%s.npy", dir, name);
    xe_tensor *t = xe_npy_read(p, &st);
    cr_assert_not_null(t, "%s", st.msg);
    return t;
}

/* Every saved output of dir b equals a's within f32 tolerance; NaN never passes. */
static void same_weights(const char *a, const char *b)
{
    static const char *const names[] = {"w1_next", "b1_next", "w2_next", "b2_next", "loss"};
    for (int k = 0; k < 5; k++) {
        xe_tensor *x = load(a, names[k]), *y = load(b, names[k]);
        int64_t n = xe_tensor_numel(x);
        cr_assert_eq(n, xe_tensor_numel(y), "%s", names[k]);
        for (int64_t i = 0; i < n; i++) {
            float u = ((float *)x->data)[i], v = ((float *)y->data)[i];
            cr_assert(isfinite(u) && fabsf(u - v) <= 1e-5f + 1e-4f * fabsf(u), "%s[%lld]: %.9g (1 process) vs %.9g (%s)",
                      names[k], (long long)i, u, v, b);
        }
        xe_tensor_release(x);
        xe_tensor_release(y);
    }
}

/* The weights after 5 steps of one process on the whole batch, op by op, in tmp/ref. */
static void reference(void)
{
    const char *argv[64];
    train_args(argv, 0, 5, xt_path("ref"), false);
    result r = run(argv);
    cr_assert_eq(r.rc, 0, "%s", r.out);
    free(r.out);
}

Test(dist, train_4_ranks_equals_1_process_op_by_op)
{
    need_mpi();
    reference();
    const char *argv[96];
    int n = mpirun_args(argv, 4, NULL);
    train_args(argv, n, 5, xt_path("op"), true);
    result r = run(argv);
    cr_assert_eq(r.rc, 0, "%s", r.out);
    same_weights(xt_path("ref"), xt_path("op"));
    free(r.out);
}

/* Sum of `key=N` over every --stats line of out. */
static long stat_sum(const char *out, const char *key)
{
    long sum = 0;
    for (const char *p = out; (p = strstr(p, "xlac: stats ")); p++) {
        const char *k = strstr(p, key), *end = strchr(p, '\n');
        if (k && (!end || k < end))
            sum += strtol(k + strlen(key), NULL, 10);
    }
    return sum;
}

Test(dist, train_4_ranks_clustered_equals_1_process)
{
    need_mpi();
    reference();
    static char flags[400];
    snprintf(flags, sizeof flags, "XLAC_FLAGS=--stats --cache_dir=%s", xt_path("cache"));
    const char *env[] = {"LD_PRELOAD=" LIBXLAC, "XLAC_AUTO_JIT=2", flags,
#ifdef XLAC_SANITIZE
                         "ASAN_OPTIONS=verify_asan_link_order=0",
#endif
                         NULL};
    const char *argv[96];
    int n = mpirun_args(argv, 4, env);
    train_args(argv, n, 5, xt_path("cl"), true);
    result r = run(argv);
    cr_assert_eq(r.rc, 0, "%s", r.out);
    same_weights(xt_path("ref"), xt_path("cl"));
    cr_assert_eq(count(r.out, "xlac: stats clusters=5 "), 4, "%s", r.out);
    /* a cold cache shared by 4 ranks: each signature compiled once, loaded by the other 3 */
    long compiles = stat_sum(r.out, "compiles="), hits = stat_sum(r.out, "disk_hits=");
    cr_assert(compiles > 0 && hits == 3 * compiles, "compiles=%ld disk_hits=%ld\n%s", compiles, hits, r.out);
    free(r.out);
}

Test(dist, killed_rank_ends_the_job)
{
    need_mpi();
    const char *env[] = {"XLAC_RUN_KILL_AT=2:2", NULL};
    const char *argv[96];
    int n = mpirun_args(argv, 4, env);
    n = train_args(argv, n, 5, xt_path("killed"), true);
    argv[n++] = "--collective-timeout";
    argv[n++] = "20";
    argv[n] = NULL;
    result r = run(argv);
    cr_assert(r.rc > 0, "rc %d\n%s", r.rc, r.out);
    cr_assert_lt(r.seconds, 30, "took %.1f s", r.seconds);
    cr_assert(strstr(r.out, "rank 2") && strstr(r.out, "signal 9"), "%s", r.out);
    free(r.out);
}

Test(dist, hung_rank_times_out)
{
    need_mpi();
    const char *env[] = {"XLAC_RUN_KILL_AT=2:2:hang", NULL};
    const char *argv[96];
    int n = mpirun_args(argv, 4, env);
    n = train_args(argv, n, 5, xt_path("hung"), true);
    argv[n++] = "--collective-timeout";
    argv[n++] = "2";
    argv[n] = NULL;
    result r = run(argv);
    cr_assert(r.rc > 0, "rc %d\n%s", r.rc, r.out);
    cr_assert_lt(r.seconds, 30, "took %.1f s", r.seconds);
    cr_assert(strstr(r.out, "did not complete within 2 s (--collective-timeout)"), "%s", r.out);
    free(r.out);
}

Test(dist, differing_clusters_fail_on_every_rank)
{
    need_mpi();
    static char cache[400];
    snprintf(cache, sizeof cache, "XLAC_FLAGS=--cache_dir=%s", xt_path("cache"));
    static char odd[400];
    snprintf(odd, sizeof odd, "XLAC_FLAGS=--cache_dir=%s --max_cluster_size=10", xt_path("cache"));
    const char *argv[] = {"mpirun", "--oversubscribe",
                          "-x", "LD_PRELOAD=" LIBXLAC, "-x", "XLAC_AUTO_JIT=2", "-x", cache,
#ifdef XLAC_SANITIZE
                          "-x", "ASAN_OPTIONS=verify_asan_link_order=0",
#endif
                          "-n", "2", XLAC_RUN, EXAMPLES "/train_step.xg", "--seed", "0", "--feed", EXAMPLES "/feeds/train_batch", ":",
                          "-x", "LD_PRELOAD=" LIBXLAC, "-x", "XLAC_AUTO_JIT=2", "-x", odd,
#ifdef XLAC_SANITIZE
                          "-x", "ASAN_OPTIONS=verify_asan_link_order=0",
#endif
                          "-n", "1", XLAC_RUN, EXAMPLES "/train_step.xg", "--seed", "0", "--feed", EXAMPLES "/feeds/train_batch", NULL};
    result r = run(argv);
    cr_assert_eq(r.rc, 1, "rc %d\n%s", r.rc, r.out);
    for (int k = 0; k < 3; k++) {
        char want[200];
        snprintf(want, sizeof want, "xlac-run: rank %d: graph pass xlac: the clustered graph differs across ranks", k);
        cr_assert(strstr(r.out, want), "no error from rank %d:\n%s", k, r.out);
    }
    cr_assert_eq(count(r.out, "first differing cluster: launch 0 in run order (cluster_"), 3, "%s", r.out);
    free(r.out);
}

/* x = [[0,1,2],[3,4,5],[6,7,8],[9,10,11]] in tmp/feed/x.npy */
static void write_x(void)
{
    xe_status st;
    xe_shape sh = {2, {4, 3}};
    xe_tensor *x = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st);
    cr_assert_not_null(x);
    for (int i = 0; i < 12; i++)
        ((float *)x->data)[i] = (float)i;
    cr_assert_eq(mkdir(xt_path("feed"), 0700), 0);
    cr_assert_eq(xe_npy_write(xt_path("feed/x.npy"), x, &st), XE_OK, "%s", st.msg);
    xe_tensor_release(x);
}

static const char collectives_graph[] = "xlac.graph v1\n"
                                        "input x: f32[2,3]\n"
                                        "a = all_reduce(x, reduce=\"mean\")\n"
                                        "m = all_reduce(x, reduce=\"max\")\n"
                                        "g = all_gather(x)\n"
                                        "s = reduce_scatter(g, reduce=\"sum\")\n"
                                        "b = broadcast(x, root=1)\n"
                                        "output a\noutput m\noutput g\noutput s\noutput b\n";

/* Output name of rank r (tmp/out/NAME.rankR.npy), element i. */
static float value(const char *name, int r, int i)
{
    char file[64];
    snprintf(file, sizeof file, "%s.rank%d", name, r);
    xe_tensor *t = load(xt_path("out"), file);
    float v = ((float *)t->data)[i];
    xe_tensor_release(t);
    return v;
}

Test(dist, collectives_on_2_ranks)
{
    need_mpi();
    write_x();
    FILE *f = fopen(xt_path("c.xg"), "w");
    cr_assert_not_null(f);
    fputs(collectives_graph, f);
    fclose(f);
    const char *argv[] = {"mpirun", "--oversubscribe", "-n", "2", XLAC_RUN, xt_path("c.xg"), "--feed", xt_path("feed"),
                          "--feed-shard", "--save-outputs", xt_path("out"), "--save-all-ranks", NULL};
    result r = run(argv);
    cr_assert_eq(r.rc, 0, "%s", r.out);
    for (int rk = 0; rk < 2; rk++)
        for (int i = 0; i < 6; i++) {
            float x0 = (float)i, x1 = (float)(i + 6), mine = (float)(i + 6 * rk);
            cr_assert_eq(value("a", rk, i), (x0 + x1) / 2, "rank %d a[%d]", rk, i);
            cr_assert_eq(value("m", rk, i), x1, "rank %d m[%d]", rk, i);
            cr_assert_eq(value("g", rk, i), x0, "rank %d g[%d]", rk, i);
            cr_assert_eq(value("g", rk, i + 6), x1, "rank %d g[%d]", rk, i + 6);
            cr_assert_eq(value("s", rk, i), 2 * mine, "rank %d s[%d]", rk, i); /* sum of two equal g */
            cr_assert_eq(value("b", rk, i), x1, "rank %d b[%d]", rk, i);
        }
    free(r.out);
}

Test(dist, feed_shard_must_divide)
{
    need_mpi();
    const char *argv[96];
    int n = mpirun_args(argv, 3, NULL);
    train_args(argv, n, 1, xt_path("x"), true);
    result r = run(argv);
    cr_assert(r.rc > 0, "%s", r.out);
    cr_assert(strstr(r.out, "xlac-run: rank 0: input x: --feed-shard: the leading dim of ") &&
                  strstr(r.out, "(64) is not divisible by the world size 3"),
              "%s", r.out);
    free(r.out);
}

static void write_graph(const char *root)
{
    char text[sizeof collectives_graph + 8], *p;
    snprintf(text, sizeof text, "%s", collectives_graph);
    cr_assert_not_null(p = strstr(text, "root=1"));
    p[5] = root[0];
    FILE *f = fopen(xt_path("c.xg"), "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

Test(dist, world_of_one_without_mpirun)
{
    write_graph("1");
    const char *argv[] = {XLAC_RUN, xt_path("c.xg"), "--seed", "0", "--save-outputs", xt_path("out"), NULL};
    result r = run(argv);
    cr_assert_eq(r.rc, 2, "%s", r.out);
    cr_assert(strstr(r.out, "node b (broadcast): broadcast: root=1 is not a rank of a world of 1"), "%s", r.out);
    free(r.out);
    write_graph("0");
    r = run(argv);
    cr_assert_eq(r.rc, 0, "%s", r.out);
    cr_assert(strstr(r.out, "collectives run in a world of 1 rank"), "%s", r.out);
    xe_tensor *g = load(xt_path("out"), "g"), *x = load(xt_path("out"), "s");
    cr_assert(g->shape.rank == 2 && g->shape.dims[0] == 2 && g->shape.dims[1] == 3);
    cr_assert_eq(memcmp(g->data, x->data, g->nbytes), 0, "one rank: reduce_scatter(all_gather(x)) is x");
    xe_tensor_release(g);
    xe_tensor_release(x);
    free(r.out);
}
