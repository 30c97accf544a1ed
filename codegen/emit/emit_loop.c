/*
 * Loop kernels (XG_STEP_LOOP): one loop over the elements of the step's
 * shape computing each output at the loop's index. A backend with a
 * nest_begin hook (the CPU) runs a loop of rank > 1 as a nest, rows then
 * a simd loop along the last dim, with what depends on the row only
 * hoisted out of the simd loop; the GPU runs one grid-stride loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit_impl.h"

/* "    TYPE vN = ...;" or "    TYPE vN;": the variable number declared, or -1. */
static int declared_var(const char *line, bool *has_init)
{
    char type[32];
    int num = -1, end = 0;
    *has_init = false;
    if (sscanf(line, " %31[A-Za-z0-9_] v%d%n", type, &num, &end) != 2 || !strcmp(type, "const"))
        return -1;
    const char *rest = line + end;
    while (*rest == ' ')
        rest++;
    *has_init = *rest == '=';
    return *has_init || *rest == ';' ? num : -1;
}

static bool writes(const xg_step *s, int node)
{
    for (int k = 0; k < s->n_outs; k++)
        if (s->outs[k] == node)
            return true;
    return false;
}

/* Whether the text after '=' mentions i, j, a loop-dependent variable, or a buffer the step writes.
 */
static bool depends_on_loop(const char *t, const bool *dep, int n_vars, const xg_step *s)
{
    while (*t) {
        if (*t >= '0' && *t <= '9') { /* a number, hex floats included */
            while (*t == '.' || *t == '_' || (*t >= '0' && *t <= '9') ||
                   ((*t | 32) >= 'a' && (*t | 32) <= 'z'))
                t++;
            continue;
        }
        if (!(*t == '_' || ((*t | 32) >= 'a' && (*t | 32) <= 'z'))) {
            t++;
            continue;
        }
        const char *w = t;
        while (*t == '_' || (*t >= '0' && *t <= '9') || ((*t | 32) >= 'a' && (*t | 32) <= 'z'))
            t++;
        size_t n = (size_t)(t - w);
        int num = -1;
        if (n == 1 && (*w == 'i' || *w == 'j'))
            return true;
        if ((*w == 'v' || *w == 'p') && n > 1 && sscanf(w + 1, "%d", &num) == 1 &&
            strspn(w + 1, "0123456789") == n - 1) {
            if (*w == 'v' && num >= 0 && num < n_vars && dep[num])
                return true;
            if (*w == 'p' && *t == '[' && writes(s, num))
                return true;
        }
    }
    return false;
}

/* How much a line of generated code deepens its braces ('{' less '}'). */
static int brace_delta(const char *line)
{
    int d = 0;
    for (const char *c = line; *c; c++)
        d += *c == '{' ? 1 : *c == '}' ? -1 : 0;
    return d;
}

/*
 * The statements of a CPU loop body (text from mark on, emitted without
 * the inner loop's header) are split: those that do not depend on the
 * inner index (a row's scale, a broadcast operand's load, rsqrt of a
 * variance) are printed before the inner loop, the rest are returned
 * (malloc'd) for the loop itself. A statement inside a branch, or one
 * that declares without a value, stays in the loop, and so does all
 * that depends on it. *dep_out gets, per variable, whether it stayed
 * (the caller frees it).
 */
static char *hoist_row_invariants(em *e, size_t mark, const xg_step *s, bool **dep_out)
{
    if (e->oom)
        return NULL;
    char *body = strndup(e->text.buf + mark, e->text.len - mark);
    bool *dep = calloc((size_t)e->var + 1, sizeof *dep);
    char *rest = calloc(1, e->text.len - mark + 2);
    if (!body || !dep || !rest) {
        free(body);
        free(dep);
        free(rest);
        e->oom = true;
        return NULL;
    }
    xe_text_truncate(&e->text, mark);
    size_t used = 0;
    int depth = 0;
    for (char *line = body, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        bool has_init, braces = strpbrk(line, "{}") != NULL;
        int v = declared_var(line, &has_init);
        bool hoist = depth == 0 && !braces && v >= 0 && v < e->var && has_init &&
                     !depends_on_loop(strchr(line, '=') + 1, dep, e->var, s);
        if (v >= 0 && v < e->var && !hoist)
            dep[v] = true;
        if (hoist)
            xg_out(e, "%s\n", line);
        else
            used += (size_t)sprintf(rest + used, "%s\n", line);
        depth += brace_delta(line);
    }
    free(body);
    *dep_out = dep;
    return rest;
}

/* ---- unswitching: a branch chain whose conditions hold for the whole row -------------- */

enum { MAX_SIMD_LOOPS = 16 }; /* copies of a kernel's simd loop that unswitching may make */

/* The lines of text (malloc'd array of malloc'd lines, no newlines); NULL out of memory. */
static char **split_lines(const char *text, int *n)
{
    int cap = 1;
    for (const char *c = text; *c; c++)
        cap += *c == '\n';
    char **lines = calloc((size_t)cap, sizeof *lines);
    *n = 0;
    for (const char *c = text; lines && *c;) {
        const char *nl = strchr(c, '\n');
        size_t len = nl ? (size_t)(nl - c) : strlen(c);
        if (!(lines[(*n)++] = strndup(c, len))) {
            for (int k = 0; k < *n; k++)
                free(lines[k]);
            free(lines);
            return NULL;
        }
        c += len + (nl != NULL);
    }
    return lines;
}

/* A chain's branch header ("    if (C) {", "    else if (C) {", "    else {"): C in cond. */
static bool branch_header(const char *line, bool first, char *cond, size_t len)
{
    const char *open = first ? "    if (" : "    else if (";
    size_t n = strlen(line), k = strlen(open);
    cond[0] = '\0';
    if (!first && !strcmp(line, "    else {"))
        return true;
    if (strncmp(line, open, k) || n < k + 3 || strcmp(line + n - 3, ") {"))
        return false;
    snprintf(cond, len, "%.*s", (int)(n - k - 3), line + k);
    return true;
}

/*
 * The first chain at depth 0 of lines [0, n) whose every condition is
 * loop-invariant: its header lines in head[] (each branch's body is
 * (head[b], head[b + 1]) and the chain ends at head[nb] - 1, its last
 * close), nb its branches; false when there is none.
 */
static bool invariant_chain(char **lines, int n, const bool *dep, int n_vars, const xg_step *s,
                            int *head, int *nb)
{
    for (int at = 0, depth = 0; at < n; depth += brace_delta(lines[at]), at++) {
        char cond[256];
        if (depth || !branch_header(lines[at], true, cond, sizeof cond))
            continue;
        bool invariant = true;
        int b = 0, l = at;
        while (l < n && b < 63 && branch_header(lines[l], b == 0, cond, sizeof cond)) {
            invariant = invariant && !depends_on_loop(cond, dep, n_vars, s);
            head[b++] = l;
            for (int d = brace_delta(lines[l++]); l < n && d > 0; l++)
                d += brace_delta(lines[l]);
            if (!cond[0])
                break; /* "else {" ends the chain */
        }
        head[b] = l;
        if (invariant && b > 1) {
            *nb = b;
            return true;
        }
        at = l - 1;
    }
    return false;
}

/*
 * Prints the simd loop over body: as it is, or, when it holds a chain of
 * branches whose conditions hold for the whole row (a concat along an
 * outer axis), as that chain with one simd loop per branch around the
 * rest of the body and that branch's statements. A condition tested per
 * element made gcc compute every branch with masks: 52 ms for a concat
 * that runs in 1.5 unswitched. At most MAX_SIMD_LOOPS loops per kernel.
 */
static void emit_simd_loops(em *e, const char *inner, const char *body, const bool *dep,
                            const xg_step *s, int *loops)
{
    int n = 0, head[64], nb = 0;
    char **lines = split_lines(body, &n);
    if (!lines)
        e->oom = true;
    if (!lines || !invariant_chain(lines, n, dep, e->var, s, head, &nb) ||
        *loops + nb - 1 > MAX_SIMD_LOOPS) {
        xg_out(e,
               "%s    for (xg_idx j = 0; j < L; j++) {\n    const xg_idx i = r * L + j;\n%s    }\n",
               inner, body);
    } else {
        *loops += nb - 1;
        for (int b = 0; b < nb; b++) {
            xe_text t = {0};
            for (int l = 0; l < n; l++)
                if (l < head[0] || l >= head[nb] || (l > head[b] && l < head[b + 1] - 1))
                    xe_text_printf(&t, "%s\n", lines[l]);
            xg_out(e, "%s\n", lines[head[b]]);
            if (t.oom)
                e->oom = true;
            else
                emit_simd_loops(e, inner, t.buf ? t.buf : "", dep, s, loops);
            xg_out(e, "    }\n");
            xe_text_free(&t);
        }
    }
    for (int l = 0; l < n; l++)
        free(lines[l]);
    free(lines);
}

/*
 * A loop kernel. On the GPU one grid-stride loop over flat indices; on
 * the CPU a loop nest: rows (every dim but the last, indices from one
 * division per row) in parallel, and a simd loop along the last dim, so
 * broadcast operands need no division per element, and what depends on
 * the row only (a broadcast operand's load, rsqrt of a variance) is
 * computed once per row, before the simd loop. Outputs with few rows
 * parallelise the inner loop instead.
 */
void xg_emit_loop_kernel(em *e, int step, const xg_step *s)
{
    char n[256];
    int root = s->outs[0];
    const xe_shape *sh = shape_of(e, root);
    const char *inner = NULL; /* CPU row loop nest: the inner loop's pragma */
    idx ix;
    xg_kernel_begin(e, step);
    xg_numel_text(e, root, n, sizeof n);
    xg_out(e, "    const xg_idx n = %s;\n", n);
    bool nest = e->b->render.nest_begin && sh->rank > 1;
    if (!nest) {
        xg_out(e, "%s", e->b->render.flat_loop);
        xg_idx_from_flat(e, root, "i", &ix);
    } else {
        inner = e->b->render.nest_begin(e, root, &ix);
    }
    size_t mark = e->text.len;
    for (int k = 0; k < s->n_outs; k++) {
        char v[16];
        xg_emit_compute(e, s->outs[k], &ix, v, sizeof v);
        xg_memo_add(e, s->outs[k], &ix, v);
        xg_emit_store(e, s->outs[k], "i", v);
    }
    if (inner) { /* the row's invariants first, then the simd loop(s) along the last dim */
        bool *dep = NULL;
        char *rest = hoist_row_invariants(e, mark, s, &dep);
        int loops = 1;
        xe_text before = {0}, after = {0};
        char *staged = rest ? xg_stage_f16_rows(e, rest, &before, &after) : NULL;
        if (staged) {
            free(rest);
            rest = staged;
        }
        if (before.oom || after.oom)
            e->oom = true;
        else if (rest) {
            xg_out(e, "%s", before.buf ? before.buf : "");
            emit_simd_loops(e, inner, rest, dep, s, &loops);
            xg_out(e, "%s", after.buf ? after.buf : "");
        }
        xe_text_free(&before);
        xe_text_free(&after);
        free(rest);
        free(dep);
    }
    xg_out(e, "    }\n}\n\n");
}
