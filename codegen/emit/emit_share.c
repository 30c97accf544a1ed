/*
 * The emitter's half of shared kernels (share.h): when a kernel just
 * printed is, up to its buffers and the numbering of its locals, one
 * printed before, its text is dropped and the step recorded as running
 * that one's kernel on its own buffers.
 */
#include <stdlib.h>
#include <string.h>

#include "emit_impl.h"
#include "xlac/vec.h"

struct kept_kernel {
    char *key;
    int step;
    int *order; /* the buffers it names, in the order it first names them */
};

/* The identity of the body (the text after the signature, without the pointer declarations): the
   pointers' types in naming order, whether it runs over panel rows, and the renumbered text. */
static char *identity(em *e, const char *body, int *order, int *n)
{
    char *key = xg_kernel_key(body, e->p->body->n_nodes, order, n);
    if (!key)
        return NULL;
    xe_text t = {0};
    xe_text_printf(&t, "panel %d types", e->panel);
    for (int i = 0; i < *n; i++)
        xe_text_printf(&t, " %d", (int)e->p->types[order[i]].dtype);
    xe_text_printf(&t, "\n%s", key);
    free(key);
    return xe_text_take(&t);
}

static bool keep(em *e, char *key, const int *order, int n)
{
    struct kept_kernel *k = XE_VEC_GROW(e->kept, e->cap_kept, e->n_kept + 1, 8);
    if (!k)
        return false;
    e->kept = k;
    k = &e->kept[e->n_kept];
    if (!(k->order = malloc(sizeof *order * (size_t)(n + 1))))
        return false;
    memcpy(k->order, order, sizeof *order * (size_t)n);
    k->key = key;
    k->step = e->step;
    e->n_kept++;
    return true;
}

bool xg_kernel_shared(em *e, const char *body)
{
    if (!e->shares || e->sig_at != e->kernel_at)
        return false;
    int n_nodes = e->p->body->n_nodes, n = 0;
    int *order = malloc(sizeof *order * (size_t)(n_nodes + 1));
    char *key = order ? identity(e, body, order, &n) : NULL;
    bool shared = false;
    for (int i = 0; key && i < e->n_kept && !shared; i++) {
        if (strcmp(e->kept[i].key, key) != 0)
            continue;
        if (!xg_shares_add(e->shares, e->step, e->kept[i].step, e->kept[i].order, order, n))
            e->oom = true;
        shared = true;
    }
    if (key && !shared && keep(e, key, order, n))
        key = NULL; /* kept */
    free(key);
    free(order);
    return shared;
}

void xg_kept_free(em *e)
{
    for (int i = 0; i < e->n_kept; i++) {
        free(e->kept[i].key);
        free(e->kept[i].order);
    }
    free(e->kept);
    e->kept = NULL;
    e->n_kept = e->cap_kept = 0;
}
