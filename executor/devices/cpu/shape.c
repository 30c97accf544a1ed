/*
 * CPU kernels of the shape ops. reshape is a copy here, for the callers
 * that ask for one: op by op the executor views its input instead
 * (XE_OPF_VIEW, runtime/exec.c); transpose, slice and
 * broadcast_to are strided copies through the broadcast iterator (each
 * gets the input's strides rearranged over the output's dims), except the
 * transpose that swaps the two innermost dims, which is a tiled copy;
 * concat copies each input's rows into its column range of the output.
 */
#include <stdbool.h>
#include <string.h>

#include "broadcast.h"
#include "kernels.h"

typedef struct copy_ctx {
    const char *src; /* at the first element to read */
    char *dst;
    size_t es; /* element size */
} copy_ctx;

static void copy_row(void *ctx, int64_t n, int64_t out_off, const int64_t *off, const int64_t *step)
{
    const copy_ctx *c = ctx;
    char *d = c->dst + (size_t)out_off * c->es;
    const char *s = c->src + (size_t)off[0] * c->es;
    if (step[0] == 1) {
        memcpy(d, s, (size_t)n * c->es);
        return;
    }
    switch (c->es) {
    case 1:
        for (int64_t i = 0; i < n; i++)
            d[i] = s[i * step[0]];
        break;
    case 2:
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)d)[i] = ((const uint16_t *)s)[i * step[0]];
        break;
    case 4:
        for (int64_t i = 0; i < n; i++)
            ((uint32_t *)d)[i] = ((const uint32_t *)s)[i * step[0]];
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            ((uint64_t *)d)[i] = ((const uint64_t *)s)[i * step[0]];
        break;
    }
}

/* Copies out[idx] = in[base + sum idx[d] * strides[d]] over the output's index space. */
static void strided_copy(const xe_tensor *in, xe_tensor *out, int64_t base, const int64_t *strides)
{
    int64_t st[1][XE_MAX_RANK];
    memcpy(st[0], strides, sizeof(int64_t) * (size_t)out->shape.rank);
    xe_bcast b;
    xe_bcast_init_strided(&b, &out->shape, 1, (const int64_t(*)[XE_MAX_RANK])st);
    size_t es = xe_dtype_size(in->dtype);
    copy_ctx c = {.src = (const char *)in->data + (size_t)base * es, .dst = out->data, .es = es};
    xe_bcast_run(&b, copy_row, &c);
}

xe_code xe_cpu_reshape(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    if (a->out->nbytes)
        memcpy(a->out->data, a->in[0]->data, a->out->nbytes);
    return XE_OK;
}

/* transpose tile edge, in elements (small: power-of-two strides alias in cache) */
#define TILE 16

/* Input offset of the first element of output matrix o (dims before the last two). */
static int64_t outer_offset(const xe_shape *out, const int64_t *strides, int64_t o)
{
    int64_t off = 0;
    for (int d = out->rank - 3; d >= 0; d--) {
        off += (o % out->dims[d]) * strides[d];
        o /= out->dims[d];
    }
    return off;
}

/* One TILE x TILE block: out[r][c] = in[r + c * sc] for r in [r0, r1), c in [c0, c1). */
#define TILE_COPY(T)                                                                               \
    do {                                                                                           \
        const T *src = (const T *)in + base;                                                       \
        T *dst = (T *)out + o * R * C;                                                             \
        for (int64_t r = r0; r < r1; r++)                                                          \
            for (int64_t c = c0; c < c1; c++)                                                      \
                dst[r * C + c] = src[r + c * sc];                                                  \
    } while (0)

/*
 * The 2-D inner case (the output's last two dims read the input's last
 * dim and a strided one): copied in TILE x TILE blocks so both the reads
 * and the writes of a block stay in cache.
 */
static void transpose_tiled(const xe_tensor *x, xe_tensor *y, const int64_t *strides)
{
    const xe_shape *s = &y->shape;
    int64_t R = s->dims[s->rank - 2], C = s->dims[s->rank - 1], sc = strides[s->rank - 1];
    int64_t outer = xe_tensor_numel(y) / (R * C), tr = (R + TILE - 1) / TILE,
            tc = (C + TILE - 1) / TILE;
    size_t es = xe_dtype_size(x->dtype);
    const void *in = x->data;
    void *out = y->data;
#pragma omp parallel for if (outer * R * C >= XE_PARALLEL_MIN)
    for (int64_t t = 0; t < outer * tr * tc; t++) {
        int64_t o = t / (tr * tc), r0 = (t / tc % tr) * TILE, c0 = t % tc * TILE;
        int64_t r1 = r0 + TILE < R ? r0 + TILE : R, c1 = c0 + TILE < C ? c0 + TILE : C;
        int64_t base = outer_offset(s, strides, o);
        switch (es) {
        case 1:
            TILE_COPY(uint8_t);
            break;
        case 2:
            TILE_COPY(uint16_t);
            break;
        case 4:
            TILE_COPY(uint32_t);
            break;
        default:
            TILE_COPY(uint64_t);
            break;
        }
    }
}

xe_code xe_cpu_transpose(const xe_kernel_args *a, xe_status *st)
{
    const xe_tensor *x = a->in[0];
    int perm[XE_MAX_RANK], rank = x->shape.rank;
    if (xe_transpose_perm(a->node, rank, perm, st) != XE_OK)
        return st->code;
    if (xe_tensor_numel(x) == 0)
        return XE_OK;
    int64_t in_strides[XE_MAX_RANK], strides[XE_MAX_RANK];
    xe_shape_strides(&x->shape, in_strides);
    for (int d = 0; d < rank; d++)
        strides[d] = in_strides[perm[d]];
    bool inner_swap = rank >= 2 && perm[rank - 2] == rank - 1 && perm[rank - 1] != rank - 1;
    if (inner_swap && x->shape.dims[rank - 1] > 1 && a->out->shape.dims[rank - 1] > 1)
        transpose_tiled(x, a->out, strides);
    else
        strided_copy(x, a->out, 0, strides);
    return XE_OK;
}

xe_code xe_cpu_broadcast_to(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    const xe_shape *shapes[1] = {&a->in[0]->shape};
    xe_bcast b;
    xe_bcast_init(&b, &a->out->shape, shapes, 1);
    size_t es = xe_dtype_size(a->in[0]->dtype);
    copy_ctx c = {.src = a->in[0]->data, .dst = a->out->data, .es = es};
    xe_bcast_run(&b, copy_row, &c);
    return XE_OK;
}

xe_code xe_cpu_slice(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    const xe_tensor *x = a->in[0];
    const xe_attr *begin = xe_node_attr(a->node, "begin"), *end = xe_node_attr(a->node, "end");
    int64_t strides[XE_MAX_RANK], base = 0;
    xe_shape_strides(&x->shape, strides);
    for (int d = 0; d < x->shape.rank; d++) {
        int64_t lo, hi;
        xe_slice_bounds(begin->ints[d], end->ints[d], x->shape.dims[d], &lo, &hi);
        base += lo * strides[d];
    }
    strided_copy(x, a->out, base, strides);
    return XE_OK;
}

xe_code xe_cpu_concat(const xe_kernel_args *a, xe_status *st)
{
    (void)st;
    xe_axis_view v = xe_axis_view_of(&a->out->shape, xe_node_attr_int(a->node, "axis", 0));
    int64_t outer = v.outer;
    size_t es = xe_dtype_size(a->out->dtype);
    size_t out_row = (size_t)(v.k * v.inner) * es, col = 0;
    for (int k = 0; k < a->n_in; k++) {
        size_t row = (size_t)(a->in[k]->shape.dims[v.axis] * v.inner) * es;
        const char *src = a->in[k]->data;
        char *dst = (char *)a->out->data + col;
#pragma omp parallel for if (outer * (int64_t)row >= 262144)
        for (int64_t o = 0; o < outer; o++)
            if (row)
                memcpy(dst + (size_t)o * out_row, src + (size_t)o * row, row);
        col += row;
    }
    return XE_OK;
}
