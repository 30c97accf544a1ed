/*
 * The recurrent op's attributes and shape function (recurrent.h): every
 * operand's shape is checked against x, w and r, so the kernels can index
 * without checking.
 */
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "recurrent.h"

/* String attribute `name` as its index in names (count n), dflt when absent; -1 when unknown. */
static int pick(const xe_node *n, const char *name, const char *const *names, int count)
{
    const char *s = xe_node_attr_string(n, name, names[0]);
    for (int k = 0; k < count; k++)
        if (!strcmp(s, names[k]))
            return k;
    return -1;
}

xe_code xe_recurrent_read(const xe_node *n, int n_in, xe_recurrent *r, xe_status *st)
{
    static const char *const cells[] = {"lstm", "gru", "rnn"};
    static const char *const dirs[] = {"forward", "reverse", "bidirectional"};
    static const char *const acts[] = {"tanh", "relu", "sigmoid"};
    static const int gates[] = {4, 3, 1};
    int cell = pick(n, "cell", cells, 3), dir = pick(n, "direction", dirs, 3);
    int act = pick(n, "activation", acts, 3);
    if (cell < 0)
        return xe_fail(st, XE_ERR_GRAPH, "cell must be \"lstm\", \"gru\" or \"rnn\"");
    if (dir < 0)
        return xe_fail(st, XE_ERR_GRAPH,
                       "direction must be \"forward\", \"reverse\" or \"bidirectional\"");
    if (act < 0)
        return xe_fail(st, XE_ERR_GRAPH, "activation must be \"tanh\", \"relu\" or \"sigmoid\"");
    *r = (xe_recurrent){.gates = gates[cell],
                        .dirs = dir == 2 ? 2 : 1,
                        .reverse = dir == 1,
                        .lbr = xe_node_attr_bool(n, "linear_before_reset", false),
                        .act = (xe_rnn_act)act,
                        .b = -1,
                        .h0 = -1,
                        .c0 = -1,
                        .p = -1,
                        .extra = cell == 0 ? 2 : 1};
    if (r->gates != 3 && xe_node_attr(n, "linear_before_reset"))
        return xe_fail(st, XE_ERR_GRAPH, "linear_before_reset is for cell=\"gru\"");
    if (r->gates != 1 && xe_node_attr(n, "activation"))
        return xe_fail(st, XE_ERR_GRAPH, "activation is for cell=\"rnn\"");
    int k = 3;
    static const char *const opt[] = {"bias", "initial_h", "initial_c", "peepholes"};
    int *at[] = {&r->b, &r->h0, &r->c0, &r->p};
    for (int i = 0; i < 4; i++)
        if (xe_node_attr_bool(n, opt[i], false)) {
            if (i >= 2 && r->gates != 4)
                return xe_fail(st, XE_ERR_GRAPH, "%s is for cell=\"lstm\"", opt[i]);
            *at[i] = k++;
        }
    if (n_in != k)
        return xe_fail(st, XE_ERR_GRAPH, "takes %d inputs with these attributes, got %d", k, n_in);
    return XE_OK;
}

/* Whether dim a (maybe unknown) can be b (maybe unknown). */
static bool fits(int64_t a, int64_t b)
{
    return a < 0 || b < 0 || a == b;
}

/* Operand k's shape against dims (rank n); the message names it. */
static xe_code check(const xe_type *in, int k, const char *what, const int64_t *dims, int n,
                     xe_status *st)
{
    const xe_shape *s = &in[k].shape;
    bool ok = s->rank == n;
    for (int d = 0; ok && d < n; d++)
        ok = fits(s->dims[d], dims[d]);
    if (ok && in[k].dtype == in[0].dtype)
        return XE_OK;
    char want[96] = "", *p = want;
    for (int d = 0; d < n; d++)
        p += snprintf(p, (size_t)(want + sizeof want - p), "%s%lld", d ? ", " : "",
                      (long long)dims[d]);
    return xe_fail(st, XE_ERR_GRAPH, "%s must be %s [%s] (-1: any), got %s of rank %d", what,
                   xe_dtype_name(in[0].dtype), want, xe_dtype_name(in[k].dtype), s->rank);
}

/* A G*hidden dim as hidden, unknown when g is. */
static int64_t per_gate(int64_t g, int gates)
{
    return g < 0 ? XE_DIM_UNKNOWN : g / gates;
}

xe_code xe_infer_recurrent(const xe_node *n, const xe_type *in, int n_in, xe_type *out,
                           xe_status *st)
{
    xe_recurrent r;
    if (xe_recurrent_read(n, n_in, &r, st) != XE_OK)
        return st->code;
    xe_dtype dt = in[0].dtype;
    if (dt != XE_F32 && dt != XE_F64)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "x must be f32 or f64, got %s", xe_dtype_name(dt));
    if (in[0].shape.rank != 3 || in[2].shape.rank != 3)
        return xe_fail(st, XE_ERR_GRAPH,
                       "x and r must be 3-D [seq, batch, input], [dirs, %d * hidden, hidden]",
                       r.gates);
    const int64_t *x = in[0].shape.dims;
    int64_t hid = in[2].shape.dims[2];
    if (hid < 0)
        hid = per_gate(in[2].shape.dims[1], r.gates);
    if (hid == 0 || (in[2].shape.dims[1] >= 0 && in[2].shape.dims[1] % r.gates))
        return xe_fail(st, XE_ERR_GRAPH, "r's dim 1 must be %d * hidden, hidden at least 1",
                       r.gates);
    int64_t G = hid < 0 ? XE_DIM_UNKNOWN : r.gates * hid, D = r.dirs;
    int64_t wd[3] = {D, G, x[2]}, rd[3] = {D, G, hid}, bd[2] = {D, G < 0 ? G : 2 * G};
    int64_t sd[3] = {D, x[1], hid}, pd[2] = {D, hid < 0 ? hid : 3 * hid};
    if (check(in, 1, "w", wd, 3, st) != XE_OK || check(in, 2, "r", rd, 3, st) != XE_OK ||
        (r.b >= 0 && check(in, r.b, "b", bd, 2, st) != XE_OK) ||
        (r.h0 >= 0 && check(in, r.h0, "initial_h", sd, 3, st) != XE_OK) ||
        (r.c0 >= 0 && check(in, r.c0, "initial_c", sd, 3, st) != XE_OK) ||
        (r.p >= 0 && check(in, r.p, "p", pd, 2, st) != XE_OK))
        return st->code;
    int64_t batch = x[1] >= 0 ? x[1] : r.h0 >= 0 ? in[r.h0].shape.dims[1] : x[1];
    *out = (xe_type){
        dt, {.rank = 4, .dims = {x[0] < 0 ? XE_DIM_UNKNOWN : x[0] + r.extra, D, batch, hid}}};
    return XE_OK;
}
