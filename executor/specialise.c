/*
 * Graphs built per input-shape signature (a graph with a maker, see
 * xlac/graph.h). A session whose graph has a maker keeps up to
 * XE_MAX_SPECIALISED prepared graphs, one per signature (the fed shapes of
 * every input): on a new signature the maker builds the graph at those
 * shapes, with every shape computation folded to constants, and the
 * session prepares it like any other graph (inference, placement, the
 * registered passes: clustering). A run borrows its signature's graph and
 * gives it back; the least recently used one that no run holds makes room
 * for a new one. Compiled programs live in the plugin's process-wide cache,
 * so an evicted graph's clusters find their programs again.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "exec_impl.h"

#define XE_MAX_SPECIALISED 8

typedef struct spec {
    xe_shape *shapes;   /* one per graph input */
    xe_graph *graph;    /* prepared */
    int busy;           /* runs holding it */
    uint64_t used;      /* tick of its last use */
} spec;

struct xe_specs {
    pthread_mutex_t lock;
    spec slot[XE_MAX_SPECIALISED];
    uint64_t tick;
    int n_made;         /* specialisations built so far (for tests and --stats) */
};

xe_specs *xe_specs_new(void)
{
    xe_specs *c = calloc(1, sizeof *c);
    if (c)
        pthread_mutex_init(&c->lock, NULL);
    return c;
}

static void spec_clear(spec *e)
{
    xe_graph_destroy(e->graph);
    free(e->shapes);
    memset(e, 0, sizeof *e);
}

void xe_specs_destroy(xe_specs *c)
{
    if (!c)
        return;
    for (int k = 0; k < XE_MAX_SPECIALISED; k++)
        spec_clear(&c->slot[k]);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static bool same_shapes(const xe_shape *a, xe_tensor *const *in, int n)
{
    for (int k = 0; k < n; k++)
        if (a[k].rank != in[k]->shape.rank ||
            memcmp(a[k].dims, in[k]->shape.dims, (size_t)a[k].rank * sizeof *a[k].dims))
            return false;
    return true;
}

/* The slot holding these shapes, or -1. Called locked. */
static int find(xe_specs *c, xe_tensor *const *in, int n)
{
    for (int k = 0; k < XE_MAX_SPECIALISED; k++)
        if (c->slot[k].graph && same_shapes(c->slot[k].shapes, in, n))
            return k;
    return -1;
}

/* An empty slot, else the least recently used idle one (cleared), else -1. Called locked. */
static int victim(xe_specs *c)
{
    int best = -1;
    for (int k = 0; k < XE_MAX_SPECIALISED; k++) {
        if (!c->slot[k].graph)
            return k;
        if (!c->slot[k].busy && (best < 0 || c->slot[k].used < c->slot[best].used))
            best = k;
    }
    if (best >= 0)
        spec_clear(&c->slot[best]);
    return best;
}

/* Builds and prepares the graph for the fed shapes. */
static xe_graph *build(xe_session *s, xe_tensor *const *in, int n, xe_shape **shapes, xe_status *st)
{
    *shapes = calloc((size_t)n + 1, sizeof **shapes);
    if (!*shapes) {
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    for (int k = 0; k < n; k++)
        (*shapes)[k] = in[k]->shape;
    xe_graph *g = xe_graph_specialise(s->graph, *shapes, st);
    if (g && xe_session_prepare(s, &g, st) != XE_OK) {
        xe_graph_destroy(g);
        g = NULL;
    }
    if (!g) {
        free(*shapes);
        *shapes = NULL;
    }
    return g;
}

xe_graph *xe_specs_get(xe_session *s, xe_tensor *const *in, int *slot, xe_status *st)
{
    xe_specs *c = s->specs;
    int n = s->graph->n_inputs;
    pthread_mutex_lock(&c->lock);
    int k = find(c, in, n);
    if (k >= 0) {
        c->slot[k].busy++;
        c->slot[k].used = ++c->tick;
        *slot = k;
        pthread_mutex_unlock(&c->lock);
        return c->slot[k].graph;
    }
    pthread_mutex_unlock(&c->lock);
    xe_shape *shapes;
    xe_graph *g = build(s, in, n, &shapes, st); /* unlocked: it may compile */
    if (!g)
        return NULL;
    pthread_mutex_lock(&c->lock);
    c->n_made++;
    if ((k = find(c, in, n)) < 0 && (k = victim(c)) >= 0)
        c->slot[k] = (spec){.shapes = shapes, .graph = g};
    else
        k = -1; /* another run built it first, or every slot is busy: this run's own graph */
    if (k >= 0 && c->slot[k].graph == g) {
        c->slot[k].busy++;
        c->slot[k].used = ++c->tick;
        *slot = k;
        pthread_mutex_unlock(&c->lock);
        return g;
    }
    pthread_mutex_unlock(&c->lock);
    free(shapes);
    *slot = -1;
    return g;
}

void xe_specs_put(xe_session *s, xe_graph *g, int slot)
{
    if (slot < 0) {
        xe_graph_destroy(g);
        return;
    }
    pthread_mutex_lock(&s->specs->lock);
    s->specs->slot[slot].busy--;
    pthread_mutex_unlock(&s->specs->lock);
}

int xe_specs_made(const xe_session *s)
{
    return s->specs ? s->specs->n_made : 0;
}
