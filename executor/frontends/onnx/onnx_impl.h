/*
 * Private to the ONNX importer (executor/frontends/onnx/). One import is an ox_ctx:
 * the protobuf-c model, the graph being built, the ONNX value name -> node
 * table and the list of nodes it cannot import. Each ONNX node is built by
 * an ox_b: the op table's builder for its op type emits executor nodes
 * through the ox_* helpers below, which chain (a helper given a failed input
 * returns -1 at once), infer each node and fold it when its inputs are
 * constants.
 *
 * Files: model.c (loading, opsets, inputs and outputs, the node loop, the
 * final naming), diag.c (where protobuf-c's refusal lies), tensor.c
 * (TensorProto <-> xe_tensor), extdata.c (external data), build.c (the ox_* helpers and
 * load-time folding), errors.c (the collected error lines), table.c (op
 * type -> builder), ops_*.c (the builders), sniff.c (file kind).
 */
#ifndef XE_ONNX_IMPL_H
#define XE_ONNX_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "xe_hash.h"

#include "onnx.pb-c.h"
#include "xlac/onnx.h"
#include "xlac/op.h"

#define OX_MIN_OPSET 7  /* the oldest ai.onnx opset we import (numpy broadcasting since 7) */
#define OX_MAX_OPSET 28 /* the newest (onnx 1.23 knows 28) */
#define OX_MAX_IO 64    /* inputs or outputs of one ONNX node */
#define OX_MAX_NESTING                                                                             \
    128                /* protobuf messages inside one another (a subgraph is 3 levels deeper) */
#ifdef XLAC_FUZZ_BUILD /* the fuzz build folds the same way at 16 times less work                  \
                          (docs/fuzzing.md) */
#define OX_FOLD_MAX (1 << 20)
#else
#define OX_FOLD_MAX (1 << 24) /* elements: bigger results are computed at run time */
#endif
#define OX_FOLD_SMALL                                                                              \
    (1 << 16) /* elements: a fold or load-time constant this small is always made */

/* A sequence value (SequenceEmpty, SequenceInsert, a Loop's carried list), kept at import as the
   list of the nodes that hold its tensors: sequences never reach the executor (ops/sequence.c). */
typedef struct ox_seq {
    xe_dtype dt; /* the element dtype */
    int n;
    int *nodes; /* n nodes (NULL when n is 0) */
} ox_seq;

/* ONNX value name -> the executor node that holds it. */
typedef struct ox_value {
    char *name;
    ox_seq *seq;  /* not NULL: the value is a sequence (node is -1), owned here */
    int node;     /* -1: produced by a node that could not be imported */
    bool swapped; /* the value is node's last two dims swapped: a Transpose left to its one
                     reader, a MatMul, as a transpose flag (rewrite.c) */
    UT_hash_handle hh;
} ox_value;

/* Error lines collected over a whole import. */
typedef struct ox_errors {
    char *text; /* lines joined by '\n' */
    size_t len, cap;
    int n_unsupported; /* lines about unsupported ops, attributes or dtypes */
    int n_other;       /* other errors (invalid models) */
} ox_errors;

/* The external data files of one model (extdata.c). */
typedef struct ox_files ox_files;

typedef struct ox_ctx {
    const char *path;           /* the model file, for messages */
    ox_files *files;            /* its external data files, beneath its folder */
    const xe_onnx_options *opt; /* bind callback (may be NULL) */
    Onnx__ModelProto *model;
    int opset;            /* ai.onnx opset of the model */
    xe_graph *g;          /* the graph being built (temporary names) */
    ox_value *values;     /* uthash */
    char **want;          /* per node: its final name (NULL: a temporary one) */
    char **orig;          /* per node: the ONNX node name when sanitising changed it */
    unsigned char *final; /* per node: 1 once it is an ONNX node's output */
    int cap_names;
    ox_errors errs;
    const xe_shape *pin; /* not NULL: per graph input, the shape its unknown dims take */
    xe_tensor **inits;   /* not NULL: initializer k's tensor, loaded once and kept here
                            for every specialisation of the model (retained) */
    const Onnx__NodeProto **absorbed; /* nodes another builder built (ox_absorb) */
    int n_absorbed, cap_absorbed;
    int64_t fold_left; /* elements larger folds and load-time constants may still make
                          (fold.c); set from the model's own weights by ox_fold_budget */
    /* Builds every node of g (a graph or a subgraph) in c, errors to c->errs: the loader's own
       walk (model.c), handed down so that a builder of a subgraph (If) never calls back up. */
    void (*build_nodes)(struct ox_ctx *c, const Onnx__GraphProto *g, xe_status *st);
} ox_ctx;

/* One ONNX node being built. */
typedef struct ox_b {
    ox_ctx *c;
    const Onnx__NodeProto *np;
    const struct ox_entry
        *entry; /* the table row being built: table-driven builders read its op and p */
    int opset;
    int n_in;
    int in[OX_MAX_IO];            /* node index per ONNX input, -1 where the input is absent ("") */
    const ox_seq *seq[OX_MAX_IO]; /* per ONNX input: its sequence (in[k] -1), else NULL */
    int first;                    /* the first graph node made for this ONNX node */
    int helpers;                  /* helper nodes made so far */
    bool failed;
    xe_status st;   /* the first failure */
    char sbuf[256]; /* ox_str's copy of a string attribute */
} ox_b;

/* An attribute for ox_op. */
typedef struct ox_at {
    const char *name;
    xe_attr_kind kind;
    int64_t i;
    double f;
    const int64_t *ints;
    int n;
    xe_dtype dt;
    const char *s; /* XE_ATTR_STRING */
} ox_at;

#define OX_I(nm, v) ((ox_at){.name = (nm), .kind = XE_ATTR_INT, .i = (v)})
#define OX_BOOL(nm, v) ((ox_at){.name = (nm), .kind = XE_ATTR_BOOL, .i = (v) ? 1 : 0})
#define OX_INTS(nm, p, cnt) ((ox_at){.name = (nm), .kind = XE_ATTR_INTS, .ints = (p), .n = (cnt)})
#define OX_DT(nm, d) ((ox_at){.name = (nm), .kind = XE_ATTR_DTYPE, .dt = (d)})
#define OX_STR(nm, v) ((ox_at){.name = (nm), .kind = XE_ATTR_STRING, .s = (v)})

typedef xe_code (*ox_build_fn)(ox_b *b);

/* One entry of the op table. */
typedef struct ox_entry {
    const char *type; /* ONNX op type */
    int since, until; /* opsets this entry covers (until 0: the newest) */
    ox_build_fn build;
    const char *attrs; /* the attributes it reads, space separated; any other is refused */
    int op;            /* the executor op for table-driven builders, -1 if none */
    double p;          /* a parameter for table-driven builders */
} ox_entry;

/* ops/shape.c: a reshape to dims where unknown (negative) entries become -1; more than one unknown
   is refused as unsupported with the message too_many. */
int ox_reshape_dims(ox_b *b, int x, const int64_t *dims, int rank, const char *too_many);

/* declared.c: whether name is one of g's initializers. */
bool ox_is_initializer(const Onnx__GraphProto *g, const char *name);
/* pins.c: whether a pin (xe_onnx_options.pins) gives dim d of graph input v a value; every pin
 * checked against the model, the problems listed in c->errs. */
bool ox_pin_dim(const ox_ctx *c, const Onnx__ValueInfoProto *v, size_t d, int64_t *value);
void ox_pins_check(ox_ctx *c);
/* declared.c: the declared inputs of og (their types from declared, named as the import names them)
   and a stand-in per output, for a graph maker; NULL with *st set when an output declares no
   tensor type. path names the model. */
xe_graph *ox_declared_graph(const Onnx__GraphProto *og, const char *path, const xe_graph *declared,
                            xe_status *st);
/* Per graph input of og (initializers left out), its declared rank with every dim 3: the probe
   import's shapes (the onnxruntime EP's, and an undeclared output's rank); *n of them, calloc'd. */
xe_shape *ox_probe_shapes(const Onnx__GraphProto *og, int *n);

/* table.c */
const ox_entry *ox_find_op(const char *type, int opset, bool *known_type);
/* Whether e's builder takes sequence inputs (ox_in_seq); the others are refused one. */
bool ox_takes_sequences(const ox_entry *e);
/* The domain of xlac's own ops (the collectives), and their lookup. */
#define OX_XLAC_DOMAIN "com.xlac"
const ox_entry *ox_find_xlac_op(const char *type);
/* Domain com.microsoft: the few of onnxruntime's contrib ops that xlac reads (QOperator models). */
#define OX_MS_DOMAIN "com.microsoft"
const ox_entry *ox_find_ms_op(const char *type);
/* Their names as "A, B and C" into buf (cut to size). */
void ox_ms_op_list(char *buf, size_t size);

/* errors.c */
void ox_error_add(ox_errors *e, bool unsupported, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ox_errors_free(ox_errors *e);

/* diag.c: "byte N: field F of M: problem" for the first malformed field of a ModelProto. */
/* order.c: g's nodes in a topological order (stable: a graph in order keeps it; a cycle's nodes
 * last, in file order); malloc'd, NULL when out of memory. */
size_t *ox_node_order(const Onnx__GraphProto *g);
/* Whether data can be handed to protobuf-c: no message nested deeper than OX_MAX_NESTING (it
 * recurses without a limit), no string (but doc strings) with a NUL inside; false with buf saying
 * where. */
bool ox_precheck(const uint8_t *data, size_t len, const ProtobufCMessageDescriptor *desc, char *buf,
                 size_t cap);
void ox_diagnose(const uint8_t *data, size_t len, const ProtobufCMessageDescriptor *desc, char *buf,
                 size_t cap);

/* tensor.c */
bool ox_dtype(int32_t onnx_type, xe_dtype *out);
const char *ox_dtype_name(int32_t onnx_type);
int32_t ox_onnx_dtype(xe_dtype dt);
/* files: the model's external data files (NULL: refuse external data). what: for messages. */
xe_tensor *ox_tensor(const Onnx__TensorProto *t, ox_files *files, const char *what, xe_status *st);

/* extdata.c: the external data files of one model, mapped once each (see the file's comment). */
ox_files *ox_files_new(const char *dir);
/* A model held in memory: its external data are the host's n blocks b (copied, keepers retained).
 */
ox_files *ox_files_host(const xe_onnx_block *b, int n);
void ox_files_free(ox_files *f); /* the mappings live on while tensors view them */
/* The tensor of dtype dt and shape s (its data present checked) whose bytes t's keys locate. */
xe_tensor *ox_ext_tensor(ox_files *f, const Onnx__TensorProto *t, xe_dtype dt, const xe_shape *s,
                         const char *what, xe_status *st);

/* build.c: values and nodes */
int ox_value_get(ox_ctx *c, const char *name, bool *found);
xe_code ox_value_set(ox_ctx *c, const char *name, int node, xe_status *st);
/* The value called name, NULL when there is none. */
const ox_value *ox_value_find(ox_ctx *c, const char *name);
/* Makes name a sequence value: a copy of s (a new empty one of dtype s->dt when s->n is 0). */
xe_code ox_value_set_seq(ox_ctx *c, const char *name, const ox_seq *s, xe_status *st);
/* A copy of s (NULL when out of memory); ox_seq_free frees one. */
ox_seq *ox_seq_copy(const ox_seq *s);
void ox_seq_free(ox_seq *s);
/* ox_value_set of a value that is node with its last two dims swapped (ox_value.swapped). */
xe_code ox_value_set_swapped(ox_ctx *c, const char *name, int node, xe_status *st);
/* Whether value `name` is a swapped one. */
bool ox_value_swapped(ox_ctx *c, const char *name);
/* Makes want/orig/final hold index node. */
xe_code ox_names_reserve(ox_ctx *c, int node, xe_status *st);
xe_code ox_want_name(ox_ctx *c, int node, const char *name, const char *orig, xe_status *st);
char *ox_sanitize(const char *name);

/* build.c: the helpers builders use. Every one returns -1 when b already failed. */
int ox_op(ox_b *b, int op, const int *in, int n_in, const ox_at *at, int n_at);
int ox_un(ox_b *b, int op, int x);
int ox_bin(ox_b *b, int op, int x, int y);
int ox_select(ox_b *b, int cond, int x, int y);
int ox_cast(ox_b *b, int x, xe_dtype dt);
int ox_scalar(ox_b *b, xe_dtype dt, double v);
/* A constant a builder computes at load (a mask, positions, a matrix): its dims come from the
   model, so it holds at most OX_FOLD_MAX elements, as folded ones do; beyond, or when b has failed,
   NULL and the node unsupported. */
xe_tensor *ox_new_tensor(ox_b *b, xe_dtype dt, const xe_shape *s);
int ox_const(ox_b *b, xe_tensor *t); /* takes t */
int ox_ints_const(ox_b *b, const int64_t *v, int n);
int ox_reshape(ox_b *b, int x, const int64_t *dims, int rank);
int ox_transpose(ox_b *b, int x, const int *perm, int rank);
int ox_reduce(ox_b *b, int op, int x, const int64_t *axes, int n_axes, bool keepdims);
int ox_slice(ox_b *b, int x, const int64_t *begin, const int64_t *end);
/* x's positions idx[0..n) (normalised, in range) along axis, as slices and a concat. */
int ox_take(ox_b *b, int x, int axis, const int64_t *idx, int64_t n);
const xe_type *ox_type(ox_b *b, int x);
int ox_rank(ox_b *b, int x);
/* ONNX input k (-1 when absent or failed). */
int ox_in(ox_b *b, int k);
/* ops/subgraph.c: g's initializers and nodes built in place; false (b failed, naming `which`, the
   nodes' own errors listed) when some node does not import. */
bool ox_build_subgraph(ox_b *b, const Onnx__GraphProto *g, const char *which);
/* ops/unroll.c: what the control flow unrolled at import (Loop, Scan) shares. */
#define OX_UNROLL_MAX 4096 /* the most iterations (body builds) one node unrolls */
/* A body's value: a tensor's node, or a sequence (owned). */
typedef struct ox_carried {
    int node;
    ox_seq *seq;
} ox_carried;
/* Binds body input k to a tensor node or a sequence (a copy); false (b failed) when it cannot. */
bool ox_body_bind(ox_b *b, const Onnx__GraphProto *body, size_t k, int node, const ox_seq *seq);
/* Body output k's value (built) into *out (a sequence copied); false (b failed) when it has none.
 */
bool ox_body_output(ox_b *b, const Onnx__GraphProto *body, size_t k, ox_carried *out);
/* Node x with a dim of 1 inserted at axis (of its rank + 1). */
int ox_unit_dim(ox_b *b, int x, int axis);
/* x[0..n) (n >= 1), each with a dim of 1 inserted at axis, as one concat along it (x rewritten). */
int ox_stack(ox_b *b, int *x, int64_t n, int axis);
/* ONNX input k as a sequence; NULL (b failed, naming it) when it is absent or a tensor. */
const ox_seq *ox_in_seq(ox_b *b, int k);
/* Makes sequence s ONNX output k (a copy). */
xe_code ox_out_seq(ox_b *b, int k, const ox_seq *s);
/* ONNX input k's value, which must be known at load time; NULL and b failed otherwise. */
const xe_tensor *ox_need_const(ox_b *b, int k, const char *what);
/* Reads a known integer tensor into v (up to cap); the count, -1 on failure. */
int ox_const_ints(ox_b *b, int k, const char *what, int64_t *v, int cap);
/* Makes node x ONNX output k. */
xe_code ox_out(ox_b *b, int k, int x);
/* ox_out for output k of np, an ONNX node whose work b's node takes over (ox_absorb). */
xe_code ox_out_of(ox_b *b, const Onnx__NodeProto *np, int k, int x);
/* Marks np as built by another node's builder: the loader skips it. false when out of memory. */
bool ox_absorb(ox_ctx *c, const Onnx__NodeProto *np);
bool ox_absorbed(const ox_ctx *c, const Onnx__NodeProto *np);
/* DynamicQuantizeLinear's readers that are MatMulInteger -> Cast -> Mul(scales) chains, each as
   one dynamic_quant_matmul node (quant_fuse.c); true when no other reader is left. */
bool ox_dynamic_quant_fuse(ox_b *b);
/* Looking around a node of the top-level graph (quant_fuse.c): whether np is the standard-domain
   op `type`; the node that writes `name` (NULL: a graph input or initializer); the const node
   built for value `name` if it has dtype dt (else -1); whether np is a top-level node; the one
   node that reads `name`, once, when it is no graph output and no subgraph reads it (else NULL). */
const Onnx__NodeProto *ox_sole_reader(const Onnx__GraphProto *g, const char *name);
bool ox_op_is(const Onnx__NodeProto *np, const char *type);
const Onnx__NodeProto *ox_writer(const Onnx__GraphProto *g, const char *name);
int ox_const_node(ox_b *b, const char *name, xe_dtype dt);
bool ox_top_level(const ox_ctx *c, const Onnx__NodeProto *np);
/* A Conv between QDQ pairs (qdq.c) or a QLinearConv: quant_conv2d's operands (q, w, scale[,
   bias]), x's zero point, the output's quantization (y_dt u8 or i8; f32: none) and the
   QuantizeLinear of the Conv's output that it takes over (NULL: none). */
typedef struct ox_qdq_conv {
    int in[4], n_in;
    int64_t x_zero;
    const Onnx__NodeProto *quantize; /* its output is the node's */
    float y_scale;
    int64_t y_zero;
    xe_dtype y_dt;
} ox_qdq_conv;
/* Whether b's Conv (2-D, top-level) reads DequantizeLinear outputs that quant_conv2d can take
   (the form: qdq.c); false, with nothing built, otherwise or when b failed. */
bool ox_qdq_conv_match(ox_b *b, ox_qdq_conv *m);
/* Whether b's QLinearConv can be one quant_conv2d with its output quantized (the form:
   ops/qlinear_conv.c); false, with nothing built, otherwise or when b failed. */
bool ox_qlinear_conv_match(ox_b *b, ox_qdq_conv *m);
/* b's QLinearAdd (com.microsoft) as one quant_add where the int8 engine is and its operands are
   per-tensor constants of one known shape; -1, with nothing built, otherwise (qdq.c). */
int ox_qlinear_add_step(ox_b *b);
/* ops/quant.c. Scale or zero point v shaped to broadcast against x (shape xs, rank r): a single
   element becomes a scalar, a 1-D one of x's dim `axis` becomes [1,..,C,..,1]; -1 (b failed) for
   any other shape or length. */
int ox_quant_per_axis(ox_b *b, int v, int r, int axis, const xe_shape *xs, const char *what);
/* The range [lo, hi] of quantized integer type dt. */
void ox_quant_range(xe_dtype dt, double *lo, double *hi);
/* ops/qlinear.c, the QLinear* operators' compositions. Input k of b (a scale or zero point) as
   a scalar, or, with axis >= 0, one per element of xs's dim axis as ox_quant_per_axis shapes it;
   -1 (b failed) otherwise. */
int ox_ql_param(ox_b *b, int k, int axis, const xe_shape *xs, const char *what);
/* DequantizeLinear of input k by inputs ks and kz (kz < 0 or absent: none), per axis (-1: per
   tensor). */
int ox_ql_dequantize(ox_b *b, int k, int ks, int kz, int axis, const char *what);
/* QuantizeLinear of f32 y by the one-element inputs ks and kz (absent: 0) to u8 or i8. */
int ox_ql_quantize(ox_b *b, int y, int ks, int kz, xe_dtype to);
/* Whether input k is u8 or i8 and zero point input z (z < 0 or absent: none) has its dtype;
   else b failed. */
bool ox_ql_eight_bit(ox_b *b, int k, int z, const char *what);
/* ops/conv.c: the convolution of x by wt (+ bias, or -1) with the window attributes of b's node
   (Conv's: strides, pads, dilations, group, auto_pad, kernel_shape), as conv2d of f32 or f64
   values over 1 to 3 spatial dims, or, given q, as quant_conv2d (2-D) of q's operands; -1 with b
   failed when refused. */
int ox_conv_build(ox_b *b, int x, int wt, int bias, const ox_qdq_conv *q);
/* colsum[n] = sum_k W[k, n] of the i8 const node w [K, N], as a new i32 const [N] (quant_fuse.c).
 */
int ox_column_sums(ox_b *b, int w);
/* b's MatMul, or its Gemm's product (B transposed when trans_b), of DequantizeLinear outputs in
   the form qdq.c says, as the int8 product rescaled; -1, with nothing built, when it is not that
   form. */
int ox_qdq_product(ox_b *b, bool trans_b);
/* b's Add of two DequantizeLinear outputs (u8 or i8, per tensor, one shape) whose only reader is a
   per-tensor QuantizeLinear, built as one quant_add bound to both outputs (the QuantizeLinear
   absorbed): true; false, with nothing built, when it is not that form; true with b failed when
   building failed. */
bool ox_qdq_add(ox_b *b);
int ox_n_out(ox_b *b);
xe_code ox_unsupported(ox_b *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
xe_code ox_invalid(ox_b *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
xe_code ox_status(ox_b *b);
/* Normalises an axis into [0, rank); false (and b failed) when out of range. */
bool ox_axis(ox_b *b, int64_t axis, int rank, int *out);

/* rewrite.c: load-time rewrites; -1 (b not failed) where the rewrite does not apply */
/* Conv builder: when the one reader of its output is a BatchNormalization with constant
   parameters, *wt and *bias become the folded constants (true); the caller marks the conv2d. */
bool ox_conv_fold_batch_norm(ox_b *b, int *wt, int *bias);
/* BatchNormalization builder: whether its input x is a conv2d it was folded into. */
bool ox_batch_norm_folded(ox_b *b, int x);
/* Transpose builder: when perm swaps x's last two dims and its one reader is a MatMul, the
   output is x marked swapped (no node; true). */
bool ox_transpose_to_matmul(ox_b *b, int x, const int *perm, int r);
/* pow(x, y) as products when y is a constant 1, 2, 3 or 4: the result, or -1. */
int ox_pow_small(ox_b *b, int x, int y);

/* ops/math.c: x rounded to the nearest integer, ties to even (ONNX Round), in x's float dtype. */
int ox_round_even(ox_b *b, int x);

/* build.c: attributes of the ONNX node */
const Onnx__AttributeProto *ox_attr(ox_b *b, const char *name);
/* Attribute `name` of any node np (ox_attr: of b's own); NULL when absent. */
const Onnx__AttributeProto *ox_node_attr(const Onnx__NodeProto *np, const char *name);
int64_t ox_int(ox_b *b, const char *name, int64_t dflt);
double ox_float(ox_b *b, const char *name, double dflt);
const char *ox_str(ox_b *b, const char *name, const char *dflt);
/* The ints attribute `name` into v (up to cap): the count, -1 when absent. */
int ox_ints(ox_b *b, const char *name, int64_t *v, int cap);

/* fold.c */
xe_code ox_fold(ox_ctx *c, int node, xe_status *st);
/* Sets c->fold_left: OX_FOLD_MAX plus twice the bytes the model's initializers hold. */
void ox_fold_budget(ox_ctx *c);
/* Whether a fold or load-time constant of numel elements fits what is left (then taken from it). */
bool ox_fold_charge(ox_ctx *c, int64_t numel);

#endif
