/*
 * The ONNX mutator's graph mutations (see onnx_mutate_impl.h): names (one
 * slot, or a value renamed everywhere so that the model stays whole and a
 * hostile name travels through the importer, shape inference and the .xg
 * writer), node wiring (inputs and outputs added, dropped, pointed at other
 * values, cycles), op types and domains, opsets and the IR version, graph
 * inputs, outputs and initializers, nodes duplicated, removed, reordered or
 * moved between graphs, and nesting: a node wrapped into an If (a constant
 * or a computed condition) or a Loop body, once or several times.
 * A node moves only into a graph that is not inside it, so the model stays
 * a tree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"
#include "onnx_mutate_impl.h"

static const char op_types[] =
    "Abs Acos Acosh Add AffineGrid And ArgMax ArgMin Asin Asinh Atan Atanh Attention AveragePool "
    "BatchNormalization BitShift BitwiseAnd BitwiseNot BitwiseOr BitwiseXor BlackmanWindow Cast "
    "CastLike Ceil "
    "Celu CenterCropPad Clip Col2Im Concat Constant ConstantOfShape Conv ConvTranspose Cos Cosh "
    "CumProd CumSum "
    "DFT DepthToSpace DequantizeLinear Div Dropout DynamicQuantizeLinear Einsum Elu Equal Erf Exp "
    "Expand "
    "EyeLike Flatten Floor GRU Gather GatherElements GatherND Gelu Gemm GlobalAveragePool "
    "GlobalMaxPool "
    "Greater GreaterOrEqual GroupNormalization HammingWindow HannWindow HardSigmoid HardSwish "
    "Hardmax "
    "Identity If InstanceNormalization IsInf IsNaN LRN LSTM LayerNormalization LeakyRelu Less "
    "LessOrEqual Log "
    "LogSoftmax LpNormalization LpPool MatMul MatMulInteger Max MaxPool Mean "
    "MeanVarianceNormalization Min "
    "Mish Mod Mul Neg NegativeLogLikelihoodLoss NonZero Not OneHot Or PRelu Pad Pow QLinearMatMul "
    "QuantizeLinear RMSNormalization RNN Range Reciprocal ReduceL1 ReduceL2 ReduceLogSum "
    "ReduceLogSumExp "
    "ReduceMax ReduceMean ReduceMin ReduceProd ReduceSum ReduceSumSquare Relu Reshape Resize "
    "ReverseSequence "
    "RotaryEmbedding Round Scatter ScatterElements ScatterND Selu Shape Shrink Sigmoid Sign Sin "
    "Sinh Size "
    "Slice Softmax SoftmaxCrossEntropyLoss Softplus Softsign SpaceToDepth Split Sqrt Squeeze Sub "
    "Sum Swish "
    "Tan Tanh ThresholdedRelu Tile TopK Transpose Trilu Unsqueeze Upsample Where Xor "
    "AllReduce AllGather ReduceScatter Broadcast Loop Scan SequenceConstruct QLinearConv "
    "NonMaxSuppression";

const char *xm_op_attrs(const char *op_type)
{
    bool known;
    const ox_entry *e = ox_find_op(op_type, OX_MAX_OPSET, &known);
    if (!e)
        e = ox_find_op(op_type, 9, &known); /* Upsample, Scatter: opsets long gone */
    if (!e)
        e = ox_find_xlac_op(op_type);
    return e && e->attrs ? e->attrs : "";
}

/* The k-th word of a space-separated list, k random; malloc'ed. */
static char *some_word(xm_rng *r, const char *list)
{
    size_t count = 0;
    for (const char *p = list; *p; p++)
        count += *p != ' ' && (p == list || p[-1] == ' ');
    const char *p = list;
    for (size_t k = xm_below(r, count); k > 0; k--)
        p = strchr(p, ' ') + 1;
    return strndup(p, strcspn(p, " "));
}

/* A copy of a value name of the model, or a fresh one. */
static char *some_value(xm_ctx *c)
{
    int i = xm_pick(c, &c->values);
    if (i >= 0 && xm_below(&c->r, 8))
        return xm_strdup(c->values.p[i]);
    char fresh[32];
    snprintf(fresh, sizeof fresh, "xm_%llx", (unsigned long long)(xm_next(&c->r) & 0xffff));
    return xm_strdup(fresh);
}

static void set_slot(char **slot, char *s, bool optional)
{
    if (!s && !optional)
        s = xm_strdup("");
    if (!s)
        return;
    free(*slot);
    *slot = s;
}

/* ---- names ---------------------------------------------------------------------------------- */

static void rename_in(Onnx__GraphProto *g, const char *from, const char *to, int depth);

static void rename_slot(char **slot, const char *from, const char *to)
{
    if (*slot && !strcmp(*slot, from))
        set_slot(slot, xm_strdup(to), true);
}

static void rename_node(Onnx__NodeProto *n, const char *from, const char *to, int depth)
{
    for (size_t k = 0; k < n->n_input; k++)
        rename_slot(&n->input[k], from, to);
    for (size_t k = 0; k < n->n_output; k++)
        rename_slot(&n->output[k], from, to);
    for (size_t k = 0; k < n->n_attribute; k++)
        if (n->attribute[k]->g && depth < XM_MAX_DEPTH)
            rename_in(n->attribute[k]->g, from, to, depth + 1);
}

/* Every use of value from in g and its subgraphs renamed to. */
static void rename_in(Onnx__GraphProto *g, const char *from, const char *to, int depth)
{
    for (size_t k = 0; k < g->n_initializer; k++)
        rename_slot(&g->initializer[k]->name, from, to);
    Onnx__ValueInfoProto **lists[] = {g->input, g->output, g->value_info};
    size_t counts[] = {g->n_input, g->n_output, g->n_value_info};
    for (size_t l = 0; l < 3; l++)
        for (size_t k = 0; k < counts[l]; k++)
            rename_slot(&lists[l][k]->name, from, to);
    for (size_t k = 0; k < g->n_node; k++)
        rename_node(g->node[k], from, to, depth);
}

/* A name with a NUL inside (XM_NUL_MARK, made a NUL when packed) or beside it. */
static char *with_nul(xm_rng *r, const char *s)
{
    size_t n = strlen(s), at = xm_below(r, n + 1), mark = sizeof XM_NUL_MARK - 1;
    char *d = malloc(n + mark + 2);
    if (!d)
        return NULL;
    memcpy(d, s, at);
    memcpy(d + at, XM_NUL_MARK, mark);
    d[at + mark] = (char)('a' + xm_below(r, 2));
    memcpy(d + at + mark + 1, s + at, n - at + 1);
    return d;
}

bool xm_mut_name(xm_ctx *c)
{
    int i = xm_pick(c, &c->names);
    if (i < 0)
        return false;
    char **slot = c->names.p[i];
    bool optional = c->names.owner[i] != NULL;
    switch (xm_below(&c->r, 6)) {
    case 0: /* the value renamed everywhere: the model stays whole */
        if (*slot && c->m->graph) {
            char *from = xm_strdup(*slot),
                 *to = xm_below(&c->r, 3) ? xm_string(&c->r) : with_nul(&c->r, from);
            if (from && to)
                rename_in(c->m->graph, from, to, 0);
            free(from);
            free(to);
            return true;
        }
        set_slot(slot, xm_string(&c->r), optional);
        return true;
    case 1:
        set_slot(slot, some_value(c), optional); /* another value: rewired, or two of one name */
        return true;
    case 2:
        set_slot(slot, xm_string(&c->r), optional);
        return true;
    case 3:
        set_slot(slot, with_nul(&c->r, *slot ? *slot : ""), optional);
        return true;
    default:
        if (optional && xm_below(&c->r, 2)) {
            free(*slot);
            *slot = NULL; /* the field absent */
        } else {
            set_slot(slot, xm_strdup(""), optional);
        }
        return true;
    }
}

/* ---- wiring --------------------------------------------------------------------------------- */

static void push(char ***arr, size_t *n, char *s)
{
    if (s)
        xm_insert((void ***)arr, n, *n, s);
}

static void pop(char ***arr, size_t *n)
{
    if (*n)
        free((*arr)[--*n]);
}

bool xm_mut_wiring(xm_ctx *c)
{
    int i = xm_pick(c, &c->nodes);
    if (i < 0)
        return false;
    Onnx__NodeProto *n = c->nodes.p[i];
    switch (xm_below(&c->r, 6)) {
    case 0:
        if (n->n_input) {
            set_slot(&n->input[xm_below(&c->r, n->n_input)],
                     xm_below(&c->r, 8) ? some_value(c) : xm_strdup(""), false);
            return true;
        }
        push(&n->input, &n->n_input, some_value(c));
        return true;
    case 1: /* an input more: a value, or "" (an optional input left out) */
        push(&n->input, &n->n_input, xm_below(&c->r, 4) ? some_value(c) : xm_strdup(""));
        return true;
    case 2:
        pop(&n->input, &n->n_input);
        return true;
    case 3: /* an output more: fresh, or a name another node makes */
        push(&n->output, &n->n_output, some_value(c));
        return true;
    case 4:
        pop(&n->output, &n->n_output);
        return true;
    default: /* an output named as one of its inputs: a cycle */
        if (n->n_output && n->n_input)
            set_slot(&n->output[xm_below(&c->r, n->n_output)],
                     xm_strdup(n->input[xm_below(&c->r, n->n_input)]), false);
        else
            push(&n->output, &n->n_output, some_value(c));
        return true;
    }
}

/* ---- op types, domains, opsets -------------------------------------------------------------- */

bool xm_mut_op(xm_ctx *c)
{
    static const char domains[] =
        "ai.onnx com.microsoft ai.onnx.ml com.xlac xlac ai.onnx.preview.training x";
    int i = xm_pick(c, &c->nodes);
    if (i < 0)
        return false;
    Onnx__NodeProto *n = c->nodes.p[i];
    switch (xm_below(&c->r, 5)) {
    case 0:
    case 1:
    case 2:
        set_slot(&n->op_type, some_word(&c->r, op_types), true);
        return true;
    case 3:
        set_slot(&n->domain, xm_below(&c->r, 4) ? some_word(&c->r, domains) : xm_strdup(""), true);
        return true;
    default:
        set_slot(&n->op_type, xm_below(&c->r, 4) ? xm_string(&c->r) : NULL, true);
        return true;
    }
}

static int64_t some_version(xm_rng *r)
{
    static const int64_t v[] = {0,         1,        6,  7,  9,  10,        11,
                                13,        17,       18, 19, 21, 22,        23,
                                24,        27,       28, 29, -1, INT32_MAX, (int64_t)INT32_MAX + 1,
                                INT64_MAX, INT64_MIN};
    return xm_below(r, 4) ? v[xm_below(r, sizeof v / sizeof *v)] : xm_int(r);
}

static void add_opset(xm_ctx *c)
{
    static const char domains[] = "ai.onnx com.microsoft ai.onnx.ml com.xlac x";
    Onnx__OperatorSetIdProto *o = malloc(sizeof *o);
    if (!o)
        return;
    onnx__operator_set_id_proto__init(o);
    o->domain = xm_below(&c->r, 3) ? xm_strdup("") : some_word(&c->r, domains);
    o->has_version = xm_below(&c->r, 8) != 0;
    o->version = some_version(&c->r);
    xm_insert((void ***)&c->m->opset_import, &c->m->n_opset_import,
              xm_below(&c->r, c->m->n_opset_import + 1), o);
}

bool xm_mut_opset(xm_ctx *c)
{
    Onnx__ModelProto *m = c->m;
    size_t k = xm_below(&c->r, m->n_opset_import);
    switch (xm_below(&c->r, 5)) {
    case 0:
        m->has_ir_version = xm_below(&c->r, 8) != 0;
        m->ir_version = xm_below(&c->r, 2) ? (int64_t)xm_below(&c->r, 13) : some_version(&c->r);
        return true;
    case 1:
    case 2:
        if (m->n_opset_import) {
            m->opset_import[k]->has_version = true;
            m->opset_import[k]->version = some_version(&c->r);
            return true;
        }
        add_opset(c);
        return true;
    case 3:
        add_opset(c); /* a second entry of one domain, or another domain */
        return true;
    default:
        if (!m->n_opset_import)
            return false;
        onnx__operator_set_id_proto__free_unpacked(m->opset_import[k], NULL);
        memmove(m->opset_import + k, m->opset_import + k + 1,
                (m->n_opset_import - k - 1) * sizeof *m->opset_import);
        m->n_opset_import--;
        return true;
    }
}
