/*
 * The helpers ONNX op builders emit executor nodes with. A builder reads
 * its ONNX node through ox_in / ox_attr / ox_need_const and emits nodes
 * with ox_op and its short forms; each new node is inferred at once (so a
 * builder can ask ox_type about it) and folded to a constant when all its
 * inputs are constants. A helper that gets a failed operand (-1) or runs
 * after a failure returns -1 without doing anything, so a builder is a
 * straight line of calls with one ox_status at the end.
 *
 * Names: nodes get temporary names here; model.c gives the final ones. A
 * node that becomes an ONNX output is named after it (ox_out); the helper
 * nodes of a decomposition are named NAME.K after the ONNX node.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

/* ---- values and names --------------------------------------------------- */

int ox_value_get(ox_ctx *c, const char *name, bool *found)
{
    ox_value *v = NULL;
    HASH_FIND_STR(c->values, name, v);
    *found = v != NULL;
    return v ? v->node : -1;
}

xe_code ox_value_set(ox_ctx *c, const char *name, int node, xe_status *st)
{
    ox_value *v = NULL;
    HASH_FIND_STR(c->values, name, v);
    if (v) {
        v->node = node;
        v->swapped = false;
        ox_seq_free(v->seq);
        v->seq = NULL;
        return XE_OK;
    }
    if (!(v = calloc(1, sizeof *v)) || !(v->name = strdup(name))) {
        free(v);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    v->node = node;
    HASH_ADD_KEYPTR(hh, c->values, v->name, strlen(v->name), v);
    if (!xe_hash_added(v)) {
        free(v->name);
        free(v);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    return XE_OK;
}

const ox_value *ox_value_find(ox_ctx *c, const char *name)
{
    ox_value *v = NULL;
    HASH_FIND_STR(c->values, name, v);
    return v;
}

ox_seq *ox_seq_copy(const ox_seq *s)
{
    ox_seq *r = calloc(1, sizeof *r);
    if (r && s->n && !(r->nodes = malloc((size_t)s->n * sizeof *r->nodes))) {
        free(r);
        return NULL;
    }
    if (r) {
        r->dt = s->dt;
        r->n = s->n;
        if (s->n)
            memcpy(r->nodes, s->nodes, (size_t)s->n * sizeof *r->nodes);
    }
    return r;
}

void ox_seq_free(ox_seq *s)
{
    if (s)
        free(s->nodes);
    free(s);
}

xe_code ox_value_set_seq(ox_ctx *c, const char *name, const ox_seq *s, xe_status *st)
{
    ox_seq *copy = ox_seq_copy(s);
    if (!copy || ox_value_set(c, name, -1, st) != XE_OK) {
        ox_seq_free(copy);
        return st->code != XE_OK ? st->code : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    ox_value *v = NULL;
    HASH_FIND_STR(c->values, name, v);
    v->seq = copy;
    return XE_OK;
}

xe_code ox_value_set_swapped(ox_ctx *c, const char *name, int node, xe_status *st)
{
    if (ox_value_set(c, name, node, st) != XE_OK)
        return st->code;
    ox_value *v = NULL;
    HASH_FIND_STR(c->values, name, v);
    v->swapped = true;
    return XE_OK;
}

bool ox_value_swapped(ox_ctx *c, const char *name)
{
    ox_value *v = NULL;
    HASH_FIND_STR(c->values, name, v);
    return v && v->swapped;
}

char *ox_sanitize(const char *name)
{
    size_t n = strlen(name);
    char *s = malloc(n + 2), *p = s;
    if (!s)
        return NULL;
    if (!n || isdigit((unsigned char)name[0]) || name[0] == '.')
        *p++ = '_';
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)name[i];
        *p++ = isalnum(ch) || ch == '_' || ch == '.' ? (char)ch : '_';
    }
    *p = '\0';
    return s;
}

xe_code ox_names_reserve(ox_ctx *c, int node, xe_status *st)
{
    if (node < c->cap_names)
        return XE_OK;
    int cap = c->cap_names ? c->cap_names : 64;
    while (cap <= node)
        cap *= 2;
    char **w = realloc(c->want, (size_t)cap * sizeof *w);
    if (w)
        c->want = w;
    char **o = realloc(c->orig, (size_t)cap * sizeof *o);
    if (o)
        c->orig = o;
    unsigned char *f = realloc(c->final, (size_t)cap);
    if (f)
        c->final = f;
    if (!w || !o || !f)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int i = c->cap_names; i < cap; i++) {
        c->want[i] = c->orig[i] = NULL;
        c->final[i] = 0;
    }
    c->cap_names = cap;
    return XE_OK;
}

xe_code ox_want_name(ox_ctx *c, int node, const char *name, const char *orig, xe_status *st)
{
    if (ox_names_reserve(c, node, st) != XE_OK)
        return st->code;
    char *s = ox_sanitize(name), *o = orig && orig[0] ? strdup(orig) : NULL;
    if (!s || (orig && orig[0] && !o)) {
        free(s);
        free(o);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    free(c->want[node]);
    free(c->orig[node]);
    c->want[node] = s;
    c->orig[node] = o;
    return XE_OK;
}

/* ---- failures ------------------------------------------------------------- */

static xe_code vfail(ox_b *b, xe_code code, const char *fmt, va_list ap)
{
    if (!b->failed) {
        b->failed = true;
        b->st.code = code;
        vsnprintf(b->st.msg, sizeof b->st.msg, fmt, ap);
    }
    return b->st.code;
}

xe_code ox_unsupported(ox_b *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(b, XE_ERR_UNSUPPORTED, fmt, ap);
    va_end(ap);
    return b->st.code;
}

xe_code ox_invalid(ox_b *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(b, XE_ERR_GRAPH, fmt, ap);
    va_end(ap);
    return b->st.code;
}

xe_code ox_status(ox_b *b)
{
    return b->failed ? b->st.code : XE_OK;
}

bool ox_axis(ox_b *b, int64_t axis, int rank, int *out)
{
    if (axis < -(int64_t)rank || axis >= rank || (rank == 0 && axis != 0 && axis != -1)) {
        ox_invalid(b, "axis %lld is out of range for rank %d", (long long)axis, rank);
        return false;
    }
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

/* ---- attributes of the ONNX node --------------------------------------------- */

const Onnx__AttributeProto *ox_node_attr(const Onnx__NodeProto *np, const char *name)
{
    for (size_t k = 0; k < np->n_attribute; k++)
        if (np->attribute[k]->name && !strcmp(np->attribute[k]->name, name))
            return np->attribute[k];
    return NULL;
}

const Onnx__AttributeProto *ox_attr(ox_b *b, const char *name)
{
    return ox_node_attr(b->np, name);
}

int64_t ox_int(ox_b *b, const char *name, int64_t dflt)
{
    const Onnx__AttributeProto *a = ox_attr(b, name);
    return a ? a->i : dflt;
}

double ox_float(ox_b *b, const char *name, double dflt)
{
    const Onnx__AttributeProto *a = ox_attr(b, name);
    return a ? a->f : dflt;
}

const char *ox_str(ox_b *b, const char *name, const char *dflt)
{
    const Onnx__AttributeProto *a = ox_attr(b, name);
    if (!a)
        return dflt;
    size_t n = a->s.len < sizeof b->sbuf - 1 ? a->s.len : sizeof b->sbuf - 1;
    if (n)
        memcpy(b->sbuf, a->s.data, n);
    b->sbuf[n] = '\0';
    return b->sbuf;
}

int ox_ints(ox_b *b, const char *name, int64_t *v, int cap)
{
    const Onnx__AttributeProto *a = ox_attr(b, name);
    if (!a)
        return -1;
    if (a->n_ints > (size_t)cap) {
        ox_unsupported(b, "attribute %s has %zu values, at most %d are supported", name, a->n_ints,
                       cap);
        return -1;
    }
    for (size_t k = 0; k < a->n_ints; k++)
        v[k] = a->ints[k];
    return (int)a->n_ints;
}
