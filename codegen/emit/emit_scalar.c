/*
 * An op's text in generated code beside the op table's (op_text.c, which
 * prints literals and the elementwise ops' ops.def expressions): casts,
 * which ops are costly (worth a buffer rather than a second computation),
 * and the part of executor/ir/scalar.h a program starts with. The same text
 * serves C and CUDA: both call the functions of scalar.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "emit_impl.h"

/* cast(x, to=DT) from a value of dtype from. */
void xg_cast_text(xe_dtype from, xe_dtype to, const char *a, char *buf, size_t len)
{
    if (to == XE_BOOL)
        snprintf(buf, len, "(uint8_t)(%s != 0)", a);
    else if (to == XE_I32 && xe_dtype_is_float(from))
        snprintf(buf, len, "xe_f64_to_i32((double)%s)", a);
    else if (to == XE_I64 && xe_dtype_is_float(from))
        snprintf(buf, len, "xe_f64_to_i64((double)%s)", a);
    else if (to == XE_I32 && from == XE_I64)
        snprintf(buf, len, "(int32_t)(uint32_t)(uint64_t)%s", a);
    else if (to == XE_F16 || to == XE_F32)
        snprintf(buf, len, "(float)(%s)", a);
    else
        snprintf(buf, len, "(%s)(%s)", value_type(to), a);
}

/* Ops worth a store and a load to compute once per element instead of once per phase (ops.def). */
bool xg_costly_op(int op)
{
    return (xe_op_get(op)->flags & XE_OPF_COSTLY) != 0;
}

/* executor/ir/scalar.h's text: its common part and the sections of the ops the program uses. */
void xg_emit_scalar_text(em *e)
{
    bool used[XE_OP_COUNT] = {false};
    for (int k = 0; k < e->p->body->n_nodes; k++)
        if (e->p->body->nodes[k]->op < XE_OP_COUNT)
            used[e->p->body->nodes[k]->op] = true;
    char *t = xg_scalar_text_for(used);
    if (!t) {
        e->oom = true;
        return;
    }
    xg_out(e, "%s\n", t);
    free(t);
}
