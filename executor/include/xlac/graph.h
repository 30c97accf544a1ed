/*
 * The graph IR. A graph is an array of nodes in a topological order (the
 * text format only lets a node use names defined above it, and passes keep
 * that invariant). Every node has one output; a composite node (a body
 * graph run as one op, such as the plugin's xlac_launch) produces a tuple,
 * and `get(node, index=K)` nodes pick its elements.
 *
 * The IR is public on purpose: the clustering pass and the code generator
 * walk it. Everything a graph owns is freed by xe_graph_destroy.
 */
#ifndef XLAC_GRAPH_H
#define XLAC_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "xlac/device.h"
#include "xlac/dtype.h"
#include "xlac/status.h"
#include "xlac/tensor.h"

typedef enum xe_attr_kind {
    XE_ATTR_INT,    /* 3, -1 */
    XE_ATTR_FLOAT,  /* 0.5, 1e-5, nan, inf */
    XE_ATTR_BOOL,   /* true, false */
    XE_ATTR_STRING, /* "text" with \" and \\ escapes */
    XE_ATTR_DTYPE,  /* f32 */
    XE_ATTR_INTS,   /* [1,2,3] or [] */
    XE_ATTR_FLOATS, /* a list with at least one float literal */
} xe_attr_kind;

typedef struct xe_attr {
    char *name; /* annotations start with '@' and never change execution */
    xe_attr_kind kind;
    int64_t i;      /* INT, BOOL (0/1) */
    double f;       /* FLOAT */
    char *s;        /* STRING */
    xe_dtype dtype; /* DTYPE */
    int n;          /* INTS, FLOATS: length */
    int64_t *ints;  /* INTS */
    double *floats; /* FLOATS */
} xe_attr;

typedef struct xe_graph xe_graph;

/*
 * A graph whose nodes depend on its input shapes: an imported model that
 * computes shapes from symbolic input dims (ONNX Shape, Gather on shapes,
 * Reshape to a computed shape, ...). make() builds the graph for concrete
 * input shapes (one per graph input, in order) with every shape computation
 * folded; a session calls it once per input-shape signature (session.c).
 * Shared by clones (refs); release() frees user when the last one goes.
 */
typedef struct xe_graph_maker {
    xe_graph *(*make)(void *user, const xe_shape *input_shapes, int n, xe_status *st);
    void (*release)(void *user);
    void *user;
    int refs; /* atomic: graphs holding it */
} xe_graph_maker;

typedef struct xe_node {
    char *name; /* unique within its graph */
    int op;     /* xe_op, or an id returned by xe_register_op */
    int n_inputs;
    int *inputs; /* indices of producer nodes in the same graph */
    int n_attrs;
    xe_attr *attrs;
    xe_type type;     /* output type; unknown dims are XE_DIM_UNKNOWN */
    int n_tuple;      /* composite nodes: number of tuple elements */
    xe_type *tuple;   /* composite nodes: element types */
    xe_tensor *value; /* const: the host value */
    xe_graph *body;   /* composite nodes: the body (inputs bound in order) */
    int line, col;    /* where the node was defined; 0 if built by a pass */
    int jit;          /* index of the enclosing jit { } block, -1 if none */
    xe_device device; /* placement, set by xe_graph_place */
} xe_node;

struct xe_graph {
    char *file; /* source file name for messages ("<string>" if none) */
    int n_nodes, cap_nodes;
    xe_node **nodes;
    int n_inputs;
    int *inputs; /* node indices of the `input` nodes, in order */
    int n_outputs;
    int *outputs;                /* node indices named by `output` lines, in order */
    int n_jit;                   /* number of jit blocks */
    struct xe_name_entry *names; /* uthash: name -> node index */
    xe_graph_maker *maker;       /* not NULL: the nodes are one specialisation (at placeholder
                                    sizes) of a graph rebuilt per input-shape signature */
};

xe_graph *xe_graph_new(const char *file);
void xe_graph_destroy(xe_graph *g);
/* Deep copy (bodies, constants and attributes included). */
xe_graph *xe_graph_clone(const xe_graph *g, xe_status *st);
/* Attaches maker (taken; refs set to 1) to g; g's input types keep their symbolic dims. */
void xe_graph_set_maker(xe_graph *g, xe_graph_maker *maker);
/* g's maker's graph for these input shapes (one per input), or NULL with *st set. */
xe_graph *xe_graph_specialise(const xe_graph *g, const xe_shape *input_shapes, xe_status *st);
/*
 * g's maker's graph built at input_shapes and rewritten, where it can be,
 * to serve every size (executor/runtime/generalise.c). *n_extras: 0 when it serves
 * every size with g's inputs alone; N > 0 when it needs N more inputs (values
 * computed from the sizes, which only a session feeds); -1 when the sizes
 * stay baked in. NULL with *st set when the build fails.
 */
xe_graph *xe_graph_general(const xe_graph *g, const xe_shape *input_shapes, int *n_extras,
                           xe_status *st);

/*
 * Appends a node; name is copied (NULL: a fresh name "_N" is made),
 * inputs copied. Returns the new node's index, or -1 with *st set when
 * the name is taken or an input index is out of range.
 */
int xe_graph_add_node(xe_graph *g, const char *name, int op, const int *inputs, int n_inputs,
                      xe_status *st);
/* Appends an `input` node of a declared type and records it as a graph input. */
int xe_graph_add_input(xe_graph *g, const char *name, const xe_type *type, xe_status *st);
xe_code xe_graph_add_output(xe_graph *g, int node, xe_status *st);
/* Index of a node by name, -1 if none. */
int xe_graph_find(const xe_graph *g, const char *name);
/* A name not yet used in g, built from base ("t1", "t1_1", ...); caller frees. */
char *xe_graph_fresh_name(const xe_graph *g, const char *base);

/* Attributes. Setting replaces an attribute of the same name. */
const xe_attr *xe_node_attr(const xe_node *n, const char *name);
int64_t xe_node_attr_int(const xe_node *n, const char *name, int64_t dflt);
double xe_node_attr_float(const xe_node *n, const char *name, double dflt);
bool xe_node_attr_bool(const xe_node *n, const char *name, bool dflt);
const char *xe_node_attr_string(const xe_node *n, const char *name, const char *dflt);
/* The op's name as the graph spells it: a plugin op that is not registered (a call
   holding its body) keeps its own name (@op), e.g. xlac_launch. */
const char *xe_node_op_name(const xe_node *n);
xe_code xe_node_set_int(xe_node *n, const char *name, int64_t v, xe_status *st);
xe_code xe_node_set_float(xe_node *n, const char *name, double v, xe_status *st);
xe_code xe_node_set_bool(xe_node *n, const char *name, bool v, xe_status *st);
xe_code xe_node_set_string(xe_node *n, const char *name, const char *v, xe_status *st);
xe_code xe_node_set_dtype(xe_node *n, const char *name, xe_dtype v, xe_status *st);
xe_code xe_node_set_ints(xe_node *n, const char *name, const int64_t *v, int count, xe_status *st);
xe_code xe_node_set_floats(xe_node *n, const char *name, const double *v, int count, xe_status *st);
xe_code xe_node_copy_attr(xe_node *dst, const xe_attr *a, xe_status *st);
/* Copies what a node carries besides its name, op and inputs (type, place, attributes, value,
 * body). */
xe_code xe_node_copy_payload(xe_node *dst, const xe_node *src, xe_status *st);
void xe_node_remove_attr(xe_node *n, const char *name);

/* Consumers: counts[i] = number of uses of node i (graph outputs count). */
int *xe_graph_use_counts(const xe_graph *g);

/*
 * Static shape inference over the whole graph (bodies included), with
 * unknown dims propagated. Errors are "FILE:LINE:COL: node NAME (OP): ...".
 */
xe_code xe_graph_infer(xe_graph *g, xe_status *st);
/* An error (XE_ERR_GRAPH) when t has more than XE_MAX_ELEMS elements: every inferred type is
 * checked. */
xe_code xe_type_check_size(const xe_type *t, xe_status *st);
/* Infers one node from its inputs' types (get and composite nodes included). */
xe_code xe_node_infer(xe_graph *g, xe_node *n, xe_status *st);

/*
 * Placement: the first available accelerator where the op has a kernel
 * there and the user wants it, else CPU. want: XE_PLACE_AUTO, XE_PLACE_CPU,
 * XE_PLACE_GPU.
 */
typedef enum xe_place_mode {
    XE_PLACE_AUTO, /* GPU where possible */
    XE_PLACE_CPU,  /* everything on the CPU */
    XE_PLACE_GPU,  /* like AUTO, but an error when there is no GPU */
} xe_place_mode;
xe_code xe_graph_place(xe_graph *g, xe_place_mode mode, xe_status *st);
/* Every op that has a kernel on dev goes there, the rest to the CPU (an error when dev is not
 * available). */
xe_code xe_graph_place_on(xe_graph *g, xe_device dev, xe_status *st);

/* "FILE:LINE:COL" for messages about a node ("FILE" if it has no line). */
const char *xe_node_where(const xe_graph *g, const xe_node *n, char *buf, size_t len);

#endif
