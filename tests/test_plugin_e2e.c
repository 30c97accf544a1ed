/*
 * The plugin end to end: the real CLI (XLAC_BINARY_DIR/bin/xlac-run) run
 * as a child process with LD_PRELOAD=XLAC_BINARY_DIR/lib/libxlac.so and
 * the plugin's environment variables:
 *   - unset or 0: byte-identical output, nothing written;
 *   - 2: the same outputs (bit for bit with --codegen=0), placement lines
 *     with XLA_CPU:0 and cluster names;
 *   - --clustering_debug dumps: every file written, every .xg dump runs
 *     through xlac-run, every .dot renders with `dot -Tsvg`;
 *   - bad values: exit 2 with one line; --help; --stats;
 *   - a jit block holding unique: an error naming the op and its line;
 *   - with a CUDA device: clusters on XLA_GPU:0.
 * In process: flag parsing (every flag, every kind of error) and the
 * level-1 predicate.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flags.h"
#include "xlac/xlac.h"
#include "xlac_plugin.h"
#include "support/tmpdir.h"


#define XLAC_RUN XLAC_BINARY_DIR "/bin/xlac-run"

static void make_tmp(void)
{
    xt_tmp_make("/tmp/xlac_e2e_XXXXXX");
}

TestSuite(e2e, .init = make_tmp, .fini = NULL, .timeout = 120);


static xt_result xlac_run(bool preload, const char *const *env, const char *graph, const char *extra1,
                          const char *extra2)
{
    const char *argv[] = {XLAC_RUN, graph,  "--seed", "3", "--log-device-placement",
                          extra1,   extra2, NULL};
    return xt_run_in(xt_tmp, preload, env, argv);
}

/* Placement lines may go to stdout or stderr: look in both. */
static bool has(const xt_result *r, const char *text)
{
    return (r->out && strstr(r->out, text)) || (r->err && strstr(r->err, text));
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static bool same_file(const char *a, const char *b)
{
    char *x = xt_read_file(a, NULL), *y = xt_read_file(b, NULL);
    bool same = x && y && strcmp(x, y) == 0;
    /* .npy data can hold NUL bytes: compare the whole files */
    if (x && y) {
        FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
        int ca, cb;
        do {
            ca = fgetc(fa);
            cb = fgetc(fb);
        } while (ca == cb && ca != EOF);
        same = ca == cb;
        fclose(fa);
        fclose(fb);
    }
    free(x);
    free(y);
    return same;
}

static const char *graph_text = "xlac.graph v1\n"
                                "input x: f32[8,4]\n"
                                "input y: f32[8,4]\n"
                                "a = mul(x, y)\n"
                                "b = add(a, x)\n"
                                "c = tanh(b)\n"
                                "s = reduce_sum(c, axes=[1], keepdims=false)\n"
                                "u = unique(s)\n"
                                "output s\n"
                                "output u\n";

static void write_graph(void)
{
    xt_write_file(xt_path("g.xg"), graph_text);
}

Test(e2e, off_is_byte_identical_and_writes_nothing)
{
    write_graph();
    mkdir(xt_path("dumps"), 0755);
    char prefix[600];
    snprintf(prefix, sizeof prefix, "XLAC_DUMP_GRAPH_PREFIX=%s", xt_path("dumps"));
    /* --stats and a dump folder too: off is off, no stats line, no files */
    const char *env0[] = {"XLAC_AUTO_JIT=0", prefix, "XLAC_FLAGS=--stats --clustering_debug", NULL};
    const char *env_unset[] = {prefix, "XLAC_FLAGS=--stats", NULL};
    xt_result plain = xlac_run(false, NULL, xt_path("g.xg"), "--print-outputs", NULL);
    cr_assert_eq(plain.rc, 0, "%s", plain.err);
    cr_assert(has(&plain, "placement: a mul CPU:0"), "%s%s", plain.out, plain.err);
    for (int k = 0; k < 2; k++) {
        xt_result r = xlac_run(true, k ? env0 : env_unset, xt_path("g.xg"), "--print-outputs", NULL);
        cr_assert_eq(r.rc, 0, "%s", r.err);
        cr_assert_str_eq(r.out, plain.out);
        cr_assert_str_eq(r.err, plain.err);
        xt_result_free(&r);
    }
    cr_assert_eq(count_files(xt_path("dumps")), 0);
    cr_assert_eq(count_files(xt_tmp), 2, "only g.xg and dumps/ in the folder");
    xt_result_free(&plain);
    xt_tmp_remove();
}

Test(e2e, level2_same_outputs_and_xla_placement)
{
    write_graph();
    const char *env[] = {"XLAC_AUTO_JIT=2", "XLAC_FLAGS=--codegen=0", NULL};
    xt_result plain = xlac_run(false, NULL, xt_path("g.xg"), "--save-outputs", xt_path("ref"));
    cr_assert_eq(plain.rc, 0, "%s", plain.err);
    xt_result r = xlac_run(true, env, xt_path("g.xg"), "--save-outputs", xt_path("jit"));
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(has(&r, "placement: a mul XLA_CPU:0 cluster_0"), "%s%s", r.out, r.err);
    cr_assert(has(&r, "placement: c tanh XLA_CPU:0 cluster_0"), "%s%s", r.out, r.err);
    cr_assert(has(&r, "placement: u unique CPU:0"), "%s%s", r.out, r.err);
    cr_assert(same_file(xt_path("ref/s.npy"), xt_path("jit/s.npy")), "s differs");
    cr_assert(same_file(xt_path("ref/u.npy"), xt_path("jit/u.npy")), "u differs");
    xt_result_free(&plain);
    xt_result_free(&r);
    xt_tmp_remove();
}

Test(e2e, level2_with_codegen_runs)
{
    write_graph();
    const char *env[] = {"XLAC_AUTO_JIT=2", "XLAC_FLAGS=--stats --disk_cache=0", NULL};
    xt_result r = xlac_run(true, env, xt_path("g.xg"), "--print-outputs", NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(has(&r, "XLA_CPU:0 cluster_0"), "%s%s", r.out, r.err);
    const char *line = strstr(r.err, "xlac: stats clusters=1 launches=1 ");
    cr_assert(line, "%s", r.err);
    /* the documented line, ending with compile_ms=NUMBER */
    const char *end = strchr(line, '\n'), *cm = strstr(line, " compile_ms=");
    cr_assert(end && cm && cm < end && strspn(cm + 12, "0123456789.") == (size_t)(end - cm - 12), "%s", line);
    cr_assert(strstr(r.err, "xlac: timing disk_load_ms="), "%s", r.err);
    xt_result_free(&r);
    xt_tmp_remove();
}

/*
 * A cluster that loses is demoted with the default flags: the compiler is made to write slow code
 * (cc ... -O0 -fno-openmp: the fused tanh loop runs some 30x slower than the per-op kernels). The
 * program compiles at first sight, the body runs per op twice more only to be timed (probes), and
 * after the timed compiled runs the signature runs per op: said in the warning, --stats' lines and
 * --summary's "demoted".
 */
Test(e2e, a_slower_cluster_is_demoted_with_the_default_flags)
{
    xt_write_file(xt_path("big.xg"), "xlac.graph v1\ninput x: f32[512,512]\ninput y: f32[512,512]\n"
                                     "a = mul(x, y)\nb = add(a, x)\nc = tanh(b)\noutput c\n");
    xt_write_file(xt_path("slowcc"), "#!/bin/sh\nexec cc \"$@\" -O0 -fno-openmp\n");
    cr_assert_eq(chmod(xt_path("slowcc"), 0755), 0);
    char cc[200];
    snprintf(cc, sizeof cc, "CC=%s", xt_path("slowcc"));
    const char *env[] = {"XLAC_AUTO_JIT=2", "XLAC_FLAGS=--stats --disk_cache=0 --summary=sum.json", cc, NULL};
    xt_result r = xlac_run(true, env, xt_path("big.xg"), "--iterations", "8");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.err, "xlac: warning: cluster_0 ran slower compiled ("), "%s", r.err);
    cr_assert(strstr(r.err, "xlac: stats clusters=1 launches=8 compiles=1 cache_hits=4 "), "%s", r.err);
    cr_assert(strstr(r.err, " fallbacks=3 "), "calls 6-8 per op: %s", r.err);
    cr_assert(strstr(r.err, " demoted=1 probes=2\n"), "%s", r.err);
    cr_assert(strstr(r.err, "xlac: demoted cluster_0 at f32[512,512], f32[512,512]: compiled "), "%s", r.err);
    char *sum = xt_read_file(xt_path("sum.json"), NULL);
    cr_assert(sum && strstr(sum, "\"demoted\":[{\"cluster\":\"cluster_0\",\"types\":\"f32[512,512], "
                                 "f32[512,512]\",\"generic\":false,\"compiled_ms\":"),
              "%s", sum ? sum : "(no summary)");
    free(sum);
    xt_result_free(&r);
    /* --demote=0: the same run keeps its slow program and runs no probe */
    const char *off[] = {"XLAC_AUTO_JIT=2", "XLAC_FLAGS=--stats --disk_cache=0 --demote=0", cc, NULL};
    r = xlac_run(true, off, xt_path("big.xg"), "--iterations", "3");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.err, " fallbacks=0 ") && strstr(r.err, " demoted=0 probes=0\n"), "%s", r.err);
    xt_result_free(&r);
    xt_tmp_remove();
}

/*
 * A demotion is remembered beside the program in the disk cache (codegen/cache/verdict.c): the next
 * process loads the program and runs the signature per op from its first call, with a warning that
 * names the verdict file; --demote=0 runs it compiled, and without the file it is measured again.
 */
Test(e2e, a_demotion_is_remembered_by_the_disk_cache)
{
    xt_write_file(xt_path("big.xg"), "xlac.graph v1\ninput x: f32[512,512]\ninput y: f32[512,512]\n"
                                     "a = mul(x, y)\nb = add(a, x)\nc = tanh(b)\noutput c\n");
    xt_write_file(xt_path("slowcc"), "#!/bin/sh\nexec cc \"$@\" -O0 -fno-openmp\n");
    cr_assert_eq(chmod(xt_path("slowcc"), 0755), 0);
    char cc[200], flags[300], off[300];
    snprintf(cc, sizeof cc, "CC=%s", xt_path("slowcc"));
    snprintf(flags, sizeof flags, "XLAC_FLAGS=--stats --cache_dir=%s", xt_path("cache"));
    snprintf(off, sizeof off, "XLAC_FLAGS=--stats --demote=0 --cache_dir=%s", xt_path("cache"));
    const char *env[] = {"XLAC_AUTO_JIT=2", flags, cc, NULL};
    xt_result r = xlac_run(true, env, xt_path("big.xg"), "--iterations", "8");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.err, " demoted=1 probes=2\n"), "the first process demotes: %s", r.err);
    xt_result_free(&r);
    r = xlac_run(true, env, xt_path("big.xg"), "--iterations", "8");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    const char *w = strstr(r.err, "xlac: warning: cluster_0 ran slower compiled (");
    cr_assert(w && strstr(w, " in an earlier run; it runs per op (verdict ") && strstr(w, ".slow: "),
              "%s", r.err);
    cr_assert(strstr(r.err, " compiles=0 cache_hits=0 disk_hits=1 ") && strstr(r.err, " fallbacks=8 "),
              "every call per op, the first included: %s", r.err);
    cr_assert(strstr(r.err, " demoted=1 probes=0\n"), "%s", r.err);
    xt_result_free(&r);
    const char *keep[] = {"XLAC_AUTO_JIT=2", off, cc, NULL};
    r = xlac_run(true, keep, xt_path("big.xg"), "--iterations", "3");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.err, " launches=3 ") && strstr(r.err, " fallbacks=0 "), "%s", r.err);
    cr_assert(!strstr(r.err, "in an earlier run"), "--demote=0 reads no verdict: %s", r.err);
    xt_result_free(&r);
    xt_tmp_remove();
}

static void check_dump_runs(const char *name)
{
    xt_result r = xlac_run(false, NULL, xt_path(name), "--save-outputs", xt_path("again"));
    cr_assert_eq(r.rc, 0, "%s: %s", name, r.err);
    cr_assert(same_file(xt_path("ref/s.npy"), xt_path("again/s.npy")), "%s: s differs", name);
    xt_result_free(&r);
}

static void check_dot(const char *name)
{
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "dot -Tsvg '%s' -o '%s.svg' 2>'%s.err'", xt_path(name), xt_path(name),
             xt_path(name));
    cr_assert_eq(system(cmd), 0, "dot rejects %s", name);
}

/* The dump folder's parents are created; a folder that cannot be made is one warning, and the run goes on. */
Test(e2e, graph_dump_folders_are_created_or_skipped_with_a_warning)
{
    write_graph();
    char nested[600], under_file[600];
    snprintf(nested, sizeof nested, "XLAC_DUMP_GRAPH_PREFIX=%s", xt_path("new/a/b"));
    const char *env[] = {"XLAC_AUTO_JIT=2", "XLAC_FLAGS=--clustering_debug --codegen=0", nested, NULL};
    xt_result r = xlac_run(true, env, xt_path("g.xg"), NULL, NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    char *marked = xt_read_file(xt_path("new/a/b/mark_for_compilation_0.xg"), NULL);
    cr_assert_not_null(marked, "%s", r.err);
    free(marked);
    xt_result_free(&r);
    snprintf(under_file, sizeof under_file, "XLAC_DUMP_GRAPH_PREFIX=%s", xt_path("g.xg/sub"));
    env[2] = under_file;
    r = xlac_run(true, env, xt_path("g.xg"), "--print-outputs", NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.err, "xlac: warning: graph dump not written ("), "%s", r.err);
    cr_assert(strstr(r.err, "clusters built: 1"), "the summary still goes to stderr: %s", r.err);
    xt_result_free(&r);
    xt_tmp_remove();
}

/*
 * A dump re-run: annotations of an earlier clustering do not survive into
 * the new after-encapsulation dump (an op outside every cluster said
 * @cluster="cluster_0"), and the dump's launch nodes count as clusters.
 */
Test(e2e, rerun_dumps_drop_stale_annotations_and_count_their_clusters)
{
    xt_write_file(xt_path("a.xg"), "xlac.graph v1\ninput x: f32[4,4]\ninput y: f32[4,4]\n"
                             "a = add(x, y, @cluster=\"cluster_9\", @device=\"XLA_GPU:3\")\nb = mul(a, y)\n"
                             "u = unique(x, @cluster=\"cluster_0\")\noutput b\noutput u\n");
    char prefix[600];
    snprintf(prefix, sizeof prefix, "XLAC_DUMP_GRAPH_PREFIX=%s", xt_path("d"));
    const char *env[] = {"XLAC_AUTO_JIT=2", "XLAC_FLAGS=--clustering_debug --codegen=0", prefix, NULL};
    xt_result r = xlac_run(true, env, xt_path("a.xg"), NULL, NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    xt_result_free(&r);
    char *after = xt_read_file(xt_path("d/after_encapsulation_0.xg"), NULL);
    cr_assert_not_null(after);
    cr_assert(strstr(after, "u = unique(x)\n"), "%s", after);
    cr_assert_null(strstr(after, "cluster_9"), "%s", after);
    cr_assert_null(strstr(after, "XLA_GPU:3"), "%s", after);
    free(after);
    const char *stats[] = {"XLAC_AUTO_JIT=2", "XLAC_FLAGS=--stats --codegen=0", NULL};
    r = xlac_run(true, stats, xt_path("d/after_encapsulation_0.xg"), NULL, NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.err, "xlac: stats clusters=1 launches=1 "), "%s", r.err);
    xt_result_free(&r);
    xt_tmp_remove();
}

Test(e2e, clustering_debug_dumps)
{
    write_graph();
    mkdir(xt_path("dumps"), 0755);
    char prefix[600];
    snprintf(prefix, sizeof prefix, "XLAC_DUMP_GRAPH_PREFIX=%s", xt_path("dumps"));
    const char *env[] = {"XLAC_AUTO_JIT=2", "XLAC_FLAGS=--clustering_debug --codegen=0", prefix,
                         NULL};
    xt_result plain = xlac_run(false, NULL, xt_path("g.xg"), "--save-outputs", xt_path("ref"));
    cr_assert_eq(plain.rc, 0, "%s", plain.err);
    xt_result r = xlac_run(true, env, xt_path("g.xg"), NULL, NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.err, "clusters built: 1"), "%s", r.err);
    const char *stages[] = {"before_mark_for_compilation_0", "mark_for_compilation_0",
                            "after_encapsulation_0"};
    for (int i = 0; i < 3; i++) {
        char name[128];
        snprintf(name, sizeof name, "dumps/%s.xg", stages[i]);
        check_dump_runs(name);
        snprintf(name, sizeof name, "dumps/%s.dot", stages[i]);
        check_dot(name);
    }
    char *marked = xt_read_file(xt_path("dumps/mark_for_compilation_0.xg"), NULL);
    cr_assert_not_null(marked);
    cr_assert(strstr(marked, "@cluster=\"cluster_0\""), "%s", marked);
    cr_assert(strstr(marked, "@reason=\"data-dependent output shape\""), "%s", marked);
    free(marked);
    char *after = xt_read_file(xt_path("dumps/after_encapsulation_0.xg"), NULL);
    cr_assert(strstr(after, "xlac_launch"), "%s", after);
    free(after);
    /* the picture of the decisions: one box for the cluster, one for the reason, and only these */
    check_dot("dumps/mark_for_compilation_0.clusters.dot");
    char *boxes = xt_read_file(xt_path("dumps/mark_for_compilation_0.clusters.dot"), NULL);
    cr_assert_not_null(boxes);
    cr_assert(strstr(boxes, "label=\"cluster_0\\n4 ops on XLA_CPU:0\\n"), "%s", boxes);
    cr_assert(strstr(boxes, "label=\"left out: data-dependent output shape\\n1 op\\nunique (1)\""), "%s",
              boxes);
    cr_assert_null(strstr(boxes, "g2 ["), "two boxes: %s", boxes);
    free(boxes);
    char *summary = xt_read_file(xt_path("dumps/clustering_summary_0.txt"), NULL);
    cr_assert_not_null(summary);
    cr_assert(strstr(summary, "ops clustered: 4"), "%s", summary);
    cr_assert(strstr(summary, "cluster_0: 4 ops on XLA_CPU:0"), "%s", summary);
    free(summary);
    xt_result_free(&plain);
    xt_result_free(&r);
    xt_tmp_remove();
}

static void expect_start_error(const char *var, const char *want)
{
    const char *env[] = {var, NULL};
    xt_result r = xlac_run(true, env, xt_path("g.xg"), NULL, NULL);
    cr_assert_eq(r.rc, 2, "%s: rc %d: %s", var, r.rc, r.err);
    cr_assert_eq(count_lines(r.err), 1, "%s: %s", var, r.err);
    cr_assert(strncmp(r.err, "xlac: error: ", 13) == 0, "%s", r.err);
    cr_assert(strstr(r.err, want), "%s: %s", var, r.err);
    cr_assert_str_eq(r.out, "");
    xt_result_free(&r);
}

Test(e2e, bad_configuration_is_exit_2_with_one_line)
{
    write_graph();
    expect_start_error("XLAC_AUTO_JIT=3", "XLAC_AUTO_JIT=3");
    expect_start_error("XLAC_AUTO_JIT=yes", "XLAC_AUTO_JIT=yes");
    expect_start_error("XLAC_FLAGS=--bogus", "--bogus");
    expect_start_error("XLAC_FLAGS=--min_cluster_size=abc", "--min_cluster_size=abc");
    expect_start_error("XLAC_FLAGS=--devices=tpu", "tpu");
    expect_start_error("XLAC_FLAGS=--ops_to_exclude=nosuchop", "nosuchop");
    const char *help[] = {"XLAC_FLAGS=--help", NULL};
    xt_result r = xlac_run(true, help, xt_path("g.xg"), NULL, NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.out, "--clustering_fuel"), "help goes to stdout: %s", r.out);
    cr_assert(strstr(r.out, "--min_cluster_size"), "%s", r.out);
    xt_result_free(&r);
    xt_tmp_remove();
}

Test(e2e, jit_block_with_unique_names_the_op)
{
    xt_write_file(xt_path("j.xg"), "xlac.graph v1\ninput x: f32[6]\njit {\n  a = neg(x)\n"
                             "  u = unique(a)\n}\noutput u\n");
    xt_result plain = xlac_run(false, NULL, xt_path("j.xg"), NULL, NULL);
    cr_assert_eq(plain.rc, 0, "without the plugin a jit block runs op by op: %s", plain.err);
    xt_result r = xlac_run(true, NULL, xt_path("j.xg"), NULL, NULL);
    cr_assert_eq(r.rc, 2, "a graph error: %s", r.err);
    char want[700];
    snprintf(want, sizeof want, "xlac-run: %s:5:3: node u (unique) in a jit block", xt_path("j.xg"));
    cr_assert(strstr(r.err, want), "want '%s' in: %s", want, r.err);
    cr_assert(strstr(r.err, "node u (unique) in a jit block cannot be compiled: "
                            "data-dependent output shape"),
              "%s", r.err);
    xt_result_free(&plain);
    xt_result_free(&r);
    xt_tmp_remove();
}

Test(e2e, jit_block_compiles_at_level_0)
{
    xt_write_file(xt_path("j.xg"), "xlac.graph v1\ninput x: f32[6]\na = neg(x)\njit {\n"
                             "  b = exp(a)\n  c = mul(b, b)\n}\nd = abs(c)\noutput d\n");
    const char *env[] = {"XLAC_FLAGS=--codegen=0", NULL};
    xt_result r = xlac_run(true, env, xt_path("j.xg"), NULL, NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(has(&r, "placement: b exp XLA_CPU:0 cluster_0"), "%s%s", r.out, r.err);
    cr_assert(has(&r, "placement: c mul XLA_CPU:0 cluster_0"), "%s%s", r.out, r.err);
    cr_assert(has(&r, "placement: a neg CPU:0"), "%s%s", r.out, r.err);
    xt_result_free(&r);
    xt_tmp_remove();
}

/* ---- in process: flags and the level predicate ------------------------------ */

/* --devices names instances: a kind's word is its first instance, KIND:N another. */
Test(flags, devices_name_instances)
{
    xe_status st;
    xe_status_clear(&st);
    xlac_flags f;
    xlac_env env = {.auto_jit = "2", .flags = "--devices=cpu,gpu:1"};
    cr_assert_eq(xlac_flags_parse(&f, &env, &st), XE_OK, "%s", st.msg);
    xe_device gpu1 = xe_device_get("gpu", 1);
    cr_assert_geq(gpu1, 0);
    cr_assert(f.devices[XE_DEV_CPU] && f.devices[gpu1] && !f.devices[xe_gpu_device()]);
    xlac_flags_free(&f);
    env.flags = "--devices=gpu:one";
    cr_assert_neq(xlac_flags_parse(&f, &env, &st), XE_OK, "not a device");
    cr_assert(strstr(st.msg, "'gpu:one' is not cpu or gpu"), "%s", st.msg);
}

Test(flags, defaults_and_every_flag)
{
    xe_status st;
    xe_status_clear(&st);
    xlac_flags f;
    cr_assert_eq(xlac_flags_parse(&f, &(xlac_env){0}, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(f.auto_jit, 0);
    cr_assert_eq(f.min_cluster_size, 2);
    cr_assert_eq(f.max_cluster_size, 0);
    cr_assert_eq(f.clustering_fuel, -1);
    cr_assert(f.devices[XE_DEV_CPU] && f.devices[xe_gpu_device()]);
    cr_assert(f.codegen);
    cr_assert_not(f.clustering_debug);
    cr_assert_str_eq(f.xg.cc, "cc");
    cr_assert_str_eq(f.xg.tmp_dir, "/tmp");
    cr_assert_null(f.xg.cache_dir, "no cache folder without XDG_CACHE_HOME or HOME");
    xlac_flags_free(&f);
    const char *all = " --min_cluster_size=3 --max_cluster_size=9 --devices=gpu "
                      "--ops_to_exclude=add,matmul --clustering_fuel=7 --clustering_debug "
                      "--stats=1 --codegen=false --fast_math --compile_threshold=4 "
                      "--dynamic_after=5 --max_compiles_per_cluster=6 --async_compilation=true "
                      "--disk_cache=0 --cache_dir=/tmp/c ";
    xlac_env env = {.auto_jit = "2", .flags = all, .dump_graph_prefix = "/tmp/d", .dump_to = "/tmp/t",
                    .cc = "clang -O1", .tmpdir = "/var/tmp", .xdg_cache_home = "/x", .home = "/h"};
    cr_assert_eq(xlac_flags_parse(&f, &env, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(f.auto_jit, 2);
    cr_assert(f.xg.level2);
    cr_assert_eq(f.min_cluster_size, 3);
    cr_assert_eq(f.max_cluster_size, 9);
    cr_assert(!f.devices[XE_DEV_CPU] && f.devices[xe_gpu_device()]);
    cr_assert_eq(f.n_ops_to_exclude, 2);
    cr_assert_str_eq(f.ops_to_exclude[1], "matmul");
    cr_assert_eq(f.clustering_fuel, 7);
    cr_assert(f.clustering_debug && f.stats && !f.codegen && f.xg.fast_math);
    cr_assert_eq(f.xg.compile_threshold, 4);
    cr_assert_eq(f.xg.dynamic_after, 5);
    cr_assert_eq(f.xg.max_compiles_per_cluster, 6);
    cr_assert(f.xg.async_compilation && !f.xg.disk_cache);
    cr_assert_str_eq(f.xg.cache_dir, "/tmp/c");
    cr_assert_str_eq(f.dump_graph_prefix, "/tmp/d");
    cr_assert_str_eq(f.xg.dump_dir, "/tmp/t");
    cr_assert_str_eq(f.xg.cc, "clang -O1");
    cr_assert_str_eq(f.xg.tmp_dir, "/var/tmp");
    xlac_flags_free(&f);
}

/* CC, TMPDIR, XDG_CACHE_HOME and HOME are resolved into the flags once; empty counts as unset. */
Test(flags, environment_defaults)
{
    xe_status st;
    xe_status_clear(&st);
    xlac_flags f;
    cr_assert_eq(xlac_flags_parse(&f, &(xlac_env){.xdg_cache_home = "/x", .home = "/h"}, &st), XE_OK);
    cr_assert_str_eq(f.xg.cache_dir, "/x/xlac");
    xlac_flags_free(&f);
    cr_assert_eq(xlac_flags_parse(&f, &(xlac_env){.xdg_cache_home = "", .home = "/h", .cc = "", .tmpdir = ""}, &st),
                 XE_OK);
    cr_assert_str_eq(f.xg.cache_dir, "/h/.cache/xlac");
    cr_assert_str_eq(f.xg.cc, "cc");
    cr_assert_str_eq(f.xg.tmp_dir, "/tmp");
    xlac_flags_free(&f);
    /* the process's environment, read by xlac_env_read (each test runs in its own process) */
    cr_assert_eq(setenv("CC", "my-cc -w", 1), 0);
    cr_assert_eq(setenv("TMPDIR", "/my/tmp", 1), 0);
    cr_assert_eq(setenv("XDG_CACHE_HOME", "/my/cache", 1), 0);
    cr_assert_eq(setenv("XLAC_FLAGS", "--stats", 1), 0);
    xlac_env env;
    xlac_env_read(&env);
    cr_assert_eq(xlac_flags_parse(&f, &env, &st), XE_OK, "%s", st.msg);
    cr_assert(f.stats);
    cr_assert_str_eq(f.xg.cc, "my-cc -w");
    cr_assert_str_eq(f.xg.tmp_dir, "/my/tmp");
    cr_assert_str_eq(f.xg.cache_dir, "/my/cache/xlac");
    xlac_flags_free(&f);
}

Test(flags, errors_name_the_flag)
{
    const char *bad[][2] = {
        {"x", NULL},
        {"-1", NULL},
        {"1", "--nope"},
        {"1", "--min_cluster_size"},
        {"1", "--min_cluster_size=0"},
        {"1", "--compile_threshold=0"},
        {"1", "--max_compiles_per_cluster=0"},
        {"1", "--max_cluster_size=-2"},
        {"1", "--stats=maybe"},
        {"1", "--clustering_fuel=1e3"},
        {"1", "--devices="},
        {"1", "--ops_to_exclude=add,,mul"},
        {"1", "min_cluster_size=3"},
        {"1", "--min_cluster_size=5 --max_cluster_size=3"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        xe_status st;
        xe_status_clear(&st);
        xlac_flags f;
        cr_assert_eq(xlac_flags_parse(&f, &(xlac_env){.auto_jit = bad[i][0], .flags = bad[i][1]}, &st),
                     XE_ERR_USAGE,
                     "accepted %s %s", bad[i][0], bad[i][1] ? bad[i][1] : "");
        cr_assert_null(strchr(st.msg, '\n'), "one line: %s", st.msg);
    }
}

Test(flags, level1_predicate)
{
    xe_status st;
    xe_status_clear(&st);
    xe_graph *g = xe_parse_string("xlac.graph v1\ninput x: f32[2,2]\nm = matmul(x, x)\n"
                                  "e = exp(m)\noutput e\n",
                                  "p.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    xlac_flags f;
    cr_assert_eq(xlac_flags_parse(&f, &(xlac_env){.auto_jit = "1"}, &st), XE_OK);
    const char *why = NULL;
    const xe_node *m = g->nodes[xe_graph_find(g, "m")];
    cr_assert_not(xlac_supports(g, m, XE_DEV_CPU, false, &f, &why));
    cr_assert_str_eq(why, "not fusible at level 1");
    xc_options o;
    xlac_cluster_options(&f, &o);
    cr_assert(o.need_intermediate && o.auto_cluster);
    cr_assert_eq(o.min_cluster_size, 2);
    xlac_flags_free(&f);
    xe_graph_destroy(g);
}

Test(e2e, gpu_clusters_report_xla_gpu)
{
    if (!xe_gpu_available())
        cr_skip_test("skipped: no CUDA device");
    write_graph();
    const char *env[] = {"XLAC_AUTO_JIT=2", NULL};
    xt_result plain = xlac_run(false, NULL, xt_path("g.xg"), "--save-outputs", xt_path("ref"));
    cr_assert_eq(plain.rc, 0, "%s", plain.err);
    xt_result r = xlac_run(true, env, xt_path("g.xg"), "--save-outputs", xt_path("jit"));
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(has(&r, "placement: a mul XLA_GPU:0 cluster_0"), "%s%s", r.out, r.err);
    cr_assert(has(&r, "placement: u unique CPU:0"), "%s%s", r.out, r.err);
    xe_status st;
    xe_status_clear(&st);
    xe_tensor *a = xe_npy_read(xt_path("ref/s.npy"), &st), *b = xe_npy_read(xt_path("jit/s.npy"), &st);
    cr_assert(a && b, "%s", st.msg);
    for (int64_t i = 0; i < xe_tensor_numel(a); i++) {
        float x = ((float *)a->data)[i], y = ((float *)b->data)[i];
        cr_assert(x == x && y == y, "NaN at %lld", (long long)i);
        cr_assert_leq(fabsf(x - y), 1e-5f * (1.0f + fabsf(x)), "s[%lld]: %g vs %g", (long long)i, x,
                      y);
    }
    xe_tensor_release(a);
    xe_tensor_release(b);
    xt_result_free(&plain);
    xt_result_free(&r);
    xt_tmp_remove();
}

Test(e2e, second_process_compiles_nothing)
{
    write_graph();
    char flags[600];
    snprintf(flags, sizeof flags, "XLAC_FLAGS=--stats --cache_dir=%s", xt_path("cache"));
    const char *env[] = {"XLAC_AUTO_JIT=2", flags, NULL};
    xt_result r = xlac_run(true, env, xt_path("g.xg"), "--print-outputs", NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.err, "compiles=1 ") && strstr(r.err, "disk_hits=0 "), "%s", r.err);
    xt_result_free(&r);
    r = xlac_run(true, env, xt_path("g.xg"), "--print-outputs", NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.err, "compiles=0 ") && strstr(r.err, "disk_hits=1 "), "%s", r.err);
    xt_result_free(&r);
    xt_tmp_remove();
}

Test(e2e, unsafe_cache_folder_warns_once_and_runs)
{
    write_graph();
    mkdir(xt_path("open"), 0777);
    chmod(xt_path("open"), 0777);
    char flags[600];
    snprintf(flags, sizeof flags, "XLAC_FLAGS=--stats --cache_dir=%s", xt_path("open"));
    const char *env[] = {"XLAC_AUTO_JIT=2", flags, NULL};
    xt_result r = xlac_run(true, env, xt_path("g.xg"), "--print-outputs", NULL);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.err, "running without the disk cache") && strstr(r.err, "compiles=1 "), "%s", r.err);
    xt_result_free(&r);
    xt_tmp_remove();
}

/* ---- xlac-compile ---------------------------------------------------------------------------- */

#define XLAC_COMPILE XLAC_BINARY_DIR "/bin/xlac-compile"

static bool exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

/*
 * Ahead of time for the C target: one graph into --out (created with its
 * parents), two graphs into --out/NAME each, one progress line per
 * cluster; unknown dims and bad options are usage errors (exit 2).
 */
Test(e2e, xlac_compile_writes_the_dumps_and_the_binary)
{
    write_graph();
    xt_write_file(xt_path("h.xg"), "xlac.graph v1\ninput x: f32[5]\na = neg(x)\nb = exp(a)\noutput b\n");
    const char *one[] = {XLAC_COMPILE, xt_path("g.xg"), "--target", "c", "--out", xt_path("aot/one"), NULL};
    xt_result r = xt_run_in(xt_tmp, false, NULL, one);
    cr_assert_eq(r.rc, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "xlac-compile: cluster_0 (4 ops): compiled in "), "%s", r.out);
    cr_assert(exists(xt_path("aot/one/cluster_0.so")) && exists(xt_path("aot/one/module_0000.cluster_0.c")) &&
              exists(xt_path("aot/one/module_0000.cluster_0.plan.txt")) &&
              exists(xt_path("aot/one/module_0000.cluster_0.log")));
    char *plan = xt_read_file(xt_path("aot/one/module_0000.cluster_0.plan.txt"), NULL);
    cr_assert(plan && strstr(plan, "cache key: xlac-cache-") && strstr(plan, "  launch: OpenMP parallel for"),
              "the plan has the key the JIT would use and each kernel's launch: %s", plan);
    free(plan);
    xt_result_free(&r);
    const char *two[] = {XLAC_COMPILE, xt_path("g.xg"), xt_path("h.xg"), "--target", "c", "--out", xt_path("aot/two"), NULL};
    r = xt_run_in(xt_tmp, false, NULL, two);
    cr_assert_eq(r.rc, 0, "%s%s", r.out, r.err);
    /* one progress line per cluster, then h's whole-graph entry point (g holds unique: a warning, docs/aot.md) */
    cr_assert_eq(count_lines(r.out), 3, "%s", r.out);
    cr_assert(strstr(r.out, "h/h.so: the whole graph as one entry point") && strstr(r.err, "(unique)"), "%s%s",
              r.out, r.err);
    cr_assert(exists(xt_path("aot/two/g/cluster_0.so")) && exists(xt_path("aot/two/h/cluster_0.so")));
    cr_assert(exists(xt_path("aot/two/h/module_0000.cluster_0.plan.txt")), "numbers start in each folder");
    xt_result_free(&r);
    mkdir(xt_path("other"), 0755);
    xt_write_file(xt_path("other/g.xg"), "xlac.graph v1\ninput x: f32[5]\na = neg(x)\nb = exp(a)\noutput b\n");
    const char *same[] = {XLAC_COMPILE, xt_path("g.xg"), xt_path("other/g.xg"), "--target", "c", "--out", xt_path("aot/s"),
                          NULL};
    r = xt_run_in(xt_tmp, false, NULL, same);
    cr_assert_eq(r.rc, 2, "two graphs named g would overwrite each other: %s%s", r.out, r.err);
    cr_assert(strstr(r.err, "would both be written to"), "%s", r.err);
    xt_result_free(&r);
    const char *c_arch[] = {XLAC_COMPILE, xt_path("g.xg"), "--target", "c", "--arch", "sm_90", "--out", xt_path("aot/a"),
                            NULL};
    r = xt_run_in(xt_tmp, false, NULL, c_arch);
    cr_assert_eq(r.rc, 2, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "--arch applies to --target cuda only"), "%s", r.err);
    xt_result_free(&r);
    xt_write_file(xt_path("d.xg"), "xlac.graph v1\ninput x: f32[?,3]\na = neg(x)\nb = exp(a)\noutput b\n");
    const char *dyn[] = {XLAC_COMPILE, xt_path("d.xg"), "--target", "c", "--out", xt_path("aot/d"), NULL};
    r = xt_run_in(xt_tmp, false, NULL, dyn);
    cr_assert_eq(r.rc, 2, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "needs fully declared shapes"), "%s", r.err);
    xt_result_free(&r);
    const char *bad[] = {XLAC_COMPILE, xt_path("g.xg"), "--target", "ptx", "--out", xt_path("aot/b"), NULL};
    r = xt_run_in(xt_tmp, false, NULL, bad);
    cr_assert_eq(r.rc, 2, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "usage: xlac-compile"), "%s", r.err);
    xt_result_free(&r);
    const char *bogus[] = {XLAC_COMPILE, xt_path("g.xg"), "--target", "c", "--out", xt_path("aot/b"), "--bogus", NULL};
    r = xt_run_in(xt_tmp, false, NULL, bogus);
    cr_assert_eq(r.rc, 2, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "unknown option --bogus"), "%s", r.err);
    xt_result_free(&r);
    char out_eq[600];
    snprintf(out_eq, sizeof out_eq, "--out=%s", xt_path("aot/eq"));
    const char *eq[] = {XLAC_COMPILE, xt_path("g.xg"), "--target=c", out_eq, NULL};
    r = xt_run_in(xt_tmp, false, NULL, eq);
    cr_assert_eq(r.rc, 0, "--name=value works too: %s%s", r.out, r.err);
    cr_assert(exists(xt_path("aot/eq/cluster_0.so")));
    xt_result_free(&r);
    xt_tmp_remove();
}

/* A compiler that fails: exit 1, the cluster named, and its source and (empty) log still written. */
Test(e2e, xlac_compile_failure_keeps_the_source)
{
    write_graph();
    const char *argv[] = {XLAC_COMPILE, xt_path("g.xg"), "--target", "c", "--out", xt_path("aot"), NULL};
    const char *env[] = {"CC=/bin/false", NULL};
    xt_result r = xt_run_in(xt_tmp, false, env, argv);
    cr_assert_eq(r.rc, 1, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "cluster_0 (4 ops): FAILED"), "%s", r.out);
    cr_assert(strstr(r.err, "/bin/false failed (exit status 1)"), "%s", r.err);
    cr_assert(exists(xt_path("aot/module_0000.cluster_0.c")) && !exists(xt_path("aot/cluster_0.so")));
    xt_result_free(&r);
    xt_tmp_remove();
}

/* A call the program cannot serve (max over an empty axis): the op-by-op error, one line, at the node. */
Test(e2e, empty_max_under_the_plugin_is_the_op_by_op_error)
{
    xt_write_file(xt_path("z.xg"), "xlac.graph v1\ninput x: f32[0,3]\na = neg(x)\nm = reduce_max(a, axes=[0])\n"
                             "output m\n");
    const char *env[] = {"XLAC_AUTO_JIT=2", "XLAC_FLAGS=--disk_cache=0", NULL};
    const char *argv[] = {XLAC_RUN, xt_path("z.xg"), "--seed", "0", NULL};
    xt_result r = xt_run_in(xt_tmp, true, env, argv);
    cr_assert_eq(r.rc, 1, "%s", r.err);
    char want[700];
    snprintf(want, sizeof want, "xlac-run: %s:4:1: node m (reduce_max): reduce_max over an empty axis\n",
             xt_path("z.xg"));
    cr_assert(strstr(r.err, want), "want '%s' in: %s", want, r.err);
    cr_assert_null(strstr(r.err, "warning"), "%s", r.err);
    xt_result_free(&r);
    xt_tmp_remove();
}

/*
 * A relative XDG_CACHE_HOME or HOME is ignored (the XDG rule), an unset
 * HOME falls back to the password database's home: the cache never lands
 * in the working folder (it went to ./relhome/.cache/xlac) and is never
 * silently off while the user has a home.
 */
Test(flags, relative_or_missing_home_never_puts_the_cache_in_the_working_folder)
{
    xe_status st;
    xe_status_clear(&st);
    xlac_flags f;
    cr_assert_eq(xlac_flags_parse(&f, &(xlac_env){.xdg_cache_home = "relxdg", .home = "/h"}, &st), XE_OK);
    cr_expect_str_eq(f.xg.cache_dir, "/h/.cache/xlac");
    xlac_flags_free(&f);
    cr_assert_eq(xlac_flags_parse(&f, &(xlac_env){.home = "relhome", .passwd_home = "/pw"}, &st), XE_OK);
    cr_expect_str_eq(f.xg.cache_dir, "/pw/.cache/xlac");
    xlac_flags_free(&f);
    cr_assert_eq(xlac_flags_parse(&f, &(xlac_env){.passwd_home = "/pw"}, &st), XE_OK);
    cr_expect_str_eq(f.xg.cache_dir, "/pw/.cache/xlac", "HOME unset: the password database's home");
    xlac_flags_free(&f);
    cr_assert_eq(xlac_flags_parse(&f, &(xlac_env){.xdg_cache_home = "relxdg", .home = "relhome"}, &st), XE_OK);
    cr_expect_null(f.xg.cache_dir);
    xlac_flags_free(&f);
}

/* The same through a real process: nothing is created in the working folder, and it is said once. */
Test(flags, relative_home_creates_nothing_in_the_working_folder, .init = make_tmp, .fini = xt_tmp_fini)
{
    xt_write_file(xt_path("g.xg"), "xlac.graph v1\ninput x: f32[4]\nt = add(x, x)\nu = neg(t)\noutput u\n");
    const char *env[] = {"XLAC_AUTO_JIT=2", "HOME=relhome", "XDG_CACHE_HOME=relxdg", "CC=/bin/false", NULL};
    const char *argv[] = {XLAC_BINARY_DIR "/bin/xlac-run", "g.xg", "--seed", "0", NULL};
    xt_result r = xt_run_in(xt_tmp, true, env, argv);
    cr_expect_eq(r.rc, 0, "%s", r.err);
    struct stat sb;
    cr_expect_neq(stat(xt_path("relhome"), &sb), 0, "relhome/ was created in the working folder");
    cr_expect_neq(stat(xt_path("relxdg"), &sb), 0, "relxdg/ was created in the working folder");
    cr_expect_eq(xt_occurrences(r.err, "is a relative path, ignored"), 1, "%s", r.err);
    xt_result_free(&r);
}

/* ---- convolutions in clusters ----------------------------------------------------------- */

/* Appends `name = const(DT[dims], [...])` with values in [-0.5, 0.5) from an LCG (deterministic). */
static void const_line(xe_text *t, const char *name, const char *dt, const char *dims, int count,
                       uint32_t *seed)
{
    xe_text_printf(t, "%s = const(%s[%s], [", name, dt, dims);
    for (int i = 0; i < count; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        xe_text_printf(t, "%s%.6f", i ? "," : "", (double)(*seed >> 8) / 16777216.0 - 0.5);
    }
    xe_text_printf(t, "])\n");
}

/*
 * Two residual conv blocks (a 3x3 conv, bias, ReLU, a 3x3 conv, the block's
 * input added, ReLU), then a depthwise strided conv with SiLU, a grouped
 * 1x1 conv with HardSwish, a 1x1 conv with ReLU6 and GELU: the convs and
 * everything between them are one cluster, and its outputs match op by op
 * (xlac-run --compare).
 */
static void conv_blocks(const char *dt)
{
    xe_text t = {0};
    uint32_t seed = 26;
    xe_text_printf(&t, "xlac.graph v1\ninput x: %s[2,8,9,9]\n", dt);
    const_line(&t, "b", dt, "8", 8, &seed);
    for (int k = 0; k < 2; k++) {
        char w1[8], w2[8];
        snprintf(w1, sizeof w1, "w%da", k);
        snprintf(w2, sizeof w2, "w%db", k);
        const_line(&t, w1, dt, "8,8,3,3", 576, &seed);
        const_line(&t, w2, dt, "8,8,3,3", 576, &seed);
        xe_text_printf(&t,
                       "c%da = conv2d(%s, %s, b, pads=[1,1,1,1])\nr%da = relu(c%da)\n"
                       "c%db = conv2d(r%da, %s, pads=[1,1,1,1])\ns%d = add(c%db, %s)\nr%d = relu(s%d)\n",
                       k, k ? "r0" : "x", w1, k, k, k, k, w2, k, k, k ? "r0" : "x", k, k);
    }
    const_line(&t, "wd", dt, "8,1,3,3", 72, &seed);
    const_line(&t, "wg", dt, "12,4,1,1", 48, &seed);
    const_line(&t, "we", dt, "12,12,1,1", 144, &seed);
    const_line(&t, "wf", dt, "12,12,3,3", 1296, &seed);
    xe_text_printf(&t, "d = conv2d(r1, wd, groups=8, strides=[2,2], pads=[0,1,1,0])\n"
                       "sg = sigmoid(d)\nsw = mul(d, sg)\ng = conv2d(sw, wg, groups=2)\n"
                       "hs = hard_sigmoid(g, alpha=0.16666666666666666)\nhw = mul(g, hs)\ne = conv2d(hw, we)\n"
                       "zero = const(%s[], 0)\nsix = const(%s[], 6)\n"
                       "mx = maximum(e, zero)\nr6 = minimum(mx, six)\nf = conv2d(r6, wf, pads=[1,1,1,1])\n"
                       "ge = gelu(f)\noutput ge\n", dt, dt);
    char *src = xe_text_take(&t);
    xt_write_file(xt_path("conv.xg"), src);
    free(src);
    char dump[512], plan[600];
    snprintf(dump, sizeof dump, "XLAC_DUMP_TO=%s/dump_%s", xt_tmp, dt);
    snprintf(plan, sizeof plan, "%s/dump_%s/module_0000.cluster_0.plan.txt", xt_tmp, dt);
    const char *env[] = {"XLAC_AUTO_JIT=2", "XLAC_FLAGS=--disk_cache=0", dump, NULL};
    xt_result r = xlac_run(true, env, xt_path("conv.xg"), "--compare", NULL);
    cr_assert_eq(r.rc, 0, "%s: %s%s", dt, r.out, r.err);
    /* f32: the depthwise conv takes its SiLU, the grouped 1x1 its HardSwish and the last conv
       its GELU as oneDNN post-ops; ReLU and ReLU6 stay loops (oneDNN's lose NaN) */
    char *text = xt_read_file(plan, NULL);
    cr_assert_not_null(text, "%s", plan);
    cr_assert_eq(xt_occurrences(text, "runs inside it as post-ops"), strcmp(dt, "f32") ? 0 : 3, "%s: %s", dt, text);
    free(text);
    cr_assert(has(&r, "op by op against 1 cluster(s)"), "%s: %s%s", dt, r.out, r.err);
    cr_assert(has(&r, "compare ge: ") && has(&r, " ok"), "%s: %s%s", dt, r.out, r.err);
    const char *in_cluster[] = {"c0a conv2d XLA_CPU:0 cluster_0", "s0 add XLA_CPU:0 cluster_0",
                                "s1 add XLA_CPU:0 cluster_0", "d conv2d XLA_CPU:0 cluster_0",
                                "g conv2d XLA_CPU:0 cluster_0", "e conv2d XLA_CPU:0 cluster_0",
                                "f conv2d XLA_CPU:0 cluster_0", "ge gelu XLA_CPU:0 cluster_0"};
    for (size_t k = 0; k < sizeof in_cluster / sizeof *in_cluster; k++)
        cr_assert(has(&r, in_cluster[k]), "%s: no '%s' in %s%s", dt, in_cluster[k], r.out, r.err);
    xt_result_free(&r);
}

Test(e2e, conv_blocks_with_residual_adds_are_one_cluster)
{
    conv_blocks("f32");
    conv_blocks("f64");
    xt_tmp_remove();
}

/*
 * A network in small from ONNX (tests/data/onnx/TinyCNN.onnx: Conv+BatchNorm+Relu, depthwise
 * Conv+BatchNorm+Clip, 1x1 Conv+BatchNorm, residual Add, SiLU, GlobalAveragePool, Gemm): the
 * BatchNorms fold into the convs, and the whole network is one cluster matching op by op.
 */
Test(e2e, tiny_cnn_from_onnx_is_one_cluster)
{
    const char *env[] = {"XLAC_AUTO_JIT=2", "XLAC_FLAGS=--disk_cache=0", NULL};
    xt_result r = xlac_run(true, env, XLAC_SOURCE_DIR "/tests/data/onnx/TinyCNN.onnx", "--compare", NULL);
    cr_assert_eq(r.rc, 0, "%s%s", r.out, r.err);
    cr_assert(has(&r, "op by op against 1 cluster(s)"), "%s%s", r.out, r.err);
    cr_assert(has(&r, "c2 conv2d XLA_CPU:0 cluster_0") && has(&r, "s add XLA_CPU:0 cluster_0"), "%s%s", r.out,
              r.err);
    cr_assert(!has(&r, "batch_norm") && !has(&r, "rsqrt"), "a BatchNorm was not folded: %s%s", r.out, r.err);
    xt_result_free(&r);
    xt_tmp_remove();
}

/*
 * NaN through a conv cluster: every activation after a conv (ReLU, ReLU6, SiLU, a residual add
 * and GELU, fused or not) keeps the NaN where op by op keeps it. oneDNN's relu post-op would
 * turn it into 0.
 */
Test(e2e, nan_survives_a_conv_cluster)
{
    const char *text = "xlac.graph v1\ninput x: f32[1,4,5,5]\n"
                       "w = const(f32[4,4,1,1], [1,0.5,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1])\n"
                       "c1 = conv2d(x, w)\nr1 = relu(c1)\nc2 = conv2d(r1, w)\nzero = const(f32[], 0)\n"
                       "six = const(f32[], 6)\nmx = maximum(c2, zero)\nr6 = minimum(mx, six)\n"
                       "c3 = conv2d(r6, w)\ns3 = add(c3, x)\nsg = sigmoid(s3)\nsw = mul(s3, sg)\n"
                       "c4 = conv2d(sw, w)\ny = gelu(c4)\noutput y\n";
    xt_write_file(xt_path("nan.xg"), text);
    xe_shape s = {.rank = 4, .dims = {1, 4, 5, 5}};
    xe_status st;
    xe_status_clear(&st);
    xe_tensor *x = xe_tensor_new(XE_F32, &s, XE_DEV_CPU, &st);
    cr_assert_not_null(x);
    for (int i = 0; i < 100; i++)
        ((float *)x->data)[i] = (float)(i % 7) * 0.25f - 0.75f;
    ((float *)x->data)[5 * 5 + 2 * 5 + 2] = NAN; /* channel 1: reaches channels 0 and 1 */
    cr_assert_eq(xe_npy_write(xt_path("x.npy"), x, &st), XE_OK, "%s", st.msg);
    xe_tensor_release(x);
    char in[600];
    snprintf(in, sizeof in, "x=%s", xt_path("x.npy"));
    const char *env[] = {"XLAC_AUTO_JIT=2", "XLAC_FLAGS=--disk_cache=0", NULL};
    const char *argv[] = {XLAC_RUN, xt_path("nan.xg"), "--input", in, "--compare", NULL};
    xt_result r = xt_run_in(xt_tmp, true, env, argv);
    cr_assert_eq(r.rc, 0, "%s%s", r.out, r.err);
    cr_assert(has(&r, "op by op against 1 cluster(s)") && has(&r, "compare y: ") && has(&r, " ok"), "%s%s",
              r.out, r.err);
    xt_result_free(&r);
    xt_tmp_remove();
}

/* One feed folder per size (batch, seq) of tests/data/onnx/symbolic_attention.onnx. */
static void attention_feed(const char *name, int64_t b, int64_t s)
{
    xe_status st;
    xe_status_clear(&st);
    cr_assert_eq(mkdir(xt_path(name), 0700), 0);
    xe_shape xs = {.rank = 3, .dims = {b, s, 8}}, ms = {.rank = 2, .dims = {b, s}};
    xe_tensor *x = xe_tensor_new(XE_F32, &xs, XE_DEV_CPU, &st), *m = xe_tensor_new(XE_I64, &ms, XE_DEV_CPU, &st);
    for (int64_t i = 0; i < b * s * 8; i++)
        ((float *)x->data)[i] = (float)(i % 7) * 0.25f - 0.5f;
    for (int64_t i = 0; i < b * s; i++)
        ((int64_t *)m->data)[i] = i % 5 != 4;
    char p[64];
    snprintf(p, sizeof p, "%s/x.npy", name);
    cr_assert_eq(xe_npy_write(xt_path(p), x, &st), XE_OK, "%s", st.msg);
    snprintf(p, sizeof p, "%s/mask.npy", name);
    cr_assert_eq(xe_npy_write(xt_path(p), m, &st), XE_OK, "%s", st.msg);
    xe_tensor_release(x);
    xe_tensor_release(m);
}

/*
 * One clustered xlac-run of model over 8 (batch, length) sizes, one feed
 * folder each made by feed, with --stats and a --summary in the test's folder.
 */
static xt_result run_eight_sizes(const char *model, void (*feed)(const char *name, int64_t b, int64_t s))
{
    static const int64_t size[8][2] = {{2, 3}, {2, 5}, {3, 8}, {2, 4}, {2, 7}, {4, 6}, {2, 9}, {3, 11}};
    const char *argv[2 + 2 * 8 + 1] = {XLAC_RUN, model};
    char dirs[8][600];
    for (int k = 0; k < 8; k++) {
        char name[8];
        snprintf(name, sizeof name, "f%d", k);
        feed(name, size[k][0], size[k][1]);
        snprintf(dirs[k], sizeof dirs[k], "%s", xt_path(name));
        argv[2 + 2 * k] = "--feed";
        argv[3 + 2 * k] = dirs[k];
    }
    char flags[700];
    snprintf(flags, sizeof flags, "XLAC_FLAGS=--stats --disk_cache=0 --summary=%s", xt_path("summary.json"));
    const char *env[] = {"XLAC_AUTO_JIT=2", flags, NULL};
    return xt_run_in(xt_tmp, true, env, argv);
}

/*
 * A model whose shapes are computed from symbolic dims, fed 8 sizes in one
 * process: every size runs, and the cluster compiles 3 times (two sizes,
 * then one shape-generic program), within the bound of 4 a cluster has
 * with `?` dims. Before the graphs built per size were generalised, each
 * size compiled its own program (8).
 */
Test(e2e, symbolic_dims_at_eight_sizes_compile_at_most_four_times)
{
    xt_result r = run_eight_sizes(XLAC_SOURCE_DIR "/tests/data/onnx/symbolic_attention.onnx", attention_feed);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.err, "clusters=8 launches=8 "), "one cluster per size: %s", r.err);
    const char *c = strstr(r.err, "compiles=");
    cr_assert_not_null(c, "%s", r.err);
    int compiles = atoi(c + strlen("compiles="));
    cr_expect(compiles >= 1 && compiles <= 4, "compiles=%d over 8 sizes: %s", compiles, r.err);
    char *summary = xt_read_file(xt_path("summary.json"), NULL);
    cr_assert_not_null(summary);
    cr_expect(strstr(summary, "\"name\":\"cluster_0\"") && !strstr(summary, "\"name\":\"cluster_1\""),
              "one distinct cluster: %s", summary);
    free(summary);
    xt_result_free(&r);
    xt_tmp_remove();
}

/* One feed folder of token ids and a padding mask (the last two positions of the last row). */
static void text_feed(const char *name, int64_t b, int64_t s)
{
    xe_status st;
    xe_status_clear(&st);
    cr_assert_eq(mkdir(xt_path(name), 0700), 0);
    xe_shape sh = {.rank = 2, .dims = {b, s}};
    xe_tensor *ids = xe_tensor_new(XE_I64, &sh, XE_DEV_CPU, &st), *mask = xe_tensor_new(XE_I64, &sh, XE_DEV_CPU, &st);
    for (int64_t i = 0; i < b * s; i++) {
        ((int64_t *)ids->data)[i] = 1 + (i * 37) % 97;
        ((int64_t *)mask->data)[i] = !(i >= (b - 1) * s + s - 2);
    }
    char p[64];
    snprintf(p, sizeof p, "%s/input_ids.npy", name);
    cr_assert_eq(xe_npy_write(xt_path(p), ids, &st), XE_OK, "%s", st.msg);
    snprintf(p, sizeof p, "%s/attention_mask.npy", name);
    cr_assert_eq(xe_npy_write(xt_path(p), mask, &st), XE_OK, "%s", st.msg);
    xe_tensor_release(ids);
    xe_tensor_release(mask);
}

/*
 * T5's encoder as torch exports it with symbolic batch and sequence
 * (tests/models/exports): its relative position buckets are an index table
 * whose runs change with the length; imported as slices, they changed the
 * graph's structure at some lengths, and each cluster compiled 5 times over
 * these 8 sizes. Every cluster now compiles at most 4 times (--summary).
 */
Test(e2e, t5_export_at_eight_sizes_compiles_each_cluster_at_most_four_times, .timeout = 300)
{
    xt_result r = run_eight_sizes(XLAC_SOURCE_DIR "/tests/models/exports/t5_encoder.dynamic/model.onnx", text_feed);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    char *summary = xt_read_file(xt_path("summary.json"), NULL);
    cr_assert_not_null(summary);
    int clusters = 0;
    for (const char *p = strstr(summary, "\"compiled\":"); p; p = strstr(p + 1, "\"compiled\":")) {
        int n = atoi(p + strlen("\"compiled\":"));
        cr_expect(n >= 1 && n <= 4, "a cluster compiled %d times over 8 sizes: %s", n, summary);
        clusters++;
    }
    cr_expect_geq(clusters, 1, "%s", summary);
    free(summary);
    xt_result_free(&r);
    xt_tmp_remove();
}
