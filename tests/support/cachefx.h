/*
 * Shared helpers for the tests of the compilation cache (test_cache,
 * test_cache_hostile, test_cache_processes, test_compile_guard,
 * test_signature): stderr captured into a temp file (for the one-warning
 * promises), counting a phrase, the cache's counters as a value, and the
 * module files ("<hex>.xlac") of a cache folder.
 */
#ifndef XLAC_TEST_CACHEFX_H
#define XLAC_TEST_CACHEFX_H

#include "xg.h"

typedef struct xt_capture {
    char path[64]; /* the temp file stderr goes to */
    int saved;     /* the real stderr */
} xt_capture;

/* From now on stderr goes to a temp file. */
void xt_capture_begin(xt_capture *k);
/* Restores stderr; returns what was written (malloc'd, at most 64 KiB). */
char *xt_capture_end(xt_capture *k);
/* How many times what occurs in text. */
int xt_occurrences(const char *text, const char *what);
/* The cache's counters. */
xg_stats xt_stats(xg_cache *c);
/* How many module files dir holds (temp files of writers not counted). */
int xt_module_count(const char *dir);
/* The path of dir's module file (the last one read when several; malloc'd; NULL when none). */
char *xt_module_path(const char *dir);

#endif
