/*
 * Builders of ONNX's recurrent layers RNN, GRU and LSTM. A layer with
 * ONNX's default activations (RNN: one activation for both directions),
 * no clip and no sequence_lens that cuts a step short is one recurrent node
 * (executor/ir/recurrent.h: the whole sequence in one kernel call, any
 * length, f16 through f32), its result sliced into Y, Y_h and Y_c.
 *
 * Any other layer is unrolled over the sequence (its length must be known
 * at load time, at most OX_RNN_MAX_STEPS). Per direction, the input
 * projection X W^T + Wb is one matmul over every step; each step then adds
 * H R^T + Rb (one matmul), slices the gates (RNN: i; GRU: z, r, h; LSTM:
 * i, o, f, c) and applies the activations, with clip before them and
 * LSTM's peepholes. The state is [1, batch, hidden] throughout, so the
 * batch may be unknown.
 *
 * Without initial_h (initial_c) the first step has no state term at all,
 * the same as a zero state. sequence_lens masks the steps at or past a
 * batch entry's length: its state is held and its Y row is zero. A reverse
 * direction with sequence_lens is refused unless every length is the whole
 * sequence (a constant). Activations: Sigmoid, Tanh and Relu; others, and
 * LSTM's input_forget=1, are refused by name.
 */
#include <stdint.h>
#include <string.h>

#include "onnx_impl.h"

#define OX_RNN_MAX_STEPS 1024

/* An activation the layers apply. */
typedef enum rnn_act {
    RNN_SIGMOID, /* 1 / (1 + e^-x) */
    RNN_TANH,    /* tanh */
    RNN_RELU,    /* max(x, 0) */
} rnn_act;

/* One recurrent node's shape and options. */
typedef struct rnn {
    int gates;    /* 1 RNN, 3 GRU, 4 LSTM */
    int n_act;    /* activations per direction: 1, 2, 3 */
    int dirs;     /* 1 or 2 */
    bool reverse; /* direction="reverse" (one direction) */
    bool layout;  /* layout=1: batch first */
    bool lbr;     /* GRU linear_before_reset */
    int64_t seq, hid;
    double clip; /* 0: no clip */
    rnn_act act[2][3];
    int lens; /* [1, batch, 1] i64 lengths, -1: every step counts */
} rnn;

static int add_opt(ox_b *b, int x, int y)
{
    return x < 0 ? y : y < 0 ? x : ox_bin(b, XE_OP_ADD, x, y);
}

/* x[..., from:to] (x is [1, batch, n], or [n]: a bias alone). */
static int last(ox_b *b, int x, int64_t from, int64_t to)
{
    int64_t beg[3] = {0, 0, from}, end[3] = {INT64_MAX, INT64_MAX, to};
    int r = ox_rank(b, x);
    return x < 0 || r < 1 ? -1 : ox_slice(b, x, beg + 3 - r, end + 3 - r);
}

/* x[d] of a [dirs, ...] value, reshaped to dims (rank n). */
static int dir_part(ox_b *b, int x, int d, const int64_t *dims, int n)
{
    if (x < 0)
        return -1;
    int r = ox_rank(b, x);
    int64_t beg[XE_MAX_RANK] = {0}, end[XE_MAX_RANK];
    for (int k = 0; k < r; k++)
        end[k] = k == 0 ? d + 1 : INT64_MAX;
    beg[0] = d;
    return ox_reshape_dims(b, ox_slice(b, x, beg, end), dims, n,
                           "a recurrent layer needs every dim but one known");
}

static int act(ox_b *b, rnn_act a, int x)
{
    return ox_un(b, a == RNN_SIGMOID ? XE_OP_SIGMOID : a == RNN_TANH ? XE_OP_TANH : XE_OP_RELU, x);
}

/* The pre-activation clipped to [-clip, clip], then the activation. */
static int gate(ox_b *b, const rnn *r, rnn_act a, int x)
{
    if (r->clip > 0 && x >= 0) {
        xe_dtype dt = ox_type(b, x)->dtype;
        x = ox_bin(b, XE_OP_MINIMUM, ox_bin(b, XE_OP_MAXIMUM, x, ox_scalar(b, dt, -r->clip)),
                   ox_scalar(b, dt, r->clip));
    }
    return act(b, a, x);
}

/* activations (or the layer's defaults), per direction. */
static bool activations(ox_b *b, rnn *r)
{
    static const rnn_act dflt[3] = {RNN_SIGMOID, RNN_TANH, RNN_TANH};
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 3; k++)
            r->act[d][k] = r->gates == 1 ? RNN_TANH : dflt[k];
    const Onnx__AttributeProto *a = ox_attr(b, "activations");
    if (!a)
        return true;
    if (a->n_strings != (size_t)(r->n_act * r->dirs))
        return ox_invalid(b, "activations has %zu entries, %d expected", a->n_strings,
                          r->n_act * r->dirs),
               false;
    for (size_t i = 0; i < a->n_strings; i++) {
        const ProtobufCBinaryData *s = &a->strings[i];
        size_t n = s->data ? s->len : 0;
        rnn_act *to = &r->act[i / r->n_act][i % r->n_act];
        if (n == 7 && !memcmp(s->data, "Sigmoid", 7))
            *to = RNN_SIGMOID;
        else if (n == 4 && !memcmp(s->data, "Tanh", 4))
            *to = RNN_TANH;
        else if (n == 4 && !memcmp(s->data, "Relu", 4))
            *to = RNN_RELU;
        else
            return ox_unsupported(b, "activation '%.*s' is not supported (Sigmoid, Tanh, Relu are)",
                                  (int)(n > 32 ? 32 : n), n ? (const char *)s->data : ""),
                   false;
    }
    return true;
}

/* sequence_lens as [1, batch, 1] i64, or -1 where it cannot cut a step short. */
static bool lengths(ox_b *b, rnn *r, int64_t batch)
{
    int lens = ox_in(b, 4);
    r->lens = -1;
    if (lens < 0)
        return true;
    const xe_type *t = ox_type(b, lens);
    if (t->shape.rank != 1 || (t->dtype != XE_I32 && t->dtype != XE_I64))
        return ox_invalid(b, "sequence_lens must be a 1-D int32 tensor"), false;
    const xe_tensor *c =
        b->c->g->nodes[lens]->op == XE_OP_CONST ? b->c->g->nodes[lens]->value : NULL;
    bool whole = c != NULL;
    for (int64_t i = 0; c && i < xe_tensor_numel(c); i++)
        whole &= (t->dtype == XE_I32 ? ((const int32_t *)c->data)[i]
                                     : ((const int64_t *)c->data)[i]) == r->seq;
    if (whole)
        return true;
    if (r->reverse || r->dirs == 2)
        return ox_unsupported(b, "sequence_lens with a reverse direction is not supported"), false;
    int64_t dims[3] = {1, batch, 1};
    r->lens =
        ox_reshape_dims(b, ox_cast(b, lens, XE_I64), dims, 3, "sequence_lens needs a known batch");
    return r->lens >= 0;
}

/* The attributes and the known dims; false (b failed) when the node is refused. */
static bool setup(ox_b *b, rnn *r, int x, int w)
{
    const char *t = b->np->op_type, *dir = ox_str(b, "direction", "forward");
    r->gates = !strcmp(t, "LSTM") ? 4 : !strcmp(t, "GRU") ? 3 : 1;
    r->n_act = r->gates == 4 ? 3 : r->gates == 3 ? 2 : 1;
    r->reverse = !strcmp(dir, "reverse");
    r->dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
    if (!r->reverse && r->dirs == 1 && strcmp(dir, "forward"))
        return ox_invalid(b, "direction '%s' is not forward, reverse or bidirectional", dir), false;
    r->layout = ox_int(b, "layout", 0) != 0;
    r->lbr = ox_int(b, "linear_before_reset", 0) != 0;
    r->clip = ox_float(b, "clip", 0);
    if (ox_int(b, "input_forget", 0) != 0)
        return ox_unsupported(b, "input_forget=1 is not supported"), false;
    if (ox_attr(b, "clip") && !(r->clip > 0))
        return ox_invalid(b, "clip must be positive"), false;
    const xe_type *xt = ox_type(b, x), *wt = ox_type(b, w);
    if (xt->shape.rank != 3 || wt->shape.rank != 3)
        return ox_invalid(b, "%s needs a 3-D X and W", t), false;
    if (xt->dtype != XE_F32 && xt->dtype != XE_F64 && xt->dtype != XE_F16)
        return ox_unsupported(b, "%s of %s is not supported", t, xe_dtype_name(xt->dtype)), false;
    r->seq = xt->shape.dims[r->layout ? 1 : 0];
    r->hid = ox_int(b, "hidden_size", wt->shape.dims[1] < 0 ? -1 : wt->shape.dims[1] / r->gates);
    if (xt->shape.dims[2] < 0)
        return ox_unsupported(b, "%s needs a known input size", t), false;
    if (r->hid < 1 || r->hid > (1 << 24) || wt->shape.dims[0] != r->dirs ||
        wt->shape.dims[1] != r->gates * r->hid || wt->shape.dims[2] != xt->shape.dims[2])
        return ox_invalid(b, "W must be [%d, %d * hidden_size, input_size]", r->dirs, r->gates),
               false;
    return activations(b, r) && lengths(b, r, xt->shape.dims[r->layout ? 0 : 1]);
}

/* The recurrent state of one direction. */
typedef struct rstate {
    int h, c; /* [1, batch, hid]; -1: zero (before the first step, without initial_h/c) */
} rstate;

/* The weights of one direction. */
typedef struct rdir {
    int xw;     /* [seq, batch, G*hid]: X W^T + Wb */
    int r;      /* [G*hid, hid] */
    int rb;     /* [G*hid] or -1 */
    int p[3];   /* LSTM peepholes i, o, f ([hid]) or -1 */
    rnn_act *a; /* this direction's activations */
} rdir;

/* H R[from:to]^T + Rb[from:to]: the recurrent term of gates from/hid to to/hid, -1 where zero. */
static int recur(ox_b *b, const rdir *w, int h, int64_t from, int64_t to)
{
    int64_t beg[2] = {from, 0}, end[2] = {to, INT64_MAX};
    int rb = w->rb < 0 ? -1 : ox_slice(b, w->rb, &from, &to);
    if (h < 0)
        return rb;
    ox_at tb = OX_BOOL("transpose_b", true);
    int in[2] = {h, ox_slice(b, w->r, beg, end)};
    return add_opt(b, ox_op(b, XE_OP_MATMUL, in, 2, &tb, 1), rb);
}

static int mul_opt(ox_b *b, int x, int y)
{
    return x < 0 || y < 0 ? -1 : ox_bin(b, XE_OP_MUL, x, y);
}

/* One LSTM step: gates i, o, f, c from xt ([1, batch, 4*hid]). */
static rstate lstm_step(ox_b *b, const rnn *r, const rdir *w, int xt, rstate s)
{
    int64_t H = r->hid;
    int hr = recur(b, w, s.h, 0, 4 * H);
    int pre[4];
    for (int g = 0; g < 4; g++)
        pre[g] = add_opt(b, last(b, xt, g * H, (g + 1) * H), last(b, hr, g * H, (g + 1) * H));
    int i = gate(b, r, w->a[0], add_opt(b, pre[0], mul_opt(b, w->p[0], s.c)));
    int f = gate(b, r, w->a[0], add_opt(b, pre[2], mul_opt(b, w->p[2], s.c)));
    int c = add_opt(b, mul_opt(b, f, s.c), ox_bin(b, XE_OP_MUL, i, gate(b, r, w->a[1], pre[3])));
    int o = gate(b, r, w->a[0], add_opt(b, pre[1], mul_opt(b, w->p[1], c)));
    return (rstate){.h = ox_bin(b, XE_OP_MUL, o, act(b, w->a[2], c)), .c = c};
}

/* One GRU step: gates z, r, h. */
static rstate gru_step(ox_b *b, const rnn *r, const rdir *w, int xt, rstate s)
{
    int64_t H = r->hid;
    int hr = recur(b, w, s.h, 0, r->lbr ? 3 * H : 2 * H);
    int z = gate(b, r, w->a[0], add_opt(b, last(b, xt, 0, H), last(b, hr, 0, H)));
    int rg = gate(b, r, w->a[0], add_opt(b, last(b, xt, H, 2 * H), last(b, hr, H, 2 * H)));
    int hh = r->lbr ? mul_opt(b, rg, last(b, hr, 2 * H, 3 * H))
                    : recur(b, w, mul_opt(b, rg, s.h), 2 * H, 3 * H);
    int cand = gate(b, r, w->a[1], add_opt(b, last(b, xt, 2 * H, 3 * H), hh));
    int one = ox_scalar(b, ox_type(b, cand)->dtype, 1);
    int h =
        add_opt(b, ox_bin(b, XE_OP_MUL, ox_bin(b, XE_OP_SUB, one, z), cand), mul_opt(b, z, s.h));
    return (rstate){.h = h, .c = -1};
}

static rstate rnn_step(ox_b *b, const rnn *r, const rdir *w, int xt, rstate s)
{
    return (rstate){.h = gate(b, r, w->a[0], add_opt(b, xt, recur(b, w, s.h, 0, r->hid))), .c = -1};
}

/* v where step t counts, else keep (or 0 where keep is -1). */
static int masked(ox_b *b, const rnn *r, int t, int v, int keep)
{
    if (r->lens < 0 || v < 0)
        return v;
    int on = ox_bin(b, XE_OP_LESS, ox_scalar(b, XE_I64, t), r->lens);
    return ox_select(b, on, v, keep >= 0 ? keep : ox_scalar(b, ox_type(b, v)->dtype, 0));
}

/* Direction d's weights: the input projection and R, Rb, P. */
static rdir weights(ox_b *b, rnn *r, int x, int d)
{
    int64_t GH = r->gates * r->hid, in = ox_type(b, x)->shape.dims[2];
    int64_t wd[2] = {GH, in}, rd[2] = {GH, r->hid}, bd[1] = {2 * GH}, pd[1] = {3 * r->hid};
    rdir w = {.rb = -1, .p = {-1, -1, -1}, .a = r->act[d]};
    ox_at tb = OX_BOOL("transpose_b", true);
    int in2[2] = {x, dir_part(b, ox_in(b, 1), d, wd, 2)};
    w.xw = ox_op(b, XE_OP_MATMUL, in2, 2, &tb, 1);
    w.r = dir_part(b, ox_in(b, 2), d, rd, 2);
    int bias = dir_part(b, ox_in(b, 3), d, bd, 1);
    if (bias >= 0) {
        int64_t z = 0, m = GH, e = 2 * GH;
        w.xw = ox_bin(b, XE_OP_ADD, w.xw, ox_slice(b, bias, &z, &m));
        w.rb = ox_slice(b, bias, &m, &e);
    }
    int p = r->gates == 4 ? dir_part(b, ox_in(b, 7), d, pd, 1) : -1;
    for (int k = 0; p >= 0 && k < 3; k++) {
        int64_t from = k * r->hid, to = (k + 1) * r->hid;
        w.p[k] = ox_slice(b, p, &from, &to);
    }
    return w;
}

/* Runs direction d over the sequence; Y's [seq, 1, batch, hid] into *y (when wanted). */
static rstate direction(ox_b *b, rnn *r, int x, int d, int init_h, int init_c, int *y)
{
    int64_t sd[3] = {1, -1, r->hid};
    rdir w = weights(b, r, x, d);
    rstate s = {.h = init_h < 0 ? -1 : dir_part(b, init_h, d, sd, 3),
                .c = init_c < 0 ? -1 : dir_part(b, init_c, d, sd, 3)};
    int ys[OX_RNN_MAX_STEPS];
    bool back = r->reverse || d == 1;
    for (int64_t k = 0; k < r->seq && !b->failed; k++) {
        int64_t t = back ? r->seq - 1 - k : k, beg[3] = {t, 0, 0},
                end[3] = {t + 1, INT64_MAX, INT64_MAX};
        int xt = ox_slice(b, w.xw, beg, end);
        rstate n = r->gates == 4   ? lstm_step(b, r, &w, xt, s)
                   : r->gates == 3 ? gru_step(b, r, &w, xt, s)
                                   : rnn_step(b, r, &w, xt, s);
        ys[t] = masked(b, r, (int)t, n.h, -1);
        s.h = masked(b, r, (int)t, n.h, s.h);
        s.c = masked(b, r, (int)t, n.c, s.c);
    }
    if (y && !b->failed) {
        ox_at ax = OX_I("axis", 0);
        int64_t yd[4] = {r->seq, 1, -1, r->hid};
        int cat = r->seq == 1 ? ys[0] : ox_op(b, XE_OP_CONCAT, ys, (int)r->seq, &ax, 1);
        *y = ox_reshape_dims(b, cat, yd, 4, "a recurrent layer needs a known batch");
    }
    return s;
}

static int cat(ox_b *b, const int *v, int n, int axis)
{
    ox_at ax = OX_I("axis", axis);
    return n == 1 ? v[0] : ox_op(b, XE_OP_CONCAT, v, n, &ax, 1);
}

static bool wanted(ox_b *b, int k)
{
    return (size_t)k < b->np->n_output && b->np->output[k][0];
}

/* Whether the layer is one recurrent node: ONNX's default activations (RNN: one of them, the same
   for both directions), no clip, no sequence_lens that cuts a step short. */
static bool native(const rnn *r)
{
    static const rnn_act dflt[3] = {RNN_SIGMOID, RNN_TANH, RNN_TANH};
    bool ok = r->clip == 0 && r->lens < 0;
    for (int d = 0; d < r->dirs; d++)
        for (int k = 0; k < r->n_act; k++)
            ok &= r->gates == 1 ? r->act[d][0] == r->act[0][0] : r->act[d][k] == dflt[k];
    return ok;
}

/* rows [from, to) of axis 0 of y, counted from its end where negative. */
static int rows(ox_b *b, int y, int64_t from, int64_t to)
{
    int64_t beg[4] = {from, 0, 0, 0}, end[4] = {to, INT64_MAX, INT64_MAX, INT64_MAX};
    return ox_slice(b, y, beg, end);
}

/* The layer as one recurrent node (f16 through f32), its result cut into Y, Y_h and Y_c. */
static xe_code emit_native(ox_b *b, const rnn *r, int x, int h0, int c0)
{
    static const char *const cells[] = {"rnn", "", "gru", "lstm"};
    static const char *const acts[] = {"sigmoid", "tanh", "relu"};
    xe_dtype dt = ox_type(b, x)->dtype, cdt = dt == XE_F16 ? XE_F32 : dt;
    int p = r->gates == 4 ? ox_in(b, 7) : -1;
    int in[7] = {ox_cast(b, x, cdt), ox_cast(b, ox_in(b, 1), cdt), ox_cast(b, ox_in(b, 2), cdt)};
    int n = 3, bias = ox_in(b, 3);
    int opt[4] = {bias, h0, r->gates == 4 ? c0 : -1, p};
    for (int k = 0; k < 4; k++)
        if (opt[k] >= 0)
            in[n++] = ox_cast(b, opt[k], cdt);
    ox_at at[8] = {OX_STR("cell", cells[r->gates - 1]),
                   OX_STR("direction", r->dirs == 2 ? "bidirectional"
                                       : r->reverse ? "reverse"
                                                    : "forward"),
                   OX_BOOL("bias", bias >= 0), OX_BOOL("initial_h", h0 >= 0)};
    int n_at = 4;
    if (r->gates == 4) {
        at[n_at++] = OX_BOOL("initial_c", c0 >= 0);
        at[n_at++] = OX_BOOL("peepholes", p >= 0);
    }
    if (r->gates == 3)
        at[n_at++] = OX_BOOL("linear_before_reset", r->lbr);
    if (r->gates == 1)
        at[n_at++] = OX_STR("activation", acts[r->act[0][0]]);
    int y = ox_op(b, XE_OP_RECURRENT, in, n, at, n_at);
    int extra = r->gates == 4 ? 2 : 1, perm[3] = {1, 0, 2}, perm4[4] = {2, 0, 1, 3};
    int64_t sd[3] = {r->dirs, -1, r->hid};
    if (wanted(b, 0)) {
        int v = ox_cast(b, rows(b, y, 0, r->seq >= 0 ? r->seq : -extra), dt);
        ox_out(b, 0, r->layout ? ox_transpose(b, v, perm4, 4) : v);
    }
    for (int k = 1; k <= extra; k++)
        if (wanted(b, k)) {
            int64_t from = k - 1 - extra;
            int v = ox_reshape_dims(b, rows(b, y, from, from + 1 < 0 ? from + 1 : INT64_MAX), sd, 3,
                                    "a recurrent layer needs every dim but one known");
            v = ox_cast(b, v, dt);
            ox_out(b, k, r->layout ? ox_transpose(b, v, perm, 3) : v);
        }
    return ox_status(b);
}

xe_code ox_b_rnn(ox_b *b)
{
    int x = ox_in(b, 0), w = ox_in(b, 1), h0 = ox_in(b, 5), c0 = ox_in(b, 6);
    rnn r = {0};
    if (x < 0 || w < 0 || ox_in(b, 2) < 0)
        return ox_status(b);
    if (!setup(b, &r, x, w))
        return ox_status(b);
    int perm[3] = {1, 0, 2};
    if (r.layout) {
        x = ox_transpose(b, x, perm, 3);
        h0 = h0 < 0 ? -1 : ox_transpose(b, h0, perm, 3);
        c0 = c0 < 0 ? -1 : ox_transpose(b, c0, perm, 3);
    }
    if (native(&r))
        return emit_native(b, &r, x, h0, c0);
    if (r.seq < 1 || r.seq > OX_RNN_MAX_STEPS)
        return ox_unsupported(b,
                              "%s with clip, sequence_lens or activations other than the defaults "
                              "needs a known sequence length of 1 to %d",
                              b->np->op_type, OX_RNN_MAX_STEPS);
    int ys[2] = {-1, -1}, hs[2], cs[2];
    for (int d = 0; d < r.dirs && !b->failed; d++) {
        rstate s = direction(b, &r, x, d, h0, r.gates == 4 ? c0 : -1, wanted(b, 0) ? &ys[d] : NULL);
        hs[d] = s.h, cs[d] = s.c;
    }
    if (b->failed)
        return ox_status(b);
    if (wanted(b, 0)) {
        int perm4[4] = {2, 0, 1, 3}, y = cat(b, ys, r.dirs, 1);
        ox_out(b, 0, r.layout ? ox_transpose(b, y, perm4, 4) : y);
    }
    for (int k = 1; k <= (r.gates == 4 ? 2 : 1); k++)
        if (wanted(b, k)) {
            int v = cat(b, k == 1 ? hs : cs, r.dirs, 0);
            ox_out(b, k, r.layout ? ox_transpose(b, v, perm, 3) : v);
        }
    return ox_status(b);
}
