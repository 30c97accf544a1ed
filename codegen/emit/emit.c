/*
 * The emitter: one walk over a fusion plan that prints the program, C11
 * with OpenMP or CUDA C++, from the same code. What differs between the
 * two is the backend's (backend.h): data in a dialect (loop headers,
 * barriers, restrict) and hooks (prelude, kernel signature, reduction
 * kernels); the scalar expressions and index maps are printed by the
 * same functions for both, so the CPU tests exercise the arithmetic the
 * GPU runs. Every generated program starts with the text of
 * executor/ir/scalar.h, the arithmetic the per-op kernels use. This file
 * holds what every kernel's emitter takes from the walk: index maps,
 * values, stores, a kernel's beginning and end. Below it: the sink
 * (emit_out.c) and an op's text (emit_scalar.c); above it: the kernels
 * (emit_loop.c, emit_reduce.c and emit_row.c) and the walk over a plan's
 * steps that calls them (emit_program.c).
 *
 * Values are computed at a symbolic index: an idx holds, for each dim of
 * the value's shape, the name of a local variable (or "0"), and the flat
 * offset when it is known. Shape ops only rewrite the idx (transpose
 * permutes it, broadcast pins dims to 0, slice adds offsets, reshape goes
 * through the flat offset), so no view is ever materialised.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_impl.h"

static void unsupported(em *e, const xe_node *n, const char *why)
{
    if (!e->unsupported)
        snprintf(e->why, sizeof e->why, "node %s (%s): %s", n->name, xe_op_name(n->op), why);
    e->unsupported = true;
}

/* ---- types and sizes ---------------------------------------------------------- */

/* Dim d of node's shape: a literal, or S[k] in shape-generic programs. */
void xg_dim_text(const em *e, int node, int d, char *buf, size_t len)
{
    if (e->p->generic)
        snprintf(buf, len, "S[%d]", e->p->soff[node] + d);
    else
        snprintf(buf, len, "%lld%s", (long long)e->p->types[node].shape.dims[d], LL(e));
}

/* int64_t vN = expr; */
/* The XG_VAR_* of index variable number v (0 when unrecorded). */
static unsigned var_flags(const em *e, long v)
{
    return v >= 0 && v < e->cap_var_flags ? e->var_flags[v] : 0;
}

unsigned xg_index_flags(const em *e, const char *text)
{
    unsigned f = 0;
    for (const char *c = text; *c;) {
        if (!isalpha((unsigned char)*c) && *c != '_') { /* numbers with their suffixes too */
            bool number = isdigit((unsigned char)*c);
            c++;
            while (number && isalnum((unsigned char)*c))
                c++;
            continue;
        }
        const char *w = c;
        while (isalnum((unsigned char)*c) || *c == '_')
            c++;
        size_t n = (size_t)(c - w);
        if (n == 1 && (*w == 'i' || *w == 'j' || *w == 'k'))
            f |= XG_VAR_INNER;
        else if (*w == 'v' && n > 1 && strspn(w + 1, "0123456789") == n - 1)
            f |= var_flags(e, strtol(w + 1, NULL, 10));
    }
    if ((f & XG_VAR_INNER) && strpbrk(text, "/%"))
        f |= XG_VAR_SCATTERED;
    return f;
}

/* Records vN's flags (the table grows; out of memory, a variable is simply unrecorded). */
static void record_flags(em *e, int v, unsigned f)
{
    if (v >= e->cap_var_flags) {
        int cap = 2 * v + 64;
        unsigned char *t = realloc(e->var_flags, (size_t)cap);
        if (!t)
            return;
        memset(t + e->cap_var_flags, 0, (size_t)(cap - e->cap_var_flags));
        e->var_flags = t;
        e->cap_var_flags = cap;
    }
    e->var_flags[v] = (unsigned char)f;
}

void xg_let_index(em *e, char *name, size_t len, const char *fmt, ...)
{
    char expr[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(expr, sizeof expr, fmt, ap);
    va_end(ap);
    int v = e->var;
    new_var(e, name, len);
    record_flags(e, v, xg_index_flags(e, expr));
    xg_out(e, "    xg_idx %s = %s;\n", name, expr);
}

/* Product of dims [from, rank) of a fixed shape (1 when empty). */
static int64_t fixed_stride(const xe_shape *s, int from)
{
    int64_t st = 1;
    for (int d = from; d < s->rank; d++)
        st *= s->dims[d];
    return st;
}

/* Product of dims [from, rank) of node's shape, as text ("1" when empty). */
static void stride_text(const em *e, int node, int from, char *buf, size_t len)
{
    const xe_shape *s = shape_of(e, node);
    if (!e->p->generic) {
        snprintf(buf, len, "%lld%s", (long long)fixed_stride(s, from), LL(e));
        return;
    }
    snprintf(buf, len, "1");
    for (int d = from; d < s->rank; d++) {
        size_t u = strlen(buf);
        snprintf(buf + u, len - u, "*S[%d]", e->p->soff[node] + d);
    }
}

/* ---- index maps ---------------------------------------------------------------- */

/*
 * In a fixed-shape loop nest (i = r * L + j, j < L), dim d of an index
 * from i whose stride is a multiple of L depends on the row only: from r,
 * so it is computed once per row (a GroupNorm's per-group statistics
 * through its reshape were a gather per element, and kept gcc from
 * vectorizing the loop: 12 ms where the per-op kernels took 3). False
 * when it is not such a dim.
 */
static bool idx_dim_from_row(em *e, const xe_shape *s, int d, const char *flat, char *out,
                             size_t len)
{
    int64_t st = fixed_stride(s, d + 1);
    if (!e->nest_l || strcmp(flat, "i") || st % e->nest_l)
        return false;
    long long rows = (long long)(st / e->nest_l);
    if (d == 0)
        xg_let_index(e, out, len, "r / (%lld%s)", rows, LL(e));
    else
        xg_let_index(e, out, len, "(r / (%lld%s)) %% %lld%s", rows, LL(e), (long long)s->dims[d],
                     LL(e));
    return true;
}

/*
 * The other side of the same nest: dim d of an index from i whose stride times size divides L
 * depends on j only ((i / st) % n is (j / st) % n, and j itself when st is 1 and n is L), so gcc
 * sees an index that moves by steps along the loop, not a / or % of r * L + j that it cannot
 * vectorize (fp16 BERT's key transpose, [1,4,64,128] read from [1,128,256]: a scalar loop of
 * 0.31 ms for 32K elements). False when it is not such a dim.
 */
static bool idx_dim_from_inner(em *e, const xe_shape *s, int d, const char *flat, char *out,
                               size_t len)
{
    int64_t st = fixed_stride(s, d + 1), n = s->dims[d];
    if (!e->nest_l || strcmp(flat, "i") || e->nest_l % (st * n))
        return false;
    if (st == 1 && n == e->nest_l)
        snprintf(out, len, "j");
    else if (st == 1)
        xg_let_index(e, out, len, "j %% %lld%s", (long long)n, LL(e));
    else if (st * n == e->nest_l)
        xg_let_index(e, out, len, "j / (%lld%s)", (long long)st, LL(e));
    else
        xg_let_index(e, out, len, "(j / (%lld%s)) %% %lld%s", (long long)st, LL(e), (long long)n,
                     LL(e));
    return true;
}

/* Multi-index of node's shape from a flat offset variable. */
void xg_idx_from_flat(em *e, int node, const char *flat, idx *ix)
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
        if (idx_dim_from_row(e, s, d, flat, ix->d[d], sizeof ix->d[d]) ||
            idx_dim_from_inner(e, s, d, flat, ix->d[d], sizeof ix->d[d]))
            continue;
        stride_text(e, node, d + 1, st, sizeof st);
        xg_dim_text(e, node, d, dim, sizeof dim);
        if (d == 0)
            xg_let_index(e, ix->d[d], sizeof ix->d[d], "%s / (%s)", flat, st);
        else
            xg_let_index(e, ix->d[d], sizeof ix->d[d], "(%s / (%s)) %% %s", flat, st, dim);
    }
}

/*
 * The stride of dim d of node's shape as text: its literal, or, where the
 * backend asks (opaque_pow2_strides) and dim d's index moves by steps
 * along the inner loop (no / or % of it), a power of two of 32 or more as
 * the variable xg_sN that xg_kernel_end sets once per kernel.
 */
static void dim_stride_text(em *e, int node, int d, const char *index, char *buf, size_t len)
{
    stride_text(e, node, d + 1, buf, len);
    unsigned f = xg_index_flags(e, index); /* a scattered index is a gather load anyway */
    if (!e->b->render.opaque_pow2_strides || e->p->generic || !(f & XG_VAR_INNER) ||
        (f & XG_VAR_SCATTERED))
        return;
    int64_t st = fixed_stride(shape_of(e, node), d + 1);
    if (st < 32 || (st & (st - 1)))
        return;
    e->opaque_strides |= (uint64_t)1 << __builtin_ctzll((unsigned long long)st);
    snprintf(buf, len, "xg_s%lld", (long long)st);
}

/* Flat offset of an idx in node's shape (a variable). */
void xg_flat_of(em *e, int node, const idx *ix, char *buf, size_t len)
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
        dim_stride_text(e, node, d, ix->d[d], st, sizeof st);
        size_t u = strlen(expr);
        snprintf(expr + u, sizeof expr - u, " + %s * (%s)", ix->d[d], st);
    }
    xg_let_index(e, buf, len, "%s", expr);
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

void xg_memo_add(em *e, int node, const idx *ix, const char *var)
{
    if (e->n_memo == MAX_MEMO)
        return;
    memo *m = &e->m[e->n_memo++];
    m->node = node;
    idx_key(node, ix, m->key, sizeof m->key);
    snprintf(m->var, sizeof m->var, "%s", var);
}

/* ---- values ------------------------------------------------------------------------- */

/* Whether this machine (the C target's) stores the low half of a 32-bit word first. */
static bool little_endian(void)
{
    const uint32_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

/* Loads a materialized node at ix. */
void xg_emit_load(em *e, int node, const idx *ix, char *var, size_t len)
{
    xe_dtype dt = e->p->types[node].dtype;
    char off[24];
    xg_flat_of(e, node, ix, off, sizeof off);
    new_var(e, var, len);
    if (dt == XE_F16 && e->b->render.f16_word_gather && little_endian() &&
        (xg_index_flags(e, off) & XG_VAR_SCATTERED)) {
        /* the aligned word that holds p[off] (never past a page: an aligned 4 bytes); its index
         * in an int where the tensor's size allows, as gcc 12 makes no gather of a 64-bit one */
        if (!e->p->generic && xe_shape_numel(shape_of(e, node)) < INT32_MAX) {
            char k[24], w[24]; /* variables of their own: the row hoisting sees what they read */
            new_var(e, k, sizeof k);
            new_var(e, w, sizeof w);
            xg_out(e,
                   "    int %s = (int)(%s) + (int)(((__UINTPTR_TYPE__)p%d >> 1) & 1);\n"
                   "    uint32_t %s;\n"
                   "    __builtin_memcpy(&%s, (const uint32_t *)((__UINTPTR_TYPE__)p%d & "
                   "~(__UINTPTR_TYPE__)3) + (%s >> 1), 4);\n"
                   "    float %s = %s((uint16_t)(%s >> ((%s & 1) * 16)));\n",
                   k, off, node, w, w, node, k, var, e->b->render.h2f, w, k);
        } else
            xg_out(e,
                   "    uint32_t %sw;\n"
                   "    __builtin_memcpy(&%sw, (const void *)((__UINTPTR_TYPE__)(p%d + %s) & "
                   "~(__UINTPTR_TYPE__)3), 4);\n"
                   "    float %s = %s((uint16_t)(%sw >> (((__UINTPTR_TYPE__)(p%d + %s) & 2) * "
                   "8)));\n",
                   var, var, node, off, var, e->b->render.h2f, var, node, off);
    } else if (dt == XE_F16)
        xg_out(e, "    float %s = %s(p%d[%s]);\n", var, e->b->render.h2f, node, off);
    else
        xg_out(e, "    %s %s = p%d[%s];\n", value_type(dt), var, node, off);
}

/*
 * A reshape's operand index from its result's, dim group by dim group: the result's dims and the
 * operand's (size-1 dims left out: their index is 0) fall into the shortest runs of equal
 * product, and each run's index is recomposed from the result's dims of the run and decomposed
 * into the operand's, with / and % by the run's own strides only. [8,4,17,64] from [8,2,2,17,64]
 * is [a, b / 2, b % 2, c, d]. Through the flat offset instead, each of the operand's dims was a
 * / and a % of one large sum (a KV-cache decode step's key expansion after its transpose: 0.16
 * ms a layer for 35K elements). Fixed shapes, an index that is not flat.
 */
static void idx_for_reshape(em *e, const xe_shape *so, const xe_shape *si, const idx *ix, idx *r)
{
    int i = 0, j = 0;
    for (int d = 0; d < si->rank; d++)
        snprintf(r->d[d], sizeof r->d[d], "0");
    for (;;) {
        while (i < so->rank && so->dims[i] == 1)
            i++;
        while (j < si->rank && si->dims[j] == 1)
            j++;
        if (i >= so->rank || j >= si->rank)
            return;
        int i0 = i, j0 = j;
        int64_t po = so->dims[i], pi = si->dims[j];
        while (po != pi) { /* equal element counts: both end together */
            if (po < pi ? i + 1 >= so->rank : j + 1 >= si->rank)
                return;
            if (po < pi)
                po *= so->dims[++i];
            else
                pi *= si->dims[++j];
        }
        char g[sizeof r->d[0]];
        if (i == i0) {
            snprintf(g, sizeof g, "%s", ix->d[i0]);
        } else { /* the run's own flat index */
            char expr[512] = "0";
            int64_t st = 1;
            for (int k = i; k >= i0; st *= so->dims[k--]) {
                size_t u = strlen(expr);
                if (so->dims[k] > 1 && strcmp(ix->d[k], "0"))
                    snprintf(expr + u, sizeof expr - u, " + %s * %lld%s", ix->d[k], (long long)st,
                             LL(e));
            }
            xg_let_index(e, g, sizeof g, "%s", expr);
        }
        int64_t st = pi;
        for (int k = j0; k <= j; k++) {
            if (si->dims[k] == 1)
                continue;
            st /= si->dims[k];
            if (j == j0)
                snprintf(r->d[k], sizeof r->d[k], "%s", g);
            else if (k == j0)
                xg_let_index(e, r->d[k], sizeof r->d[k], "%s / %lld%s", g, (long long)st, LL(e));
            else
                xg_let_index(e, r->d[k], sizeof r->d[k], "(%s / %lld%s) %% %lld%s", g,
                             (long long)st, LL(e), (long long)si->dims[k], LL(e));
        }
        i++;
        j++;
    }
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
                xg_dim_text(e, in, d, dim, sizeof dim);
                xg_let_index(e, r->d[d], sizeof r->d[d], "%s + (%s + %lld%s < 0 ? 0 : %s + %lld%s)",
                             ix->d[d], dim, (long long)begin, LL(e), dim, (long long)begin, LL(e));
            } else if (e->p->generic) { /* a begin past the dim leaves nothing to index */
                lo = begin;
            }
            if (e->p->generic && begin < 0)
                continue;
            if (lo == 0)
                snprintf(r->d[d], sizeof r->d[d], "%s", ix->d[d]);
            else
                xg_let_index(e, r->d[d], sizeof r->d[d], "%s + %lld%s", ix->d[d], (long long)lo,
                             LL(e));
        }
    } else if (!ix->flat[0] && !e->p->generic) { /* reshape, the index not flat: by dim groups */
        idx_for_reshape(e, shape_of(e, node), si, ix, r);
    } else { /* reshape: same flat offset */
        char flat[24];
        xg_flat_of(e, node, ix, flat, sizeof flat);
        xg_idx_from_flat(e, in, flat, r);
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
        xg_dim_text(e, in, (int)axis, w, sizeof w);
        total += shape_of(e, in)->dims[axis];
        if (!e->p->generic)
            snprintf(end[k], sizeof end[k], "%lld%s", (long long)total, LL(e));
        else if (k == 0)
            snprintf(end[k], sizeof end[k], "%s", w);
        else if (k + 1 < n->n_inputs) /* the last end is never read */
            xg_let_index(e, end[k], sizeof end[k], "%s + %s", end[k - 1], w);
    }
    xe_dtype dt = e->p->types[node].dtype;
    new_var(e, var, len);
    xg_out(e, "    %s %s;\n", value_type(dt), var);
    for (int k = 0; k < n->n_inputs; k++) {
        if (k + 1 < n->n_inputs)
            xg_out(e, "    %sif (%s < %s) {\n", k ? "else " : "", ix->d[axis], end[k]);
        else
            xg_out(e, "    else {\n");
        idx r = *ix;
        r.flat[0] = '\0';
        if (k)
            xg_let_index(e, r.d[axis], sizeof r.d[axis], "%s - %s", ix->d[axis], end[k - 1]);
        int saved = e->n_memo; /* values computed in a branch stay there */
        char v[16];
        xg_emit_val(e, n->inputs[k], &r, v, sizeof v);
        e->n_memo = saved;
        xg_out(e, "    %s = %s;\n    }\n", var, v);
    }
    free(end);
}

/* iota, or a scalar constant, at ix. */
static void source_text(const xe_node *n, xe_dtype dt, const idx *ix, char *text, size_t len)
{
    if (n->op == XE_OP_CONST) {
        xg_literal(dt, xe_load_f64(n->value->data, dt, 0), text, len);
    } else {
        int64_t axis = xe_node_attr_int(n, "axis", 0);
        if (axis < 0)
            axis += ix->rank;
        snprintf(text, len, "(%s)%s", value_type(dt), ix->rank ? ix->d[axis] : "0");
    }
}

/* A shape op at ix: its operand at the rewritten idx (concat: the operand's range). */
static void emit_shape_op(em *e, const xe_node *n, int node, const idx *ix, char *var, size_t len)
{
    if (n->op == XE_OP_CONCAT && n->n_inputs == 1) { /* the operand itself */
        xg_emit_val(e, n->inputs[0], ix, var, len);
    } else if (n->op == XE_OP_CONCAT) {
        emit_concat(e, n, node, ix, var, len);
    } else {
        idx r;
        idx_for_shape_op(e, n, node, ix, &r);
        xg_emit_val(e, n->inputs[0], &r, var, len);
    }
}

/*
 * An f16 op's result: computed in float (text) and rounded to f16, as op by op, each its own
 * variable, the rounded one (var) marked as the other's twin so that a store converts the
 * unrounded float (xg_emit_store).
 */
static void f16_result(em *e, const char *text, char *var, size_t len)
{
    char raw[24], rounded[600];
    new_var(e, raw, sizeof raw);
    xg_out(e, "    float %s = %s;\n", raw, text);
    new_var(e, var, len);
    xg_f16_round_text(e, raw, rounded, sizeof rounded);
    xg_out(e, "    float %s = %s;\n", var, rounded);
    record_flags(e, e->var - 1, XG_VAR_F16_TWIN);
}

/*
 * Whether node is an f16 op whose result is one of its f16 operands' values, or such a value
 * negated (relu, neg, abs, maximum, minimum, select): every f16 value in generated code is a half
 * already (loaded, or rounded when computed), so rounding the result again changes no bit but a
 * signalling NaN's quiet bit (an input's, loaded where the load is not staged in a float row,
 * emit_f16_rows.c): its f16 store sets it anyway; widened to f32 it stays signalling. An fp16
 * ResNet's ReLU after each residual add rounded twice.
 */
static bool keeps_f16(const em *e, const xe_node *n)
{
    int first = n->op == XE_OP_SELECT ? 1 : 0;
    if (n->op != XE_OP_RELU && n->op != XE_OP_NEG && n->op != XE_OP_ABS && n->op != XE_OP_MAXIMUM &&
        n->op != XE_OP_MINIMUM && n->op != XE_OP_SELECT)
        return false;
    for (int k = first; k < n->n_inputs; k++)
        if (e->p->types[n->inputs[k]].dtype != XE_F16)
            return false;
    return true;
}

/* Computes node at ix from its operands (never a load of the node itself). */
void xg_emit_compute(em *e, int node, const idx *ix, char *var, size_t len)
{
    const xe_node *n = e->p->body->nodes[node];
    const xe_op_def *d = xe_op_get(n->op);
    xe_dtype dt = e->p->types[node].dtype;
    char a[3][16], text[512];
    if (xe_op_is_elementwise(n->op)) {
        for (int k = 0; k < n->n_inputs; k++) {
            idx r;
            idx_broadcast(e, node, n->inputs[k], ix, &r);
            xg_emit_val(e, n->inputs[k], &r, a[k], sizeof a[k]);
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
    case XE_CLASS_SELECT: /* floats by scalar.h's bit select: gcc 12 vectorizes a ?: of floats on
                             a u8 condition only with AVX-512's masks (a QDQ model's rounding: 30 ms
                             scalar on AVX2 for 8 x 32 x 64 x 64; an fp16 BERT's where(isnan(p), 0,
                             p) after each softmax, 13 % of its run); f16 and bf16 values are floats
                             here (value_type). Integers keep ?:, whose other arm is not evaluated
                           */
        if (dt == XE_F64 || !strcmp(value_type(dt), "float"))
            snprintf(text, sizeof text, "xe_select_%s(%s, %s, %s)", dt == XE_F64 ? "f64" : "f32",
                     a[0], a[1], a[2]);
        else
            snprintf(text, sizeof text, "%s ? %s : %s", a[0], a[1], a[2]);
        break;
    case XE_CLASS_CAST:
        xg_cast_text(in_dt, dt, a[0], text, sizeof text);
        break;
    case XE_CLASS_SOURCE:
        source_text(n, dt, ix, text, sizeof text);
        break;
    case XE_CLASS_SHAPE:
        emit_shape_op(e, n, node, ix, var, len);
        return;
    default:
        unsupported(e, n, "no emitter for this op inside a fused loop");
        snprintf(text, sizeof text, "0");
        break;
    }
    if (dt == XE_F16 && !keeps_f16(e, n)) {
        f16_result(e, text, var, len);
    } else {
        new_var(e, var, len);
        xg_out(e, "    %s %s = %s;\n", value_type(dt), var, text);
    }
}

void xg_f16_round_text(const em *e, const char *x, char *buf, size_t len)
{
    if (e->b->render.f16_round)
        snprintf(buf, len, "%s(%s)", e->b->render.f16_round, x);
    else
        snprintf(buf, len, "%s(%s(%s))", e->b->render.h2f, e->b->render.f2h, x);
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
        xg_emit_compute(e, node, ix, var, len);
        xg_out(e, "    rc%d[k] = %s;\n", node, var);
    } else {
        new_var(e, var, len);
        xg_out(e, "    %s %s = rc%d[k];\n", value_type(e->p->types[node].dtype), var, node);
    }
    return true;
}

/* The value of node at ix: memoized, loaded when materialized, else computed. */
const char *xg_emit_val(em *e, int node, const idx *ix, char *var, size_t len)
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
        xg_emit_load(e, node, ix, var, len);
    else if (!row_cache_value(e, node, ix, var, len))
        xg_emit_compute(e, node, ix, var, len);
    xg_memo_add(e, node, ix, var);
    return var;
}

void xg_emit_store(em *e, int node, const char *flat, const char *v)
{
    xe_dtype dt = e->p->types[node].dtype;
    int n = -1, end = 0;
    if (dt == XE_F16 && sscanf(v, "v%d%n", &n, &end) == 1 && !v[end] && n > 0 &&
        (var_flags(e, n) & XG_VAR_F16_TWIN))
        /* f2h(f16_round(x)) is f2h(x), bit for bit (NaN too): the rounding, if nothing else reads
         * it, is dead code (fp16 BERT's GELU loop: 4 of its ops' dozen conversions) */
        xg_out(e, "    p%d[%s] = %s(v%d);\n", node, flat, e->b->render.f2h, n - 1);
    else if (dt == XE_F16)
        xg_out(e, "    p%d[%s] = %s(%s);\n", node, flat, e->b->render.f2h, v);
    else
        xg_out(e, "    p%d[%s] = %s;\n", node, flat, v);
}

/* ---- kernels ------------------------------------------------------------------------- */

void xg_numel_text(const em *e, int node, char *buf, size_t len)
{
    stride_text(e, node, 0, buf, len);
}

void xg_kernel_begin(em *e, int step)
{
    char name[32];
    xg_step_name(step, name, sizeof name);
    e->n_memo = 0;
    e->nest_l = 0;
    e->nest_rows = false;
    for (int i = 0; i < e->p->body->n_nodes; i++)
        e->rowvar[i][0] = '\0';
    e->sig_at = e->text.len;
    e->b->render.kernel_signature(e, name);
    e->decl_at =
        e->text.len; /* the buffer pointers go here once the body is known (xg_kernel_end) */
}

/* Whether text[at..] starts the token pN (not part of a longer name); *node gets N. */
static bool pointer_token(const char *text, size_t at, int *node)
{
    if (text[at] != 'p' ||
        (at > 0 && (isalnum((unsigned char)text[at - 1]) || text[at - 1] == '_')))
        return false;
    char *end;
    if (!isdigit((unsigned char)text[at + 1]))
        return false;
    long n = strtol(text + at + 1, &end, 10);
    if (isalnum((unsigned char)*end) || *end == '_')
        return false;
    *node = (int)n;
    return true;
}

/*
 * Declares, at the top of the kernel just printed, one restrict pointer for
 * each buffer its body names (outside every loop; distinct buffers never
 * alias), and none for the others: a large cluster's kernels would
 * otherwise each declare every buffer of the cluster, which the compilers
 * (NVRTC most) parse and drop at a cost.
 */
void xg_kernel_end(em *e)
{
    int n = e->p->body->n_nodes, node;
    bool *used = calloc((size_t)n + 1, sizeof *used);
    char *body = e->text.oom || !used ? NULL : strdup(e->text.buf + e->decl_at);
    if (!body) {
        e->oom = true;
        free(used);
        return;
    }
    if (xg_kernel_shared(e, body)) {
        e->opaque_strides = 0;
        xe_text_truncate(&e->text, e->kernel_at);
        free(body);
        free(used);
        return;
    }
    for (size_t k = 0; body[k]; k++)
        if (pointer_token(body, k, &node) && node >= 0 && node < n)
            used[node] = true;
    xe_text_truncate(&e->text, e->decl_at);
    for (int i = 0; i < n; i++)
        if (e->p->mat[i] && used[i])
            xg_out(e, "    %s *%s p%d = (%s *)B[%d];\n", store_type(e->p->types[i].dtype),
                   e->b->render.restrict_kw, i, store_type(e->p->types[i].dtype), i);
    for (int b = 0; b < 64; b++) /* the compiler must not see these constants (dim_stride_text) */
        if (e->opaque_strides >> b & 1)
            xg_out(e, "    xg_idx xg_s%lld = %lldLL;\n    __asm__(\"\" : \"+r\"(xg_s%lld));\n",
                   1LL << b, 1LL << b, 1LL << b);
    e->opaque_strides = 0;
    xg_out(e, "%s", body);
    free(body);
    free(used);
}
