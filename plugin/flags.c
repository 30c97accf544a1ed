/*
 * Flags: the environment read once (xlac_env_read, the plugin's only
 * getenv) and parsed into xlac_flags, every default that depends on the
 * environment resolved there too (the compiler, the temp and cache folders).
 *
 * XLAC_FLAGS holds space-separated `--name=value` words (a boolean may be
 * written `--name`). Each flag is one row of a table (name, kind, the field
 * it sets, meaning) that drives both the parser and `--help`, so the two
 * never disagree. Defaults are values, written once: the plugin's own in
 * xlac_flags_default, the code generator's in its options table
 * (codegen/plan/options.c); --help prints them from a default-filled
 * xlac_flags. Nothing is silently ignored: an unknown flag, a
 * malformed value or a bad XLAC_AUTO_JIT is an error that names it.
 */
#include <errno.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flags.h"
#include "xlac/op.h"
#include "xlac/text.h"

typedef enum flag_kind {
    FLAG_BOOL,    /* --name, --name=0/1/true/false: a bool field */
    FLAG_INT,     /* --name=N, N >= the row's minimum: an int field */
    FLAG_LLONG,   /* the same into a long long field */
    FLAG_STRING,  /* --name=TEXT: an owned char * field */
    FLAG_DEVICES, /* --name=cpu,gpu */
    FLAG_OPS,     /* --name=op,op (known op names) */
} flag_kind;

typedef struct flag_row {
    const char *name;
    flag_kind kind;
    size_t field;      /* offsetof the value in xlac_flags */
    long long min;     /* FLAG_INT, FLAG_LLONG: smallest accepted value */
    const char *unset; /* --help's words for a default that is no value (what a NULL string means);
                          "": none shown; NULL: --help prints the default struct's value */
    const char *help;
    bool session; /* a session may set it (xlac_flags_apply); else it is the process's, shared */
} flag_row;

#define AT(member) offsetof(xlac_flags, member)

static const flag_row rows[] = {
    {"auto_jit", FLAG_INT, AT(auto_jit), 0, NULL,
     "as XLAC_AUTO_JIT (0 off, 1 fusible ops, 2 every compilable op); a session's own level", true},
    {"min_cluster_size", FLAG_INT, AT(min_cluster_size), 1, NULL,
     "clusters with fewer ops are dissolved (reason: cluster too small)", true},
    {"max_cluster_size", FLAG_INT, AT(max_cluster_size), 0, NULL,
     "no cluster grows beyond N ops; 0: no limit", true},
    {"devices", FLAG_DEVICES, AT(devices), 0, NULL, "devices whose ops may be clustered", true},
    {"ops_to_exclude", FLAG_OPS, AT(ops_to_exclude), 0, NULL,
     "comma-separated op names that are never clustered", true},
    {"clustering_fuel", FLAG_LLONG, AT(clustering_fuel), 0, NULL,
     "cluster at most the first N candidate ops (in graph order): bisects a miscompile", true},
    {"clustering_debug", FLAG_BOOL, AT(clustering_debug), 0, NULL,
     "print the clustering summary; with XLAC_DUMP_GRAPH_PREFIX=DIR write graph dumps there", true},
    {"stats", FLAG_BOOL, AT(stats), 0, NULL,
     "at exit print two lines: 'xlac: stats' (clusters, launches, compiles, cache and disk hits, "
     "fallbacks, compile ms) and 'xlac: timing' (disk-cache load ms, demoted, probes), then one "
     "'xlac: demoted' line per program demoted",
     false},
    {"codegen", FLAG_BOOL, AT(codegen), 0, NULL,
     "false: clusters always run with the executor's per-op kernels", true},
    {"fast_math", FLAG_BOOL, AT(xg.fast_math), 0, NULL,
     "generated code may reassociate floating-point math", false},
    {"compile_threshold", FLAG_INT, AT(xg.compile_threshold), 1, NULL,
     "runs of one signature before it is compiled (earlier runs go per op)", false},
    {"demote", FLAG_BOOL, AT(xg.demote), 0, NULL,
     "time compiled runs against per-op runs of the same signature (after a compiled run the body "
     "runs per op once or twice more, only to be timed, when none ran before) and send a program "
     "more than 2% slower per op",
     false},
    {"dynamic_after", FLAG_INT, AT(xg.dynamic_after), 0, NULL,
     "distinct shapes of a cluster before one shape-generic program is compiled", false},
    {"max_compiles_per_cluster", FLAG_INT, AT(xg.max_compiles_per_cluster), 1, NULL,
     "programs compiled per cluster; beyond, it runs per op", false},
    {"async_compilation", FLAG_BOOL, AT(xg.async_compilation), 0, NULL,
     "compile in a background thread, running per op until the program is ready", false},
    {"disk_cache", FLAG_BOOL, AT(xg.disk_cache), 0, NULL, "keep compiled programs on disk", false},
    {"cache_dir", FLAG_STRING, AT(cache_dir), 0, "$XDG_CACHE_HOME/xlac or ~/.cache/xlac",
     "folder of the disk cache", false},
    {"cache_max_mb", FLAG_INT, AT(xg.cache_max_mb), 0, NULL,
     "the disk cache's size limit in MiB: past it the least recently used modules are deleted; 0: "
     "no limit",
     false},
    {"compile_timeout_s", FLAG_INT, AT(xg.compile_timeout_s), 0, NULL,
     "a C compiler still running after N seconds is killed and the cluster runs op by op; 0: no "
     "limit",
     false},
    {"dump_inputs", FLAG_BOOL, AT(dump_inputs), 0, NULL,
     "with XLAC_DUMP_TO=DIR: each launched cluster as DIR/replay_NNNN.CLUSTER/cluster.xg plus the "
     ".npy "
     "inputs of its first launch (inputs/), replayable with xlac-run --compare",
     false},
    {"trace", FLAG_STRING, AT(trace_path), 0, NULL,
     "write a timeline of the process to FILE.json at exit (Chrome trace-event JSON: "
     "ui.perfetto.dev)",
     false},
    {"summary", FLAG_STRING, AT(summary_path), 0, NULL,
     "write FILE.json at exit: nodes left out by reason, per cluster launches, hits, compile and "
     "launch "
     "times, and the run's share of time in clusters, per-op kernels and compiling",
     false},
    {"help", FLAG_BOOL, AT(help), 0, "", "print this list and exit", false},
};
#define N_ROWS ((int)(sizeof rows / sizeof rows[0]))

void xlac_flags_default(xlac_flags *f)
{
    *f = (xlac_flags){
        .min_cluster_size = 2,
        .clustering_fuel = -1,
        .codegen = true,
    };
    for (int d = 0; d < XE_DEV_MAX; d++) /* every device's ops may be clustered */
        f->devices[d] = true;
    xg_options_default(&f->xg);
}

void xlac_flags_free(xlac_flags *f)
{
    for (int i = 0; i < f->n_ops_to_exclude; i++)
        free(f->ops_to_exclude[i]);
    free(f->ops_to_exclude);
    free(f->dump_graph_prefix);
    free(f->trace_path);
    free(f->summary_path);
    f->trace_path = f->summary_path = NULL;
    free(f->cache_dir);
    free(f->dump_to);
    free(f->cc);
    free(f->tmp_dir);
    f->ops_to_exclude = NULL;
    f->n_ops_to_exclude = 0;
    f->dump_graph_prefix = f->cache_dir = f->dump_to = f->cc = f->tmp_dir = NULL;
    xg_options_default(&f->xg);
}

/* Row r's value in f as --help shows a default: "false", "16", "cpu,gpu", "(none)", "unlimited". */
static void value_words(const flag_row *r, const xlac_flags *f, char *buf, size_t len)
{
    const void *at = (const char *)f + r->field;
    size_t used = 0;
    switch (r->kind) {
    case FLAG_BOOL:
        snprintf(buf, len, "%s", *(const bool *)at ? "true" : "false");
        return;
    case FLAG_INT:
        snprintf(buf, len, "%d", *(const int *)at);
        return;
    case FLAG_LLONG:
        if (*(const long long *)at < 0)
            snprintf(buf, len, "unlimited");
        else
            snprintf(buf, len, "%lld", *(const long long *)at);
        return;
    case FLAG_STRING:
        snprintf(buf, len, "%s", *(char *const *)at ? *(char *const *)at : "(none)");
        return;
    case FLAG_DEVICES:
        buf[0] = '\0';
        for (int d = 0; d < xe_device_count() && used < len; d++)
            if (((const bool *)at)[d]) /* "gpu", "gpu:1" */
                used += (size_t)snprintf(buf + used, len - used,
                                         xe_device_ordinal(d) ? "%s%s:%d" : "%s%s", used ? "," : "",
                                         xe_device_word(d), xe_device_ordinal(d));
        return;
    case FLAG_OPS:
        snprintf(buf, len, "%s", f->n_ops_to_exclude ? "(some)" : "(none)");
        return;
    }
}

void xlac_flags_help(FILE *out)
{
    xlac_flags dflt;
    xlac_flags_default(&dflt);
    fprintf(out, "xlac flags (XLAC_FLAGS=\"--name=value ...\"; booleans also as --name):\n");
    for (int i = 0; i < N_ROWS; i++) {
        const char *arg = rows[i].kind == FLAG_BOOL ? "[=0|1]" : "=VALUE";
        char value[200];
        if (rows[i].unset)
            snprintf(value, sizeof value, "%s", rows[i].unset);
        else
            value_words(&rows[i], &dflt, value, sizeof value);
        fprintf(out, "  --%s%s\n      %s", rows[i].name, arg, rows[i].help);
        if (*value)
            fprintf(out, " (default: %s)", value);
        fprintf(out, "\n");
    }
    fprintf(out,
            "environment:\n"
            "  XLAC_AUTO_JIT=0|1|2     0 off (jit blocks only), 1 fusible ops, 2 every "
            "compilable op (default %d)\n"
            "  XLAC_DUMP_GRAPH_PREFIX=DIR  graph dumps with --clustering_debug\n"
            "  XLAC_DUMP_TO=DIR        generated programs (source, PTX, plan, log)\n"
            "  XLAC_LOG=LEVEL          error, warning (default), info (a line per compile and per "
            "fallback), debug\n",
            dflt.auto_jit);
    xlac_flags_free(&dflt);
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
    for (int d = 0; d < XE_DEV_MAX; d++)
        devs[d] = false;
    for (const char *p = v; *p;) {
        size_t len = strcspn(p, ",");
        xe_device dev;
        if (xe_device_by_word(p, len, &dev))
            devs[dev] = true;
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

/* *dst = a copy of v; an unset or empty v leaves *dst as it is. */
static xe_code copy_env(char **dst, const char *v, xe_status *st)
{
    if (v && *v && !(*dst = strdup(v)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    return XE_OK;
}

/* The row's value in f. */
static void *field(const flag_row *r, xlac_flags *f)
{
    return (char *)f + r->field;
}

static xe_code set_flag(const flag_row *r, const char *v, xlac_flags *f, xe_status *st)
{
    long long x = 0;
    switch (r->kind) {
    case FLAG_BOOL:
        return parse_bool(r, v, field(r, f), st);
    case FLAG_INT:
        if (parse_int(r, v, &x, st) != XE_OK)
            return st->code;
        *(int *)field(r, f) = (int)x;
        return XE_OK;
    case FLAG_LLONG:
        return parse_int(r, v, field(r, f), st);
    case FLAG_DEVICES:
        return parse_devices(r, v, field(r, f), st);
    case FLAG_OPS:
        return parse_ops(r, v, f, st);
    case FLAG_STRING:
        if (!v || !*v)
            return xe_fail(st, XE_ERR_USAGE, "XLAC_FLAGS: --%s needs a value", r->name);
        free(*(char **)field(r, f));
        *(char **)field(r, f) = NULL;
        return copy_env(field(r, f), v, st);
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

static xe_code parse_log(const char *v, xg_log_level *out, xe_status *st)
{
    static const char *const words[] = {"error", "warning", "info", "debug"};
    *out = XG_LOG_WARNING;
    if (!v || !*v)
        return XE_OK;
    for (int k = 0; k < 4; k++)
        if (strcmp(v, words[k]) == 0) {
            *out = (xg_log_level)k;
            return XE_OK;
        }
    return xe_fail(st, XE_ERR_USAGE, "XLAC_LOG=%s: expected error, warning, info or debug", v);
}

void xlac_env_read(xlac_env *e)
{
    *e = (xlac_env){
        .auto_jit = getenv("XLAC_AUTO_JIT"),
        .flags = getenv("XLAC_FLAGS"),
        .dump_graph_prefix = getenv("XLAC_DUMP_GRAPH_PREFIX"),
        .dump_to = getenv("XLAC_DUMP_TO"),
        .log = getenv("XLAC_LOG"),
        .cc = getenv("CC"),
        .tmpdir = getenv("TMPDIR"),
        .xdg_cache_home = getenv("XDG_CACHE_HOME"),
        .home = getenv("HOME"),
        .run_start = getenv("XLAC_RUN_START"),
        .cache_noted = getenv("XLAC_CACHE_NOTED") != NULL,
    };
    struct passwd *pw = getpwuid(getuid()); /* when HOME is unset or relative */
    e->passwd_home = pw ? pw->pw_dir : NULL;
}

static bool absolute(const char *p)
{
    return p && p[0] == '/';
}

/*
 * One stderr line a run about where its disk cache went, when the
 * environment was odd: once a process, and not again in the processes it
 * starts or the image it execs (xlac-run execs itself once), which inherit
 * XLAC_CACHE_NOTED.
 */
static void say_once(const xlac_env *env, const char *what, const char *value, const char *where)
{
    static atomic_bool said;
    if (env->cache_noted || atomic_exchange(&said, true))
        return;
    setenv("XLAC_CACHE_NOTED", "1", 1);
    fprintf(stderr, "xlac: note: %s%s%s%s; the disk cache is %s\n", what, value ? "=" : "",
            value ? value : "",
            value ? " is a relative path, ignored (the XDG base directory rule)" : " is unset",
            where);
}

/*
 * Without --cache_dir: $XDG_CACHE_HOME/xlac, else $HOME/.cache/xlac, else
 * the password database's home; a relative XDG_CACHE_HOME or HOME is
 * ignored (the XDG rule: it would put the cache in whatever folder the
 * process happens to run in), said once. No home at all: no disk cache.
 */
static xe_code default_cache_dir(xlac_flags *f, const xlac_env *env, xe_status *st)
{
    xe_text t = {0};
    const char *xdg = env->xdg_cache_home && *env->xdg_cache_home ? env->xdg_cache_home : NULL;
    const char *home = env->home && *env->home ? env->home : NULL;
    if (absolute(xdg))
        xe_text_printf(&t, "%s/xlac", xdg);
    else if (absolute(home))
        xe_text_printf(&t, "%s/.cache/xlac", home);
    else if (absolute(env->passwd_home))
        xe_text_printf(&t, "%s/.cache/xlac", env->passwd_home);
    if (!t.buf && !t.oom) {
        say_once(env, xdg ? "XDG_CACHE_HOME" : "HOME", xdg ? xdg : home,
                 "off (no absolute home folder)");
        return XE_OK;
    }
    if (!(f->cache_dir = xe_text_take(&t)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (xdg && !absolute(xdg))
        say_once(env, "XDG_CACHE_HOME", xdg, f->cache_dir);
    else if (!absolute(xdg) && !absolute(home))
        say_once(env, "HOME", home, f->cache_dir);
    return XE_OK;
}

/* The environment's part: dump folders; the code generator's compiler, temp and cache folders. */
static xe_code resolve_env(xlac_flags *f, const xlac_env *env, xe_status *st)
{
    xe_code c = copy_env(&f->dump_graph_prefix, env->dump_graph_prefix, st);
    if (c == XE_OK)
        c = copy_env(&f->dump_to, env->dump_to, st);
    if (c == XE_OK)
        c = copy_env(&f->cc, env->cc, st);
    if (c == XE_OK)
        c = copy_env(&f->tmp_dir, env->tmpdir, st);
    if (c == XE_OK && !f->cache_dir)
        c = default_cache_dir(f, env, st);
    f->xg.dump_dir = f->dump_to;
    f->xg.cache_dir = f->cache_dir;
    if (f->cc)
        f->xg.cc = f->cc;
    if (f->tmp_dir)
        f->xg.tmp_dir = f->tmp_dir;
    return c;
}

/* The checks across flags, after the words: the level's range, the cluster sizes. */
static xe_code check_values(const xlac_flags *f, xe_status *st)
{
    if (f->auto_jit > 2)
        return xe_fail(st, XE_ERR_USAGE, "XLAC_FLAGS: --auto_jit=%d: expected 0 (off), 1 or 2",
                       f->auto_jit);
    if (f->max_cluster_size > 0 && f->max_cluster_size < f->min_cluster_size)
        return xe_fail(st, XE_ERR_USAGE,
                       "XLAC_FLAGS: --max_cluster_size=%d is smaller than --min_cluster_size=%d",
                       f->max_cluster_size, f->min_cluster_size);
    return XE_OK;
}

/* The words of text ("--name=value ..."), each applied to f in turn. */
static xe_code parse_words(const char *text, xlac_flags *f, xe_status *st)
{
    xe_code c = XE_OK;
    for (const char *p = text ? text : ""; c == XE_OK && *p;) {
        p += strspn(p, " \t\n");
        size_t len = strcspn(p, " \t\n");
        if (len)
            c = parse_word(p, len, f, st);
        p += len;
    }
    return c;
}

xe_code xlac_flags_parse(xlac_flags *f, const xlac_env *env, xe_status *st)
{
    xlac_flags_default(f);
    xe_code c = parse_auto_jit(env->auto_jit, &f->auto_jit, st);
    if (c == XE_OK)
        c = parse_log(env->log, &f->log_level, st);
    if (c == XE_OK)
        c = parse_words(env->flags, f, st);
    if (c == XE_OK)
        c = check_values(f, st);
    if (c == XE_OK)
        c = resolve_env(f, env, st);
    if (c == XE_OK && f->dump_inputs && !f->dump_to)
        c = xe_fail(st, XE_ERR_USAGE,
                    "XLAC_FLAGS: --dump_inputs needs XLAC_DUMP_TO=DIR (where the replay "
                    "folders go)");
    f->xg.level2 = f->auto_jit == 2;
    if (c != XE_OK)
        xlac_flags_free(f);
    return c;
}

/* ---- a session's configuration -------------------------------------------------- */

/* *dst = a copy of src (NULL stays NULL). */
static xe_code dup_string(char **dst, const char *src, xe_status *st)
{
    *dst = NULL;
    if (src && !(*dst = strdup(src)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    return XE_OK;
}

/* f's xg pointers that pointed at from's owned strings point at f's copies. */
static void repoint_xg(xlac_flags *f, const xlac_flags *from)
{
    if (from->cache_dir && f->xg.cache_dir == from->cache_dir)
        f->xg.cache_dir = f->cache_dir;
    if (from->dump_to && f->xg.dump_dir == from->dump_to)
        f->xg.dump_dir = f->dump_to;
    if (from->cc && f->xg.cc == from->cc)
        f->xg.cc = f->cc;
    if (from->tmp_dir && f->xg.tmp_dir == from->tmp_dir)
        f->xg.tmp_dir = f->tmp_dir;
}

xe_code xlac_flags_copy(xlac_flags *f, const xlac_flags *from, xe_status *st)
{
    *f = *from;
    f->ops_to_exclude = NULL;
    f->n_ops_to_exclude = 0;
    f->dump_graph_prefix = f->trace_path = f->summary_path = NULL;
    f->cache_dir = f->dump_to = f->cc = f->tmp_dir = NULL;
    xe_code c = XE_OK;
    if (from->n_ops_to_exclude &&
        !(f->ops_to_exclude = calloc((size_t)from->n_ops_to_exclude, sizeof(char *))))
        c = xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int i = 0; c == XE_OK && i < from->n_ops_to_exclude; i++, f->n_ops_to_exclude++)
        c = dup_string(&f->ops_to_exclude[i], from->ops_to_exclude[i], st);
    char **mine[] = {&f->dump_graph_prefix, &f->trace_path, &f->summary_path, &f->cache_dir,
                     &f->dump_to,           &f->cc,         &f->tmp_dir};
    const char *theirs[] = {
        from->dump_graph_prefix, from->trace_path, from->summary_path, from->cache_dir,
        from->dump_to,           from->cc,         from->tmp_dir};
    for (size_t i = 0; c == XE_OK && i < sizeof mine / sizeof mine[0]; i++)
        c = dup_string(mine[i], theirs[i], st);
    repoint_xg(f, from);
    if (c != XE_OK)
        xlac_flags_free(f);
    return c;
}

/* Whether row r holds the same value in a and b. */
static bool same_value(const flag_row *r, const xlac_flags *a, const xlac_flags *b)
{
    const void *x = field(r, (xlac_flags *)a), *y = field(r, (xlac_flags *)b);
    switch (r->kind) {
    case FLAG_BOOL:
        return *(const bool *)x == *(const bool *)y;
    case FLAG_INT:
        return *(const int *)x == *(const int *)y;
    case FLAG_LLONG:
        return *(const long long *)x == *(const long long *)y;
    case FLAG_STRING: {
        const char *s = *(char *const *)x, *t = *(char *const *)y;
        return s == t || (s && t && strcmp(s, t) == 0);
    }
    case FLAG_DEVICES:
    case FLAG_OPS:
        return true; /* session rows */
    }
    return true;
}

xe_code xlac_flags_apply(xlac_flags *f, const xlac_flags *process, const char *text, xe_status *st)
{
    if (xlac_flags_copy(f, process, st) != XE_OK)
        return st->code;
    xe_code c = parse_words(text, f, st);
    if (c == XE_OK && f->help)
        c = xe_fail(st, XE_ERR_USAGE,
                    "--help is not a session option (XLAC_FLAGS=--help lists the flags)");
    for (int i = 0; c == XE_OK && i < N_ROWS; i++)
        if (!rows[i].session && !same_value(&rows[i], f, process))
            c = xe_fail(
                st, XE_ERR_USAGE,
                "--%s is the process's, shared by every session (its compilation cache, trace or "
                "report): set it in XLAC_FLAGS before the first session, not per session",
                rows[i].name);
    if (c == XE_OK)
        c = check_values(f, st);
    f->xg.level2 = f->auto_jit == 2;
    if (c != XE_OK) {
        xe_status_prefix(st, "session options '%s': ", text);
        xlac_flags_free(f);
    }
    return c;
}
