/*
 * A structure-aware mutator of ONNX models for the onnx and onnx_ext fuzz
 * targets (onnx_hooks.c hands it to libFuzzer). A model is unpacked with
 * protobuf-c and our schema (executor/frontends/onnx/onnx.proto) after a guard of its
 * own has bounded its nesting and size, changed where an importer looks
 * (attribute values and kinds, tensors and their dims and data, declared
 * shapes, names, node wiring, op types and domains, opsets, subgraph
 * nesting), and packed again. A model that does not unpack, or that grows
 * past the size libFuzzer allows, is left to libFuzzer's byte mutations.
 */
#ifndef XM_ONNX_MUTATE_H
#define XM_ONNX_MUTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Nested messages the guard lets through: about 30 levels of subgraphs (3 messages each). */
#define XM_MAX_DEPTH 100
/* Bytes of a model the mutator unpacks at most. */
#define XM_MAX_SIZE (1u << 20)

/* Whether size bytes at data parse as a ModelProto nested at most XM_MAX_DEPTH deep (no recursion
 * past it). */
bool xm_guard(const uint8_t *data, size_t size);

/*
 * Mutates the model in data[0..size) in place by structure, one to three
 * changes, from seed. Returns the new size (at most max_size), or 0 when
 * the model does not pass the guard or unpack, or when every try grew past
 * max_size: the caller then mutates bytes.
 */
size_t xm_mutate(uint8_t *data, size_t size, size_t max_size, unsigned seed);

/* Writes into out (at most max_out bytes) model a with nodes or initializers of model b; 0 when it
 * cannot. */
size_t xm_cross_over(const uint8_t *a, size_t na, const uint8_t *b, size_t nb, uint8_t *out,
                     size_t max_out, unsigned seed);

#endif
