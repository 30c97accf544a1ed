/*
 * The onnxruntime execution provider's own header (plugin/ort_ep/). The EP
 * is the host-side twin of libxlac.so: onnxruntime hands it its graph, the
 * EP turns it into xlac's graph, runs the plugin's clustering pass on it
 * and hands back each cluster as one node to fuse; a fused node is then an
 * xlac session of its own that the same pass, code generator and cache run.
 *
 *   ep.c          the library's entry points, the factory and the EP objects
 *   ortgraph.c    an OrtGraph read into an xo_model (nodes, values, types)
 *   onnxpb.c      an xo_model (or a part of it) written as an ONNX ModelProto
 *   capability.c  GetCapability: the clusters of the whole graph, as groups of nodes
 *   compute.c     Compile and Compute: a fused node as an xlac session
 *
 * Nothing below plugin/ knows onnxruntime: the executor sees an ONNX model
 * held in memory (xe_onnx_load_memory), the pass and the code generator see
 * xlac's graph.
 */
#ifndef XO_H
#define XO_H

#include <pthread.h>
#include <stdatomic.h>

#include "ort_abi.h"
#include "xlac/graph.h"
#include "xlac/text.h"
#include "xlac_plugin.h"

#define XO_EP_NAME "XlacExecutionProvider"
#define XO_EP_VENDOR "xlac"
#define XO_EP_VERSION "0.1.0"
/* An initializer of at most this many bytes is written into the models xlac imports (shapes, axes,
   scalars fold at import as they do from a file); a bigger one is a graph input, fed at each run.
 */
#define XO_EMBED_MAX_BYTES 65536

/* The tables of one onnxruntime (the factory's, shared by its EPs). */
typedef struct xo_api {
    const OrtApiBase *base;
    const xo_fn *ort; /* struct OrtApi */
    const xo_fn *ep;  /* struct OrtEpApi */
} xo_api;

/* An error status for onnxruntime with xlac's prefix (never NULL unless out of memory). */
OrtStatus *xo_status(const xo_api *a, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* s (released) into *st as an XE_ERR_RUNTIME naming what was asked; XE_OK when s is NULL. */
xe_code xo_check(const xo_api *a, OrtStatus *s, const char *what, xe_status *st);

/* ---- protobuf's wire format, appended to an xe_text (onnxpb.c) ---- */
void xo_pb_varint(xe_text *t, uint64_t v);
void xo_pb_int(xe_text *t, int field, int64_t v);                    /* a varint field */
void xo_pb_float(xe_text *t, int field, float f);                    /* a 32-bit field */
void xo_pb_bytes(xe_text *t, int field, const void *data, size_t n); /* a length-delimited field */
void xo_pb_str(xe_text *t, int field, const char *s);
void xo_pb_msg(xe_text *t, int field, xe_text *sub); /* sub as a nested message (freed) */
/* A TensorProto of v (name, dims, data_type, raw_data) as field `field` of t. */
xe_code xo_pb_tensor(const xo_api *a, xe_text *t, int field, const char *name, const OrtValue *v,
                     xe_status *st);
/* The same from its parts (n bytes of data). */
void xo_pb_tensor_raw(xe_text *t, int field, const char *name, int elem, int rank,
                      const int64_t *dims, const void *data, size_t n);
/* Bytes per element of an ONNX element type xlac holds; 0 for the others (string, complex, 4-bit).
 */
size_t xo_elem_size(int elem);

/* A big initializer's bytes, copied once for the graphs a fused node builds (xo_model_own_weights),
   which view them as external data (xe_onnx_block): 64-byte aligned, freed with the last view. */
typedef struct xo_weight {
    xe_tensor_keeper keeper; /* first: the keeper is the weight */
    void *data;
    size_t len;
} xo_weight;

/* One value (a tensor) of the graph read. */
typedef struct xo_value {
    char *name;                /* onnxruntime's name */
    int elem;                  /* ONNX element type; 0 when not known */
    int rank;                  /* -1 when not known */
    int64_t dims[XE_MAX_RANK]; /* -1 where not known */
    char *params[XE_MAX_RANK]; /* a symbolic dim's name, or NULL */
    const OrtValue *init;      /* a constant initializer's value, else NULL */
    const void *data;  /* bytes written into the model in place of init: a small initializer's,
                          kept past Compile, or a value fed at Compute (see xo_value_inputs) */
    bool owned;        /* data is the model's own copy (freed with it) */
    xo_weight *weight; /* a big initializer's copy (xo_model_own_weights), held by the model */
    int producer;      /* the node that writes it, -1 for inputs and initializers */
    bool graph_output; /* an output of the graph read */
} xo_value;

/* One node, its attributes already as AttributeProto bytes. */
typedef struct xo_node {
    const OrtNode *node;
    char *op_type, *domain, *name;
    int n_in, n_out;
    int *in, *out; /* value indices; -1 for an absent optional input or output; in: then the values
                      its subgraphs read (implicit inputs) */
    xe_text attrs; /* field 5 of NodeProto, once per attribute */
    const char
        *refuse; /* why xlac never takes it (a subgraph, an attribute it cannot read), or NULL */
    bool plain_gemm; /* a Gemm with alpha = beta = 1 and neither input transposed (onnxpb.c's
                        rewrite) */
} xo_node;

typedef struct xo_model {
    int64_t ir_version;
    int n_opsets;
    char **opset_domains;
    int64_t *opset_versions;
    int n_values, cap_values;
    xo_value *values;
    int *slots;     /* open-addressing table of value indices by name (-1: empty) */
    size_t n_slots; /* a power of two */
    int n_nodes;
    xo_node *nodes; /* in a topological order */
    int n_inputs, n_outputs;
    int *inputs, *outputs; /* the graph's inputs (initializers left out) and outputs, as values */
} xo_model;

/* Reads graph into *m (zeroed first); every error frees what it took. */
xe_code xo_model_read(const xo_api *a, const OrtGraph *graph, xo_model *m, xe_status *st);
void xo_model_free(xo_model *m);
/* The value called name, -1 if none. */
int xo_model_find(const xo_model *m, const char *name);

/*
 * The nodes where take[k] as one ONNX model: values named v<J> and nodes
 * n<K> by their indices in m; inputs are the values they read that none of
 * them writes (small constant initializers written in, the rest inputs,
 * listed in *in_values), outputs those of outputs[] (NULL: every value
 * that a node not taken reads or that is a graph output). Returns the
 * bytes (free), NULL with *st set. (The model a person reads: the dump.
 * xo_model_import writes big initializers as external data instead.)
 */
char *xo_model_write(const xo_api *a, const xo_model *m, const bool *take, const int *outputs,
                     int n_outputs, size_t *len, int **in_values, int *n_in_values, xe_status *st);
/* The same, imported by xlac (the ONNX front end): NULL with *st set (and *report its lines) on
 * failure; in_values is set (free it) whenever the model could be written, even when the import
 * fails. Big initializers of a type xlac holds are no inputs here: they are written as external
 * data naming blocks (xe_onnx_block) of their bytes, a weight's copy where the model has one
 * (xo_model_own_weights), else onnxruntime's own bytes, so that they import as constants. */
xe_graph *xo_model_import(const xo_api *a, const xo_model *m, const bool *take, const int *outputs,
                          int n_outputs, int **in_values, int *n_in_values, char **report,
                          xe_status *st);
/*
 * What an import of the nodes where take[k] failed for want of values
 * (report: its "'v<J>') is not supported unless it is known at load time"
 * lines) needs to succeed. Each named value is traced back through the
 * taken nodes (a Shape or Size ends a trace: it folds once the input dims
 * are known); every leaf must be a constant or shape-like: an integer
 * tensor of rank at most 1 that is no initializer (shape arithmetic
 * computed outside). Then every shape-like value the taken nodes read
 * from outside is listed in *vals (malloc'd; all of them, as the importer
 * names only the first value it misses on a path). Returns their count; 0
 * when the report names no such value or a trace ends anywhere else; -1
 * out of memory.
 */
int xo_value_inputs(const xo_model *m, const bool *take, const char *report, int **vals);
/* Copies the bytes of every initializer small enough to be written in into the model (owned) and
   forgets every OrtValue: the model outlives the graph it was read from (Compile's). */
xe_code xo_model_keep(const xo_api *a, xo_model *m, xe_status *st);
/*
 * Copies every other initializer of a type xlac holds into the model (xo_weight): the graphs
 * imported from it then hold them as constants, which library steps pack once and generated code
 * reads as constants, and which compiled programs in the process-wide cache may hold after
 * onnxruntime's session (and its initializers) are gone. Without it, an import views
 * onnxruntime's own bytes (GetCapability's graphs, which live only during the call).
 */
xe_code xo_model_own_weights(const xo_api *a, xo_model *m, xe_status *st);

/* What a fused node keeps between Compile and its runs (compute.c). */
typedef struct xo_fused xo_fused;

/* The EP's process-wide state: one xlac plugin state, shared by every EP and session. */
typedef struct xo_global {
    xlac_state state;  /* the plugin's: flags, launch op, cache, counters, reports */
    bool ready;        /* installed */
    atomic_int graphs; /* onnxruntime graphs seen (their numbers name dump files) */
} xo_global;

extern xo_global xo_g;

/* GetCapability's work (capability.c): each cluster of graph as one group of nodes to fuse. */
xe_code xo_capability(const xo_api *a, const OrtGraph *graph, OrtEpGraphSupportInfo *info,
                      const char *config, xe_status *st);
/* Compile's work for one fused node (compute.c): *out gets its compute info. */
xe_code xo_compile(const xo_api *a, const OrtGraph *graph, const OrtNode *fused, const char *config,
                   OrtNodeComputeInfo **out, xe_status *st);
void xo_compute_info_free(OrtNodeComputeInfo *info);
/* Whether the running thread is inside one of the EP's own xlac calls (its pass clusters only
 * those). */
bool xo_in_ep(void);
void xo_enter(bool on);

#endif
