/*
 * Random well-typed graphs as .xg text, for differential and property
 * tests: elementwise chains and diamonds with broadcasting, reshape,
 * transpose, slice, concat, reductions on every axis with and without
 * keepdims, softmax, several outputs; f32, f64 or i32 (optionally
 * compare/logical/cast, argmax, iota, constants, matmul and more). The
 * same seed and options always give the same graph; allow_unknown changes
 * only the input declarations.
 */
#ifndef XLAC_TEST_RANDGRAPH_H
#define XLAC_TEST_RANDGRAPH_H

#include <stdbool.h>
#include <stdint.h>

typedef struct randgraph_options {
    int n_ops;            /* ops to generate (default 8) */
    bool allow_opaque;    /* sprinkle unique and random_normal (not compilable) */
    bool allow_unknown;   /* declare the first dim of inputs as `?` */
    const char *dtype;    /* "f32", "f64", "i32", or NULL: chosen by the seed */
    bool more_ops;        /* also compare/logical/cast, argmax, unary ops with NaN and inf in range,
                             pow, reduce_prod, iota, constants, matmul (level 2) */
    bool table_ops;       /* unary and binary ops drawn from the whole op table (ops.def: every op
                             that takes the dtype, new ones included) instead of the fixed sets
                             that the golden set (test_emit_golden) was made with */
} randgraph_options;

#include "xlac/tensor.h"

/* Deterministic host tensor of type t: floats in [-2, 2), ints in [-5, 5]; NULL on failure. */
xe_tensor *randgraph_input(const xe_type *t, uint64_t seed);

/* Returns malloc'd .xg text. */
char *randgraph_text(uint64_t seed, const randgraph_options *o);

/* An f32[64] elementwise chain of `ops` ops (unary ops, an add of the input every fifth); malloc'd. */
char *randgraph_chain(int ops);

#endif
