/*
 * .npy files: numpy's format 1.0 / 2.0 / 3.0, little-endian, C order.
 *
 * A file is a 6-byte magic, a version, a header length (2 bytes in 1.0,
 * 4 bytes in 2.0 and 3.0), then a Python dict literal such as
 * {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
 * spaces and a newline, then the raw data. The header is read by a small
 * recursive-descent scanner of exactly that literal; anything we cannot
 * represent (Fortran order, big-endian, object or other dtypes) and any
 * disagreement between the header's shape and the data's size is an error
 * that names the file. Sizes are checked against the file's length before
 * anything is allocated, so no input bytes make us crash or allocate wildly.
 *
 * Writing produces version 1.0 (2.0 when the header would not fit in
 * 65535 bytes), padded to 64 bytes as numpy does.
 *
 * numpy has no bfloat16: a bf16 tensor is written with descr '<V2' (two
 * raw bytes, the bits), which is what np.save writes for an ml_dtypes
 * bfloat16 array, and '<V2' reads back as bf16 (np.load gives |V2: view it
 * as ml_dtypes.bfloat16, or as '<u2' for the bits).
 *
 * The storage dtypes are written only: a float8 or float4 tensor as '|V1'
 * (its bits; view it as ml_dtypes.float8_e4m3fn and so on), which names no kind, so
 * '|V1' is refused on reading; the sub-byte integers as '|i1' (i4 i2) and
 * '|u1' (u4 u2), one value per byte as xlac holds them, which read back as
 * i8 and u8.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xlac/io.h"

#define NPY_MAX_HEADER (1u << 20) /* numpy itself refuses far smaller headers */

static const struct {
    const char *descr;
    xe_dtype dt;
} npy_types[] = {
    {"<f4", XE_F32},
    {"<f8", XE_F64},
    {"<f2", XE_F16},
    {"<i4", XE_I32},
    {"<i8", XE_I64},
    {"|b1", XE_BOOL},
    {"|u1", XE_U8},
    {"|i1", XE_I8},
    {"<i2", XE_I16},
    {"<u2", XE_U16},
    {"<u4", XE_U32},
    {"<u8", XE_U64},
    {"<V2", XE_BF16},
    /* written only: reading the descrs above comes first, and '|V1' is refused */
    {"|V1", XE_F8E4M3FN},
    {"|V1", XE_F8E4M3FNUZ},
    {"|V1", XE_F8E5M2},
    {"|V1", XE_F8E5M2FNUZ},
    {"|i1", XE_I4},
    {"|u1", XE_U4},
    {"|i1", XE_I2},
    {"|u1", XE_U2},
    {"|V1", XE_F4E2M1},
    {"|V1", XE_F8E8M0},
};

#define N_NPY_TYPES (sizeof npy_types / sizeof *npy_types)

/* The header dict as read: what each of the three keys said. */
typedef struct npy_dict {
    char descr[32];
    bool have_descr, have_order, have_shape;
    bool fortran_order;
    xe_shape shape;
} npy_dict;

/* Scanner over the header text [p, end). */
typedef struct scan {
    const char *p, *end;
    const char *path;
    xe_status *st;
} scan;

/* ---- header dict scanner --------------------------------------------------- */

static xe_code bad_header(scan *s, const char *what)
{
    return xe_fail(s->st, XE_ERR_IO, "%s: malformed .npy header: %s", s->path, what);
}

static void skip_ws(scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static bool accept(scan *s, char c)
{
    skip_ws(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

/* string = "'" chars "'" | '"' chars '"'  (no escapes: numpy's keys and descrs have none) */
static xe_code scan_string(scan *s, char *out, size_t cap)
{
    skip_ws(s);
    if (s->p >= s->end || (*s->p != '\'' && *s->p != '"'))
        return bad_header(s, "expected a quoted string");
    char q = *s->p++;
    const char *start = s->p;
    while (s->p < s->end && *s->p != q) {
        unsigned char ch = (unsigned char)*s->p;
        if (ch < 0x20 || ch >= 0x7f) /* keys and dtypes are ASCII; error messages quote them */
            return bad_header(s, "a control or non-ASCII byte in a string");
        s->p++;
    }
    if (s->p >= s->end)
        return bad_header(s, "unterminated string");
    size_t n = (size_t)(s->p - start);
    s->p++;
    if (n >= cap)
        return bad_header(s, "string too long");
    memcpy(out, start, n);
    out[n] = '\0';
    return XE_OK;
}

/* bool = "True" | "False" */
static xe_code scan_bool(scan *s, bool *out)
{
    skip_ws(s);
    size_t left = (size_t)(s->end - s->p);
    if (left >= 4 && !memcmp(s->p, "True", 4)) {
        s->p += 4;
        *out = true;
        return XE_OK;
    }
    if (left >= 5 && !memcmp(s->p, "False", 5)) {
        s->p += 5;
        *out = false;
        return XE_OK;
    }
    return bad_header(s, "'fortran_order' is neither True nor False");
}

/* dim = digits ["L"]  (Python 2 numpy wrote 3L) */
static xe_code scan_dim(scan *s, int64_t *out)
{
    skip_ws(s);
    if (s->p >= s->end || *s->p < '0' || *s->p > '9')
        return bad_header(s, "a shape dimension is not a non-negative integer");
    int64_t v = 0;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
        int digit = *s->p++ - '0';
        if (v > (INT64_MAX - digit) / 10)
            return bad_header(s, "a shape dimension is too large");
        v = v * 10 + digit;
    }
    if (s->p < s->end && *s->p == 'L')
        s->p++;
    *out = v;
    return XE_OK;
}

/* shape = "(" [dim {"," dim} [","]] ")" */
static xe_code scan_shape(scan *s, xe_shape *out)
{
    out->rank = 0;
    if (!accept(s, '('))
        return bad_header(s, "'shape' is not a tuple");
    while (!accept(s, ')')) {
        if (out->rank == XE_MAX_RANK)
            return xe_fail(s->st, XE_ERR_IO, "%s: arrays of rank above %d are not supported",
                           s->path, XE_MAX_RANK);
        if (scan_dim(s, &out->dims[out->rank++]) != XE_OK)
            return s->st->code;
        if (accept(s, ')'))
            break;
        if (!accept(s, ','))
            return bad_header(s, "expected ',' or ')' in 'shape'");
    }
    return XE_OK;
}

/* entry = string ":" value, dispatched on the key */
static xe_code scan_entry(scan *s, npy_dict *d)
{
    char key[32];
    if (scan_string(s, key, sizeof key) != XE_OK)
        return s->st->code;
    if (!accept(s, ':'))
        return bad_header(s, "expected ':' after a key");
    if (!strcmp(key, "descr")) {
        d->have_descr = true;
        skip_ws(s);
        if (s->p < s->end && *s->p == '[')
            return xe_fail(s->st, XE_ERR_IO, "%s: structured dtypes are not supported", s->path);
        return scan_string(s, d->descr, sizeof d->descr);
    }
    if (!strcmp(key, "fortran_order")) {
        d->have_order = true;
        return scan_bool(s, &d->fortran_order);
    }
    if (!strcmp(key, "shape")) {
        d->have_shape = true;
        return scan_shape(s, &d->shape);
    }
    return xe_fail(s->st, XE_ERR_IO, "%s: malformed .npy header: unexpected key '%s'", s->path,
                   key);
}

/* dict = "{" [entry {"," entry} [","]] "}" whitespace */
static xe_code scan_dict(scan *s, npy_dict *d)
{
    memset(d, 0, sizeof *d);
    if (!accept(s, '{'))
        return bad_header(s, "it is not a dict");
    while (!accept(s, '}')) {
        if (scan_entry(s, d) != XE_OK)
            return s->st->code;
        if (accept(s, '}'))
            break;
        if (!accept(s, ','))
            return bad_header(s, "expected ',' or '}'");
    }
    skip_ws(s);
    if (s->p != s->end)
        return bad_header(s, "text after the dict");
    if (!d->have_descr || !d->have_order || !d->have_shape)
        return bad_header(s, !d->have_descr   ? "no 'descr'"
                             : !d->have_order ? "no 'fortran_order'"
                                              : "no 'shape'");
    return XE_OK;
}

/* ---- reading ------------------------------------------------------------- */

static xe_code descr_dtype(const char *path, const char *descr, xe_dtype *dt, xe_status *st)
{
    if (!strcmp(descr, "|V1") || !strcmp(descr, "<V1"))
        return xe_fail(st, XE_ERR_IO,
                       "%s: unsupported dtype '%s': one raw byte per value names no dtype (xlac "
                       "writes float8 so, but cannot tell which kind it is on reading)",
                       path, descr);
    for (size_t k = 0; k < N_NPY_TYPES; k++) {
        if (!strcmp(npy_types[k].descr, descr)) {
            *dt = npy_types[k].dt;
            return XE_OK;
        }
    }
    if (descr[0] == '>')
        return xe_fail(st, XE_ERR_IO,
                       "%s: big-endian data ('%s') is not supported; save it with "
                       "a.astype(a.dtype.newbyteorder('<'))",
                       path, descr);
    if (!strcmp(descr, "O") || !strcmp(descr, "|O") || !strcmp(descr, "<O"))
        return xe_fail(st, XE_ERR_IO, "%s: object arrays (dtype 'O') are not supported", path);
    return xe_fail(st, XE_ERR_IO,
                   "%s: unsupported dtype '%s' (supported: <f4 <f8 <f2 <i4 <i8 |b1 |u1 |i1 <i2 <u2 "
                   "<u4 <u8, <V2 as bf16)",
                   path, descr);
}

static uint32_t le_u32(const unsigned char *b, int n)
{
    uint32_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

/*
 * preamble = "\x93NUMPY" major minor len(2 or 4 bytes, little-endian);
 * reads the header text into a malloc'd buffer and sets *data_off.
 */
static char *read_header(FILE *f, const char *path, off_t size, size_t *hlen, off_t *data_off,
                         xe_status *st)
{
    unsigned char pre[12];
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        xe_fail(st, XE_ERR_IO, "%s: not a .npy file (bad magic)", path);
        return NULL;
    }
    if (pre[6] < 1 || pre[6] > 3 || pre[7] != 0) {
        xe_fail(st, XE_ERR_IO, "%s: unsupported .npy version %d.%d (1.0, 2.0 and 3.0 are)", path,
                pre[6], pre[7]);
        return NULL;
    }
    int lenbytes = pre[6] == 1 ? 2 : 4;
    if (fread(pre + 8, 1, (size_t)lenbytes, f) != (size_t)lenbytes) {
        xe_fail(st, XE_ERR_IO, "%s: truncated header", path);
        return NULL;
    }
    *hlen = le_u32(pre + 8, lenbytes);
    *data_off = 8 + lenbytes + (off_t)*hlen;
    if (*hlen > NPY_MAX_HEADER) {
        xe_fail(st, XE_ERR_IO, "%s: header too large (%zu bytes)", path, *hlen);
        return NULL;
    }
    if (*data_off > size) {
        xe_fail(st, XE_ERR_IO, "%s: truncated header (%zu bytes announced)", path, *hlen);
        return NULL;
    }
    char *hdr = malloc(*hlen + 1);
    if (!hdr) {
        xe_fail(st, XE_ERR_NOMEM, "%s: out of memory", path);
        return NULL;
    }
    if (fread(hdr, 1, *hlen, f) != *hlen) {
        free(hdr);
        xe_fail(st, XE_ERR_IO, "%s: truncated header", path);
        return NULL;
    }
    hdr[*hlen] = '\0';
    return hdr;
}

/* Bytes the shape holds, or -1 when that overflows. */
static int64_t shape_bytes(const xe_shape *s, xe_dtype dt)
{
    int64_t n = (int64_t)xe_dtype_size(dt);
    for (int d = 0; d < s->rank; d++) {
        if (s->dims[d] != 0 && n > INT64_MAX / s->dims[d])
            return -1;
        n *= s->dims[d];
    }
    return n;
}

/* Header dict to dtype and shape, checked against the data's size. */
static xe_code parse_dict(const char *path, const char *hdr, size_t hlen, int64_t data_bytes,
                          xe_dtype *dt, xe_shape *shape, xe_status *st)
{
    if (memchr(hdr, '\0', hlen))
        return xe_fail(st, XE_ERR_IO, "%s: malformed .npy header: a NUL byte", path);
    scan s = {hdr, hdr + hlen, path, st};
    npy_dict d;
    if (scan_dict(&s, &d) != XE_OK || descr_dtype(path, d.descr, dt, st) != XE_OK)
        return st->code;
    if (d.fortran_order)
        return xe_fail(st, XE_ERR_IO,
                       "%s: fortran_order arrays are not supported; save with np.ascontiguousarray",
                       path);
    int64_t want = shape_bytes(&d.shape, *dt);
    char ty[160];
    xe_type_str(&(xe_type){*dt, d.shape}, ty, sizeof ty);
    if (want < 0)
        return xe_fail(st, XE_ERR_IO, "%s: the header's shape %s is too large", path, ty);
    if (want > data_bytes)
        return xe_fail(st, XE_ERR_IO,
                       "%s: truncated data: the header says %s (%lld bytes) but the file holds "
                       "%lld bytes of data",
                       path, ty, (long long)want, (long long)data_bytes);
    if (want < data_bytes)
        return xe_fail(st, XE_ERR_IO,
                       "%s: more data than the header's shape holds: %s is %lld bytes, the file "
                       "holds %lld",
                       path, ty, (long long)want, (long long)data_bytes);
    *shape = d.shape;
    return XE_OK;
}

/* Data into a new host tensor; bools are normalised to 0/1. */
static xe_tensor *read_data(FILE *f, const char *path, xe_dtype dt, const xe_shape *shape,
                            xe_status *st)
{
    xe_tensor *t = xe_tensor_new(dt, shape, XE_DEV_CPU, st);
    if (!t)
        return NULL;
    if (fread(t->data, 1, t->nbytes, f) != t->nbytes) {
        xe_fail(st, XE_ERR_IO, "%s: truncated data (read failed)", path);
        xe_tensor_release(t);
        return NULL;
    }
    if (dt == XE_BOOL)
        for (size_t i = 0; i < t->nbytes; i++)
            ((uint8_t *)t->data)[i] = ((uint8_t *)t->data)[i] != 0;
    return t;
}

xe_tensor *xe_npy_read(const char *path, xe_status *st)
{
    int fd = xe_open_regular(path, st); /* never waits on a FIFO */
    FILE *f = fd < 0 ? NULL : fdopen(fd, "rb");
    if (!f) {
        if (fd >= 0) {
            close(fd);
            xe_fail(st, XE_ERR_NOMEM, "%s: cannot open: %s", path, strerror(errno));
        }
        return NULL;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        xe_fail(st, XE_ERR_IO, "%s: not a regular file", path);
        fclose(f);
        return NULL;
    }
    xe_tensor *t = NULL;
    xe_dtype dt = XE_F32;
    xe_shape shape = {0};
    size_t hlen = 0;
    off_t data_off = 0;
    char *hdr = read_header(f, path, sb.st_size, &hlen, &data_off, st);
    if (hdr &&
        parse_dict(path, hdr, hlen, (int64_t)(sb.st_size - data_off), &dt, &shape, st) == XE_OK)
        t = read_data(f, path, dt, &shape, st);
    free(hdr);
    fclose(f);
    return t;
}

/* ---- writing ------------------------------------------------------------- */

static const char *npy_descr(xe_dtype dt)
{
    for (size_t k = 0; k < N_NPY_TYPES; k++)
        if (npy_types[k].dt == dt)
            return npy_types[k].descr;
    return NULL;
}

/* numpy's header text: "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }". */
static int header_dict(const xe_tensor *t, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     npy_descr(t->dtype));
    for (int d = 0; d < t->shape.rank; d++)
        n += snprintf(buf + n, cap - (size_t)n, "%s%lld", d ? ", " : "",
                      (long long)t->shape.dims[d]);
    n += snprintf(buf + n, cap - (size_t)n, "%s), }", t->shape.rank == 1 ? "," : "");
    return n;
}

/* preamble + dict + padding + "\n", total a multiple of 64. */
static bool write_file(FILE *f, const xe_tensor *t, const char *dict, size_t n)
{
    size_t pad = (64 - (10 + n + 1) % 64) % 64, pre_len = 10;
    if (n + pad + 1 > 65535) { /* the length no longer fits 2 bytes: version 2.0 */
        pre_len = 12;
        pad = (64 - (12 + n + 1) % 64) % 64;
    }
    size_t hlen = n + pad + 1;
    unsigned char pre[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', pre_len == 10 ? 1 : 2, 0};
    for (size_t i = 0; i < pre_len - 8; i++)
        pre[8 + i] = (unsigned char)(hlen >> (8 * i));
    bool ok = fwrite(pre, 1, pre_len, f) == pre_len && fwrite(dict, 1, n, f) == n;
    for (size_t k = 0; ok && k < pad; k++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    return ok && (t->nbytes == 0 || fwrite(t->data, 1, t->nbytes, f) == t->nbytes);
}

xe_code xe_npy_write(const char *path, const xe_tensor *t, xe_status *st)
{
    if (!t || !npy_descr(t->dtype) || t->shape.rank < 0 || t->shape.rank > XE_MAX_RANK)
        return xe_fail(st, XE_ERR_USAGE, "%s: cannot write this tensor as .npy", path);
    xe_tensor *host = NULL;
    if (!xe_device_is_host(t->device) && !(t = host = xe_tensor_to_device(t, XE_DEV_CPU, st)))
        return st->code;
    char dict[512];
    int n = header_dict(t, dict, sizeof dict);
    FILE *f = xe_fcreate(path, st);
    if (!f) {
        xe_tensor_release(host);
        return st->code;
    }
    bool ok = write_file(f, t, dict, (size_t)n);
    int err = ok ? 0 : errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        err = errno;
    }
    xe_tensor_release(host);
    if (ok)
        return XE_OK;
    unlink(path); /* no half-written file that looks like a result */
    return xe_fail(st, XE_ERR_IO, "%s: write failed: %s", path,
                   err ? strerror(err) : "short write");
}
