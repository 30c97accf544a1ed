/*
 * The flat C API (capi.h) that the Python package calls: open from a file,
 * names, dtypes and `?` dims of inputs and outputs, runs on wrapped
 * buffers, taking an output without a copy (and refusing to when the
 * buffer is an input's), and the codes and messages of errors.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xlac/capi.h"
#include "xlac/dtype.h"
#include "xlac/status.h"

static char err[1024];

/* Writes text to a temporary .xg file; returns its path (static buffer). */
static const char *write_graph(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/xlac_test_capi_XXXXXX.xg");
    int fd = mkstemps(path, 3);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static xe_capi_session *open_text(const char *text)
{
    const char *path = write_graph(text);
    xe_capi_session *s = NULL;
    int rc = xe_capi_open(path, "cpu", &s, err, sizeof err);
    remove(path);
    cr_assert_eq(rc, XE_OK, "%s", err);
    return s;
}

static const char *scale_graph = "xlac.graph v1\ninput x: f32[?,3]\n"
                                 "two = const(f32[], 2)\ny = mul(x, two)\noutput y\noutput x\n";

Test(capi, signature_names_dtypes_unknown_dims)
{
    xe_capi_session *s = open_text(scale_graph);
    cr_assert_eq(xe_capi_count(s, 0), 1);
    cr_assert_eq(xe_capi_count(s, 1), 2);
    cr_assert_str_eq(xe_capi_name(s, 0, 0), "x");
    cr_assert_str_eq(xe_capi_name(s, 1, 1), "x");
    cr_assert_str_eq(xe_capi_dtype_name(xe_capi_dtype(s, 1, 0)), "f32");
    cr_assert_eq(xe_capi_rank(s, 0, 0), 2);
    cr_assert_eq(xe_capi_dim(s, 0, 0, 0), -1);
    cr_assert_eq(xe_capi_dim(s, 0, 0, 1), 3);
    cr_assert_null(xe_capi_name(s, 1, 2));
    cr_assert_eq(xe_capi_dim(s, 0, 0, 2), -1);
    xe_capi_close(s);
}

Test(capi, run_wraps_inputs_and_hands_over_outputs)
{
    xe_capi_session *s = open_text(scale_graph);
    float x[6] = {1, 2, 3, 4, 5, 6};
    void *data[] = {x};
    int dtypes[] = {XE_F32}, ranks[] = {2};
    int64_t dims[] = {2, 3};
    cr_assert_eq(xe_capi_run(s, data, dtypes, ranks, dims, err, sizeof err), XE_OK, "%s", err);
    cr_assert_eq(xe_capi_result_rank(s, 0), 2);
    cr_assert_eq(xe_capi_result_dim(s, 0, 0), 2);
    cr_assert_eq(xe_capi_result_nbytes(s, 0), sizeof x);
    /* output 1 is the input itself: the caller's buffer, not to be taken */
    cr_assert_eq(xe_capi_result_data(s, 1), (const void *)x);
    cr_assert_null(xe_capi_result_take(s, 1));
    const float *y = xe_capi_result_data(s, 0);
    void *t = xe_capi_result_take(s, 0);
    cr_assert_not_null(t);
    cr_assert_null(xe_capi_result_data(s, 0)); /* the session let it go */
    xe_capi_clear(s);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(y[i], 2 * x[i]);
    xe_capi_tensor_free(t);
    xe_capi_close(s);
}

Test(capi, errors_carry_code_and_message)
{
    xe_capi_session *s = NULL;
    const char *path = write_graph("xlac.graph v1\ninput x: f32[3]\ny = add(x, nope)\noutput y\n");
    int rc = xe_capi_open(path, "cpu", &s, err, sizeof err);
    remove(path);
    cr_assert_eq(rc, XE_ERR_PARSE, "%d %s", rc, err);
    cr_assert(strstr(err, ":3:") && strstr(err, "nope"), "%s", err);
    cr_assert_null(s);
    cr_assert_str_eq(xe_capi_code_name(rc), "parse error");
    cr_assert_eq(xe_capi_open("/nonexistent/g.xg", "cpu", &s, err, sizeof err), XE_ERR_IO);
    cr_assert_eq(xe_capi_open("/nonexistent/g.xg", "tpu", &s, err, sizeof err), XE_ERR_USAGE);
    cr_assert(strstr(err, "tpu"), "%s", err);

    s = open_text(scale_graph);
    float x[8] = {0};
    void *data[] = {x};
    int dtypes[] = {XE_F32}, ranks[] = {2};
    int64_t dims[] = {2, 4};
    cr_assert_eq(xe_capi_run(s, data, dtypes, ranks, dims, err, sizeof err), XE_ERR_USAGE);
    cr_assert(strstr(err, "input x: expected f32[?,3], got f32[2,4]"), "%s", err);
    int bad_dtype[] = {XE_DTYPE_COUNT};
    cr_assert_eq(xe_capi_run(s, data, bad_dtype, ranks, dims, err, sizeof err), XE_ERR_USAGE);
    cr_assert_null(xe_capi_result_data(s, 0));
    xe_capi_close(s);
}

Test(capi, dtype_names)
{
    cr_assert_eq(xe_capi_dtype_count(), XE_DTYPE_COUNT);
    cr_assert_str_eq(xe_capi_dtype_name(XE_BOOL), "bool");
    cr_assert_null(xe_capi_dtype_name(-1));
    cr_assert_null(xe_capi_dtype_name(XE_DTYPE_COUNT));
}
