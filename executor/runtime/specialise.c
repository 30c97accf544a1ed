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
#include <stdio.h>
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
    bool noted; /* note_kept_sizes has spoken */
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

/* The sizes the second build takes, tried in turn until one builds and rewrites (generalise.c). */
typedef enum larger_by {
    PLUS_ONE,       /* each symbolic dim one larger */
    PLUS_ONE_BUT_1, /* the same, but a dim fed as 1 stays 1: an export that bakes a size of 1
                       (the one new token of a decode step) builds at no other */
    N_LARGER
} larger_by;

static const char *const larger_what[N_LARGER] = {"with each symbolic dim one larger",
                                                  "with the dims fed as 1 kept"};

/* shapes with each symbolic dim of t grown as by says; NULL when nothing grows, or nothing is kept
 * at 1 that PLUS_ONE grew (the same sizes again). */
static xe_shape *larger_shapes(const xe_graph *t, const xe_shape *shapes, larger_by by)
{
    xe_shape *larger = calloc((size_t)t->n_inputs + 1, sizeof *larger);
    bool grown = false, kept = false;
    for (int k = 0; larger && k < t->n_inputs; k++) {
        larger[k] = shapes[k];
        for (int d = 0; d < larger[k].rank; d++) {
            int64_t *x = &larger[k].dims[d];
            if (t->nodes[t->inputs[k]]->type.shape.dims[d] >= 0)
                continue;
            if (by != PLUS_ONE && *x == 1) {
                kept = true;
                continue;
            }
            *x += 1;
            grown = true;
        }
    }
    if (!grown || (by == PLUS_ONE_BUT_1 && !kept)) {
        free(larger);
        return NULL;
    }
    return larger;
}

/* The first error line of msg (past an import's count line) into out (len bytes), without the
 * "FILE: " prefixes that name the model at every level. */
static void first_error(const char *msg, const char *file, char *out, size_t len)
{
    const char *nl = strchr(msg, '\n');
    msg = nl && nl[1] ? nl + 1 : msg;
    size_t n = strcspn(msg, "\n"), flen = file ? strlen(file) : 0, o = 0;
    for (size_t i = 0; i < n && o + 1 < len;) {
        if (flen && i + flen + 2 <= n && !strncmp(msg + i, file, flen) && msg[i + flen] == ':' &&
            msg[i + flen + 1] == ' ') {
            i += flen + 2;
            continue;
        }
        out[o++] = msg[i++];
    }
    out[o < len ? o : len - 1] = 0;
}

/* g (built at shapes) rewritten to serve every size, compared with t built at larger; NULL with
 * the reason in why (why_len bytes) when it cannot be. *built: t builds at larger. */
static xe_graph *generalise_at(const xe_graph *t, const xe_graph *g, const xe_shape *larger,
                               spec *e, char *why, size_t why_len, bool *built)
{
    xe_status st;
    xe_status_clear(&st);
    xe_graph *h = xe_graph_specialise(t, larger, &st);
    *built |= h != NULL;
    xe_graph *general = h ? xe_generalise(g, h, t, &e->extras, &e->n_extras, why, why_len) : NULL;
    if (!h && why_len > 40) { /* its first error, past the count line of an import's list */
        int n = snprintf(why, why_len, "it does not build: ");
        first_error(st.msg, t->file, why + n, why_len - (size_t)n);
    }
    xe_graph_destroy(h);
    return general;
}

/*
 * The graph built at shapes, rewritten to serve every size when the same
 * model built with its symbolic dims larger (larger_by, in turn) tells what
 * depends on the sizes (generalise.c); as built otherwise, with the reasons
 * in why (why_len bytes; empty when rewritten). *built: the model built at
 * some larger sizes (false: it may work only at the sizes it was exported
 * at).
 */
static xe_graph *specialise(const xe_graph *t, const xe_shape *shapes, spec *e, char *why,
                            size_t why_len, bool *built, xe_status *st)
{
    *built = false;
    xe_graph *g = xe_graph_specialise(t, shapes, st);
    xe_graph *general = NULL;
    size_t len = 0;
    why[0] = 0;
    for (int by = PLUS_ONE; g && !general && by < N_LARGER; by++) {
        xe_shape *larger = larger_shapes(t, shapes, by);
        if (!larger)
            continue;
        char tried[320];
        general = generalise_at(t, g, larger, e, tried, sizeof tried, built);
        free(larger);
        if (!general && len + 32 < why_len)
            len += (size_t)snprintf(why + len, why_len - len, "%s%s: %s", len ? "; " : "",
                                    larger_what[by], tried);
    }
    if (general) {
        why[0] = 0;
        xe_graph_destroy(g);
        g = general;
    }
    return g;
}

/* Says once per session that a signature's graph keeps its sizes, and why, and what follows: its
 * clusters compile per size, or (clusters or not) it may run at these sizes only. */
static void note_kept_sizes(xe_session *s, const xe_shape *shapes, const char *why, bool built)
{
    xe_specs *c = s->specs;
    pthread_mutex_lock(&c->lock);
    bool first = !c->noted;
    c->noted = true;
    pthread_mutex_unlock(&c->lock);
    if (!first)
        return;
    char sizes[256] = "", one[160];
    size_t len = 0;
    for (int k = 0; k < s->graph->n_inputs && len + 1 < sizeof sizes; k++)
        len += (size_t)snprintf(sizes + len, sizeof sizes - len, "%s%s", k ? " " : "",
                                xe_shape_str(&shapes[k], one, sizeof one));
    fprintf(stderr,
            "xlac: note: %s at input shapes %s keeps its sizes (%s); %s (said once per session)\n",
            s->graph->file ? s->graph->file : "the graph", sizes, why,
            !built ? "it may run only at the sizes it was exported at, each size built on its own"
                   : "its clusters compile per size");
}

/* Builds and prepares the graph for the fed shapes into e. */
static xe_code build(xe_session *s, xe_tensor *const *in, int n, spec *e, xe_status *st)
{
    if (!(e->shapes = calloc((size_t)n + 1, sizeof *e->shapes)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int k = 0; k < n; k++)
        e->shapes[k] = in[k]->shape;
    char why[1024];
    bool built;
    e->graph = specialise(s->graph, e->shapes, e, why, sizeof why, &built, st);
    bool clusters = !s->opt.no_passes && xe_graph_pass_count() > 0;
    if (e->graph && why[0] && (clusters || !built))
        note_kept_sizes(s, e->shapes, why, built);
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
    char why[1024];
    bool built;
    xe_graph *out = specialise(g, shapes, &e, why, sizeof why, &built, st);
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
