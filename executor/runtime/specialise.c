/*
 * Graphs built per input-shape signature (a graph with a maker, see
 * xlac/graph.h). A session whose graph has a maker keeps up to
 * XE_MAX_SPECIALISED prepared graphs, one per signature (the fed shapes of
 * every input): on a new signature the maker builds the graph at those
 * shapes, with every shape computation folded to constants, and again with
 * each symbolic dim one larger, so that what depends on the sizes can be
 * rewritten out of it (generalise.c; its extra inputs' values are kept
 * here and fed on each run); the session prepares it like any other graph (inference, placement,
 * the registered passes: clustering). A run borrows its signature's graph and gives it back; the
 * least recently used one that no run holds makes room for a new one. Compiled programs live in the
 * plugin's process-wide cache, so an evicted graph's clusters find their programs again.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "exec_impl.h"

#define XE_MAX_SPECIALISED 8

typedef struct spec {
    xe_shape *shapes;   /* one per graph input */
    xe_graph *graph;    /* prepared */
    xe_tensor **extras; /* values of its inputs after the model's (generalise.c) */
    int n_extras;
    int busy;      /* runs holding it */
    uint64_t used; /* tick of its last use */
} spec;

struct xe_specs {
    pthread_mutex_t lock;
    spec slot[XE_MAX_SPECIALISED];
    uint64_t tick;
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
    for (int k = 0; k < e->n_extras; k++)
        xe_tensor_release(e->extras[k]);
    free(e->extras);
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

/*
 * The graph built at shapes, rewritten to serve every size when the same
 * model built with each symbolic dim one larger tells what depends on the
 * sizes (generalise.c); as built otherwise.
 */
static xe_graph *specialise(const xe_graph *t, const xe_shape *shapes, spec *e, xe_status *st)
{
    xe_graph *g = xe_graph_specialise(t, shapes, st);
    xe_shape *larger = g ? calloc((size_t)t->n_inputs + 1, sizeof *larger) : NULL;
    for (int k = 0; larger && k < t->n_inputs; k++) {
        larger[k] = shapes[k];
        for (int d = 0; d < larger[k].rank; d++)
            larger[k].dims[d] += t->nodes[t->inputs[k]]->type.shape.dims[d] < 0;
    }
    xe_status ignored;
    xe_status_clear(&ignored);
    xe_graph *h = larger ? xe_graph_specialise(t, larger, &ignored) : NULL;
    xe_graph *general = h ? xe_generalise(g, h, t, &e->extras, &e->n_extras) : NULL;
    free(larger);
    xe_graph_destroy(h);
    if (general) {
        xe_graph_destroy(g);
        g = general;
    }
    return g;
}

/* Builds and prepares the graph for the fed shapes into e. */
static xe_code build(xe_session *s, xe_tensor *const *in, int n, spec *e, xe_status *st)
{
    if (!(e->shapes = calloc((size_t)n + 1, sizeof *e->shapes)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int k = 0; k < n; k++)
        e->shapes[k] = in[k]->shape;
    e->graph = specialise(s->graph, e->shapes, e, st);
    if (!e->graph || xe_session_prepare(s, &e->graph, st) != XE_OK) {
        spec_clear(e);
        return st->code;
    }
    return XE_OK;
}

/* Hands slot k (locked) to a run. */
static void lend(xe_specs *c, int k, xe_spec_use *u)
{
    c->slot[k].busy++;
    c->slot[k].used = ++c->tick;
    *u = (xe_spec_use){.graph = c->slot[k].graph,
                       .extras = c->slot[k].extras,
                       .n_extras = c->slot[k].n_extras,
                       .slot = k};
}

xe_code xe_specs_get(xe_session *s, xe_tensor *const *in, xe_spec_use *u, xe_status *st)
{
    xe_specs *c = s->specs;
    int n = s->graph->n_inputs;
    pthread_mutex_lock(&c->lock);
    int k = find(c, in, n);
    if (k >= 0) {
        lend(c, k, u);
        pthread_mutex_unlock(&c->lock);
        return XE_OK;
    }
    pthread_mutex_unlock(&c->lock);
    spec e = {0};
    if (build(s, in, n, &e, st) != XE_OK) /* unlocked: clustering may compile */
        return st->code;
    pthread_mutex_lock(&c->lock);
    if ((k = find(c, in, n)) < 0 && (k = victim(c)) >= 0) {
        c->slot[k] = e;
        lend(c, k, u);
        pthread_mutex_unlock(&c->lock);
        return XE_OK;
    }
    pthread_mutex_unlock(&c->lock);
    /* another run built it first, or every slot is busy: this run's own, freed after it */
    spec *own = malloc(sizeof *own);
    if (!own) {
        spec_clear(&e);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    *own = e;
    *u = (xe_spec_use){
        .graph = e.graph, .extras = e.extras, .n_extras = e.n_extras, .slot = -1, .own = own};
    return XE_OK;
}

void xe_specs_put(xe_session *s, xe_spec_use *u)
{
    if (u->slot < 0) {
        spec_clear(u->own);
        free(u->own);
        return;
    }
    pthread_mutex_lock(&s->specs->lock);
    s->specs->slot[u->slot].busy--;
    pthread_mutex_unlock(&s->specs->lock);
}

xe_graph *xe_graph_general(const xe_graph *g, const xe_shape *shapes, int *n_extras, xe_status *st)
{
    spec e = {0};
    xe_graph *out = specialise(g, shapes, &e, st);
    *n_extras = out && out->n_inputs == g->n_inputs + e.n_extras && !out->maker ? e.n_extras : -1;
    if (out && !e.n_extras && out->n_inputs == g->n_inputs) {
        bool general = true; /* a generalised graph has g's symbolic input types */
        for (int k = 0; k < g->n_inputs; k++)
            general &= xe_shape_equal(&out->nodes[out->inputs[k]]->type.shape,
                                      &g->nodes[g->inputs[k]]->type.shape);
        *n_extras = general ? 0 : -1;
    }
    e.graph = NULL;
    spec_clear(&e);
    return out;
}
