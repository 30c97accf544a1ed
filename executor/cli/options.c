/*
 * xlac-run's command line: options are parsed once into cli_options; a bad
 * option is one line on stderr and exit code 2.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: xlac-run GRAPH.xg [options]\n"
    "\n"
    "Runs a graph in the .xg format op by op on the CPU or a CUDA GPU.\n"
    "\n"
    "options:\n"
    "  --input NAME=FILE.npy   feed input NAME from a .npy file (repeatable)\n"
    "  --feed DIR              run once with DIR/NAME.npy for each input (repeatable: one\n"
    "                          session, several runs, e.g. several shapes of `?` dims)\n"
    "  --seed N                seed of the random values of inputs not fed (default 0)\n"
    "  --save-outputs DIR      write DIR/NAME.npy per output (DIR/K/NAME.npy with several feeds)\n"
    "  --print-outputs         print every output\n"
    "  --iterations N          run N timed times; last line: time median_ms=.. min_ms=.. iterations=N\n"
    "  --warmup N              untimed runs before the timed ones (default 0)\n"
    "  --device cpu|gpu|auto   where ops run (default auto: GPU when present)\n"
    "  --log-device-placement  print 'placement: NODE OP DEVICE [CLUSTER]' per executed op\n"
    "  --profile FILE.json     write a Chrome trace (one event per op; open in Perfetto)\n"
    "  --help, --version\n"
    "\n"
    "exit codes: 0 ok, 1 runtime error, 2 usage or graph error\n"
    "With LD_PRELOAD=libxlac.so and XLAC_AUTO_JIT=1|2, xlac clusters and compiles the graph.\n";

static int bad(const char *fmt, const char *arg)
{
    fprintf(stderr, "xlac-run: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see xlac-run --help)\n");
    return -1;
}

static bool parse_count(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < 0 || v > 100000000)
        return false;
    *out = (int)v;
    return true;
}

/* One option with a value: returns the value or NULL (usage error printed). */
static const char *value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        bad("%s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

static int parse_one(int argc, char **argv, int *i, cli_options *o)
{
    const char *a = argv[*i], *v;
    if (!strcmp(a, "--print-outputs"))
        o->print_outputs = true;
    else if (!strcmp(a, "--log-device-placement"))
        o->log_placement = true;
    else if (!strcmp(a, "--input")) {
        if (!(v = value(argc, argv, i)))
            return -1;
        const char *eq = strchr(v, '=');
        if (!eq || eq == v || !eq[1])
            return bad("--input wants NAME=FILE.npy, got '%s'", v);
        if (o->n_inputs == CLI_MAX_ITEMS)
            return bad("too many --input options%s", "");
        char *name = strndup(v, (size_t)(eq - v));
        if (!name)
            return bad("out of memory%s", "");
        o->inputs[o->n_inputs++] = (cli_input){name, eq + 1};
    } else if (!strcmp(a, "--feed")) {
        if (!(v = value(argc, argv, i)))
            return -1;
        if (o->n_feeds == CLI_MAX_ITEMS)
            return bad("too many --feed options%s", "");
        o->feeds[o->n_feeds++] = v;
    } else if (!strcmp(a, "--save-outputs")) {
        if (!(o->save_dir = value(argc, argv, i)))
            return -1;
    } else if (!strcmp(a, "--profile")) {
        if (!(o->profile = value(argc, argv, i)))
            return -1;
    } else if (!strcmp(a, "--iterations") || !strcmp(a, "--warmup")) {
        if (!(v = value(argc, argv, i)))
            return -1;
        int *dst = !strcmp(a, "--warmup") ? &o->warmup : &o->iterations;
        if (!parse_count(v, dst) || (dst == &o->iterations && *dst == 0))
            return bad("bad count '%s'", v);
    } else if (!strcmp(a, "--seed")) {
        if (!(v = value(argc, argv, i)))
            return -1;
        char *end;
        errno = 0;
        o->seed = strtoull(v, &end, 10);
        if (errno || *end || end == v)
            return bad("bad seed '%s'", v);
    } else if (!strcmp(a, "--device")) {
        if (!(v = value(argc, argv, i)))
            return -1;
        if (!strcmp(v, "cpu"))
            o->place = XE_PLACE_CPU;
        else if (!strcmp(v, "gpu"))
            o->place = XE_PLACE_GPU;
        else if (!strcmp(v, "auto"))
            o->place = XE_PLACE_AUTO;
        else
            return bad("--device wants cpu, gpu or auto, got '%s'", v);
    } else if (a[0] == '-' && a[1]) {
        return bad("unknown option '%s'", a);
    } else if (!o->graph) {
        o->graph = a;
    } else {
        return bad("more than one graph given ('%s')", a);
    }
    return 0;
}

int cli_parse(int argc, char **argv, cli_options *o)
{
    memset(o, 0, sizeof *o);
    o->place = XE_PLACE_AUTO;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 1;
        }
        if (!strcmp(argv[i], "--version")) {
#ifdef XE_HAVE_CUDA
            printf("xlac-run %s (built with CUDA)\n", XLAC_VERSION);
#else
            printf("xlac-run %s (CPU-only build)\n", XLAC_VERSION);
#endif
            return 1;
        }
    }
    for (int i = 1; i < argc; i++)
        if (parse_one(argc, argv, &i, o) != 0)
            return -1;
    if (!o->graph)
        return bad("no graph given%s", "");
    return 0;
}
