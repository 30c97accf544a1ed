/*
 * Signature keys of the compilation cache: what a program is looked up by
 * (in memory and on disk). A key names the key format's version, the code
 * generator's hash, the cluster body's fingerprint, the input types (or,
 * for a shape-generic program, the shape pattern), the target, the device
 * architecture, the flags that change generated code and the compiler:
 * anything less could serve a stale program.
 */
#include <stdlib.h>

#include "cache_impl.h"
#include "compile.h"
#include "plan.h"

#define KEY_VERSION "xlac-cache-v4"

/* Hash of the code generator's sources (CMake): programs of another generator never match. */
extern const char xg_codegen_id[];

/* One type's pattern: dtype, then per dim '1' or 'n'. */
static void type_pattern(const xe_type *t, xe_text *out)
{
    xe_text_printf(out, "%s:", xe_dtype_name(t->dtype));
    for (int d = 0; d < t->shape.rank; d++)
        xe_text_printf(out, "%c", t->shape.dims[d] == 1 ? '1' : 'n');
}

/*
 * Shape pattern: ranks and which dims are 1, of the inputs and of every
 * value the body computes from them (a slice or reshape can make a size-1
 * dim that the inputs do not have): what a shape-generic program depends
 * on, so one program per pattern serves every shape that has it. Written
 * as the 128-bit hash of that text (32 hex digits).
 */
void xg_shape_pattern(const xe_graph *body, xe_tensor *const *in, int n, char out[40])
{
    xe_text t = {0};
    xe_type *ins = calloc((size_t)n + 1, sizeof *ins);
    xe_type *types = calloc((size_t)body->n_nodes + 1, sizeof *types);
    for (int k = 0; ins && k < n; k++)
        ins[k] = (xe_type){in[k]->dtype, in[k]->shape};
    xe_status st;
    bool inferred = ins && types && xg_body_types(body, ins, types, &st) == XE_OK;
    const xe_type *ty = inferred ? types : ins; /* the inputs alone when inference fails */
    int count = !ins ? 0 : inferred ? body->n_nodes : n;
    for (int k = 0; k < count; k++) {
        xe_text_printf(&t, "%s", k ? ";" : "");
        type_pattern(&ty[k], &t);
    }
    xg_hash_hex(t.buf, t.len, out);
    xe_text_free(&t);
    free(ins);
    free(types);
}

/* "|name=value" of every option that changes generated code (the options table's column). */
static void append_code_options(const xg_options *o, xe_text *key)
{
    int n;
    const xg_option *rows = xg_options_table(&n);
    for (int i = 0; i < n; i++) {
        if (!rows[i].changes_code)
            continue;
        char v[200];
        xg_option_value(o, &rows[i], v, sizeof v);
        xe_text_printf(key, "|%s=%s", rows[i].name, v);
    }
}

/*
 * The key of a signature: its input types (of the tensors in, or types
 * when in is NULL), or (pattern given) its shape-generic program's pattern;
 * compiler is the target's compiler id (xg_cache_compiler_id).
 */
void xg_key_of(const char *fp, xe_tensor *const *in, const xe_type *types, int n,
               const char *pattern, xg_target target, int arch, const xg_options *o,
               const char *compiler, xe_text *key)
{
    xe_text_printf(key, "%s-%s|%s|", KEY_VERSION, xg_codegen_id, fp);
    if (pattern) {
        xe_text_printf(key, "generic:%s", pattern);
    } else {
        for (int k = 0; k < n; k++) {
            char ty[128];
            xe_type t = in ? (xe_type){in[k]->dtype, in[k]->shape} : types[k];
            xe_text_printf(key, "%s%s", k ? ";" : "", xe_type_str(&t, ty, sizeof ty));
        }
    }
    xe_text_printf(key, "|%s|arch=%d", xg_target_get(target)->name, arch);
    append_code_options(o, key);
    xe_text_printf(key, "|%s", compiler);
}
