/*
 * The text of an elementwise op in generated code, from the op table: the
 * ops.def expression of the operands' compute type, with the operands and
 * the op's float attributes put in. The emitter prints it; the
 * compilability predicate asks for it, so that nothing the emitter cannot
 * print is ever clustered.
 */
#ifndef XG_OP_TEXT_H
#define XG_OP_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "xlac/graph.h"

/* A literal of dtype dt with value v, as generated code spells it. */
void xg_literal(xe_dtype dt, double v, char *buf, size_t len);

/*
 * The text of node n (an XU or XB row of ops.def) on operands a (and b) of
 * dtype dt: false when the op has no expression for dt (or no row), or the
 * text does not fit in len. a and b may be NULL to ask only whether it has.
 */
bool xg_op_text(const xe_node *n, xe_dtype dt, const char *a, const char *b, char *buf, size_t len);

/*
 * executor/ir/scalar.h's text for a program that uses the ops marked in
 * used[XE_OP_COUNT]: the common part, then the section of each used op
 * that has one ("xe-op NAME:" up to "xe-op end", see scalar.h). NULL when
 * out of memory; the caller frees it.
 */
char *xg_scalar_text_for(const bool *used);

#endif
