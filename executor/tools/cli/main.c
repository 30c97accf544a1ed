/*
 * xlac-run: parse a graph, make one session, run it once per --feed folder
 * (or once), then print, save and time the outputs. Exit codes: 0 ok,
 * 1 runtime error (a trace that could not be written included), 2 usage
 * or graph error (xe_code_exit_status), 128 + N when signal N (INT, TERM,
 * HUP) stopped it cleanly (xlac/interrupt.h). Never ends by a signal:
 * SIGPIPE is ignored, every write is checked and every error is one
 * "xlac-run: MESSAGE" line on stderr.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* Everything one invocation holds while it runs. */
typedef struct run_state {
    const cli_options *o;
    xe_session *s;
    const xe_graph *g;      /* the session's graph */
    xe_tensor **inputs;     /* one per graph input, for the current feed */
    xe_tensor **outs;       /* one per graph output, from the last run */
    cli_timing all;         /* every timed run, all feeds */
    cli_timing one;         /* the current feed's timed runs */
    const cli_bound *bound; /* inputs fixed at load time */
    int carry_out[CLI_MAX_ITEMS], carry_in[CLI_MAX_ITEMS]; /* --carry as output, input positions */
    double timed_ms;                                       /* sum of the timed runs, all feeds */
    double coll_us; /* time in collectives during the timed runs */
} run_state;

static int fail(const xe_status *st)
{
    if (cli_world() > 1)
        fprintf(stderr, "xlac-run: rank %d: %s\n", cli_rank(), st->msg);
    else
        fprintf(stderr, "xlac-run: %s\n", st->msg);
    return xe_code_exit_status(st->code);
}

static void release_all(xe_tensor **ts, int n)
{
    for (int i = 0; ts && i < n; i++) {
        xe_tensor_release(ts[i]);
        ts[i] = NULL;
    }
}

/*
 * Could any op of g (bodies included) have run on an accelerator, had there been one? One that
 * computes (has a CPU kernel) and is not CPU-only: a missing device's own kernels are not known
 * (its library is not loaded where its driver is missing).
 */
static bool wants_device(const xe_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_node *n = g->nodes[i];
        const xe_op_def *d = xe_op_get(n->op);
        if (n->body ? wants_device(n->body)
                    : n->op != XE_OP_INPUT && n->op != XE_OP_GET && d &&
                          xe_op_kernel(d, XE_DEV_CPU) && !(d->flags & XE_OPF_CPU_ONLY))
            return true;
    }
    return false;
}

/* The device --inputs-on-device copies to: the one --device named (gpu:1), else the accelerator
   placement chose (--device gpu). */
static xe_device cli_device(const cli_options *o)
{
    return xe_device_is_host(o->device) ? xe_device_auto() : o->device;
}

/*
 * With --verbose, one stderr line when --device auto finds no accelerator
 * for ops that wanted one (never in a CPU-only build). Without it, a CPU
 * run on a machine with no GPU says nothing: nobody asked for one
 * (--device gpu with none is an error).
 */
static void note_no_gpu(const cli_options *o, const xe_graph *g)
{
    if (!o->verbose || o->place != XE_PLACE_AUTO)
        return;
    for (int d = 0; d < xe_device_count(); d++)
        if (xe_device_auto_place((xe_device)d) && !xe_device_available((xe_device)d) &&
            wants_device(g))
            fprintf(stderr, "xlac-run: no %s device (%s): running on CPU\n",
                    xe_device_label((xe_device)d), xe_device_unavailable_reason((xe_device)d));
}

/*
 * XLAC_AUTO_JIT=1|2 or XLAC_FLAGS set while libxlac.so is not in the
 * process (no xlac_launch op registered) would do nothing: say so, once.
 */
static void note_no_plugin(void)
{
    const char *jit = getenv("XLAC_AUTO_JIT"), *flags = getenv("XLAC_FLAGS");
    bool asked = (jit && *jit && strcmp(jit, "0") != 0) || (flags && *flags);
    if (!asked || xe_op_find("xlac_launch", strlen("xlac_launch")) >= 0)
        return;
    fprintf(stderr,
            "xlac-run: warning: %s%s%s is set but libxlac.so is not loaded: nothing is clustered "
            "(run with LD_PRELOAD=/path/to/libxlac.so)\n",
            jit && *jit && strcmp(jit, "0") != 0 ? "XLAC_AUTO_JIT" : "",
            jit && *jit && strcmp(jit, "0") != 0 && flags && *flags ? " and " : "",
            flags && *flags ? "XLAC_FLAGS" : "");
}

/*
 * The session writes the trace at the end (a temp file beside it, renamed
 * into place): find out now if it cannot, without touching a previous
 * trace at that name (truncating it here lost it when the run failed).
 */
static xe_code check_profile_path(const char *path, xe_status *st)
{
    if (!path)
        return XE_OK;
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + (slash == path) : 1,
             slash ? path : ".");
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return xe_fail(st, XE_ERR_USAGE, "--trace %s: cannot write: a folder of that name exists",
                       path);
    if (access(dir, W_OK | X_OK) != 0)
        return xe_fail(st, XE_ERR_USAGE, "--trace %s: cannot write in %s: %s", path, dir,
                       strerror(errno));
    return XE_OK;
}

/* Position of the output or input named name[0..len) of g; -1 if none. */
static int find_io(const xe_graph *g, const char *name, size_t len, bool output)
{
    int n = output ? g->n_outputs : g->n_inputs;
    for (int i = 0; i < n; i++) {
        const char *nm = g->nodes[output ? g->outputs[i] : g->inputs[i]]->name;
        if (strlen(nm) == len && !memcmp(nm, name, len))
            return i;
    }
    return -1;
}

/* --carry OUT=IN: both exist and have the same type. */
static xe_code resolve_carries(run_state *r, xe_status *st)
{
    for (int k = 0; k < r->o->n_carries; k++) {
        const cli_carry *c = &r->o->carries[k];
        int o = find_io(r->g, c->out, c->out_len, true),
            i = find_io(r->g, c->in, strlen(c->in), false);
        if (o < 0 || i < 0)
            return xe_fail(st, XE_ERR_USAGE, "--carry %s: the graph has no %s named %.*s", c->out,
                           o < 0 ? "output" : "input", o < 0 ? (int)c->out_len : (int)strlen(c->in),
                           o < 0 ? c->out : c->in);
        const xe_type *to = &r->g->nodes[r->g->outputs[o]]->type,
                      *ti = &r->g->nodes[r->g->inputs[i]]->type;
        if (to->dtype != ti->dtype || to->shape.rank != ti->shape.rank)
            return xe_fail(st, XE_ERR_USAGE, "--carry %s: the output and the input differ in type",
                           c->out);
        r->carry_out[k] = o;
        r->carry_in[k] = i;
    }
    return XE_OK;
}

/* After a run: each carried output becomes its input for the next run. */
static void carry(run_state *r)
{
    for (int k = 0; k < r->o->n_carries; k++) {
        xe_tensor_release(r->inputs[r->carry_in[k]]);
        r->inputs[r->carry_in[k]] = xe_tensor_retain(r->outs[r->carry_out[k]]);
    }
}

/* --warmup untimed runs, then --iterations timed ones (or one untimed run). */
static xe_code run_timed(run_state *r, xe_status *st)
{
    int total = r->o->warmup + (r->o->iterations ? r->o->iterations : 1);
    for (int k = 0; k < total; k++) {
        cli_ranks_test_kill(k);
        if (k > 0)
            carry(r);
        release_all(r->outs, r->g->n_outputs);
        double t0 = xe_now_us(), c0 = cli_ranks_busy_us(false);
        if (xe_session_run(r->s, r->inputs, r->outs, st) != XE_OK)
            return st->code;
        if (k >= r->o->warmup && r->o->iterations) {
            cli_timing_add(&r->one, (xe_now_us() - t0) / 1e3);
            r->timed_ms += (xe_now_us() - t0) / 1e3;
            r->coll_us += cli_ranks_busy_us(false) - c0;
        }
    }
    return XE_OK;
}

/* One feed (k-th folder, or the only run): inputs, runs, outputs. */
static xe_code run_feed(run_state *r, int k, xe_status *st)
{
    const cli_options *o = r->o;
    const char *feed = o->n_feeds ? o->feeds[k] : NULL;
    if (cli_prepare_inputs(o, r->g, feed, r->inputs, st) != XE_OK)
        return st->code;
    if (cli_check_bound(r->bound, r->g, r->inputs, st) != XE_OK ||
        (o->inputs_on_device &&
         xe_tensors_to_device(r->inputs, r->g->n_inputs, cli_device(o), st) != XE_OK)) {
        release_all(r->inputs, r->g->n_inputs);
        return st->code;
    }
    r->one.n = 0;
    xe_code c = run_timed(r, st);
    release_all(r->inputs, r->g->n_inputs);
    if (c == XE_OK && o->outputs_on_device) /* printed and saved from the host */
        c = xe_tensors_to_device(r->outs, r->g->n_outputs, XE_DEV_CPU, st);
    bool first = cli_rank() == 0;
    if (c == XE_OK && o->print_outputs && first)
        c = cli_print_outputs(r->g, r->outs, st);
    if (c == XE_OK && o->save_dir && (first || o->save_all_ranks))
        c = cli_save_outputs(o, r->g, r->outs, k, st);
    cli_timing_merge(&r->all, &r->one);
    if (c == XE_OK && o->n_feeds > 1 && first)
        cli_timing_report(&r->one, feed);
    return c;
}

static xe_code run_all(run_state *r, xe_status *st)
{
    const cli_options *o = r->o;
    int n_runs = o->n_feeds ? o->n_feeds : 1;
    r->inputs = calloc((size_t)r->g->n_inputs + 1, sizeof *r->inputs);
    r->outs = calloc((size_t)r->g->n_outputs + 1, sizeof *r->outs);
    xe_code c = r->inputs && r->outs ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (c == XE_OK && (c = cli_timing_init(&r->all, n_runs * o->iterations, st)) == XE_OK)
        c = cli_timing_init(&r->one, o->iterations, st);
    if (c == XE_OK)
        c = resolve_carries(r, st);
    for (int k = 0; k < n_runs && c == XE_OK; k++)
        c = run_feed(r, k, st);
    if (c == XE_OK && cli_ranks_launched() && o->iterations && cli_rank() == 0)
        printf("time collectives_ms=%.3f share=%.3f ranks=%d\n", r->coll_us / 1e3 / r->all.n,
               r->timed_ms > 0 ? r->coll_us / 1e3 / r->timed_ms : 0.0, cli_world());
    if (c == XE_OK && cli_rank() == 0) {
        cli_timing_report(&r->all, NULL);
        c = cli_check_stdout(st);
    }
    release_all(r->outs, r->g->n_outputs);
    free(r->inputs);
    free(r->outs);
    cli_timing_free(&r->all);
    cli_timing_free(&r->one);
    return c;
}

/*
 * A failed load: the status, or, when the ONNX import listed its errors (report), the status's
 * first line and then the whole list. The status holds XE_STATUS_MSG_MAX bytes: a long list was
 * cut there mid-word, and whether the whole list followed depended on the length of the path.
 */
static int fail_load(char *report, const xe_status *st)
{
    if (!report || !*report) {
        free(report);
        return fail(st);
    }
    const char *nl = strchr(st->msg, '\n');
    int head = nl ? (int)(nl - st->msg) : (int)strlen(st->msg);
    if (cli_world() > 1)
        fprintf(stderr, "xlac-run: rank %d: %.*s\n%s\n", cli_rank(), head, st->msg, report);
    else
        fprintf(stderr, "xlac-run: %.*s\n%s\n", head, st->msg, report);
    free(report);
    return xe_code_exit_status(st->code);
}

/* --to-xg and nothing that runs: the graph is written as it is, `?` dims and all, with no feeds. */
static bool only_writes_xg(const cli_options *o)
{
    return o->to_xg && !o->n_feeds && !o->save_dir && !o->print_outputs && !o->iterations;
}

static xe_graph *load_graph(const cli_options *o, cli_bound *bound, xe_status *st)
{
    char *report = NULL;
    cli_bind_ctx bc = {.o = o, .bound = bound};
    xe_onnx_options oo = {.bind = cli_bind_input,
                          .user = &bc,
                          .report = &report,
                          .pins = o->pins,
                          .n_pins = o->n_pins};
    xe_graph *g = xe_load_graph(o->graph, &oo, st);
    if (!g && st->code == XE_ERR_IO)
        st->code = XE_ERR_USAGE; /* a graph that cannot be read is a usage error: exit 2 */
    if (!g) {
        int rc = fail_load(report, st);
        st->code =
            rc == 2 ? XE_ERR_USAGE : XE_ERR_RUNTIME; /* printed: only the exit status is left */
        return NULL;
    }
    free(report);
    if ((!only_writes_xg(o) && cli_check_inputs(o, g, st) != XE_OK) ||
        check_profile_path(o->profile, st) != XE_OK) {
        fail(st);
        xe_graph_destroy(g);
        return NULL;
    }
    return g;
}

/*
 * How OpenMP threads wait between parallel regions. A run is many short
 * regions (each product, loop and panel), so threads that sleep at once
 * pay a futex wake-up per region: BERT at batch 1 took 7.4-8.2 ms with
 * OMP_WAIT_POLICY=passive and 5.2-5.3 ms spinning 10,000 times first
 * (2 cores, idle). Spinning long collapses when anything else wants the
 * cores: transformer_block with two busy processes beside it took 39-40
 * ms passive, 40-54 ms with 10,000 spins and 84 ms with 30,000
 * (bench/NOTES.md). So unless the user chose (OMP_WAIT_POLICY or
 * GOMP_SPINCOUNT set), GOMP_SPINCOUNT=10000: a short spin, then sleep;
 * with it OPENBLAS_NUM_THREADS=1 unless set: xlac calls OpenBLAS
 * single-threaded from its own team, and an idle OpenBLAS pool thread
 * only competes with it at start (a 20-run attention_small was 15x slower
 * in a third of the processes with that thread, 1 in 10 without).
 * libgomp and OpenBLAS read these when they load, before main, so the CLI
 * sets them and runs itself again, once. If the exec fails, the run goes
 * on as is.
 */
static void choose_thread_waits(char **argv)
{
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") ||
        setenv("GOMP_SPINCOUNT", "10000", 1) != 0)
        return;
    if (!getenv("OPENBLAS_NUM_THREADS"))
        setenv("OPENBLAS_NUM_THREADS", "1", 1);
    execv("/proc/self/exe", argv);
}

static void free_bound(cli_bound *b)
{
    for (int i = 0; i < b->n; i++)
        xe_tensor_release(b->value[i]);
}

/* the size a symbolic dim takes to build a graph that serves every size */
#define CLI_BUILD_DIM 4

/*
 * The graph --to-xg writes for a model built per input size: built once
 * and rewritten to serve every size (its dims stay symbolic); NULL with
 * *st saying why when its sizes cannot leave the graph.
 */
static xe_graph *general_graph(const xe_graph *g, xe_status *st)
{
    xe_shape *s = calloc((size_t)g->n_inputs + 1, sizeof *s);
    if (!s) {
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    for (int k = 0; k < g->n_inputs; k++) {
        s[k] = g->nodes[g->inputs[k]]->type.shape;
        for (int d = 0; d < s[k].rank; d++)
            s[k].dims[d] = s[k].dims[d] < 0 ? CLI_BUILD_DIM : s[k].dims[d];
    }
    int extras;
    xe_graph *out = xe_graph_general(g, s, &extras, st);
    free(s);
    if (out && extras != 0) {
        xe_graph_destroy(out);
        xe_fail(
            st, XE_ERR_UNSUPPORTED,
            "--to-xg: %s computes %s from its symbolic input dims, which a .xg graph cannot "
            "hold; the model runs as it is (xlac-run MODEL --feed ...), and xlac-compile --shape "
            "pins its sizes",
            g->file, extras > 0 ? "constants (masks, positions)" : "shapes");
        return NULL;
    }
    return out;
}

/* --to-xg: writes the graph; true when nothing else was asked for (nothing runs). */
static bool write_xg(const cli_options *o, const xe_graph *g, int *rc)
{
    xe_status st;
    xe_status_clear(&st);
    if (!o->to_xg)
        return false;
    xe_graph *general = g->maker ? general_graph(g, &st) : NULL;
    if ((g->maker && !general) || xe_write_file(general ? general : g, o->to_xg, &st) != XE_OK) {
        xe_graph_destroy(general);
        *rc = fail(&st);
        return true;
    }
    xe_graph_destroy(general);
    *rc = 0;
    return only_writes_xg(o);
}

/* Everything after the command line and MPI: load, run, report. */
static int run_main(const cli_options *o)
{
    xe_status st;
    xe_status_clear(&st);
    cli_bound bound = {.n = 0};
    xe_graph *g = load_graph(o, &bound, &st);
    int rc = 0;
    if (!g) {
        free_bound(&bound);
        return xe_code_exit_status(st.code);
    }
    if (write_xg(o, g, &rc) || rc) {
        xe_graph_destroy(g);
        free_bound(&bound);
        return rc;
    }
    if (cli_rank() == 0)
        note_no_gpu(o, g);
    cli_ranks_note(g);
    note_no_plugin();
    if (o->compare) {
        free_bound(&bound);
        rc = cli_compare(o, g, &st);
        return rc >= 0 ? rc : fail(&st);
    }
    xe_session_options so = {.place = o->place,
                             .device = o->device,
                             .log_placement = o->log_placement,
                             .log_every = o->log_every,
                             .profile_path = o->profile,
                             .threads = o->threads,
                             .outputs_on_device = o->outputs_on_device};
    run_state r = {.o = o, .s = xe_session_new(g, &so, &st), .bound = &bound};
    if (!r.s) {
        free_bound(&bound);
        return fail(&st);
    }
    r.g = xe_session_graph(r.s);
    xe_code c = run_all(&r, &st);
    xe_session_destroy(
        r.s); /* writes the trace, unless the plugin records it too (then at its exit) */
    free_bound(&bound);
    if (c == XE_OK &&
        xe_trace_failed(&st)) /* the run went well, its trace is lost: say so in the status */
        c = XE_ERR_IO;
    return c == XE_OK ? 0 : fail(&st);
}

int main(int argc, char **argv)
{
    choose_thread_waits(argv);
    signal(SIGPIPE, SIG_IGN);
    static cli_options o;
    xe_status st;
    xe_status_clear(&st);
    cli_parse_result pr = cli_parse(argc, argv, &o);
    if (pr == CLI_DONE)
        return cli_check_stdout(&st) == XE_OK ? 0 : fail(&st);
    if (pr == CLI_USAGE)
        return 2;
    if (xe_interrupt_install(&st) !=
        XE_OK) /* Ctrl-C: children reaped, temp files gone, trace kept */
        return fail(&st);
    if (!o.threads && !getenv("OMP_NUM_THREADS"))
        o.threads = xe_physical_cores(); /* one pool: kernels, generated loops, oneDNN */
    xe_set_threads(o.threads);
    if (cli_ranks_start(&o, &st) != XE_OK)
        return fail(&st);
    int rc = run_main(&o);
    xe_interrupt_hold(); /* a signal being handled: its watcher ends the process, with 128 + N */
    return cli_ranks_finish(rc);
}
