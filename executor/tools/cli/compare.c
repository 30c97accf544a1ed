/*
 * xlac-run --compare: one graph run two ways in one process, op by op (a
 * session that runs no graph pass: the reference) and as the registered
 * passes make it (with libxlac.so preloaded: clustered and compiled), on
 * the same inputs, once per --feed folder (or once). Per output one line
 *
 *   compare y: f32[4,2] max_abs=1.19e-07 max_rel=2.5e-07 ok
 *
 * and the exit status is 3 when any output differs beyond the tolerance:
 * for floats |got - ref| <= atol + rtol * |ref| elementwise (defaults by
 * dtype below, --tolerance R sets both to R), NaN only where the
 * reference has NaN, infinities equal; integers and bools exactly. A
 * shape or dtype that differs is a difference too. This is how a replay
 * folder written by --dump_inputs is checked.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Relative and absolute tolerances of a dtype (--tolerance overrides both for floats). */
static void tolerance(const cli_options *o, xe_dtype dt, double *rtol, double *atol)
{
    if (!xe_dtype_is_float(dt)) {
        *rtol = *atol = 0;
    } else if (o->tolerance > 0) {
        *rtol = *atol = o->tolerance;
    } else if (dt == XE_F16) {
        *rtol = 1e-2, *atol = 1e-3;
    } else if (dt == XE_BF16) {
        *rtol = 1e-2, *atol = 1e-2; /* 8 bits of mantissa */
    } else if (dt == XE_F64) {
        *rtol = 1e-9, *atol = 1e-12;
    } else {
        *rtol = 1e-4, *atol = 1e-5;
    }
}

/* Max errors of got against ref (same type); returns whether every element is within tolerance. */
static bool diff_values(const xe_tensor *ref, const xe_tensor *got, double rtol, double atol,
                        double *max_abs, double *max_rel)
{
    bool ok = true;
    int64_t n = xe_shape_numel(&ref->shape);
    *max_abs = *max_rel = 0;
    for (int64_t i = 0; i < n; i++) {
        double r = xe_load_f64(ref->data, ref->dtype, i), g = xe_load_f64(got->data, got->dtype, i);
        if (isnan(r) || isnan(g)) { /* NaN never passes, unless both are NaN */
            ok &= isnan(r) && isnan(g);
            *max_abs = isnan(r) && isnan(g) ? *max_abs : NAN;
            continue;
        }
        double e = r == g ? 0 : fabs(g - r); /* equal infinities: no error */
        double rel = e == 0 ? 0 : e / fmax(fabs(r), 1e-30);
        ok &= e <= atol + rtol * fabs(r);
        if (!(e <= *max_abs) && !isnan(*max_abs))
            *max_abs = e;
        if (rel > *max_rel)
            *max_rel = rel;
    }
    return ok;
}

static bool same_type(const xe_tensor *a, const xe_tensor *b)
{
    return a->dtype == b->dtype && a->shape.rank == b->shape.rank &&
           !memcmp(a->shape.dims, b->shape.dims, sizeof(int64_t) * (size_t)a->shape.rank);
}

/* One line per output; returns whether all agree. */
static bool compare_outputs(const cli_options *o, const xe_graph *g, xe_tensor *const *ref,
                            xe_tensor *const *got)
{
    bool all = true;
    for (int k = 0; k < g->n_outputs; k++) {
        const char *name = g->nodes[g->outputs[k]]->name;
        char t[128], u[128];
        xe_type rt = {.dtype = ref[k]->dtype, .shape = ref[k]->shape};
        xe_type gt = {.dtype = got[k]->dtype, .shape = got[k]->shape};
        xe_type_str(&rt, t, sizeof t);
        if (!same_type(ref[k], got[k])) {
            printf("compare %s: %s op by op, %s clustered: DIFFERS\n", name, t,
                   xe_type_str(&gt, u, sizeof u));
            all = false;
            continue;
        }
        double rtol, atol, max_abs, max_rel;
        tolerance(o, ref[k]->dtype, &rtol, &atol);
        bool ok = diff_values(ref[k], got[k], rtol, atol, &max_abs, &max_rel);
        printf("compare %s: %s max_abs=%.3g max_rel=%.3g %s", name, t, max_abs, max_rel,
               ok ? "ok\n" : "DIFFERS");
        if (!ok)
            printf(" (tolerance: rtol=%g atol=%g)\n", rtol, atol);
        all &= ok;
    }
    return all;
}

/* Clusters the passes formed (launch nodes: composite nodes with a @cluster annotation). */
static int count_clusters(const xe_graph *g)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++)
        n += g->nodes[i]->body && xe_node_attr_string(g->nodes[i], "@cluster", NULL);
    return n;
}

static void release(xe_tensor **ts, int n)
{
    for (int i = 0; ts && i < n; i++) {
        xe_tensor_release(ts[i]);
        ts[i] = NULL;
    }
}

/* One feed (NULL: none) through both sessions; *agree is cleared when an output differs. */
static xe_code compare_feed(const cli_options *o, xe_session *const s[2], const char *feed,
                            bool *agree, xe_status *st)
{
    const xe_graph *g = xe_session_graph(s[0]);
    int n_out = g->n_outputs;
    xe_tensor **in = calloc((size_t)g->n_inputs + 1, sizeof *in),
              **out = calloc(2 * (size_t)n_out + 1, sizeof *out);
    xe_code c = in && out ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (c == XE_OK)
        c = cli_prepare_inputs(o, g, feed, in, st);
    for (int k = 0; k < 2 && c == XE_OK; k++)
        c = xe_session_run(s[k], in, out + k * n_out, st);
    if (c == XE_OK && feed && o->n_feeds > 1)
        printf("compare feed=%s\n", feed);
    if (c == XE_OK)
        *agree &= compare_outputs(o, g, out, out + n_out);
    release(in, g->n_inputs);
    release(out, 2 * n_out);
    free(in);
    free(out);
    return c;
}

/* The two sessions of g (taken); NULL-filled on error. */
static xe_code make_sessions(const cli_options *o, xe_graph *g, xe_session *s[2], xe_status *st)
{
    xe_graph *copy = xe_graph_clone(g, st);
    if (!copy) {
        xe_graph_destroy(g);
        return st->code;
    }
    xe_session_options so = {.place = o->place,
                             .log_placement = o->log_placement,
                             .no_passes = true,
                             .threads = o->threads};
    s[0] = xe_session_new(g, &so, st);
    so.no_passes = false;
    s[1] = s[0] ? xe_session_new(copy, &so, st) : (xe_graph_destroy(copy), NULL);
    return s[0] && s[1] ? XE_OK : st->code;
}

int cli_compare(const cli_options *o, xe_graph *g, xe_status *st)
{
    if (xe_graph_pass_count() == 0) {
        xe_graph_destroy(g);
        xe_fail(st, XE_ERR_USAGE,
                "--compare runs the graph op by op and clustered: it needs the xlac plugin "
                "(LD_PRELOAD=libxlac.so XLAC_AUTO_JIT=2)");
        return -1;
    }
    xe_session *s[2] = {NULL, NULL};
    xe_code c = make_sessions(o, g, s, st);
    int clusters = c == XE_OK ? count_clusters(xe_session_graph(s[1])) : 0;
    if (c == XE_OK && clusters == 0)
        c = xe_fail(st, XE_ERR_USAGE,
                    "--compare: the plugin formed no cluster in %s (is XLAC_AUTO_JIT=1 or 2 "
                    "set?)",
                    o->graph);
    if (c == XE_OK)
        printf("compare: %s op by op against %d cluster(s)\n", o->graph, clusters);
    bool agree = true;
    for (int k = 0; k < (o->n_feeds ? o->n_feeds : 1) && c == XE_OK; k++)
        c = compare_feed(o, s, o->n_feeds ? o->feeds[k] : NULL, &agree, st);
    if (c == XE_OK)
        c = cli_check_stdout(st);
    xe_session_destroy(s[0]);
    xe_session_destroy(s[1]);
    if (c != XE_OK)
        return -1;
    if (!agree)
        fprintf(stderr, "xlac-run: --compare: the clustered run differs from the op-by-op run "
                        "beyond tolerance\n");
    return agree ? 0 : 3;
}
