/*
 * The plugin's configuration, read once from the environment (XLAC_AUTO_JIT,
 * XLAC_FLAGS, XLAC_DUMP_GRAPH_PREFIX, XLAC_DUMP_TO, XLAC_LOG, and the defaults that
 * come from CC, TMPDIR, XDG_CACHE_HOME and HOME) into one struct that is
 * passed down: xlac_env_read is the only getenv of the plugin and the code
 * generator, which receives what it needs in xlac_flags.xg.
 */
#ifndef XLAC_FLAGS_H
#define XLAC_FLAGS_H

#include <stdbool.h>
#include <stdio.h>

#include "xg.h"
#include "xlac/device.h"
#include "xlac/status.h"

typedef struct xlac_flags {
    int auto_jit;             /* XLAC_AUTO_JIT: 0 off, 1 conservative, 2 aggressive */
    int min_cluster_size;     /* --min_cluster_size (default 2) */
    int max_cluster_size;     /* --max_cluster_size (default 0: no limit) */
    bool devices[XE_DEV_MAX]; /* --devices=cpu,gpu,gpu:1 by instance (default every one) */
    char **ops_to_exclude;    /* --ops_to_exclude=a,b */
    int n_ops_to_exclude;
    long long clustering_fuel; /* --clustering_fuel (default -1: no limit) */
    bool clustering_debug;     /* --clustering_debug: dumps and summary */
    bool stats;                /* --stats: two lines at exit (stats, timing) */
    bool codegen;              /* --codegen=0: launch ops always run per op */
    bool dump_inputs;          /* --dump_inputs: a replay folder per cluster in XLAC_DUMP_TO */
    bool help;                 /* --help: print the flags and exit 0 */
    xg_log_level log_level;    /* XLAC_LOG=error|warning|info|debug (default warning) */
    char *trace_path;          /* --trace=FILE.json: the process's timeline; NULL: none */
    char *summary_path; /* --summary=FILE.json: clustering and per-cluster report at exit; NULL:
                           none */
    char *dump_graph_prefix; /* XLAC_DUMP_GRAPH_PREFIX, NULL if unset */
    xg_options xg;           /* the code generator's flags */
    char *cache_dir;         /* owns xg.cache_dir (--cache_dir or its default) */
    char *dump_to;           /* owns xg.dump_dir (XLAC_DUMP_TO) */
    char *cc;                /* owns xg.cc when $CC is set */
    char *tmp_dir;           /* owns xg.tmp_dir when $TMPDIR is set */
} xlac_flags;

/* The environment variables the plugin reads, each NULL when unset. */
typedef struct xlac_env {
    const char *auto_jit;          /* XLAC_AUTO_JIT */
    const char *flags;             /* XLAC_FLAGS */
    const char *dump_graph_prefix; /* XLAC_DUMP_GRAPH_PREFIX */
    const char *dump_to;           /* XLAC_DUMP_TO */
    const char *log;               /* XLAC_LOG: error, warning, info or debug */
    const char *cc;                /* CC: the C compiler (default "cc") */
    const char *tmpdir;            /* TMPDIR: temp files (default /tmp) */
    const char *xdg_cache_home;    /* XDG_CACHE_HOME: the disk cache is in its xlac folder */
    const char *home;              /* HOME: else the disk cache is ~/.cache/xlac */
    const char *run_start;   /* XLAC_RUN_START: when the run this process is a part of began */
    bool cache_noted;        /* XLAC_CACHE_NOTED: the note on HOME was given in this run already */
    const char *passwd_home; /* the user's home in the password database (HOME unset or relative) */
} xlac_env;

/* Reads the variables above from the process's environment. */
void xlac_env_read(xlac_env *e);

/* Every flag at its default (xg_options_default included), as with an empty environment. */
void xlac_flags_default(xlac_flags *f);

/*
 * Parses the environment's values into *f, resolving every default that
 * depends on it (an empty value counts as unset). A bad XLAC_AUTO_JIT, an
 * unknown flag or a malformed value is an error naming it (XE_ERR_USAGE);
 * *f is then freed.
 */
xe_code xlac_flags_parse(xlac_flags *f, const xlac_env *env, xe_status *st);
void xlac_flags_free(xlac_flags *f);
/* *f = a deep copy of *from (its strings copied; xg's pointers at them follow). */
xe_code xlac_flags_copy(xlac_flags *f, const xlac_flags *from, xe_status *st);
/*
 * A session's configuration: *f = the process's flags with the words of
 * text ("--auto_jit=2 --min_cluster_size=3", XLAC_FLAGS syntax) applied
 * over them. Only the rows a session may set (the level and the
 * clustering's options, --codegen) may differ from the process's; another
 * row set to another value, --help or a bad value is XE_ERR_USAGE naming it
 * (*f is then freed).
 */
xe_code xlac_flags_apply(xlac_flags *f, const xlac_flags *process, const char *text, xe_status *st);

/* Every flag with its default and meaning. */
void xlac_flags_help(FILE *out);

#endif
