/*
 * Private to codegen/: the whole-graph ahead-of-time build (aot_graph.c
 * walks the clustered graph and writes the entry point and the header;
 * aot_cluster.c writes each cluster's kernels and its launch function).
 */
#ifndef XG_AOT_IMPL_H
#define XG_AOT_IMPL_H

#include "xg.h"
#include "xlac/text.h"

typedef struct xg_aot {
    const char *prefix; /* NAME: a C identifier, the prefix of every generated symbol */
    const char *dir;    /* the output folder */
    xe_text src;        /* NAME.c, being written */
    bool uses_executor; /* a matmul step calls libxlac_executor's xe_aot_matmul */
    char **sources;     /* NAME.c and every NAME.cluster_K.c written, for the compiler */
    int n_sources;
} xg_aot;

/* The C type of a buffer of dtype dt (bool: uint8_t, f16: uint16_t bits). */
const char *xg_aot_ctype(xe_dtype dt);
/* `static const unsigned char NAME[] = {...};` holding t's bytes (aligned for any dtype). */
void xg_aot_bytes(xe_text *t, const char *name, const xe_tensor *v);
/* Remembers path as one of the sources to compile (copied). */
xe_code xg_aot_add_source(xg_aot *a, const char *path, xe_status *st);

/*
 * Cluster k (launch node n, body at fully known input types): writes
 * DIR/NAME.cluster_K.c (its generated kernels, renamed NAME_cK_kI) and
 * appends to a->src the static function `int NAME_cluster_K(void *const
 * *in, void *const *out)` that runs its steps on caller-owned buffers.
 */
xe_code xg_aot_cluster(xg_aot *a, const xe_node *n, int k, const xg_options *o, xe_status *st);

#endif
