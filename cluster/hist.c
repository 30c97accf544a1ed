/* A sorted histogram of borrowed strings (hist.h). */
#include "hist.h"

#include <stdlib.h>
#include <string.h>

bool xc_hist_init(xc_hist *h, int cap)
{
    h->n = 0;
    h->keys = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *h->keys);
    h->counts = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *h->counts);
    return h->keys && h->counts;
}

void xc_hist_free(xc_hist *h)
{
    free(h->keys);
    free(h->counts);
}

int xc_hist_find(const xc_hist *h, const char *key)
{
    for (int i = 0; i < h->n; i++)
        if (strcmp(h->keys[i], key) == 0)
            return i;
    return -1;
}

void xc_hist_add(xc_hist *h, const char *key)
{
    int i = xc_hist_find(h, key);
    if (i >= 0) {
        h->counts[i]++;
        return;
    }
    int j = h->n++;
    while (j > 0 && strcmp(h->keys[j - 1], key) > 0) { /* keep keys sorted */
        h->keys[j] = h->keys[j - 1];
        h->counts[j] = h->counts[j - 1];
        j--;
    }
    h->keys[j] = key;
    h->counts[j] = 1;
}
