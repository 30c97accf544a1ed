/*
 * The builder of ONNX's DFT (opsets 17 and 20) as matrix products: the
 * signal axis moved last, the real and imaginary parts ([..., 1] or
 * [..., 2] in the input) each multiplied by constant cosine and sine
 * matrices of the transform length L, and the parts put back as [..., 2]
 * (an inverse one-sided transform gives the real signal, [..., 1]).
 *
 *   forward:      Yr = xr C + xi S,  Yi = xi C - xr S,  C[j,k] = cos(2 pi jk / L), S the sine
 *   inverse:      the conjugate, divided by L
 *   onesided:     forward keeps bins 0 .. L/2; the inverse takes those and
 *                 gives x[n] = (sum over k of w_k (Xr_k cos - Xi_k sin)) / L, w_k 2
 *                 but for k = 0 and k = L/2 (numpy's irfft)
 *
 * Rows of the input past L are cut (a zero row), rows short of L padded
 * (no row): both are the matrices' shape, never a pad or a slice. The
 * length (dft_length) and the axis must be known at load time; L is at
 * most OX_DFT_MAX. O(L^2) arithmetic, on the engine's matmul.
 */
#include <math.h>
#include <string.h>

#include "onnx_impl.h"

#define OX_DFT_MAX 4096

/* The transform: its length, bins in and out, direction. */
typedef struct dft {
    int64_t len; /* L */
    int64_t m;   /* input rows along the axis */
    int64_t k;   /* output rows */
    bool inverse, onesided;
} dft;

/* cos (sin: true) of 2 pi (a / L), the product reduced mod L first so that large ones stay exact.
 */
static double turn(int64_t a, int64_t len, bool sine)
{
    double t = 2.0 * M_PI * (double)(a % len) / (double)len;
    return sine ? sin(t) : cos(t);
}

/* The [m, k] matrix of cosines (or sines) of the transform, in dtype dt. */
static int matrix(ox_b *b, const dft *f, bool sine, xe_dtype dt)
{
    xe_shape sh = {.rank = 2, .dims = {f->m, f->k}};
    xe_tensor *t = ox_new_tensor(b, dt, &sh);
    for (int64_t j = 0; t && j < f->m; j++)
        for (int64_t k = 0; k < f->k; k++) {
            double v = 0;
            if (f->inverse && f->onesided) { /* j is a bin, k a sample */
                bool edge = j == 0 || 2 * j == f->len;
                v = 2 * j <= f->len
                        ? (edge ? 1.0 : 2.0) * turn(j * k, f->len, sine) / (double)f->len
                        : 0;
            } else if (j < f->len) {
                v = turn(j * k, f->len, sine) / (f->inverse ? (double)f->len : 1.0);
            }
            xe_store_f64(t->data, dt, j * f->k + k, v);
        }
    return ox_const(b, t);
}

/* Part p (0 real, 1 imaginary) of x [..., 1|2] without its last dim, the axis moved last. */
static int part(ox_b *b, int x, int p, const int *perm)
{
    const xe_shape *s = &ox_type(b, x)->shape;
    int r = s->rank;
    int64_t beg[XE_MAX_RANK] = {0}, end[XE_MAX_RANK], dims[XE_MAX_RANK];
    for (int d = 0; d < r; d++) {
        end[d] = d == r - 1 ? p + 1 : INT64_MAX;
        dims[d] = s->dims[d];
    }
    beg[r - 1] = p;
    int v = ox_reshape_dims(b, ox_slice(b, x, beg, end), dims, r - 1,
                            "DFT needs every dim but one known");
    return ox_transpose(b, v, perm, r - 1);
}

/* The axis and the length, from the attribute or the inputs. */
static bool transform(ox_b *b, int x, dft *f, int *axis)
{
    const xe_shape *s = &ox_type(b, x)->shape;
    int r = s->rank;
    int64_t a = b->opset < 20 ? ox_int(b, "axis", 1) : -2, len = -1;
    if (b->opset >= 20 && ox_in(b, 2) >= 0 && ox_const_ints(b, 2, "axis", &a, 1) != 1)
        return false;
    if (ox_in(b, 1) >= 0 && ox_const_ints(b, 1, "dft_length", &len, 1) != 1)
        return false;
    if (r < 2 || (s->dims[r - 1] != 1 && s->dims[r - 1] != 2))
        return ox_invalid(b, "DFT's input must end in a dim of 1 (real) or 2 (complex)"), false;
    if (a < -r || a > r - 2 || (a < 0 && a > -2))
        return ox_invalid(b, "axis %lld is not a signal axis of rank %d", (long long)a, r), false;
    *axis = (int)(a < 0 ? a + r : a);
    f->inverse = ox_int(b, "inverse", 0) != 0;
    f->onesided = ox_int(b, "onesided", 0) != 0;
    f->m = s->dims[*axis];
    if (f->m < 1)
        return ox_unsupported(b, "DFT needs a known signal length"), false;
    f->len = len >= 0 ? len : f->inverse && f->onesided ? 2 * (f->m - 1) : f->m;
    if (f->len < 1 || f->len > OX_DFT_MAX || f->m > OX_DFT_MAX)
        return ox_unsupported(b, "DFT lengths of 1 to %d are supported (dft_length %lld)",
                              OX_DFT_MAX, (long long)f->len),
               false;
    f->k = f->onesided && !f->inverse ? f->len / 2 + 1 : f->len;
    if (f->onesided && !f->inverse && s->dims[r - 1] == 2)
        return ox_invalid(b, "a one-sided DFT needs a real input"), false;
    return true;
}

xe_code ox_b_dft(ox_b *b)
{
    int x = ox_in(b, 0), axis;
    dft f = {0};
    if (x < 0)
        return ox_status(b);
    xe_dtype dt = ox_type(b, x)->dtype;
    if (dt != XE_F32 && dt != XE_F64)
        return ox_unsupported(b, "DFT of %s is not supported (f32 or f64)", xe_dtype_name(dt));
    if (!transform(b, x, &f, &axis))
        return ox_status(b);
    int r = ox_rank(b, x), perm[XE_MAX_RANK], inv[XE_MAX_RANK];
    for (int d = 0, j = 0; d < r - 1; d++) /* the axis last; the others in order */
        if (d != axis)
            perm[j++] = d;
    perm[r - 2] = axis;
    for (int d = 0; d < r - 1; d++)
        inv[perm[d]] = d;
    bool cplx = ox_type(b, x)->shape.dims[r - 1] == 2;
    int xr = part(b, x, 0, perm), xi = cplx ? part(b, x, 1, perm) : -1;
    int c = matrix(b, &f, false, dt), s = matrix(b, &f, true, dt);
    int rc = ox_bin(b, XE_OP_MATMUL, xr, c), rs = ox_bin(b, XE_OP_MATMUL, xr, s);
    int ic = xi < 0 ? -1 : ox_bin(b, XE_OP_MATMUL, xi, c),
        is = xi < 0 ? -1 : ox_bin(b, XE_OP_MATMUL, xi, s);
    int yr, yi = -1;
    if (f.inverse && f.onesided) { /* the real signal */
        yr = is < 0 ? rc : ox_bin(b, XE_OP_SUB, rc, is);
    } else if (f.inverse) {
        yr = is < 0 ? rc : ox_bin(b, XE_OP_SUB, rc, is);
        yi = ic < 0 ? rs : ox_bin(b, XE_OP_ADD, ic, rs);
    } else {
        yr = is < 0 ? rc : ox_bin(b, XE_OP_ADD, rc, is);
        yi = ic < 0 ? ox_un(b, XE_OP_NEG, rs) : ox_bin(b, XE_OP_SUB, ic, rs);
    }
    /* back to the input's order, each part [..., 1], then [..., 2] */
    int parts[2] = {yr, yi}, n = yi < 0 ? 1 : 2;
    for (int p = 0; p < n && !b->failed; p++) {
        int v = ox_transpose(b, parts[p], inv, r - 1);
        const xe_shape *vs = &ox_type(b, v)->shape;
        int64_t dims[XE_MAX_RANK];
        memcpy(dims, vs->dims, sizeof dims);
        dims[r - 1] = 1;
        parts[p] = ox_reshape_dims(b, v, dims, r, "DFT needs every dim but one known");
    }
    ox_at ax = OX_I("axis", r - 1);
    int y = n == 1 ? parts[0] : ox_op(b, XE_OP_CONCAT, parts, 2, &ax, 1);
    if (y >= 0)
        ox_out(b, 0, y);
    return ox_status(b);
}
