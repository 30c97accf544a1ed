/*
 * Private to xlac-run: the parsed command line and the helpers that
 * prepare inputs and report outputs.
 */
#ifndef XE_CLI_H
#define XE_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "xlac/xlac.h"

#define CLI_MAX_ITEMS 256

typedef struct cli_input {
    const char *name, *path; /* --input NAME=FILE.npy */
} cli_input;

typedef struct cli_options {
    const char *graph;
    cli_input inputs[CLI_MAX_ITEMS];
    int n_inputs;
    const char *feeds[CLI_MAX_ITEMS]; /* --feed DIR */
    int n_feeds;
    const char *save_dir;   /* --save-outputs */
    bool print_outputs;
    int iterations, warmup; /* --iterations (0: no time line), --warmup */
    uint64_t seed;
    xe_place_mode place;
    bool log_placement;
    const char *profile;
} cli_options;

/* Parses argv; returns 0 to run, 1 when --help/--version printed, -1 on a usage error. */
int cli_parse(int argc, char **argv, cli_options *o);

/*
 * Fills inputs[] (one per graph input) for one run: from --input, then the
 * feed folder (NULL: none), then random values from the seed.
 */
xe_code cli_prepare_inputs(const cli_options *o, const xe_graph *g, const char *feed,
                           xe_tensor **inputs, xe_status *st);

/* --print-outputs text of one tensor. */
void cli_print_tensor(const char *name, const xe_tensor *t);

/* Creates a folder (and its parents); fine if it exists. */
xe_code cli_mkdirs(const char *path, xe_status *st);

#endif
