/*
 * Private to codegen/: steps that run an earlier step's kernel on their own
 * buffers. A model's repeated layers give kernels whose text is the same
 * but for the buffers they name (and the numbering of their locals); the
 * emitter keeps the first and drops the others (emit.c), so the compiler
 * sees each distinct body once, and the program runs a dropped step by
 * launching the kept kernel with the step's buffers in the places of the
 * kept step's (program.c). The list travels in the plan text, and so in
 * the artifact's metadata and the disk cache, as one line per step:
 *
 *   shared: xg_k30 runs the kernel of xg_k12 with buffers 31,32,155 in place of 11,12,103
 */
#ifndef XG_SHARE_H
#define XG_SHARE_H

#include <stdbool.h>

#include "plan.h"

typedef struct xg_share {
    int step, from; /* step runs from's kernel (from < step, from itself not shared) */
    int n;          /* the buffers from's kernel names */
    int *theirs;    /* those buffers (node indices), in the order the kernel first names them */
    int *ours;      /* this step's node in the place of each */
} xg_share;

typedef struct xg_shares {
    xg_share *v;
    int n, cap;
} xg_shares;

/* Adds a share; theirs and ours (n each) are copied. False when out of memory. */
bool xg_shares_add(xg_shares *s, int step, int from, const int *theirs, const int *ours, int n);
void xg_shares_free(xg_shares *s);
/* The share of step i, or NULL. */
const xg_share *xg_shares_find(const xg_shares *s, int step);
/* The pointers h's step launches its kernel with: ptrs (n, one per node) with the step's
   buffers in the places of those the kernel names, into out (n). */
void xg_share_pointers(const xg_share *h, void *const *ptrs, void **out, size_t n);

/* The lines above, one per share, appended to *text (realloc'd). False when out of memory. */
bool xg_shares_append_text(const xg_shares *s, char **text);
/*
 * Reads the lines back (text: what follows the plan's own text in a
 * module's metadata), each checked against the plan: steps in range and
 * generated, from before step and not itself shared, buffers materialized.
 * False on anything else (the module does not match the plan).
 */
bool xg_shares_parse(const char *text, const xg_plan *p, xg_shares *out);

/*
 * A kernel body's identity: its text with comments dropped, its locals
 * (v, a, sh, rc followed by digits) and buffer pointers (p followed by
 * digits) renumbered in order of first appearance. order[] (room for
 * n_nodes) gets the pointers' nodes in that order, *n_order their count.
 * malloc'd; NULL when out of memory or when a pointer names no node.
 */
char *xg_kernel_key(const char *body, int n_nodes, int *order, int *n_order);

#endif
