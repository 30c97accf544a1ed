/*
 * The op table for tests: the elementwise ops' ops.def expressions
 * evaluated in the test itself (for float dtypes in double precision),
 * so that tests walk the table instead of copying its op lists.
 */
#ifndef XLAC_TEST_OPTABLE_H
#define XLAC_TEST_OPTABLE_H

#include <stdbool.h>

#include "xlac/xlac.h"

/* Whether op has an XU or XB row (unary, binary, comparison or logical op). */
bool optable_has_expr(int op);
/* The bool attribute of op's XV row, NULL if it has none. */
const char *optable_variant_attr(int op);
/*
 * n's op on operands x (and y) of dtype dt with the expression of that
 * dtype's column: floats (f16 and f32 too) in double, integers in their
 * own type, bool as 0/1. False when the op has no expression for dt.
 */
bool optable_eval(const xe_node *n, xe_dtype dt, double x, double y, double *out);

#endif
