/*
 * A cluster's fingerprint: the XXH3-128 hash of its body's canonical text
 * (ops, attributes, dtypes, wiring, constant values; node k is "%k", so
 * names and annotations do not count). Two clusters with the same
 * computation share their compiled programs. cache.c makes it the first
 * part of every signature key.
 */
#include <stdio.h>

#include <xxhash.h>

#include "cache_impl.h"
#include "xlac/op.h"

static void attr_text(xe_text *t, const xe_attr *a)
{
    xe_text_printf(t, " %s=", a->name);
    switch (a->kind) {
    case XE_ATTR_INT:
    case XE_ATTR_BOOL:
        xe_text_printf(t, "%lld", (long long)a->i);
        break;
    case XE_ATTR_FLOAT:
        xe_text_printf(t, "%a", a->f);
        break;
    case XE_ATTR_STRING:
        xe_text_printf(t, "\"%s\"", a->s);
        break;
    case XE_ATTR_DTYPE:
        xe_text_printf(t, "%s", xe_dtype_name(a->dtype));
        break;
    case XE_ATTR_INTS:
        for (int k = 0; k < a->n; k++)
            xe_text_printf(t, "%s%lld", k ? "," : "[", (long long)a->ints[k]);
        xe_text_printf(t, "]");
        break;
    case XE_ATTR_FLOATS:
        for (int k = 0; k < a->n; k++)
            xe_text_printf(t, "%s%a", k ? "," : "[", a->floats[k]);
        xe_text_printf(t, "]");
        break;
    }
}

/* Canonical text of a body: node k is "%k", inputs by position, annotations left out. */
static void canonical_text(xe_text *t, const xe_graph *b)
{
    for (int i = 0; i < b->n_nodes; i++) {
        const xe_node *n = b->nodes[i];
        char ty[128];
        xe_text_printf(t, "%%%d=%s(", i, xe_op_name(n->op));
        for (int k = 0; k < n->n_inputs; k++)
            xe_text_printf(t, "%s%%%d", k ? "," : "", n->inputs[k]);
        xe_text_printf(t, ")");
        if (n->op == XE_OP_INPUT)
            xe_text_printf(t, ":%s", xe_type_str(&n->type, ty, sizeof ty));
        for (int k = 0; k < n->n_attrs; k++)
            if (n->attrs[k].name[0] != '@')
                attr_text(t, &n->attrs[k]);
        if (n->value) {
            char hex[33];
            xg_hash_hex(n->value->data, n->value->nbytes, hex);
            xe_text_printf(t, " value=%s:%s",
                           xe_type_str(&(xe_type){n->value->dtype, n->value->shape}, ty, sizeof ty),
                           hex);
        }
        xe_text_printf(t, "\n");
    }
    for (int i = 0; i < b->n_outputs; i++)
        xe_text_printf(t, "out %%%d\n", b->outputs[i]);
}

void xg_hash_hex(const void *data, size_t len, char out[33])
{
    XXH128_hash_t h = XXH3_128bits(data ? data : "", len);
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
}

void xg_fingerprint(const xe_graph *body, char out[40])
{
    xe_text t = {0};
    canonical_text(&t, body);
    xg_hash_hex(t.buf, t.len, out);
    xe_text_free(&t);
}
