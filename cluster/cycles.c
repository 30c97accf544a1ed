/*
 * Incremental cycle detection (see cycles.h). Every live node carries a
 * rank such that each edge x -> y has rank[x] < rank[y]. Inserting an edge
 * that already agrees with the order costs nothing; otherwise a forward
 * search from y and a backward search from x, bounded by the two ranks,
 * either find x (a cycle: refuse) or give the two affected sets, whose
 * ranks are then reassigned backward set first. A contraction of a and b
 * is allowed when, with the direct edges between them removed, neither
 * reaches the other: then no path leaves the merged node and comes back.
 */
#include <stdlib.h>
#include <string.h>

#include "cycles.h"
#include "xlac/vec.h"

typedef struct xc_list {
    int n, cap;
    int *v;
} xc_list;

typedef struct xc_cnode {
    int rank;
    int visited; /* stamp of the last search that reached this node */
    xc_list out; /* successors */
    xc_list in;  /* predecessors */
} xc_cnode;

struct xc_cycles {
    int n;
    xc_cnode *nodes;
    int stamp;      /* current search stamp */
    xc_list stack;  /* DFS work list */
    xc_list deltaf; /* forward set of the last insertion */
    xc_list deltab; /* backward set of the last insertion */
    xc_list ranks;  /* scratch for reordering */
};

/* ---- small int lists ------------------------------------------------------ */

static bool list_push(xc_list *l, int x)
{
    int *v = XE_VEC_GROW(l->v, l->cap, l->n + 1, 4);
    if (!v)
        return false;
    l->v = v;
    l->v[l->n++] = x;
    return true;
}

static bool list_has(const xc_list *l, int x)
{
    for (int i = 0; i < l->n; i++)
        if (l->v[i] == x)
            return true;
    return false;
}

static void list_remove(xc_list *l, int x)
{
    for (int i = 0; i < l->n; i++) {
        if (l->v[i] == x) {
            l->v[i] = l->v[--l->n];
            return;
        }
    }
}

/* ---- lifecycle -------------------------------------------------------------- */

xc_cycles *xc_cycles_new(int n)
{
    xc_cycles *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->n = n;
    c->nodes = calloc((size_t)(n > 0 ? n : 1), sizeof *c->nodes);
    if (!c->nodes) {
        free(c);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        c->nodes[i].rank = i;
    return c;
}

void xc_cycles_destroy(xc_cycles *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++) {
        free(c->nodes[i].out.v);
        free(c->nodes[i].in.v);
    }
    free(c->nodes);
    free(c->stack.v);
    free(c->deltaf.v);
    free(c->deltab.v);
    free(c->ranks.v);
    free(c);
}

int xc_cycles_rank(const xc_cycles *c, int x)
{
    return c->nodes[x].rank;
}

int xc_cycles_degree(const xc_cycles *c, int x)
{
    return c->nodes[x].in.n + c->nodes[x].out.n;
}

bool xc_cycles_has_edge(const xc_cycles *c, int x, int y)
{
    return list_has(&c->nodes[x].out, y);
}

void xc_cycles_remove_edge(xc_cycles *c, int x, int y)
{
    list_remove(&c->nodes[x].out, y);
    list_remove(&c->nodes[y].in, x);
}

static bool add_edge(xc_cycles *c, int x, int y)
{
    if (!list_push(&c->nodes[x].out, y))
        return false;
    if (!list_push(&c->nodes[y].in, x)) {
        c->nodes[x].out.n--;
        return false;
    }
    return true;
}

/* ---- bounded searches ----------------------------------------------------- */

/*
 * Depth-first search from start along out edges (forward) or in edges,
 * visiting only nodes whose rank is <= bound (forward) or >= bound
 * (backward); visited nodes go to found. Returns 1 when target was
 * reached (-1: none), 0 otherwise, -1 when out of memory.
 */
static int search(xc_cycles *c, int start, int bound, bool forward, int target, xc_list *found)
{
    c->stack.n = 0;
    found->n = 0;
    if (!list_push(&c->stack, start))
        return -1;
    c->nodes[start].visited = c->stamp;
    while (c->stack.n) {
        int x = c->stack.v[--c->stack.n];
        if (!list_push(found, x))
            return -1;
        const xc_list *next = forward ? &c->nodes[x].out : &c->nodes[x].in;
        for (int i = 0; i < next->n; i++) {
            int y = next->v[i];
            xc_cnode *ny = &c->nodes[y];
            if (y == target)
                return 1;
            if (ny->visited == c->stamp || (forward ? ny->rank > bound : ny->rank < bound))
                continue;
            ny->visited = c->stamp;
            if (!list_push(&c->stack, y))
                return -1;
        }
    }
    return 0;
}

bool xc_cycles_is_reachable(xc_cycles *c, int x, int y)
{
    if (x == y)
        return true;
    if (c->nodes[x].rank > c->nodes[y].rank)
        return false;
    c->stamp++;
    return search(c, x, c->nodes[y].rank, true, y, &c->deltaf) != 0;
}

/* ---- reordering ------------------------------------------------------------ */

/* Insertion sort of l by key(v) = rank of node v (keyed) or v itself. */
static void sort_list(xc_list *l, const xc_cnode *keyed)
{
    for (int i = 1; i < l->n; i++) {
        int v = l->v[i], key = keyed ? keyed[v].rank : v, j = i - 1;
        while (j >= 0 && (keyed ? keyed[l->v[j]].rank : l->v[j]) > key) {
            l->v[j + 1] = l->v[j];
            j--;
        }
        l->v[j + 1] = v;
    }
}

/* Gives deltab then deltaf the sorted pool of their own ranks. */
static bool reorder(xc_cycles *c)
{
    sort_list(&c->deltab, c->nodes);
    sort_list(&c->deltaf, c->nodes);
    c->ranks.n = 0;
    for (int i = 0; i < c->deltab.n; i++)
        if (!list_push(&c->ranks, c->nodes[c->deltab.v[i]].rank))
            return false;
    for (int i = 0; i < c->deltaf.n; i++)
        if (!list_push(&c->ranks, c->nodes[c->deltaf.v[i]].rank))
            return false;
    sort_list(&c->ranks, NULL);
    int k = 0;
    for (int i = 0; i < c->deltab.n; i++)
        c->nodes[c->deltab.v[i]].rank = c->ranks.v[k++];
    for (int i = 0; i < c->deltaf.n; i++)
        c->nodes[c->deltaf.v[i]].rank = c->ranks.v[k++];
    return true;
}

int xc_cycles_insert_edge(xc_cycles *c, int x, int y)
{
    if (x == y || xc_cycles_has_edge(c, x, y))
        return 1;
    xc_cnode *nx = &c->nodes[x], *ny = &c->nodes[y];
    if (nx->rank < ny->rank)
        return add_edge(c, x, y) ? 1 : -1;
    /* 1. forward from y among ranks <= rank[x]: finding x means a cycle */
    c->stamp++;
    int r = search(c, y, nx->rank, true, x, &c->deltaf);
    if (r != 0)
        return r > 0 ? 0 : -1;
    /* 2. backward from x among ranks >= rank[y] */
    c->stamp++;
    if (search(c, x, ny->rank, false, -1, &c->deltab) < 0)
        return -1;
    /* 3. the backward set takes the lower ranks */
    if (!reorder(c))
        return -1;
    return add_edge(c, x, y) ? 1 : -1;
}

/* ---- contraction ------------------------------------------------------------ */

/* Moves every edge of b onto a (b has no edge to or from a any more). */
static int move_edges(xc_cycles *c, int a, int b)
{
    xc_cnode *nb = &c->nodes[b];
    while (nb->out.n) {
        int z = nb->out.v[nb->out.n - 1];
        xc_cycles_remove_edge(c, b, z);
        int r = xc_cycles_insert_edge(c, a, z);
        if (r != 1)
            return r;
    }
    while (nb->in.n) {
        int w = nb->in.v[nb->in.n - 1];
        xc_cycles_remove_edge(c, w, b);
        int r = xc_cycles_insert_edge(c, w, a);
        if (r != 1)
            return r;
    }
    return 1;
}

int xc_cycles_contract(xc_cycles *c, int a, int b)
{
    if (a == b)
        return 1;
    bool ab = xc_cycles_has_edge(c, a, b), ba = xc_cycles_has_edge(c, b, a);
    if (ab)
        xc_cycles_remove_edge(c, a, b);
    if (ba)
        xc_cycles_remove_edge(c, b, a);
    if (xc_cycles_is_reachable(c, a, b) || xc_cycles_is_reachable(c, b, a)) {
        /* another path: put the direct edges back (they fit the order) */
        if ((ab && !add_edge(c, a, b)) || (ba && !add_edge(c, b, a)))
            return -1;
        return 0;
    }
    return move_edges(c, a, b);
}
