/*
 * The --summary=FILE.json report, written when the process ends (after
 * background compiles finished):
 *
 *   {"graphs":[ each clustered graph: xc_write_summary_json ],
 *    "clusters":[{"name":"cluster_0","ops":3,"launches":50,"cache_hits":49,
 *                 "compiled":1,"fallbacks":0,"compile_ms":120.5,
 *                 "mean_launch_us":4.2,"mean_launch_all_us":2414.0}],
 *    "runs":50,"run_ms":130.2,
 *    "share":{"clusters":0.02,"per_op_kernels":0.05,"compiling":0.93},
 *    "demoted":[{"cluster":"cluster_0","types":"f32[64,8]","generic":false,
 *                "compiled_ms":1.2,"per_op_ms":1.0}],
 *    "stats":{...the --stats counters...}}
 *
 * mean_launch_us is over the launches that found their program in memory
 * (the steady state); mean_launch_all_us over every launch. The shares
 * split the runs' wall time: compiled clusters, compiles inside launches,
 * and the rest (per-op kernels, fallbacks included, and the executor).
 * Compiles on a background thread are not part of any run: stats.compile_ms has them.
 * A run stopped by a signal adds "interrupted":true,"signal":N. Only a
 * process that ran a session writes the file, whole (xe_publish: temp file
 * and rename, the ".PID" rule for several processes of one run).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xlac/io.h"
#include "xlac/trace.h"
#include "xlac_plugin.h"

static void write_cluster(FILE *f, const xlac_cluster_report *r, bool first)
{
    char name[256];
    xe_trace_json_escape(r->name, name, sizeof name);
    double hits = r->hits ? r->hit_us / (double)r->hits : 0;
    double all = r->launches ? r->launch_us / (double)r->launches : 0;
    fprintf(
        f,
        "%s\n  {\"name\":\"%s\",\"ops\":%d,\"launches\":%llu,\"cache_hits\":%llu,\"compiled\":%llu,"
        "\"fallbacks\":%llu,\"compile_ms\":%.3f,\"mean_launch_us\":%.3f,\"mean_launch_all_us\":%."
        "3f}",
        first ? "" : ",", name, r->ops, r->launches, r->hits, r->compiled, r->fallbacks,
        r->compile_us / 1e3, hits, all);
}

static void write_share(FILE *f, const xlac_state *s)
{
    unsigned long long runs = 0;
    double run_us = xe_trace_run_totals(&runs), ran = 0, compiling = 0;
    for (int i = 0; i < s->n_reports; i++) {
        ran += s->reports[i].ran_us;
        compiling += s->reports[i].compile_us;
    }
    double per_op = run_us - ran - compiling;
    double d = run_us > 0 ? run_us : 1;
    fprintf(f, "\n ],\n \"runs\":%llu,\"run_ms\":%.3f,\n", runs, run_us / 1e3);
    fprintf(f, " \"share\":{\"clusters\":%.4f,\"per_op_kernels\":%.4f,\"compiling\":%.4f},\n",
            ran / d, (per_op > 0 ? per_op : 0) / d, compiling / d);
}

/* The programs demoted as slower than per op (codegen/cache/demote.c). */
static void write_demotions(FILE *f, xlac_state *s)
{
    xg_demotion d[16];
    int n = xlac_demotions(s, d, (int)(sizeof d / sizeof d[0]));
    fputs(" \"demoted\":[", f);
    for (int i = 0; i < n; i++) {
        char name[256], types[512];
        xe_trace_json_escape(d[i].cluster, name, sizeof name);
        xe_trace_json_escape(d[i].types, types, sizeof types);
        fprintf(f,
                "%s{\"cluster\":\"%s\",\"types\":\"%s\",\"generic\":%s,\"compiled_ms\":%.3f,"
                "\"per_op_ms\":%.3f}",
                i ? "," : "", name, types, d[i].generic ? "true" : "false", d[i].compiled_us / 1e3,
                d[i].per_op_us / 1e3);
    }
    fputs("],\n", f);
}

static void write_stats(FILE *f, xlac_state *s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (m) {
        xlac_print_stats(s, m);
        fclose(m);
    }
    /* "xlac: stats k=v k=v ...\nxlac: timing k=v\n" as one object of numbers */
    fputs(" \"stats\":{", f);
    int n = 0;
    for (char *p = text; p && *p;) {
        char *eq = strchr(p, '=');
        if (!eq)
            break;
        char *key = eq;
        while (key > p && key[-1] != ' ')
            key--;
        size_t vlen = strcspn(eq + 1, " \n");
        fprintf(f, "%s\"%.*s\":%.*s", n++ ? "," : "", (int)(eq - key), key, (int)vlen, eq + 1);
        p = eq + 1 + vlen;
    }
    fputs("}\n}\n", f);
    free(text);
}

typedef struct summary_job {
    xlac_state *s;
    int interrupted; /* the signal that cut the run short, 0: none */
} summary_job;

static xe_code write_summary(FILE *f, void *user, xe_status *st)
{
    summary_job *j = user;
    xlac_state *s = j->s;
    (void)st;
    pthread_mutex_lock(&s->report_lock);
    fputs("{\"graphs\":[", f);
    for (int i = 0; i < s->n_graphs; i++)
        fprintf(f, "%s\n  %s", i ? "," : "", s->graphs[i]);
    fputs("\n ],\n \"clusters\":[", f);
    for (int i = 0; i < s->n_reports; i++)
        write_cluster(f, &s->reports[i], i == 0);
    write_share(f, s);
    pthread_mutex_unlock(&s->report_lock);
    if (j->interrupted)
        fprintf(f, " \"interrupted\":true,\"signal\":%d,\n", j->interrupted);
    write_demotions(f, s);
    write_stats(f, s);
    return XE_OK;
}

xe_code xlac_report_write(xlac_state *s, int interrupted, xe_status *st)
{
    if (!s->flags.summary_path ||
        !atomic_load(&s->n_sessions)) /* a wrapper that ran nothing writes nothing */
        return XE_OK;
    char used[4200];
    summary_job j = {s, interrupted};
    xe_code c = xe_publish(s->flags.summary_path, write_summary, &j, s->family_start, used,
                           sizeof used, st);
    if (c != XE_OK)
        return xe_status_prefix(st, "--summary: ");
    if (strcmp(used, s->flags.summary_path) != 0)
        fprintf(stderr,
                "xlac: note: --summary %s was written by another process of this run; this one's "
                "is %s\n",
                s->flags.summary_path, used);
    return XE_OK;
}

void xlac_report_free(xlac_state *s)
{
    for (int i = 0; i < s->n_graphs; i++)
        free(s->graphs[i]);
    for (int i = 0; i < s->n_reports; i++)
        free(s->reports[i].name);
    free(s->graphs);
    free(s->reports);
    s->graphs = NULL;
    s->reports = NULL;
    s->n_graphs = s->n_reports = 0;
    s->cap_graphs = s->cap_reports = 0;
}
