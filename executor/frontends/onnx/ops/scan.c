/*
 * Scan, unrolled at import as Loop is (ops/loop.c; what both share is in
 * ops/unroll.c): its number of iterations is the scan axis's length, which
 * a graph built per input size knows at load. Each iteration binds the
 * body's inputs to the state variables and to one position of every scan
 * input (a slice along its axis, the axis dropped; counted from the end
 * for a reverse direction), builds the body in place (ox_build_subgraph)
 * and takes its outputs as the next state and one element of every scan
 * output. A scan output's elements are stacked along its axis by one
 * concat (in reverse order for a reverse direction).
 * Opset 8 has a batch axis 0 (the scan axis is 1, `directions` gives the
 * input directions, scan outputs are appended) and an optional
 * sequence_lens: each batch row (a lane) runs its own scan and the lanes
 * are stacked along axis 0 after. sequence_lens must be known at load; a
 * row shorter than the sequence pads its scan outputs with zeros (ONNX
 * leaves those values undefined).
 * Refused, naming why: a scan length unknown at load, scan inputs of
 * different lengths, more than OX_UNROLL_MAX body builds, a body output
 * that is a sequence, a scan output of no iteration.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

/* The state of one unrolling. */
typedef struct scan {
    const Onnx__GraphProto *body;
    bool batched;                /* opset 8: axis 0 is the batch, each row its own scan */
    int first;                   /* the node input of the first state (1 at opset 8) */
    int n_state, n_in, n_out;    /* state variables, scan inputs, scan outputs */
    int in_axis[OX_MAX_IO];      /* per scan input: its scan axis, normalised */
    bool in_rev[OX_MAX_IO];      /* per scan input: scanned from the end */
    int64_t out_axis[OX_MAX_IO]; /* per scan output: the axis it stacks along (as given) */
    bool out_rev[OX_MAX_IO];     /* per scan output: prepended */
    int64_t len;                 /* the scan axis's length */
    int64_t lanes;               /* batch rows (opset 8), else 1 */
    int64_t lens[OX_UNROLL_MAX]; /* per lane: its iterations */
    int *state;                  /* n_state: the state of the lane being run */
    int *elems;                  /* n_out rows of len: its scan output elements by position */
    int *lane_state;             /* lanes rows of n_state (opset 8) */
    int *lane_out;               /* lanes rows of n_out (opset 8) */
} scan;

/* Node input of scan input i. */
static int scan_input(ox_b *b, const scan *s, int i)
{
    return ox_in(b, s->first + s->n_state + i);
}

/* x at position pos[j] of axis axes[j] (j < n), those axes dropped. */
static int pick(ox_b *b, int x, const int *axes, const int64_t *pos, int n)
{
    if (x < 0 || b->failed)
        return -1;
    const xe_shape *sh = &ox_type(b, x)->shape;
    int64_t beg[XE_MAX_RANK], end[XE_MAX_RANK], dims[XE_MAX_RANK];
    bool drop[XE_MAX_RANK] = {0};
    int r = 0;
    for (int j = 0; j < n; j++)
        drop[axes[j]] = true;
    for (int k = 0; k < sh->rank; k++) {
        beg[k] = 0;
        end[k] = INT64_MAX;
        for (int j = 0; j < n; j++)
            if (axes[j] == k)
                beg[k] = pos[j], end[k] = pos[j] + 1;
        if (!drop[k])
            dims[r++] = sh->dims[k];
    }
    return ox_reshape_dims(b, ox_slice(b, x, beg, end), dims, r,
                           "a scan element with more than one unknown dim is not supported");
}

/* Directions attribute `name` (0 forward, 1 reverse; absent: forward) into rev[0..n). */
static bool directions(ox_b *b, const char *name, bool *rev, int n)
{
    int64_t v[OX_MAX_IO];
    int got = ox_ints(b, name, v, OX_MAX_IO);
    if (got > n)
        return ox_invalid(b, "%s has %d entries for %d values", name, got, n), false;
    for (int k = 0; k < n; k++) {
        if (k < got && v[k] != 0 && v[k] != 1)
            return ox_invalid(b, "%s[%d] is %lld, not 0 or 1", name, k, (long long)v[k]), false;
        rev[k] = k < got && v[k] == 1;
    }
    return true;
}

/* The counts (against the body's) and the attributes. */
static bool read_node(ox_b *b, scan *s)
{
    const Onnx__AttributeProto *a = ox_attr(b, "body");
    s->body = a ? a->g : NULL;
    s->batched = b->opset < 9;
    s->first = s->batched ? 1 : 0;
    s->n_in = (int)ox_int(b, "num_scan_inputs", 0);
    s->n_state = b->n_in - s->first - s->n_in;
    s->n_out = (int)b->np->n_output - s->n_state;
    if (!s->body)
        return ox_invalid(b, "the body is missing"), false;
    if (s->n_in < 1 || s->n_state < 0 || s->n_out < 0)
        return ox_invalid(b, "num_scan_inputs %d does not fit %d inputs and %zu outputs", s->n_in,
                          b->n_in, b->np->n_output),
               false;
    if (s->body->n_input != (size_t)(s->n_state + s->n_in) ||
        s->body->n_output != (size_t)(s->n_state + s->n_out))
        return ox_invalid(b,
                          "the body has %zu inputs and %zu outputs; %d state variables, %d scan "
                          "inputs and %d scan outputs need %d and %d",
                          s->body->n_input, s->body->n_output, s->n_state, s->n_in, s->n_out,
                          s->n_state + s->n_in, s->n_state + s->n_out),
               false;
    if (s->batched)
        return directions(b, "directions", s->in_rev, s->n_in);
    int64_t axes[OX_MAX_IO];
    int n_axes = ox_ints(b, "scan_input_axes", axes, OX_MAX_IO);
    for (int i = 0; i < s->n_in; i++)
        if (!ox_axis(b, i < n_axes ? axes[i] : 0, ox_rank(b, scan_input(b, s, i)), &s->in_axis[i]))
            return false;
    int n_out_axes = ox_ints(b, "scan_output_axes", s->out_axis, OX_MAX_IO);
    if (n_axes > s->n_in || n_out_axes > s->n_out)
        return ox_invalid(b, "scan_input_axes or scan_output_axes has more entries than values"),
               false;
    for (int k = n_out_axes < 0 ? 0 : n_out_axes; k < s->n_out; k++)
        s->out_axis[k] = 0;
    return directions(b, "scan_input_directions", s->in_rev, s->n_in) &&
           directions(b, "scan_output_directions", s->out_rev, s->n_out);
}

/* The scan length (all scan inputs agree, known at load) and the lanes with their lengths. */
static bool read_lengths(ox_b *b, scan *s)
{
    s->len = -1;
    s->lanes = 1;
    for (int i = 0; i < s->n_in; i++) {
        int x = scan_input(b, s, i);
        if (x < 0)
            return ox_invalid(b, "scan input %d is missing", i), false;
        const xe_shape *sh = &ox_type(b, x)->shape;
        if (s->batched && sh->rank < 2)
            return ox_invalid(b, "scan input %d has rank %d: a batch and a scan axis need 2", i,
                              sh->rank),
                   false;
        int axis = s->batched ? 1 : s->in_axis[i];
        if (sh->dims[axis] < 0 || (s->batched && sh->dims[0] < 0))
            return ox_unsupported(b,
                                  "scan input %d ('%s'): its %s axis %d has a length unknown at "
                                  "load (Scan is unrolled at import)",
                                  i, b->np->input[s->first + s->n_state + i],
                                  sh->dims[axis] < 0 ? "scan" : "batch",
                                  sh->dims[axis] < 0 ? axis : 0),
                   false;
        if ((s->len >= 0 && sh->dims[axis] != s->len) ||
            (s->batched && i && sh->dims[0] != s->lanes))
            return ox_invalid(b, "scan inputs 0 and %d differ in their scan or batch length", i),
                   false;
        s->len = sh->dims[axis];
        s->lanes = s->batched ? sh->dims[0] : 1;
    }
    if (s->len > OX_UNROLL_MAX || s->lanes > OX_UNROLL_MAX || s->len * s->lanes > OX_UNROLL_MAX)
        return ox_unsupported(b,
                              "a scan of %lld x %lld iterations is not supported (it is unrolled "
                              "at load, at most %d)",
                              (long long)s->lanes, (long long)s->len, OX_UNROLL_MAX),
               false;
    for (int64_t l = 0; l < s->lanes; l++)
        s->lens[l] = s->len;
    if (!s->batched || ox_in(b, 0) < 0)
        return true;
    int n = ox_const_ints(b, 0, "sequence_lens", s->lens, OX_UNROLL_MAX);
    if (n < 0)
        return false;
    if (n != s->lanes)
        return ox_invalid(b, "sequence_lens has %d values for a batch of %lld", n,
                          (long long)s->lanes),
               false;
    for (int64_t l = 0; l < s->lanes; l++)
        if (s->lens[l] < 0 || s->lens[l] > s->len)
            return ox_invalid(b, "sequence_lens[%lld] is %lld, outside [0, %lld]", (long long)l,
                              (long long)s->lens[l], (long long)s->len),
                   false;
    return true;
}

/* Body output k, which must be a tensor. */
static int body_tensor(ox_b *b, const scan *s, int k)
{
    ox_carried v;
    if (!ox_body_output(b, s->body, (size_t)k, &v))
        return -1;
    if (v.seq) {
        ox_seq_free(v.seq);
        return ox_unsupported(b, "body output %d is a sequence, which Scan does not return", k), -1;
    }
    return v.node;
}

/* Iteration t of n of lane: the body bound to the state and the scan elements, then built. */
static bool iterate(ox_b *b, scan *s, int64_t lane, int64_t t, int64_t n)
{
    for (int k = 0; k < s->n_state; k++)
        if (!ox_body_bind(b, s->body, (size_t)k, s->state[k], NULL))
            return false;
    for (int i = 0; i < s->n_in; i++) {
        int64_t at[2] = {lane, s->in_rev[i] ? n - 1 - t : t};
        static const int batch_axes[2] = {0, 1};
        int x = scan_input(b, s, i);
        int e = s->batched ? pick(b, x, batch_axes, at, 2) : pick(b, x, &s->in_axis[i], &at[1], 1);
        if (!ox_body_bind(b, s->body, (size_t)(s->n_state + i), e, NULL))
            return false;
    }
    if (!ox_build_subgraph(b, s->body, "Scan's body"))
        return false;
    for (int k = 0; k < s->n_state + s->n_out; k++) {
        int y = body_tensor(b, s, k);
        if (y < 0)
            return false;
        if (k < s->n_state)
            s->state[k] = y;
        else
            s->elems[(k - s->n_state) * s->len + (s->out_rev[k - s->n_state] ? n - 1 - t : t)] = y;
    }
    return true;
}

/* A zero tensor of x's type (a padding element of a row shorter than the sequence). */
static int zeros_like(ox_b *b, int x)
{
    const xe_type *ty = ox_type(b, x);
    for (int d = 0; d < ty->shape.rank; d++)
        if (ty->shape.dims[d] < 0)
            return ox_unsupported(b, "padding a scan output with unknown dims is not supported"),
                   -1;
    xe_tensor *z = ox_new_tensor(b, ty->dtype, &ty->shape);
    if (z)
        memset(z->data, 0, z->nbytes);
    return ox_const(b, z);
}

/* Lane l's scan (opset 8), its final state and stacked scan outputs kept in lane_state, lane_out.
 */
static bool run_lane(ox_b *b, scan *s, int64_t l)
{
    static const int batch_axis = 0;
    int64_t n = s->lens[l];
    if (!n && s->n_out)
        return ox_unsupported(b, "a batch row of length 0 with scan outputs is not supported "
                                 "(their elements' shape is unknown)"),
               false;
    for (int k = 0; k < s->n_state; k++)
        s->state[k] = pick(b, ox_in(b, s->first + k), &batch_axis, &l, 1);
    for (int64_t t = 0; t < n; t++)
        if (!iterate(b, s, l, t, n))
            return false;
    for (int k = 0; k < s->n_state; k++)
        s->lane_state[l * s->n_state + k] = s->state[k];
    for (int j = 0; j < s->n_out; j++) {
        int *row = s->elems + j * s->len;
        for (int64_t t = n; t < s->len; t++)
            row[t] = zeros_like(b, row[0]);
        s->lane_out[l * s->n_out + j] = ox_stack(b, row, s->len, 0);
    }
    return !b->failed;
}

/* Opset 8: every lane run, then each output stacked over the lanes along axis 0. */
static void run_batched(ox_b *b, scan *s)
{
    int *col = malloc((size_t)s->lanes * sizeof *col + 1);
    if (!col) {
        xe_fail(&b->st, XE_ERR_NOMEM, "out of memory");
        b->failed = true;
        return;
    }
    for (int64_t l = 0; l < s->lanes && run_lane(b, s, l); l++)
        ;
    for (int k = 0; k < s->n_state + s->n_out && !b->failed; k++) {
        for (int64_t l = 0; l < s->lanes; l++)
            col[l] = k < s->n_state ? s->lane_state[l * s->n_state + k]
                                    : s->lane_out[l * s->n_out + k - s->n_state];
        ox_out(b, k, ox_stack(b, col, s->lanes, 0));
    }
    free(col);
}

/* Opset 9 on: one scan, each scan output stacked along its axis. */
static void run_single(ox_b *b, scan *s)
{
    for (int k = 0; k < s->n_state; k++)
        s->state[k] = ox_in(b, s->first + k);
    for (int64_t t = 0; t < s->len && iterate(b, s, 0, t, s->len); t++)
        ;
    for (int k = 0; k < s->n_state && !b->failed; k++)
        ox_out(b, k, s->state[k]);
    for (int j = 0; j < s->n_out && !b->failed; j++) {
        int *row = s->elems + j * s->len, axis;
        if (ox_axis(b, s->out_axis[j], ox_rank(b, row[0]) + 1, &axis))
            ox_out(b, s->n_state + j, ox_stack(b, row, s->len, axis));
    }
}

xe_code ox_b_scan(ox_b *b)
{
    scan *s = calloc(1, sizeof *s);
    if (!s)
        return xe_fail(&b->st, XE_ERR_NOMEM, "out of memory"), b->failed = true, b->st.code;
    if (read_node(b, s) && read_lengths(b, s)) {
        for (int k = 0; k < s->n_state; k++)
            if (ox_in(b, s->first + k) < 0)
                ox_invalid(b, "initial state %d is missing", k);
        if (!b->failed && (!s->len || !s->lanes) && s->n_out)
            ox_unsupported(b, "scan outputs of a scan of no iteration are not supported (their "
                              "elements' shape is unknown)");
        size_t lanes = (size_t)s->lanes;
        s->state = calloc((size_t)s->n_state + 1, sizeof *s->state);
        s->elems = calloc((size_t)s->n_out * (size_t)s->len + 1, sizeof *s->elems);
        s->lane_state = calloc(lanes * (size_t)s->n_state + 1, sizeof *s->lane_state);
        s->lane_out = calloc(lanes * (size_t)s->n_out + 1, sizeof *s->lane_out);
        if (!s->state || !s->elems || !s->lane_state || !s->lane_out)
            xe_fail(&b->st, XE_ERR_NOMEM, "out of memory"), b->failed = true;
    }
    if (!b->failed && s->batched && s->lanes && s->len)
        run_batched(b, s);
    else if (!b->failed && s->batched) /* no iteration: the states as given */
        for (int k = 0; k < s->n_state; k++)
            ox_out(b, k, ox_in(b, s->first + k));
    else if (!b->failed)
        run_single(b, s);
    free(s->state);
    free(s->elems);
    free(s->lane_state);
    free(s->lane_out);
    free(s);
    return ox_status(b);
}
