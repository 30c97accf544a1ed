/*
 * Private to xlac-run: the parsed command line (options.c), input
 * preparation (inputs.c), output printing and saving (outputs.c) and run
 * timings (timing.c). main.c ties them together.
 */
#ifndef XE_CLI_H
#define XE_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xlac/xlac.h"

#define CLI_MAX_ITEMS 256

typedef struct cli_input {
    const char *name; /* --input NAME=FILE.npy: NAME, not NUL-terminated (points into argv) */
    size_t name_len;  /* length of NAME */
    const char *path; /* FILE.npy */
} cli_input;

/* --carry OUT=IN: output OUT of a run is input IN of the next (a training step). */
typedef struct cli_carry {
    const char *out; /* output name, not NUL-terminated (points into argv) */
    size_t out_len;
    const char *in; /* input name */
} cli_carry;

typedef struct cli_options {
    const char *graph;               /* GRAPH.xg */
    cli_input inputs[CLI_MAX_ITEMS]; /* --input */
    int n_inputs;
    const char *feeds[CLI_MAX_ITEMS]; /* --feed DIR, in order */
    int n_feeds;
    const char *save_dir; /* --save-outputs DIR; NULL: none */
    bool print_outputs;   /* --print-outputs */
    bool verbose;        /* --verbose: notes a run does not need (no GPU found for --device auto) */
    int iterations;      /* --iterations N; 0: one untimed run, no time line */
    int warmup;          /* --warmup N */
    uint64_t seed;       /* --seed N */
    bool seed_given;     /* --seed was given: inputs fed by nothing get random values */
    xe_place_mode place; /* --device */
    xe_device
        device; /* --device gpu:1 (a kind and an ordinal): that instance; XE_DEV_CPU: none named */
    bool inputs_on_device;  /* --inputs-on-device: inputs copied to the GPU once, before the runs */
    bool outputs_on_device; /* --outputs-on-device: outputs left on the GPU until the runs are done
                             */
    int threads;            /* --threads N; 0: not given (main.c picks the default) */
    bool log_placement;     /* --log-device-placement */
    bool log_every;         /* --log-device-placement=every: on every run, not the first only */
    const char *profile;    /* --trace (or --profile) FILE.json; NULL: none */
    const char *to_xg;      /* --to-xg FILE.xg: write the loaded graph; NULL: none */
    bool feed_shard;        /* --feed-shard: rank r reads slice r of each --feed array */
    bool save_all_ranks;    /* --save-all-ranks: every rank saves NAME.rankR.npy */
    double collective_timeout;        /* --collective-timeout SECONDS (0: none) */
    cli_carry carries[CLI_MAX_ITEMS]; /* --carry */
    int n_carries;
    bool compare;     /* --compare: op by op against clustered (compare.c) */
    double tolerance; /* --tolerance R: rtol = atol = R for floats; 0: per-dtype defaults */
    xe_onnx_pin pins[CLI_MAX_ITEMS];    /* --shape NAME=d0,d1,.. and --dim NAME=V, in order */
    char pin_names[CLI_MAX_ITEMS][512]; /* pins[k].name points here */
    int n_pins;
} cli_options;

/* What cli_parse decided. */
typedef enum cli_parse_result {
    CLI_RUN,   /* options parsed: run the graph */
    CLI_DONE,  /* --help or --version printed: exit 0 */
    CLI_USAGE, /* a usage error was printed: exit 2 */
} cli_parse_result;

cli_parse_result cli_parse(int argc, char **argv, cli_options *o);

/*
 * Graph inputs an ONNX import needed as constants (a Reshape's shape fed as
 * an input): their values come from --input or the first feed folder at load
 * time, and every later run must feed the same values.
 */
typedef struct cli_bound {
    int position[CLI_MAX_ITEMS];     /* graph input positions */
    xe_tensor *value[CLI_MAX_ITEMS]; /* the values the graph was built with */
    int n;
} cli_bound;

/* xe_onnx_bind_fn over a cli_bound (user: cli_bind_ctx). */
typedef struct cli_bind_ctx {
    const cli_options *o;
    cli_bound *bound;
} cli_bind_ctx;
xe_tensor *cli_bind_input(const char *name, int position, void *user);
/* A fed input that was bound at load time must hold the same value. */
xe_code cli_check_bound(const cli_bound *b, const xe_graph *g, xe_tensor *const *inputs,
                        xe_status *st);

/* Checks that every --input names a graph input and every --feed is a folder. */
xe_code cli_check_inputs(const cli_options *o, const xe_graph *g, xe_status *st);

/*
 * Fills inputs[] (one per graph input) for one run: from --input, then the
 * feed folder (NULL: none), then random values from the seed.
 */
xe_code cli_prepare_inputs(const cli_options *o, const xe_graph *g, const char *feed,
                           xe_tensor **inputs, xe_status *st);

/* --print-outputs: "NAME: f32[2,3]" then the values, numpy style. */
xe_code cli_print_outputs(const xe_graph *g, xe_tensor *const *outs, xe_status *st);
/* --save-outputs: DIR/NAME.npy, or DIR/K/NAME.npy with several feeds. */
xe_code cli_save_outputs(const cli_options *o, const xe_graph *g, xe_tensor *const *outs,
                         int feed_k, xe_status *st);
/* Creates a folder and its parents; fine if it exists. */
/* XE_OK while stdout has taken everything written to it. */
xe_code cli_check_stdout(xe_status *st);

/* Ranks (ranks.c): MPI under a launcher, else a world of one. */
int cli_rank(void);
int cli_world(void);
/* Whether MPI started this process as a rank (of a world of any size). */
bool cli_ranks_launched(void);
/* Starts MPI when an MPI launcher started this process (before parsing the graph). */
xe_code cli_ranks_start(const cli_options *o, xe_status *st);
/* One stderr line when g has collectives but the world is one rank without MPI. */
void cli_ranks_note(const xe_graph *g);
/* Microseconds spent in collectives so far (then zero when reset). */
double cli_ranks_busy_us(bool reset);
/* Tests only: XLAC_RUN_KILL_AT=RANK:STEP kills this rank before run STEP. */
void cli_ranks_test_kill(int step);
/* Ends MPI (finalize, or abort the job after an error); returns rc. */
int cli_ranks_finish(int rc);
/*
 * --compare: runs g (taken) op by op and with the registered passes, per
 * feed, printing the errors per output. Returns the exit status (0 agree,
 * 3 beyond tolerance), or -1 with *st set.
 */
int cli_compare(const cli_options *o, xe_graph *g, xe_status *st);

/* Wall-clock times of the timed runs, in milliseconds. */
typedef struct cli_timing {
    double *ms;
    int n, cap;
} cli_timing;

xe_code cli_timing_init(cli_timing *t, int cap, xe_status *st);
void cli_timing_add(cli_timing *t, double ms);
/* Appends all of src's times to dst. */
void cli_timing_merge(cli_timing *dst, const cli_timing *src);
/* "time [feed=DIR ]median_ms=%.3f min_ms=%.3f iterations=N"; nothing when empty. */
void cli_timing_report(cli_timing *t, const char *feed);
void cli_timing_free(cli_timing *t);

#endif
