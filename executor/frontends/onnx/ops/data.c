/*
 * Builders of ONNX ops that make or pick data: Constant, ConstantOfShape,
 * Range and EyeLike (constants computed at load), Gather with indices known
 * at load time (slices and a concat), Pad in constant mode (concats and
 * slices), Trilu (a constant mask and a select), OneHot (a compare with an
 * iota), DepthToSpace and SpaceToDepth (reshape, transpose, reshape).
 * A constant built here holds at most OX_FOLD_MAX elements.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

static xe_code done(ox_b *b, int y)
{
    ox_out(b, 0, y);
    return ox_status(b);
}

/* A constant this file builds at load, bounded by ox_new_tensor (a Trilu over a declared
   i16[2, 2^31, 4] input built an 8 GB mask before). */
static xe_tensor *new_tensor(ox_b *b, xe_dtype dt, const int64_t *dims, int rank)
{
    xe_shape s = xe_shape_make(rank, dims);
    return ox_new_tensor(b, dt, &s);
}

xe_code ox_b_constant(ox_b *b)
{
    const Onnx__AttributeProto *a = b->np->n_attribute == 1 ? b->np->attribute[0] : NULL;
    const char *name = a && a->name ? a->name : "";
    if (!a)
        return ox_invalid(b, "needs exactly one value attribute");
    if (!strcmp(name, "value") && a->t) {
        xe_tensor *t = ox_tensor(a->t, b->c->files, "Constant value", &b->st);
        if (!t)
            return b->failed = true, b->st.code;
        return done(b, ox_const(b, t));
    }
    if (strcmp(name, "value_float") && strcmp(name, "value_floats") && strcmp(name, "value_int") &&
        strcmp(name, "value_ints"))
        return ox_unsupported(b, "attribute '%s' is not supported", name);
    int64_t n = (int64_t)(!strcmp(name, "value_floats") ? a->n_floats : a->n_ints);
    bool scalar = !strcmp(name, "value_float") || !strcmp(name, "value_int");
    bool is_float = !strcmp(name, "value_float") || !strcmp(name, "value_floats");
    xe_tensor *t = new_tensor(b, is_float ? XE_F32 : XE_I64, &n, scalar ? 0 : 1);
    for (int64_t i = 0; t && i < (scalar ? 1 : n); i++) {
        if (is_float)
            ((float *)t->data)[i] = scalar ? a->f : a->floats[i];
        else
            ((int64_t *)t->data)[i] = scalar ? a->i : a->ints[i];
    }
    return done(b, ox_const(b, t));
}

xe_code ox_b_constant_of_shape(ox_b *b)
{
    int64_t shape[XE_MAX_RANK];
    int n = ox_const_ints(b, 0, "shape", shape, XE_MAX_RANK);
    const Onnx__AttributeProto *a = ox_attr(b, "value");
    if (n < 0)
        return ox_status(b);
    xe_tensor *v = a && a->t ? ox_tensor(a->t, NULL, "ConstantOfShape value", &b->st) : NULL;
    if (a && a->t && !v)
        return b->failed = true, b->st.code;
    if (v && xe_tensor_numel(v) != 1) {
        xe_tensor_release(v);
        return ox_invalid(b, "value must hold one element");
    }
    xe_dtype dt = v ? v->dtype : XE_F32;
    double fill = v ? xe_load_f64(v->data, dt, 0) : 0.0;
    xe_tensor_release(v);
    int s = ox_scalar(b, dt, fill);
    ox_at at = OX_INTS("shape", shape, n);
    return done(b, ox_op(b, XE_OP_BROADCAST_TO, &s, 1, &at, 1));
}

xe_code ox_b_range(ox_b *b)
{
    const xe_tensor *t0 = ox_need_const(b, 0, "start"), *t1 = ox_need_const(b, 1, "limit"),
                    *t2 = ox_need_const(b, 2, "delta");
    if (!t0 || !t1 || !t2)
        return ox_status(b);
    double start = xe_load_f64(t0->data, t0->dtype, 0), limit = xe_load_f64(t1->data, t1->dtype, 0),
           delta = xe_load_f64(t2->data, t2->dtype, 0);
    if (delta == 0 ||
        isnan(delta)) /* onnxruntime refuses it too: an empty result would hide the mistake */
        return ox_invalid(b, "delta is %g: a Range's delta must not be 0", delta);
    double count = ceil((limit - start) / delta);
    if (count > OX_FOLD_MAX) /* checked in double: a count beyond int64 must not be converted */
        return ox_unsupported(b, "a Range of more than %d elements is not supported", OX_FOLD_MAX);
    int64_t n = count > 0 ? (int64_t)count : 0;
    xe_tensor *t = new_tensor(b, t0->dtype, &n, 1);
    for (int64_t i = 0; t && i < n; i++) /* start + i * delta, as ONNX's reference computes it */
        xe_store_f64(t->data, t->dtype, i,
                     t->dtype == XE_F32 ? (double)((float)start + (float)i * (float)delta)
                                        : start + (double)i * delta);
    return done(b, ox_const(b, t));
}

xe_code ox_b_eye_like(ox_b *b)
{
    int x = ox_in(b, 0);
    if (x < 0)
        return ox_status(b);
    const xe_type *t = ox_type(b, x);
    xe_dtype dt = t->dtype;
    if (ox_attr(b, "dtype") && !ox_dtype((int32_t)ox_int(b, "dtype", 1), &dt))
        return ox_unsupported(b, "dtype %s is not supported",
                              ox_dtype_name((int32_t)ox_int(b, "dtype", 1)));
    if (t->shape.rank != 2 || !xe_shape_is_known(&t->shape))
        return ox_unsupported(b, "EyeLike needs a 2-D input with known dims");
    int64_t k = ox_int(b, "k", 0), rows = t->shape.dims[0], cols = t->shape.dims[1];
    xe_tensor *e = new_tensor(b, dt, t->shape.dims, 2);
    for (int64_t i = 0; e && i < rows * cols; i++)
        xe_store_f64(e->data, dt, i, i % cols - i / cols == k ? 1.0 : 0.0);
    return done(b, ox_const(b, e));
}

/* ONNX input k's value when it is a constant now, else NULL (b not failed). */
static const xe_tensor *known_value(ox_b *b, int k)
{
    const xe_node *n = b->c->g->nodes[ox_in(b, k)];
    return n->op == XE_OP_CONST ? n->value : NULL;
}

/* Gather: known indices (1 to 256) as one slice per index, concatenated and
 * reshaped; any other indices as the gather op. */
/*
 * Known indices become slices (ox_take) when they form at most OX_TAKE_RUNS
 * runs of consecutive positions: a shape element, a window. Past that (an
 * index table, such as T5's relative position buckets, whose runs change
 * with the sequence length) one gather, so that the graph's structure does
 * not depend on the values (a graph built per input size is then one text
 * at every size, executor/runtime/generalise.c).
 */
#define OX_TAKE_RUNS 8

/* Index i of idx (int32 or int64, as Gather's indices are) exactly, without a trip through double.
 */
static int64_t index_at(const xe_tensor *idx, int64_t i)
{
    return idx->dtype == XE_I32 ? ((const int32_t *)idx->data)[i] : ((const int64_t *)idx->data)[i];
}

static int64_t runs(const xe_tensor *idx, int64_t dim)
{
    int64_t n = xe_tensor_numel(idx), r = 0, prev = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = index_at(idx, i);
        v = v < 0 && v >= -dim ? v + dim : v;
        r += i == 0 || prev == INT64_MAX || v != prev + 1;
        prev = v;
    }
    return r;
}

xe_code ox_b_gather(ox_b *b)
{
    int x = ox_in(b, 0), axis;
    if (x < 0 || ox_in(b, 1) < 0 || !ox_axis(b, ox_int(b, "axis", 0), ox_rank(b, x), &axis))
        return ox_status(b);
    const xe_tensor *idx = known_value(b, 1);
    const xe_shape *s = &ox_type(b, x)->shape;
    int64_t n = idx ? xe_tensor_numel(idx) : 0, dim = s->dims[axis];
    if (n > 256 || n < 1 || dim < 0 || (idx->dtype != XE_I32 && idx->dtype != XE_I64) ||
        s->rank + idx->shape.rank - 1 > XE_MAX_RANK || runs(idx, dim) > OX_TAKE_RUNS) {
        int in[2] = {x, ox_in(b, 1)};
        ox_at at = OX_I("axis", axis);
        return done(b, ox_op(b, XE_OP_GATHER, in, 2, &at, 1));
    }
    int64_t pos[256];
    for (int64_t i = 0; i < n; i++) {
        int64_t v = index_at(idx, i);
        if (v < -dim || v >= dim)
            return ox_invalid(b, "index %lld is out of range for a dim of %lld", (long long)v,
                              (long long)dim);
        pos[i] = v < 0 ? v + dim : v;
    }
    int y = ox_take(b, x, axis, pos, n);
    int64_t out[XE_MAX_RANK];
    int r = 0;
    for (int d = 0; d < s->rank; d++) {
        if (d != axis)
            out[r++] = s->dims[d];
        for (int j = 0; d == axis && j < idx->shape.rank; j++)
            out[r++] = idx->shape.dims[j];
    }
    for (int d = 0; d < r; d++)
        if (out[d] < 0)
            out[d] = -1;
    return done(b, ox_reshape(b, y, out, r));
}

/* A block of value v shaped like x but `len` long along axis. */
static int pad_block(ox_b *b, int x, int axis, int64_t len, int value)
{
    int64_t shape[XE_MAX_RANK];
    const xe_shape *s = &ox_type(b, x)->shape;
    for (int d = 0; d < s->rank; d++)
        shape[d] = d == axis ? len : s->dims[d];
    ox_at at = OX_INTS("shape", shape, s->rank);
    return ox_op(b, XE_OP_BROADCAST_TO, &value, 1, &at, 1);
}

static int pad_axis(ox_b *b, int x, int axis, int64_t lo, int64_t hi, int value)
{
    int64_t dim = ox_type(b, x)->shape.dims[axis];
    int64_t beg[XE_MAX_RANK], end[XE_MAX_RANK];
    for (int d = 0; d < ox_rank(b, x); d++) {
        beg[d] = d == axis && lo < 0 ? -lo : 0;
        end[d] = d == axis && hi < 0 ? dim + hi : INT64_MAX;
    }
    if (lo < 0 || hi < 0)
        x = ox_slice(b, x, beg, end);
    int parts[3], n = 0;
    if (lo > 0)
        parts[n++] = pad_block(b, x, axis, lo, value);
    parts[n++] = x;
    if (hi > 0)
        parts[n++] = pad_block(b, x, axis, hi, value);
    ox_at at = OX_I("axis", axis);
    return n == 1 ? x : ox_op(b, XE_OP_CONCAT, parts, n, &at, 1);
}

/* Pad in edge, reflect or wrap mode along one axis: each output position picks an input one. */
static int pad_pick(ox_b *b, int x, int axis, int64_t lo, int64_t hi, char mode)
{
    int64_t dim = ox_type(b, x)->shape.dims[axis], n, pos[256];
    if (__builtin_add_overflow(dim, lo, &n) || __builtin_add_overflow(n, hi, &n)) /* absurd pads */
        n = -1;
    if (n < 1 || n > 256 || dim < 1 || (mode == 'r' && dim < 2 && (lo > 0 || hi > 0))) {
        ox_unsupported(b, "this Pad of a dim of %lld is not supported", (long long)dim);
        return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t p = i - lo;
        if (mode == 'e')
            p = p < 0 ? 0 : p >= dim ? dim - 1 : p;
        else if (mode == 'w')
            p = ((p % dim) + dim) % dim;
        else { /* reflect: ... 2 1 | 0 1 2 ... */
            int64_t period = 2 * (dim - 1);
            p = ((p % period) + period) % period;
            p = p >= dim ? period - p : p;
        }
        pos[i] = p;
    }
    return ox_take(b, x, axis, pos, n);
}

/* Constant Pad of x with unknown dims as the pad op (the value must be known). */
static xe_code pad_op(ox_b *b, int x, const int64_t *pads, int count, const int64_t *axes, char m)
{
    int r = ox_rank(b, x);
    int64_t all[2 * XE_MAX_RANK] = {0};
    double v = b->opset < 11 ? ox_float(b, "value", 0.0) : 0.0;
    if (m != 'c')
        return ox_unsupported(b, "Pad's edge, reflect and wrap modes need known dims");
    if (b->opset >= 11 && ox_in(b, 2) >= 0) {
        const xe_tensor *t = ox_need_const(b, 2, "constant_value");
        if (!t)
            return ox_status(b);
        v = xe_load_f64(t->data, t->dtype, 0);
    }
    for (int k = 0; k < count; k++) {
        int a;
        if (!ox_axis(b, axes ? axes[k] : k, r, &a))
            return ox_status(b);
        all[a] = pads[k];
        all[a + r] = pads[k + count];
    }
    ox_at at[2] = {OX_INTS("pads", all, 2 * r), {.name = "value", .kind = XE_ATTR_FLOAT, .f = v}};
    return done(b, ox_op(b, XE_OP_PAD, &x, 1, at, 2));
}

xe_code ox_b_pad(ox_b *b)
{
    int x = ox_in(b, 0), r = ox_rank(b, x);
    int64_t pads[2 * XE_MAX_RANK], axes[XE_MAX_RANK];
    const char *mode = ox_str(b, "mode", "constant");
    char m = !strcmp(mode, "edge")      ? 'e'
             : !strcmp(mode, "reflect") ? 'r'
             : !strcmp(mode, "wrap")    ? 'w'
                                        : 'c';
    if (m == 'c' && strcmp(mode, "constant"))
        return ox_unsupported(b, "attribute mode='%s' is not supported", mode);
    int n = b->opset < 11 ? ox_ints(b, "pads", pads, 2 * XE_MAX_RANK)
                          : ox_const_ints(b, 1, "pads", pads, 2 * XE_MAX_RANK);
    int na =
        b->opset >= 18 && ox_in(b, 3) >= 0 ? ox_const_ints(b, 3, "axes", axes, XE_MAX_RANK) : -1;
    if (x < 0 || n < 0 || b->failed)
        return ox_status(b);
    int count = na >= 0 ? na : r;
    if (n != 2 * count)
        return ox_invalid(b, "pads has %d entries, %d expected", n, 2 * count);
    if (!xe_shape_is_known(&ox_type(b, x)->shape))
        return pad_op(b, x, pads, count, na >= 0 ? axes : NULL, m);
    xe_dtype dt = ox_type(b, x)->dtype;
    int value = b->opset < 11      ? ox_scalar(b, dt, ox_float(b, "value", 0.0))
                : ox_in(b, 2) >= 0 ? ox_reshape(b, ox_in(b, 2), NULL, 0)
                                   : ox_scalar(b, dt, 0);
    for (int k = 0; k < count && !b->failed; k++) { /* 1. no pad removes more than its dim holds */
        int a;
        int64_t lo = pads[k], hi = pads[k + count], dim, n;
        if (!ox_axis(b, na >= 0 ? axes[k] : k, r, &a))
            return ox_status(b);
        dim = ox_type(b, x)->shape.dims[a];
        bool over = __builtin_add_overflow(dim, lo, &n) || __builtin_add_overflow(n, hi, &n);
        if (!over && (lo < -dim || hi < -dim || n < 0))
            return ox_invalid(b, "pads %lld and %lld remove more than dim %d holds (%lld)",
                              (long long)lo, (long long)hi, a, (long long)dim);
    }
    for (int k = 0; k < count && !b->failed; k++) { /* 2. pad */
        int a;
        if (ox_axis(b, na >= 0 ? axes[k] : k, r, &a) && (pads[k] || pads[k + count]))
            x = m == 'c' ? pad_axis(b, x, a, pads[k], pads[k + count], value)
                         : pad_pick(b, x, a, pads[k], pads[k + count], m);
    }
    return done(b, x);
}

xe_code ox_b_trilu(ox_b *b)
{
    int x = ox_in(b, 0);
    int64_t k = 0;
    if (ox_in(b, 1) >= 0 && ox_const_ints(b, 1, "k", &k, 1) < 0)
        return ox_status(b);
    if (x < 0)
        return ox_status(b);
    const xe_shape *s = &ox_type(b, x)->shape;
    if (s->rank < 2 || s->dims[s->rank - 1] < 0 || s->dims[s->rank - 2] < 0)
        return ox_unsupported(b, "Trilu needs known last two dims");
    int64_t rows = s->dims[s->rank - 2], cols = s->dims[s->rank - 1], dims[2] = {rows, cols};
    bool upper = ox_int(b, "upper", 1) != 0;
    xe_tensor *m = new_tensor(b, XE_BOOL, dims, 2);
    for (int64_t i = 0; m && i < rows * cols; i++) {
        int64_t diag = i % cols - i / cols;
        ((uint8_t *)m->data)[i] = upper ? diag >= k : diag <= k;
    }
    return done(b, ox_select(b, ox_const(b, m), x, ox_scalar(b, ox_type(b, x)->dtype, 0)));
}

/*
 * GatherElements as two gathers, so that an index outside [-n, n) is the gather's own error naming
 * it (ONNX: an error, never a value): the axis' strides P = [0, s, 2s, ...] gathered by the indices
 * (negative ones counted from the end, range-checked), plus base, the flat offset of each index
 * position with its axis coordinate 0, pick elements of the flattened data.
 */
xe_code ox_b_gather_elements(ox_b *b)
{
    int x = ox_in(b, 0), idx = ox_in(b, 1), axis;
    if (x < 0 || idx < 0 || !ox_axis(b, ox_int(b, "axis", 0), ox_rank(b, x), &axis))
        return ox_status(b);
    const xe_shape *ds = &ox_type(b, x)->shape, *is = &ox_type(b, idx)->shape;
    int r = ds->rank;
    if (is->rank != r || !xe_shape_is_known(ds) || !xe_shape_is_known(is))
        return ox_unsupported(b, "GatherElements needs known dims and indices of the data's rank");
    for (int d = 0; d < r; d++)
        if (d != axis && is->dims[d] > ds->dims[d])
            return ox_invalid(b, "indices' dim %d is %lld, beyond the data's %lld", d,
                              (long long)is->dims[d], (long long)ds->dims[d]);
    int64_t stride[XE_MAX_RANK], n = ds->dims[axis], numel = xe_shape_numel(ds),
                                 m = xe_shape_numel(is);
    xe_shape_strides(ds, stride);
    xe_tensor *P = new_tensor(b, XE_I64, &n, 1), *base = new_tensor(b, XE_I64, is->dims, r);
    for (int64_t k = 0; P && k < n; k++)
        ((int64_t *)P->data)[k] = k * stride[axis];
    for (int64_t k = 0; base && k < m; k++) {
        int64_t rest = k, off = 0;
        for (int d = r - 1; d >= 0; d--) {
            off += d == axis ? 0 : (rest % is->dims[d]) * stride[d];
            rest /= is->dims[d];
        }
        ((int64_t *)base->data)[k] = off;
    }
    if (!P || !base) {
        xe_tensor_release(P);
        xe_tensor_release(base);
        return ox_status(b);
    }
    ox_at at = OX_I("axis", 0);
    int pin[2] = {ox_const(b, P), idx};
    int flat = ox_bin(b, XE_OP_ADD, ox_op(b, XE_OP_GATHER, pin, 2, &at, 1), ox_const(b, base));
    int din[2] = {ox_reshape(b, x, &numel, 1), flat};
    return done(b, ox_op(b, XE_OP_GATHER, din, 2, &at, 1));
}

/* DepthToSpace (DCR or CRD) and SpaceToDepth: a reshape, a transpose and a reshape. */
xe_code ox_b_depth_space(ox_b *b)
{
    int x = ox_in(b, 0);
    int64_t k = ox_int(b, "blocksize", 0);
    if (x < 0)
        return ox_status(b);
    const xe_shape *s = &ox_type(b, x)->shape;
    if (s->rank != 4 || !xe_shape_is_known(s) || k < 1)
        return ox_unsupported(b, "needs a 4-D input with known dims and a blocksize");
    int64_t n = s->dims[0], c = s->dims[1], h = s->dims[2], w = s->dims[3];
    bool to_space = !strcmp(b->np->op_type, "DepthToSpace");
    const char *mode = ox_str(b, "mode", "DCR");
    int64_t kk, big; /* the block's size and the dims it multiplies, in 64 bits */
    if (__builtin_mul_overflow(k, k, &kk) ||
        (to_space ? __builtin_mul_overflow(h, k, &big) || __builtin_mul_overflow(w, k, &big)
                  : __builtin_mul_overflow(c, kk, &big)))
        return ox_invalid(b, "blocksize %lld makes dims beyond 64-bit sizes", (long long)k);
    if (to_space ? c % kk : (h % k || w % k))
        return ox_invalid(b, "dims are not multiples of the blocksize %lld", (long long)k);
    if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
        return ox_unsupported(b, "attribute mode='%s' is not supported", mode);
    bool crd = !strcmp(mode, "CRD"); /* SpaceToDepth's mode: opset 28 on */
    int64_t six[6], out[4];
    int perm[6];
    if (!to_space) { /* DCR: the block's offsets outermost in the depth; CRD: innermost */
        memcpy(six, (int64_t[6]){n, c, h / k, k, w / k, k}, sizeof six);
        memcpy(perm, crd ? (int[6]){0, 1, 3, 5, 2, 4} : (int[6]){0, 3, 5, 1, 2, 4}, sizeof perm);
        memcpy(out, (int64_t[4]){n, c * kk, h / k, w / k}, sizeof out);
    } else {
        int64_t cc = c / kk;
        memcpy(six, crd ? (int64_t[6]){n, cc, k, k, h, w} : (int64_t[6]){n, k, k, cc, h, w},
               sizeof six);
        memcpy(perm, crd ? (int[6]){0, 1, 4, 2, 5, 3} : (int[6]){0, 3, 4, 1, 5, 2}, sizeof perm);
        memcpy(out, (int64_t[4]){n, cc, h * k, w * k}, sizeof out);
    }
    return done(b, ox_reshape(b, ox_transpose(b, ox_reshape(b, x, six, 6), perm, 6), out, 4));
}

/* OneHot: select(equal(indices, iota over depth at axis), on, off); indices below 0 count from
 * depth. */
xe_code ox_b_one_hot(ox_b *b)
{
    int idx = ox_in(b, 0), vals = ox_in(b, 2);
    const xe_tensor *dt = ox_need_const(b, 1, "depth");
    if (!dt || idx < 0 || vals < 0)
        return ox_status(b);
    const xe_shape *s = &ox_type(b, idx)->shape;
    int r = s->rank, axis;
    double want = xe_load_f64(dt->data, dt->dtype, 0); /* checked in double: 7e22 is no int64 */
    int64_t depth = want >= 1 && want <= OX_FOLD_MAX ? (int64_t)want : 0, di[XE_MAX_RANK],
            io[XE_MAX_RANK];
    if (r + 1 > XE_MAX_RANK || !xe_shape_is_known(s) || depth < 1)
        return ox_unsupported(b, "OneHot needs known dims, rank at most 7 and a depth of 1 to %d",
                              OX_FOLD_MAX);
    const xe_shape *vs = &ox_type(b, vals)->shape; /* [off, on]: ONNX's rank 1 of two values */
    if (vs->rank == 1 && vs->dims[0] < 0)
        return ox_unsupported(b, "OneHot needs values of a known size (2)");
    if (vs->rank != 1 || vs->dims[0] != 2)
        return ox_invalid(b,
                          "values must be [off, on], a rank-1 tensor of 2 elements (got rank %d%s)",
                          vs->rank, vs->rank == 1 ? " of another size" : "");
    if (!ox_axis(b, ox_int(b, "axis", -1), r + 1, &axis))
        return ox_status(b);
    for (int d = 0, j = 0; d <= r; d++) {
        di[d] = d == axis ? 1 : s->dims[j++];
        io[d] = d == axis ? depth : 1;
    }
    int i = ox_cast(b, idx, XE_I64), n = ox_scalar(b, XE_I64, (double)depth);
    i = ox_select(b, ox_bin(b, XE_OP_LESS, i, ox_scalar(b, XE_I64, 0)), ox_bin(b, XE_OP_ADD, i, n),
                  i);
    ox_at at[3] = {OX_INTS("shape", io, r + 1), OX_I("axis", axis), OX_DT("dtype", XE_I64)};
    int hot =
        ox_bin(b, XE_OP_EQUAL, ox_reshape(b, i, di, r + 1), ox_op(b, XE_OP_IOTA, NULL, 0, at, 3));
    int64_t b0[1] = {0}, e0[1] = {1}, b1[1] = {1}, e1[1] = {2};
    int off = ox_reshape(b, ox_slice(b, vals, b0, e0), NULL, 0);
    int on = ox_reshape(b, ox_slice(b, vals, b1, e1), NULL, 0);
    return done(b, ox_select(b, hot, on, off));
}
