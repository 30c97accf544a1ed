/*
 * The fusion plan of a graph written as .xg text, at its declared input
 * types (test_epilogue, test_layout): the plan's decisions checked on
 * their own, without compiling or running anything.
 */
#ifndef XLAC_TEST_PLAN_OF_H
#define XLAC_TEST_PLAN_OF_H

#include "plan.h"

/* The plan of text's graph; *g gets the graph (destroy both). Fails the test when either cannot be made. */
xg_plan *xt_plan_of(const char *text, xe_graph **g);

#endif
