/*
 * xlac-run as a user runs it (a child process), and .npy I/O: outputs
 * saved and read back, --print-outputs, several feeds with `?` dims, the
 * time line, placement lines, the profile, exit codes for every kind of
 * error, and .npy round trips and malformed files.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xlac/xlac.h"

static xe_status st;
static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/xlac-cli-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

static void write_text(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

/* Runs xlac-run ARGS in dir; returns the exit status (-signal if killed), output in *out. */
static int run(const char *args, char **out)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd %s && env -u LD_PRELOAD -u XLAC_AUTO_JIT %s/bin/xlac-run %s 2>&1", dir,
             XLAC_BINARY_DIR, args);
    FILE *p = popen(cmd, "r");
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, p);
    buf[n] = '\0';
    int status = pclose(p);
    if (out)
        *out = buf;
    else
        free(buf);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

static const char *g_sum = "xlac.graph v1\ninput x: f32[?,3]\ny = reduce_sum(x, axes=[1])\noutput y\n";

static void save_rows(const char *name, int rows)
{
    xe_shape s = {2, {rows, 3}};
    xe_tensor *t = xe_tensor_new(XE_F32, &s, XE_DEV_CPU, &st);
    for (int i = 0; i < rows * 3; i++)
        ((float *)t->data)[i] = (float)i;
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(xe_npy_write(path, t, &st), XE_OK, "%s", st.msg);
    xe_tensor_release(t);
}

Test(cli, feeds_save_and_print, .init = setup, .fini = teardown)
{
    write_text("g.xg", g_sum);
    char p[256];
    snprintf(p, sizeof p, "%s/a", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/b", dir);
    mkdir(p, 0755);
    save_rows("a/x.npy", 2);
    save_rows("b/x.npy", 4);
    char *out;
    cr_assert_eq(run("g.xg --feed a --feed b --save-outputs o --print-outputs --iterations 2", &out), 0, "%s", out);
    cr_assert(strstr(out, "y: f32[2]\n[3, 12]"), "%s", out);
    cr_assert(strstr(out, "y: f32[4]\n[3, 12, 21, 30]"), "%s", out);
    cr_assert(strstr(out, "time feed=a median_ms="), "%s", out);
    const char *last = strrchr(out, 't');
    while (last > out && last[-1] != '\n')
        last--;
    cr_assert(!strncmp(last, "time median_ms=", 15) && strstr(last, "iterations=4"), "last line: %s", last);
    free(out);
    snprintf(p, sizeof p, "%s/o/1/y.npy", dir);
    xe_tensor *y = xe_npy_read(p, &st);
    cr_assert_not_null(y, "%s", st.msg);
    cr_assert_eq(y->shape.dims[0], 4);
    cr_assert_eq(((float *)y->data)[3], 30.0f);
    xe_tensor_release(y);
}

Test(cli, placement_and_profile, .init = setup, .fini = teardown)
{
    write_text("g.xg", "xlac.graph v1\ninput x: f32[8]\na = exp(x)\nb = neg(a)\noutput b\n");
    char *out;
    cr_assert_eq(run("g.xg --log-device-placement --profile p.json --device cpu", &out), 0, "%s", out);
    cr_assert(strstr(out, "placement: a exp CPU:0\n") && strstr(out, "placement: b neg CPU:0\n"), "%s", out);
    free(out);
    char path[256];
    snprintf(path, sizeof path, "%s/p.json", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    char buf[4096] = {0};
    cr_assert_gt(fread(buf, 1, sizeof buf - 1, f), 0);
    fclose(f);
    cr_assert(strstr(buf, "\"traceEvents\"") && strstr(buf, "\"name\":\"a\",\"cat\":\"exp\",\"ph\":\"X\""), "%s", buf);
}

Test(cli, exit_codes, .init = setup, .fini = teardown)
{
    write_text("bad.xg", "xlac.graph v1\ninput x: f32[3]\ny = add(x, q)\noutput y\n");
    write_text("empty.xg", "");
    write_text("rt.xg", "xlac.graph v1\ninput x: f32[?,0]\nm = reduce_max(x, axes=[1])\noutput m\n");
    write_text("junk.xg", "\x01\x02\xff\xfe junk \x93NUMPY");
    char *out;
    cr_assert_eq(run("bad.xg", &out), 2);
    cr_assert(strstr(out, "bad.xg:3:12: undefined name 'q'"), "%s", out);
    free(out);
    cr_assert_eq(run("empty.xg", NULL), 2);
    cr_assert_eq(run("junk.xg", NULL), 2);
    cr_assert_eq(run("missing.xg", NULL), 2);
    cr_assert_eq(run(".", NULL), 2);
    cr_assert_eq(run("--bogus", NULL), 2);
    cr_assert_eq(run("bad.xg --iterations x", NULL), 2);
    cr_assert_eq(run("--help", &out), 0);
    cr_assert(strstr(out, "usage: xlac-run"));
    free(out);
    cr_assert_eq(run("--version", &out), 0);
    cr_assert(strstr(out, "xlac-run 0.1.0"));
    free(out);
    write_text("g.xg", g_sum);
    cr_assert_eq(run("g.xg", &out), 2); /* ? dims not fed */
    cr_assert(strstr(out, "unknown dims"), "%s", out);
    free(out);
    save_rows("x0.npy", 0);
    cr_assert_eq(run("rt.xg --input x=x0.npy", &out), 2, "%s", out); /* f32[0,3] is not f32[?,0] */
    free(out);
    xe_shape s = {2, {2, 0}};
    xe_tensor *t = xe_tensor_new(XE_F32, &s, XE_DEV_CPU, &st);
    char path[256];
    snprintf(path, sizeof path, "%s/e.npy", dir);
    xe_npy_write(path, t, &st);
    xe_tensor_release(t);
    cr_assert_eq(run("rt.xg --input x=e.npy", &out), 1, "%s", out); /* runtime error */
    cr_assert(strstr(out, "reduce_max over an empty axis"), "%s", out);
    free(out);
    cr_assert_eq(run("g.xg --input x=nothere.npy", NULL), 2);
    cr_assert_eq(run("g.xg --input nosuch=e.npy --input x=e.npy", NULL), 2);
}

Test(npy, round_trip_every_dtype_and_rank, .init = setup, .fini = teardown)
{
    const xe_dtype dts[] = {XE_F32, XE_F64, XE_F16, XE_I32, XE_I64, XE_BOOL};
    for (int di = 0; di < 6; di++)
        for (int rank = 0; rank <= 4; rank++) {
            xe_shape s = {.rank = rank};
            for (int d = 0; d < rank; d++)
                s.dims[d] = rank == 4 && d == 2 ? 0 : d + 2;
            xe_tensor *t = xe_tensor_new(dts[di], &s, XE_DEV_CPU, &st);
            for (int64_t i = 0; i < xe_tensor_numel(t); i++)
                xe_store_f64(t->data, dts[di], i, (double)(i % 7) - 3);
            char path[256];
            snprintf(path, sizeof path, "%s/t.npy", dir);
            cr_assert_eq(xe_npy_write(path, t, &st), XE_OK);
            xe_tensor *r = xe_npy_read(path, &st);
            cr_assert_not_null(r, "%s", st.msg);
            cr_assert(r->dtype == t->dtype && xe_shape_equal(&r->shape, &t->shape));
            cr_assert(t->nbytes == 0 || !memcmp(r->data, t->data, t->nbytes));
            struct stat sb;
            stat(path, &sb);
            cr_assert_eq((sb.st_size - (off_t)t->nbytes) % 64, 0, "header not padded to 64");
            xe_tensor_release(t);
            xe_tensor_release(r);
        }
}

static void expect_npy_error(const void *bytes, size_t len, const char *phrase)
{
    char path[256];
    snprintf(path, sizeof path, "%s/bad.npy", dir);
    FILE *f = fopen(path, "wb");
    fwrite(bytes, 1, len, f);
    fclose(f);
    xe_tensor *t = xe_npy_read(path, &st);
    cr_assert_null(t);
    cr_assert(strstr(st.msg, "bad.npy") && strstr(st.msg, phrase), "want '%s': %s", phrase, st.msg);
}

/* A v1 header for dict text (padded with spaces and a newline to 64 bytes). */
static size_t npy_v1(char *buf, const char *dict, size_t data_bytes)
{
    size_t n = strlen(dict), hlen = ((10 + n + 1 + 63) / 64) * 64 - 10;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)(hlen & 0xff);
    buf[9] = (char)(hlen >> 8);
    memset(buf + 10, ' ', hlen);
    memcpy(buf + 10, dict, n);
    buf[10 + hlen - 1] = '\n';
    memset(buf + 10 + hlen, 0, data_bytes);
    return 10 + hlen + data_bytes;
}

Test(npy, malformed_files_are_clear_errors, .init = setup, .fini = teardown)
{
    char buf[1024];
    size_t n;
    expect_npy_error("hello", 5, "not a .npy file");
    n = npy_v1(buf, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16);
    expect_npy_error(buf, n, "fortran_order");
    n = npy_v1(buf, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8);
    expect_npy_error(buf, n, "big-endian");
    n = npy_v1(buf, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16);
    expect_npy_error(buf, n, "unsupported dtype");
    n = npy_v1(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 8);
    expect_npy_error(buf, n, "truncated data");
    n = npy_v1(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 12);
    expect_npy_error(buf, n, "more data");
    n = npy_v1(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 4);
    expect_npy_error(buf, 40, "truncated header");
    /* a v2 header reads */
    char path[256];
    snprintf(path, sizeof path, "%s/v2.npy", dir);
    const char *dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }";
    size_t hl = 128 - 12;
    char v2[256] = "\x93NUMPY\x02\x00";
    v2[8] = (char)hl;
    memset(v2 + 12, ' ', hl);
    memcpy(v2 + 12, dict, strlen(dict));
    v2[12 + hl - 1] = '\n';
    int32_t vals[3] = {7, 8, 9};
    memcpy(v2 + 128, vals, 12);
    FILE *f = fopen(path, "wb");
    fwrite(v2, 1, 140, f);
    fclose(f);
    xe_tensor *t = xe_npy_read(path, &st);
    cr_assert_not_null(t, "%s", st.msg);
    cr_assert_eq(((int32_t *)t->data)[2], 9);
    xe_tensor_release(t);
}
