/*
 * Steps that run an earlier step's kernel on their own buffers (share.h):
 * a kernel body's identity, and the list of shares as plan-text lines and
 * back.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "share.h"
#include "xlac/text.h"
#include "xlac/vec.h"

/* distinct locals of one prefix in a kernel; more: no key (never shared) */
#define MAX_LOCALS 4096

bool xg_shares_add(xg_shares *s, int step, int from, const int *theirs, const int *ours, int n)
{
    xg_share *v = XE_VEC_GROW(s->v, s->cap, s->n + 1, 8);
    if (!v)
        return false;
    s->v = v;
    xg_share *h = &s->v[s->n];
    *h = (xg_share){.step = step, .from = from, .n = n};
    h->theirs = malloc(sizeof *h->theirs * (size_t)(n + 1));
    h->ours = malloc(sizeof *h->ours * (size_t)(n + 1));
    if (!h->theirs || !h->ours) {
        free(h->theirs);
        free(h->ours);
        return false;
    }
    memcpy(h->theirs, theirs, sizeof *theirs * (size_t)n);
    memcpy(h->ours, ours, sizeof *ours * (size_t)n);
    s->n++;
    return true;
}

void xg_shares_free(xg_shares *s)
{
    for (int i = 0; i < s->n; i++) {
        free(s->v[i].theirs);
        free(s->v[i].ours);
    }
    free(s->v);
    *s = (xg_shares){0};
}

const xg_share *xg_shares_find(const xg_shares *s, int step)
{
    for (int i = 0; s && i < s->n; i++)
        if (s->v[i].step == step)
            return &s->v[i];
    return NULL;
}

void xg_share_pointers(const xg_share *h, void *const *ptrs, void **out, size_t n)
{
    memcpy(out, ptrs, sizeof *out * n);
    for (int k = 0; k < h->n; k++)
        out[h->theirs[k]] = ptrs[h->ours[k]];
}

static void list_text(xe_text *t, const int *v, int n)
{
    for (int k = 0; k < n; k++)
        xe_text_printf(t, "%s%d", k ? "," : "", v[k]);
}

bool xg_shares_append_text(const xg_shares *s, char **text)
{
    xe_text t = {0};
    xe_text_printf(&t, "%s", *text);
    for (int i = 0; i < s->n; i++) {
        const xg_share *h = &s->v[i];
        xe_text_printf(&t, "shared: xg_k%d runs the kernel of xg_k%d with buffers ", h->step,
                       h->from);
        list_text(&t, h->ours, h->n);
        xe_text_printf(&t, " in place of ");
        list_text(&t, h->theirs, h->n);
        xe_text_printf(&t, "\n");
    }
    char *out = xe_text_take(&t);
    if (!out)
        return false;
    free(*text);
    *text = out;
    return true;
}

/* A comma-separated list of at most max node numbers at *s (advanced past it), each a materialized
 * node. */
static int parse_list(const char **s, const xg_plan *p, int *v, int max)
{
    int n = 0;
    for (;;) {
        char *end;
        long x = strtol(*s, &end, 10);
        if (end == *s || x < 0 || x >= p->body->n_nodes || !p->mat[x] || n == max)
            return -1;
        v[n++] = (int)x;
        *s = end;
        if (**s != ',')
            return n;
        (*s)++;
    }
}

static bool generated(const xg_plan *p, int step)
{
    return step >= 0 && step < p->n_steps && p->steps[step].kind != XG_STEP_LIBRARY;
}

/* One line at *s (advanced past its newline); false if it is not a share of this plan. */
static bool parse_line(const char **s, const xg_plan *p, xg_shares *out, int *ours, int *theirs)
{
    int step, from, used = 0;
    if (sscanf(*s, "shared: xg_k%d runs the kernel of xg_k%d with buffers %n", &step, &from,
               &used) != 2 ||
        !used)
        return false;
    *s += used;
    int n = parse_list(s, p, ours, p->body->n_nodes);
    static const char mid[] = " in place of ";
    if (n < 0 || strncmp(*s, mid, sizeof mid - 1) != 0)
        return false;
    *s += sizeof mid - 1;
    if (parse_list(s, p, theirs, p->body->n_nodes) != n || **s != '\n')
        return false;
    (*s)++;
    if (!generated(p, step) || !generated(p, from) || from >= step || xg_shares_find(out, step) ||
        xg_shares_find(out, from))
        return false;
    return xg_shares_add(out, step, from, theirs, ours, n);
}

bool xg_shares_parse(const char *text, const xg_plan *p, xg_shares *out)
{
    *out = (xg_shares){0};
    int *ours = malloc(sizeof *ours * (size_t)(p->body->n_nodes + 1));
    int *theirs = malloc(sizeof *theirs * (size_t)(p->body->n_nodes + 1));
    bool ok = ours && theirs;
    while (ok && *text)
        ok = parse_line(&text, p, out, ours, theirs);
    free(ours);
    free(theirs);
    if (!ok)
        xg_shares_free(out);
    return ok;
}

/* ---- a body's identity ------------------------------------------------------------ */

/* The renumbered prefixes: a buffer pointer, then the emitters' locals (emit_row.c, emit.c). */
static const char *const prefixes[] = {"p", "v", "a", "sh", "rc"};
enum { N_PREFIXES = sizeof prefixes / sizeof prefixes[0] };

typedef struct renumber {
    long *seen[N_PREFIXES]; /* per prefix: the numbers met so far, in order */
    int n[N_PREFIXES];
    int cap; /* room in each: a body of L bytes names fewer than L / 2 + 1 */
} renumber;

/* Which prefix the identifier tok (len bytes) is, with its number in *num; -1 if none. */
static int prefix_of(const char *tok, size_t len, long *num)
{
    size_t letters = 0;
    while (letters < len && islower((unsigned char)tok[letters]))
        letters++;
    if (letters == 0 || letters == len)
        return -1;
    for (size_t i = letters; i < len; i++)
        if (!isdigit((unsigned char)tok[i]))
            return -1;
    for (int k = 0; k < N_PREFIXES; k++)
        if (strlen(prefixes[k]) == letters && strncmp(tok, prefixes[k], letters) == 0) {
            *num = strtol(tok + letters, NULL, 10);
            return k;
        }
    return -1;
}

/* The ordinal of num among prefix k's numbers, added if new; -1 when too many. */
static int ordinal(renumber *r, int k, long num)
{
    for (int i = 0; i < r->n[k]; i++)
        if (r->seen[k][i] == num)
            return i;
    if (r->n[k] == r->cap)
        return -1;
    r->seen[k][r->n[k]] = num;
    return r->n[k]++;
}

/* Skips a comment at s (returns past it) or returns s. */
static const char *skip_comment(const char *s)
{
    if (s[0] != '/' || s[1] != '*')
        return s;
    const char *end = strstr(s + 2, "*/");
    return end ? end + 2 : s + strlen(s);
}

static bool key_text(const char *body, int n_nodes, renumber *r, xe_text *t)
{
    for (const char *s = body; *s;) {
        const char *c = skip_comment(s);
        if (c != s) {
            s = c;
            continue;
        }
        if (isalpha((unsigned char)*s) || *s == '_' || isdigit((unsigned char)*s)) {
            size_t len = 1; /* an identifier, or a number (whose letters are not a name) */
            while (isalnum((unsigned char)s[len]) || s[len] == '_' ||
                   (isdigit((unsigned char)*s) && s[len] == '.'))
                len++;
            long num;
            int k = isdigit((unsigned char)*s) ? -1 : prefix_of(s, len, &num);
            int o = k < 0 ? 0 : ordinal(r, k, num);
            if (o < 0 || (k == 0 && (num < 0 || num >= n_nodes)))
                return false;
            if (k < 0)
                xe_text_append(t, s, len);
            else
                xe_text_printf(t, "%s#%d", prefixes[k], o);
            s += len;
            continue;
        }
        xe_text_append(t, s, 1);
        s++;
    }
    return true;
}

char *xg_kernel_key(const char *body, int n_nodes, int *order, int *n_order)
{
    size_t most = strlen(body) / 2 + 1;
    renumber r = {.cap = most < MAX_LOCALS ? (int)most : MAX_LOCALS};
    xe_text t = {0};
    bool ok = true;
    for (int k = 0; k < N_PREFIXES; k++)
        ok = ok && (r.seen[k] = malloc(sizeof(long) * (size_t)r.cap));
    ok = ok && key_text(body, n_nodes, &r, &t);
    if (ok) {
        for (int i = 0; i < r.n[0]; i++)
            order[i] = (int)r.seen[0][i];
        *n_order = r.n[0];
    }
    for (int k = 0; k < N_PREFIXES; k++)
        free(r.seen[k]);
    char *key = xe_text_take(&t);
    if (!ok) {
        free(key);
        return NULL;
    }
    return key;
}
