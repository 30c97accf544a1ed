/*
 * xlac-run's command line, parsed once into cli_options. --help and
 * --version win over everything else; any bad option is one line on
 * stderr ("xlac-run: MESSAGE (see xlac-run --help)") and exit code 2.
 * Values point into argv, so nothing here allocates.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: xlac-run GRAPH.xg|MODEL.onnx [options]\n"
    "\n"
    "Runs a graph in the .xg format, or an ONNX model, op by op on the CPU or a CUDA GPU\n"
    "(the file's kind is told by its content).\n"
    "\n"
    "options:\n"
    "  --input NAME=FILE.npy   feed input NAME from a .npy file (repeatable); its dtype and\n"
    "                          known dims must match the graph's declaration\n"
    "  --feed DIR              run once with DIR/NAME.npy (or NAME.pb, or input_K.pb for the\n"
    "                          K-th input: ONNX TensorProto files) for each input (repeatable:\n"
    "                          one session, one run per folder, e.g. several shapes of `?` dims)\n"
    "  --shape NAME=d0,d1,...  an ONNX model: input NAME's shape fixed at load (repeatable;\n"
    "                          NAME= alone: a scalar); its symbolic dims become known, so\n"
    "                          the model imports once and every feed must have that shape\n"
    "  --dim NAME=V            an ONNX model: every input dim named NAME (its dim_param) is V\n"
    "                          (repeatable); both as onnxruntime's free dimension overrides\n"
    "  --seed N                random values, from seed N, for the inputs nothing feeds:\n"
    "                          floats uniform in [-1,1), ints in [-10,10], bools 0/1;\n"
    "                          without --seed, an input that nothing feeds is an error\n"
    "  --save-outputs DIR      write DIR/NAME.npy per output (DIR/K/NAME.npy, K = 0,1,..,\n"
    "                          with several --feed)\n"
    "  --print-outputs         print every output as NAME: TYPE and its values\n"
    "  --iterations N          run N timed times; the last line is\n"
    "                          time median_ms=.. min_ms=.. iterations=N threads=T\n"
    "  --warmup N              untimed runs before the timed ones (default 0)\n"
    "  --device cpu|gpu|auto   where ops run (default auto: the GPU when there is one); gpu:1\n"
    "                          names one device of a kind (its instance GPU:1)\n"
    "  --inputs-on-device      with --device gpu: copy the inputs to the GPU once, before the\n"
    "                          runs, so that timed runs hold no upload (outputs still come\n"
    "                          back to the host on every run, unless --outputs-on-device)\n"
    "  --outputs-on-device     with --device gpu: outputs stay on the GPU while the runs last\n"
    "                          and come back once, after them (each run still waits for them)\n"
    "  --threads N             CPU threads of the per-op kernels, the compiled clusters'\n"
    "                          loops and oneDNN, one pool (default: the physical cores, or\n"
    "                          OMP_NUM_THREADS when it is set)\n"
    "  --verbose               notes a run does not need: with --device auto in a CUDA\n"
    "                          build, one line when no GPU is found\n"
    "  --compare               run op by op and clustered (needs LD_PRELOAD=libxlac.so\n"
    "                          XLAC_AUTO_JIT=2) on the same inputs; print max_abs/max_rel per\n"
    "                          output; exit 3 beyond tolerance (f32: |d| <= 1e-5 + 1e-4*|ref|)\n"
    "  --tolerance R           --compare: rtol = atol = R for float outputs\n"
    "  --log-device-placement[=every]\n"
    "                          print 'placement: NODE OP DEVICE [CLUSTER]' per executed op,\n"
    "                          on the first run (=every: on every run)\n"
    "  --trace FILE.json       write a timeline (Chrome trace-event JSON; open it in\n"
    "                          ui.perfetto.dev): runs, ops, cluster launches, compiles\n"
    "  --profile FILE.json     the same as --trace\n"
    "  --to-xg FILE.xg         write the loaded graph (an imported ONNX model) as .xg text;\n"
    "                          without --feed, --save-outputs or --print-outputs, nothing runs\n"
    "  --carry OUT=IN          after each run, output OUT is input IN of the next run\n"
    "                          (repeatable): --iterations N then runs N training steps\n"
    "  --feed-shard            under mpirun, rank r of N reads slice r of the leading dim\n"
    "                          of every array from a --feed folder (--input files stay whole)\n"
    "  --save-all-ranks        every rank saves its outputs as NAME.rankR.npy (default: rank\n"
    "                          0 saves NAME.npy, and only rank 0 prints)\n"
    "  --collective-timeout S  a collective that waits longer than S seconds ends the job\n"
    "                          with an error (default 120; 0: wait forever)\n"
    "  --help                  this text\n"
    "  --version               version and whether this build has CUDA\n"
    "\n"
    "exit codes:\n"
    "  0  success\n"
    "  1  runtime error (an op failed, no CUDA device for --device gpu, a write failed)\n"
    "  2  usage or graph error (bad option, unreadable or invalid graph, bad input file)\n"
    "  3  --compare: an output differs beyond tolerance\n"
    "\n"
    "With LD_PRELOAD=libxlac.so and XLAC_AUTO_JIT=1|2, xlac clusters and compiles the graph.\n";

static cli_parse_result bad(const char *fmt, const char *arg)
{
    fprintf(stderr, "xlac-run: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see xlac-run --help)\n");
    return CLI_USAGE;
}

static bool parse_count(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < 0 || v > 1000000)
        return false;
    *out = (int)v;
    return true;
}

/* --input NAME=FILE.npy */
static cli_parse_result add_input(const char *v, cli_options *o)
{
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1])
        return bad("--input wants NAME=FILE.npy, got '%s'", v);
    if (o->n_inputs == CLI_MAX_ITEMS)
        return bad("too many --input options%s", "");
    size_t len = (size_t)(eq - v);
    for (int i = 0; i < o->n_inputs; i++)
        if (o->inputs[i].name_len == len && !memcmp(o->inputs[i].name, v, len))
            return bad("--input %s: this input is given twice", v);
    o->inputs[o->n_inputs++] = (cli_input){v, len, eq + 1};
    return CLI_RUN;
}

static cli_parse_result set_device(const char *v, cli_options *o)
{
    if (!strcmp(v, "cpu"))
        o->place = XE_PLACE_CPU;
    else if (!strcmp(v, "gpu"))
        o->place = XE_PLACE_GPU;
    else if (!strcmp(v, "auto"))
        o->place = XE_PLACE_AUTO;
    else if (strchr(v, ':') && xe_device_by_word(v, strlen(v), &o->device)) /* gpu:1, debug:0 */
        o->place = xe_device_is_host(o->device) ? XE_PLACE_CPU : XE_PLACE_GPU;
    else
        return bad("--device wants cpu, gpu or auto, got '%s'", v);
    return CLI_RUN;
}

static cli_parse_result set_seed(const char *v, cli_options *o)
{
    char *end;
    errno = 0;
    o->seed = strtoull(v, &end, 10);
    if (errno || *end || end == v || v[0] == '-')
        return bad("bad seed '%s' (want a non-negative integer)", v);
    o->seed_given = true;
    return CLI_RUN;
}

/* --carry OUT=IN */
static cli_parse_result add_carry(const char *v, cli_options *o)
{
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1])
        return bad("--carry wants OUT=IN (an output and an input of the graph), got '%s'", v);
    if (o->n_carries == CLI_MAX_ITEMS)
        return bad("too many --carry options%s", "");
    o->carries[o->n_carries++] = (cli_carry){v, (size_t)(eq - v), eq + 1};
    return CLI_RUN;
}

/* --shape NAME=d0,d1,... (kind XE_ONNX_PIN_SHAPE; NAME= alone: a scalar) or --dim NAME=V: the
 * name is what comes before the last '=', so that a name may hold one. */
static cli_parse_result add_pin(const char *v, xe_onnx_pin_kind kind, cli_options *o)
{
    const char *eq = strrchr(v, '=');
    if (!eq || eq == v)
        return bad(kind == XE_ONNX_PIN_SHAPE ? "--shape wants NAME=d0,d1,... , got '%s'"
                                             : "--dim wants NAME=VALUE, got '%s'",
                   v);
    if (o->n_pins == CLI_MAX_ITEMS || (size_t)(eq - v) >= sizeof o->pin_names[0])
        return bad("too many pins, or a name too long, at '%s'", v);
    xe_onnx_pin *p = &o->pins[o->n_pins];
    *p = (xe_onnx_pin){.kind = kind, .name = o->pin_names[o->n_pins]};
    memcpy(o->pin_names[o->n_pins], v, (size_t)(eq - v));
    o->pin_names[o->n_pins][eq - v] = '\0';
    for (const char *s = eq + 1; *s || (kind == XE_ONNX_PIN_DIM && p->rank == 0);) {
        char *end;
        errno = 0;
        long long d = strtoll(s, &end, 10);
        if (errno || end == s || d < 0 || p->rank == XE_MAX_RANK || (*end && *end != ',') ||
            (kind == XE_ONNX_PIN_DIM && p->rank == 1))
            return bad(kind == XE_ONNX_PIN_SHAPE
                           ? "--shape wants dims of 0 or more, at most 8, comma-separated: '%s'"
                           : "--dim wants one value of 0 or more: '%s'",
                       v);
        p->dims[p->rank++] = d;
        s = *end ? end + 1 : end;
        if (*end && !*s)
            return bad("a dim is missing after the last comma in '%s'", v);
    }
    if (kind == XE_ONNX_PIN_DIM)
        p->rank = 0;
    o->n_pins++;
    return CLI_RUN;
}

static cli_parse_result set_timeout(const char *v, cli_options *o)
{
    char *end;
    errno = 0;
    double t = strtod(v, &end);
    if (errno || *end || end == v || !(t >= 0) || t > 1e6)
        return bad("--collective-timeout wants seconds >= 0, got '%s'", v);
    o->collective_timeout = t;
    return CLI_RUN;
}

/* An option that takes a value: a = the option, v = its value. */
static cli_parse_result parse_valued(const char *a, const char *v, cli_options *o)
{
    if (!strcmp(a, "--input"))
        return add_input(v, o);
    if (!strcmp(a, "--shape") || !strcmp(a, "--dim"))
        return add_pin(v, a[2] == 's' ? XE_ONNX_PIN_SHAPE : XE_ONNX_PIN_DIM, o);
    if (!strcmp(a, "--feed")) {
        if (o->n_feeds == CLI_MAX_ITEMS)
            return bad("too many --feed options%s", "");
        o->feeds[o->n_feeds++] = v;
    } else if (!strcmp(a, "--save-outputs")) {
        o->save_dir = v;
    } else if (!strcmp(a, "--profile") || !strcmp(a, "--trace")) {
        o->profile = v;
    } else if (!strcmp(a, "--to-xg")) {
        o->to_xg = v;
    } else if (!strcmp(a, "--iterations")) {
        if (!parse_count(v, &o->iterations) || o->iterations == 0)
            return bad("--iterations wants a count of at least 1, got '%s'", v);
    } else if (!strcmp(a, "--warmup")) {
        if (!parse_count(v, &o->warmup))
            return bad("--warmup wants a count, got '%s'", v);
    } else if (!strcmp(a, "--seed")) {
        return set_seed(v, o);
    } else if (!strcmp(a, "--threads")) {
        if (!parse_count(v, &o->threads) || o->threads == 0)
            return bad("--threads wants a count of at least 1, got '%s'", v);
    } else if (!strcmp(a, "--carry")) {
        return add_carry(v, o);
    } else if (!strcmp(a, "--collective-timeout")) {
        return set_timeout(v, o);
    } else if (!strcmp(a, "--tolerance")) {
        char *end;
        o->tolerance = strtod(v, &end);
        if (*end || end == v || !(o->tolerance > 0) || o->tolerance > 1e300)
            return bad("--tolerance wants a positive number, got '%s'", v);
    } else {
        return set_device(v, o);
    }
    return CLI_RUN;
}

static bool takes_value(const char *a)
{
    static const char *const valued[] = {"--input",
                                         "--shape",
                                         "--dim",
                                         "--feed",
                                         "--save-outputs",
                                         "--profile",
                                         "--warmup",
                                         "--iterations",
                                         "--seed",
                                         "--device",
                                         "--to-xg",
                                         "--carry",
                                         "--collective-timeout",
                                         "--tolerance",
                                         "--trace",
                                         "--threads"};
    for (size_t i = 0; i < sizeof valued / sizeof *valued; i++)
        if (!strcmp(a, valued[i]))
            return true;
    return false;
}

static cli_parse_result parse_one(int argc, char **argv, int *i, cli_options *o)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--print-outputs"))
        o->print_outputs = true;
    else if (!strcmp(a, "--verbose"))
        o->verbose = true;
    else if (!strcmp(a, "--log-device-placement") || !strcmp(a, "--log-device-placement=once"))
        o->log_placement = true;
    else if (!strcmp(a, "--feed-shard"))
        o->feed_shard = true;
    else if (!strcmp(a, "--save-all-ranks"))
        o->save_all_ranks = true;
    else if (!strcmp(a, "--compare"))
        o->compare = true;
    else if (!strcmp(a, "--inputs-on-device"))
        o->inputs_on_device = true;
    else if (!strcmp(a, "--outputs-on-device"))
        o->outputs_on_device = true;
    else if (!strcmp(a, "--log-device-placement=every"))
        o->log_placement = o->log_every = true;
    else if (takes_value(a)) {
        if (*i + 1 >= argc)
            return bad("%s needs a value", a);
        return parse_valued(a, argv[++*i], o);
    } else if (a[0] == '-' && a[1])
        return bad("unknown option '%s'", a);
    else if (!o->graph)
        o->graph = a;
    else
        return bad("more than one graph given ('%s')", a);
    return CLI_RUN;
}

/* --help and --version, looked for before anything else is checked. */
static bool info_option(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return true;
        }
        if (!strcmp(argv[i], "--version")) {
            printf("xlac-run %s (devices:", XLAC_VERSION);
            for (int d = 0; d < xe_device_count(); d++)
                if (xe_device_built((xe_device)d))
                    printf(" %s", xe_device_label((xe_device)d));
            printf(")\n");
            return true;
        }
    }
    return false;
}

cli_parse_result cli_parse(int argc, char **argv, cli_options *o)
{
    memset(o, 0, sizeof *o);
    o->place = XE_PLACE_AUTO;
    o->collective_timeout = 120;
    if (info_option(argc, argv))
        return CLI_DONE;
    for (int i = 1; i < argc; i++) {
        cli_parse_result r = parse_one(argc, argv, &i, o);
        if (r != CLI_RUN)
            return r;
    }
    if (!o->graph)
        return bad("no graph given%s", "");
    if ((o->inputs_on_device || o->outputs_on_device) && o->place != XE_PLACE_GPU)
        return bad("%s needs --device gpu",
                   o->inputs_on_device ? "--inputs-on-device" : "--outputs-on-device");
    return CLI_RUN;
}
