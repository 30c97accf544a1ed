/*
 * The per-node state store of a session: a stateful op's run counter
 * (random draws the next numbers) and a kernel's cache slot, created on a
 * node's first use and freed with the session. The session owns the store
 * and hands it to exec through xe_exec.states, so running a graph never
 * calls back into the session.
 */
#include <stdlib.h>

#include "xe_hash.h"

#include "exec_impl.h"

struct xe_node_state {
    const xe_node *node; /* key */
    uint64_t counter;
    xe_kernel_cache cache;
    UT_hash_handle hh;
};

/* Node n's entry, created on first use; NULL on OOM. */
static struct xe_node_state *node_entry(xe_node_state **states, const xe_node *n)
{
    struct xe_node_state *e = NULL;
    HASH_FIND_PTR(*states, &n, e);
    if (!e) {
        if (!(e = calloc(1, sizeof *e)))
            return NULL;
        e->node = n;
        HASH_ADD_PTR(*states, node, e);
        if (!xe_hash_added(e)) {
            free(e);
            return NULL;
        }
    }
    return e;
}

uint64_t *xe_node_state_counter(xe_node_state **states, const xe_node *n)
{
    struct xe_node_state *e = node_entry(states, n);
    return e ? &e->counter : NULL;
}

xe_kernel_cache *xe_node_state_cache(xe_node_state **states, const xe_node *n)
{
    struct xe_node_state *e = node_entry(states, n);
    return e ? &e->cache : NULL;
}

void xe_node_states_free(xe_node_state **states)
{
    struct xe_node_state *e, *tmp;
    HASH_ITER(hh, *states, e, tmp)
    {
        HASH_DEL(*states, e);
        if (e->cache.free)
            e->cache.free(e->cache.data);
        free(e);
    }
}
