/*
 * Differential checks of one compiled C cluster (test_epilogue,
 * test_attention): a graph written as .xg text compiled whole and run,
 * against the same graph op by op and against the graph with every f32
 * made f64, op by op (the f64 reference). NaN never passes.
 */
#ifndef XLAC_TEST_DIFFER_H
#define XLAC_TEST_DIFFER_H

#include "xlac/xlac.h"

#define XT_MAX_IO 8

/* text with every "f32" made "f64" (malloc'd). */
char *xt_as_f64(const char *text);
/* Runs text's graph op by op on in (converted to the graph's input dtypes); out gets its outputs. */
void xt_run_op_by_op(const char *text, xe_tensor *const *in, xe_tensor **out);
/* got against want elementwise, within tol of want's largest magnitude; NaN where want has none fails. */
void xt_expect_close(const xe_tensor *got, const xe_tensor *want, double tol, const char *what, const char *text);
/* The plan text (C target) of text's graph at its declared types (malloc'd). */
char *xt_plan_text(const char *text);
/* How many times needle occurs in hay. */
int xt_count(const char *hay, const char *needle);
/*
 * text's graph compiled as one C cluster (shape-generic when run_text is not NULL, and then run on
 * inputs of run_text's declared types) and run on random inputs, against op by op (1e-5 of the
 * largest magnitude) and the f64 reference (1e-4), both of run_text (or text).
 */
void xt_check_cluster(const char *text, const char *run_text);
/* text's graph compiled as one C cluster and run once on random inputs: xg_program_run's code. */
xe_code xt_run_cluster_code(const char *text);

#endif
