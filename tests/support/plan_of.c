/* The fusion plan of .xg text at its declared input types (plan_of.h). */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "support/plan_of.h"
#include "xlac/xlac.h"

xg_plan *xt_plan_of(const char *text, xe_graph **g)
{
    xe_status st = {0};
    *g = xe_parse_string(text, "plan.xg", &st);
    cr_assert_not_null(*g, "%s\n%s", st.msg, text);
    xe_type *types = calloc((size_t)(*g)->n_inputs + 1, sizeof *types);
    cr_assert_not_null(types);
    for (int k = 0; k < (*g)->n_inputs; k++)
        types[k] = (*g)->nodes[(*g)->inputs[k]]->type;
    xg_plan *p = NULL;
    xe_code c = xg_plan_build(*g, types, false, &p, &st);
    free(types);
    cr_assert_eq(c, XE_OK, "%s\n%s", st.msg, text);
    return p;
}
