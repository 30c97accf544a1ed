/*
 * What the executor reads, and from where (docs/files-and-signals.md):
 *   - an ONNX model's external data stays inside the model's folder: a
 *     symbolic link that leads out (to /etc/passwd, to a file beside the
 *     folder) is refused and named, as "..", an absolute path and an
 *     offset or length that is not plain digits (" 19") are; a link that
 *     stays inside is fine;
 *   - no file the executor reads can hang it: a FIFO as the model (.onnx
 *     or .xg), as the external data, or as a feed (.npy, .pb, --input) is
 *     an error naming it, at once. Each run is bounded (timeout 20 s), so
 *     a regression fails instead of hanging the suite.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xlac/xlac.h"
#include "support/tmpdir.h"

#define DATA XLAC_SOURCE_DIR "/tests/data/onnx"
#define XLAC_RUN XLAC_BINARY_DIR "/bin/xlac-run"

static xe_status st;

static void setup(void)
{
    xe_status_clear(&st);
    xt_tmp_make("/tmp/xlac-files-XXXXXX");
}

static void teardown(void)
{
    cr_assert(xt_tmp_remove());
}

TestSuite(files, .init = setup, .fini = teardown, .timeout = 60);

static void copy_file(const char *from, const char *to)
{
    size_t len;
    char *data = xt_read_file(from, &len);
    cr_assert_not_null(data, "%s", from);
    FILE *f = fopen(to, "wb");
    cr_assert_not_null(f, "%s", to);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
    free(data);
}

/* xt_tmp/m/model.onnx: the external-data model, its weights file left to the caller. */
static const char *model_folder(void)
{
    char *dir = xt_path("m");
    cr_assert_eq(mkdir(dir, 0700), 0);
    copy_file(DATA "/external.onnx", xt_path("m/model.onnx"));
    return xt_path("m/model.onnx");
}

/* xlac-run ARGS in the test's folder, bounded by 20 s (124: it hung); *out its output. */
static int run(const char *args, char **out)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "timeout 20 %s %s", XLAC_RUN, args);
    return xt_sh("", cmd, out);
}

Test(files, external_data_symlink_out_of_the_folder_is_refused)
{
    const char *model = model_folder();
    /* the reproduction: the weights are a link to a file outside the folder */
    cr_assert_eq(symlink("/etc/passwd", xt_path("m/external.weights.bin")), 0);
    cr_assert_null(xe_onnx_load(model, NULL, &st));
    cr_expect(strstr(st.msg, "outside the model's folder") && strstr(st.msg, "external.weights.bin"), "%s",
              st.msg);
    /* a link to a real weights file beside the folder: as much outside */
    unlink(xt_path("m/external.weights.bin"));
    cr_assert_eq(symlink(DATA "/external.weights.bin", xt_path("m/external.weights.bin")), 0);
    xe_status_clear(&st);
    cr_assert_null(xe_onnx_load(model, NULL, &st));
    cr_expect(strstr(st.msg, "outside the model's folder"), "%s", st.msg);
    /* a relative link that climbs out */
    unlink(xt_path("m/external.weights.bin"));
    copy_file(DATA "/external.weights.bin", xt_path("w.bin"));
    cr_assert_eq(symlink("../w.bin", xt_path("m/external.weights.bin")), 0);
    xe_status_clear(&st);
    cr_assert_null(xe_onnx_load(model, NULL, &st));
    cr_expect(strstr(st.msg, "outside the model's folder"), "%s", st.msg);
    char *out = NULL;
    cr_expect_eq(run("m/model.onnx --seed 0 --save-outputs o", &out), 2, "%s", out);
    cr_expect(strstr(out, "outside the model's folder"), "%s", out);
    free(out);
}

Test(files, external_data_symlink_inside_the_folder_is_read)
{
    const char *model = model_folder();
    copy_file(DATA "/external.weights.bin", xt_path("m/data.bin"));
    cr_assert_eq(symlink("data.bin", xt_path("m/external.weights.bin")), 0);
    xe_graph *g = xe_onnx_load(model, NULL, &st);
    cr_assert_not_null(g, "%s", st.msg);
    xe_graph_destroy(g);
}

/* The model with its offset "192" written as text (same length) into m/model.onnx. */
static void offset_as(const char *text)
{
    size_t len;
    char *data = xt_read_file(DATA "/external.onnx", &len);
    cr_assert_not_null(data);
    char *at = memmem(data, len, "\x12\x03" "192", 5);
    cr_assert_not_null(at, "the model's offset field moved");
    memcpy(at + 2, text, 3);
    char *dir = xt_path("m");
    mkdir(dir, 0700);
    FILE *f = fopen(xt_path("m/model.onnx"), "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
    free(data);
}

Test(files, external_data_offset_with_spaces_or_signs_is_refused)
{
    static const char *const bad[] = {" 19", "+19", "19 ", "1 9", "-19"};
    copy_file(DATA "/external.weights.bin", xt_path("m_w.bin"));
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        offset_as(bad[i]);
        copy_file(DATA "/external.weights.bin", xt_path("m/external.weights.bin"));
        xe_status_clear(&st);
        xe_graph *g = xe_onnx_load(xt_path("m/model.onnx"), NULL, &st);
        cr_expect_null(g, "offset '%s' was accepted", bad[i]);
        xe_graph_destroy(g);
        cr_expect(strstr(st.msg, "is not a byte count") && strstr(st.msg, bad[i]), "%s", st.msg);
    }
    offset_as("192"); /* the control: the same bytes, digits only, load */
    xe_status_clear(&st);
    xe_graph *g = xe_onnx_load(xt_path("m/model.onnx"), NULL, &st);
    cr_expect_not_null(g, "%s", st.msg);
    xe_graph_destroy(g);
}

/* ---- FIFOs -------------------------------------------------------------------------- */

static const char graph[] = "xlac.graph v1\ninput x: f32[2]\ny = neg(x)\noutput y\n";

static void expect_fifo_refused(const char *args, const char *name)
{
    char *out = NULL;
    int rc = run(args, &out);
    cr_expect_neq(rc, 124, "xlac-run %s: hung on the FIFO %s", args, name);
    cr_expect_eq(rc, 2, "xlac-run %s: exit %d: %s", args, rc, out);
    cr_expect(strstr(out, name) && strstr(out, "not a regular file"), "xlac-run %s: %s", args, out);
    free(out);
}

Test(files, fifo_as_the_model_is_refused)
{
    cr_assert_eq(mkfifo(xt_path("g.xg"), 0600), 0);
    cr_assert_eq(mkfifo(xt_path("g.onnx"), 0600), 0);
    expect_fifo_refused("g.xg --seed 0", "g.xg");
    expect_fifo_refused("g.onnx --seed 0", "g.onnx");
    xe_status_clear(&st);
    cr_expect_null(xe_onnx_load(xt_path("g.onnx"), NULL, &st));
    cr_expect(strstr(st.msg, "not a regular file"), "%s", st.msg);
}

Test(files, fifo_as_external_data_is_refused)
{
    const char *model = model_folder();
    cr_assert_eq(mkfifo(xt_path("m/external.weights.bin"), 0600), 0);
    cr_assert_null(xe_onnx_load(model, NULL, &st));
    cr_expect(strstr(st.msg, "external.weights.bin") && strstr(st.msg, "not a regular file"), "%s", st.msg);
    expect_fifo_refused("m/model.onnx --seed 0", "external.weights.bin");
}

Test(files, fifo_as_a_feed_is_refused)
{
    xt_write_file(xt_path("g.xg"), graph);
    cr_assert_eq(mkdir(xt_path("feed"), 0700), 0);
    cr_assert_eq(mkfifo(xt_path("feed/x.npy"), 0600), 0);
    cr_assert_eq(mkfifo(xt_path("x.pb"), 0600), 0);
    expect_fifo_refused("g.xg --feed feed", "x.npy");
    expect_fifo_refused("g.xg --input x=feed/x.npy", "x.npy");
    expect_fifo_refused("g.xg --input x=x.pb", "x.pb");
    cr_expect_null(xe_npy_read(xt_path("feed/x.npy"), &st));
    cr_expect(strstr(st.msg, "not a regular file"), "%s", st.msg);
}
