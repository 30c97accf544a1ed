/*
 * From a cluster to an artifact: plan, emit, and the target's backend
 * compiles. The backends themselves are found through registry.c; the
 * dump files of XLAC_DUMP_TO are written by emit/dump.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "compile.h"
#include "plan.h"
#include "share.h"
#include "xg_impl.h"
#include "xlac/io.h"
#include "xlac/session.h"

void xg_artifact_destroy(xg_artifact *a)
{
    if (!a)
        return;
    free(a->code);
    free(a->meta);
    free(a->source);
    free(a->plan_text);
    free(a->log);
    free(a->ptx);
    free(a);
}

/* The backend's compiler, timed; the assembly text too when dumps are on. */
static xe_code compile_source(const xg_backend *b, xg_artifact *a, const xg_options *o,
                              xe_status *st)
{
    double t0 = xe_now_us();
    xe_code c = b->compiler.compile(a, o, st);
    a->compiler_ms = (xe_now_us() - t0) / 1e3;
    if (c == XE_OK && o->dump_dir && b->compiler.assembly)
        a->ptx = b->compiler.assembly(a, o);
    return c;
}

xe_code xg_build(const xe_graph *body, const xe_type *in_types, bool shape_generic,
                 xg_target target, int arch, const xg_options *o, xg_artifact **out, xe_status *st)
{
    xg_plan *p = NULL;
    xg_artifact *a = calloc(1, sizeof *a);
    if (!a)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    a->target = target;
    a->arch = xg_backend_for(target)->compiler.arch(arch);
    a->shape_generic = shape_generic;
    xg_shares shares = {0};
    xe_code c = xg_plan_build(body, in_types, shape_generic, &p, st);
    if (c == XE_OK && !(a->source = xg_emit_program_shared(p, target, &shares, st)))
        c = st->code;
    if (c == XE_OK &&
        (!(a->plan_text = xg_plan_text(p, target)) ||
         !xg_shares_append_text(&shares, &a->plan_text) || !(a->meta = strdup(a->plan_text))))
        c = xe_fail(st, XE_ERR_NOMEM, "out of memory");
    xg_shares_free(&shares);
    if (c == XE_OK)
        c = compile_source(xg_backend_for(target), a, o, st);
    xg_plan_destroy(p);
    if (c == XE_ERR_COMPILE && a->source) { /* kept for the dumps */
        *out = a;
        return c;
    }
    if (c != XE_OK) {
        xg_artifact_destroy(a);
        return c;
    }
    *out = a;
    return XE_OK;
}
