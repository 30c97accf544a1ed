/*
 * Shared helpers for the tests of the compilation cache (test_cache,
 * test_cache_hostile, test_cache_processes, test_compile_guard,
 * test_signature): stderr captured into a temp file (for the one-warning
 * promises), the cache's counters as a value, and the
 * module files ("<hex>.xlac") of a cache folder; and test_demote's and
 * test_verdict's graph.
 */
#ifndef XLAC_TEST_CACHEFX_H
#define XLAC_TEST_CACHEFX_H

#include "support/tmpdir.h" /* xt_occurrences */
#include "xg.h"

typedef struct xt_capture {
    char path[64]; /* the temp file stderr goes to */
    int saved;     /* the real stderr */
} xt_capture;

/* From now on stderr goes to a temp file. */
void xt_capture_begin(xt_capture *k);
/* Restores stderr; returns what was written (malloc'd, at most 64 KiB). */
char *xt_capture_end(xt_capture *k);
/* The cache's counters. */
xg_stats xt_stats(xg_cache *c);
/* How many module files dir holds (temp files of writers not counted). */
int xt_module_count(const char *dir);
/* The path of dir's module file (the last one read when several; malloc'd; NULL when none). */
char *xt_module_path(const char *dir);

/* A cache test's fixture: a private folder, a graph, and default options using that folder. */
typedef struct xt_cache_dir {
    char dir[64];
    xe_graph *g;
    xg_options o;
} xt_cache_dir;

/* Makes /tmp/xlac-TAG-XXXXXX (mode 0700), parses graph_text, o: defaults with cache_dir = dir. */
void xt_cache_dir_init(xt_cache_dir *k, const char *tag, const char *graph_text);
/* Removes the folder (whatever modes a test left in it) and frees the graph. */
void xt_cache_dir_fini(xt_cache_dir *k);

/* The demotion tests' graph, b = mul(x, y) + x over rows x 8 f32: in[0] = x with x[i] = i % 7,
 * in[1] = y = 0.5 (two new tensors). */
void xt_mul_add_inputs(int rows, xe_tensor *in[2]);
/* Asserts that out holds what that graph gives those inputs (1.5 * (i % 7)), and releases it. */
void xt_mul_add_check(xe_tensor *out, int rows);

#endif
