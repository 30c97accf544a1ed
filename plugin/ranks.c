/*
 * Every rank of a job must run the same clustered graph: the same clusters,
 * launched in the same order, between the same collectives, or the ranks'
 * collectives pair up wrongly and the job hangs or computes garbage.
 * Clustering is deterministic, so equal graphs and flags give equal
 * clusters; this check catches the rest (a graph file, a flag or a plugin
 * version that differs on one rank). At session start, with more than one
 * rank, each rank hashes its clustered graph (every node in order: op,
 * name, inputs, a launch's fingerprint) and each launch node, and the
 * ranks all-gather the hashes through the executor's collective engine.
 * On a mismatch every rank fails with the same message, naming the first
 * cluster that differs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xlac/comm.h"
#include "xlac_plugin.h"

/* Hashes sent per rank: the whole graph, the launch count, then launches 0..N-3. */
#define RANK_HASHES 64

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
    return fnv(h, s ? s : "", s ? strlen(s) + 1 : 1);
}

/* One node: op, name, inputs and (a launch) its body's fingerprint. */
static uint64_t node_hash(const xe_node *n)
{
    uint64_t h = fnv_str(0xcbf29ce484222325ULL, xe_op_name(n->op));
    h = fnv_str(h, n->name);
    h = fnv(h, n->inputs, sizeof *n->inputs * (size_t)n->n_inputs);
    return fnv_str(h, xe_node_attr_string(n, "@fingerprint", ""));
}

/* v[0]: the graph, v[1]: the launch count, v[2 + k]: launch k. */
static void graph_hashes(const xe_graph *g, int launch_op, int64_t *v)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    int k = 0;
    memset(v, 0, RANK_HASHES * sizeof *v);
    for (int i = 0; i < g->n_nodes; i++) {
        uint64_t nh = node_hash(g->nodes[i]);
        h = fnv(h, &nh, sizeof nh);
        if (g->nodes[i]->op == launch_op && k < RANK_HASHES - 2)
            v[2 + k] = (int64_t)fnv(nh, &i, sizeof i);
        k += g->nodes[i]->op == launch_op;
    }
    v[0] = (int64_t)h;
    v[1] = k;
}

/* Name of this rank's k-th launch node, or "(none)". */
static const char *launch_name(const xe_graph *g, int launch_op, int k)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->op == launch_op && k-- == 0)
            return g->nodes[i]->name;
    return "(none)";
}

/* The first hash index where some rank differs from rank 0; -1 if none. */
static int first_difference(const int64_t *all, int size, int *rank_out)
{
    static const int order[] = {2, 1, 0}; /* launches first (they name the culprit), count, graph */
    for (int o = 0; o < 3; o++)
        for (int j = order[o]; j < (o ? order[o] + 1 : RANK_HASHES); j++)
            for (int r = 1; r < size; r++)
                if (all[r * RANK_HASHES + j] != all[j]) {
                    *rank_out = r;
                    return j;
                }
    return -1;
}

static xe_code mismatch(const xe_graph *g, int launch_op, const int64_t *all, int j, int r,
                        xe_status *st)
{
    const char *what = "the clustered graph differs across ranks (every rank must run the same "
                       "graph, with the same flags and plugin)";
    int me = xe_comm_rank();
    if (j == 0)
        return xe_fail(
            st, XE_ERR_RUNTIME,
            "%s: rank 0 and rank %d have the same clusters but differ in the ops between them",
            what, r);
    long long n0 = (long long)all[1], nr = (long long)all[r * RANK_HASHES + 1];
    int k = j == 1 ? RANK_HASHES - 2 : j - 2;
    return xe_fail(
        st, XE_ERR_RUNTIME,
        "%s: first differing cluster: launch %d in run order (%s on rank %d); rank 0 has "
        "%lld clusters, rank %d has %lld",
        what, k, launch_name(g, launch_op, k), me, n0, r, nr);
}

xe_code xlac_check_ranks(const xe_graph *g, int launch_op, xe_status *st)
{
    const xe_comm *c = xe_comm_get();
    if (c->size <= 1)
        return XE_OK;
    int64_t mine[RANK_HASHES];
    int64_t *all = malloc(sizeof *all * RANK_HASHES * (size_t)c->size);
    if (!all)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory checking the ranks' graphs");
    graph_hashes(g, launch_op, mine);
    xe_code code = c->all_gather(c->self, mine, all, RANK_HASHES, XE_I64, st);
    int r = 0, j = code == XE_OK ? first_difference(all, c->size, &r) : -1;
    if (code != XE_OK)
        xe_status_prefix(st, "checking that every rank has the same clustered graph: ");
    else if (j >= 0)
        code = mismatch(g, launch_op, all, j, r, st);
    free(all);
    return code;
}
