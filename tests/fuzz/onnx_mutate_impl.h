/*
 * What the files of the ONNX mutator share (onnx_mutate.c: guard, walk,
 * dispatch; onnx_mutate_values.c: values, attributes, tensors, shapes;
 * onnx_mutate_graph.c: names, wiring, op types, opsets, nesting). The walk
 * collects pointers into the unpacked model in pools (a reservoir sample
 * when a model has more than XM_POOL of a kind); a mutation picks from
 * them, changes the model, and the walk runs again before the next one.
 * Everything a mutation puts into the model is allocated with malloc, as
 * protobuf-c's default allocator does, so that free_unpacked frees it.
 */
#ifndef XM_ONNX_MUTATE_IMPL_H
#define XM_ONNX_MUTATE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"
#include "onnx_mutate.h"

#define XM_POOL 512
/* Subgraph levels below which a node is still wrapped into an If or a Loop (the guard's bound, with
 * room). */
#define XM_MAX_NEST 10
/* Marks a NUL inside a name: protobuf-c's strings end at a NUL, so the mutator writes this and the
   packed bytes get a NUL in its place (a name "t\0NULa" and one "t\0NULb" read as one name by a C
   string). */
#define XM_NUL_MARK "\x1eNUL"

typedef struct xm_rng {
    uint64_t s;
} xm_rng;

/* One kind of thing the walk found: pointers, their owners and subgraph depths. */
typedef struct xm_pool {
    void *p[XM_POOL];
    void *owner[XM_POOL];
    int depth[XM_POOL];
    size_t n, seen;
} xm_pool;

typedef struct xm_ctx {
    xm_rng r;
    Onnx__ModelProto *m;
    xm_pool graphs; /* Onnx__GraphProto; owner: NULL */
    xm_pool nodes;  /* Onnx__NodeProto; owner: its graph */
    xm_pool attrs;  /* Onnx__AttributeProto; owner: its node */
    xm_pool
        tensors; /* Onnx__TensorProto (initializers, attribute tensors); owner: its graph or NULL */
    xm_pool infos;  /* Onnx__ValueInfoProto (graph inputs, outputs, value_info); owner: its graph */
    xm_pool names;  /* char ** of every name slot; owner: (void *)1 when the slot may hold NULL */
    xm_pool values; /* char * of value names (node outputs, graph inputs, initializers) */
} xm_ctx;

/* ---- onnx_mutate.c ---------------------------------------------------------------------- */
uint64_t xm_next(xm_rng *r);
/* A number in [0, n); 0 when n is 0. */
size_t xm_below(xm_rng *r, size_t n);
/* Walks c->m into the pools (emptied first). */
void xm_collect(xm_ctx *c);
/* A random entry of pool (index into p), or -1 when it is empty. */
int xm_pick(xm_ctx *c, const xm_pool *pool);
/* A deep copy of a message (packed and unpacked again); NULL when that fails. */
void *xm_clone(const void *msg);
/* Grows *arr (of *n pointers) by one slot at index at (clamped), holding p. */
void xm_insert(void ***arr, size_t *n, size_t at, void *p);
char *xm_strdup(const char *s);

/* ---- onnx_mutate_values.c ------------------------------------------------------------------ */
int64_t xm_int(xm_rng *r);
float xm_float(xm_rng *r);
/* A dim value: 0, 1, -1, huge, small. */
int64_t xm_dim(xm_rng *r);
/* A hostile or ordinary string, malloc'ed (may hold XM_NUL_MARK; rarely 100 KB). */
char *xm_string(xm_rng *r);
/* A small tensor of a random type and shape whose data fits it (or, sometimes, does not). */
Onnx__TensorProto *xm_tensor_new(xm_rng *r);
bool xm_mut_attr_value(xm_ctx *c);
bool xm_mut_attr_set(xm_ctx *c);
bool xm_mut_tensor(xm_ctx *c);
bool xm_mut_shape(xm_ctx *c);

/* ---- onnx_mutate_graph.c ------------------------------------------------------------------- */
/* The attribute names the importer reads for op type (space separated), or "". */
const char *xm_op_attrs(const char *op_type);
bool xm_mut_name(xm_ctx *c);
bool xm_mut_wiring(xm_ctx *c);
bool xm_mut_op(xm_ctx *c);
bool xm_mut_opset(xm_ctx *c);
bool xm_mut_nest(xm_ctx *c);
bool xm_mut_nodes(xm_ctx *c);
bool xm_mut_graph_io(xm_ctx *c);

#endif
