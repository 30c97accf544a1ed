/*
 * Einsum as transposes, reductions, reshapes and matmuls. Ellipses become
 * letters of their own (aligned at the right, as numpy broadcasts them).
 * Operands are combined left to right; each pair:
 *   1. letters only one operand has and nothing later needs are summed
 *      away in that operand;
 *   2. the letters both have and something later needs are the batch
 *      dims, the ones both have and nothing needs are contracted, the
 *      rest stay: A is laid out [batch, kept, contracted] and B
 *      [batch, contracted, kept], each flattened to three dims, and one
 *      matmul gives [batch, M, N], unflattened;
 * and the result is transposed into the output's order. Not supported: a
 * letter repeated within one operand (a diagonal), and dims that differ
 * between operands (other than by broadcasting ellipses of equal size).
 */
#include <stdio.h>
#include <string.h>

#include "onnx_impl.h"

#define OX_EINSUM_MAX 8 /* operands */

typedef struct term {
    int x;                   /* the node */
    char l[XE_MAX_RANK + 1]; /* one letter per dim */
} term;

/* Letter c's dim in t, or -1. */
static int dim_of(const term *t, char c)
{
    const char *p = strchr(t->l, c);
    return p && c ? (int)(p - t->l) : -1;
}

static int64_t size_of(ox_b *b, const term *t, char c)
{
    return ox_type(b, t->x)->shape.dims[dim_of(t, c)];
}

/* t transposed so its letters read `want` (a permutation of them). */
static term arrange(ox_b *b, term t, const char *want)
{
    int r = (int)strlen(t.l), perm[XE_MAX_RANK];
    bool same = true;
    for (int d = 0; d < r; d++) {
        perm[d] = dim_of(&t, want[d]);
        same &= perm[d] == d;
    }
    if (!same)
        t.x = ox_transpose(b, t.x, perm, r);
    snprintf(t.l, sizeof t.l, "%s", want);
    return t;
}

/* t with the letters not in keep summed away. */
static term sum_away(ox_b *b, term t, const char *keep)
{
    int64_t axes[XE_MAX_RANK];
    int n = 0;
    char rest[XE_MAX_RANK + 1] = "";
    for (int d = 0; t.l[d]; d++) {
        if (strchr(keep, t.l[d]))
            strncat(rest, &t.l[d], 1);
        else
            axes[n++] = d;
    }
    if (n) {
        t.x = ox_reduce(b, XE_OP_REDUCE_SUM, t.x, axes, n, false);
        snprintf(t.l, sizeof t.l, "%s", rest);
    }
    return t;
}

/* The product of the sizes of letters ls in t. */
static int64_t volume(ox_b *b, const term *t, const char *ls)
{
    int64_t v = 1;
    for (; *ls; ls++)
        v *= size_of(b, t, *ls);
    return v;
}

/* a and b combined, keeping the letters in need (what later operands and the output use). */
static term pair(ox_b *b, term a, term c, const char *need)
{
    char batch[XE_MAX_RANK + 1] = "", con[XE_MAX_RANK + 1] = "", ka[XE_MAX_RANK + 1] = "",
                             kc[XE_MAX_RANK + 1] = "";
    char keep_a[2 * XE_MAX_RANK + 2], keep_c[2 * XE_MAX_RANK + 2];
    snprintf(keep_a, sizeof keep_a, "%s%s", need, c.l);
    snprintf(keep_c, sizeof keep_c, "%s%s", need, a.l);
    a = sum_away(b, a, keep_a); /* 1. */
    c = sum_away(b, c, keep_c);
    for (int d = 0; a.l[d]; d++) {
        bool both = dim_of(&c, a.l[d]) >= 0, needed = strchr(need, a.l[d]) != NULL;
        strncat(both ? (needed ? batch : con) : ka, &a.l[d], 1);
    }
    for (int d = 0; c.l[d]; d++)
        if (dim_of(&a, c.l[d]) < 0)
            strncat(kc, &c.l[d], 1);
    char shared[2 * XE_MAX_RANK + 1];
    snprintf(shared, sizeof shared, "%s%s", batch, con);
    for (int d = 0; shared[d]; d++) {
        char l = shared[d];
        if (size_of(b, &a, l) != size_of(b, &c, l)) {
            ox_unsupported(b, "Einsum letter '%c' has sizes %lld and %lld", l,
                           (long long)size_of(b, &a, l), (long long)size_of(b, &c, l));
            return a;
        }
    }
    char la[XE_MAX_RANK + 1], lc[XE_MAX_RANK + 1], lo[XE_MAX_RANK + 1];
    snprintf(la, sizeof la, "%s%s%s", batch, ka, con);
    snprintf(lc, sizeof lc, "%s%s%s", batch, con, kc);
    snprintf(lo, sizeof lo, "%s%s%s", batch, ka, kc);
    a = arrange(b, a, la);
    c = arrange(b, c, lc);
    int nb = (int)strlen(batch);
    int64_t sa[XE_MAX_RANK], sc[XE_MAX_RANK], so[XE_MAX_RANK];
    for (int d = 0; d < nb; d++)
        sa[d] = sc[d] = size_of(b, &a, batch[d]);
    sa[nb] = volume(b, &a, ka);
    sa[nb + 1] = sc[nb] = volume(b, &a, con);
    sc[nb + 1] = volume(b, &c, kc);
    int in[2] = {ox_reshape(b, a.x, sa, nb + 2), ox_reshape(b, c.x, sc, nb + 2)};
    term out = {.x = ox_op(b, XE_OP_MATMUL, in, 2, NULL, 0)};
    for (int d = 0; lo[d]; d++)
        so[d] = dim_of(&a, lo[d]) >= 0 ? size_of(b, &a, lo[d]) : size_of(b, &c, lo[d]);
    out.x = ox_reshape(b, out.x, so, (int)strlen(lo));
    snprintf(out.l, sizeof out.l, "%s", lo);
    return out;
}

/* Whether s[0, len) holds an ellipsis. */
static bool has_ellipsis(const char *s, size_t len)
{
    for (size_t i = 0; i + 2 < len; i++)
        if (s[i] == '.' && s[i + 1] == '.' && s[i + 2] == '.')
            return true;
    return false;
}

/* One operand's letters from the equation, its ellipsis spelled with letters 'A'...
 * (right-aligned). */
static bool letters(ox_b *b, const char *s, size_t len, int rank, int ell_rank, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            if (i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
                return ox_invalid(b, "a '.' outside an ellipsis"), false;
            int e = rank - ((int)len - 3); /* dims the ellipsis covers here */
            for (int k = 0; k < e; k++)
                out[n++] = (char)('A' + ell_rank - e + k);
            i += 2;
        } else if (s[i] >= 'a' && s[i] <= 'z') {
            if (n < XE_MAX_RANK && memchr(out, s[i], n))
                return ox_unsupported(
                           b, "Einsum with a repeated letter in one operand is not supported"),
                       false;
            out[n++] = s[i];
        } else {
            return ox_invalid(b, "'%c' in an Einsum equation", s[i]), false;
        }
        if (n > XE_MAX_RANK)
            return ox_invalid(b, "an Einsum term above rank %d", XE_MAX_RANK), false;
    }
    out[n] = '\0';
    if ((int)n != rank)
        return ox_invalid(b, "an Einsum term of %zu letters for an operand of rank %d", n, rank),
               false;
    return true;
}

/* The widest ellipsis of the n operand terms of eqs (arrow: its "->", or NULL). */
static int ellipsis_width(ox_b *b, const char *eqs, const char *arrow, int n)
{
    int ell = 0;
    const char *p = eqs;
    for (int k = 0; k < n; k++) {
        const char *end = strchr(p, k + 1 < n ? ',' : (arrow ? '-' : '\0'));
        size_t len = end ? (size_t)(end - p) : strlen(p);
        int r = ox_rank(b, ox_in(b, k));
        if (has_ellipsis(p, len) && r - ((int)len - 3) > ell)
            ell = r - ((int)len - 3);
        p = end ? end + 1 : p + len;
    }
    return ell;
}

/* An implicit output (no "->"): the ellipsis, then the letters used once, sorted. */
static void implicit_output(const term *t, int n, int ell, char *out)
{
    for (int e = 0; e < ell; e++)
        out[strlen(out)] = (char)('A' + e);
    for (char c = 'a'; c <= 'z'; c++) {
        int uses = 0;
        for (int k = 0; k < n; k++)
            uses += dim_of(&t[k], c) >= 0;
        if (uses == 1)
            strncat(out, &c, 1);
    }
}

xe_code ox_b_einsum(ox_b *b)
{
    const char *eq = ox_str(b, "equation", "");
    char eqs[256], out[XE_MAX_RANK + 1] = "";
    size_t m = 0;
    for (; *eq && m + 1 < sizeof eqs; eq++) /* without spaces */
        if (*eq != ' ')
            eqs[m++] = *eq;
    eqs[m] = '\0';
    char *arrow = strstr(eqs, "->");
    int n = b->n_in;
    term t[OX_EINSUM_MAX];
    if (n < 1 || n > OX_EINSUM_MAX)
        return ox_unsupported(b, "Einsum of %d operands is not supported (1 to %d are)", n,
                              OX_EINSUM_MAX);
    for (int k = 0; k < n; k++)
        if (ox_in(b, k) < 0 || !xe_dtype_is_float(ox_type(b, ox_in(b, k))->dtype))
            return ox_in(b, k) < 0 ? ox_status(b)
                                   : ox_unsupported(b, "Einsum of integers is not supported");
    int ell = ellipsis_width(b, eqs, arrow, n);
    const char *p = eqs;
    for (int k = 0; k < n; k++) {
        const char *end = k + 1 < n ? strchr(p, ',') : arrow ? arrow : p + strlen(p);
        if (!end)
            return ox_invalid(b, "the equation '%s' names fewer operands than the %d given", eqs,
                              n);
        t[k].x = ox_in(b, k);
        if (!letters(b, p, (size_t)(end - p), ox_rank(b, t[k].x), ell, t[k].l))
            return ox_status(b);
        p = end + 1;
    }
    if (arrow) {
        if (!letters(b, arrow + 2, strlen(arrow + 2),
                     ell + (int)strlen(arrow + 2) - (strstr(arrow, "...") ? 3 : 0), ell, out))
            return ox_status(b);
    } else {
        implicit_output(t, n, ell, out);
    }
    term acc = t[0];
    for (int k = 1; k < n && !b->failed; k++) {
        char need[XE_MAX_RANK * OX_EINSUM_MAX + XE_MAX_RANK + 1];
        snprintf(need, sizeof need, "%s", out);
        for (int j = k + 1; j < n; j++)
            strncat(need, t[j].l, sizeof need - strlen(need) - 1);
        acc = pair(b, acc, t[k], need);
    }
    acc = sum_away(b, acc, out);
    if (!b->failed && strlen(acc.l) != strlen(out))
        return ox_unsupported(b, "Einsum output '%s' needs letters the operands do not have", out);
    acc = arrange(b, acc, out);
    ox_out(b, 0, acc.x);
    return ox_status(b);
}
