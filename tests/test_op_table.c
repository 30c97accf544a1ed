/*
 * The op table walked whole (as ggml's test-backend-ops walks its ops):
 *
 * - every elementwise op (an XU or XB row of ops.def), on every dtype its
 *   shape function accepts, with and without its XV attribute and with
 *   its float attributes at their defaults and at another value, is
 *   accepted by the compilability predicate and planned and emitted as C
 *   and as CUDA without error: what the table says compiles, compiles;
 * - the same ops run on the CPU per-op kernel over special values (zeros
 *   of both signs, infinities, NaN, large and small magnitudes; every pair
 *   for binary ops) and match the op's ops.def expression evaluated in
 *   double precision (integers and bool exactly), NaN only where the
 *   reference has NaN;
 * - docs/format.md names every op of the table.
 */
#include <criterion/criterion.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_text.h"
#include "plan.h"
#include "support/optable.h"
#include "support/ref.h"
#include "xg.h"
#include "xlac/op.h"

static const double float_vals[] = {-INFINITY, -100, -20, -3.5, -1,  -0.75, -1e-3, -0.0,     0,
                                    1e-3,      0.75, 1,   2,    3.5, 20,    100,   INFINITY, NAN};
static const double int_vals[] = {-7, -3, -1, 0, 1, 2, 5, 9};
static const double bool_vals[] = {0, 1};

/* The operand values a test of dtype dt draws from. */
static const double *values(xe_dtype dt, int *n)
{
    if (xe_dtype_is_float(dt)) {
        *n = (int)(sizeof float_vals / sizeof float_vals[0]);
        return float_vals;
    }
    if (dt == XE_BOOL) {
        *n = 2;
        return bool_vals;
    }
    *n = (int)(sizeof int_vals / sizeof int_vals[0]);
    return int_vals;
}

/* One configuration of an op: variant attribute on or off, float attributes default or set. */
typedef struct config {
    int op;
    xe_dtype dt;
    bool variant;   /* set the XV attribute */
    bool attrs_set; /* float attributes at 0.3 instead of their defaults */
} config;

/* A one-node graph of the config; false when its shape function refuses the dtype. */
static bool build(ref_op *o, const config *c, int64_t numel)
{
    int n_in = xe_op_get(c->op)->min_inputs;
    xe_type t = {c->dt, ref_shape(1, (int64_t[]){numel})};
    ref_op_new_types(o, c->op, (xe_type[]){t, t}, n_in);
    xe_status st;
    const char *v = optable_variant_attr(c->op);
    if (v && c->variant)
        cr_assert_eq(xe_node_set_bool(o->node, v, true, &st), XE_OK, "%s", st.msg);
    int n;
    const xe_op_attr *a = xe_op_attrs(c->op, &n);
    for (int k = 0; c->attrs_set && k < n; k++)
        if (a[k].kind == XE_ATTR_FLOAT)
            cr_assert_eq(xe_node_set_float(o->node, a[k].name, 0.3, &st), XE_OK, "%s", st.msg);
    if (ref_op_infer(o, &st) == XE_OK)
        return true;
    ref_op_free(o);
    return false;
}

/* Calls fn on every configuration the shape functions accept; returns how many. */
static int walk(void (*fn)(const config *c, ref_op *o))
{
    int count = 0;
    for (int op = 0; op < XE_OP_COUNT; op++) {
        if (!optable_has_expr(op))
            continue;
        for (int d = 0; d < 6; d++)
            for (int variant = 0; variant < 1 + (optable_variant_attr(op) != NULL); variant++)
                for (int set = 0; set < 2; set++) {
                    config c = {op, ref_all_dtypes[d], variant, set};
                    ref_op o;
                    int n;
                    values(c.dt, &n);
                    if (!build(&o, &c, xe_op_get(op)->min_inputs == 2 ? n * n : n))
                        continue;
                    fn(&c, &o);
                    ref_op_free(&o);
                    count++;
                }
    }
    return count;
}

static void check_emits(const config *c, ref_op *o)
{
    const char *why = xg_unsupported_reason(o->g, o->node, XE_DEV_CPU, NULL);
    cr_assert_null(why, "%s on %s: the predicate refuses it: %s", xe_op_name(c->op),
                   xe_dtype_name(c->dt), why);
    xe_type types[2];
    for (int k = 0; k < o->g->n_inputs; k++)
        types[k] = o->g->nodes[o->g->inputs[k]]->type;
    xe_status st;
    xg_plan *p = NULL;
    cr_assert_eq(xg_plan_build(o->g, types, false, &p, &st), XE_OK, "%s on %s: %s",
                 xe_op_name(c->op), xe_dtype_name(c->dt), st.msg);
    for (int t = 0; t < 2; t++) {
        char *src = xg_emit_program(p, t ? XG_TARGET_CUDA : XG_TARGET_C, &st);
        cr_assert_not_null(src, "%s on %s (%s): %s", xe_op_name(c->op), xe_dtype_name(c->dt),
                           t ? "CUDA" : "C", st.msg);
        free(src);
    }
    xg_plan_destroy(p);
}

Test(op_table, every_compilable_op_is_emitted_for_both_targets)
{
    cr_assert_gt(walk(check_emits), 100, "too few op and dtype pairs");
}

/* Operand values: every value (unary), or every pair (binary: x varies slowest). */
static xe_tensor *operand(const config *c, int k, int n_in)
{
    int n;
    const double *v = values(c->dt, &n);
    int64_t numel = n_in == 2 ? (int64_t)n * n : n;
    double *vals = malloc((size_t)numel * sizeof *vals);
    cr_assert_not_null(vals);
    for (int64_t i = 0; i < numel; i++)
        vals[i] = n_in == 1 ? v[i] : k == 0 ? v[i / n] : v[i % n];
    xe_shape s = ref_shape(1, (int64_t[]){numel});
    xe_tensor *t = ref_tensor_from(c->dt, &s, vals);
    free(vals);
    return t;
}

static void check_cpu(const config *c, ref_op *o)
{
    int n_in = o->node->n_inputs;
    xe_tensor *in[2] = {operand(c, 0, n_in), n_in == 2 ? operand(c, 1, n_in) : NULL};
    xe_status st;
    xe_tensor *r = ref_op_run(o, in, n_in, NULL, &st);
    cr_assert_not_null(r, "%s on %s: %s", xe_op_name(c->op), xe_dtype_name(c->dt), st.msg);
    for (int64_t i = 0; i < xe_tensor_numel(r); i++) {
        double x = xe_load_f64(in[0]->data, c->dt, i);
        double y = n_in == 2 ? xe_load_f64(in[1]->data, c->dt, i) : 0;
        double want;
        cr_assert(optable_eval(o->node, c->dt, x, y, &want), "%s has no expression for %s",
                  xe_op_name(c->op), xe_dtype_name(c->dt));
        char what[96];
        snprintf(what, sizeof what, "%s%s(%g, %g)", xe_op_name(c->op),
                 c->variant ? "[variant]" : "", x, y);
        ref_expect(what, r->dtype, i, xe_load_f64(r->data, r->dtype, i), ref_round(r->dtype, want),
                   1);
    }
    xe_tensor_release(r);
    xe_tensor_release(in[0]);
    if (in[1])
        xe_tensor_release(in[1]);
}

Test(op_table, every_elementwise_op_matches_its_double_precision_expression_on_the_cpu)
{
    cr_assert_gt(walk(check_cpu), 100, "too few op and dtype pairs");
}

/* Whether word occurs in text between backquotes, as a whole word. */
static bool named(const char *text, const char *word)
{
    size_t n = strlen(word);
    bool in_code = false;
    for (const char *p = text; *p; p++) {
        if (*p == '`')
            in_code = !in_code;
        bool start = p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        if (in_code && start && strncmp(p, word, n) == 0 &&
            !(isalnum((unsigned char)p[n]) || p[n] == '_'))
            return true;
    }
    return false;
}

Test(op_table, docs_format_names_every_op)
{
    FILE *f = fopen(XLAC_SOURCE_DIR "/docs/format.md", "rb");
    cr_assert_not_null(f, "cannot read docs/format.md");
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    for (int op = 0; op < XE_OP_COUNT; op++)
        cr_expect(named(text, xe_op_name(op)), "docs/format.md does not name the op %s",
                  xe_op_name(op));
}

extern const char xg_scalar_text[];

/* A generated program carries scalar.h's common part, and an op's section only when it uses the op.
 */
Test(op_table, scalar_sections_only_in_programs_that_use_their_op)
{
    bool used[XE_OP_COUNT] = {false};
    char *common = xg_scalar_text_for(used);
    cr_assert_not_null(common);
    cr_expect_null(strstr(common, "xe-op"), "the common part holds a section");
    int sections = 0;
    for (int op = 0; op < XE_OP_COUNT; op++) {
        char mark[96];
        snprintf(mark, sizeof mark, "/* xe-op %s:", xe_op_name(op));
        used[op] = true;
        char *t = xg_scalar_text_for(used);
        used[op] = false;
        cr_assert_not_null(t);
        bool has = strstr(xg_scalar_text, mark) != NULL;
        cr_expect_eq(strncmp(t, common, strlen(common)), 0, "%s: the common part changed",
                     xe_op_name(op));
        cr_expect_eq(strstr(t, mark) != NULL, has, "%s: its section %s", xe_op_name(op),
                     has ? "is missing" : "appears from nowhere");
        cr_expect_eq(strstr(t + strlen(common), "/* xe-op end */") != NULL, has,
                     "%s: another op's section", xe_op_name(op));
        sections += has;
        free(t);
    }
    free(common);
    cr_expect_geq(sections, 2, "scalar.h has %d op sections", sections);
}

/* The parser reads an op's attributes from attrs.def: names, kinds, and defaults where absent. */
Test(op_table, attributes_come_from_the_table)
{
    xe_status st;
    static const struct {
        const char *line, *error;
    } bad[] = {
        {"r = leaky_relu(x, alpha=true)", "alpha must be a number"},
        {"r = leaky_relu(x, beta=1)", "unknown attribute 'beta' for leaky_relu (expected alpha)"},
        {"r = hard_sigmoid(x, gamma=1)", "(expected alpha, beta)"},
        {"r = softplus(x, alpha=1)", "softplus takes no attributes"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char text[256];
        snprintf(text, sizeof text, "xlac.graph v1\ninput x: f32[2]\n%s\noutput r\n", bad[k].line);
        xe_graph *g = xe_parse_string(text, "t.xg", &st);
        cr_expect_null(g, "%s was accepted", bad[k].line);
        cr_expect(strstr(st.msg, bad[k].error), "%s: %s", bad[k].line, st.msg);
        xe_graph_destroy(g);
    }
    xe_graph *g = xe_parse_string(
        "xlac.graph v1\ninput x: f32[2]\nr = hard_sigmoid(x, beta=1)\noutput r\n", "t.xg", &st);
    cr_assert_not_null(g, "%s", st.msg);
    double a[XE_MAX_OP_FLOATS];
    cr_expect_eq(xe_op_float_attrs(g->nodes[g->n_nodes - 1], a), 2);
    cr_expect_eq(a[0], 0.2, "alpha's default");
    cr_expect_eq(a[1], 1.0, "beta as given (an integer for a float)");
    xe_graph_destroy(g);
}
