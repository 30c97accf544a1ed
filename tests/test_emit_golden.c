/*
 * Golden emitter output: the C and CUDA text generated for every bench
 * graph, every example that plans, the real-model bench's ONNX models
 * (tests/data/golden/models: bench/models/make_models.py's mlp, encoder and
 * resnet through `xlac-run --to-xg`, each weight of more than 16 values
 * replaced by its first value, so the graph and its shapes stay and the
 * files stay small; each cluster that XLAC_AUTO_JIT=2 forms is planned on
 * its own), and a fixed set of random graphs
 * (fixed-shape and shape-generic), hashed and compared with the set
 * stored in tests/data/golden/emit.txt. The set was made before the op
 * table and backend refactoring, so a refactoring that claims to leave the
 * generated code unchanged is held to it byte for byte.
 *
 * XLAC_GOLDEN_DUMP=DIR writes every program's text to DIR/NAME.TARGET, to
 * diff two builds; XLAC_GOLDEN_WRITE=1 rewrites the stored set (only for a
 * change that means to alter the generated code: say so in its commit).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_impl.h"
#include "flags.h"
#include "plan.h"
#include "support/randgraph.h"
#include "xc.h"
#include "xlac/graph.h"
#include "xlac/io.h"
#include "xlac/op.h"
#include "xlac_plugin.h"

#define GOLDEN XLAC_SOURCE_DIR "/tests/data/golden/emit.txt"
#define N_RANDOM 120
#define MAX_LINES 4096

static xe_status st;

typedef struct golden {
    char *lines[MAX_LINES]; /* "NAME TARGET HASH" */
    int n;
} golden;

static const char *target_name(xg_target t)
{
    return t == XG_TARGET_CUDA ? "cuda" : "c";
}

/* Input types with every unknown dim set to 8. */
static void concrete_inputs(const xe_graph *g, xe_type *types)
{
    for (int k = 0; k < g->n_inputs; k++) {
        types[k] = g->nodes[g->inputs[k]]->type;
        for (int d = 0; d < types[k].shape.rank; d++)
            if (types[k].shape.dims[d] < 0)
                types[k].shape.dims[d] = 8;
    }
}

static void dump_text(const char *name, xg_target t, const char *src)
{
    const char *dir = getenv("XLAC_GOLDEN_DUMP");
    if (!dir || !*dir)
        return;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, target_name(t));
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(src, f);
    fclose(f);
}

/* Plans text's graph (generic or not) and appends a line per target; false if it does not plan. */
static bool add_graph(golden *out, const char *name, const char *text, bool generic)
{
    xe_graph *g = xe_parse_string(text, name, &st);
    cr_assert_not_null(g, "%s: %s", name, st.msg);
    xe_type types[64];
    cr_assert_leq(g->n_inputs, 64);
    concrete_inputs(g, types);
    xg_plan *p = NULL;
    if (xg_plan_build(g, types, generic, &p, &st) != XE_OK) {
        xe_graph_destroy(g);
        return false;
    }
    for (int t = 0; t < 2; t++) {
        xg_target target = t ? XG_TARGET_CUDA : XG_TARGET_C;
        char *src = xg_emit_program(p, target, &st);
        cr_assert_not_null(src, "%s (%s): %s", name, target_name(target), st.msg);
        char hex[33], line[512];
        xg_hash_hex(src, strlen(src), hex);
        snprintf(line, sizeof line, "%s%s %s %s", name, generic ? ":generic" : "", target_name(target), hex);
        dump_text(line, target, src);
        cr_assert_lt(out->n, MAX_LINES);
        out->lines[out->n++] = strdup(line);
        free(src);
    }
    xg_plan_destroy(p);
    xe_graph_destroy(g);
    return true;
}

/* The op the golden test's clusters are encapsulated into (never run). */
static int golden_launch_op(void)
{
    xe_op_def d = {.name = "golden_launch", .min_inputs = 0, .max_inputs = -1, .cls = XE_CLASS_COMPOSITE,
                   .device_prefix = "XLA_"};
    int op = xe_op_find(d.name, strlen(d.name));
    if (op < 0)
        op = xe_register_op(&d, &st);
    cr_assert_geq(op, 0, "%s", st.msg);
    return op;
}

/*
 * A model is planned as the plugin plans it at XLAC_AUTO_JIT=2: clustered
 * with the plugin's predicate, and each cluster's body planned on its own
 * (a whole model holds ops, such as a convolution, that no fused loop runs).
 */
static void add_clusters(golden *out, const char *name, const char *text)
{
    xe_graph *g = xe_parse_string(text, name, &st);
    cr_assert_not_null(g, "%s: %s", name, st.msg);
    xlac_flags f;
    xlac_flags_default(&f);
    f.auto_jit = 2;
    xc_options o;
    xlac_cluster_options(&f, &o);
    xc_clustering *c = xc_mark_for_compilation(g, &o, &st);
    cr_assert_not_null(c, "%s: %s", name, st.msg);
    xe_graph *e = xc_encapsulate(g, c, golden_launch_op(), &st);
    cr_assert_not_null(e, "%s: %s", name, st.msg);
    for (int i = 0; i < e->n_nodes; i++) {
        const xe_node *n = e->nodes[i];
        if (!n->body)
            continue;
        char *body = xe_write_string(n->body, &st);
        cr_assert_not_null(body, "%s: %s", name, st.msg);
        char part[512];
        snprintf(part, sizeof part, "%s/%s", name, n->name);
        cr_assert(add_graph(out, part, body, false), "%s does not plan: %s", part, st.msg);
        add_graph(out, part, body, true);
        free(body);
    }
    xe_graph_destroy(e);
    xc_clustering_destroy(c);
    xlac_flags_free(&f);
    xe_graph_destroy(g);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void add_files(golden *out, const char *dir, const char *const *names, size_t n, bool clustered)
{
    for (size_t i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s/%s.xg", XLAC_SOURCE_DIR, dir, names[i]);
        char *text = read_file(path);
        char name[256];
        snprintf(name, sizeof name, "%s/%s", dir, names[i]);
        if (clustered) {
            add_clusters(out, name, text);
        } else {
            add_graph(out, name, text, false);
            add_graph(out, name, text, true);
        }
        free(text);
    }
}

static void add_random(golden *out)
{
    for (uint64_t seed = 1; seed <= N_RANDOM; seed++) {
        randgraph_options o = {.n_ops = 4 + (int)(seed % 9), .more_ops = seed % 2 == 0,
                               .allow_unknown = seed % 3 == 0};
        char *text = randgraph_text(seed, &o);
        char name[64];
        snprintf(name, sizeof name, "random/%llu", (unsigned long long)seed);
        add_graph(out, name, text, o.allow_unknown);
        free(text);
    }
    char *chain = randgraph_chain(300);
    add_graph(out, "chain/300", chain, false);
    free(chain);
}

static void collect(golden *out)
{
    static const char *const bench[] = {"adam_step", "column_sum", "dynamic_batch", "fused_sum", "gelu",
                                        "layernorm_rows", "mlp_block", "softmax_rows", "transformer_block"};
    static const char *const examples[] = {"dynamic", "fused_sum", "mlp", "softmax"};
    static const char *const models[] = {"mlp", "encoder", "resnet"};
    add_files(out, "bench/graphs", bench, sizeof bench / sizeof bench[0], false);
    add_files(out, "examples", examples, sizeof examples / sizeof examples[0], false);
    add_files(out, "tests/data/golden/models", models, sizeof models / sizeof models[0], true);
    add_random(out);
}

static void write_golden(const golden *g)
{
    FILE *f = fopen(GOLDEN, "w");
    cr_assert_not_null(f, "cannot write %s", GOLDEN);
    fputs("# name target xxh3-128 of the generated program (tests/test_emit_golden.c)\n", f);
    for (int i = 0; i < g->n; i++)
        fprintf(f, "%s\n", g->lines[i]);
    fclose(f);
}

/* Every stored line is produced again, and nothing else is. */
Test(emit_golden, generated_text_is_unchanged, .timeout = 600)
{
    golden *now = calloc(1, sizeof *now);
    collect(now);
    cr_assert_gt(now->n, 2 * N_RANDOM / 2, "too few programs planned: %d", now->n);
    const char *w = getenv("XLAC_GOLDEN_WRITE");
    if (w && strcmp(w, "1") == 0)
        write_golden(now);
    char *stored = read_file(GOLDEN);
    int matched = 0, differ = 0;
    for (int i = 0; i < now->n; i++) {
        char needle[600];
        snprintf(needle, sizeof needle, "\n%s\n", now->lines[i]);
        if (strstr(stored, needle)) {
            matched++;
        } else {
            differ++;
            cr_log_error("not in the golden set: %s", now->lines[i]);
        }
    }
    int stored_lines = 0;
    for (const char *c = strchr(stored, '\n'); c && c[1]; c = strchr(c + 1, '\n'))
        stored_lines++;
    cr_expect_eq(differ, 0, "%d of %d programs differ from the golden set", differ, now->n);
    cr_expect_eq(stored_lines, now->n, "the golden set holds %d programs, this build made %d", stored_lines,
                 now->n);
    for (int i = 0; i < now->n; i++)
        free(now->lines[i]);
    free(now);
    free(stored);
}
