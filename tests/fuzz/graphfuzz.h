/*
 * The structure-aware graph fuzzer: random valid graphs (support/randgraph)
 * and structural mutations of them (an op swapped for another of its
 * kind, an input dim set to 1 or 0, a node duplicated as a new output, an
 * axis or keepdims changed, an output dropped), each run through xlac-run
 * op by op and clustered (the plugin preloaded, --seed inputs), outputs
 * compared. A failure is a run ended by a signal, a sanitizer report, an
 * exit status other than 0 on one side only (or other than 0, 1, 2), or
 * outputs that differ beyond the dtype's tolerance (relative to the
 * output's largest magnitude: f64 1e-12, f32 1e-5, f16 1e-2; integers and
 * bool exact; NaN only with NaN, an infinity only with itself).
 *
 * Used by the driver xlac-graphfuzz (scripts/fuzz.sh graph, for long
 * campaigns) and by test_graph_fuzz (a CI slice and the kept inputs of
 * tests/data/fuzz/graph/).
 */
#ifndef XF_GRAPHFUZZ_H
#define XF_GRAPHFUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The outcome of one graph. */
typedef enum gf_result {
    GF_SAME,    /* both runs succeeded and agree */
    GF_INVALID, /* the graph is not valid (both runs rejected it alike): not a failure */
    GF_FAILED,  /* a crash, a sanitizer report, a one-sided error or a difference: `why` says which
                 */
} gf_result;

/* The .xg text of case `seed` (a random graph, mutated for 2 seeds in 3); malloc'd. */
char *gf_case_text(uint64_t seed);

/*
 * Runs text through `bindir`/xlac-run both ways in the scratch folder
 * `work` (created if missing); `why` receives the failure.
 */
gf_result gf_check(const char *text, const char *bindir, const char *work, char *why, size_t cap);

#endif
