/*
 * f16 rows staged in float (C loop nests): a loop kernel's f16 loads and
 * stores at the nest's own element, `float vN = h2f(pK[i]);` and
 * `pK[i] = f2h(X);`, become reads and writes of a float stack row, which
 * the backend's row helpers (render.h2f_row, f2h_row: the CPU's
 * vcvtph2ps / vcvtps2ph, 16 or 8 values an instruction) fill before the
 * simd loop and drain after it. gcc 12 vectorizes no f16 conversion of
 * its own (not `_Float16`, not F16C's scalar intrinsics), so in the loop
 * each conversion was scalar.h's integer form, a dozen vector operations
 * per 16 values (an fp16 ResNet's residual add and ReLU, an fp16 BERT's
 * GELU). The values are the same bits but for signalling NaNs loaded,
 * which vcvtph2ps quiets, as the per-op kernels' conversions do
 * (executor/devices/cpu/half.c).
 *
 * Only where it is plainly safe: a fixed-shape nest whose rows are the
 * loop that is split (its simd loop a row's), rows of 16 to 2048 values,
 * statements at the loop body's top level (a store in a branch is not
 * made for every element), and at most XG_STAGED_ROWS rows a kernel, so
 * the stack holds 64 KB at most.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_impl.h"

enum { XG_STAGED_ROWS = 8, XG_STAGED_MIN = 16, XG_STAGED_MAX = 2048 };

typedef struct staged {
    int node;
    bool store; /* written (drained after the loop); else read (filled before it) */
} staged;

/* The index of node's row among st[0, n) of this direction, adding it when there is room; -1 when
 * there is none. */
static int staged_row(staged *st, int *n, int node, bool store)
{
    for (int k = 0; k < *n; k++)
        if (st[k].node == node && st[k].store == store)
            return k;
    if (*n == XG_STAGED_ROWS)
        return -1;
    st[*n] = (staged){node, store};
    return (*n)++;
}

/* `    float vN = H2F(pK[i]);` with H2F the backend's: *var N and *node K. */
static bool staged_load(const em *e, const char *line, int *var, int *node)
{
    char fn[64];
    int end = 0;
    return sscanf(line, "    float v%d = %63[A-Za-z0-9_](p%d[i]);%n", var, fn, node, &end) == 3 &&
           end && !line[end] && !strcmp(fn, e->b->render.h2f);
}

/* `    pK[i] = F2H(X);` with F2H the backend's and X one token: *node K, X in x. */
static bool staged_store(const em *e, const char *line, int *node, char *x, size_t len)
{
    char fn[64], arg[64];
    int end = 0;
    if (sscanf(line, "    p%d[i] = %63[A-Za-z0-9_](%63[A-Za-z0-9_.]);%n", node, fn, arg, &end) !=
            3 ||
        !end || line[end] || strcmp(fn, e->b->render.f2h))
        return false;
    snprintf(x, len, "%s", arg);
    return true;
}

/* The line of body rewritten to its staged row, printed into out; whether it was. */
static bool stage_line(em *e, const char *line, staged *st, int *n, xe_text *out)
{
    int var, node;
    char x[64];
    if (staged_load(e, line, &var, &node)) {
        int k = staged_row(st, n, node, false);
        if (k >= 0)
            xe_text_printf(out, "    float v%d = xg_in%d[j];\n", var, node);
        return k >= 0;
    }
    if (staged_store(e, line, &node, x, sizeof x)) {
        int k = staged_row(st, n, node, true);
        if (k >= 0)
            xe_text_printf(out, "    xg_out%d[j] = %s;\n", node, x);
        return k >= 0;
    }
    return false;
}

char *xg_stage_f16_rows(em *e, const char *body, xe_text *before, xe_text *after)
{
    int64_t L = e->nest_l;
    if (!e->b->render.h2f_row || !e->nest_rows || L < XG_STAGED_MIN || L > XG_STAGED_MAX)
        return NULL;
    staged st[XG_STAGED_ROWS];
    int n = 0, depth = 0;
    xe_text out = {0};
    for (const char *c = body; *c;) {
        const char *nl = strchr(c, '\n');
        size_t len = nl ? (size_t)(nl - c) : strlen(c);
        char line[512];
        bool fits = len < sizeof line;
        if (fits)
            snprintf(line, sizeof line, "%.*s", (int)len, c);
        if (!(fits && depth == 0 && stage_line(e, line, st, &n, &out)))
            xe_text_printf(&out, "%.*s\n", (int)len, c);
        for (size_t k = 0; k < len; k++)
            depth += c[k] == '{' ? 1 : c[k] == '}' ? -1 : 0;
        c += len + (nl != NULL);
    }
    if (n == 0 || out.oom) {
        e->oom = e->oom || out.oom;
        xe_text_free(&out);
        return NULL;
    }
    for (int k = 0; k < n; k++) {
        const char *name = st[k].store ? "xg_out" : "xg_in";
        xe_text_printf(before, "    _Alignas(64) float %s%d[%lld];\n", name, st[k].node,
                       (long long)L);
        if (st[k].store)
            xe_text_printf(after, "    %s(xg_out%d, p%d + r * L, L);\n", e->b->render.f2h_row,
                           st[k].node, st[k].node);
        else
            xe_text_printf(before, "    %s(p%d + r * L, xg_in%d, L);\n", e->b->render.h2f_row,
                           st[k].node, st[k].node);
    }
    return out.buf;
}
