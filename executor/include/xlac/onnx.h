/*
 * ONNX import: an ONNX ModelProto (a `.onnx` file) becomes an executor
 * graph (executor/frontends/onnx/, see docs/onnx.md). Nothing else in the tree knows
 * ONNX. Initializers and Constant nodes become `const` nodes; ONNX ops map
 * onto executor ops, by decomposition where needed; shape arithmetic whose
 * inputs are known at load time is folded to constants.
 *
 * Errors: a file protobuf-c refuses names the byte offset and the field; an
 * op, attribute or dtype the importer does not support is XE_ERR_UNSUPPORTED
 * with one line per unsupported node (all of them, not just the first).
 */
#ifndef XLAC_ONNX_H
#define XLAC_ONNX_H

#include <stdbool.h>
#include <stddef.h>

#include "xlac/graph.h"
#include "xlac/status.h"
#include "xlac/tensor.h"

/*
 * Value of graph input `name` when the importer needs it as a constant (a
 * Reshape's shape fed as a graph input, say): NULL when it is not known. The
 * returned reference is the importer's to keep (it retains nothing more).
 */
typedef xe_tensor *(*xe_onnx_bind_fn)(const char *name, int position, void *user);

/* What a pin fixes (xe_onnx_pin). */
typedef enum xe_onnx_pin_kind {
    XE_ONNX_PIN_SHAPE,      /* graph input `name`'s whole shape (xlac-run --shape) */
    XE_ONNX_PIN_DIM,        /* every dim whose dim_param is `name` (xlac-run --dim) */
    XE_ONNX_PIN_DENOTATION, /* every dim whose denotation is `name` */
} xe_onnx_pin_kind;

/*
 * A shape fixed at load, as onnxruntime's free dimension overrides and
 * OpenVINO's reshape: the pinned dims become known dims of the inputs'
 * declared types, so a fed array of another size is refused. A pin that
 * names nothing in the model, or contradicts a dim it declares, is an error.
 */
typedef struct xe_onnx_pin {
    xe_onnx_pin_kind kind;
    const char *name;
    int rank;                  /* XE_ONNX_PIN_SHAPE: the shape's rank */
    int64_t dims[XE_MAX_RANK]; /* the shape; a dim pin's value is dims[0] */
} xe_onnx_pin;

/*
 * Memory of the host's that a model held in memory names as external data
 * (xe_onnx_options.blocks; how an embedding host hands over its weights
 * without writing their bytes into the model): an initializer whose
 * data_location is EXTERNAL at location `name` reads its bytes from data
 * (its offset and length checked against len, as a file's are). A tensor at
 * a 64-byte aligned address views the block without a copy and retains
 * keeper while it lives (keeper NULL: the host keeps the memory alive and
 * unchanged longer than every graph, tensor and compiled program made from
 * the model, which the process-wide program cache can make forever); any
 * other is copied.
 */
typedef struct xe_onnx_block {
    const char *name;
    const void *data;
    size_t len;
    xe_tensor_keeper *keeper;
} xe_onnx_block;

typedef struct xe_onnx_options {
    xe_onnx_bind_fn bind;    /* NULL: graph inputs are never known at load time */
    void *user;              /* passed to bind */
    const xe_onnx_pin *pins; /* n_pins shapes fixed at load (may be NULL) */
    int n_pins;
    char **report;      /* not NULL: on an import error, every error line (malloc'd; the
                           status holds only what fits in its buffer) */
    bool nodes_at_load; /* a model whose import needs sizes for its symbolic dims is imported
                           at probe sizes (every such dim 3) for its nodes, and fails with that
                           import's errors, instead of being built at each fed signature from
                           its declaration (a host that needs the nodes at load: the
                           onnxruntime EP) */
    const xe_onnx_block *blocks; /* xe_onnx_load_memory's external data (n_blocks of them; read
                                    during the call only: views retain their keepers) */
    int n_blocks;
} xe_onnx_options;

/* Loads an ONNX model file; NULL with *st set on failure. opt may be NULL. */
xe_graph *xe_onnx_load(const char *path, const xe_onnx_options *opt, xe_status *st);

/*
 * The same from len bytes of a ModelProto held in memory (a host that has
 * the model as its own objects writes them so): name stands for the file in
 * messages; external data is refused unless it names one of opt's blocks.
 * The bytes are not needed after.
 */
xe_graph *xe_onnx_load_memory(const void *data, size_t len, const char *name,
                              const xe_onnx_options *opt, xe_status *st);

/* Reads an ONNX TensorProto file (`input_0.pb`); *name gets its name (malloc'd, "" if none). */
xe_tensor *xe_onnx_read_tensor(const char *path, char **name, xe_status *st);

/* What a file holds, judged by its content. */
typedef enum xe_file_kind {
    XE_FILE_XG,      /* .xg text: starts with the `xlac.graph` header (after comments) */
    XE_FILE_ONNX,    /* a protobuf ModelProto */
    XE_FILE_UNKNOWN, /* neither */
} xe_file_kind;

xe_file_kind xe_sniff_file(const char *path);

/* Loads a graph from .xg text or an ONNX model, picked by content. */
xe_graph *xe_load_graph(const char *path, const xe_onnx_options *opt, xe_status *st);

#endif
