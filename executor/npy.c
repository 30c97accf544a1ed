/*
 * .npy files: numpy's format 1.0 / 2.0 / 3.0, little-endian, C order.
 * The header is a Python dict literal; we read the three keys we need
 * ('descr', 'fortran_order', 'shape') with a small scanner and refuse
 * anything we cannot represent, naming the file and the reason.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xlac/io.h"

static const struct {
    const char *descr;
    xe_dtype dt;
} npy_types[] = {
    {"<f4", XE_F32}, {"<f8", XE_F64}, {"<f2", XE_F16}, {"<i4", XE_I32}, {"<i8", XE_I64}, {"|b1", XE_BOOL},
};

/* Finds 'key': in the header dict; returns the text after the colon or NULL. */
static const char *dict_value(const char *hdr, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(hdr, pat);
    if (!p)
        return NULL;
    p += strlen(pat);
    while (isspace((unsigned char)*p))
        p++;
    if (*p != ':')
        return NULL;
    p++;
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

static xe_code parse_descr(const char *path, const char *hdr, xe_dtype *dt, xe_status *st)
{
    const char *v = dict_value(hdr, "descr");
    if (!v || *v != '\'')
        return xe_fail(st, XE_ERR_IO, "%s: the header has no 'descr'", path);
    const char *end = strchr(v + 1, '\'');
    size_t n = end ? (size_t)(end - v - 1) : 0;
    for (size_t k = 0; k < sizeof npy_types / sizeof *npy_types; k++) {
        if (strlen(npy_types[k].descr) == n && memcmp(npy_types[k].descr, v + 1, n) == 0) {
            *dt = npy_types[k].dt;
            return XE_OK;
        }
    }
    if (n == 3 && v[1] == '>')
        return xe_fail(st, XE_ERR_IO, "%s: big-endian data ('%.3s') is not supported; save it little-endian",
                       path, v + 1);
    return xe_fail(st, XE_ERR_IO, "%s: unsupported dtype '%.*s' (f4 f8 f2 i4 i8 b1 are)", path,
                   (int)(n < 32 ? n : 32), v + 1);
}

static xe_code parse_shape(const char *path, const char *hdr, xe_shape *s, xe_status *st)
{
    const char *v = dict_value(hdr, "shape");
    if (!v || *v != '(')
        return xe_fail(st, XE_ERR_IO, "%s: the header has no 'shape'", path);
    v++;
    s->rank = 0;
    while (*v && *v != ')') {
        while (isspace((unsigned char)*v) || *v == ',')
            v++;
        if (*v == ')')
            break;
        char *end;
        long long d = strtoll(v, &end, 10);
        if (end == v || d < 0)
            return xe_fail(st, XE_ERR_IO, "%s: malformed shape in the header", path);
        if (s->rank == XE_MAX_RANK)
            return xe_fail(st, XE_ERR_IO, "%s: rank above %d is not supported", path, XE_MAX_RANK);
        s->dims[s->rank++] = d;
        v = end;
    }
    if (*v != ')')
        return xe_fail(st, XE_ERR_IO, "%s: malformed shape in the header", path);
    return XE_OK;
}

/* Reads the magic, version and header text; leaves f at the data. */
static char *read_header(FILE *f, const char *path, xe_status *st)
{
    unsigned char pre[12];
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        xe_fail(st, XE_ERR_IO, "%s: not a .npy file (bad magic)", path);
        return NULL;
    }
    size_t hlen;
    if (pre[6] == 1) {
        hlen = pre[8] | (size_t)pre[9] << 8;
    } else if (pre[6] == 2 || pre[6] == 3) {
        if (fread(pre + 10, 1, 2, f) != 2) {
            xe_fail(st, XE_ERR_IO, "%s: truncated header", path);
            return NULL;
        }
        hlen = pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    } else {
        xe_fail(st, XE_ERR_IO, "%s: unsupported .npy version %d.%d", path, pre[6], pre[7]);
        return NULL;
    }
    if (hlen > (1u << 20)) {
        xe_fail(st, XE_ERR_IO, "%s: header too large (%zu bytes)", path, hlen);
        return NULL;
    }
    char *hdr = malloc(hlen + 1);
    if (!hdr) {
        xe_fail(st, XE_ERR_NOMEM, "%s: out of memory", path);
        return NULL;
    }
    if (fread(hdr, 1, hlen, f) != hlen) {
        free(hdr);
        xe_fail(st, XE_ERR_IO, "%s: truncated header", path);
        return NULL;
    }
    hdr[hlen] = '\0';
    return hdr;
}

xe_tensor *xe_npy_read(const char *path, xe_status *st)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        xe_fail(st, XE_ERR_IO, "%s: cannot open: %m", path);
        return NULL;
    }
    xe_tensor *t = NULL;
    xe_dtype dt = XE_F32;
    xe_shape s = {0};
    char *hdr = read_header(f, path, st);
    if (!hdr)
        goto done;
    const char *fo = dict_value(hdr, "fortran_order");
    if (fo && strncmp(fo, "True", 4) == 0) {
        xe_fail(st, XE_ERR_IO, "%s: fortran_order arrays are not supported; save with np.ascontiguousarray", path);
        goto done;
    }
    if (parse_descr(path, hdr, &dt, st) != XE_OK || parse_shape(path, hdr, &s, st) != XE_OK)
        goto done;
    if (!(t = xe_tensor_new(dt, &s, XE_DEV_CPU, st)))
        goto done;
    if (fread(t->data, 1, t->nbytes, f) != t->nbytes) {
        xe_fail(st, XE_ERR_IO, "%s: truncated data (expected %zu bytes for %s)", path, t->nbytes,
                xe_dtype_name(dt));
        xe_tensor_release(t);
        t = NULL;
        goto done;
    }
    if (fgetc(f) != EOF) {
        xe_fail(st, XE_ERR_IO, "%s: more data than the header's shape holds", path);
        xe_tensor_release(t);
        t = NULL;
    }
done:
    free(hdr);
    fclose(f);
    return t;
}

static const char *npy_descr(xe_dtype dt)
{
    for (size_t k = 0; k < sizeof npy_types / sizeof *npy_types; k++)
        if (npy_types[k].dt == dt)
            return npy_types[k].descr;
    return "?";
}

xe_code xe_npy_write(const char *path, const xe_tensor *t, xe_status *st)
{
    xe_tensor *host = NULL;
    if (t->device != XE_DEV_CPU && !(t = host = xe_tensor_to_device(t, XE_DEV_CPU, st)))
        return st->code;
    char dict[512];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     npy_descr(t->dtype));
    for (int d = 0; d < t->shape.rank; d++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld,%s", (long long)t->shape.dims[d],
                      d + 1 < t->shape.rank ? " " : "");
    if (t->shape.rank > 1) /* numpy writes (2, 3), (4,) */
        n--;
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    size_t total = 10 + (size_t)n + 1, pad = (64 - total % 64) % 64, hlen = (size_t)n + pad + 1;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    FILE *f = fopen(path, "wb");
    if (!f) {
        xe_tensor_release(host);
        return xe_fail(st, XE_ERR_IO, "%s: cannot write: %m", path);
    }
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)n, f) == (size_t)n;
    for (size_t k = 0; ok && k < pad; k++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF && fwrite(t->data, 1, t->nbytes, f) == t->nbytes;
    ok = (fclose(f) == 0) && ok;
    xe_tensor_release(host);
    return ok ? XE_OK : xe_fail(st, XE_ERR_IO, "%s: write failed", path);
}
