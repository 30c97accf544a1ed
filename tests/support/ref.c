/*
 * Shared helpers for differential op tests (see ref.h). The harness runs a
 * kernel exactly as the executor would (inferred output type, kernel args,
 * the node's run counter) but into a buffer with guard bytes around it,
 * and also checks that the kernel left its inputs alone.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/ref.h"

const xe_dtype ref_all_dtypes[6] = {XE_F32, XE_F64, XE_F16, XE_I32, XE_I64, XE_BOOL};

/* ---- deterministic random source (splitmix64) --------------------------- */

static uint64_t ref_state = 0x9E3779B97F4A7C15ull;

void ref_seed(uint64_t seed)
{
    ref_state = seed ^ 0x9E3779B97F4A7C15ull;
}

static uint64_t next_u64(void)
{
    uint64_t z = (ref_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double ref_urand(void)
{
    return (double)(next_u64() >> 11) * (1.0 / 9007199254740992.0);
}

int64_t ref_irand(int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
    return span == 0 ? (int64_t)next_u64() : (int64_t)((uint64_t)lo + next_u64() % span);
}

/* ---- shapes and tensors ---------------------------------------------------- */

xe_shape ref_shape(int rank, const int64_t *dims)
{
    return xe_shape_make(rank, dims);
}

xe_shape ref_random_shape(int max_rank, int64_t max_dim, bool allow_zero)
{
    xe_shape s = {.rank = (int)ref_irand(0, max_rank)};
    for (int d = 0; d < s.rank; d++) {
        double u = ref_urand();
        s.dims[d] = allow_zero && u < 0.08 ? 0 : u < 0.3 ? 1 : ref_irand(1, max_dim);
    }
    return s;
}

xe_shape ref_broadcast_partner(const xe_shape *s)
{
    xe_shape p = {.rank = s->rank - (int)(s->rank > 0 && ref_urand() < 0.3)};
    for (int d = 0; d < p.rank; d++)
        p.dims[d] = ref_urand() < 0.3 ? 1 : s->dims[d + s->rank - p.rank];
    return p;
}

xe_shape ref_broadcast(const xe_shape *a, const xe_shape *b)
{
    xe_shape r;
    char sa[128], sb[128];
    cr_assert(xe_shape_broadcast(a, b, &r), "shapes %s and %s do not broadcast",
              xe_shape_str(a, sa, sizeof sa), xe_shape_str(b, sb, sizeof sb));
    return r;
}

static xe_tensor *new_cpu(xe_dtype dt, const xe_shape *s)
{
    xe_status st;
    xe_status_clear(&st);
    xe_tensor *t = xe_tensor_new(dt, s, XE_DEV_CPU, &st);
    cr_assert_not_null(t, "xe_tensor_new: %s", st.msg);
    return t;
}

xe_tensor *ref_random_tensor(xe_dtype dt, const xe_shape *s, double lo, double hi)
{
    xe_tensor *t = new_cpu(dt, s);
    for (int64_t i = 0; i < xe_tensor_numel(t); i++) {
        double v = lo + (hi - lo) * ref_urand();
        if (dt == XE_BOOL)
            v = ref_urand() < 0.5;
        else if (!xe_dtype_is_float(dt))
            v = floor(v);
        xe_store_f64(t->data, dt, i, v);
    }
    return t;
}

xe_tensor *ref_tensor_from(xe_dtype dt, const xe_shape *s, const double *vals)
{
    xe_tensor *t = new_cpu(dt, s);
    for (int64_t i = 0; i < xe_tensor_numel(t); i++)
        xe_store_f64(t->data, dt, i, vals[i]);
    return t;
}

xe_tensor *ref_zeros(xe_dtype dt, const xe_shape *s)
{
    xe_tensor *t = new_cpu(dt, s);
    memset(t->data, 0, t->nbytes);
    return t;
}

/* ---- guarded output buffers ------------------------------------------------ */

xe_tensor *ref_guarded_new(ref_guarded *g, xe_dtype dt, const xe_shape *s)
{
    xe_status st;
    xe_status_clear(&st);
    int64_t n = xe_shape_numel(s);
    cr_assert(n >= 0, "guarded buffer needs a known shape");
    g->bytes = (size_t)n * xe_dtype_size(dt);
    g->raw = malloc(g->bytes + 2 * REF_GUARD_BYTES);
    cr_assert_not_null(g->raw, "out of memory");
    memset(g->raw, REF_GUARD_FILL, g->bytes + 2 * REF_GUARD_BYTES);
    g->t = xe_tensor_wrap(dt, s, XE_DEV_CPU, g->raw + REF_GUARD_BYTES, &st);
    cr_assert_not_null(g->t, "xe_tensor_wrap: %s", st.msg);
    return g->t;
}

long ref_guarded_damage(const ref_guarded *g)
{
    for (long k = 0; k < REF_GUARD_BYTES; k++) {
        if (g->raw[REF_GUARD_BYTES - 1 - k] != REF_GUARD_FILL)
            return -(k + 1);
        if (g->raw[REF_GUARD_BYTES + g->bytes + (size_t)k] != REF_GUARD_FILL)
            return k + 1;
    }
    return 0;
}

void ref_guarded_free(ref_guarded *g)
{
    xe_tensor_release(g->t);
    free(g->raw);
    *g = (ref_guarded){0};
}

/* ---- one-node harness ------------------------------------------------------- */

xe_node *ref_op_new_types(ref_op *o, int op, const xe_type *in, int n_in)
{
    xe_status st;
    xe_status_clear(&st);
    int idx[16];
    cr_assert(n_in <= 16, "at most 16 inputs");
    o->g = xe_graph_new("ref.xg");
    cr_assert_not_null(o->g, "xe_graph_new");
    for (int k = 0; k < n_in; k++) {
        char name[16];
        snprintf(name, sizeof name, "i%d", k);
        idx[k] = xe_graph_add_input(o->g, name, &in[k], &st);
        cr_assert(idx[k] >= 0, "xe_graph_add_input: %s", st.msg);
    }
    int r = xe_graph_add_node(o->g, "r", op, idx, n_in, &st);
    cr_assert(r >= 0, "xe_graph_add_node: %s", st.msg);
    cr_assert_eq(xe_graph_add_output(o->g, r, &st), XE_OK, "%s", st.msg);
    o->node = o->g->nodes[r];
    return o->node;
}

xe_node *ref_op_new(ref_op *o, int op, xe_tensor *const *in, int n_in)
{
    xe_type types[16];
    cr_assert(n_in <= 16, "at most 16 inputs");
    for (int k = 0; k < n_in; k++)
        types[k] = (xe_type){in[k]->dtype, in[k]->shape};
    return ref_op_new_types(o, op, types, n_in);
}

xe_code ref_op_infer(ref_op *o, xe_status *st)
{
    xe_status_clear(st);
    return xe_node_infer(o->g, o->node, st);
}

/* Copies of the inputs' bytes, to check that the kernel did not write them. */
static unsigned char **snapshot_inputs(xe_tensor *const *in, int n_in)
{
    unsigned char **snap = calloc((size_t)(n_in ? n_in : 1), sizeof *snap);
    cr_assert_not_null(snap, "out of memory");
    for (int k = 0; k < n_in; k++) {
        snap[k] = malloc(in[k]->nbytes ? in[k]->nbytes : 1);
        cr_assert_not_null(snap[k], "out of memory");
        if (in[k]->nbytes)
            memcpy(snap[k], in[k]->data, in[k]->nbytes);
    }
    return snap;
}

/* Frees the snapshot; returns the first input whose bytes changed, or -1. */
static int release_snapshot(unsigned char **snap, xe_tensor *const *in, int n_in)
{
    int changed = -1;
    for (int k = 0; k < n_in; k++) {
        if (changed < 0 && in[k]->nbytes && memcmp(snap[k], in[k]->data, in[k]->nbytes) != 0)
            changed = k;
        free(snap[k]);
    }
    free(snap);
    return changed;
}

/* Runs the kernel with out (NULL for data-dependent ops); *ret gets their output. */
static xe_code call_kernel(ref_op *o, xe_tensor *const *in, int n_in, xe_tensor *out,
                           xe_tensor **ret, uint64_t *state, xe_status *st)
{
    xe_kernel_fn fn = xe_op_kernel(xe_op_get(o->node->op), XE_DEV_CPU);
    if (!fn)
        return xe_fail(st, XE_ERR_UNSUPPORTED, "%s has no CPU kernel", xe_op_name(o->node->op));
    xe_kernel_args a = {.graph = o->g, .node = o->node, .n_in = n_in, .in = in, .out = out,
                        .out_ret = ret, .state = state};
    unsigned char **snap = snapshot_inputs(in, n_in);
    xe_code c = fn(&a, st);
    int changed = release_snapshot(snap, in, n_in);
    if (c == XE_OK && changed >= 0)
        c = xe_fail(st, XE_ERR_RUNTIME, "%s wrote into its input %d", xe_op_name(o->node->op),
                    changed);
    return c;
}

static xe_tensor *run_data_dependent(ref_op *o, xe_tensor *const *in, int n_in, uint64_t *state,
                                     xe_status *st)
{
    xe_tensor *ret = NULL;
    if (call_kernel(o, in, n_in, NULL, &ret, state, st) != XE_OK) {
        xe_tensor_release(ret);
        return NULL;
    }
    if (!ret)
        xe_fail(st, XE_ERR_RUNTIME, "%s returned no output", xe_op_name(o->node->op));
    return ret;
}

xe_tensor *ref_cast(xe_tensor *src, xe_dtype to)
{
    ref_op o;
    xe_status st = {0};
    ref_op_new(&o, XE_OP_CAST, &src, 1);
    cr_assert_eq(xe_node_set_dtype(o.node, "to", to, &st), XE_OK, "%s", st.msg);
    xe_tensor *r = ref_op_run(&o, &src, 1, NULL, &st);
    cr_assert_not_null(r, "cast %s to %s: %s", xe_dtype_name(src->dtype), xe_dtype_name(to), st.msg);
    cr_assert_eq(r->dtype, to);
    ref_op_free(&o);
    return r;
}

xe_tensor *ref_op_run(ref_op *o, xe_tensor *const *in, int n_in, uint64_t *state, xe_status *st)
{
    uint64_t local = 0;
    if (!state)
        state = &local;
    if (ref_op_infer(o, st) != XE_OK)
        return NULL;
    if (xe_op_get(o->node->op)->flags & XE_OPF_DATA_DEPENDENT_SHAPE)
        return run_data_dependent(o, in, n_in, state, st);
    if (!xe_shape_is_known(&o->node->type.shape)) {
        xe_fail(st, XE_ERR_USAGE, "ref_op_run: the output shape is not known");
        return NULL;
    }
    ref_guarded gb;
    ref_guarded_new(&gb, o->node->type.dtype, &o->node->type.shape);
    xe_tensor *copy = NULL, *ret = NULL;
    if (call_kernel(o, in, n_in, gb.t, &ret, state, st) == XE_OK) {
        long dmg = ref_guarded_damage(&gb);
        if (dmg)
            xe_fail(st, XE_ERR_RUNTIME, "%s wrote %s its output (guard byte %ld)",
                    xe_op_name(o->node->op), dmg < 0 ? "before" : "past", dmg < 0 ? -dmg : dmg);
        else
            copy = xe_tensor_to_device(gb.t, XE_DEV_CPU, st);
    }
    xe_tensor_release(ret);
    ref_guarded_free(&gb);
    return copy;
}

void ref_op_free(ref_op *o)
{
    xe_graph_destroy(o->g);
    *o = (ref_op){0};
}

/* ---- references and comparison ------------------------------------------------ */

double ref_load_bcast(const xe_tensor *t, const xe_shape *out, int64_t i)
{
    int64_t off = 0, mul = 1;
    for (int d = out->rank - 1; d >= 0; d--) {
        int64_t idx = i % out->dims[d];
        i /= out->dims[d];
        int td = d - (out->rank - t->shape.rank);
        if (td >= 0) {
            if (t->shape.dims[td] != 1)
                off += idx * mul;
            mul *= t->shape.dims[td];
        }
    }
    return xe_load_f64(t->data, t->dtype, off);
}

double ref_round(xe_dtype dt, double v)
{
    switch (dt) {
    case XE_F32: return (double)(float)v;
    case XE_F16: return (double)xe_f16_to_f32(xe_f32_to_f16((float)v));
    case XE_I32: return (double)(int32_t)(uint32_t)(uint64_t)(int64_t)v;
    case XE_I64: return (double)(int64_t)v;
    case XE_BOOL: return v != 0;
    default: return v;
    }
}

double ref_tolerance(xe_dtype dt)
{
    switch (dt) {
    case XE_F64: return 1e-12;
    case XE_F32: return 1e-5;
    case XE_F16: return 1e-2;
    default: return 0;
    }
}

bool ref_close(xe_dtype dt, double got, double want, double scale)
{
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got))
        return got == want;
    double tol = ref_tolerance(dt);
    if (tol == 0)
        return got == want;
    return fabs(got - want) <= tol * fmax(fabs(want), scale);
}

void ref_expect(const char *what, xe_dtype dt, int64_t i, double got, double want, double scale)
{
    cr_assert(ref_close(dt, got, want, scale), "%s[%lld] (%s): got %.17g, want %.17g", what,
              (long long)i, xe_dtype_name(dt), got, want);
}

void ref_expect_tensor(const char *what, const xe_tensor *got, const double *want,
                       const double *scale)
{
    for (int64_t i = 0; i < xe_tensor_numel(got); i++)
        ref_expect(what, got->dtype, i, xe_load_f64(got->data, got->dtype, i), want[i],
                   scale ? scale[i] : 1.0);
}

void ref_expect_same_output(const xe_tensor *got, const xe_tensor *want, double tol, const char *text, int out)
{
    cr_assert_eq(got->dtype, want->dtype, "output %d dtype differs\n%s", out, text);
    cr_assert(xe_shape_equal(&got->shape, &want->shape), "output %d shape differs\n%s", out, text);
    int64_t n = xe_tensor_numel(want);
    double scale = 1;
    for (int64_t i = 0; i < n; i++) {
        double w = xe_load_f64(want->data, want->dtype, i);
        if (isfinite(w) && fabs(w) > scale)
            scale = fabs(w);
    }
    for (int64_t i = 0; i < n; i++) {
        double g = xe_load_f64(got->data, got->dtype, i), w = xe_load_f64(want->data, want->dtype, i);
        bool ok = isnan(w) || isnan(g)   ? isnan(w) && isnan(g)
                  : isinf(w) || isinf(g) ? g == w
                                         : fabs(g - w) <= tol * scale;
        cr_assert(ok, "output %d element %lld: got %.17g want %.17g\n%s", out, (long long)i, g, w, text);
    }
}
