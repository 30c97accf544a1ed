/*
 * Incremental cycle detection over a directed graph whose nodes get
 * contracted, as TensorFlow's GraphCycles: a dynamic topological order
 * (Pearce and Kelly, "A dynamic topological sort algorithm for directed
 * acyclic graphs", 2006) kept up to date as edges are inserted, so an
 * insertion or a contraction that would close a cycle is refused, and a
 * reachability query only searches the nodes between two ranks.
 */
#ifndef XC_CYCLES_H
#define XC_CYCLES_H

#include <stdbool.h>

typedef struct xc_cycles xc_cycles;

/* n nodes 0..n-1, no edges; NULL when out of memory. */
xc_cycles *xc_cycles_new(int n);
void xc_cycles_destroy(xc_cycles *c);

/*
 * Inserts x -> y. Returns 1 when inserted (or already present), 0 when it
 * would create a cycle (nothing changes), -1 when out of memory.
 * Self-edges are ignored (1).
 */
int xc_cycles_insert_edge(xc_cycles *c, int x, int y);
void xc_cycles_remove_edge(xc_cycles *c, int x, int y);
bool xc_cycles_has_edge(const xc_cycles *c, int x, int y);
/* Is there a path x -> ... -> y (x == y counts)? */
bool xc_cycles_is_reachable(xc_cycles *c, int x, int y);

/*
 * Merges b into a when that keeps the graph acyclic: the edges between a
 * and b disappear and every other edge of b becomes an edge of a. Refused
 * when a path between them goes through another node (in either
 * direction). Returns 1 merged, 0 refused (nothing changes), -1 OOM.
 * After a merge b is dead: it has no edges and must not be used again.
 */
int xc_cycles_contract(xc_cycles *c, int a, int b);

/* The number of edges of x, in and out (a contraction costs those of the node merged away). */
int xc_cycles_degree(const xc_cycles *c, int x);

/* The current rank of x (a topological order of the live nodes). */
int xc_cycles_rank(const xc_cycles *c, int x);

#endif
