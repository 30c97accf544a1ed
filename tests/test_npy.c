/*
 * .npy I/O (xe_npy_read, xe_npy_write): round trips of every dtype and
 * every rank up to XE_MAX_RANK, scalars and zero-size arrays; headers
 * byte for byte as numpy writes them; files written by hand the way numpy
 * writes versions 1.0, 2.0 and 3.0; every malformed file is an error that
 * names the path and the reason; and mutated or truncated files never
 * crash the reader.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xlac/xlac.h"

static xe_status st;
static char dir[64];
static char path[256];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/xlac-npy-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.npy", dir);
    xe_status_clear(&st);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

static void write_bytes(const char *p, const void *bytes, size_t len)
{
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(bytes, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

/* The whole file at p into buf; returns its length. */
static size_t read_bytes(const char *p, unsigned char *buf, size_t cap)
{
    FILE *f = fopen(p, "rb");
    cr_assert_not_null(f);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/*
 * A file as numpy writes it: magic, version major.0, header length (2 bytes
 * for v1, 4 for v2/v3), the dict padded with spaces to a 64-byte boundary
 * and ended by '\n', then data_len bytes of data.
 */
static size_t npy_bytes(unsigned char *buf, int major, const char *dict, const void *data,
                        size_t data_len)
{
    size_t pre = major == 1 ? 10 : 12, n = strlen(dict);
    size_t hlen = ((pre + n + 1 + 63) / 64) * 64 - pre;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    for (size_t i = 0; i < pre - 8; i++)
        buf[8 + i] = (unsigned char)(hlen >> (8 * i));
    memset(buf + pre, ' ', hlen);
    memcpy(buf + pre, dict, n);
    buf[pre + hlen - 1] = '\n';
    if (data_len)
        memcpy(buf + pre + hlen, data, data_len);
    return pre + hlen + data_len;
}

static void expect_error(const void *bytes, size_t len, const char *phrase)
{
    char p[256];
    snprintf(p, sizeof p, "%s/bad.npy", dir);
    write_bytes(p, bytes, len);
    xe_status_clear(&st);
    xe_tensor *t = xe_npy_read(p, &st);
    cr_assert_null(t, "expected an error '%s'", phrase);
    cr_assert_neq(st.code, XE_OK);
    cr_assert(strstr(st.msg, "bad.npy") && strstr(st.msg, phrase), "want '%s' and the path: %s",
              phrase, st.msg);
}

static void expect_dict_error(const char *dict, size_t data_len, const char *phrase)
{
    static unsigned char buf[1 << 16], zeros[4096];
    cr_assert_leq(data_len, sizeof zeros);
    expect_error(buf, npy_bytes(buf, 1, dict, zeros, data_len), phrase);
}

/* ---- round trips ------------------------------------------------------------ */

static xe_tensor *filled(xe_dtype dt, const xe_shape *s)
{
    xe_tensor *t = xe_tensor_new(dt, s, XE_DEV_CPU, &st);
    cr_assert_not_null(t, "%s", st.msg);
    for (int64_t i = 0; i < xe_tensor_numel(t); i++)
        xe_store_f64(t->data, dt, i, dt == XE_BOOL ? (double)(i % 3 == 0) : (double)(i % 11) - 5.5);
    return t;
}

/* What a tensor of dt reads back as: the sub-byte integers come back as the byte they are held in. */
static xe_dtype read_back_as(xe_dtype dt)
{
    return !xe_dtype_is_subbyte(dt) ? dt : xe_dtype_is_unsigned(dt) ? XE_U8 : XE_I8;
}

static void round_trip(xe_dtype dt, const xe_shape *s)
{
    xe_tensor *t = filled(dt, s);
    cr_assert_eq(xe_npy_write(path, t, &st), XE_OK, "%s", st.msg);
    xe_tensor *r = xe_npy_read(path, &st);
    char ty[128];
    xe_type_str(&(xe_type){dt, *s}, ty, sizeof ty);
    if (xe_dtype_is_lowp_float(dt)) { /* written as '|V1', which names no kind: refused on reading */
        cr_assert_null(r, "%s read back", ty);
        cr_assert(strstr(st.msg, "unsupported dtype '|V1'"), "%s: %s", ty, st.msg);
        xe_tensor_release(t);
        return;
    }
    cr_assert_not_null(r, "%s: %s", ty, st.msg);
    cr_assert(r->dtype == read_back_as(dt) && xe_shape_equal(&r->shape, s), "%s came back different", ty);
    cr_assert_eq(r->nbytes, t->nbytes);
    cr_assert(t->nbytes == 0 || !memcmp(r->data, t->data, t->nbytes), "%s: data differs", ty);
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    cr_assert_eq(((size_t)sb.st_size - t->nbytes) % 64, 0, "%s: header not padded to 64 bytes", ty);
    xe_tensor_release(t);
    xe_tensor_release(r);
}

Test(npy, round_trip_every_dtype_and_rank, .init = setup, .fini = teardown)
{
    for (int dt = 0; dt < XE_DTYPE_COUNT; dt++)
        for (int rank = 0; rank <= XE_MAX_RANK; rank++) {
            xe_shape s = {.rank = rank};
            for (int d = 0; d < rank; d++)
                s.dims[d] = rank <= 3 ? d + 2 : 2;
            round_trip((xe_dtype)dt, &s);
        }
}

Test(npy, round_trip_zero_size_anywhere, .init = setup, .fini = teardown)
{
    for (int dt = 0; dt < XE_DTYPE_COUNT; dt++)
        for (int rank = 1; rank <= 4; rank++)
            for (int zero = 0; zero < rank; zero++) {
                xe_shape s = {.rank = rank};
                for (int d = 0; d < rank; d++)
                    s.dims[d] = d == zero ? 0 : 3;
                round_trip((xe_dtype)dt, &s);
            }
}

Test(npy, f16_and_special_values_survive, .init = setup, .fini = teardown)
{
    xe_shape s = {1, {6}};
    xe_tensor *t = xe_tensor_new(XE_F32, &s, XE_DEV_CPU, &st);
    float v[6] = {0.0f, -0.0f, 1.0f / 0.0f, -1.0f / 0.0f, 0.0f / 0.0f, 1e-45f};
    memcpy(t->data, v, sizeof v);
    cr_assert_eq(xe_npy_write(path, t, &st), XE_OK);
    xe_tensor *r = xe_npy_read(path, &st);
    cr_assert_not_null(r, "%s", st.msg);
    cr_assert(!memcmp(r->data, v, sizeof v), "bit patterns must be preserved (NaN, -0, denormal)");
    xe_tensor_release(t);
    xe_tensor_release(r);
}

/* ---- headers as numpy writes them --------------------------------------------- */

static void expect_header(const xe_shape *s, xe_dtype dt, const char *dict)
{
    xe_tensor *t = filled(dt, s);
    cr_assert_eq(xe_npy_write(path, t, &st), XE_OK, "%s", st.msg);
    unsigned char got[4096], want[4096];
    size_t n = read_bytes(path, got, sizeof got);
    size_t m = npy_bytes(want, 1, dict, t->data, t->nbytes);
    cr_assert_eq(n, m, "file size %zu, numpy writes %zu for %s", n, m, dict);
    cr_assert(!memcmp(got, want, m), "header differs from numpy's %s: %.*s", dict, 60,
              (const char *)got + 10);
    xe_tensor_release(t);
}

Test(npy, writes_numpy_headers_byte_for_byte, .init = setup, .fini = teardown)
{
    expect_header(&(xe_shape){2, {2, 3}}, XE_F32,
                  "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
    expect_header(&(xe_shape){1, {5}}, XE_I64,
                  "{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }");
    expect_header(&(xe_shape){0, {0}}, XE_F64,
                  "{'descr': '<f8', 'fortran_order': False, 'shape': (), }");
    expect_header(&(xe_shape){3, {1, 0, 4}}, XE_BOOL,
                  "{'descr': '|b1', 'fortran_order': False, 'shape': (1, 0, 4), }");
    expect_header(&(xe_shape){1, {3}}, XE_F16,
                  "{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }");
    expect_header(&(xe_shape){2, {7, 1}}, XE_I32,
                  "{'descr': '<i4', 'fortran_order': False, 'shape': (7, 1), }");
}

/* Reads a hand-made file and checks dtype, shape and the first and last values. */
static void expect_read(const unsigned char *buf, size_t len, xe_dtype dt, int rank,
                        const int64_t *dims, double first, double last)
{
    write_bytes(path, buf, len);
    xe_tensor *t = xe_npy_read(path, &st);
    cr_assert_not_null(t, "%s", st.msg);
    cr_assert_eq(t->dtype, dt);
    cr_assert_eq(t->shape.rank, rank);
    for (int d = 0; d < rank; d++)
        cr_assert_eq(t->shape.dims[d], dims[d]);
    int64_t n = xe_tensor_numel(t);
    if (n > 0) {
        cr_assert_eq(xe_load_f64(t->data, dt, 0), first);
        cr_assert_eq(xe_load_f64(t->data, dt, n - 1), last);
    }
    xe_tensor_release(t);
}

Test(npy, reads_numpy_files_v1_v2_v3, .init = setup, .fini = teardown)
{
    unsigned char buf[4096];
    double d6[6] = {0, 1, 2, 3, 4, 5};
    const char *f8 = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";
    for (int major = 1; major <= 3; major++)
        expect_read(buf, npy_bytes(buf, major, f8, d6, sizeof d6), XE_F64, 2, (int64_t[]){2, 3}, 0,
                    5);
    int32_t i3[3] = {7, 8, -9};
    expect_read(buf,
                npy_bytes(buf, 2, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", i3,
                          sizeof i3),
                XE_I32, 1, (int64_t[]){3}, 7, -9);
    float scalar = 2.5f;
    expect_read(
        buf,
        npy_bytes(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", &scalar, 4),
        XE_F32, 0, NULL, 2.5, 2.5);
    /* Python 2 numpy wrote 2L; keys in any order; double quotes; no trailing comma */
    expect_read(buf,
                npy_bytes(buf, 1,
                          "{\"shape\": (2L, 3L), \"fortran_order\": False, \"descr\": \"<f8\"}", d6,
                          sizeof d6),
                XE_F64, 2, (int64_t[]){2, 3}, 0, 5);
    uint16_t h[2] = {0x3c00, 0xc000}; /* 1.0, -2.0 */
    expect_read(
        buf,
        npy_bytes(buf, 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", h, sizeof h),
        XE_F16, 1, (int64_t[]){2}, 1, -2);
    int64_t i8[1] = {-4611686018427387904LL};
    expect_read(buf,
                npy_bytes(buf, 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 1), }", i8,
                          sizeof i8),
                XE_I64, 2, (int64_t[]){1, 1}, -4611686018427387904.0, -4611686018427387904.0);
    expect_read(
        buf,
        npy_bytes(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }", NULL, 0),
        XE_F32, 2, (int64_t[]){0, 5}, 0, 0);
}

Test(npy, bools_read_as_zero_or_one, .init = setup, .fini = teardown)
{
    unsigned char buf[256], b[4] = {0, 1, 2, 255};
    write_bytes(
        path, buf,
        npy_bytes(buf, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", b, 4));
    xe_tensor *t = xe_npy_read(path, &st);
    cr_assert_not_null(t, "%s", st.msg);
    const uint8_t *v = t->data;
    cr_assert(v[0] == 0 && v[1] == 1 && v[2] == 1 && v[3] == 1);
    xe_tensor_release(t);
}

/* ---- errors --------------------------------------------------------------------- */

Test(npy, unsupported_layouts_and_dtypes_are_clear_errors, .init = setup, .fini = teardown)
{
    expect_dict_error("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16,
                      "fortran_order arrays are not supported; save with np.ascontiguousarray");
    expect_dict_error("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8, "big-endian");
    expect_dict_error("{'descr': '>i8', 'fortran_order': False, 'shape': (2,), }", 16,
                      "big-endian");
    expect_dict_error("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", 16, "object");
    expect_dict_error("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16,
                      "unsupported dtype '<c8'");
    expect_dict_error("{'descr': '|V1', 'fortran_order': False, 'shape': (2,), }", 2,
                      "unsupported dtype '|V1'");
    expect_dict_error("{'descr': '<U2', 'fortran_order': False, 'shape': (1,), }", 8,
                      "unsupported dtype");
    expect_dict_error("{'descr': '<U5', 'fortran_order': False, 'shape': (1,), }", 20,
                      "unsupported dtype");
    expect_dict_error("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", 4,
                      "structured");
    expect_dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4,
                      "rank above 8");
}

Test(npy, header_and_size_mismatches_are_clear_errors, .init = setup, .fini = teardown)
{
    expect_dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 8,
                      "truncated data");
    expect_dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 12,
                      "more data than the header's shape holds");
    expect_dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 0,
                      "truncated data");
    expect_dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }", 4, "more data");
    expect_dict_error(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", 0,
        "too large");
    expect_dict_error(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 0,
        "too large");
    expect_dict_error(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }", 0,
        "");
    expect_dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 4,
                      "non-negative integer");
    expect_dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }", 24, "shape");
    expect_dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': [2], }", 8, "tuple");
    expect_dict_error("{'descr': '<f4', 'shape': (2,), }", 8, "no 'fortran_order'");
    expect_dict_error("{'fortran_order': False, 'shape': (2,), }", 8, "no 'descr'");
    expect_dict_error("{'descr': '<f4', 'fortran_order': False, }", 8, "no 'shape'");
    expect_dict_error("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", 8,
                      "True nor False");
    expect_dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8,
                      "unexpected key 'x'");
    expect_dict_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } junk", 8,
                      "text after the dict");
    expect_dict_error("{'descr: '<f4', 'fortran_order': False, 'shape': (2,), }", 8, "malformed");
    expect_dict_error("'descr': '<f4'", 8, "not a dict");
    expect_dict_error("", 8, "not a dict");
    /* messages quote keys and dtypes: bytes that would break the one-line message are refused */
    expect_dict_error("{'descr': '<f4', 'fort\nran_order': False, 'shape': (2,), }", 8, "control");
    expect_dict_error("{'descr': '<f\0334', 'fortran_order': False, 'shape': (2,), }", 8, "control");
    cr_assert_null(strchr(st.msg, '\n'), "one line: %s", st.msg);
}

Test(npy, broken_files_are_clear_errors, .init = setup, .fini = teardown)
{
    unsigned char buf[256];
    size_t n = npy_bytes(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                         "\0\0\0\0", 4);
    expect_error("", 0, "not a .npy file");
    expect_error("hello world", 11, "not a .npy file");
    expect_error(buf, 7, "not a .npy file");
    expect_error(buf, 9, "truncated header");
    expect_error(buf, 40, "truncated header");
    expect_error(buf, n - 1, "truncated data");
    expect_error(buf, n - 4, "truncated data");
    buf[6] = 4;
    expect_error(buf, n, "unsupported .npy version 4.0");
    buf[6] = 1;
    buf[7] = 1;
    expect_error(buf, n, "unsupported .npy version 1.1");
    buf[7] = 0;
    buf[30] = '\0';
    expect_error(buf, n, "NUL");
    /* a v2 header length of 4 GiB - 1 */
    unsigned char big[16] = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xff, 0xff, 0xff, 0xff, '{', '}'};
    expect_error(big, sizeof big, "header too large");
    big[10] = big[11] = 0; /* 64 KiB announced, 4 bytes there */
    expect_error(big, sizeof big, "truncated header");
}

Test(npy, paths_that_are_not_files, .init = setup, .fini = teardown)
{
    char p[300];
    snprintf(p, sizeof p, "%s/missing.npy", dir);
    cr_assert_null(xe_npy_read(p, &st));
    cr_assert(strstr(st.msg, "missing.npy") && strstr(st.msg, "cannot open"), "%s", st.msg);
    cr_assert_null(xe_npy_read(dir, &st));
    cr_assert(strstr(st.msg, dir) && strstr(st.msg, "not a regular file"), "%s", st.msg);
    xe_tensor *t = filled(XE_F32, &(xe_shape){1, {3}});
    snprintf(p, sizeof p, "%s/no/such/dir/x.npy", dir);
    cr_assert_eq(xe_npy_write(p, t, &st), XE_ERR_IO);
    cr_assert(strstr(st.msg, "x.npy") && strstr(st.msg, "cannot write"), "%s", st.msg);
    cr_assert_eq(xe_npy_write(dir, t, &st), XE_ERR_IO, "writing onto a folder must fail");
    xe_tensor_release(t);
}

/* ---- no crash on any bytes ------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Mutates a valid file in many ways; every read either succeeds with a consistent tensor or fails
 * with a message naming the file. */
Test(npy, mutated_and_truncated_files_never_crash, .init = setup, .fini = teardown)
{
    unsigned char good[512], buf[512];
    float data[6] = {1, 2, 3, 4, 5, 6};
    size_t n = npy_bytes(good, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                         data, sizeof data);
    uint64_t seed = 0x1234567u;
    int ok = 0, failed = 0;
    for (int iter = 0; iter < 4000; iter++) {
        memcpy(buf, good, n);
        size_t len = n;
        int edits = 1 + (int)(rng_next(&seed) % 4);
        for (int e = 0; e < edits; e++) {
            size_t at = rng_next(&seed) % len;
            switch (rng_next(&seed) % 4) {
            case 0:
                buf[at] = (unsigned char)rng_next(&seed);
                break;
            case 1:
                buf[at] = "(),:'{} 0123456789LTF<>|"[rng_next(&seed) % 24];
                break;
            case 2:
                len = at + 1;
                break;
            default:
                buf[at] ^= (unsigned char)(1u << (rng_next(&seed) % 8));
                break;
            }
        }
        write_bytes(path, buf, len);
        xe_tensor *t = xe_npy_read(path, &st);
        if (t) {
            cr_assert_eq(t->nbytes, (size_t)xe_tensor_numel(t) * xe_dtype_size(t->dtype));
            cr_assert_leq(t->nbytes, len);
            ok++;
        } else {
            cr_assert(strstr(st.msg, "t.npy"), "error without the path: %s", st.msg);
            failed++;
        }
        xe_tensor_release(t);
    }
    cr_assert_gt(failed, 1000, "mutations should mostly be rejected");
    cr_assert_gt(ok, 0, "some mutations (in padding or data) are still valid files");
}

Test(npy, random_junk_never_crashes, .init = setup, .fini = teardown)
{
    unsigned char buf[300];
    uint64_t seed = 99;
    for (int iter = 0; iter < 2000; iter++) {
        size_t len = rng_next(&seed) % sizeof buf;
        for (size_t i = 0; i < len; i++)
            buf[i] = (unsigned char)rng_next(&seed);
        if (iter % 2 && len >= 8)
            memcpy(buf, "\x93NUMPY\x01\x00", 8); /* past the magic, into the header scanner */
        write_bytes(path, buf, len);
        xe_tensor *t = xe_npy_read(path, &st);
        cr_assert_null(t, "junk read as a tensor");
        cr_assert(strstr(st.msg, "t.npy"), "%s", st.msg);
    }
}

/* ---- device tensors ------------------------------------------------------------- */

Test(npy, writes_a_device_tensor_through_the_host, .init = setup, .fini = teardown)
{
    if (!xe_gpu_available())
        cr_skip_test("skipped: no CUDA device");
    xe_tensor *t = filled(XE_F32, &(xe_shape){2, {4, 5}});
    xe_tensor *d = xe_tensor_to_device(t, xe_gpu_device(), &st);
    cr_assert_not_null(d, "%s", st.msg);
    cr_assert_eq(xe_npy_write(path, d, &st), XE_OK, "%s", st.msg);
    xe_tensor *r = xe_npy_read(path, &st);
    cr_assert_not_null(r, "%s", st.msg);
    cr_assert(!memcmp(r->data, t->data, t->nbytes));
    xe_tensor_release(t);
    xe_tensor_release(d);
    xe_tensor_release(r);
}
