/*
 * Flags: XLAC_AUTO_JIT and XLAC_FLAGS parsed once into xlac_flags.
 *
 * XLAC_FLAGS holds space-separated `--name=value` words (a boolean may be
 * written `--name`). Each flag is one row of a table (name, kind, default,
 * meaning) that drives both the parser and `--help`, so the two never
 * disagree. Nothing is silently ignored: an unknown flag, a malformed
 * value or a bad XLAC_AUTO_JIT is an error that names it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flags.h"
#include "xlac/op.h"

typedef enum flag_kind {
    FLAG_BOOL,    /* --name, --name=0/1/true/false */
    FLAG_INT,     /* --name=N, N >= the row's minimum */
    FLAG_STRING,  /* --name=TEXT */
    FLAG_DEVICES, /* --name=cpu,gpu */
    FLAG_OPS,     /* --name=op,op (known op names) */
} flag_kind;

typedef enum flag_id {
    F_MIN_CLUSTER_SIZE,  /* smallest cluster kept */
    F_MAX_CLUSTER_SIZE,  /* largest cluster built */
    F_DEVICES,           /* devices whose ops are clustered */
    F_OPS_TO_EXCLUDE,    /* op names never clustered */
    F_CLUSTERING_FUEL,   /* how many candidates may be clustered */
    F_CLUSTERING_DEBUG,  /* dumps and the summary */
    F_STATS,             /* counters at exit */
    F_CODEGEN,           /* compile clusters at all */
    F_FAST_MATH,         /* codegen: reassociation allowed */
    F_COMPILE_THRESHOLD, /* codegen: runs of a signature before compiling */
    F_DYNAMIC_AFTER,     /* codegen: shapes seen before a shape-generic compile */
    F_MAX_COMPILES,      /* codegen: programs per cluster */
    F_ASYNC_COMPILATION, /* codegen: compile in the background */
    F_DISK_CACHE,        /* codegen: persistent cache */
    F_CACHE_DIR,         /* codegen: where the persistent cache lives */
    F_CACHE_MAX_MB,      /* codegen: size of the persistent cache before eviction */
    F_COMPILE_TIMEOUT,   /* codegen: seconds a compiler may run */
    F_HELP,              /* print the flags */
} flag_id;

typedef struct flag_row {
    flag_id id;
    const char *name;
    flag_kind kind;
    long long min;    /* FLAG_INT: smallest accepted value */
    const char *dflt; /* default, as --help shows it */
    const char *help;
} flag_row;

static const flag_row rows[] = {
    {F_MIN_CLUSTER_SIZE, "min_cluster_size", FLAG_INT, 1, "2",
     "clusters with fewer ops are dissolved (reason: cluster too small)"},
    {F_MAX_CLUSTER_SIZE, "max_cluster_size", FLAG_INT, 0, "0",
     "no cluster grows beyond N ops; 0: no limit"},
    {F_DEVICES, "devices", FLAG_DEVICES, 0, "cpu,gpu", "devices whose ops may be clustered"},
    {F_OPS_TO_EXCLUDE, "ops_to_exclude", FLAG_OPS, 0, "(none)",
     "comma-separated op names that are never clustered"},
    {F_CLUSTERING_FUEL, "clustering_fuel", FLAG_INT, 0, "unlimited",
     "cluster at most the first N candidate ops (in graph order): bisects a miscompile"},
    {F_CLUSTERING_DEBUG, "clustering_debug", FLAG_BOOL, 0, "false",
     "print the clustering summary; with XLAC_DUMP_GRAPH_PREFIX=DIR write graph dumps there"},
    {F_STATS, "stats", FLAG_BOOL, 0, "false",
     "at exit print one line: clusters, launches, compiles, cache hits, fallbacks"},
    {F_CODEGEN, "codegen", FLAG_BOOL, 0, "true",
     "false: clusters always run with the executor's per-op kernels"},
    {F_FAST_MATH, "fast_math", FLAG_BOOL, 0, "false",
     "generated code may reassociate floating-point math"},
    {F_COMPILE_THRESHOLD, "compile_threshold", FLAG_INT, 1, "1",
     "runs of one signature before it is compiled (earlier runs go per op)"},
    {F_DYNAMIC_AFTER, "dynamic_after", FLAG_INT, 0, "2",
     "distinct shapes of a cluster before one shape-generic program is compiled"},
    {F_MAX_COMPILES, "max_compiles_per_cluster", FLAG_INT, 1, "16",
     "programs compiled per cluster; beyond, it runs per op"},
    {F_ASYNC_COMPILATION, "async_compilation", FLAG_BOOL, 0, "false",
     "compile in a background thread, running per op until the program is ready"},
    {F_DISK_CACHE, "disk_cache", FLAG_BOOL, 0, "true", "keep compiled programs on disk"},
    {F_CACHE_DIR, "cache_dir", FLAG_STRING, 0, "$XDG_CACHE_HOME/xlac or ~/.cache/xlac",
     "folder of the disk cache"},
    {F_CACHE_MAX_MB, "cache_max_mb", FLAG_INT, 0, "1024",
     "the disk cache's size limit in MiB: past it the least recently used modules are deleted; 0: no limit"},
    {F_COMPILE_TIMEOUT, "compile_timeout_s", FLAG_INT, 0, "120",
     "a C compiler still running after N seconds is killed and the cluster runs op by op; 0: no limit"},
    {F_HELP, "help", FLAG_BOOL, 0, "", "print this list and exit"},
};
#define N_ROWS ((int)(sizeof rows / sizeof rows[0]))

void xlac_flags_default(xlac_flags *f)
{
    *f = (xlac_flags){
        .min_cluster_size = 2,
        .devices = {[XE_DEV_CPU] = true, [XE_DEV_GPU] = true},
        .clustering_fuel = -1,
        .codegen = true,
    };
    xg_options_default(&f->xg);
}

void xlac_flags_free(xlac_flags *f)
{
    for (int i = 0; i < f->n_ops_to_exclude; i++)
        free(f->ops_to_exclude[i]);
    free(f->ops_to_exclude);
    free(f->dump_graph_prefix);
    free(f->cache_dir);
    free(f->dump_to);
    f->ops_to_exclude = NULL;
    f->n_ops_to_exclude = 0;
    f->dump_graph_prefix = f->cache_dir = f->dump_to = NULL;
    f->xg.cache_dir = f->xg.dump_dir = NULL;
}

void xlac_flags_help(FILE *out)
{
    fprintf(out, "xlac flags (XLAC_FLAGS=\"--name=value ...\"; booleans also as --name):\n");
    for (int i = 0; i < N_ROWS; i++) {
        const char *arg = rows[i].kind == FLAG_BOOL ? "[=0|1]" : "=VALUE";
        fprintf(out, "  --%s%s\n      %s", rows[i].name, arg, rows[i].help);
        if (*rows[i].dflt)
            fprintf(out, " (default: %s)", rows[i].dflt);
        fprintf(out, "\n");
    }
    fprintf(out, "environment:\n"
                 "  XLAC_AUTO_JIT=0|1|2     0 off (jit blocks only), 1 fusible ops, 2 every "
                 "compilable op (default 0)\n"
                 "  XLAC_DUMP_GRAPH_PREFIX=DIR  graph dumps with --clustering_debug\n"
                 "  XLAC_DUMP_TO=DIR        generated programs (source, PTX, plan, log)\n");
}

/* ---- values ------------------------------------------------------------------- */

static xe_code parse_bool(const flag_row *r, const char *v, bool *out, xe_status *st)
{
    if (!v || strcmp(v, "1") == 0 || strcmp(v, "true") == 0)
        *out = true;
    else if (strcmp(v, "0") == 0 || strcmp(v, "false") == 0)
        *out = false;
    else
        return xe_fail(st, XE_ERR_USAGE, "XLAC_FLAGS: --%s=%s: expected 0, 1, true or false",
                       r->name, v);
    return XE_OK;
}

static xe_code parse_int(const flag_row *r, const char *v, long long *out, xe_status *st)
{
    char *end = NULL;
    errno = 0;
    long long x = v && *v ? strtoll(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || x < r->min || x > 1000000000LL)
        return xe_fail(st, XE_ERR_USAGE, "XLAC_FLAGS: --%s=%s: expected an integer >= %lld",
                       r->name, v ? v : "", r->min);
    *out = x;
    return XE_OK;
}

static xe_code parse_devices(const flag_row *r, const char *v, bool *devs, xe_status *st)
{
    if (!v || !*v)
        return xe_fail(st, XE_ERR_USAGE, "XLAC_FLAGS: --%s needs a value such as cpu,gpu", r->name);
    devs[XE_DEV_CPU] = devs[XE_DEV_GPU] = false;
    for (const char *p = v; *p;) {
        size_t len = strcspn(p, ",");
        if (len == 3 && strncmp(p, "cpu", 3) == 0)
            devs[XE_DEV_CPU] = true;
        else if (len == 3 && strncmp(p, "gpu", 3) == 0)
            devs[XE_DEV_GPU] = true;
        else
            return xe_fail(st, XE_ERR_USAGE, "XLAC_FLAGS: --%s=%s: '%.*s' is not cpu or gpu",
                           r->name, v, (int)len, p);
        p += len + (p[len] == ',');
    }
    return XE_OK;
}

static xe_code parse_ops(const flag_row *r, const char *v, xlac_flags *f, xe_status *st)
{
    if (!v || !*v)
        return xe_fail(st, XE_ERR_USAGE, "XLAC_FLAGS: --%s needs op names", r->name);
    for (const char *p = v; *p;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || xe_op_find(p, len) < 0)
            return xe_fail(st, XE_ERR_USAGE, "XLAC_FLAGS: --%s=%s: unknown op '%.*s'", r->name, v,
                           (int)len, p);
        char **ops = realloc(f->ops_to_exclude, (size_t)(f->n_ops_to_exclude + 1) * sizeof *ops);
        if (!ops)
            return xe_fail(st, XE_ERR_NOMEM, "out of memory");
        f->ops_to_exclude = ops;
        if (!(ops[f->n_ops_to_exclude] = strndup(p, len)))
            return xe_fail(st, XE_ERR_NOMEM, "out of memory");
        f->n_ops_to_exclude++;
        p += len + (p[len] == ',');
    }
    return XE_OK;
}

static xe_code set_int(const flag_row *r, const char *v, xlac_flags *f, xe_status *st)
{
    long long x = 0;
    if (parse_int(r, v, &x, st) != XE_OK)
        return st->code;
    switch (r->id) {
    case F_MIN_CLUSTER_SIZE:
        f->min_cluster_size = (int)x;
        break;
    case F_MAX_CLUSTER_SIZE:
        f->max_cluster_size = (int)x;
        break;
    case F_CLUSTERING_FUEL:
        f->clustering_fuel = x;
        break;
    case F_COMPILE_THRESHOLD:
        f->xg.compile_threshold = (int)x;
        break;
    case F_DYNAMIC_AFTER:
        f->xg.dynamic_after = (int)x;
        break;
    case F_MAX_COMPILES:
        f->xg.max_compiles_per_cluster = (int)x;
        break;
    case F_CACHE_MAX_MB:
        f->xg.cache_max_mb = (int)x;
        break;
    case F_COMPILE_TIMEOUT:
        f->xg.compile_timeout_s = (int)x;
        break;
    default:
        break;
    }
    return XE_OK;
}

static xe_code set_bool(const flag_row *r, const char *v, xlac_flags *f, xe_status *st)
{
    bool b = false;
    if (parse_bool(r, v, &b, st) != XE_OK)
        return st->code;
    switch (r->id) {
    case F_CLUSTERING_DEBUG:
        f->clustering_debug = b;
        break;
    case F_STATS:
        f->stats = b;
        break;
    case F_CODEGEN:
        f->codegen = b;
        break;
    case F_FAST_MATH:
        f->xg.fast_math = b;
        break;
    case F_ASYNC_COMPILATION:
        f->xg.async_compilation = b;
        break;
    case F_DISK_CACHE:
        f->xg.disk_cache = b;
        break;
    case F_HELP:
        f->help = b;
        break;
    default:
        break;
    }
    return XE_OK;
}

static xe_code set_flag(const flag_row *r, const char *v, xlac_flags *f, xe_status *st)
{
    switch (r->kind) {
    case FLAG_BOOL:
        return set_bool(r, v, f, st);
    case FLAG_INT:
        return set_int(r, v, f, st);
    case FLAG_DEVICES:
        return parse_devices(r, v, f->devices, st);
    case FLAG_OPS:
        return parse_ops(r, v, f, st);
    case FLAG_STRING:
        if (!v || !*v)
            return xe_fail(st, XE_ERR_USAGE, "XLAC_FLAGS: --%s needs a value", r->name);
        free(f->cache_dir);
        if (!(f->cache_dir = strdup(v)))
            return xe_fail(st, XE_ERR_NOMEM, "out of memory");
        f->xg.cache_dir = f->cache_dir;
        return XE_OK;
    }
    return XE_OK;
}

/* ---- words -------------------------------------------------------------------- */

/* One word "--name[=value]" (len bytes at w). */
static xe_code parse_word(const char *w, size_t len, xlac_flags *f, xe_status *st)
{
    char *word = strndup(w, len);
    if (!word)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    xe_code c;
    char *eq = strchr(word, '=');
    if (eq)
        *eq = '\0';
    const flag_row *r = NULL;
    for (int i = 0; word[0] == '-' && word[1] == '-' && i < N_ROWS && !r; i++)
        if (strcmp(word + 2, rows[i].name) == 0)
            r = &rows[i];
    if (!r)
        c = xe_fail(st, XE_ERR_USAGE,
                    "XLAC_FLAGS: unknown flag '%s' (XLAC_FLAGS=--help lists every flag)", word);
    else if (!eq && r->kind != FLAG_BOOL)
        c = xe_fail(st, XE_ERR_USAGE, "XLAC_FLAGS: --%s needs a value (--%s=...)", r->name,
                    r->name);
    else
        c = set_flag(r, eq ? eq + 1 : NULL, f, st);
    free(word);
    return c;
}

static xe_code parse_auto_jit(const char *v, int *out, xe_status *st)
{
    if (!v || !*v || strcmp(v, "0") == 0)
        *out = 0;
    else if (strcmp(v, "1") == 0)
        *out = 1;
    else if (strcmp(v, "2") == 0)
        *out = 2;
    else
        return xe_fail(st, XE_ERR_USAGE, "XLAC_AUTO_JIT=%s: expected 0 (off), 1 or 2", v);
    return XE_OK;
}

static xe_code copy_env(char **dst, const char *v, xe_status *st)
{
    if (v && *v && !(*dst = strdup(v)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    return XE_OK;
}

xe_code xlac_flags_parse(xlac_flags *f, const char *auto_jit, const char *flags,
                         const char *dump_graph_prefix, const char *dump_to, xe_status *st)
{
    xlac_flags_default(f);
    xe_code c = parse_auto_jit(auto_jit, &f->auto_jit, st);
    for (const char *p = flags ? flags : ""; c == XE_OK && *p;) {
        p += strspn(p, " \t\n");
        size_t len = strcspn(p, " \t\n");
        if (len)
            c = parse_word(p, len, f, st);
        p += len;
    }
    if (c == XE_OK && f->max_cluster_size > 0 && f->max_cluster_size < f->min_cluster_size)
        c = xe_fail(st, XE_ERR_USAGE,
                    "XLAC_FLAGS: --max_cluster_size=%d is smaller than --min_cluster_size=%d",
                    f->max_cluster_size, f->min_cluster_size);
    if (c == XE_OK)
        c = copy_env(&f->dump_graph_prefix, dump_graph_prefix, st);
    if (c == XE_OK && (c = copy_env(&f->dump_to, dump_to, st)) == XE_OK)
        f->xg.dump_dir = f->dump_to;
    f->xg.level2 = f->auto_jit == 2;
    if (c != XE_OK)
        xlac_flags_free(f);
    return c;
}
