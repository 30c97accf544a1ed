/*
 * Random graph generator (see randgraph.h). Every value's shape is a
 * "variant" of one base shape: each dim is the base dim or 1, leading dims
 * may be missing. Any two variants broadcast, so binary ops can pick any
 * operands. Shape ops are used in pairs that come back to a variant
 * (transpose and its inverse, flatten and reshape back, two slices
 * concatenated), and reductions either keep dims or drop a leading prefix.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "randgraph.h"
#include "support/optable.h"
#include "xlac/op.h"

#define MAX_VALUES 128

typedef struct value {
    char name[16];
    int rank;
    int dims[3];
} value;

typedef struct gen {
    uint64_t s;
    char *buf;
    size_t len, cap;
    value v[MAX_VALUES];
    int n;
    int base_rank, base[3];
    const char *dt;
    bool is_float;
    bool table_ops; /* randgraph_options.table_ops */
} gen;

static uint64_t next(gen *g)
{
    uint64_t z = (g->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int pick(gen *g, int n)
{
    return (int)(next(g) % (uint64_t)n);
}

static void add(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(gen *g, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (g->len + (size_t)n + 1 > g->cap) {
        g->cap = (g->cap + (size_t)n + 1) * 2;
        g->buf = realloc(g->buf, g->cap);
    }
    memcpy(g->buf + g->len, line, (size_t)n + 1);
    g->len += (size_t)n;
}

static void shape_text(const value *v, char *buf, size_t len)
{
    size_t u = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < v->rank; d++)
        u += (size_t)snprintf(buf + u, len - u, "%s%d", d ? "," : "", v->dims[d]);
    snprintf(buf + u, len - u, "]");
}

static value *new_value(gen *g, int rank, const int *dims)
{
    value *v = &g->v[g->n];
    snprintf(v->name, sizeof v->name, "v%d", g->n);
    v->rank = rank;
    if (rank)
        memcpy(v->dims, dims, sizeof(int) * (size_t)rank);
    g->n++;
    return v;
}

/* A random variant of the base shape. */
static void variant(gen *g, int *rank, int *dims)
{
    *rank = g->base_rank - pick(g, g->base_rank + 1) / 2;
    for (int d = 0; d < *rank; d++) {
        int bd = d + g->base_rank - *rank;
        dims[d] = pick(g, 4) == 0 ? 1 : g->base[bd];
    }
}

static const value *any(gen *g)
{
    return &g->v[g->n - 1 - pick(g, g->n < 4 ? g->n : 4)];
}

static void broadcast_shape(const value *a, const value *b, int *rank, int *dims)
{
    *rank = a->rank > b->rank ? a->rank : b->rank;
    for (int d = 0; d < *rank; d++) {
        int da = d - (*rank - a->rank) >= 0 ? a->dims[d - (*rank - a->rank)] : 1;
        int db = d - (*rank - b->rank) >= 0 ? b->dims[d - (*rank - b->rank)] : 1;
        dims[d] = da > db ? da : db;
    }
}

/* An op of class cls with an ops.def expression that takes the graph's dtype, from the whole table. */
static const char *table_op(gen *g, xe_op_class cls)
{
    int ops[XE_OP_COUNT], n = 0;
    for (int op = 0; op < XE_OP_COUNT; op++) {
        const xe_op_def *d = xe_op_get(op);
        bool takes = g->is_float ? !(d->flags & (XE_OPF_BOOL_ONLY | XE_OPF_INT_ONLY))
                                 : !(d->flags & (XE_OPF_BOOL_ONLY | XE_OPF_FLOAT_ONLY));
        if (d->cls == cls && optable_has_expr(op) && takes)
            ops[n++] = op;
    }
    return xe_op_name(ops[pick(g, n)]);
}

static void op_binary(gen *g)
{
    static const char *const fl[] = {"add", "sub", "mul", "maximum", "minimum", "div"};
    static const char *const in[] = {"add", "sub", "mul", "maximum", "minimum"};
    const value *a = any(g), *b = any(g);
    int rank, dims[3] = {0};
    broadcast_shape(a, b, &rank, dims);
    const char *op = g->table_ops  ? table_op(g, XE_CLASS_BINARY)
                     : g->is_float ? fl[pick(g, 6)]
                                   : in[pick(g, 5)];
    char an[16], bn[16];
    snprintf(an, sizeof an, "%s", a->name);
    snprintf(bn, sizeof bn, "%s", b->name);
    value *r = new_value(g, rank, dims);
    add(g, "%s = %s(%s, %s)\n", r->name, op, an, bn);
}

static void op_unary(gen *g)
{
    static const char *const fl[] = {"neg", "abs", "tanh", "sigmoid", "relu", "sin", "cos", "gelu", "floor"};
    static const char *const in[] = {"neg", "abs", "relu"};
    const value *a = any(g);
    const char *op = g->table_ops  ? table_op(g, XE_CLASS_UNARY)
                     : g->is_float ? fl[pick(g, 9)]
                                   : in[pick(g, 3)];
    char an[16];
    snprintf(an, sizeof an, "%s", a->name);
    value *r = new_value(g, a->rank, a->dims);
    const char *variant = optable_variant_attr(xe_op_find(op, strlen(op)));
    if (g->table_ops && variant)
        add(g, "%s = %s(%s, %s=%s)\n", r->name, op, an, variant, pick(g, 2) ? "true" : "false");
    else if (!strcmp(op, "gelu"))
        add(g, "%s = gelu(%s, approximate=%s)\n", r->name, an, pick(g, 2) ? "true" : "false");
    else
        add(g, "%s = %s(%s)\n", r->name, op, an);
}

/* select(less(a, b), a, c) */
static void op_select(gen *g)
{
    const value *a = any(g), *b = any(g), *c = any(g);
    int r1, d1[3] = {0}, r2, d2[3] = {0};
    broadcast_shape(a, b, &r1, d1);
    value tmp = {.rank = r1};
    memcpy(tmp.dims, d1, sizeof d1);
    broadcast_shape(&tmp, c, &r2, d2);
    char an[16], bn[16], cn[16];
    snprintf(an, sizeof an, "%s", a->name);
    snprintf(bn, sizeof bn, "%s", b->name);
    snprintf(cn, sizeof cn, "%s", c->name);
    int k = g->n;
    value *r = new_value(g, r2, d2);
    add(g, "c%d = less(%s, %s)\n%s = select(c%d, %s, %s)\n", k, an, bn, r->name, k, an, cn);
}

static void op_reduce(gen *g)
{
    static const char *const fl[] = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"};
    static const char *const in[] = {"reduce_sum", "reduce_max", "reduce_min"};
    const value *a = any(g);
    if (a->rank == 0)
        return op_unary(g);
    const char *op = g->is_float ? fl[pick(g, 4)] : in[pick(g, 3)];
    int mask = 1 + pick(g, (1 << a->rank) - 1);
    /* keepdims=false only when the reduced axes are a leading prefix */
    bool prefix = true;
    for (int d = 0, seen_kept = 0; d < a->rank; d++) {
        if (!(mask >> d & 1))
            seen_kept = 1;
        else if (seen_kept)
            prefix = false;
    }
    bool keep = !prefix || pick(g, 2);
    char axes[64] = "", an[16];
    int rank = 0, dims[3] = {0};
    for (int d = 0; d < a->rank; d++) {
        if (mask >> d & 1) {
            snprintf(axes + strlen(axes), sizeof axes - strlen(axes), "%s%d", axes[0] ? "," : "", d);
            if (keep)
                dims[rank++] = 1;
        } else {
            dims[rank++] = a->dims[d];
        }
    }
    snprintf(an, sizeof an, "%s", a->name);
    value *r = new_value(g, rank, dims);
    add(g, "%s = %s(%s, axes=[%s], keepdims=%s)\n", r->name, op, an, axes, keep ? "true" : "false");
}

/* transpose, a unary op, and the inverse transpose */
static void op_transpose(gen *g)
{
    const value *a = any(g);
    if (a->rank < 2)
        return op_unary(g);
    int perm[3] = {0, 1, 2}, inv[3];
    for (int d = a->rank - 1; d > 0; d--) {
        int j = pick(g, d + 1), t = perm[d];
        perm[d] = perm[j];
        perm[j] = t;
    }
    for (int d = 0; d < a->rank; d++)
        inv[perm[d]] = d;
    char p[32] = "", q[32] = "", an[16];
    for (int d = 0; d < a->rank; d++) {
        snprintf(p + strlen(p), sizeof p - strlen(p), "%s%d", d ? "," : "", perm[d]);
        snprintf(q + strlen(q), sizeof q - strlen(q), "%s%d", d ? "," : "", inv[d]);
    }
    snprintf(an, sizeof an, "%s", a->name);
    int k = g->n;
    value *r = new_value(g, a->rank, a->dims);
    add(g, "t%d = transpose(%s, perm=[%s])\nu%d = %s(t%d)\n%s = transpose(u%d, perm=[%s])\n", k, an, p, k,
        g->is_float ? "tanh" : "neg", k, r->name, k, q);
}

/* flatten, a unary op, reshape back */
static void op_reshape(gen *g)
{
    const value *a = any(g);
    char sh[32], an[16];
    shape_text(a, sh, sizeof sh);
    snprintf(an, sizeof an, "%s", a->name);
    int k = g->n;
    value *r = new_value(g, a->rank, a->dims);
    add(g, "f%d = reshape(%s, shape=[-1])\nw%d = abs(f%d)\n%s = reshape(w%d, shape=%s)\n", k, an, k, k, r->name, k, sh);
}

/* two slices of the last axis, concatenated back */
static void op_slice_concat(gen *g)
{
    const value *a = any(g);
    if (a->rank == 0 || a->dims[a->rank - 1] < 2)
        return op_binary(g);
    int last = a->rank - 1, cut = 1 + pick(g, a->dims[last] - 1);
    char b1[32] = "", e1[32] = "", b2[32] = "", e2[32] = "", an[16];
    for (int d = 0; d < a->rank; d++) {
        const char *sep = d ? "," : "";
        snprintf(b1 + strlen(b1), 32 - strlen(b1), "%s0", sep);
        snprintf(e1 + strlen(e1), 32 - strlen(e1), "%s%d", sep, d == last ? cut : a->dims[d]);
        snprintf(b2 + strlen(b2), 32 - strlen(b2), "%s%d", sep, d == last ? cut : 0);
        snprintf(e2 + strlen(e2), 32 - strlen(e2), "%s%d", sep, a->dims[d]);
    }
    snprintf(an, sizeof an, "%s", a->name);
    int k = g->n;
    value *r = new_value(g, a->rank, a->dims);
    add(g, "s%d = slice(%s, begin=[%s], end=[%s])\nsb%d = slice(%s, begin=[%s], end=[%s])\nsn%d = neg(sb%d)\n"
           "%s = concat(s%d, sn%d, axis=%d)\n", k, an, b1, e1, k, an, b2, e2, k, k, r->name, k, k, last);
}

static void op_broadcast_softmax(gen *g)
{
    const value *a = any(g);
    char an[16], sh[32];
    snprintf(an, sizeof an, "%s", a->name);
    value full = {.rank = g->base_rank};
    memcpy(full.dims, g->base, sizeof g->base);
    shape_text(&full, sh, sizeof sh);
    if (g->is_float && a->rank > 0 && pick(g, 2)) {
        value *r = new_value(g, a->rank, a->dims);
        add(g, "%s = softmax(%s, axis=-1)\n", r->name, an);
        return;
    }
    value *r = new_value(g, full.rank, full.dims);
    add(g, "%s = broadcast_to(%s, shape=%s)\n", r->name, an, sh);
}

/* compare, logical, cast back: not((a >= b) and/or (a != c)) as the graph's dtype */
static void op_logical(gen *g)
{
    const value *a = any(g), *b = any(g), *c = any(g);
    int r1, d1[3] = {0}, r2, d2[3] = {0};
    broadcast_shape(a, b, &r1, d1);
    value tmp = {.rank = r1};
    memcpy(tmp.dims, d1, sizeof d1);
    broadcast_shape(&tmp, c, &r2, d2);
    char an[16], bn[16], cn[16];
    snprintf(an, sizeof an, "%s", a->name);
    snprintf(bn, sizeof bn, "%s", b->name);
    snprintf(cn, sizeof cn, "%s", c->name);
    int k = g->n;
    const char *join = pick(g, 2) ? "and" : "or";
    value *r = new_value(g, r2, d2);
    add(g, "ge%d = greater_equal(%s, %s)\nne%d = not_equal(%s, %s)\nla%d = logical_%s(ge%d, ne%d)\n"
           "ln%d = logical_not(la%d)\n%s = cast(ln%d, to=%s)\n",
        k, an, bn, k, an, cn, k, join, k, k, k, k, r->name, k, g->dt);
}

/* a cast to another dtype and back, or argmax along an axis (kept) cast to the graph's dtype */
static void op_cast(gen *g)
{
    const value *a = any(g);
    char an[16];
    snprintf(an, sizeof an, "%s", a->name);
    int k = g->n;
    if (a->rank > 0 && pick(g, 2)) {
        int axis = pick(g, a->rank), dims[3] = {0};
        memcpy(dims, a->dims, sizeof(int) * (size_t)a->rank);
        dims[axis] = 1;
        value *r = new_value(g, a->rank, dims);
        add(g, "am%d = argmax(%s, axis=%d, keepdims=true)\n%s = cast(am%d, to=%s)\n", k, an, axis, r->name, k,
            g->dt);
        return;
    }
    const char *other = !strcmp(g->dt, "f64") ? "f32" : "f64";
    value *r = new_value(g, a->rank, a->dims);
    add(g, "ca%d = cast(%s, to=%s)\n%s = cast(ca%d, to=%s)\n", k, an, other, r->name, k, g->dt);
}

/* unary ops with NaN and infinities in their range, pow, reduce_prod */
static void op_math(gen *g)
{
    static const char *const fl[] = {"exp", "log", "sqrt", "rsqrt", "erf", "ceil"};
    const value *a = any(g);
    char an[16];
    snprintf(an, sizeof an, "%s", a->name);
    int choice = pick(g, 3);
    if (choice == 0 && a->rank > 0) {
        int axis = pick(g, a->rank), dims[3] = {0};
        memcpy(dims, a->dims, sizeof(int) * (size_t)a->rank);
        dims[axis] = 1;
        value *r = new_value(g, a->rank, dims);
        add(g, "%s = reduce_prod(%s, axes=[%d], keepdims=true)\n", r->name, an, axis);
        return;
    }
    if (choice == 1 && g->is_float) {
        const value *b = any(g);
        int rank, dims[3] = {0};
        broadcast_shape(a, b, &rank, dims);
        char bn[16];
        snprintf(bn, sizeof bn, "%s", b->name);
        value *r = new_value(g, rank, dims);
        add(g, "%s = pow(%s, %s)\n", r->name, an, bn);
        return;
    }
    const char *op = g->is_float ? fl[pick(g, 6)] : "neg";
    value *r = new_value(g, a->rank, a->dims);
    add(g, "%s = %s(%s)\n", r->name, op, an);
}

/* iota, a scalar constant, or a constant vector along the last base dim, combined with a value */
static void op_source(gen *g)
{
    const value *a = any(g);
    char an[16], sh[32];
    snprintf(an, sizeof an, "%s", a->name);
    value full = {.rank = g->base_rank};
    memcpy(full.dims, g->base, sizeof g->base);
    shape_text(&full, sh, sizeof sh);
    int k = g->n, choice = pick(g, 3), axis = pick(g, g->base_rank);
    value *r = new_value(g, g->base_rank, g->base);
    if (choice == 0) {
        add(g, "io%d = iota(shape=%s, axis=%d, dtype=%s)\n%s = add(%s, io%d)\n", k, sh, axis, g->dt, r->name, an, k);
        return;
    }
    if (choice == 1) {
        add(g, "kc%d = const(%s[], %s)\nkb%d = broadcast_to(%s, shape=%s)\n%s = mul(kb%d, kc%d)\n", k, g->dt,
            g->is_float ? "-1.5" : "3", k, an, sh, r->name, k, k);
        return;
    }
    int last = g->base[g->base_rank - 1];
    char vals[128] = "";
    for (int i = 0; i < last; i++)
        snprintf(vals + strlen(vals), sizeof vals - strlen(vals), "%s%d", i ? "," : "", i - 2);
    add(g, "kv%d = const(%s[%d], [%s])\nkb%d = broadcast_to(%s, shape=%s)\n%s = sub(kb%d, kv%d)\n", k, g->dt, last,
        vals, k, an, sh, r->name, k, k);
}

/* matmul (rank-2 floats): a @ transpose(a), reduced back to a variant; otherwise a math op */
static void op_matmul(gen *g)
{
    const value *a = any(g);
    if (!g->is_float || a->rank != 2 || a->dims[0] != g->base[0] || a->dims[1] != g->base[1])
        return op_math(g);
    char an[16];
    snprintf(an, sizeof an, "%s", a->name);
    int k = g->n, dims[2] = {g->base[0], 1};
    value *r = new_value(g, 2, dims);
    add(g, "mt%d = transpose(%s, perm=[1,0])\nmm%d = matmul(%s, mt%d)\n%s = reduce_sum(mm%d, axes=[1], keepdims=true)\n",
        k, an, k, an, k, r->name, k);
}

static void op_more(gen *g)
{
    switch (pick(g, 5)) {
    case 0: op_logical(g); break;
    case 1: op_cast(g); break;
    case 2: op_math(g); break;
    case 3: op_source(g); break;
    default: op_matmul(g); break;
    }
}

static void op_opaque(gen *g)
{
    const value *a = any(g);
    char an[16];
    snprintf(an, sizeof an, "%s", a->name);
    int k = g->n;
    if (pick(g, 2) && g->is_float) {
        value *r = new_value(g, g->base_rank, g->base);
        char sh[32];
        shape_text(r, sh, sizeof sh);
        add(g, "%s = random_normal(shape=%s, seed=%d, dtype=%s)\n", r->name, sh, k, g->dt);
        return;
    }
    value *r = new_value(g, 0, NULL);
    add(g, "q%d = reshape(%s, shape=[-1])\nuq%d = unique(q%d)\n%s = reduce_sum(uq%d, axes=[0])\n", k, an, k, k,
        r->name, k);
}

char *randgraph_text(uint64_t seed, const randgraph_options *o)
{
    gen g = {.s = seed * 0x2545F4914F6CDD1Dull + 1};
    static const char *const dts[] = {"f32", "f64", "i32", "f32"};
    g.dt = o && o->dtype ? o->dtype : dts[pick(&g, 4)];
    g.is_float = g.dt[0] == 'f';
    g.table_ops = o && o->table_ops;
    g.base_rank = 1 + pick(&g, 3);
    for (int d = 0; d < g.base_rank; d++)
        g.base[d] = 2 + pick(&g, 6);
    add(&g, "xlac.graph v1\n");
    int n_in = 2 + pick(&g, 2);
    for (int k = 0; k < n_in; k++) {
        int rank, dims[3] = {0};
        variant(&g, &rank, dims);
        if (k == 0) { /* the first input has the full base shape */
            rank = g.base_rank;
            memcpy(dims, g.base, sizeof g.base);
        }
        value *v = new_value(&g, rank, dims);
        char sh[32];
        shape_text(v, sh, sizeof sh);
        if (o && o->allow_unknown && rank == g.base_rank && rank > 0)
            add(&g, "input %s: %s[?%s\n", v->name, g.dt, strchr(sh, ',') ? strchr(sh, ',') : "]");
        else
            add(&g, "input %s: %s%s\n", v->name, g.dt, sh);
    }
    int n_ops = o && o->n_ops ? o->n_ops : 8;
    for (int i = 0; i < n_ops && g.n < MAX_VALUES - 4; i++) {
        bool more = o && o->more_ops;
        int r = pick(&g, 10 + (more ? 5 : 0) + (o && o->allow_opaque ? 1 : 0));
        if (more && r >= 10 && r < 15) {
            op_more(&g);
            continue;
        }
        switch (r) {
        case 0:
        case 1:
        case 2: op_binary(&g); break;
        case 3: op_unary(&g); break;
        case 4: op_select(&g); break;
        case 5:
        case 6: op_reduce(&g); break;
        case 7: op_transpose(&g); break;
        case 8: pick(&g, 2) ? op_reshape(&g) : op_slice_concat(&g); break;
        case 9: op_broadcast_softmax(&g); break;
        default: op_opaque(&g); break;
        }
    }
    add(&g, "output %s\n", g.v[g.n - 1].name);
    int extra = n_in + pick(&g, g.n - n_in);
    if (extra != g.n - 1)
        add(&g, "output %s\n", g.v[extra].name);
    return g.buf;
}

xe_tensor *randgraph_input(const xe_type *t, uint64_t seed)
{
    xe_status st;
    xe_tensor *x = xe_tensor_new(t->dtype, &t->shape, XE_DEV_CPU, &st);
    for (int64_t i = 0; x && i < xe_tensor_numel(x); i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(seed >> 11) / 9007199254740992.0;
        xe_store_f64(x->data, t->dtype, i, t->dtype == XE_I32 ? (double)((int)(u * 11) - 5) : 4 * u - 2);
    }
    return x;
}

/* An elementwise chain of `ops` ops on x (unary ops, an add of x every fifth). */
char *randgraph_chain(int ops)
{
    static const char *const unary[] = {"tanh", "neg", "abs", "sigmoid"};
    size_t cap = (size_t)ops * 40 + 128;
    char *t = malloc(cap);
    if (!t)
        return NULL;
    size_t u = (size_t)snprintf(t, cap, "xlac.graph v1\ninput x: f32[64]\nv0 = neg(x)\n");
    for (int i = 1; i < ops; i++) {
        if (i % 5 == 4)
            u += (size_t)snprintf(t + u, cap - u, "v%d = add(v%d, x)\n", i, i - 1);
        else
            u += (size_t)snprintf(t + u, cap - u, "v%d = %s(v%d)\n", i, unary[i % 4], i - 1);
    }
    snprintf(t + u, cap - u, "output v%d\n", ops - 1);
    return t;
}
