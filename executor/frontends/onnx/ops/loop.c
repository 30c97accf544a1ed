/*
 * Loop, unrolled at import: the trip count and the first condition must
 * be known at load (constants, or folded, as they are in a graph built per
 * input size: a TorchScript loop over a sequence's length), and so must
 * each iteration's condition, computed by the body (a constant true, or
 * folded from loop-carried values that fold). Each iteration builds the
 * body in place (ox_build_subgraph) with its inputs bound to the
 * iteration number, the condition and the carried values, which may be
 * sequences (lists of nodes, ops/sequence.c); scan outputs are stacked
 * along a new first axis by one concat (what Loop and Scan share is in
 * ops/unroll.c). At most OX_UNROLL_MAX iterations.
 * Anything else is refused naming why: a trip count or condition computed
 * at run time, a loop without either bound, a scan output of no iteration.
 */
#include <stdlib.h>

#include "onnx_impl.h"

/* The state of one unrolling. */
typedef struct unroll {
    const Onnx__GraphProto *body;
    int n_carried, n_scan;
    ox_carried *state; /* n_carried */
    int *scan;         /* n_scan rows of OX_UNROLL_MAX nodes */
    int64_t iters;
    bool cond;
} unroll;

/* A constant scalar input k read as an integer into v; false when b failed. */
static bool const_scalar(ox_b *b, int k, const char *what, int64_t *v)
{
    const xe_tensor *t = ox_need_const(b, k, what);
    if (!t)
        return false;
    if (xe_tensor_numel(t) != 1)
        return ox_invalid(b, "%s holds %lld values, not one", what, (long long)xe_tensor_numel(t)),
               false;
    if (t->dtype == XE_I64) {
        *v = ((const int64_t *)t->data)[0];
        return true;
    }
    double d = xe_load_f64(t->data, t->dtype, 0);
    if (!(d > -9.2e18 && d < 9.2e18)) /* NaN and what int64 cannot hold */
        return ox_invalid(b, "%s is %g, not an integer int64 holds", what, d), false;
    *v = (int64_t)d;
    return true;
}

/* The body's input and output counts against the node's. */
static bool check_body(ox_b *b, unroll *u)
{
    const Onnx__AttributeProto *a = ox_attr(b, "body");
    u->body = a ? a->g : NULL;
    if (!u->body)
        return ox_invalid(b, "the body is missing"), false;
    u->n_carried = b->n_in - 2;
    u->n_scan = (int)b->np->n_output - u->n_carried;
    if (u->n_carried < 0 || u->n_scan < 0 || u->body->n_input != (size_t)u->n_carried + 2 ||
        u->body->n_output != (size_t)(1 + u->n_carried + u->n_scan))
        return ox_invalid(b,
                          "the body has %zu inputs and %zu outputs; the node %d inputs and %zu "
                          "outputs (the body needs 2 inputs and 1 output more)",
                          u->body->n_input, u->body->n_output, b->n_in, b->np->n_output),
               false;
    return true;
}

/* Body output k's name ("" when it has none). */
static const char *out_name(const unroll *u, size_t k)
{
    return u->body->output[k]->name ? u->body->output[k]->name : "";
}

/* The condition the body computed (output 0), which must be known at load. */
static bool body_cond(ox_b *b, const unroll *u, bool *cond)
{
    ox_carried c;
    if (!ox_body_output(b, u->body, 0, &c))
        return false;
    const xe_node *n = c.node >= 0 ? b->c->g->nodes[c.node] : NULL;
    ox_seq_free(c.seq);
    if (!n || n->op != XE_OP_CONST || xe_tensor_numel(n->value) != 1)
        return ox_unsupported(b,
                              "the condition the body computes ('%s') is not known at load: a "
                              "loop that stops on a value computed at run time is not supported",
                              out_name(u, 0)),
               false;
    *cond = xe_load_f64(n->value->data, n->value->dtype, 0) != 0;
    return true;
}

/* One iteration: the body bound to u's state and built; its outputs become the state. */
static bool iterate(ox_b *b, unroll *u)
{
    if (!ox_body_bind(b, u->body, 0, ox_scalar(b, XE_I64, (double)u->iters), NULL) ||
        !ox_body_bind(b, u->body, 1, ox_scalar(b, XE_BOOL, 1), NULL))
        return false;
    for (int k = 0; k < u->n_carried; k++)
        if (!ox_body_bind(b, u->body, (size_t)k + 2, u->state[k].node, u->state[k].seq))
            return false;
    if (!ox_build_subgraph(b, u->body, "Loop's body") || !body_cond(b, u, &u->cond))
        return false;
    for (int k = 0; k < u->n_carried; k++) {
        ox_carried next;
        if (!ox_body_output(b, u->body, (size_t)k + 1, &next))
            return false;
        ox_seq_free(u->state[k].seq);
        u->state[k] = next;
    }
    for (int k = 0; k < u->n_scan; k++) {
        ox_carried s;
        if (!ox_body_output(b, u->body, (size_t)(1 + u->n_carried + k), &s))
            return false;
        if (s.seq) {
            ox_seq_free(s.seq);
            return ox_unsupported(b, "a scan output that is a sequence is not supported"), false;
        }
        u->scan[(size_t)k * OX_UNROLL_MAX + (size_t)u->iters] = s.node;
    }
    u->iters++;
    return true;
}

/* The node's outputs: the final carried values, then each scan output stacked on a new axis 0. */
static void outputs(ox_b *b, unroll *u)
{
    for (int k = 0; k < u->n_carried && !b->failed; k++) {
        if (u->state[k].seq)
            ox_out_seq(b, k, u->state[k].seq);
        else
            ox_out(b, k, u->state[k].node);
    }
    for (int k = 0; k < u->n_scan && !b->failed; k++) {
        if (!u->iters) {
            ox_unsupported(b,
                           "scan output %d of a loop that runs no iteration is not supported "
                           "(its shape is unknown)",
                           k);
            return;
        }
        ox_out(b, u->n_carried + k, ox_stack(b, u->scan + (size_t)k * OX_UNROLL_MAX, u->iters, 0));
    }
}

/* The trip count (-1: none) and the first condition, both known at load. */
static bool bounds(ox_b *b, int64_t *trips, bool *cond)
{
    int64_t c = 1;
    *trips = -1;
    if (ox_in(b, 0) >= 0 && !const_scalar(b, 0, "the trip count M", trips))
        return false;
    if (ox_in(b, 0) >= 0 && *trips < 0)
        *trips = 0; /* a negative count runs no iteration */
    if (ox_in(b, 1) >= 0 && !const_scalar(b, 1, "the condition", &c))
        return false;
    *cond = c != 0;
    if (*trips > OX_UNROLL_MAX)
        return ox_unsupported(b,
                              "a loop of %lld iterations is not supported (it is unrolled at load, "
                              "at most %d)",
                              (long long)*trips, OX_UNROLL_MAX),
               false;
    return true;
}

xe_code ox_b_loop(ox_b *b)
{
    unroll u = {0};
    int64_t trips;
    if (!check_body(b, &u) || !bounds(b, &trips, &u.cond))
        return ox_status(b);
    u.state = calloc((size_t)u.n_carried + 1, sizeof *u.state);
    u.scan = malloc(((size_t)u.n_scan * OX_UNROLL_MAX + 1) * sizeof *u.scan);
    if (!u.state || !u.scan) {
        xe_fail(&b->st, XE_ERR_NOMEM, "out of memory");
        b->failed = true;
    }
    for (int k = 0; k < u.n_carried && !b->failed; k++) {
        u.state[k].node = ox_in(b, k + 2);
        if (b->seq[k + 2] && !(u.state[k].seq = ox_seq_copy(b->seq[k + 2])))
            xe_fail(&b->st, XE_ERR_NOMEM, "out of memory"), b->failed = true;
        else if (u.state[k].node < 0 && !u.state[k].seq)
            ox_invalid(b, "loop-carried input %d is missing", k);
    }
    int64_t limit = trips < 0 ? OX_UNROLL_MAX : trips;
    while (!b->failed && u.cond && u.iters < limit && iterate(b, &u))
        ;
    if (!b->failed && trips < 0 && u.cond)
        ox_unsupported(b,
                       "a loop without a trip count whose condition still holds after %d "
                       "iterations is not supported (it is unrolled at load)",
                       OX_UNROLL_MAX);
    if (!b->failed)
        outputs(b, &u);
    for (int k = 0; u.state && k < u.n_carried; k++)
        ox_seq_free(u.state[k].seq);
    free(u.state);
    free(u.scan);
    return ox_status(b);
}
