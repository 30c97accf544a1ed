/*
 * The ONNX mutator's frame (see onnx_mutate.h): the guard that bounds a
 * model's nesting before protobuf-c (which recurses without a limit) sees
 * it, the walk that collects what mutations pick from, and the loop that
 * unpacks, applies one to three mutations, packs and checks the size.
 * The guard walks the wire format with our schema's descriptors, as
 * executor/frontends/onnx/diag.c does, but stops at XM_MAX_DEPTH nested messages:
 * its own recursion is bounded by the limit it checks.
 */
#include <stdlib.h>
#include <string.h>

#include "onnx_mutate.h"
#include "onnx_mutate_impl.h"

/* ---- random numbers (splitmix64) ---------------------------------------------------------- */

uint64_t xm_next(xm_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

size_t xm_below(xm_rng *r, size_t n)
{
    return n ? (size_t)(xm_next(r) % n) : 0;
}

char *xm_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* ---- the guard ------------------------------------------------------------------------------ */

static bool varint(const uint8_t *d, size_t *pos, size_t end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 70 && *pos < end; shift += 7) {
        uint8_t byte = d[(*pos)++];
        *v |= shift < 64 ? (uint64_t)(byte & 0x7f) << shift : 0;
        if (!(byte & 0x80))
            return true;
    }
    return false;
}

/* Whether d[pos..end) is a well-formed message of desc nested at most XM_MAX_DEPTH - depth deeper.
 */
static bool shallow(const uint8_t *d, size_t pos, size_t end,
                    const ProtobufCMessageDescriptor *desc, int depth)
{
    if (depth > XM_MAX_DEPTH)
        return false;
    while (pos < end) {
        uint64_t tag, v;
        if (!varint(d, &pos, end, &tag))
            return false;
        unsigned wt = (unsigned)(tag & 7);
        if (wt == 0 && !varint(d, &pos, end, &v))
            return false;
        if (wt == 1 || wt == 5) {
            if (end - pos < (wt == 1 ? 8u : 4u))
                return false;
            pos += wt == 1 ? 8 : 4;
        } else if (wt == 2) {
            if (!varint(d, &pos, end, &v) || v > end - pos)
                return false;
            const ProtobufCFieldDescriptor *fd =
                tag >> 3 <= 0x1fffffff
                    ? protobuf_c_message_descriptor_get_field(desc, (unsigned)(tag >> 3))
                    : NULL;
            if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE &&
                !shallow(d, pos, pos + v, fd->descriptor, depth + 1))
                return false;
            pos += v;
        } else if (wt != 0) {
            return false;
        }
    }
    return true;
}

bool xm_guard(const uint8_t *data, size_t size)
{
    return size <= XM_MAX_SIZE && shallow(data, 0, size, &onnx__model_proto__descriptor, 0);
}

/* ---- pools and the walk ------------------------------------------------------------------- */

static void pool_add(xm_ctx *c, xm_pool *pool, void *p, void *owner, int depth)
{
    size_t at = pool->seen++;
    if (at >= XM_POOL) { /* reservoir: every one seen is kept with the same chance */
        at = xm_below(&c->r, pool->seen);
        if (at >= XM_POOL)
            return;
    } else {
        pool->n++;
    }
    pool->p[at] = p;
    pool->owner[at] = owner;
    pool->depth[at] = depth;
}

int xm_pick(xm_ctx *c, const xm_pool *pool)
{
    return pool->n ? (int)xm_below(&c->r, pool->n) : -1;
}

static void name_slot(xm_ctx *c, char **slot, bool optional, int depth)
{
    pool_add(c, &c->names, slot, optional ? (void *)1 : NULL, depth);
}

static void walk_graph(xm_ctx *c, Onnx__GraphProto *g, int depth);

static void walk_node(xm_ctx *c, Onnx__GraphProto *g, Onnx__NodeProto *n, int depth)
{
    pool_add(c, &c->nodes, n, g, depth);
    name_slot(c, &n->name, true, depth);
    for (size_t k = 0; k < n->n_input; k++)
        name_slot(c, &n->input[k], false, depth);
    for (size_t k = 0; k < n->n_output; k++) {
        name_slot(c, &n->output[k], false, depth);
        pool_add(c, &c->values, n->output[k], g, depth);
    }
    for (size_t k = 0; k < n->n_attribute; k++) {
        Onnx__AttributeProto *a = n->attribute[k];
        pool_add(c, &c->attrs, a, n, depth);
        name_slot(c, &a->name, true, depth);
        if (a->t)
            pool_add(c, &c->tensors, a->t, NULL, depth);
        if (a->g &&
            depth < XM_MAX_DEPTH) /* the guard bounds it; this keeps the walk bounded alone */
            walk_graph(c, a->g, depth + 1);
    }
}

static void walk_infos(xm_ctx *c, Onnx__GraphProto *g, Onnx__ValueInfoProto **v, size_t n,
                       bool values, int depth)
{
    for (size_t k = 0; k < n; k++) {
        pool_add(c, &c->infos, v[k], g, depth);
        name_slot(c, &v[k]->name, true, depth);
        if (values && v[k]->name)
            pool_add(c, &c->values, v[k]->name, g, depth);
    }
}

static void walk_graph(xm_ctx *c, Onnx__GraphProto *g, int depth)
{
    pool_add(c, &c->graphs, g, NULL, depth);
    name_slot(c, &g->name, true, depth);
    for (size_t k = 0; k < g->n_initializer; k++) {
        Onnx__TensorProto *t = g->initializer[k];
        pool_add(c, &c->tensors, t, g, depth);
        name_slot(c, &t->name, true, depth);
        if (t->name)
            pool_add(c, &c->values, t->name, g, depth);
    }
    walk_infos(c, g, g->input, g->n_input, true, depth);
    walk_infos(c, g, g->output, g->n_output, false, depth);
    walk_infos(c, g, g->value_info, g->n_value_info, false, depth);
    for (size_t k = 0; k < g->n_node; k++)
        walk_node(c, g, g->node[k], depth);
}

void xm_collect(xm_ctx *c)
{
    xm_pool *all[] = {&c->graphs, &c->nodes, &c->attrs, &c->tensors,
                      &c->infos,  &c->names, &c->values};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        all[k]->n = all[k]->seen = 0;
    if (c->m->graph)
        walk_graph(c, c->m->graph, 0);
}

/* ---- helpers for the mutations ------------------------------------------------------------- */

void *xm_clone(const void *msg)
{
    const ProtobufCMessage *m = msg;
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return NULL;
    protobuf_c_message_pack(m, buf);
    ProtobufCMessage *copy = protobuf_c_message_unpack(m->descriptor, NULL, n, buf);
    free(buf);
    return copy;
}

void xm_insert(void ***arr, size_t *n, size_t at, void *p)
{
    void **grown = realloc(*arr, (*n + 1) * sizeof **arr);
    if (!grown)
        return;
    if (at > *n)
        at = *n;
    memmove(grown + at + 1, grown + at, (*n - at) * sizeof *grown);
    grown[at] = p;
    *arr = grown;
    (*n)++;
}

/* ---- the loop ------------------------------------------------------------------------------- */

typedef bool (*xm_mutation)(xm_ctx *c);

/* The mutations, each listed as often as it should be picked. */
static const xm_mutation mutations[] = {
    xm_mut_attr_value, xm_mut_attr_value, xm_mut_attr_value, xm_mut_attr_set, xm_mut_attr_set,
    xm_mut_tensor,     xm_mut_tensor,     xm_mut_shape,      xm_mut_shape,    xm_mut_name,
    xm_mut_name,       xm_mut_wiring,     xm_mut_wiring,     xm_mut_op,       xm_mut_opset,
    xm_mut_nest,       xm_mut_nodes,      xm_mut_graph_io,
};

/* The packed model's size; every XM_NUL_MARK in the bytes gets its NUL. 0 when it is over max. */
static size_t pack_into(const Onnx__ModelProto *m, uint8_t *out, size_t max)
{
    size_t n = protobuf_c_message_get_packed_size(&m->base);
    if (n > max || n == 0)
        return 0;
    protobuf_c_message_pack(&m->base, out);
    size_t mark = sizeof XM_NUL_MARK - 1;
    for (uint8_t *p = out; n >= mark && (p = memmem(p, n - (size_t)(p - out), XM_NUL_MARK, mark));
         p += mark)
        *p = '\0';
    return n;
}

static Onnx__ModelProto *unpack_guarded(const uint8_t *data, size_t size)
{
    return size && xm_guard(data, size) ? onnx__model_proto__unpack(NULL, size, data) : NULL;
}

size_t xm_mutate(uint8_t *data, size_t size, size_t max_size, unsigned seed)
{
    xm_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return 0;
    c->r.s = seed * 0x2545f4914f6cdd1dull + size;
    size_t out = 0;
    for (int attempt = 0; attempt < 3 && !out;
         attempt++) { /* a try that grew too large starts over */
        if (!(c->m = unpack_guarded(data, size)))
            break;
        int changes = 1 + (int)xm_below(&c->r, 3), done = 0;
        for (int tries = 0; done < changes && tries < 16; tries++) {
            xm_collect(c);
            done += mutations[xm_below(&c->r, sizeof mutations / sizeof *mutations)](c);
        }
        out = done ? pack_into(c->m, data, max_size) : 0;
        onnx__model_proto__free_unpacked(c->m, NULL);
    }
    free(c);
    return out;
}

/* Copies a node (or an initializer) of b into a random graph of a. */
static bool cross(xm_ctx *ca, xm_ctx *cb)
{
    int g = xm_pick(ca, &ca->graphs), n = xm_pick(cb, &cb->nodes), t = xm_pick(cb, &cb->tensors);
    if (g < 0)
        return false;
    Onnx__GraphProto *into = ca->graphs.p[g];
    if (n >= 0 && (t < 0 || xm_below(&ca->r, 4))) {
        Onnx__NodeProto *copy = xm_clone(cb->nodes.p[n]);
        if (copy)
            xm_insert((void ***)&into->node, &into->n_node, xm_below(&ca->r, into->n_node + 1),
                      copy);
        return copy != NULL;
    }
    if (t < 0 ||
        !cb->tensors.owner[t]) /* an attribute's tensor has no name: take initializers only */
        return false;
    Onnx__TensorProto *copy = xm_clone(cb->tensors.p[t]);
    if (copy)
        xm_insert((void ***)&into->initializer, &into->n_initializer, into->n_initializer, copy);
    return copy != NULL;
}

size_t xm_cross_over(const uint8_t *a, size_t na, const uint8_t *b, size_t nb, uint8_t *out,
                     size_t max_out, unsigned seed)
{
    xm_ctx *ca = calloc(1, sizeof *ca), *cb = calloc(1, sizeof *cb);
    size_t n = 0;
    if (ca && cb && (ca->m = unpack_guarded(a, na)) && (cb->m = unpack_guarded(b, nb))) {
        ca->r.s = seed * 0x2545f4914f6cdd1dull + na;
        bool changed = false;
        for (int k = 0, times = 1 + (int)xm_below(&ca->r, 3); k < times; k++) {
            xm_collect(ca);
            xm_collect(cb);
            changed |= cross(ca, cb);
        }
        n = changed ? pack_into(ca->m, out, max_out) : 0;
    }
    if (ca && ca->m)
        onnx__model_proto__free_unpacked(ca->m, NULL);
    if (cb && cb->m)
        onnx__model_proto__free_unpacked(cb->m, NULL);
    free(ca);
    free(cb);
    return n;
}
