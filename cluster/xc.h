/*
 * The clustering pass's public face, used by the plugin and xlac-compile.
 *
 *   xc_mark_for_compilation  which ops to compile, grouped into clusters,
 *                            with a reason for every op left out
 *   xc_encapsulate           a new graph where each cluster is one
 *                            xlac_launch node with a body graph
 *   xc_dump_*                annotated .xg, Graphviz .dot, the summary
 *
 * cluster/ never sees the code generator: whether an op can be compiled
 * is a predicate the caller hands in (xc_options.supports).
 */
#ifndef XC_H
#define XC_H

#include <stdbool.h>
#include <stdio.h>

#include "xlac/graph.h"
#include "xlac/status.h"

/* The fixed reasons an op is left out of every cluster. */
#define XC_REASON_DATA_DEPENDENT "data-dependent output shape"
#define XC_REASON_STATEFUL "stateful"
#define XC_REASON_NO_CODEGEN "no code generator"
#define XC_REASON_DEVICE "device excluded"
#define XC_REASON_FLAG "excluded by flag"
#define XC_REASON_TOO_SMALL "cluster too small"
#define XC_REASON_CYCLE "would create a cycle"
#define XC_REASON_FUEL "out of clustering fuel"
#define XC_REASON_MAX_SIZE "max cluster size"
#define XC_REASON_LEVEL1 "not fusible at level 1"
#define XC_REASON_NO_INTERMEDIATE "removes no intermediate tensor"
#define XC_REASON_MATMUL_ALONE "nothing to fuse with matmul"
#define XC_REASON_CONV_ALONE "nothing to fuse with conv2d"
#define XC_REASON_LITTLE_SAVED "saves too little beside its library products"
#define XC_REASON_INPUT "graph input"
#define XC_REASON_CONSTANT "constant"
#define XC_REASON_AUTO_OFF "auto-clustering off"
#define XC_REASON_COLLECTIVE "collective"
#define XC_REASON_COMPOSITE "composite node (its body is clustered on its own)"
#define XC_REASON_TUPLE "element of a composite node's outputs"

/*
 * Can node n of g be compiled on dev? must_compile: n lies in a jit block
 * (the level's restrictions do not apply). When not, *reason receives a
 * short fixed phrase (copied by the caller).
 */
typedef bool (*xc_supports_fn)(const xe_graph *g, const xe_node *n, xe_device dev,
                               bool must_compile, void *user, const char **reason);

typedef struct xc_options {
    bool auto_cluster;                 /* false: only jit blocks form clusters (XLAC_AUTO_JIT=0) */
    int min_cluster_size;              /* smaller clusters are dissolved (default 2) */
    int max_cluster_size;              /* merges beyond this are refused; 0: no limit */
    bool devices[XE_DEV_MAX];          /* device instances whose ops may be clustered */
    const char *const *ops_to_exclude; /* op names never clustered */
    int n_ops_to_exclude;
    long long fuel;          /* cluster at most the first N candidates; -1: no limit */
    bool need_intermediate;  /* level 1: dissolve clusters that remove no tensor */
    xc_supports_fn supports; /* NULL: every op without another reason is supported */
    void *user;              /* passed to supports */
} xc_options;

/* Defaults: auto on, min 2, no max, both devices, no fuel limit. */
void xc_options_default(xc_options *o);

typedef struct xc_cluster {
    char *name;        /* "cluster_K", K by the position of its first node */
    xe_device device;  /* every node of the cluster is placed here */
    bool must_compile; /* formed from a jit block */
    int n_nodes;
    int *nodes; /* indices into the graph, ascending */
} xc_cluster;

typedef struct xc_clustering {
    int n_nodes;   /* of the graph it was computed for */
    int *cluster;  /* per node: index into clusters, or -1 */
    char **reason; /* per node: why it is left out (NULL when clustered) */
    int n_clusters;
    xc_cluster *clusters; /* ordered by first node */
} xc_clustering;

/*
 * Marks g (inferred and placed; not modified). A jit block whose ops
 * cannot all be compiled is an error naming the op, its line and the
 * reason: "FILE:LINE:COL: node NAME (OP) in a jit block cannot be
 * compiled: REASON". Returns NULL with *st set on failure.
 */
xc_clustering *xc_mark_for_compilation(const xe_graph *g, const xc_options *o, xe_status *st);
void xc_clustering_destroy(xc_clustering *c);

/*
 * A new graph where each cluster K is one node
 *   cluster_K = LAUNCH_OP(ext_in..., @cluster="cluster_K", @device="XLA_CPU:0") { body }
 * and every cluster value used outside it becomes NAME = get(cluster_K,
 * index=I) under its original name. Topologically ordered, inferred, placed.
 * g is not modified.
 */
xe_graph *xc_encapsulate(const xe_graph *g, const xc_clustering *c, int launch_op, xe_status *st);

/* "XLA_CPU:0" / "XLA_GPU:0". */
const char *xc_xla_device_name(xe_device dev);

/* A clone of g with every node annotated @cluster="..." or @reason="...". */
xe_graph *xc_annotate(const xe_graph *g, const xc_clustering *c, xe_status *st);

/*
 * Graphviz text of g: c (may be NULL) draws clusters as filled subgraphs
 * and unclustered ops grey with their reason; composite nodes are filled
 * boxes. Returns malloc'd text, NULL with *st set on failure.
 */
char *xc_dot_string(const xe_graph *g, const xc_clustering *c, xe_status *st);
/*
 * Graphviz text of c at the level of its decisions (dot_clusters.c): a box per
 * cluster (device, op count, ops by kind), a grey box per reason for the ops
 * left out, the graph's inputs and outputs, and arrows labelled with the
 * number of tensors flowing between boxes. Readable where the per-op picture
 * of a large graph is not. malloc'd text, NULL with *st set on failure.
 */
char *xc_cluster_dot_string(const xe_graph *g, const xc_clustering *c, xe_status *st);

/* The clustering summary: counts, per-cluster histograms, reasons. */
void xc_write_summary(FILE *f, const xe_graph *g, const xc_clustering *c, int session_id);
/*
 * The same as one JSON object: {"session":N,"file":"...","composite":null|"f",
 * "ops":N,"clusters":[{"name","ops","device","must_compile"}],
 * "left_out":{"REASON":["node",...],...}}; owner: the composite node whose body g is, or NULL.
 */
void xc_write_summary_json(FILE *f, const xe_graph *g, const xc_clustering *c, int session_id,
                           const char *owner);

#endif
