/*
 * The plugin ABI of libxlac_executor.so, version XE_PLUGIN_ABI_VERSION.
 *
 * A plugin is a shared object loaded into the executor's process (by
 * LD_PRELOAD or dlopen). From an ELF constructor it calls
 * xe_plugin_abi_version() to check compatibility, then registers ops and
 * graph passes. Registration is not thread-safe: do it before sessions run.
 *
 * Passes run on every session's graph after shape inference and device
 * placement, before execution, in registration order. A pass may rewrite
 * the graph in place (keeping it topologically ordered and inferred).
 *
 * Configuration is per session: the pass receives the session's
 * plugin_config text (xe_pass_ctx), and what it builds (a launch node)
 * records the configuration it was made with, so that sessions with
 * different settings share one process, one thread pool and the plugin's
 * process-wide caches.
 */
#ifndef XLAC_PLUGIN_H
#define XLAC_PLUGIN_H

#include "xlac/graph.h"
#include "xlac/op.h"
#include "xlac/status.h"

#define XE_PLUGIN_ABI_VERSION                                                                      \
    4 /* 2: xe_op_def.user, xe_kernel_args.op_user; 3: xe_pass_ctx.plugin_config;                  \
         4: xe_device an instance, xe_op_def.kernel[XE_DEV_MAX] */

typedef struct xe_pass_ctx {
    int session_id;           /* 0, 1, 2, ... per process; names dump files */
    xe_place_mode place_mode; /* what the user asked for with --device */
    const char
        *plugin_config; /* the session's xe_session_options.plugin_config: opaque to the
                           executor, the plugins' own text; NULL: the process's configuration */
} xe_pass_ctx;

/* Rewrites *g (may replace it with a new graph and destroy the old one). */
typedef xe_code (*xe_graph_pass_fn)(xe_graph **g, const xe_pass_ctx *ctx, void *user,
                                    xe_status *st);

int xe_plugin_abi_version(void);

/* Returns the new op's id, or -1 with *st set (name taken, table full). */
int xe_register_op(const xe_op_def *def, xe_status *st);
xe_code xe_register_graph_pass(const char *name, xe_graph_pass_fn fn, void *user, xe_status *st);

#endif
