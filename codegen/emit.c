/*
 * The emitter: one walk over a fusion plan that prints the program, C11
 * with OpenMP or CUDA C++, from the same code. What differs between the
 * two is data in a dialect (kernel signature, loop headers, reductions,
 * restrict); the scalar expressions and index maps are printed by the
 * same functions for both, so the CPU tests exercise the arithmetic the
 * GPU runs. Every generated program starts with the text of
 * executor/scalar.h, the arithmetic the per-op kernels use.
 *
 * Values are computed at a symbolic index: an idx holds, for each dim of
 * the value's shape, the name of a local variable (or "0"), and the flat
 * offset when it is known. Shape ops only rewrite the idx (transpose
 * permutes it, broadcast pins dims to 0, slice adds offsets, reshape goes
 * through the flat offset), so no view is ever materialised.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_text.h"
#include "plan.h"
#include "xlac/op.h"

#define MAX_MEMO 1024

typedef struct idx {
    int rank;
    char d[XE_MAX_RANK][24]; /* per dim: a variable or literal */
    char flat[24];           /* flat offset in the value's shape, "" if unknown */
} idx;

typedef struct memo {
    int node;
    char key[200];
    char var[16];
} memo;

typedef struct em {
    char *buf;
    size_t len, cap;
    bool oom, unsupported;
    char why[160];
    const xg_plan *p;
    bool cuda;
    bool narrow; /* index math in 32 bits (xg_idx is int): CUDA, fixed shapes, every tensor under 2^30 */
    int var;
    int n_memo;
    memo m[MAX_MEMO];
    char (*rowvar)[16]; /* row kernels: the register holding a node's value for the current row */
    /* Row kernels on the CPU: the pass being printed (phase, its element's idx, -1 / NULL
       outside one) and the row cache (row_cache_plan): per node, the phases that compute
       it at that element (found by a dry run), and the phase that keeps it (-1: none). */
    int row_ph, row_x;
    const idx *row_ix;
    bool rc_dry;
    unsigned *rc_phases;
    int *rc_first;
} em;

static void out(em *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The suffix of an index literal: none in 32-bit index math, where LL would widen it again. */
static const char *LL(const em *e)
{
    return e->narrow ? "" : "LL";
}

/* The one printf-like sink of all generated text. */
static void out(em *e, const char *fmt, ...)
{
    if (e->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(e->buf + e->len, e->cap - e->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            e->oom = true;
            return;
        }
        if (e->len + (size_t)n < e->cap) {
            e->len += (size_t)n;
            return;
        }
        size_t cap = (e->cap + (size_t)n) * 2 + 4096;
        char *b = realloc(e->buf, cap);
        if (!b) {
            e->oom = true;
            return;
        }
        e->buf = b;
        e->cap = cap;
    }
}

static void unsupported(em *e, const xe_node *n, const char *why)
{
    if (!e->unsupported)
        snprintf(e->why, sizeof e->why, "node %s (%s): %s", n->name, xe_op_name(n->op), why);
    e->unsupported = true;
}

/* ---- types and sizes ---------------------------------------------------------- */

static const char *store_type(xe_dtype dt)
{
    static const char *const t[] = {[XE_F32] = "float", [XE_F64] = "double", [XE_F16] = "uint16_t",
                                    [XE_I32] = "int32_t", [XE_I64] = "int64_t", [XE_BOOL] = "uint8_t"};
    return t[dt];
}

/* Type a value is computed in: f16 computes in float. */
static const char *value_type(xe_dtype dt)
{
    return dt == XE_F16 ? "float" : store_type(dt);
}

/* Suffix of the scalar.h function variants: f32 for f16/f32, f64, i32, i64. */
static const char *sfx(xe_dtype dt)
{
    switch (dt) {
    case XE_F64: return "f64";
    case XE_I32: return "i32";
    case XE_I64: return "i64";
    default: return "f32";
    }
}

/* Dim d of node's shape: a literal, or S[k] in shape-generic programs. */
static void dim_text(const em *e, int node, int d, char *buf, size_t len)
{
    if (e->p->generic)
        snprintf(buf, len, "S[%d]", e->p->soff[node] + d);
    else
        snprintf(buf, len, "%lld%s", (long long)e->p->types[node].shape.dims[d], LL(e));
}

static const xe_shape *shape_of(const em *e, int node)
{
    return &e->p->types[node].shape;
}

static void new_var(em *e, char *name, size_t len)
{
    snprintf(name, len, "v%d", e->var++);
}

/* int64_t vN = expr; */
static void let_index(em *e, char *name, size_t len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void let_index(em *e, char *name, size_t len, const char *fmt, ...)
{
    char expr[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(expr, sizeof expr, fmt, ap);
    va_end(ap);
    new_var(e, name, len);
    out(e, "    xg_idx %s = %s;\n", name, expr);
}

/* Product of dims [from, rank) of node's shape, as text ("1" when empty). */
static void stride_text(const em *e, int node, int from, char *buf, size_t len)
{
    const xe_shape *s = shape_of(e, node);
    if (!e->p->generic) {
        int64_t st = 1;
        for (int d = from; d < s->rank; d++)
            st *= s->dims[d];
        snprintf(buf, len, "%lld%s", (long long)st, LL(e));
        return;
    }
    snprintf(buf, len, "1");
    for (int d = from; d < s->rank; d++) {
        size_t u = strlen(buf);
        snprintf(buf + u, len - u, "*S[%d]", e->p->soff[node] + d);
    }
}

/* ---- index maps ---------------------------------------------------------------- */

/* Multi-index of node's shape from a flat offset variable. */
static void idx_from_flat(em *e, int node, const char *flat, idx *ix)
{
    const xe_shape *s = shape_of(e, node);
    ix->rank = s->rank;
    snprintf(ix->flat, sizeof ix->flat, "%s", flat);
    for (int d = 0; d < s->rank; d++) {
        char st[256], dim[32];
        if (s->dims[d] == 1) {
            snprintf(ix->d[d], sizeof ix->d[d], "0");
            continue;
        }
        stride_text(e, node, d + 1, st, sizeof st);
        dim_text(e, node, d, dim, sizeof dim);
        if (d == 0)
            let_index(e, ix->d[d], sizeof ix->d[d], "%s / (%s)", flat, st);
        else
            let_index(e, ix->d[d], sizeof ix->d[d], "(%s / (%s)) %% %s", flat, st, dim);
    }
}

/* Flat offset of an idx in node's shape (a variable). */
static void flat_of(em *e, int node, const idx *ix, char *buf, size_t len)
{
    if (ix->flat[0]) {
        snprintf(buf, len, "%s", ix->flat);
        return;
    }
    char expr[1024] = "0";
    for (int d = 0; d < ix->rank; d++) {
        if (!strcmp(ix->d[d], "0"))
            continue;
        char st[256];
        stride_text(e, node, d + 1, st, sizeof st);
        size_t u = strlen(expr);
        snprintf(expr + u, sizeof expr - u, " + %s * (%s)", ix->d[d], st);
    }
    let_index(e, buf, len, "%s", expr);
}

/* The idx of an operand broadcast (numpy rules) to the consumer's idx. */
static void idx_broadcast(const em *e, int consumer, int operand, const idx *ix, idx *r)
{
    const xe_shape *so = shape_of(e, operand), *sc = shape_of(e, consumer);
    r->rank = so->rank;
    r->flat[0] = '\0';
    if (xe_shape_equal(so, sc))
        snprintf(r->flat, sizeof r->flat, "%s", ix->flat);
    for (int d = 0; d < so->rank; d++) {
        int cd = d + (sc->rank - so->rank);
        if (so->dims[d] == 1)
            snprintf(r->d[d], sizeof r->d[d], "0");
        else
            snprintf(r->d[d], sizeof r->d[d], "%s", ix->d[cd]);
    }
}

static void idx_key(int node, const idx *ix, char *key, size_t len)
{
    int u = snprintf(key, len, "%d", node);
    for (int d = 0; d < ix->rank && u < (int)len; d++)
        u += snprintf(key + u, len - (size_t)u, ",%s", ix->d[d]);
}

static const char *memo_find(const em *e, int node, const idx *ix)
{
    char key[200];
    idx_key(node, ix, key, sizeof key);
    for (int i = e->n_memo - 1; i >= 0; i--)
        if (e->m[i].node == node && !strcmp(e->m[i].key, key))
            return e->m[i].var;
    return NULL;
}

static void memo_add(em *e, int node, const idx *ix, const char *var)
{
    if (e->n_memo == MAX_MEMO)
        return;
    memo *m = &e->m[e->n_memo++];
    m->node = node;
    idx_key(node, ix, m->key, sizeof m->key);
    snprintf(m->var, sizeof m->var, "%s", var);
}

/* ---- scalar expressions (shared by both dialects) ---------------------------------- */

static void literal(em *e, xe_dtype dt, double v, char *buf, size_t len)
{
    xg_literal(dt, v, buf, len);
    (void)e;
}

/* cast(x, to=DT) from a value of dtype from. */
static void cast_text(xe_dtype from, xe_dtype to, const char *a, char *buf, size_t len)
{
    if (to == XE_BOOL)
        snprintf(buf, len, "(uint8_t)(%s != 0)", a);
    else if (to == XE_I32 && xe_dtype_is_float(from))
        snprintf(buf, len, "xe_f64_to_i32((double)%s)", a);
    else if (to == XE_I64 && xe_dtype_is_float(from))
        snprintf(buf, len, "xe_f64_to_i64((double)%s)", a);
    else if (to == XE_I32 && from == XE_I64)
        snprintf(buf, len, "(int32_t)(uint32_t)(uint64_t)%s", a);
    else if (to == XE_F16 || to == XE_F32)
        snprintf(buf, len, "(float)(%s)", a);
    else
        snprintf(buf, len, "(%s)(%s)", value_type(to), a);
}

/* ---- values ------------------------------------------------------------------------- */

static const char *emit_val(em *e, int node, const idx *ix, char *var, size_t len);

/* Loads a materialized node at ix. */
static void emit_load(em *e, int node, const idx *ix, char *var, size_t len)
{
    xe_dtype dt = e->p->types[node].dtype;
    char off[24];
    flat_of(e, node, ix, off, sizeof off);
    new_var(e, var, len);
    if (dt == XE_F16)
        out(e, "    float %s = xe_h2f(p%d[%s]);\n", var, node, off);
    else
        out(e, "    %s %s = p%d[%s];\n", value_type(dt), var, node, off);
}

/* The operand's idx for a consumer of a shape op (transpose, broadcast_to, slice, reshape). */
static void idx_for_shape_op(em *e, const xe_node *n, int node, const idx *ix, idx *r)
{
    int in = n->inputs[0];
    const xe_shape *si = shape_of(e, in);
    r->rank = si->rank;
    r->flat[0] = '\0';
    if (n->op == XE_OP_TRANSPOSE) {
        int perm[XE_MAX_RANK];
        xe_status st;
        xe_transpose_perm(n, si->rank, perm, &st);
        for (int d = 0; d < si->rank; d++)
            snprintf(r->d[perm[d]], sizeof r->d[0], "%s", ix->d[d]);
    } else if (n->op == XE_OP_BROADCAST_TO) {
        idx_broadcast(e, node, in, ix, r);
    } else if (n->op == XE_OP_SLICE) {
        const xe_attr *b = xe_node_attr(n, "begin"), *en = xe_node_attr(n, "end");
        for (int d = 0; d < si->rank; d++) {
            int64_t lo, hi, begin = b->ints[d];
            xe_slice_bounds(begin, en->ints[d], si->dims[d], &lo, &hi);
            if (e->p->generic && begin < 0) { /* from the end of this call's dim, clamped at 0 */
                char dim[32];
                dim_text(e, in, d, dim, sizeof dim);
                let_index(e, r->d[d], sizeof r->d[d], "%s + (%s + %lld%s < 0 ? 0 : %s + %lld%s)", ix->d[d],
                          dim, (long long)begin, LL(e), dim, (long long)begin, LL(e));
            } else if (e->p->generic) { /* a begin past the dim leaves nothing to index */
                lo = begin;
            }
            if (e->p->generic && begin < 0)
                continue;
            if (lo == 0)
                snprintf(r->d[d], sizeof r->d[d], "%s", ix->d[d]);
            else
                let_index(e, r->d[d], sizeof r->d[d], "%s + %lld%s", ix->d[d], (long long)lo, LL(e));
        }
    } else { /* reshape: same flat offset */
        char flat[24];
        flat_of(e, node, ix, flat, sizeof flat);
        idx_from_flat(e, in, flat, r);
    }
}

/*
 * concat: a chain of ranges along the axis, each computed in its own
 * branch. The range ends are literals, or (shape-generic) running sums of
 * the operands' dims declared before the chain.
 */
static void emit_concat(em *e, const xe_node *n, int node, const idx *ix, char *var, size_t len)
{
    const xe_shape *s = shape_of(e, node);
    int64_t axis = xe_node_attr_int(n, "axis", 0);
    if (axis < 0)
        axis += s->rank;
    char(*end)[32] = calloc((size_t)n->n_inputs, sizeof *end);
    if (!end) {
        e->oom = true;
        snprintf(var, len, "0");
        return;
    }
    int64_t total = 0;
    for (int k = 0; k < n->n_inputs; k++) {
        int in = n->inputs[k];
        char w[32];
        dim_text(e, in, (int)axis, w, sizeof w);
        total += shape_of(e, in)->dims[axis];
        if (!e->p->generic)
            snprintf(end[k], sizeof end[k], "%lld%s", (long long)total, LL(e));
        else if (k == 0)
            snprintf(end[k], sizeof end[k], "%s", w);
        else if (k + 1 < n->n_inputs) /* the last end is never read */
            let_index(e, end[k], sizeof end[k], "%s + %s", end[k - 1], w);
    }
    xe_dtype dt = e->p->types[node].dtype;
    new_var(e, var, len);
    out(e, "    %s %s;\n", value_type(dt), var);
    for (int k = 0; k < n->n_inputs; k++) {
        if (k + 1 < n->n_inputs)
            out(e, "    %sif (%s < %s) {\n", k ? "else " : "", ix->d[axis], end[k]);
        else
            out(e, "    else {\n");
        idx r = *ix;
        r.flat[0] = '\0';
        if (k)
            let_index(e, r.d[axis], sizeof r.d[axis], "%s - %s", ix->d[axis], end[k - 1]);
        int saved = e->n_memo; /* values computed in a branch stay there */
        char v[16];
        emit_val(e, n->inputs[k], &r, v, sizeof v);
        e->n_memo = saved;
        out(e, "    %s = %s;\n    }\n", var, v);
    }
    free(end);
}

/* Computes node at ix from its operands (never a load of the node itself). */
static void emit_compute(em *e, int node, const idx *ix, char *var, size_t len)
{
    const xe_node *n = e->p->body->nodes[node];
    const xe_op_def *d = xe_op_get(n->op);
    xe_dtype dt = e->p->types[node].dtype;
    char a[3][16], text[512];
    if (xe_op_is_elementwise(n->op)) {
        for (int k = 0; k < n->n_inputs; k++) {
            idx r;
            idx_broadcast(e, node, n->inputs[k], ix, &r);
            emit_val(e, n->inputs[k], &r, a[k], sizeof a[k]);
        }
    }
    xe_dtype in_dt = n->n_inputs ? e->p->types[n->inputs[0]].dtype : dt;
    switch (d->cls) {
    case XE_CLASS_BINARY:
    case XE_CLASS_COMPARE:
    case XE_CLASS_LOGICAL:
    case XE_CLASS_UNARY: /* the ops.def expression */
        if (!xg_op_text(n, in_dt, a[0], n->n_inputs > 1 ? a[1] : NULL, text, sizeof text))
            unsupported(e, n, "no emitter");
        break;
    case XE_CLASS_SELECT: snprintf(text, sizeof text, "%s ? %s : %s", a[0], a[1], a[2]); break;
    case XE_CLASS_CAST: cast_text(in_dt, dt, a[0], text, sizeof text); break;
    case XE_CLASS_SOURCE: /* iota, or a scalar constant */
        if (n->op == XE_OP_CONST) {
            literal(e, dt, xe_load_f64(n->value->data, dt, 0), text, sizeof text);
        } else {
            int64_t axis = xe_node_attr_int(n, "axis", 0);
            if (axis < 0)
                axis += ix->rank;
            snprintf(text, sizeof text, "(%s)%s", value_type(dt), ix->rank ? ix->d[axis] : "0");
        }
        break;
    case XE_CLASS_SHAPE:
        if (n->op == XE_OP_CONCAT && n->n_inputs == 1) { /* the operand itself */
            emit_val(e, n->inputs[0], ix, var, len);
            return;
        } else if (n->op == XE_OP_CONCAT) {
            emit_concat(e, n, node, ix, var, len);
            return;
        } else {
            idx r;
            idx_for_shape_op(e, n, node, ix, &r);
            emit_val(e, n->inputs[0], &r, var, len);
            return;
        }
    default:
        unsupported(e, n, "no emitter for this op inside a fused loop");
        snprintf(text, sizeof text, "0");
        break;
    }
    new_var(e, var, len);
    if (dt == XE_F16) /* computed in float, rounded to f16 at every op, as op by op */
        out(e, "    float %s = xe_h2f(xe_f2h(%s));\n", var, text);
    else
        out(e, "    %s %s = %s;\n", value_type(dt), var, text);
}

static bool same_idx(const idx *a, const idx *b)
{
    if (a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (strcmp(a->d[d], b->d[d]))
            return false;
    return true;
}

/*
 * A row kernel's value at the pass's own element (o, k) that the row cache
 * holds: the phase that keeps it computes it and writes rcN[k], later
 * phases read rcN[k]. In the dry run, records the phase and declines.
 */
static bool row_cache_value(em *e, int node, const idx *ix, char *var, size_t len)
{
    if (!e->row_ix || !same_idx(ix, e->row_ix) ||
        !xe_shape_equal(shape_of(e, node), shape_of(e, e->row_x)))
        return false;
    if (e->rc_dry) {
        e->rc_phases[node] |= 1u << e->row_ph;
        return false;
    }
    if (e->rc_first[node] < 0)
        return false;
    if (e->row_ph == e->rc_first[node]) {
        emit_compute(e, node, ix, var, len);
        out(e, "    rc%d[k] = %s;\n", node, var);
    } else {
        new_var(e, var, len);
        out(e, "    %s %s = rc%d[k];\n", value_type(e->p->types[node].dtype), var, node);
    }
    return true;
}

/* The value of node at ix: memoized, loaded when materialized, else computed. */
static const char *emit_val(em *e, int node, const idx *ix, char *var, size_t len)
{
    if (e->rowvar[node][0]) { /* the planner checked that it is read at the current row */
        snprintf(var, len, "%s", e->rowvar[node]);
        return var;
    }
    const char *m = memo_find(e, node, ix);
    if (m) {
        snprintf(var, len, "%s", m);
        return var;
    }
    if (e->p->mat[node])
        emit_load(e, node, ix, var, len);
    else if (!row_cache_value(e, node, ix, var, len))
        emit_compute(e, node, ix, var, len);
    memo_add(e, node, ix, var);
    return var;
}

static void emit_store(em *e, int node, const char *flat, const char *v)
{
    xe_dtype dt = e->p->types[node].dtype;
    if (dt == XE_F16)
        out(e, "    p%d[%s] = xe_f2h(%s);\n", node, flat, v);
    else
        out(e, "    p%d[%s] = %s;\n", node, flat, v);
}

/* ---- kernels ------------------------------------------------------------------------- */

static void numel_text(const em *e, int node, char *buf, size_t len)
{
    stride_text(e, node, 0, buf, len);
}

static void kernel_begin(em *e, int step)
{
    char name[32];
    xg_step_name(step, name, sizeof name);
    e->n_memo = 0;
    for (int i = 0; i < e->p->body->n_nodes; i++)
        e->rowvar[i][0] = '\0';
    if (e->cuda && xg_args_in_memory(e->p)) /* too large to pass by value: read from device memory */
        out(e, "extern \"C\" __global__ void %s(const xg_args *__restrict__ Ap)\n{\n    const xg_args &A = *Ap;\n"
               "    void *const *B = A.b;\n    const int64_t *S = A.s;\n    (void)S;\n", name);
    else if (e->cuda)
        out(e, "extern \"C\" __global__ void %s(xg_args A)\n{\n    void *const *B = A.b;\n"
               "    const int64_t *S = A.s;\n    (void)S;\n", name);
    else
        out(e, "void %s(void *const *restrict B, const int64_t *restrict S)\n{\n    (void)S;\n", name);
    /* one restrict pointer per buffer, outside every loop (distinct buffers never alias) */
    for (int i = 0; i < e->p->body->n_nodes; i++)
        if (e->p->mat[i])
            out(e, "    %s *%s p%d = (%s *)B[%d];\n    (void)p%d;\n", store_type(e->p->types[i].dtype),
                e->cuda ? "__restrict__" : "restrict", i, store_type(e->p->types[i].dtype), i, i);
}

/* ---- row-invariant hoisting (CPU loop kernels) ------------------------------------ */

/* "    TYPE vN = ...;" or "    TYPE vN;": the variable number declared, or -1. */
static int declared_var(const char *line, bool *has_init)
{
    char type[32];
    int num = -1, end = 0;
    *has_init = false;
    if (sscanf(line, " %31[A-Za-z0-9_] v%d%n", type, &num, &end) != 2 || !strcmp(type, "const"))
        return -1;
    const char *rest = line + end;
    while (*rest == ' ')
        rest++;
    *has_init = *rest == '=';
    return *has_init || *rest == ';' ? num : -1;
}

static bool writes(const xg_step *s, int node)
{
    for (int k = 0; k < s->n_outs; k++)
        if (s->outs[k] == node)
            return true;
    return false;
}

/* Whether the text after '=' mentions i, j, a loop-dependent variable, or a buffer the step writes. */
static bool depends_on_loop(const char *t, const bool *dep, int n_vars, const xg_step *s)
{
    while (*t) {
        if (*t >= '0' && *t <= '9') { /* a number, hex floats included */
            while (*t == '.' || *t == '_' || (*t >= '0' && *t <= '9') || ((*t | 32) >= 'a' && (*t | 32) <= 'z'))
                t++;
            continue;
        }
        if (!(*t == '_' || ((*t | 32) >= 'a' && (*t | 32) <= 'z'))) {
            t++;
            continue;
        }
        const char *w = t;
        while (*t == '_' || (*t >= '0' && *t <= '9') || ((*t | 32) >= 'a' && (*t | 32) <= 'z'))
            t++;
        size_t n = (size_t)(t - w);
        int num = -1;
        if (n == 1 && (*w == 'i' || *w == 'j'))
            return true;
        if ((*w == 'v' || *w == 'p') && n > 1 && sscanf(w + 1, "%d", &num) == 1 && strspn(w + 1, "0123456789") == n - 1) {
            if (*w == 'v' && num >= 0 && num < n_vars && dep[num])
                return true;
            if (*w == 'p' && *t == '[' && writes(s, num))
                return true;
        }
    }
    return false;
}

/*
 * The statements of a CPU loop body (text from mark on, emitted without
 * the inner loop's header) are split: those that do not depend on the
 * inner index (a row's scale, a broadcast operand's load, rsqrt of a
 * variance) are printed before the inner loop, the rest are returned
 * (malloc'd) for the loop itself. A statement inside a branch, or one
 * that declares without a value, stays in the loop, and so does all
 * that depends on it.
 */
static char *hoist_row_invariants(em *e, size_t mark, const xg_step *s)
{
    if (e->oom)
        return NULL;
    char *body = strndup(e->buf + mark, e->len - mark);
    bool *dep = calloc((size_t)e->var + 1, sizeof *dep);
    char *rest = calloc(1, e->len - mark + 2);
    if (!body || !dep || !rest) {
        free(body);
        free(dep);
        free(rest);
        e->oom = true;
        return NULL;
    }
    e->len = mark;
    e->buf[mark] = '\0';
    size_t used = 0;
    int depth = 0;
    for (char *line = body, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        bool has_init, braces = strpbrk(line, "{}") != NULL;
        int v = declared_var(line, &has_init);
        bool hoist = depth == 0 && !braces && v >= 0 && v < e->var && has_init &&
                     !depends_on_loop(strchr(line, '=') + 1, dep, e->var, s);
        if (v >= 0 && v < e->var && !hoist)
            dep[v] = true;
        if (hoist)
            out(e, "%s\n", line);
        else
            used += (size_t)sprintf(rest + used, "%s\n", line);
        for (const char *c = line; *c; c++)
            depth += *c == '{' ? 1 : *c == '}' ? -1 : 0;
    }
    free(body);
    free(dep);
    return rest;
}

/*
 * A loop kernel. On the GPU one grid-stride loop over flat indices; on
 * the CPU a loop nest: rows (every dim but the last, indices from one
 * division per row) in parallel, and a simd loop along the last dim, so
 * broadcast operands need no division per element, and what depends on
 * the row only (a broadcast operand's load, rsqrt of a variance) is
 * computed once per row, before the simd loop. Outputs with few rows
 * parallelise the inner loop instead.
 */
static void emit_loop_kernel(em *e, int step, const xg_step *s)
{
    char n[256];
    int root = s->outs[0];
    const xe_shape *sh = shape_of(e, root);
    const char *inner = NULL; /* CPU row loop nest: the inner loop's pragma */
    idx ix;
    kernel_begin(e, step);
    numel_text(e, root, n, sizeof n);
    out(e, "    const xg_idx n = %s;\n", n);
    if (e->cuda || sh->rank <= 1) {
        if (e->cuda)
            out(e, "    for (xg_idx i = blockIdx.x * (xg_idx)blockDim.x + threadIdx.x; i < n;\n"
                   "         i += (xg_idx)gridDim.x * blockDim.x) {\n");
        else
            out(e, "#pragma omp parallel for simd if (n >= 32768) schedule(static)\n"
                   "    for (xg_idx i = 0; i < n; i++) {\n");
        idx_from_flat(e, root, "i", &ix);
    } else {
        char L[32];
        int64_t rows = xe_shape_numel(sh) / (sh->dims[sh->rank - 1] ? sh->dims[sh->rank - 1] : 1);
        bool outer = rows >= 16; /* enough rows to share among the threads */
        dim_text(e, root, sh->rank - 1, L, sizeof L);
        out(e, "    const xg_idx L = %s, R = L ? n / L : 0;\n", L);
        if (outer)
            out(e, "#pragma omp parallel for if (n >= 32768) schedule(static)\n");
        out(e, "    for (xg_idx r = 0; r < R; r++) {\n");
        /* the row's multi-index: all dims but the last, from r */
        ix.rank = sh->rank;
        char stride[256] = "1";
        for (int d = sh->rank - 2; d >= 0; d--) {
            char dim[32];
            dim_text(e, root, d, dim, sizeof dim);
            if (sh->dims[d] == 1)
                snprintf(ix.d[d], sizeof ix.d[d], "0");
            else if (d == 0)
                let_index(e, ix.d[d], sizeof ix.d[d], "r / (%s)", stride);
            else
                let_index(e, ix.d[d], sizeof ix.d[d], "(r / (%s)) %% %s", stride, dim);
            size_t u = strlen(stride);
            snprintf(stride + u, sizeof stride - u, "*%s", dim);
        }
        inner = outer ? "#pragma omp simd\n" : "#pragma omp parallel for simd if (n >= 32768) schedule(static)\n";
        snprintf(ix.d[sh->rank - 1], sizeof ix.d[0], "%s", sh->dims[sh->rank - 1] == 1 ? "0" : "j");
        snprintf(ix.flat, sizeof ix.flat, "i");
    }
    size_t mark = e->len;
    for (int k = 0; k < s->n_outs; k++) {
        char v[16];
        emit_compute(e, s->outs[k], &ix, v, sizeof v);
        memo_add(e, s->outs[k], &ix, v);
        emit_store(e, s->outs[k], "i", v);
    }
    if (inner) { /* the row's invariants first, then the simd loop along the last dim */
        char *rest = hoist_row_invariants(e, mark, s);
        out(e, "%s    for (xg_idx j = 0; j < L; j++) {\n    const xg_idx i = r * L + j;\n%s", inner,
            rest ? rest : "");
        free(rest);
    }
    out(e, e->cuda || sh->rank <= 1 ? "    }\n}\n\n" : "    }\n    }\n}\n\n");
}

/* The reduction's combine step, init value and OpenMP reduction identifier. */
typedef struct red_ops {
    const char *acc_type, *init, *omp;
    char combine[128]; /* printf format with acc and v */
} red_ops;

static red_ops red_ops_for(int op, xe_dtype dt)
{
    red_ops r = {0};
    bool fl = xe_dtype_is_float(dt);
    r.acc_type = dt == XE_F16 ? "double" : fl ? value_type(dt) : "int64_t";
    const char *s = dt == XE_F64 || dt == XE_F16 ? "f64" : "f32";
    switch (op) {
    case XE_OP_REDUCE_SUM:
    case XE_OP_REDUCE_MEAN:
        r.init = "0";
        r.omp = fl ? "+" : "xg_add_i64";
        snprintf(r.combine, sizeof r.combine, fl ? "acc + %%s" : "xe_add_i64(acc, %%s)");
        break;
    case XE_OP_REDUCE_PROD:
        r.init = "1";
        r.omp = fl ? "*" : "xg_mul_i64";
        snprintf(r.combine, sizeof r.combine, fl ? "acc * %%s" : "xe_mul_i64(acc, %%s)");
        break;
    case XE_OP_REDUCE_MAX:
        r.init = fl ? "(-1.0 / 0.0)" : "INT64_MIN";
        r.omp = fl ? (dt == XE_F32 ? "xg_max_f32" : "xg_max_f64") : "max";
        snprintf(r.combine, sizeof r.combine, fl ? "xe_max_%s(acc, %%s)" : "(%%s > acc ? %%s : acc)", s);
        break;
    default: /* min */
        r.init = fl ? "(1.0 / 0.0)" : "INT64_MAX";
        r.omp = fl ? (dt == XE_F32 ? "xg_min_f32" : "xg_min_f64") : "min";
        snprintf(r.combine, sizeof r.combine, fl ? "xe_min_%s(acc, %%s)" : "(%%s < acc ? %%s : acc)", s);
        break;
    }
    return r;
}

/* acc = COMBINE(acc, v) */
static void emit_combine(em *e, const red_ops *r, const char *acc, const char *v)
{
    char c[256], fmt[160];
    snprintf(fmt, sizeof fmt, "%s", r->combine);
    /* the format has one or two %s for v, and "acc" literally */
    snprintf(c, sizeof c, fmt, v, v);
    char full[320];
    size_t u = 0;
    for (const char *p = c; *p && u + 8 < sizeof full; p++) { /* rename acc */
        if (!strncmp(p, "acc", 3)) {
            u += (size_t)snprintf(full + u, sizeof full - u, "%s", acc);
            p += 2;
        } else {
            full[u++] = *p;
        }
    }
    full[u] = '\0';
    out(e, "    %s = %s;\n", acc, full);
}

/* Product of the kept (want=false) or reduced (want=true) dims of x, as text. */
static void part_size(const em *e, int x, const bool *mask, bool want, char *buf, size_t len)
{
    const xe_shape *s = shape_of(e, x);
    int64_t lit = 1;
    snprintf(buf, len, "1");
    for (int d = 0; d < s->rank; d++) {
        if (mask[d] != want)
            continue;
        if (e->p->generic) {
            size_t u = strlen(buf);
            snprintf(buf + u, len - u, "*S[%d]", e->p->soff[x] + d);
        } else {
            lit *= s->dims[d];
        }
    }
    if (!e->p->generic)
        snprintf(buf, len, "%lld%s", (long long)lit, LL(e));
}

/* The idx of x from the kept index o and the reduced index k (div/mod over each part). */
static void reduce_idx(em *e, int x, const bool *mask, const char *o, const char *k, bool column, idx *ix)
{
    const xe_shape *s = shape_of(e, x);
    ix->rank = s->rank;
    ix->flat[0] = '\0';
    for (int part = 0; part < 2; part++) {
        bool reduced = part == 1;
        const char *src = reduced ? k : o;
        int dims[XE_MAX_RANK], nd = 0; /* this part's non-unit dims, innermost first */
        for (int d = s->rank - 1; d >= 0; d--) {
            if (mask[d] != reduced)
                continue;
            if (s->dims[d] == 1)
                snprintf(ix->d[d], sizeof ix->d[d], "0");
            else
                dims[nd++] = d;
        }
        char stride[256] = "1";
        for (int j = 0; j < nd; j++) { /* no % on the outermost dim, no / on the innermost */
            int d = dims[j];
            char dim[32];
            dim_text(e, x, d, dim, sizeof dim);
            if (nd == 1)
                snprintf(ix->d[d], sizeof ix->d[d], "%s", src);
            else if (j == 0)
                let_index(e, ix->d[d], sizeof ix->d[d], "%s %% %s", src, dim);
            else if (j == nd - 1)
                let_index(e, ix->d[d], sizeof ix->d[d], "%s / (%s)", src, stride);
            else
                let_index(e, ix->d[d], sizeof ix->d[d], "(%s / (%s)) %% %s", src, stride, dim);
            size_t u = strlen(stride);
            snprintf(stride + u, sizeof stride - u, "*%s", dim);
        }
    }
    /* contiguous cases: kept dims then reduced dims (row), or the reverse (column) */
    bool row = true, col = true, seen_r = false, seen_k = false;
    for (int d = 0; d < s->rank; d++) {
        if (s->dims[d] == 1)
            continue;
        if (mask[d])
            seen_r = true, col = col && !seen_k;
        else
            seen_k = true, row = row && !seen_r;
    }
    (void)column;
    char K[256], O[256];
    part_size(e, x, mask, true, K, sizeof K);
    part_size(e, x, mask, false, O, sizeof O);
    if (row)
        let_index(e, ix->flat, sizeof ix->flat, "%s * (%s) + %s", o, K, k);
    else if (col)
        let_index(e, ix->flat, sizeof ix->flat, "%s * (%s) + %s", k, O, o);
}

/*
 * acc = COMBINE(acc, x at (o, k)) inside a loop over k: x's inline
 * producers are computed there, and forgotten after (loop-scoped).
 */
static void emit_accumulate(em *e, int x, const bool *mask, const char *o, bool column, const red_ops *ro,
                            const char *acc)
{
    idx ix;
    char v[16];
    int saved = e->n_memo;
    reduce_idx(e, x, mask, o, "k", column, &ix);
    emit_val(e, x, &ix, v, sizeof v);
    e->n_memo = saved;
    emit_combine(e, ro, acc, v);
}

static void emit_finish(em *e, const xe_node *r, xe_dtype dt, const char *acc, const char *K, char *buf, size_t len)
{
    /* f16: rounded to f16, as the per-op kernel stores it */
    const char *pre = dt == XE_F16 ? "xe_h2f(xe_f2h(" : "", *post = dt == XE_F16 ? "))" : "";
    if (r->op == XE_OP_REDUCE_MEAN && xe_dtype_is_float(dt))
        snprintf(buf, len, "%s(%s)(%s / (%s)(%s))%s", pre, value_type(dt), acc, dt == XE_F32 ? "float" : "double",
                 K, post);
    else if (r->op == XE_OP_REDUCE_MEAN) /* ints: 0 over an empty axis, as the per-op kernel */
        snprintf(buf, len, "%s(%s)((%s) ? %s / (%s) : 0)%s", pre, value_type(dt), K, acc, K, post);
    else
        snprintf(buf, len, "%s(%s)%s%s", pre, value_type(dt), acc, post);
    (void)e;
}

/*
 * The inner loop of one output o of a reduction or argmax, computed by one
 * thread: accumulator, loop over the reduced index k (with an OpenMP simd
 * reduction when simd), the value of x at (o, k), and the store of out[o].
 */
static void emit_serial_reduce(em *e, const xe_node *r, int x, const bool *mask, int node, bool column, bool simd)
{
    xe_dtype dt = e->p->types[x].dtype;
    red_ops ro = red_ops_for(r->op, dt);
    bool argmax = r->op == XE_OP_ARGMAX;
    char v[16], fin[512];
    if (argmax)
        out(e, "    xg_idx best = 0;\n    %s bv = 0;\n", value_type(dt));
    else
        out(e, "    %s acc = %s;\n", ro.acc_type, ro.init);
    if (simd && !argmax)
        out(e, "#pragma omp simd reduction(%s : acc)\n", ro.omp);
    out(e, "    for (xg_idx k = 0; k < K; k++) {\n");
    idx ix;
    int saved = e->n_memo;
    reduce_idx(e, x, mask, "o", "k", column, &ix);
    emit_val(e, x, &ix, v, sizeof v);
    e->n_memo = saved;
    if (argmax)
        out(e, "    if (k == 0 || (bv == bv && (%s > bv || %s != %s))) {\n    bv = %s;\n    best = k;\n    }\n", v, v, v, v);
    else
        emit_combine(e, &ro, "acc", v);
    out(e, "    }\n");
    if (argmax)
        snprintf(fin, sizeof fin, "best");
    else
        emit_finish(e, r, e->p->types[node].dtype, "acc", "K", fin, sizeof fin);
    emit_store(e, node, "o", fin);
}

/*
 * C, a column reduction (scalar.h's rule, as the per-op kernel): tiles of
 * outputs (all of them when there are at most XE_COL_WIDE, so each
 * reduced row is read whole and in order), a
 * tile's rows accumulated into a stack array, simd across the tile. With
 * few tiles and many rows, the rows are also split into C chunks (a
 * number fixed by the shape, never by the thread count: the result is the
 * same on every machine), each chunk's sums written to a heap workspace
 * and combined in chunk order. If the workspace cannot be had, one chunk.
 */
static void emit_column_reduce_c(em *e, const xe_node *r, int x, const bool *mask, int node)
{
    red_ops ro = red_ops_for(r->op, e->p->types[x].dtype);
    char fin[512], v[64];
    out(e, "    const int64_t T = O <= XE_COL_WIDE ? O : XE_COL_TILE, tiles = T ? (O + T - 1) / T : 0;\n");
    out(e, "    int64_t C = xe_column_chunks(tiles, K);\n");
    out(e, "    %s *part = C > 1 ? malloc(sizeof(%s) * (size_t)(C * O)) : NULL;\n    if (!part)\n    C = 1;\n",
        ro.acc_type, ro.acc_type);
    out(e, "#pragma omp parallel for collapse(2) if (O * K >= 32768) schedule(static)\n");
    out(e, "    for (int64_t tile = 0; tile < tiles; tile++)\n    for (int64_t c = 0; c < C; c++) {\n");
    out(e, "    const int64_t ob = tile * T, oe = ob + T < O ? ob + T : O;\n");
    out(e, "    const int64_t kb = xe_chunk_begin(K, C, c), ke = xe_chunk_begin(K, C, c + 1);\n");
    out(e, "    %s accs[XE_COL_WIDE];\n    for (int64_t o = ob; o < oe; o++) accs[o - ob] = %s;\n", ro.acc_type,
        ro.init);
    out(e, "    for (int64_t k = kb; k < ke; k++) {\n#pragma omp simd\n");
    out(e, "    for (int64_t o = ob; o < oe; o++) {\n    %s acc = accs[o - ob];\n", ro.acc_type);
    emit_accumulate(e, x, mask, "o", true, &ro, "acc");
    out(e, "    accs[o - ob] = acc;\n    }\n    }\n");
    out(e, "    if (C > 1) {\n    for (int64_t o = ob; o < oe; o++) part[c * O + o] = accs[o - ob];\n"
           "    continue;\n    }\n");
    out(e, "    for (int64_t o = ob; o < oe; o++) {\n    %s acc = accs[o - ob];\n", ro.acc_type);
    emit_finish(e, r, e->p->types[node].dtype, "acc", "K", fin, sizeof fin);
    emit_store(e, node, "o", fin);
    out(e, "    }\n    }\n    if (C > 1) {\n");
    out(e, "#pragma omp parallel for if (O * C >= 32768) schedule(static)\n");
    out(e, "    for (int64_t o = 0; o < O; o++) {\n    %s acc = %s;\n", ro.acc_type, ro.init);
    out(e, "    for (int64_t c = 0; c < C; c++) {\n");
    snprintf(v, sizeof v, "part[c * O + o]");
    emit_combine(e, &ro, "acc", v);
    out(e, "    }\n");
    emit_finish(e, r, e->p->types[node].dtype, "acc", "K", fin, sizeof fin);
    emit_store(e, node, "o", fin);
    out(e, "    }\n    }\n    free(part);\n");
}

static void emit_reduce_c(em *e, const xg_step *s, const xe_node *r, int x, const bool *mask)
{
    xe_dtype dt = e->p->types[x].dtype;
    red_ops ro = red_ops_for(r->op, dt);
    bool argmax = r->op == XE_OP_ARGMAX;
    char O[256], K[256], fin[512];
    part_size(e, x, mask, false, O, sizeof O);
    part_size(e, x, mask, true, K, sizeof K);
    out(e, "    const int64_t O = %s, K = %s;\n", O, K);
    int node = s->outs[0];
    bool full = xe_shape_numel(&e->p->types[node].shape) == 1 && !argmax;
    if (full) { /* one output: threads and lanes split K */
        out(e, "    %s acc = %s;\n", ro.acc_type, ro.init);
        out(e, "#pragma omp parallel for simd reduction(%s : acc) if (K >= 32768) schedule(static)\n", ro.omp);
        out(e, "    for (int64_t k = 0; k < K; k++) {\n");
        emit_accumulate(e, x, mask, "0", false, &ro, "acc");
        out(e, "    }\n");
        emit_finish(e, r, e->p->types[node].dtype, "acc", "K", fin, sizeof fin);
        emit_store(e, node, "0", fin);
        return;
    }
    if (s->column) {
        emit_column_reduce_c(e, r, x, mask, node);
        return;
    }
    out(e, "#pragma omp parallel for if (O > 1 && O * K >= 32768) schedule(static)\n");
    out(e, "    for (int64_t o = 0; o < O; o++) {\n");
    emit_serial_reduce(e, r, x, mask, node, false, true);
    out(e, "    }\n");
}

/*
 * CUDA: combines acc over the block (warp shuffles, then one value per
 * warp through sh[0..31]); every thread ends with the block's value,
 * passed through sh[32]. The caller syncs before sh is used again.
 */
static void emit_block_reduce(em *e, const red_ops *ro, const char *acc, const char *sh)
{
    for (int round = 0; round < 2; round++) {
        if (round == 1)
            out(e, "    if (threadIdx.x < 32) {\n    %s = threadIdx.x < (blockDim.x >> 5) ? %s[threadIdx.x] : (%s)%s;\n",
                acc, sh, ro->acc_type, ro->init);
        out(e, "    for (int off = 16; off > 0; off >>= 1) {\n    %s other = __shfl_down_sync(0xffffffffu, %s, off);\n",
            ro->acc_type, acc);
        emit_combine(e, ro, acc, "other");
        out(e, "    }\n");
        if (round == 0)
            out(e, "    if ((threadIdx.x & 31) == 0) %s[threadIdx.x >> 5] = %s;\n    __syncthreads();\n", sh, acc);
    }
    out(e, "    if (threadIdx.x == 0) %s[32] = %s;\n    }\n    __syncthreads();\n    %s = %s[32];\n", sh, acc, acc, sh);
}

/*
 * CUDA: acc combined across the block, then thread 0 finishes the
 * reduction and stores it at out[at], inside an `if` the caller closes.
 */
static void emit_block_store(em *e, const red_ops *ro, const xe_node *r, int node, const char *at)
{
    char fin[512];
    emit_block_reduce(e, ro, "acc", "sh");
    out(e, "    if (threadIdx.x == 0) {\n");
    emit_finish(e, r, e->p->types[node].dtype, "acc", "K", fin, sizeof fin);
    emit_store(e, node, at, fin);
}

/*
 * CUDA, a reduction to one value: every block combines a grid-stride
 * share, writes its partial to the workspace and counts itself in; the
 * last block in combines the partials (in block order: the result does
 * not depend on timing) and resets the counter for the next launch.
 */
static void emit_split_reduce_cuda(em *e, const xe_node *r, int x, const bool *mask, int node)
{
    red_ops ro = red_ops_for(r->op, e->p->types[x].dtype);
    out(e, "    __shared__ %s sh[33];\n    __shared__ bool last;\n", ro.acc_type);
    out(e, "    %s *part = (%s *)A.w;\n    unsigned int *count = (unsigned int *)((char *)A.w + %d) + %d;\n",
        ro.acc_type, ro.acc_type, XG_WS_COUNTERS, XG_WS_SPLIT_COUNTER);
    out(e, "    %s acc = %s;\n", ro.acc_type, ro.init);
    out(e, "    for (xg_idx k = blockIdx.x * (xg_idx)blockDim.x + threadIdx.x; k < K;\n"
           "         k += (xg_idx)gridDim.x * blockDim.x) {\n");
    emit_accumulate(e, x, mask, "0", false, &ro, "acc");
    out(e, "    }\n");
    emit_block_reduce(e, &ro, "acc", "sh");
    out(e, "    if (threadIdx.x == 0) {\n    part[blockIdx.x] = acc;\n    __threadfence();\n"
           "    last = atomicAdd(count, 1u) == gridDim.x - 1;\n    }\n    __syncthreads();\n");
    out(e, "    if (!last)\n    return;\n    __threadfence();\n    acc = %s;\n", ro.init);
    out(e, "    for (xg_idx b = threadIdx.x; b < gridDim.x; b += blockDim.x) {\n"
           "    %s other = ((volatile %s *)part)[b];\n", ro.acc_type, ro.acc_type);
    emit_combine(e, &ro, "acc", "other");
    out(e, "    }\n");
    emit_block_store(e, &ro, r, node, "0");
    out(e, "    *count = 0u;\n    }\n    (void)O;\n");
}

/*
 * CUDA, a column reduction: a block per tile of 32 outputs, a warp wide
 * (lane: output, warp: every rows-th reduced row, so each row's read is
 * one coalesced segment), the warps' sums combined through shared memory.
 * When the launch splits the rows into chunks (gridDim.x = tiles x chunks,
 * see xg_step_chunks), a chunk writes its tile's partials to the
 * workspace, and the last chunk of the tile to finish combines them in
 * chunk order (the result does not depend on timing) and resets the
 * tile's counter for the next launch.
 */
static void emit_column_reduce_cuda(em *e, const xe_node *r, int x, const bool *mask, int node)
{
    red_ops ro = red_ops_for(r->op, e->p->types[x].dtype);
    char fin[512];
    out(e, "    __shared__ %s sh[%d][%d];\n    __shared__ bool last;\n", ro.acc_type, XG_THREADS / 32,
        XG_COL_TILE + 1);
    out(e, "    %s *part = (%s *)A.w;\n    unsigned int *count = (unsigned int *)((char *)A.w + %d);\n",
        ro.acc_type, ro.acc_type, XG_WS_COUNTERS);
    out(e, "    const xg_idx tiles = (O + %d) / %d, chunks = tiles && gridDim.x >= tiles ? gridDim.x / tiles : 1;\n",
        XG_COL_TILE - 1, XG_COL_TILE);
    out(e, "    const int lane = threadIdx.x %% %d, row = threadIdx.x / %d, rows = blockDim.x / %d;\n",
        XG_COL_TILE, XG_COL_TILE, XG_COL_TILE);
    out(e, "    for (xg_idx t = blockIdx.x; t < tiles * chunks; t += gridDim.x) {\n");
    out(e, "    const xg_idx tile = t %% tiles, chunk = t / tiles, o = tile * %d + lane;\n", XG_COL_TILE);
    out(e, "    const xg_idx q = K / chunks, rem = K %% chunks;\n"
           "    const xg_idx kb = chunk * q + (chunk < rem ? chunk : rem), ke = kb + q + (chunk < rem);\n");
    out(e, "    %s acc = %s;\n    if (o < O)\n    for (xg_idx k = kb + row; k < ke; k += rows) {\n",
        ro.acc_type, ro.init);
    emit_accumulate(e, x, mask, "o", true, &ro, "acc");
    out(e, "    }\n    sh[row][lane] = acc;\n    __syncthreads();\n");
    out(e, "    if (row == 0) {\n    for (int j = 1; j < rows; j++) {\n    %s other = sh[j][lane];\n", ro.acc_type);
    emit_combine(e, &ro, "acc", "other");
    out(e, "    }\n    if (chunks > 1 && o < O)\n    part[chunk * O + o] = acc;\n    __threadfence();\n    }\n");
    out(e, "    __syncthreads();\n    if (threadIdx.x == 0)\n"
           "    last = chunks == 1 || atomicAdd(count + tile, 1u) == (unsigned int)(chunks - 1);\n"
           "    __syncthreads();\n");
    out(e, "    if (chunks > 1 && last && row == 0 && o < O) {\n    __threadfence();\n    acc = %s;\n"
           "    for (xg_idx c = 0; c < chunks; c++) {\n    %s other = ((volatile %s *)part)[c * O + o];\n",
        ro.init, ro.acc_type, ro.acc_type);
    emit_combine(e, &ro, "acc", "other");
    out(e, "    }\n    }\n    if (chunks > 1 && last && threadIdx.x == 0)\n    count[tile] = 0u;\n");
    out(e, "    if (last && row == 0 && o < O) {\n");
    emit_finish(e, r, e->p->types[node].dtype, "acc", "K", fin, sizeof fin);
    emit_store(e, node, "o", fin);
    out(e, "    }\n    __syncthreads();\n    }\n");
}

/*
 * CUDA, argmax over long rows (K >= XG_ARGMAX_BLOCK_K): a block per output,
 * each thread the first best of its strided share (as the serial loop: a
 * greater value or the first NaN), then a tree over shared memory that
 * keeps NaN first, then the greater value, then the smaller index, so the
 * block finds the first best, as the per-op kernel does.
 */
static void emit_argmax_block_cuda(em *e, int x, const bool *mask, int node)
{
    const char *vt = value_type(e->p->types[x].dtype);
    char v[16];
    idx ix;
    out(e, "    __shared__ %s shv[%d];\n    __shared__ xg_idx shi[%d];\n", vt, XG_THREADS, XG_THREADS);
    out(e, "    for (xg_idx o = blockIdx.x; o < O; o += gridDim.x) {\n    xg_idx best = -1;\n    %s bv = 0;\n", vt);
    out(e, "    for (xg_idx k = threadIdx.x; k < K; k += blockDim.x) {\n");
    int saved = e->n_memo;
    reduce_idx(e, x, mask, "o", "k", false, &ix);
    emit_val(e, x, &ix, v, sizeof v);
    e->n_memo = saved;
    out(e, "    if (best < 0 || (bv == bv && (%s > bv || %s != %s))) {\n    bv = %s;\n    best = k;\n    }\n    }\n",
        v, v, v, v);
    out(e, "    shv[threadIdx.x] = bv;\n    shi[threadIdx.x] = best;\n    __syncthreads();\n");
    out(e, "    for (unsigned int half = blockDim.x / 2; half > 0; half >>= 1) {\n"
           "    if (threadIdx.x < half) {\n"
           "    %s mv = shv[threadIdx.x], ov = shv[threadIdx.x + half];\n"
           "    xg_idx mi = shi[threadIdx.x], oi = shi[threadIdx.x + half];\n"
           "    bool take = oi >= 0 && (mi < 0 || (mv != mv ? ov != ov && oi < mi\n"
           "                                              : ov != ov || ov > mv || (ov == mv && oi < mi)));\n"
           "    if (take) {\n    shv[threadIdx.x] = ov;\n    shi[threadIdx.x] = oi;\n    }\n    }\n"
           "    __syncthreads();\n    }\n", vt);
    out(e, "    if (threadIdx.x == 0) {\n");
    emit_store(e, node, "o", "(shi[0] < 0 ? 0 : shi[0])");
    out(e, "    }\n    __syncthreads();\n    }\n");
}

/*
 * CUDA, a reduction in row order: a block per output, its threads over the
 * reduced range. When the outputs do not fill the device, the launch
 * splits each range into chunks (gridDim.x = outputs x chunks, see
 * xg_step_chunks): a chunk writes its partial to the workspace and the
 * last chunk of an output to finish combines them in chunk order (the
 * result does not depend on timing) and resets the output's counter.
 */
static void emit_row_reduce_cuda(em *e, const red_ops *ro, const xe_node *r, int x, const bool *mask, int node)
{
    out(e, "    __shared__ %s sh[33];\n    __shared__ bool last;\n", ro->acc_type);
    out(e, "    %s *part = (%s *)A.w;\n    unsigned int *count = (unsigned int *)((char *)A.w + %d);\n",
        ro->acc_type, ro->acc_type, XG_WS_COUNTERS);
    out(e, "    const xg_idx chunks = O && gridDim.x >= O ? gridDim.x / O : 1;\n");
    out(e, "    for (xg_idx t = blockIdx.x; t < O * chunks; t += gridDim.x) {\n");
    out(e, "    const xg_idx o = t %% O, chunk = t / O, q = K / chunks, rem = K %% chunks;\n"
           "    const xg_idx kb = chunk * q + (chunk < rem ? chunk : rem), ke = kb + q + (chunk < rem);\n");
    out(e, "    %s acc = %s;\n    for (xg_idx k = kb + threadIdx.x; k < ke; k += blockDim.x) {\n", ro->acc_type,
        ro->init);
    emit_accumulate(e, x, mask, "o", false, ro, "acc");
    out(e, "    }\n");
    emit_block_reduce(e, ro, "acc", "sh");
    out(e, "    if (threadIdx.x == 0)\n    last = chunks == 1;\n"
           "    if (chunks > 1 && threadIdx.x == 0) {\n    part[chunk * O + o] = acc;\n    __threadfence();\n"
           "    last = atomicAdd(count + o, 1u) == (unsigned int)(chunks - 1);\n    }\n    __syncthreads();\n");
    out(e, "    if (chunks > 1 && last) {\n    __threadfence();\n    acc = %s;\n"
           "    for (xg_idx c = threadIdx.x; c < chunks; c += blockDim.x) {\n"
           "    %s other = ((volatile %s *)part)[c * O + o];\n", ro->init, ro->acc_type, ro->acc_type);
    emit_combine(e, ro, "acc", "other");
    out(e, "    }\n");
    emit_block_reduce(e, ro, "acc", "sh");
    out(e, "    if (threadIdx.x == 0)\n    count[o] = 0u;\n    }\n");
    out(e, "    if (last && threadIdx.x == 0) {\n");
    char fin[512];
    emit_finish(e, r, e->p->types[node].dtype, "acc", "K", fin, sizeof fin);
    emit_store(e, node, "o", fin);
    out(e, "    }\n    __syncthreads();\n    }\n");
}

/* CUDA: one block per output (row order; argmax over long rows) or per column tile, else a thread per output. */
static void emit_reduce_cuda(em *e, int step, const xg_step *s, const xe_node *r, int x, const bool *mask)
{
    xe_dtype dt = e->p->types[x].dtype;
    red_ops ro = red_ops_for(r->op, dt);
    bool argmax = r->op == XE_OP_ARGMAX;
    char O[256], K[256];
    part_size(e, x, mask, false, O, sizeof O);
    part_size(e, x, mask, true, K, sizeof K);
    int node = s->outs[0];
    out(e, "    const xg_idx O = %s, K = %s;\n", O, K);
    if (xg_step_is_split(e->p, step, e->p->types)) {
        emit_split_reduce_cuda(e, r, x, mask, node);
        return;
    }
    if (s->column) {
        emit_column_reduce_cuda(e, r, x, mask, node);
        return;
    }
    if (argmax) {
        out(e, "    if (K >= %d) {\n", XG_ARGMAX_BLOCK_K);
        emit_argmax_block_cuda(e, x, mask, node);
        out(e, "    return;\n    }\n");
        out(e, "    for (xg_idx o = blockIdx.x * (xg_idx)blockDim.x + threadIdx.x; o < O;\n"
               "         o += (xg_idx)gridDim.x * blockDim.x) {\n");
        emit_serial_reduce(e, r, x, mask, node, false, false);
        out(e, "    }\n");
        return;
    }
    emit_row_reduce_cuda(e, &ro, r, x, mask, node);
}

static void emit_reduce_kernel(em *e, int step, const xg_step *s)
{
    const xe_node *r = e->p->body->nodes[s->outs[0]];
    int x = r->inputs[0];
    bool mask[XE_MAX_RANK] = {0};
    xg_reduce_mask(r, shape_of(e, x)->rank, mask);
    kernel_begin(e, step);
    if (e->cuda)
        emit_reduce_cuda(e, step, s, r, x, mask);
    else
        emit_reduce_c(e, s, r, x, mask);
    out(e, "}\n\n");
}

/* The header of one pass over row o's K elements: all of it (CPU), or a block-stride share (GPU). */
static void row_pass_header(em *e)
{
    out(e, e->cuda ? "    for (xg_idx k = threadIdx.x; k < K; k += blockDim.x) {\n"
                   : "    for (xg_idx k = 0; k < K; k++) {\n");
}

/* ---- row kernels ---------------------------------------------------------------- */

/*
 * One phase's pass over the row: at each element k of row o, the values
 * of the row shape this phase computes (stored), and the reductions it
 * accumulates (into a<N>, N the output's position in the step).
 */
static void emit_row_pass(em *e, const xg_step *s, int ph, const bool *mask, const red_ops *ro)
{
    for (int k = 0; k < s->n_outs; k++)
        if (s->phase[k] == ph && s->role[k] == XG_ROW_REDUCE)
            out(e, "    %s a%d = %s;\n", ro[k].acc_type, k, ro[k].init);
    if (!e->cuda) {
        out(e, "#pragma omp simd");
        for (int k = 0; k < s->n_outs; k++)
            if (s->phase[k] == ph && s->role[k] == XG_ROW_REDUCE)
                out(e, " reduction(%s : a%d)", ro[k].omp, k);
        out(e, "\n");
    }
    row_pass_header(e);
    int saved = e->n_memo;
    idx ix; /* every value of the row shape is at this idx */
    reduce_idx(e, s->x, mask, "o", "k", false, &ix);
    e->row_ph = ph;
    e->row_x = s->x;
    e->row_ix = &ix;
    for (int k = 0; k < s->n_outs; k++) {
        int node = s->outs[k];
        if (s->phase[k] != ph || s->role[k] == XG_ROW_SCALAR)
            continue;
        char v[16], acc[16], off[24];
        if (s->role[k] == XG_ROW_LOOP) {
            emit_compute(e, node, &ix, v, sizeof v);
            memo_add(e, node, &ix, v);
            flat_of(e, node, &ix, off, sizeof off);
            emit_store(e, node, off, v);
        } else {
            emit_val(e, e->p->body->nodes[node]->inputs[0], &ix, v, sizeof v);
            snprintf(acc, sizeof acc, "a%d", k);
            emit_combine(e, &ro[k], acc, v);
        }
    }
    e->row_ix = NULL;
    e->n_memo = saved;
    out(e, "    }\n");
}

/*
 * After a phase's pass: its reductions finished into r<N> (registers for
 * the rest of the row; on the GPU combined over the block first), then the
 * values of the reduced shape computed after this pass; each stored once.
 */
static void emit_row_after(em *e, const xg_step *s, int ph, const bool *mask, const red_ops *ro)
{
    const char *first = e->cuda ? "    if (threadIdx.x == 0)\n" : "";
    for (int k = 0; k < s->n_outs; k++) {
        int node = s->outs[k];
        if (s->phase[k] != ph || s->role[k] == XG_ROW_LOOP)
            continue;
        char v[16];
        if (s->role[k] == XG_ROW_REDUCE) {
            char acc[16], sh[16], fin[512];
            snprintf(acc, sizeof acc, "a%d", k);
            snprintf(sh, sizeof sh, "sh%d", k);
            if (e->cuda)
                emit_block_reduce(e, &ro[k], acc, sh);
            emit_finish(e, e->p->body->nodes[node], e->p->types[node].dtype, acc, "K", fin, sizeof fin);
            new_var(e, v, sizeof v);
            out(e, "    %s %s = %s;\n", value_type(e->p->types[node].dtype), v, fin);
        } else {
            idx ix;
            reduce_idx(e, node, mask, "o", "0", false, &ix);
            emit_compute(e, node, &ix, v, sizeof v);
        }
        snprintf(e->rowvar[node], sizeof e->rowvar[node], "%s", v);
        out(e, "%s", first);
        emit_store(e, node, "o", v);
    }
}

/* Ops worth a store and a load to compute once per element instead of once per phase. */
static bool costly_op(int op)
{
    return (xe_op_get(op)->flags & XE_OPF_COSTLY) != 0;
}

static void row_phases(em *e, const xg_step *s, const bool *mask, const red_ops *ro)
{
    for (int ph = 0; ph < s->n_phases; ph++) {
        out(e, "    /* phase %d */\n", ph);
        emit_row_pass(e, s, ph, mask, ro);
        emit_row_after(e, s, ph, mask, ro);
        if (e->cuda) /* this pass's stores are read by other threads in the next */
            out(e, "    __syncthreads();\n");
    }
}

/* Elements of one row: the product of the reduced dims. */
static int64_t row_length(const xe_shape *x, const bool *mask)
{
    int64_t k = 1;
    for (int d = 0; d < x->rank; d++)
        if (mask[d])
            k *= x->dims[d];
    return k;
}

/*
 * Prints the phases with nothing kept: e->rc_phases[node] gets the phases
 * that compute node at their own element; the text, the variable and memo
 * counters and the row registers are put back as they were.
 */
static void row_phases_dry_run(em *e, const xg_step *s, const bool *mask, const red_ops *ro)
{
    int n = e->p->body->n_nodes;
    size_t len = e->len, rv_bytes = ((size_t)n + 1) * sizeof *e->rowvar;
    int var = e->var, n_memo = e->n_memo;
    char(*rowvar)[16] = malloc(rv_bytes);
    if (!rowvar) {
        e->oom = true;
        return;
    }
    memcpy(rowvar, e->rowvar, rv_bytes);
    memset(e->rc_phases, 0, sizeof *e->rc_phases * (size_t)n);
    e->rc_dry = true;
    row_phases(e, s, mask, ro);
    e->rc_dry = false;
    e->len = len;
    if (e->buf)
        e->buf[len] = '\0';
    e->var = var;
    e->n_memo = n_memo;
    memcpy(e->rowvar, rowvar, rv_bytes);
    free(rowvar);
}

/*
 * The row cache (CPU, static shapes): a value of the row shape that is
 * not stored but computed by several phases with a costly op (softmax's
 * exponentials) is kept by the first of them in a buffer of one row (K
 * elements) on the thread's stack, at most XG_ROW_CACHE_BYTES in all, and
 * read back by the others. Declares the buffers; returns their count.
 */
#define XG_ROW_CACHE_BYTES (64 << 10)
static int row_cache_plan(em *e, const xg_step *s, const bool *mask, const red_ops *ro, int64_t K)
{
    int n = e->p->body->n_nodes;
    for (int i = 0; i < n; i++)
        e->rc_first[i] = -1;
    if (e->cuda || e->p->generic || K <= 0)
        return 0;
    row_phases_dry_run(e, s, mask, ro);
    int64_t bytes = 0;
    int count = 0;
    for (int i = 0; i < n && !e->oom; i++) {
        unsigned ph = e->rc_phases[i];
        xe_dtype dt = e->p->types[i].dtype;
        int64_t b = K * (dt == XE_F64 || dt == XE_I64 ? 8 : 4);
        if ((ph & (ph - 1)) == 0 || !costly_op(e->p->body->nodes[i]->op) ||
            bytes + b > XG_ROW_CACHE_BYTES)
            continue;
        e->rc_first[i] = __builtin_ctz(ph);
        bytes += b;
        count++;
        out(e, "    _Alignas(64) %s rc%d[%lld]; /* %s: computed in phase %d, read by later ones */\n",
            value_type(dt), i, (long long)K, e->p->body->nodes[i]->name, e->rc_first[i]);
    }
    return count;
}

/*
 * A row kernel (XG_STEP_ROW): for each row, the step's phases in order,
 * each one pass over the row (in cache after the first). CPU: rows in
 * parallel, each pass a simd loop; GPU: a block per row, each pass a
 * block-stride loop, reductions combined across the block.
 */
static void emit_row_kernel(em *e, int step, const xg_step *s)
{
    const xe_node *r0 = e->p->body->nodes[s->outs[0]];
    bool mask[XE_MAX_RANK] = {0};
    xg_reduce_mask(r0, shape_of(e, s->x)->rank, mask);
    red_ops ro[XG_MAX_OUTS];
    char O[256], K[256];
    kernel_begin(e, step);
    part_size(e, s->x, mask, false, O, sizeof O);
    part_size(e, s->x, mask, true, K, sizeof K);
    out(e, "    const xg_idx O = %s, K = %s;\n", O, K);
    for (int k = 0; k < s->n_outs; k++) {
        if (s->role[k] != XG_ROW_REDUCE)
            continue;
        const xe_node *r = e->p->body->nodes[s->outs[k]];
        ro[k] = red_ops_for(r->op, e->p->types[r->inputs[0]].dtype);
        if (e->cuda)
            out(e, "    __shared__ %s sh%d[33];\n", ro[k].acc_type, k);
    }
    if (e->cuda)
        out(e, "    for (xg_idx o = blockIdx.x; o < O; o += gridDim.x) {\n");
    else
        out(e, "#pragma omp parallel for if (O > 1 && O * K >= 32768) schedule(static)\n"
               "    for (xg_idx o = 0; o < O; o++) {\n");
    row_cache_plan(e, s, mask, ro, row_length(shape_of(e, s->x), mask));
    row_phases(e, s, mask, ro);
    out(e, "    }\n}\n\n");
}

/*
 * softmax: rows along the axis; max, then exp and sum (exp stored), then
 * scale. CPU: a thread per row; GPU: a block per row, max and sum
 * combined across the block (each thread rescales the elements it wrote).
 */
static void emit_softmax_kernel(em *e, int step, const xg_step *s)
{
    int node = s->outs[0], x = e->p->body->nodes[node]->inputs[0];
    const xe_shape *sh = shape_of(e, x);
    int64_t axis = xe_node_attr_int(e->p->body->nodes[node], "axis", -1);
    if (axis < 0)
        axis += sh->rank;
    bool mask[XE_MAX_RANK] = {0};
    mask[axis] = true;
    xe_dtype dt = e->p->types[node].dtype;
    const char *vt = value_type(dt), *f = dt == XE_F64 ? "" : "f";
    red_ops max = red_ops_for(XE_OP_REDUCE_MAX, dt), sum = red_ops_for(XE_OP_REDUCE_SUM, dt);
    max.acc_type = sum.acc_type = vt;
    char O[256], K[256], v[16], off[24];
    kernel_begin(e, step);
    part_size(e, x, mask, false, O, sizeof O);
    part_size(e, x, mask, true, K, sizeof K);
    out(e, "    const xg_idx O = %s, K = %s;\n", O, K);
    if (e->cuda)
        out(e, "    __shared__ %s shm[33], shs[33];\n"
               "    for (xg_idx o = blockIdx.x; o < O; o += gridDim.x) {\n", vt);
    else
        out(e, "#pragma omp parallel for if (O > 1 && O * K >= 32768) schedule(static)\n"
               "    for (xg_idx o = 0; o < O; o++) {\n");
    out(e, "    %s m = -1.0%s / 0.0%s, sum = 0;\n", vt, f, f);
    row_pass_header(e);
    idx ix;
    int saved = e->n_memo;
    reduce_idx(e, x, mask, "o", "k", false, &ix);
    emit_val(e, x, &ix, v, sizeof v);
    out(e, "    m = xe_max_%s(m, %s);\n    }\n", sfx(dt), v);
    if (e->cuda)
        emit_block_reduce(e, &max, "m", "shm");
    e->n_memo = saved;
    row_pass_header(e);
    reduce_idx(e, x, mask, "o", "k", false, &ix);
    emit_val(e, x, &ix, v, sizeof v);
    flat_of(e, x, &ix, off, sizeof off);
    out(e, "    %s ev = %s(%s - m);\n    sum += ev;\n", vt, dt == XE_F64 ? "exp" : "xe_exp_f32", v);
    emit_store(e, node, off, "ev");
    out(e, "    }\n");
    if (e->cuda)
        emit_block_reduce(e, &sum, "sum", "shs");
    e->n_memo = saved;
    row_pass_header(e);
    reduce_idx(e, x, mask, "o", "k", false, &ix);
    flat_of(e, x, &ix, off, sizeof off);
    char cur[16];
    emit_load(e, node, &ix, cur, sizeof cur);
    char q[64];
    snprintf(q, sizeof q, "%s / sum", cur);
    emit_store(e, node, off, q);
    out(e, "    }\n");
    if (e->cuda)
        out(e, "    __syncthreads();\n");
    out(e, "    }\n}\n\n");
    e->n_memo = saved;
}

/* ---- the program ---------------------------------------------------------------- */

/* scalar.h's text: the common part and the sections of the ops the program uses. */
static void emit_scalar_text(em *e)
{
    bool used[XE_OP_COUNT] = {false};
    for (int k = 0; k < e->p->body->n_nodes; k++)
        if (e->p->body->nodes[k]->op < XE_OP_COUNT)
            used[e->p->body->nodes[k]->op] = true;
    char *t = xg_scalar_text_for(used);
    if (!t) {
        e->oom = true;
        return;
    }
    out(e, "%s\n", t);
    free(t);
}

static void emit_prelude(em *e)
{
    if (e->cuda) {
        out(e, "/* generated by xlac: CUDA C++ for NVRTC */\n"
               "typedef signed char int8_t;\ntypedef unsigned char uint8_t;\ntypedef short int16_t;\n"
               "typedef unsigned short uint16_t;\ntypedef int int32_t;\ntypedef unsigned int uint32_t;\n"
               "typedef long long int64_t;\ntypedef unsigned long long uint64_t;\n"
               "#define INT64_MIN (-9223372036854775807LL - 1)\n#define INT64_MAX 9223372036854775807LL\n");
        emit_scalar_text(e);
        out(e, "typedef %s xg_idx; /* index math */\n", e->narrow ? "int" : "long long");
        out(e, "struct xg_args {\n    void *b[%d];\n    int64_t s[%d];\n    void *w; /* workspace */\n};\n\n",
            e->p->body->n_nodes, e->p->n_sizes ? e->p->n_sizes : 1);
        return;
    }
    out(e, "/* generated by xlac: C11 + OpenMP */\n#include <math.h>\n#include <stdint.h>\n#include <stdlib.h>\n\n");
    emit_scalar_text(e);
    out(e, "typedef int64_t xg_idx; /* index math */\n");
    /* NaN-propagating max/min and wrapping integer sums as OpenMP reductions */
    out(e, "#pragma omp declare reduction(xg_max_f32 : float : omp_out = xe_max_f32(omp_out, omp_in)) "
           "initializer(omp_priv = -1.0f / 0.0f)\n"
           "#pragma omp declare reduction(xg_min_f32 : float : omp_out = xe_min_f32(omp_out, omp_in)) "
           "initializer(omp_priv = 1.0f / 0.0f)\n"
           "#pragma omp declare reduction(xg_max_f64 : double : omp_out = xe_max_f64(omp_out, omp_in)) "
           "initializer(omp_priv = -1.0 / 0.0)\n"
           "#pragma omp declare reduction(xg_min_f64 : double : omp_out = xe_min_f64(omp_out, omp_in)) "
           "initializer(omp_priv = 1.0 / 0.0)\n"
           "#pragma omp declare reduction(xg_add_i64 : int64_t : omp_out = xe_add_i64(omp_out, omp_in)) "
           "initializer(omp_priv = 0)\n"
           "#pragma omp declare reduction(xg_mul_i64 : int64_t : omp_out = xe_mul_i64(omp_out, omp_in)) "
           "initializer(omp_priv = 1)\n\n");
}

/*
 * Whether a CUDA program can do its index math in 32 bits: fixed shapes,
 * every tensor of the cluster under 2^30 elements (so an index, a flat
 * offset and a grid-stride step past the end all fit). NVRTC compiles
 * such a program a third faster, and the GPU runs fewer instructions.
 */
static bool fits_narrow_index(const xg_plan *p)
{
    if (p->generic)
        return false;
    for (int i = 0; i < p->body->n_nodes; i++)
        if (xe_shape_numel(&p->types[i].shape) >= ((int64_t)1 << 30))
            return false;
    return true;
}

char *xg_emit_program(const xg_plan *p, xg_target target, xe_status *st)
{
    em *e = calloc(1, sizeof *e);
    if (!e) {
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    e->p = p;
    e->cuda = target == XG_TARGET_CUDA;
    e->narrow = e->cuda && fits_narrow_index(p);
    e->row_ph = -1;
    e->rowvar = calloc((size_t)p->body->n_nodes + 1, sizeof *e->rowvar);
    e->rc_phases = calloc((size_t)p->body->n_nodes + 1, sizeof *e->rc_phases);
    e->rc_first = calloc((size_t)p->body->n_nodes + 1, sizeof *e->rc_first);
    if (!e->rowvar || !e->rc_phases || !e->rc_first) {
        free(e->rowvar);
        free(e->rc_phases);
        free(e->rc_first);
        free(e);
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    emit_prelude(e);
    for (int i = 0; i < p->n_steps; i++) {
        const xg_step *s = &p->steps[i];
        switch (s->kind) {
        case XG_STEP_LOOP: emit_loop_kernel(e, i, s); break;
        case XG_STEP_REDUCE: emit_reduce_kernel(e, i, s); break;
        case XG_STEP_SOFTMAX: emit_softmax_kernel(e, i, s); break;
        case XG_STEP_ROW: emit_row_kernel(e, i, s); break;
        case XG_STEP_LIBRARY: break;
        }
    }
    char *text = e->buf;
    if (e->oom || e->unsupported) {
        if (e->unsupported)
            xe_fail(st, XE_ERR_UNSUPPORTED, "cannot generate code: %s", e->why);
        else
            xe_fail(st, XE_ERR_NOMEM, "out of memory generating code");
        free(text);
        text = NULL;
    }
    free(e->rowvar);
    free(e->rc_phases);
    free(e->rc_first);
    free(e);
    return text;
}
