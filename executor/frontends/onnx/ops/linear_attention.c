/*
 * LinearAttention (opset 27), built at import as its recurrence unrolled
 * over the sequence, whose length a graph built per input size knows at
 * load (at most OX_UNROLL_MAX steps). Everything is computed in f32 and
 * stored in the model's types: the output in query's, present_state in
 * past_state's (query's when there is none).
 *
 * query [B, T, Hq*dk], key [B, T, Hkv*dk], value [B, T, Hkv*dv] are viewed
 * as [B, T, Hkv, G, dk], [B, T, Hkv, dk], [B, T, Hkv, dv] (G = Hq / Hkv:
 * query head h reads KV head h / G, so grouped-query and multi-query
 * attention need no copy of the state). The state S is [B, Hkv, dk, dv],
 * past_state or zeros. Step t, on that step's slices:
 *   gated, gated_delta:  S = S * exp(decay_t)   (per key dim or per head)
 *   delta, gated_delta:  v_t = beta_t * (v_t - k_t^T S)   (a matmul)
 *   all:                 S = S + k_t v_t^T   (a broadcast product)
 *                        o_t = q_t S   (a matmul over [B, Hkv])
 * The steps' outputs are concatenated along T and scaled once (scale, or
 * 1/sqrt(dk) when it is 0). chunk_size is a tuning hint with no effect.
 * Refused, naming why: dims unknown at load, a sequence of no step.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

/* The sizes and the f32 views of one LinearAttention. */
typedef struct linatt {
    int64_t batch, steps, hq, hkv, group, dk, dv;
    int64_t decay_dim;  /* decay's per-head size: dk, or 1 (one value per head) */
    int64_t beta_heads; /* beta's heads: Hkv, or 1 */
    bool gated, delta;
    int q, k, v, decay, beta; /* f32 views [B, T, ...] (decay already exp'd), -1 when absent */
    int state;                /* S, f32 [B, Hkv, dk, dv] */
} linatt;

/* The update rule into la's flags; false (b failed) for an unknown rule. */
static bool read_rule(ox_b *b, linatt *la)
{
    const char *rule = ox_str(b, "update_rule", "gated_delta");
    la->gated = !strcmp(rule, "gated") || !strcmp(rule, "gated_delta");
    la->delta = !strcmp(rule, "delta") || !strcmp(rule, "gated_delta");
    if (!la->gated && !la->delta && strcmp(rule, "linear"))
        return ox_invalid(b, "update_rule '%s' is none of linear, gated, delta, gated_delta", rule),
               false;
    if (la->gated != (ox_in(b, 4) >= 0) || la->delta != (ox_in(b, 5) >= 0))
        return ox_invalid(b, "update_rule '%s' %s decay and %s beta", rule,
                          la->gated ? "needs" : "forbids", la->delta ? "needs" : "forbids"),
               false;
    return true;
}

/* Input k's dims, of rank `rank` and all known at load; false (b failed) otherwise. */
static bool dims_of(ox_b *b, int k, int rank, int64_t *d)
{
    static const char *const names[] = {"query", "key", "value", "past_state", "decay", "beta"};
    const xe_shape *s = &ox_type(b, ox_in(b, k))->shape;
    if (s->rank != rank)
        return ox_invalid(b, "%s has rank %d, not %d", names[k], s->rank, rank), false;
    for (int i = 0; i < rank; i++) {
        if (s->dims[i] < 0)
            return ox_unsupported(b,
                                  "%s's dim %d is unknown at load (LinearAttention is unrolled "
                                  "over the sequence at import)",
                                  names[k], i),
                   false;
        d[i] = s->dims[i];
    }
    return true;
}

/* Whether input k's first two dims are [B, T] and its last is one of a or b_. */
static bool fits(ox_b *b, const linatt *la, int k, const int64_t *d, int64_t a, int64_t b_)
{
    if (d[0] == la->batch && d[1] == la->steps && (d[2] == a || d[2] == b_))
        return true;
    return ox_invalid(b, "input %d is [%lld, %lld, %lld]; [%lld, %lld, %lld or %lld] is expected",
                      k, (long long)d[0], (long long)d[1], (long long)d[2], (long long)la->batch,
                      (long long)la->steps, (long long)a, (long long)b_),
           false;
}

/* The heads, the sizes and the shapes of every input checked against them. */
static bool read_sizes(ox_b *b, linatt *la)
{
    int64_t q[3], k[3], v[3], d[4];
    la->hq = ox_int(b, "q_num_heads", 0);
    la->hkv = ox_int(b, "kv_num_heads", 0);
    if (la->hq <= 0 || la->hkv <= 0 || la->hq % la->hkv)
        return ox_invalid(b, "q_num_heads %lld is not a positive multiple of kv_num_heads %lld",
                          (long long)la->hq, (long long)la->hkv),
               false;
    if (!dims_of(b, 0, 3, q) || !dims_of(b, 1, 3, k) || !dims_of(b, 2, 3, v))
        return false;
    la->batch = q[0], la->steps = q[1], la->group = la->hq / la->hkv;
    la->dk = q[2] / la->hq, la->dv = v[2] / la->hkv;
    if (q[2] % la->hq || v[2] % la->hkv)
        return ox_invalid(b, "query's or value's last dim does not divide into its heads"), false;
    if (!fits(b, la, 1, k, la->hkv * la->dk, la->hkv * la->dk) ||
        !fits(b, la, 2, v, la->hkv * la->dv, la->hkv * la->dv))
        return false;
    if (la->gated && (!dims_of(b, 4, 3, d) || !fits(b, la, 4, d, la->hkv * la->dk, la->hkv)))
        return false;
    la->decay_dim = la->gated && d[2] == la->hkv ? 1 : la->dk;
    if (la->delta && (!dims_of(b, 5, 3, d) || !fits(b, la, 5, d, la->hkv, 1)))
        return false;
    la->beta_heads = la->delta ? d[2] : 1;
    if (ox_in(b, 3) >= 0 && dims_of(b, 3, 4, d) &&
        (d[0] != la->batch || d[1] != la->hkv || d[2] != la->dk || d[3] != la->dv))
        return ox_invalid(b, "past_state is not [%lld, %lld, %lld, %lld]", (long long)la->batch,
                          (long long)la->hkv, (long long)la->dk, (long long)la->dv),
               false;
    if (la->steps < 1 || la->steps > OX_UNROLL_MAX)
        return ox_unsupported(b,
                              "a sequence of %lld steps is not supported (it is unrolled at load, "
                              "1 to %d)",
                              (long long)la->steps, OX_UNROLL_MAX),
               false;
    return !b->failed;
}

/* Input k as f32, reshaped to [B, T, d1, d2(, d3)] (d3 0: rank 4). */
static int view(ox_b *b, const linatt *la, int k, int64_t d1, int64_t d2, int64_t d3)
{
    int64_t dims[5] = {la->batch, la->steps, d1, d2, d3};
    return ox_reshape(b, ox_cast(b, ox_in(b, k), XE_F32), dims, d3 ? 5 : 4);
}

/* The views of every input and the first state. */
static void build_views(ox_b *b, linatt *la)
{
    la->q = view(b, la, 0, la->hkv, la->group, la->dk);
    la->k = view(b, la, 1, la->hkv, la->dk, 0);
    la->v = view(b, la, 2, la->hkv, la->dv, 0);
    la->decay = la->gated ? ox_un(b, XE_OP_EXP, view(b, la, 4, la->hkv, la->decay_dim, 0)) : -1;
    la->beta = la->delta ? view(b, la, 5, la->beta_heads, 1, 0) : -1;
    if (ox_in(b, 3) >= 0) {
        la->state = ox_cast(b, ox_in(b, 3), XE_F32);
        return;
    }
    xe_shape s = {.rank = 4, .dims = {la->batch, la->hkv, la->dk, la->dv}};
    xe_tensor *zero = ox_new_tensor(b, XE_F32, &s);
    if (zero)
        memset(zero->data, 0, zero->nbytes);
    la->state = ox_const(b, zero);
}

/* Step t of view x (axis 1), reshaped to [B, d1, d2, d3]. */
static int at_step(ox_b *b, const linatt *la, int x, int64_t t, int64_t d1, int64_t d2, int64_t d3)
{
    int64_t beg[5] = {0, t, 0, 0, 0}, end[5] = {INT64_MAX, t + 1, INT64_MAX, INT64_MAX, INT64_MAX};
    int64_t dims[4] = {la->batch, d1, d2, d3};
    return ox_reshape(b, ox_slice(b, x, beg, end), dims, 4);
}

/* Step t: the state updated, the step's output [B, 1, Hq*dv] returned. */
static int step(ox_b *b, linatt *la, int64_t t)
{
    int v = at_step(b, la, la->v, t, la->hkv, 1, la->dv);
    int k_col = at_step(b, la, la->k, t, la->hkv, la->dk, 1);
    if (la->gated)
        la->state = ox_bin(b, XE_OP_MUL, la->state,
                           at_step(b, la, la->decay, t, la->hkv, la->decay_dim, 1));
    if (la->delta) {
        int k_row = at_step(b, la, la->k, t, la->hkv, 1, la->dk);
        int seen = ox_bin(b, XE_OP_MATMUL, k_row, la->state); /* [B, Hkv, 1, dv] */
        v = ox_bin(b, XE_OP_MUL, at_step(b, la, la->beta, t, la->beta_heads, 1, 1),
                   ox_bin(b, XE_OP_SUB, v, seen));
    }
    la->state = ox_bin(b, XE_OP_ADD, la->state, ox_bin(b, XE_OP_MUL, k_col, v));
    int q = at_step(b, la, la->q, t, la->hkv, la->group, la->dk);
    int64_t out[3] = {la->batch, 1, la->hq * la->dv};
    return ox_reshape(b, ox_bin(b, XE_OP_MATMUL, q, la->state), out, 3);
}

xe_code ox_b_linear_attention(ox_b *b)
{
    linatt la = {0};
    if (ox_in(b, 0) < 0 || ox_in(b, 1) < 0 || ox_in(b, 2) < 0)
        return ox_invalid(b, "query, key and value are required");
    if (!read_rule(b, &la) || !read_sizes(b, &la))
        return ox_status(b);
    double scale = ox_float(b, "scale", 0);
    if (scale == 0)
        scale = 1 / sqrt((double)la.dk);
    build_views(b, &la);
    int *outs = malloc((size_t)la.steps * sizeof *outs);
    if (!outs)
        return xe_fail(&b->st, XE_ERR_NOMEM, "out of memory"), b->failed = true, b->st.code;
    for (int64_t t = 0; t < la.steps; t++)
        outs[t] = step(b, &la, t);
    ox_at axis = OX_I("axis", 1);
    int y = la.steps == 1 ? outs[0] : ox_op(b, XE_OP_CONCAT, outs, (int)la.steps, &axis, 1);
    free(outs);
    y = ox_bin(b, XE_OP_MUL, y, ox_scalar(b, XE_F32, scale));
    xe_dtype state_dt = ox_type(b, ox_in(b, ox_in(b, 3) >= 0 ? 3 : 0))->dtype;
    ox_out(b, 0, ox_cast(b, y, ox_type(b, ox_in(b, 0))->dtype));
    ox_out(b, 1, ox_cast(b, la.state, state_dt));
    return ox_status(b);
}
