/*
 * The plugin's core, shared by libxlac.so (whose ELF constructor calls
 * xlac_plugin_install), xlac-compile and the tests, which drive it without
 * LD_PRELOAD:
 *
 *   pass.c    the graph pass: mark, encapsulate, dumps, summary
 *   launch.c  the xlac_launch op: compiled code, or the per-op fallback
 */
#ifndef XLAC_PLUGIN_CORE_H
#define XLAC_PLUGIN_CORE_H

#include <stdio.h>

#include "flags.h"
#include "xc.h"
#include "xlac/plugin.h"

/*
 * Registers the xlac_launch op and the clustering pass (once per process)
 * and makes *f the process-wide flags, taking over what it owns (*f is
 * zeroed). A second call only replaces the flags. Checks the ABI version.
 */
xe_code xlac_plugin_install(xlac_flags *f, xe_status *st);
/* The process-wide flags (NULL before install). */
const xlac_flags *xlac_plugin_flags(void);
/* The op id of xlac_launch, -1 before install. */
int xlac_launch_op(void);

/*
 * The clustering predicate of the flags' level: level 1 only fusible ops
 * (elementwise, reductions, argmax, shape ops, select, cast, softmax);
 * level 2 and jit blocks everything xg_supports says. user: xlac_flags.
 */
bool xlac_supports(const xe_graph *g, const xe_node *n, xe_device dev, bool must_compile,
                   void *user, const char **reason);
/* Clustering options from flags (the predicate above included). */
void xlac_cluster_options(const xlac_flags *f, xc_options *o);

/* The graph pass (user: unused; the process-wide flags apply). */
xe_code xlac_pass(xe_graph **g, const xe_pass_ctx *ctx, void *user, xe_status *st);
/* The launch op's composite kernel. */
xe_code xlac_launch_run(const xe_kernel_args *a, xe_tensor **outs, int n_outs, xe_status *st);

/* Counted by the pass and the launch op for --stats. */
void xlac_stats_add_clusters(int n);
/* Whether any cluster was formed (a jit block counts) or launched in this process. */
bool xlac_made_clusters(void);
/* "xlac: stats clusters=... launches=... ..." */
void xlac_print_stats(FILE *out);
/* Frees the compilation cache (launch.c). */
void xlac_launch_shutdown(void);
/* Frees the compilation cache and the flags (at exit); no session may run after. */
void xlac_plugin_shutdown(void);

#endif
