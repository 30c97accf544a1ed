/*
 * recurrent (executor/ir/recurrent.h) on the CPU: f32 on the engine
 * (cpu/dnnl_recurrent.c, oneDNN's RNN primitives); f64, and what the engine
 * refuses, in the loop below, which computes in f64 whatever the operands'
 * type: per direction, per step, per batch row, the gates from x_t W^T + Wb
 * and h R^T + Rb with ONNX's gate order and formulas.
 */
#include <math.h>
#include <stdlib.h>

#include "dnnl_engine.h"
#include "kernels.h"
#include "recurrent.h"

/* One run's sizes and operands, each read into f64. */
typedef struct rnn_job {
    const xe_recurrent *r;
    int64_t S, N, I, H, G; /* G: gates * H */
    double *in[7];         /* x w r and the optional ones, by input index */
    double *g, *rh;        /* per row: the gates' pre-activations, H R^T + Rb */
    double *h, *c;         /* [N, H] the state */
} rnn_job;

static double sigm(double v)
{
    return 1.0 / (1.0 + exp(-v));
}

static double rnn_act(xe_rnn_act a, double v)
{
    return a == XE_RNN_TANH ? tanh(v) : a == XE_RNN_RELU ? (v > 0 ? v : 0) : sigm(v);
}

static double dot(const double *a, const double *b, int64_t n)
{
    double s = 0;
    for (int64_t k = 0; k < n; k++)
        s += a[k] * b[k];
    return s;
}

/* Operand k of direction d at row j of a [dirs, rows, cols] tensor. */
static const double *row(const rnn_job *j, int k, int d, int64_t rows, int64_t r, int64_t cols)
{
    return j->in[k] + (d * rows + r) * cols;
}

/* Bias entry e (of 2G) of direction d, 0 without a bias. */
static double bias(const rnn_job *j, int d, int64_t e)
{
    return j->r->b < 0 ? 0 : j->in[j->r->b][d * 2 * j->G + e];
}

/* The state h and c of batch row n after one step with input xt. */
static void step(rnn_job *j, int d, int64_t n, const double *xt)
{
    const xe_recurrent *r = j->r;
    int64_t H = j->H, G = j->G;
    double *h = j->h + n * H, *c = j->c + n * H, *g = j->g, *rh = j->rh;
    for (int64_t e = 0; e < G; e++) {
        g[e] = dot(row(j, 1, d, G, e, j->I), xt, j->I) + bias(j, d, e);
        rh[e] = dot(row(j, 2, d, G, e, H), h, H) + bias(j, d, G + e);
    }
    for (int64_t k = 0; k < H; k++) {
        if (r->gates == 1) {
            h[k] = rnn_act(r->act, g[k] + rh[k]);
        } else if (r->gates == 4) { /* i o f c */
            const double *p = r->p < 0 ? NULL : j->in[r->p] + d * 3 * H;
            double i = sigm(g[k] + rh[k] + (p ? p[k] * c[k] : 0));
            double f = sigm(g[2 * H + k] + rh[2 * H + k] + (p ? p[2 * H + k] * c[k] : 0));
            c[k] = f * c[k] + i * tanh(g[3 * H + k] + rh[3 * H + k]);
            double o = sigm(g[H + k] + rh[H + k] + (p ? p[H + k] * c[k] : 0));
            g[k] = o * tanh(c[k]); /* the new h, written below: rh still reads the old one */
        }
    }
    if (r->gates == 4)
        for (int64_t k = 0; k < H; k++)
            h[k] = g[k];
    if (r->gates != 3)
        return;
    double *z = g, *rg = g + H; /* gru: z r h */
    for (int64_t k = 0; k < 2 * H; k++)
        g[k] = sigm(g[k] + rh[k]);
    if (!r->lbr) { /* h~ from (r * h) R_h^T + Rb_h */
        double *rhh = rh + 2 * H;
        for (int64_t k = 0; k < H; k++)
            rhh[k] = rg[k] * h[k]; /* reuses rh[2H, 3H) as r * h, then rh[0, H) as the term */
        for (int64_t k = 0; k < H; k++)
            rh[k] = dot(row(j, 2, d, G, 2 * H + k, H), rhh, H) + bias(j, d, G + 2 * H + k);
        for (int64_t k = 0; k < H; k++)
            h[k] = (1 - z[k]) * tanh(g[2 * H + k] + rh[k]) + z[k] * h[k];
        return;
    }
    for (int64_t k = 0; k < H; k++)
        h[k] = (1 - z[k]) * tanh(g[2 * H + k] + rg[k] * rh[2 * H + k]) + z[k] * h[k];
}

/* Direction d over the sequence, into out ([S + extra, dirs, N, H]). */
static void direction(rnn_job *j, int d, xe_tensor *out)
{
    const xe_recurrent *r = j->r;
    int64_t NH = j->N * j->H, D = r->dirs;
    for (int64_t e = 0; e < NH; e++) {
        j->h[e] = r->h0 < 0 ? 0 : j->in[r->h0][d * NH + e];
        j->c[e] = r->c0 < 0 ? 0 : j->in[r->c0][d * NH + e];
    }
    bool back = r->reverse || d == 1;
    for (int64_t k = 0; k < j->S; k++) {
        int64_t t = back ? j->S - 1 - k : k;
        for (int64_t n = 0; n < j->N; n++)
            step(j, d, n, j->in[0] + (t * j->N + n) * j->I);
        for (int64_t e = 0; e < NH; e++)
            xe_store_f64(out->data, out->dtype, (t * D + d) * NH + e, j->h[e]);
    }
    for (int64_t e = 0; e < NH; e++) {
        xe_store_f64(out->data, out->dtype, (j->S * D + d) * NH + e, j->h[e]);
        if (r->gates == 4)
            xe_store_f64(out->data, out->dtype, ((j->S + 1) * D + d) * NH + e, j->c[e]);
    }
}

/* Tensor t read into a new f64 array; NULL on OOM. */
static double *as_f64(const xe_tensor *t)
{
    int64_t n = xe_tensor_numel(t);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; v && i < n; i++)
        v[i] = xe_load_f64(t->data, t->dtype, i);
    return v;
}

static void job_free(rnn_job *j)
{
    for (int k = 0; k < 7; k++)
        free(j->in[k]);
    free(j->g);
    free(j->rh);
    free(j->h);
    free(j->c);
}

static xe_code run_loop(const xe_kernel_args *a, const xe_recurrent *r, xe_status *st)
{
    const xe_shape *x = &a->in[0]->shape;
    rnn_job j = {
        .r = r, .S = x->dims[0], .N = x->dims[1], .I = x->dims[2], .H = a->out->shape.dims[3]};
    j.G = r->gates * j.H;
    bool ok = true;
    for (int k = 0; k < a->n_in; k++)
        ok &= (j.in[k] = as_f64(a->in[k])) != NULL;
    size_t g = (size_t)j.G + 1, nh = (size_t)(j.N * j.H) + 1;
    ok = ok && (j.g = malloc(g * sizeof *j.g)) && (j.rh = malloc(g * sizeof *j.rh)) &&
         (j.h = malloc(nh * sizeof *j.h)) && (j.c = malloc(nh * sizeof *j.c));
    if (ok)
        for (int d = 0; d < r->dirs; d++)
            direction(&j, d, a->out);
    job_free(&j);
    return ok ? XE_OK
              : xe_fail(st, XE_ERR_NOMEM, "node %s (recurrent): out of memory", a->node->name);
}

xe_code xe_cpu_recurrent(const xe_kernel_args *a, xe_status *st)
{
    xe_recurrent r;
    if (xe_recurrent_read(a->node, a->n_in, &r, st) != XE_OK)
        return xe_status_prefix(st, "node %s (recurrent): ", a->node->name);
    if (xe_tensor_numel(a->out) == 0)
        return XE_OK;
    if (a->out->dtype == XE_F32) { /* the engine; what it refuses runs in the loop */
        xe_code c = xe_dnnl_recurrent(a, &r, st);
        if (c != XE_ERR_UNSUPPORTED)
            return c;
        xe_status_clear(st);
    }
    return run_loop(a, &r, st);
}
