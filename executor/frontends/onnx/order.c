/*
 * The order nodes are built in: topological, as onnxruntime sorts them. ONNX
 * asks for a graph's nodes in topological order, but tools write them
 * otherwise: convert_float_to_float16 with keep_io_types puts the Casts of
 * the graph inputs at the end of the node list, and the first node that
 * reads one said "input ... is not defined before it is used".
 *
 * Stable Kahn: among the nodes whose inputs are all produced (by earlier
 * nodes, or not by any node of this graph: graph inputs, initializers, an
 * outer graph's values), the one first in the file goes next, so a graph
 * that is already in order keeps it exactly. A node with a subgraph depends
 * on every value of this graph its subgraphs read. Nodes on a cycle keep
 * their file order after the others (the build then reports them as today).
 */
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h" /* xe_hash.h: uthash that reports running out of memory */

typedef struct producer {
    const char *name;
    size_t node;
    UT_hash_handle hh;
} producer;

typedef struct order_state {
    const Onnx__GraphProto *g;
    producer *by_name;
    size_t *indeg, **users, *n_users, *cap_users;
    bool failed;
} order_state;

static void add_user(order_state *o, size_t from, size_t to)
{
    if (o->n_users[from] == o->cap_users[from]) {
        size_t cap = o->cap_users[from] ? 2 * o->cap_users[from] : 4;
        size_t *u = realloc(o->users[from], cap * sizeof *u);
        if (!u) {
            o->failed = true;
            return;
        }
        o->users[from] = u;
        o->cap_users[from] = cap;
    }
    o->users[from][o->n_users[from]++] = to;
    o->indeg[to]++;
}

/* Node k reads value name (in its inputs or its subgraphs): an edge from its producer, if any. */
static void depends(order_state *o, size_t k, const char *name)
{
    producer *p = NULL;
    if (name && name[0])
        HASH_FIND_STR(o->by_name, name, p);
    if (p && p->node != k)
        add_user(o, p->node, k);
}

/* Every value the nodes of subgraph g (and theirs, to depth) read, as dependencies of node k. */
static void subgraph_reads(order_state *o, size_t k, const Onnx__GraphProto *g, int depth)
{
    for (size_t i = 0; g && depth < OX_MAX_NESTING && i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t j = 0; j < n->n_input; j++)
            depends(o, k, n->input[j]);
        for (size_t a = 0; a < n->n_attribute; a++)
            subgraph_reads(o, k, n->attribute[a]->g, depth + 1);
    }
}

/* Pops the smallest index of a binary min-heap of n entries. */
static size_t heap_pop(size_t *h, size_t *n)
{
    size_t top = h[0], i = 0, x = h[--*n];
    for (size_t c; (c = 2 * i + 1) < *n; i = c) {
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (x <= h[c])
            break;
        h[i] = h[c];
    }
    h[i] = x;
    return top;
}

static void heap_push(size_t *h, size_t *n, size_t v)
{
    size_t i = (*n)++;
    for (; i > 0 && h[(i - 1) / 2] > v; i = (i - 1) / 2)
        h[i] = h[(i - 1) / 2];
    h[i] = v;
}

/* The edges: each node's inputs and its subgraphs' reads, from their producers. */
static void build_edges(order_state *o, producer *cells)
{
    const Onnx__GraphProto *g = o->g;
    size_t used = 0;
    for (size_t k = 0; k < g->n_node; k++)
        for (size_t j = 0; j < g->node[k]->n_output; j++) {
            const char *name = g->node[k]->output[j];
            producer *p = NULL;
            if (!name || !name[0])
                continue;
            HASH_FIND_STR(o->by_name, name, p);
            if (p) /* produced twice: the first producer counts (the build reports the second) */
                continue;
            cells[used] = (producer){.name = name, .node = k};
            HASH_ADD_KEYPTR(hh, o->by_name, name, strlen(name), &cells[used]);
            if (!xe_hash_added(&cells[used])) {
                o->failed = true;
                return;
            }
            used++;
        }
    for (size_t k = 0; k < g->n_node && !o->failed; k++) {
        const Onnx__NodeProto *n = g->node[k];
        for (size_t j = 0; j < n->n_input; j++)
            depends(o, k, n->input[j]);
        for (size_t a = 0; a < n->n_attribute; a++)
            subgraph_reads(o, k, n->attribute[a]->g, 1);
    }
}

/* Kahn's walk into out; returns how many nodes it placed (fewer: a cycle). */
static size_t walk(order_state *o, size_t *heap, size_t *out)
{
    size_t n = o->g->n_node, hn = 0, placed = 0;
    for (size_t k = 0; k < n; k++)
        if (!o->indeg[k])
            heap_push(heap, &hn, k);
    while (hn) {
        size_t k = heap_pop(heap, &hn);
        out[placed++] = k;
        for (size_t u = 0; u < o->n_users[k]; u++)
            if (--o->indeg[o->users[k][u]] == 0)
                heap_push(heap, &hn, o->users[k][u]);
    }
    return placed;
}

size_t *ox_node_order(const Onnx__GraphProto *g)
{
    size_t n = g->n_node, outs = 0;
    for (size_t k = 0; k < n; k++)
        outs += g->node[k]->n_output;
    order_state o = {.g = g};
    size_t *out = malloc((n + 1) * sizeof *out), *heap = malloc((n + 1) * sizeof *heap);
    producer *cells = malloc((outs + 1) * sizeof *cells);
    o.indeg = calloc(n + 1, sizeof *o.indeg);
    o.users = calloc(n + 1, sizeof *o.users);
    o.n_users = calloc(n + 1, sizeof *o.n_users);
    o.cap_users = calloc(n + 1, sizeof *o.cap_users);
    o.failed = !out || !heap || !cells || !o.indeg || !o.users || !o.n_users || !o.cap_users;
    if (!o.failed)
        build_edges(&o, cells);
    size_t placed = o.failed ? 0 : walk(&o, heap, out);
    bool *done = o.failed ? NULL : calloc(n + 1, sizeof *done);
    for (size_t i = 0; done && i < placed; i++)
        done[out[i]] = true;
    for (size_t k = 0; done && k < n; k++) /* a cycle: the rest in file order */
        if (!done[k])
            out[placed++] = k;
    HASH_CLEAR(hh, o.by_name);
    for (size_t k = 0; o.users && k < n; k++)
        free(o.users[k]);
    free(o.users), free(o.n_users), free(o.cap_users), free(o.indeg), free(cells), free(heap),
        free(done);
    if (o.failed || !done) {
        free(out);
        return NULL;
    }
    return out;
}
