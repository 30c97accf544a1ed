/*
 * xlac-run: parse a graph, make a session, run it once per feed (or once),
 * report outputs and timings. Exit codes: 0 ok, 1 runtime error, 2 usage
 * or graph error. Never ends by a signal: SIGPIPE is ignored and every
 * error is a message.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int fail(const xe_status *st)
{
    fprintf(stderr, "xlac-run: %s\n", st->msg);
    return xe_code_exit_status(st->code);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One line when the build has CUDA but this machine has no usable device. */
static void note_no_gpu(const cli_options *o)
{
    if (o->place != XE_PLACE_AUTO || xe_gpu_available())
        return;
    const char *why = xe_gpu_unavailable_reason();
    if (strstr(why, "built without CUDA"))
        return;
    fprintf(stderr, "xlac-run: no CUDA device (%s): running on CPU\n", why);
}

static xe_code save_outputs(const cli_options *o, const xe_graph *g, xe_tensor **outs, int feed_k,
                            xe_status *st)
{
    char dir[4096];
    if (o->n_feeds > 1)
        snprintf(dir, sizeof dir, "%s/%d", o->save_dir, feed_k);
    else
        snprintf(dir, sizeof dir, "%s", o->save_dir);
    if (cli_mkdirs(dir, st) != XE_OK)
        return st->code;
    for (int i = 0; i < g->n_outputs; i++) {
        char path[4352];
        snprintf(path, sizeof path, "%s/%s.npy", dir, g->nodes[g->outputs[i]]->name);
        if (xe_npy_write(path, outs[i], st) != XE_OK)
            return st->code;
    }
    return XE_OK;
}

typedef struct timings {
    double *ms;
    int n;
} timings;

static void report_time(const char *feed, timings *t)
{
    if (t->n == 0)
        return;
    qsort(t->ms, (size_t)t->n, sizeof *t->ms, cmp_double);
    if (feed)
        printf("time feed=%s median_ms=%.3f min_ms=%.3f iterations=%d\n", feed, t->ms[t->n / 2],
               t->ms[0], t->n);
    else
        printf("time median_ms=%.3f min_ms=%.3f iterations=%d\n", t->ms[t->n / 2], t->ms[0], t->n);
}

/* Warm-up and timed runs for one feed; outputs of the last run are kept in outs. */
static xe_code run_feed(const cli_options *o, xe_session *s, xe_tensor **inputs, xe_tensor **outs,
                        timings *t, xe_status *st)
{
    const xe_graph *g = xe_session_graph(s);
    int total = o->warmup + (o->iterations ? o->iterations : 1);
    for (int r = 0; r < total; r++) {
        for (int i = 0; i < g->n_outputs; i++) {
            xe_tensor_release(outs[i]);
            outs[i] = NULL;
        }
        double t0 = xe_now_us();
        if (xe_session_run(s, inputs, outs, st) != XE_OK)
            return st->code;
        if (r >= o->warmup && o->iterations)
            t->ms[t->n++] = (xe_now_us() - t0) / 1e3;
    }
    return XE_OK;
}

static int run_all(const cli_options *o, xe_session *s, xe_status *st)
{
    const xe_graph *g = xe_session_graph(s);
    int n_runs = o->n_feeds ? o->n_feeds : 1;
    xe_tensor **inputs = calloc((size_t)g->n_inputs + 1, sizeof *inputs);
    xe_tensor **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    timings all = {calloc((size_t)n_runs * (size_t)o->iterations + 1, sizeof(double)), 0};
    timings one = {calloc((size_t)o->iterations + 1, sizeof(double)), 0};
    xe_code c = (!inputs || !outs || !all.ms || !one.ms) ? xe_fail(st, XE_ERR_NOMEM, "out of memory") : XE_OK;
    for (int k = 0; k < n_runs && c == XE_OK; k++) {
        const char *feed = o->n_feeds ? o->feeds[k] : NULL;
        if ((c = cli_prepare_inputs(o, g, feed, inputs, st)) != XE_OK)
            break;
        one.n = 0;
        c = run_feed(o, s, inputs, outs, &one, st);
        for (int i = 0; i < g->n_inputs; i++)
            xe_tensor_release(inputs[i]);
        if (c == XE_OK && o->print_outputs)
            for (int i = 0; i < g->n_outputs; i++)
                cli_print_tensor(g->nodes[g->outputs[i]]->name, outs[i]);
        if (c == XE_OK && o->save_dir)
            c = save_outputs(o, g, outs, k, st);
        memcpy(all.ms + all.n, one.ms, (size_t)one.n * sizeof *one.ms);
        all.n += one.n;
        if (c == XE_OK && n_runs > 1)
            report_time(feed, &one);
    }
    if (c == XE_OK)
        report_time(NULL, &all);
    for (int i = 0; outs && i < g->n_outputs; i++)
        xe_tensor_release(outs[i]);
    free(inputs);
    free(outs);
    free(all.ms);
    free(one.ms);
    if (fflush(stdout) != 0 && c == XE_OK)
        c = xe_fail(st, XE_ERR_IO, "writing to stdout failed");
    return c == XE_OK ? 0 : fail(st);
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    cli_options o;
    int r = cli_parse(argc, argv, &o);
    if (r != 0)
        return r > 0 ? 0 : 2;
    xe_status st;
    xe_status_clear(&st);
    xe_graph *g = xe_parse_file(o.graph, &st);
    if (!g && st.code == XE_ERR_IO)
        st.code = XE_ERR_USAGE; /* a graph that cannot be read is a usage error: exit 2 */
    if (!g)
        return fail(&st);
    note_no_gpu(&o);
    xe_session_options so = {.place = o.place, .log_placement = o.log_placement, .profile_path = o.profile};
    xe_session *s = xe_session_new(g, &so, &st);
    if (!s)
        return fail(&st);
    int rc = run_all(&o, s, &st);
    xe_session_destroy(s);
    for (int i = 0; i < o.n_inputs; i++)
        free((char *)o.inputs[i].name);
    return rc;
}
