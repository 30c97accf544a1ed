/*
 * Builders of ONNX's signal windows (HannWindow, HammingWindow,
 * BlackmanWindow), CenterCropPad and AffineGrid, whose output shapes are
 * their input values: the window size and the target shape must be known at load time
 * (a constant, an initializer, or a value xlac-run binds).
 *
 * A window is a constant, computed here in f64 as onnx's reference does
 * (N = size, or size - 1 when periodic=0):
 *   Hann     sin(pi n / N)^2
 *   Hamming  25/46 - 21/46 cos(2 pi n / N)
 *   Blackman 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)
 * CenterCropPad slices each named axis to the target from its center (the
 * odd one left over at the end), or pads zeros around it (the odd one at
 * the end), as the reference does.
 */
#include <math.h>
#include <string.h>

#include "onnx_impl.h"

#define OX_WINDOW_MAX ((int64_t)1 << 24)

static double window_at(const char *type, int64_t n, double len)
{
    double t = 2.0 * M_PI * (double)n / len;
    if (!strcmp(type, "HannWindow")) {
        double s = sin(M_PI * (double)n / len);
        return s * s;
    }
    if (!strcmp(type, "HammingWindow"))
        return 25.0 / 46.0 - (1.0 - 25.0 / 46.0) * cos(t);
    return 0.42 - 0.5 * cos(t) + 0.08 * cos(2.0 * t); /* BlackmanWindow */
}

xe_code ox_b_window(ox_b *b)
{
    int64_t size;
    xe_dtype dt;
    if (ox_const_ints(b, 0, "size", &size, 1) != 1)
        return ox_status(b);
    int32_t odt = (int32_t)ox_int(b, "output_datatype", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    if (!ox_dtype(odt, &dt) || dt == XE_BOOL)
        return ox_unsupported(b, "output_datatype %s is not supported", ox_dtype_name(odt));
    if (size < 0 || size > OX_WINDOW_MAX)
        return ox_unsupported(b, "a window of %lld is not supported (0 to 2^24)", (long long)size);
    double len = (double)(ox_int(b, "periodic", 1) != 0 ? size : size - 1);
    xe_shape sh = {.rank = 1, .dims = {size}};
    xe_tensor *t = xe_tensor_new(dt, &sh, XE_DEV_CPU, &b->st);
    if (!t)
        return b->failed = true, b->st.code;
    for (int64_t n = 0; n < size; n++)
        xe_store_f64(t->data, dt, n, len > 0 ? window_at(b->np->op_type, n, len) : NAN);
    ox_out(b, 0, ox_const(b, t));
    return ox_status(b);
}

xe_code ox_b_center_crop_pad(ox_b *b)
{
    int x = ox_in(b, 0), r = ox_rank(b, x);
    int64_t shape[XE_MAX_RANK], axes[XE_MAX_RANK];
    if (x < 0)
        return ox_status(b);
    int n = ox_const_ints(b, 1, "shape", shape, XE_MAX_RANK);
    if (n < 0)
        return ox_status(b);
    int na = ox_ints(b, "axes", axes, XE_MAX_RANK);
    if (na < 0)
        for (na = 0; na < r; na++)
            axes[na] = na;
    if (na != n)
        return ox_invalid(b, "shape has %d entries for %d axes", n, na);
    const xe_shape *xs = &ox_type(b, x)->shape;
    int64_t beg[XE_MAX_RANK] = {0}, end[XE_MAX_RANK], pads[2 * XE_MAX_RANK] = {0};
    bool seen[XE_MAX_RANK] = {false}, crop = false, pad = false;
    for (int d = 0; d < r; d++)
        end[d] = INT64_MAX;
    for (int i = 0; i < n; i++) {
        int a;
        if (!ox_axis(b, axes[i], r, &a))
            return ox_status(b);
        if (seen[a])
            return ox_invalid(b, "axis %d is named twice", a);
        seen[a] = true;
        int64_t dim = xs->dims[a], want = shape[i];
        if (dim < 0 || want < 0 || want > XE_MAX_ELEMS)
            return dim < 0 ? ox_unsupported(b, "CenterCropPad needs known dims")
                           : ox_invalid(b, "shape %lld is not a size", (long long)want);
        if (want < dim) {
            beg[a] = (dim - want) / 2, end[a] = beg[a] + want, crop = true;
        } else if (want > dim) {
            pads[a] = (want - dim) / 2, pads[r + a] = want - dim - pads[a], pad = true;
        }
    }
    int y = crop ? ox_slice(b, x, beg, end) : x;
    if (pad) {
        ox_at pa = OX_INTS("pads", pads, 2 * r);
        y = y < 0 ? -1 : ox_op(b, XE_OP_PAD, &y, 1, &pa, 1);
    }
    if (y >= 0)
        ox_out(b, 0, y);
    return ox_status(b);
}

/* Coordinate i of n in [-1, 1]: the corners' centers (align_corners) or the cells' centers. */
static double grid_at(int64_t i, int64_t n, bool align)
{
    if (align)
        return n > 1 ? -1.0 + 2.0 * (double)i / (double)(n - 1) : -1.0;
    return -1.0 + (2.0 * (double)i + 1.0) / (double)n;
}

/*
 * AffineGrid: the constant homogeneous grid [P, k + 1] of the size's
 * spatial positions (rows (x, y[, z], 1), x along the last dim) times
 * theta [N, k, k + 1] transposed: one matmul to [N, P, k], reshaped to
 * [N, D.., k]. The size is known at load.
 */
xe_code ox_b_affine_grid(ox_b *b)
{
    int theta = ox_in(b, 0);
    int64_t size[5];
    int n = ox_const_ints(b, 1, "size", size, 5);
    if (theta < 0 || n < 0)
        return ox_status(b);
    const xe_type *tt = ox_type(b, theta);
    int k = n - 2;
    if ((n != 4 && n != 5) || tt->shape.rank != 3 || tt->shape.dims[1] != k ||
        tt->shape.dims[2] != k + 1)
        return ox_invalid(b, "AffineGrid needs theta [N, %d, %d] for a size of 4 or 5 entries", k,
                          k + 1);
    if (!xe_dtype_is_float(tt->dtype))
        return ox_unsupported(b, "AffineGrid of %s is not supported", xe_dtype_name(tt->dtype));
    int64_t p = 1;
    for (int d = 2; d < n; d++) {
        if (size[d] < 1 || size[d] > OX_WINDOW_MAX || (p *= size[d]) > OX_WINDOW_MAX)
            return ox_unsupported(b, "AffineGrid sizes of 1 to 2^24 positions are supported");
    }
    bool align = ox_int(b, "align_corners", 0) != 0;
    xe_shape sh = {.rank = 2, .dims = {p, k + 1}};
    xe_tensor *t = xe_tensor_new(tt->dtype, &sh, XE_DEV_CPU, &b->st);
    if (!t)
        return b->failed = true, b->st.code;
    for (int64_t i = 0; i < p; i++) {
        int64_t rest = i;
        for (int d = n - 1; d >= 2; d--) { /* x (the last dim) first */
            xe_store_f64(t->data, tt->dtype, i * (k + 1) + (n - 1 - d),
                         grid_at(rest % size[d], size[d], align));
            rest /= size[d];
        }
        xe_store_f64(t->data, tt->dtype, i * (k + 1) + k, 1.0);
    }
    ox_at tb = OX_BOOL("transpose_b", true);
    int in[2] = {ox_const(b, t), theta};
    int y = ox_op(b, XE_OP_MATMUL, in, 2, &tb, 1); /* [N, P, k] */
    int64_t dims[6] = {size[0]};
    for (int d = 2; d < n; d++)
        dims[d - 1] = size[d];
    dims[n - 1] = k;
    y = ox_reshape_dims(b, y, dims, n, "AffineGrid needs a known grid");
    if (y >= 0)
        ox_out(b, 0, y);
    return ox_status(b);
}
