/*
 * The rough edges a new user hit, each a regression test through the real CLI
 * (children with a clean environment, the disk cache off):
 *   - `xlac-run model.onnx --to-xg out.xg` on a model with a dynamic batch
 *     writes the graph (`?` dims) without feeds;
 *   - a replay folder keeps weights as binary .npy beside cluster.xg (no
 *     decimal text), and its command.txt names the absolute path of the
 *     xlac-run that made it and runs as it is;
 *   - ONNX errors: a node behind an unsupported one is still checked (its
 *     unsupported dtype listed), a foreign domain's node shows that domain's
 *     opset, an opset beyond 32 bits is reported as written;
 *   - an output that passes an input through is saved under its own name
 *     (x.npy, not x_1.npy), as the Python package names it;
 *   - --shape and --dim pin a symbolic dim at load (the graph written with
 *     it known, a feed of another size refused), and a pin that names nothing
 *     is an error that lists every such pin.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/tmpdir.h"
#include "xlac/io.h"
#include "xlac/xlac.h"

#define XLAC_RUN XLAC_BINARY_DIR "/bin/xlac-run"
#define LIBXLAC XLAC_BINARY_DIR "/lib/libxlac.so"
#define DATA XLAC_SOURCE_DIR "/tests/data/onnx"

static void make_tmp(void)
{
    xt_tmp_make("/tmp/xlac_rough_XXXXXX");
}

TestSuite(rough, .init = make_tmp, .fini = xt_tmp_fini, .timeout = 180);

static bool exists(const char *name)
{
    struct stat sb;
    return stat(xt_path(name), &sb) == 0;
}

Test(rough, to_xg_of_a_dynamic_batch_needs_no_feeds)
{
    char *o = NULL;
    cr_assert_eq(xt_sh("", XLAC_RUN " " DATA "/dynamic.onnx --to-xg d.xg", &o), 0, "%s", o);
    free(o);
    char *text = xt_read_file(xt_path("d.xg"), NULL);
    cr_assert(text && strstr(text, "input x: f32[?,3]"), "%s", text);
    free(text);
    xe_status st;
    xe_status_clear(&st);
    xe_graph *g = xe_parse_file(xt_path("d.xg"), &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_graph_destroy(g);
    /* running it still needs the feed (the message says so; random values only with --seed) */
    cr_assert_eq(xt_sh("", XLAC_RUN " " DATA "/dynamic.onnx --save-outputs o", &o), 2, "%s", o);
    cr_assert(strstr(o, "input x is not fed"), "%s", o);
    free(o);
}

Test(rough, shape_and_dim_pin_symbolic_dims_at_load)
{
    char *o = NULL;
    cr_assert_eq(xt_sh("", XLAC_RUN " " DATA "/dynamic.onnx --dim batch=4 --to-xg d.xg", &o), 0,
                 "%s", o);
    free(o);
    char *text = xt_read_file(xt_path("d.xg"), NULL);
    cr_assert(text && strstr(text, "input x: f32[4,3]"), "%s", text);
    free(text);
    cr_assert_eq(xt_sh("", XLAC_RUN " " DATA "/dynamic.onnx --shape x=2,3 --to-xg e.xg", &o), 0,
                 "%s", o);
    free(o);
    text = xt_read_file(xt_path("e.xg"), NULL);
    cr_assert(text && strstr(text, "input x: f32[2,3]"), "%s", text);
    free(text);
    /* random values of the pinned size run (python/tests/test_dim_pins.py: other sizes refused) */
    cr_assert_eq(xt_sh("", XLAC_RUN " " DATA "/dynamic.onnx --shape x=2,3 --seed 1 --print-outputs",
                       &o),
                 0, "%s", o);
    free(o);
    /* pins that name nothing, or contradict the model, each listed; exit 2 */
    cr_assert_eq(xt_sh("", XLAC_RUN " " DATA "/dynamic.onnx --dim bach=4 --shape x=2,5 --shape y=1 "
                       "--seed 1",
                       &o),
                 2, "%s", o);
    cr_assert(strstr(o, "'bach' names no dim") && strstr(o, "'y' names no graph input") &&
                  strstr(o, "makes dim 1 of input 'x' 5, the model declares 3"),
              "%s", o);
    free(o);
    cr_assert_eq(xt_sh("", XLAC_RUN " " DATA "/dynamic.onnx --dim batch=", &o), 2, "%s", o);
    cr_assert(strstr(o, "--dim wants one value"), "%s", o);
    free(o);
    cr_assert_eq(xt_sh("", XLAC_RUN " " DATA "/dynamic.onnx --shape x=2,", &o), 2, "%s", o);
    cr_assert(strstr(o, "a dim is missing after the last comma"), "%s", o);
    free(o);
}

/* A graph whose one cluster holds a 16x32 weight. */
static void write_weighted_graph(void)
{
    char text[16384];
    int n = snprintf(text, sizeof text, "xlac.graph v1\ninput x: f32[16,32]\nw = const(f32[16,32], [");
    for (int i = 0; i < 16 * 32; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "%s%d.%03d", i ? "," : "", (i * 37) % 7 - 3, (i * 7919) % 1000);
    snprintf(text + n, sizeof text - (size_t)n,
             "])\nt = mul(x, w)\nu = tanh(t)\ns = reduce_sum(u, axes=[1], keepdims=false)\noutput s\n");
    xt_write_file(xt_path("w.xg"), text);
}

Test(rough, replay_folder_has_binary_weights_and_an_absolute_command)
{
    write_weighted_graph();
    char *o = NULL;
    cr_assert_eq(xt_sh("LD_PRELOAD=" LIBXLAC " XLAC_AUTO_JIT=2 XLAC_DUMP_TO=dump "
                       "XLAC_FLAGS='--dump_inputs --disk_cache=0'",
                       XLAC_RUN " w.xg --seed 2 --save-outputs jit", &o),
                 0, "%s", o);
    free(o);
    const char *dir = "dump/replay_0000.cluster_0";
    char p[256];
    snprintf(p, sizeof p, "%s/cluster.xg", dir);
    size_t len = 0;
    char *text = xt_read_file(xt_path(p), &len);
    cr_assert(text, "no %s", p);
    /* regression: the weight was 512 decimal numbers in the text */
    cr_assert(strstr(text, "file=\"w.npy\""), "%s", text);
    cr_assert_lt(len, 1000, "cluster.xg holds the weight as text: %zu bytes", len);
    free(text);
    snprintf(p, sizeof p, "%s/w.npy", dir);
    cr_assert(exists(p), "no %s", p);
    /* command.txt: the absolute path of the xlac-run that dumped */
    char abs[PATH_MAX], want[PATH_MAX + 8];
    cr_assert(realpath(XLAC_RUN, abs));
    snprintf(want, sizeof want, " %s ", abs);
    snprintf(p, sizeof p, "%s/command.txt", dir);
    char *cmd = xt_read_file(xt_path(p), NULL);
    cr_assert(cmd && strstr(cmd, want) && !strstr(cmd, " xlac-run "), "%s", cmd);
    free(cmd);
    /* ... and it runs as it is, from the folder it was made in: both ways agree */
    cr_assert_eq(xt_sh("", "sh dump/replay_0000.cluster_0/command.txt", &o), 0, "%s", o);
    cr_assert(strstr(o, "compare s: ") && strstr(o, " ok\n"), "%s", o);
    free(o);
    /* the replayed graph op by op gives the original op-by-op outputs, bit for bit */
    cr_assert_eq(xt_sh("", XLAC_RUN " w.xg --seed 2 --save-outputs plain", &o), 0, "%s", o);
    free(o);
    cr_assert_eq(xt_sh("", XLAC_RUN " dump/replay_0000.cluster_0/cluster.xg --feed dump/replay_0000.cluster_0/inputs "
                           "--save-outputs r",
                       &o),
                 0, "%s", o);
    free(o);
    size_t na, nb;
    char *a = xt_read_file(xt_path("plain/s.npy"), &na), *b = xt_read_file(xt_path("r/s.npy"), &nb);
    cr_assert(a && b && na == nb && !memcmp(a, b, na), "the replay differs");
    free(a);
    free(b);
}

Test(rough, const_file_is_checked_and_stays_in_the_folder)
{
    xe_status st;
    xe_status_clear(&st);
    xt_write_file(xt_path("bad1.xg"), "xlac.graph v1\nw = const(f32[2], file=\"../w.npy\")\noutput w\n");
    cr_assert_null(xe_parse_file(xt_path("bad1.xg"), &st));
    cr_assert(strstr(st.msg, "plain name in the graph's own folder") && strstr(st.msg, "bad1.xg:2:"), "%s", st.msg);
    xe_shape sh = xe_shape_make(1, (int64_t[]){3});
    xe_tensor *t = xe_tensor_new(XE_F32, &sh, XE_DEV_CPU, &st);
    cr_assert(t && xe_npy_write(xt_path("v.npy"), t, &st) == XE_OK, "%s", st.msg);
    xe_tensor_release(t);
    xt_write_file(xt_path("bad2.xg"), "xlac.graph v1\nw = const(f32[2], file=\"v.npy\")\noutput w\n");
    xe_status_clear(&st);
    cr_assert_null(xe_parse_file(xt_path("bad2.xg"), &st));
    cr_assert(strstr(st.msg, "holds f32[3], the constant is declared f32[2]"), "%s", st.msg);
}

/* The CLI's stderr for a model that does not import. */
static char *import_errors(const char *model)
{
    char cmd[512];
    char *o = NULL;
    snprintf(cmd, sizeof cmd, XLAC_RUN " " DATA "/%s --save-outputs o", model);
    cr_assert_eq(xt_sh("", cmd, &o), 2, "%s", o);
    return o;
}

Test(rough, onnx_errors_tell_the_truth)
{
    char *o = import_errors("unsupported_behind.onnx");
    /* regression: the node behind the unsupported one was not listed */
    cr_assert(strstr(o, "node 'tfidf' (TfIdfVectorizer, domain ai.onnx, opset 17): op is not supported"), "%s", o);
    cr_assert(strstr(o, "node 'cast_behind' (Cast, domain ai.onnx, opset 17): cast to STRING is not supported"), "%s",
              o);
    cr_assert(!strstr(o, "relu_behind"), "a supported node is not an error: %s", o);
    free(o);
    o = import_errors("foreign_opset.onnx");
    cr_assert(strstr(o, "node 'foo' (Foo, domain com.example, opset 3)"), "the domain's own opset: %s", o);
    free(o);
    o = import_errors("huge_opset.onnx");
    cr_assert(strstr(o, "ai.onnx opset 1099511627776 is not supported"), "%s", o);
    cr_assert(!strstr(o, "opset 0"), "%s", o);
    free(o);
}

Test(rough, an_output_passing_an_input_through_keeps_its_name)
{
    char *o = NULL;
    cr_assert_eq(xt_sh("", XLAC_RUN " " DATA "/output_is_input.onnx --seed 1 --save-outputs o", &o), 0, "%s", o);
    free(o);
    cr_assert(exists("o/x.npy") && exists("o/y.npy"), "x.npy and y.npy expected");
    cr_assert(!exists("o/x_1.npy"), "the node's name is not the output's");
}

Test(rough, a_seeded_cache_on_a_read_only_folder_is_used_for_loading)
{
    if (geteuid() != 0 || system("command -v setpriv >/dev/null") != 0)
        cr_skip_test("needs root and setpriv to run as another user");
    write_weighted_graph();
    char *o = NULL;
    /* seeded by root, then made read-only: the deployment docs/aot.md describes */
    cr_assert_eq(xt_sh("LD_PRELOAD=" LIBXLAC " XLAC_AUTO_JIT=2 XLAC_FLAGS='--cache_dir=seed --stats'",
                       XLAC_RUN " w.xg --seed 1", &o),
                 0, "%s", o);
    cr_assert(strstr(o, "compiles=1"), "%s", o);
    free(o);
    cr_assert_eq(xt_sh("", "chmod 0755 . && chmod -R a-w,a+rX seed", &o), 0, "%s", o);
    free(o);
    /* another user, who cannot write the folder and does not own it (regression: it was ignored) */
    const char *as = "setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent ";
    char bin[300], lib[300], env[400], cmd[2048];
    xt_build_for(as, bin, lib, sizeof bin, env, sizeof env); /* copies when the checkout is private */
    snprintf(cmd, sizeof cmd,
             "%s%sLD_PRELOAD=%s/libxlac.so XLAC_AUTO_JIT=2 XLAC_FLAGS='--cache_dir=%s/seed --stats' %s/xlac-run"
             " %s/w.xg --seed 1",
             as, env, lib, xt_tmp, bin, xt_tmp);
    cr_assert_eq(xt_sh("", cmd, &o), 0, "%s", o);
    cr_assert(strstr(o, "compiles=0") && strstr(o, "disk_hits=1"), "the seeded module was not loaded: %s", o);
    cr_assert(!strstr(o, "warning"), "a read-only seeded cache is no warning: %s", o);
    free(o);
    cr_assert_eq(xt_sh("", "chmod -R u+w seed", &o), 0, "%s", o); /* so that the folder can be removed */
    free(o);
}
