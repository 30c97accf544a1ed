/*
 * A histogram of strings (op names, reasons), keys kept sorted: what the
 * clustering summary (dump.c) and the clusters' picture (dot_clusters.c)
 * count ops and reasons with. The keys are borrowed, not copied.
 */
#ifndef XC_HIST_H
#define XC_HIST_H

#include <stdbool.h>

typedef struct xc_hist {
    int n;
    const char **keys; /* sorted by strcmp */
    int *counts;
} xc_hist;

/* Room for cap distinct keys; false when out of memory (free it either way). */
bool xc_hist_init(xc_hist *h, int cap);
void xc_hist_free(xc_hist *h);
/* Counts key once more (a new key is inserted in order; at most cap distinct keys). */
void xc_hist_add(xc_hist *h, const char *key);
/* The index of key, or -1. */
int xc_hist_find(const xc_hist *h, const char *key);

#endif
