/*
 * What ahead-of-time code calls back into the executor for (capi.h): a
 * program that xlac-compile generated for a whole graph runs its fused
 * kernels itself and hands its matmul steps to the executor's own CPU
 * kernel (BLAS, the same one the per-op run and the JIT use), on the
 * caller's host buffers, wrapped, never copied. An op between clusters
 * (a per-op step) is a one-node graph in .xg text that the generated code
 * holds; its session is made on the first call and kept for the process.
 */

#define XE_AOT_MAX_IO 64
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "xlac/capi.h"
#include "xlac/xlac.h"

static bool shape_of(int rank, const int64_t *dims, xe_shape *s)
{
    if (rank < 0 || rank > XE_MAX_RANK)
        return false;
    s->rank = rank;
    memcpy(s->dims, dims, sizeof *dims * (size_t)rank);
    return true;
}

int xe_aot_matmul(int dtype, const void *a, int a_rank, const int64_t *a_dims, int transpose_a,
                  const void *b, int b_rank, const int64_t *b_dims, int transpose_b, void *c,
                  int c_rank, const int64_t *c_dims)
{
    xe_status st;
    xe_status_clear(&st);
    xe_shape sa, sb, sc;
    if (dtype < 0 || dtype >= XE_DTYPE_COUNT || !shape_of(a_rank, a_dims, &sa) ||
        !shape_of(b_rank, b_dims, &sb) || !shape_of(c_rank, c_dims, &sc))
        return XE_ERR_USAGE;
    xe_tensor *in[2] = {xe_tensor_wrap((xe_dtype)dtype, &sa, XE_DEV_CPU, (void *)a, &st),
                        xe_tensor_wrap((xe_dtype)dtype, &sb, XE_DEV_CPU, (void *)b, &st)};
    xe_tensor *out = xe_tensor_wrap((xe_dtype)dtype, &sc, XE_DEV_CPU, c, &st);
    xe_attr attrs[2] = {
        {.name = (char *)"transpose_a", .kind = XE_ATTR_BOOL, .i = transpose_a != 0},
        {.name = (char *)"transpose_b", .kind = XE_ATTR_BOOL, .i = transpose_b != 0}};
    xe_node node = {.name = (char *)"aot_matmul",
                    .op = XE_OP_MATMUL,
                    .n_inputs = 2,
                    .n_attrs = 2,
                    .attrs = attrs};
    xe_kernel_args k = {.node = &node, .n_in = 2, .in = in, .out = out};
    xe_code code = in[0] && in[1] && out ? xe_cpu_matmul(&k, &st) : st.code;
    xe_tensor_release(in[0]);
    xe_tensor_release(in[1]);
    xe_tensor_release(out);
    return (int)code;
}

/* Sessions of generated code's per-op steps are made and run under one lock (they are small). */
static pthread_mutex_t aot_lock = PTHREAD_MUTEX_INITIALIZER;

/* The session of a per-op step's graph text, made on first use (no graph pass: it stays per op). */
static xe_session *step_session(void **handle, const char *text, xe_status *st)
{
    if (*handle)
        return *handle;
    xe_graph *g = xe_parse_string(text, "<aot step>", st);
    xe_session_options so = {.place = XE_PLACE_CPU, .no_passes = true};
    xe_session *s = g ? xe_session_new(g, &so, st) : NULL;
    *handle = s;
    return s;
}

/* Runs the step's session on the caller's buffers (wrapped), copying its outputs into out. */
static xe_code step_run(xe_session *s, void *const *in, void *const *out, xe_status *st)
{
    const xe_graph *g = xe_session_graph(s);
    xe_tensor *ins[XE_AOT_MAX_IO] = {NULL}, *outs[XE_AOT_MAX_IO] = {NULL};
    if (g->n_inputs > XE_AOT_MAX_IO || g->n_outputs > XE_AOT_MAX_IO)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "a per-op step with more than %d inputs or outputs",
                       XE_AOT_MAX_IO);
    xe_code c = XE_OK;
    for (int k = 0; c == XE_OK && k < g->n_inputs; k++) {
        const xe_type *t = &g->nodes[g->inputs[k]]->type;
        if (!(ins[k] = xe_tensor_wrap(t->dtype, &t->shape, XE_DEV_CPU, in[k], st)))
            c = st->code;
    }
    if (c == XE_OK)
        c = xe_session_run(s, ins, outs, st);
    for (int k = 0; c == XE_OK && k < g->n_outputs; k++)
        memcpy(out[k], outs[k]->data, outs[k]->nbytes);
    for (int k = 0; k < XE_AOT_MAX_IO; k++) {
        xe_tensor_release(ins[k]);
        xe_tensor_release(outs[k]);
    }
    return c;
}

int xe_aot_graph_run(void **handle, const char *text, void *const *in, void *const *out)
{
    xe_status st;
    xe_status_clear(&st);
    pthread_mutex_lock(&aot_lock);
    xe_session *s = step_session(handle, text, &st);
    xe_code c = s ? step_run(s, in, out, &st) : st.code;
    pthread_mutex_unlock(&aot_lock);
    if (c != XE_OK)
        fprintf(stderr, "xlac: ahead-of-time per-op step failed: %s\n", st.msg);
    return (int)c;
}
