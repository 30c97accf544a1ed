/*
 * The structure-aware graph fuzzer (see graphfuzz.h): cases from the
 * random graph generator, mutated line by line on their text, then run
 * through xlac-run twice (op by op, and clustered with the plugin) in
 * child processes, so that a crash is a result, not the end of the fuzzer.
 */
#include "graphfuzz.h"

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "support/randgraph.h"
#include "xlac/op.h"
#include "xlac/xlac.h"

#define MAX_LINES 512

/* ---- cases -------------------------------------------------------------------- */

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

typedef struct lines {
    char *v[MAX_LINES];
    int n;
} lines;

static void lines_split(lines *l, const char *text)
{
    l->n = 0;
    for (const char *p = text; *p && l->n < MAX_LINES - 8;) {
        size_t len = strcspn(p, "\n");
        l->v[l->n++] = strndup(p, len);
        p += len + (p[len] == '\n');
    }
}

static char *lines_join(lines *l)
{
    size_t len = 1;
    for (int i = 0; i < l->n; i++)
        len += strlen(l->v[i]) + 1;
    char *t = malloc(len), *q = t;
    for (int i = 0; t && i < l->n; i++)
        q += sprintf(q, "%s\n", l->v[i]);
    for (int i = 0; i < l->n; i++)
        free(l->v[i]);
    return t;
}

static void lines_set(lines *l, int i, char *s)
{
    free(l->v[i]);
    l->v[i] = s;
}

/* A line picked at random among those starting with `prefix` (or statements when NULL); -1 if none.
 */
static int pick_line(const lines *l, const char *prefix, uint64_t *s)
{
    int idx[MAX_LINES], n = 0;
    for (int i = 1; i < l->n; i++) {
        bool stmt =
            strstr(l->v[i], " = ") && strncmp(l->v[i], "input", 5) && strncmp(l->v[i], "output", 6);
        if (prefix ? !strncmp(l->v[i], prefix, strlen(prefix)) : stmt)
            idx[n++] = i;
    }
    return n ? idx[next(s) % (uint64_t)n] : -1;
}

/* An op of the table of the same class as op (unary for unary, binary for binary), at random. */
static int same_kind_op(int op, uint64_t *s)
{
    int pool[256], n = 0;
    for (int k = 0; k < xe_op_count() && n < 256; k++)
        if (xe_op_get(k)->cls == xe_op_get(op)->cls)
            pool[n++] = k;
    return pool[next(s) % (uint64_t)n];
}

/* 1. an op swapped for another of its class */
static void mutate_op(lines *l, uint64_t *s)
{
    int i = pick_line(l, NULL, s);
    if (i < 0)
        return;
    char *eq = strstr(l->v[i], " = "), *par = strchr(l->v[i], '(');
    if (!eq || !par || par < eq)
        return;
    int op = xe_op_find(eq + 3, (size_t)(par - eq - 3));
    xe_op_class c = op >= 0 ? xe_op_get(op)->cls : XE_CLASS_SOURCE;
    if (c != XE_CLASS_UNARY && c != XE_CLASS_BINARY && c != XE_CLASS_REDUCE &&
        c != XE_CLASS_COMPARE)
        return;
    char *t = malloc(strlen(l->v[i]) + 64);
    sprintf(t, "%.*s = %s%s", (int)(eq - l->v[i]), l->v[i], xe_op_name(same_kind_op(op, s)), par);
    lines_set(l, i, t);
}

/* 2. an input's dim set to 1 (broadcasting) or, rarely, 0 (empty tensors) */
static void mutate_dim(lines *l, uint64_t *s)
{
    int i = pick_line(l, "input", s);
    char *b = i >= 0 ? strchr(l->v[i], '[') : NULL;
    if (!b || b[1] == ']')
        return;
    char *t = strdup(l->v[i]), *d = t + (b - l->v[i]) + 1;
    int dims = 1;
    for (char *q = d; *q && *q != ']'; q++)
        dims += *q == ',';
    for (int k = (int)(next(s) % (uint64_t)dims); k > 0; k--)
        d = strchr(d, ',') + 1;
    size_t len = strcspn(d, ",]");
    char *out = malloc(strlen(t) + 4);
    sprintf(out, "%.*s%s%s", (int)(d - t), t, next(s) % 5 ? "1" : "0", d + len);
    free(t);
    lines_set(l, i, out);
}

/* 3. a statement copied under a new name, or negated, as a new output */
static void mutate_add(lines *l, uint64_t *s, int k)
{
    int i = pick_line(l, NULL, s);
    if (i < 0)
        return;
    char *eq = strstr(l->v[i], " = ");
    char *t = malloc(strlen(l->v[i]) + 64), *o = malloc(32);
    if (next(s) % 2)
        sprintf(t, "fz%d%s", k, eq);
    else
        sprintf(t, "fz%d = neg(%.*s)", k, (int)(eq - l->v[i]), l->v[i]);
    sprintf(o, "output fz%d", k);
    memmove(&l->v[i + 2], &l->v[i + 1], sizeof(char *) * (size_t)(l->n - i - 1));
    l->v[i + 1] = t;
    l->n++;
    l->v[l->n++] = o;
}

/* 4. an axis, a keepdims or an output changed */
static void mutate_attr(lines *l, uint64_t *s)
{
    int i = pick_line(l, NULL, s);
    char *a = i >= 0 ? strstr(l->v[i], "axes=[") : NULL;
    char *x = i >= 0 ? strstr(l->v[i], "axis=") : NULL,
         *kd = i >= 0 ? strstr(l->v[i], "keepdims=") : NULL;
    if (kd && next(s) % 2) {
        size_t at = (size_t)(kd + 9 - l->v[i]), len = strcspn(kd + 9, ",)");
        char *t = malloc(strlen(l->v[i]) + 8);
        sprintf(t, "%.*s%s%s", (int)at, l->v[i], kd[9] == 't' ? "false" : "true", kd + 9 + len);
        lines_set(l, i, t);
    } else if (a && a[6] >= '0' && a[6] <= '9')
        a[6] = (char)('0' + next(s) % 4);
    else if (x && (x[5] == '-' || (x[5] >= '0' && x[5] <= '9')))
        x[5] = x[5] == '-' ? '-' : (char)('0' + next(s) % 3);
    else if ((i = pick_line(l, "output", s)) >= 0 && pick_line(l, "output", s) != i)
        lines_set(l, i, strdup("# output dropped"));
}

char *gf_case_text(uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    next(&s);
    randgraph_options o = {.n_ops = 2 + (int)(next(&s) % 12),
                           .more_ops = next(&s) % 2,
                           .table_ops = next(&s) % 3 == 0};
    char *text = randgraph_text(seed, &o);
    if (!text || seed % 3 == 0)
        return text;
    lines l;
    lines_split(&l, text);
    free(text);
    int n = 1 + (int)(next(&s) % 3);
    for (int k = 0; k < n; k++) {
        switch (next(&s) % 4) {
        case 0:
            mutate_op(&l, &s);
            break;
        case 1:
            mutate_dim(&l, &s);
            break;
        case 2:
            mutate_add(&l, &s, k);
            break;
        default:
            mutate_attr(&l, &s);
            break;
        }
    }
    return lines_join(&l);
}

/* ---- running and comparing ------------------------------------------------------ */

typedef struct side {
    int status; /* system()'s status */
    char err[2048];
} side;

/* Runs xlac-run in work, op by op (plugin false) or clustered, outputs into work/OUT. */
static void run_side(const char *bindir, const char *work, bool plugin, side *r)
{
    char cmd[8192], lib[4200];
    snprintf(lib, sizeof lib, "'%s/../lib/libxlac.so'", bindir);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && rm -rf %s && exec timeout -s KILL 120 env -u LD_PRELOAD -u XLAC_AUTO_JIT "
             "-u XLAC_FLAGS "
             "OMP_WAIT_POLICY=passive "
             "ASAN_OPTIONS=\"$ASAN_OPTIONS:verify_asan_link_order=0\" " /* a preloaded plugin
                                                                           precedes libasan */
             "%s%s '%s/xlac-run' g.xg --seed 7 --save-outputs %s >/dev/null 2>%s.err",
             work, plugin ? "got" : "ref",
             plugin ? "XLAC_AUTO_JIT=2 XLAC_FLAGS='--disk_cache=0 --min_cluster_size=1' LD_PRELOAD="
                    : "",
             plugin ? lib : "", bindir, plugin ? "got" : "ref", plugin ? "got" : "ref");
    r->status = system(cmd);
    char p[4200];
    snprintf(p, sizeof p, "%s/%s.err", work, plugin ? "got" : "ref");
    FILE *f = fopen(p, "rb");
    size_t n = f ? fread(r->err, 1, sizeof r->err - 1, f) : 0;
    r->err[n] = '\0';
    if (f)
        fclose(f);
}

static bool sanitizer_report(const char *err)
{
    return strstr(err, "Sanitizer") || strstr(err, "runtime error:");
}

static gf_result fail(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return GF_FAILED;
}

/* Whether got[i] is want[i] within tol of the output's scale. */
static bool close_enough(const xe_tensor *got, const xe_tensor *want, int64_t i, double tol,
                         double scale)
{
    double g = xe_load_f64(got->data, got->dtype, i), w = xe_load_f64(want->data, want->dtype, i);
    if (isnan(w) || isnan(g))
        return isnan(w) && isnan(g);
    if (isinf(w) || isinf(g))
        return g == w;
    return fabs(g - w) <= tol * scale;
}

/* Compares output file `name` of ref/ and got/. */
static gf_result compare_output(const char *work, const char *name, char *why, size_t cap)
{
    char p[4200];
    xe_status st;
    snprintf(p, sizeof p, "%s/ref/%s", work, name);
    xe_tensor *want = xe_npy_read(p, &st);
    snprintf(p, sizeof p, "%s/got/%s", work, name);
    xe_tensor *got = xe_npy_read(p, &st);
    gf_result r = GF_SAME;
    if (!want || !got || got->dtype != want->dtype || !xe_shape_equal(&got->shape, &want->shape)) {
        r = fail(why, cap, "output %s: missing, or another dtype or shape", name);
    } else {
        xe_dtype dt = want->dtype;
        double tol = dt == XE_F64   ? 1e-12
                     : dt == XE_F32 ? 1e-5
                     : dt == XE_F16 ? 1e-2
                                    : 0,
               scale = 1;
        for (int64_t i = 0; i < xe_tensor_numel(want); i++) {
            double w = fabs(xe_load_f64(want->data, dt, i));
            scale = isfinite(w) && w > scale ? w : scale;
        }
        for (int64_t i = 0; r == GF_SAME && i < xe_tensor_numel(want); i++)
            if (!close_enough(got, want, i, tol, scale))
                r = fail(why, cap, "output %s[%lld]: clustered %.17g, op by op %.17g", name,
                         (long long)i, xe_load_f64(got->data, dt, i),
                         xe_load_f64(want->data, dt, i));
    }
    if (want)
        xe_tensor_release(want);
    if (got)
        xe_tensor_release(got);
    return r;
}

static gf_result compare_outputs(const char *work, char *why, size_t cap)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/ref", work);
    DIR *d = opendir(p);
    if (!d)
        return fail(why, cap, "no outputs saved");
    gf_result r = GF_SAME;
    for (struct dirent *e; r == GF_SAME && (e = readdir(d));)
        if (strstr(e->d_name, ".npy"))
            r = compare_output(work, e->d_name, why, cap);
    closedir(d);
    return r;
}

/* The verdict on the two exit statuses (GF_SAME: both 0, compare the outputs). */
static gf_result judge(const side *a, const side *b, char *why, size_t cap)
{
    const side *s[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        const char *how = k ? "clustered" : "op by op";
        if (!WIFEXITED(s[k]->status))
            return fail(why, cap, "%s: killed by signal %d\n%s", how, WTERMSIG(s[k]->status),
                        s[k]->err);
        if (sanitizer_report(s[k]->err))
            return fail(why, cap, "%s: sanitizer report\n%s", how, s[k]->err);
        if (WEXITSTATUS(s[k]->status) > 2)
            return fail(why, cap, "%s: exit %d\n%s", how, WEXITSTATUS(s[k]->status), s[k]->err);
    }
    int ra = WEXITSTATUS(a->status), rb = WEXITSTATUS(b->status);
    if (ra != rb)
        return fail(why, cap, "op by op exit %d, clustered exit %d\n%s\n%s", ra, rb, a->err,
                    b->err);
    return ra == 0 ? GF_SAME : GF_INVALID;
}

gf_result gf_check(const char *text, const char *bindir, const char *work, char *why, size_t cap)
{
    char p[4200];
    mkdir(work, 0700);
    snprintf(p, sizeof p, "%s/g.xg", work);
    FILE *f = fopen(p, "w");
    if (!f)
        return fail(why, cap, "cannot write %s", p);
    fputs(text, f);
    fclose(f);
    side a, b;
    run_side(bindir, work, false, &a);
    run_side(bindir, work, true, &b);
    gf_result r = judge(&a, &b, why, cap);
    return r == GF_SAME ? compare_outputs(work, why, cap) : r;
}
