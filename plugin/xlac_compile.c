/*
 * xlac-compile: clusters a graph and compiles every cluster ahead of time
 * for a named target, at the graph's declared shapes, without running
 * anything (so it works without a GPU):
 *
 *   xlac-compile GRAPH.xg|MODEL.onnx... --target cuda|c [--arch sm_90] --out DIR [--level 1|2]
 *                [--seed-cache DIR] [--shape NAME=d0,d1,...]...
 *
 * --shape pins the dims of input NAME (its `?` ones, and the symbolic dims
 * of an ONNX model). A model that computes shapes from its symbolic dims
 * (docs/onnx.md, "Shapes computed at run time") needs every such input
 * pinned; it is then built at those sizes, as a session builds it per fed
 * size.
 *
 * With --target c each graph also gets one entry point for the whole graph
 * (NAME.so and NAME.h: xg_aot_graph), or one warning naming what keeps it
 * from having one (an op that runs per op, an input with `?` dims).
 * --seed-cache DIR also stores every program in the disk cache at DIR, so a
 * deployment whose plugin uses --cache_dir=DIR loads instead of compiling.
 *
 * Several graphs compile in one process, each into DIR/NAME (NAME: the
 * graph's file name without .xg), so only the first pays the compiler's
 * start-up. Exit status: 0 when every cluster compiled, 1 when one failed
 * to compile, 2 for a usage or graph error (unknown dims included; the
 * worst over the graphs). One progress line per cluster with its compile
 * time.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xlac/io.h"
#include "xlac/onnx.h"
#include "xlac/op.h"
#include "xlac/session.h"
#include "xlac_plugin.h"

typedef struct args {
    const char **graphs; /* GRAPH.xg... */
    int n_graphs;
    xg_target target; /* --target */
    bool have_target;
    int arch; /* --arch sm_NN (CUDA) */
    bool have_arch;
    const char *out;        /* --out DIR */
    int level;              /* --level 1|2 (default 2) */
    const char *seed_cache; /* --seed-cache DIR; NULL: none */
    const char **shapes;    /* --shape NAME=d0,d1,... (repeatable) */
    int n_shapes;
} args;

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: xlac-compile GRAPH.xg|MODEL.onnx... --target cuda|c [--arch sm_90] --out DIR "
        "[--level 1|2] [--seed-cache DIR]\n"
        "  --target c: also NAME.so + NAME.h, one entry point int NAME_run(inputs..., outputs...)\n"
        "  --seed-cache DIR: also store the programs in the plugin's disk cache at DIR\n"
        "  several graphs: one process, each graph's files in DIR/NAME (NAME.xg)\n"
        "  --shape NAME=d0,d1,...: pin input NAME's dims (repeatable; needed for a model that\n"
        "    computes shapes from symbolic dims)\n");
}

/* sm_XY, compute_XY (taken as sm_XY) or XY. */
static bool parse_arch(const char *v, int *arch)
{
    if (strncmp(v, "sm_", 3) == 0)
        v += 3;
    else if (strncmp(v, "compute_", 8) == 0)
        v += 8;
    char *end;
    long a = strtol(v, &end, 10);
    if (*v == '\0' || *end || a < 10 || a > 999)
        return false;
    *arch = (int)a;
    return true;
}

/* One option with its value; returns false on a usage error (message printed). */
static bool parse_option(args *a, const char *opt, const char *v)
{
    static const char *const known[] = {"--target", "--arch",       "--out",
                                        "--level",  "--seed-cache", "--shape"};
    bool is_known = false;
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
        is_known |= strcmp(opt, known[k]) == 0;
    if (!is_known) {
        fprintf(stderr, "xlac-compile: unknown option %s\n", opt);
        return false;
    }
    if (!v) {
        fprintf(stderr, "xlac-compile: %s needs a value\n", opt);
        return false;
    }
    if (strcmp(opt, "--target") == 0 && xg_target_by_name(v, &a->target)) {
        a->have_target = true;
    } else if (strcmp(opt, "--arch") == 0 && parse_arch(v, &a->arch)) {
        a->have_arch = true;
    } else if (strcmp(opt, "--out") == 0) {
        a->out = v;
    } else if (strcmp(opt, "--seed-cache") == 0) {
        a->seed_cache = v;
    } else if (strcmp(opt, "--shape") == 0 && strchr(v, '=') && strchr(v, '=') != v) {
        a->shapes[a->n_shapes++] = v;
    } else if (strcmp(opt, "--level") == 0 && (strcmp(v, "1") == 0 || strcmp(v, "2") == 0)) {
        a->level = v[0] - '0';
    } else {
        fprintf(stderr, "xlac-compile: bad option %s %s\n", opt, v);
        return false;
    }
    return true;
}

static bool parse_args(int argc, char **argv, args *a)
{
    *a = (args){.level = 2, .arch = xe_gpu_available() ? xe_gpu_arch() : 90};
    a->graphs = calloc((size_t)argc, sizeof *a->graphs);
    a->shapes = calloc((size_t)argc, sizeof *a->shapes);
    if (!a->graphs || !a->shapes)
        return false;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--", 2) != 0) {
            a->graphs[a->n_graphs++] = argv[i];
        } else if (strchr(argv[i], '=')) { /* --name=value */
            char opt[64];
            size_t n = (size_t)(strchr(argv[i], '=') - argv[i]);
            snprintf(opt, sizeof opt, "%.*s", (int)(n < sizeof opt ? n : sizeof opt - 1), argv[i]);
            if (!parse_option(a, opt, argv[i] + n + 1))
                return false;
        } else if (!parse_option(a, argv[i], i + 1 < argc ? argv[i + 1] : NULL)) {
            return false;
        } else {
            i++;
        }
    }
    if (!a->n_graphs || !a->have_target || !a->out) {
        fprintf(stderr, "xlac-compile: GRAPH, --target and --out are required\n");
        return false;
    }
    if (a->have_arch && !xg_target_get(a->target)->uses_arch) {
        fprintf(stderr, "xlac-compile: --arch applies to --target cuda only\n");
        return false;
    }
    return true;
}

/* --seed-cache DIR: created (0700) and writable, checked before anything compiles. */
static bool seed_dir_usable(const char *dir)
{
    xe_status st;
    xe_status_clear(&st);
    if (!dir)
        return true;
    if (xe_mkdirs(dir, 0700, &st) != XE_OK || access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "xlac-compile: --seed-cache %s: not a folder that can be written\n", dir);
        return false;
    }
    return true;
}

/* Every op on the target's device (unique stays on the CPU: it never compiles). */
static void place_for_target(xe_graph *g, xg_target target)
{
    for (int i = 0; i < g->n_nodes; i++) {
        xe_node *n = g->nodes[i];
        const xe_op_def *d = xe_op_get(n->op);
        bool cpu_only = n->op == XE_OP_INPUT || !d || (d->flags & XE_OPF_CPU_ONLY);
        n->device = cpu_only ? XE_DEV_CPU : xg_target_device(target);
    }
}

/* The clustered graph (launch nodes are `call` nodes here), NULL on error. */
static xe_graph *cluster(const xe_graph *g, const args *a, xlac_flags *f, xe_status *st)
{
    xc_options o;
    xlac_cluster_options(f, &o);
    for (int d = 0; d < XE_DEV_MAX; d++)
        o.devices[d] = d == xg_target_device(a->target);
    xc_clustering *c = xc_mark_for_compilation(g, &o, st);
    if (!c)
        return NULL;
    xe_graph *ng = c->n_clusters ? xc_encapsulate(g, c, XE_OP_CALL, st) : NULL;
    if (!c->n_clusters)
        fprintf(stderr, "xlac-compile: %s: no clusters at level %d\n", g->file, a->level);
    xc_clustering_destroy(c);
    return ng;
}

static bool known_inputs(const xe_node *launch, const char *name, xe_status *st)
{
    const xe_graph *b = launch->body;
    for (int i = 0; i < b->n_inputs; i++) {
        const xe_node *in = b->nodes[b->inputs[i]];
        if (!xe_shape_is_known(&in->type.shape)) {
            char t[128];
            xe_fail(st, XE_ERR_GRAPH,
                    "%s: input %s is %s: ahead-of-time compilation needs "
                    "fully declared shapes",
                    name, in->name, xe_type_str(&in->type, t, sizeof t));
            return false;
        }
    }
    return true;
}

/* Compiles every launch node's body; returns the exit status. */
static int compile_all(const xe_graph *ng, const args *a, const char *out, const xlac_flags *f)
{
    int status = 0;
    for (int i = 0; i < ng->n_nodes; i++) {
        const xe_node *n = ng->nodes[i];
        const char *name = xe_node_attr_string(n, "@cluster", NULL);
        xe_status st;
        xe_status_clear(&st);
        if (!n->body || !name)
            continue;
        if (!known_inputs(n, name, &st)) {
            fprintf(stderr, "xlac-compile: %s: %s\n", ng->file, st.msg);
            return 2;
        }
        double t0 = xe_now_us(), compiler_ms = 0;
        bool ptx = false;
        xe_code c = xg_compile_ahead(n->body, name, a->target, a->arch, out, a->seed_cache, &f->xg,
                                     &compiler_ms, &ptx, &st);
        double ms = (xe_now_us() - t0) / 1e3;
        int ops = n->body->n_nodes - n->body->n_inputs;
        if (c == XE_OK) {
            printf("xlac-compile: %s%s%s (%d ops): compiled in %.1f ms (%s %.1f ms)\n",
                   a->n_graphs > 1 ? ng->file : "", a->n_graphs > 1 ? ": " : "", name, ops, ms,
                   xg_compiler_words(a->target, ptx), compiler_ms);
        } else {
            printf("xlac-compile: %s (%d ops): FAILED after %.1f ms\n", name, ops, ms);
            fprintf(stderr, "xlac-compile: %s: %s: %s\n", ng->file, name, st.msg);
            status = 1;
        }
        fflush(stdout);
    }
    return status;
}

/* NAME for graph PATH/NAME.xg (or .onnx). */
static void graph_name(const char *graph, char *buf, size_t len)
{
    const char *base = strrchr(graph, '/') ? strrchr(graph, '/') + 1 : graph;
    size_t n = strlen(base);
    if (n > 3 && strcmp(base + n - 3, ".xg") == 0)
        n -= 3;
    else if (n > 5 && strcmp(base + n - 5, ".onnx") == 0)
        n -= 5;
    snprintf(buf, len, "%.*s", (int)n, base);
}

/* DIR/NAME for graph PATH/NAME.xg. */
static void graph_out_dir(const char *dir, const char *graph, char *buf, size_t len)
{
    char name[1024];
    graph_name(graph, name, sizeof name);
    snprintf(buf, len, "%s/%s", dir, name);
}

/* The folder of libxlac_executor.so, which the entry point's matmul steps call. */
static void executor_dir(char *buf, size_t len)
{
    Dl_info info;
    snprintf(buf, len, ".");
    if (dladdr((void *)xe_graph_infer, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
        snprintf(buf, len, "%s", info.dli_fname);
        *strrchr(buf, '/') = '\0';
    }
}

/* --target c: NAME.so + NAME.h, one entry point for graph g (clustered), or a warning saying why
 * not. */
static void entry_point(const xe_graph *g, const char *path, const char *out, const xlac_flags *f)
{
    char name[1024], lib[4096], so[4096];
    graph_name(path, name, sizeof name);
    executor_dir(lib, sizeof lib);
    xe_status st;
    xe_status_clear(&st);
    if (xe_mkdirs(out, 0777, &st) == XE_OK &&
        xg_aot_graph(g, name, out, lib, &f->xg, so, sizeof so, &st) == XE_OK)
        printf("xlac-compile: %s: the whole graph as one entry point (declared in %.*s.h)\n", so,
               (int)strlen(so) - 3, so);
    else
        fprintf(stderr, "xlac-compile: warning: %s\n", st.msg);
    fflush(stdout);
}

/* Several graphs go to DIR/NAME each: two with one NAME would overwrite each other's files. */
static bool distinct_out_dirs(const args *a)
{
    for (int i = 0; a->n_graphs > 1 && i < a->n_graphs; i++)
        for (int j = 0; j < i; j++) {
            char di[4096], dj[4096];
            graph_out_dir(a->out, a->graphs[i], di, sizeof di);
            graph_out_dir(a->out, a->graphs[j], dj, sizeof dj);
            if (strcmp(di, dj) == 0) {
                fprintf(stderr,
                        "xlac-compile: %s and %s would both be written to %s; compile them into "
                        "different --out folders\n",
                        a->graphs[j], a->graphs[i], di);
                return false;
            }
        }
    return true;
}

/* "d0,d1,..." into s; false when it is not a list of sizes. */
static bool parse_dims(const char *v, xe_shape *s)
{
    s->rank = 0;
    while (*v && s->rank < XE_MAX_RANK) {
        char *end;
        long long d = strtoll(v, &end, 10);
        if (end == v || d < 0 || (*end && *end != ','))
            return false;
        s->dims[s->rank++] = d;
        v = *end ? end + 1 : end;
    }
    return !*v;
}

/* Input k's pinned shape: its --shape, else its declared one; false (message in st) if neither
 * serves. */
static bool pinned(const xe_graph *g, int k, const args *a, xe_shape *out, xe_status *st)
{
    const xe_node *in = g->nodes[g->inputs[k]];
    *out = in->type.shape;
    for (int j = 0; j < a->n_shapes; j++) {
        size_t n = (size_t)(strchr(a->shapes[j], '=') - a->shapes[j]);
        if (strlen(in->name) != n || strncmp(a->shapes[j], in->name, n))
            continue;
        bool ok = parse_dims(a->shapes[j] + n + 1, out) && out->rank == in->type.shape.rank;
        for (int d = 0; ok && d < out->rank; d++)
            ok = in->type.shape.dims[d] < 0 || in->type.shape.dims[d] == out->dims[d];
        if (!ok) {
            char t[128];
            xe_fail(st, XE_ERR_USAGE, "--shape %s: input %s is %s", a->shapes[j], in->name,
                    xe_type_str(&in->type, t, sizeof t));
        }
        return ok;
    }
    if (!g->maker)
        return true;
    for (int d = 0; d < out->rank; d++)
        if (out->dims[d] < 0) {
            xe_fail(st, XE_ERR_USAGE,
                    "%s: the model computes shapes from input %s's symbolic dims: pin "
                    "them with --shape %s=d0,d1,...",
                    g->file, in->name, in->name);
            return false;
        }
    return true;
}

/*
 * g with its inputs pinned (--shape): a graph built per size is built at
 * them; another graph's `?` dims take them. g itself, a new graph (g
 * destroyed), or NULL (g destroyed, message in st).
 */
static xe_graph *pin_shapes(xe_graph *g, const args *a, xe_status *st)
{
    xe_shape *s = calloc((size_t)g->n_inputs + 1, sizeof *s);
    bool ok = s != NULL;
    for (int k = 0; ok && k < g->n_inputs; k++)
        ok = pinned(g, k, a, &s[k], st);
    xe_graph *out = ok && g->maker ? xe_graph_specialise(g, s, st) : ok ? g : NULL;
    for (int k = 0; out == g && k < g->n_inputs; k++)
        g->nodes[g->inputs[k]]->type.shape = s[k];
    free(s);
    if (out != g)
        xe_graph_destroy(g);
    return out;
}

/* Clusters and compiles one graph into out; returns its exit status. */
static int compile_graph(const char *path, const char *out, const args *a, xlac_flags *f)
{
    xe_status st;
    xe_status_clear(&st);
    int status = 2;
    xe_graph *g = xe_load_graph(path, NULL, &st), *ng = NULL; /* .xg or ONNX, by content */
    if (g)
        g = pin_shapes(g, a, &st);
    if (g && xe_graph_infer(g, &st) == XE_OK) {
        place_for_target(g, a->target);
        ng = cluster(g, a, f, &st);
        xe_status ds;
        if (ng && xe_mkdirs(out, 0777, &ds) != XE_OK)
            fprintf(stderr, "xlac-compile: %s\n", ds.msg);
        else if (ng)
            status = compile_all(ng, a, out, f);
        else if (st.code == XE_OK)
            status = 0; /* nothing to compile */
        if (status == 0 && xg_target_get(a->target)->host_program)
            entry_point(ng ? ng : g, path, out, f);
    }
    if (status == 2 && st.code != XE_OK)
        fprintf(stderr, "xlac-compile: %s\n", st.msg);
    xe_graph_destroy(ng);
    xe_graph_destroy(g);
    return status;
}

/* The target this build can compile for, at an architecture NVRTC knows; false (said on stderr) if
 * not. */
static bool target_usable(const args *a)
{
    const xg_target_info *ti = xg_target_get(a->target);
    if (ti->missing) {
        fprintf(stderr, "xlac-compile: --target %s: %s\n", ti->name, ti->missing);
        return false;
    }
    if (ti->uses_arch && !xg_nvrtc_arch_for(a->arch)) {
        fprintf(stderr, "xlac-compile: --arch %d: NVRTC knows no architecture that old\n", a->arch);
        return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    args a;
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (!parse_args(argc, argv, &a)) {
        usage(stderr);
        free(a.graphs);
        free(a.shapes);
        return 2;
    }
    if (!target_usable(&a) || !distinct_out_dirs(&a) || !seed_dir_usable(a.seed_cache)) {
        free(a.graphs);
        free(a.shapes);
        return 2;
    }
    /* settings come from the arguments; of the environment only CC and TMPDIR apply */
    xlac_env env;
    xlac_env_read(&env);
    env.auto_jit = env.flags = env.dump_graph_prefix = env.dump_to = NULL;
    xlac_flags f;
    xe_status st;
    if (xlac_flags_parse(&f, &env, &st) != XE_OK) {
        fprintf(stderr, "xlac-compile: %s\n", st.msg);
        free(a.graphs);
        free(a.shapes);
        return 2;
    }
    f.auto_jit = a.level;
    f.xg.level2 = a.level == 2;
    f.xg.library_conv = false; /* the AOT program has no conv step (aot_cluster.c) */
    int status = 0;
    for (int i = 0; i < a.n_graphs; i++) {
        char out[4096];
        if (a.n_graphs == 1)
            snprintf(out, sizeof out, "%s", a.out);
        else
            graph_out_dir(a.out, a.graphs[i], out, sizeof out);
        int s = compile_graph(a.graphs[i], out, &a, &f);
        status = s > status ? s : status;
    }
    xlac_flags_free(&f);
    free(a.graphs);
    free(a.shapes);
    return status;
}
