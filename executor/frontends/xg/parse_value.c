/*
 * The .xg parser's values: types, literals (nested lists of numbers, for
 * constants and list attributes), attribute values with the checks of
 * attrs.def (which names an op accepts, which kind each must have), and
 * constants. parse.c reads lines and statements and calls these.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse_impl.h"
#include "xlac/io.h"
#include "xlac/op.h"
#include "xlac/vec.h"

#define MAX_LIST_DEPTH 32
#define MAX_TYPE_ELEMS ((int64_t)1 << 48)

/* One number of a literal, with where it was written. */
typedef struct lit_elem {
    double f;    /* the value (ints converted) */
    int64_t i;   /* exact value of an integer or true/false */
    bool is_int; /* written as an integer or true/false */
    int col;     /* column of the token */
} lit_elem;

/* A literal: numbers in order, flattened, for const values and lists. */
typedef struct literal {
    int n, cap;
    lit_elem *e;
    bool all_int;
    const xe_shape *shape; /* const: nested lists must match it; NULL for attributes */
} literal;

/* Copies an identifier token into a NUL-terminated buffer. */
void xe_parse_tok_str(const xe_tok *t, char *buf, size_t len)
{
    size_t n = t->len < len - 1 ? t->len : len - 1;
    memcpy(buf, t->text, n);
    buf[n] = '\0';
}

/* ---- types and literals ---------------------------------------------------- */

/* type = DTYPE "[" [ dim { "," dim } ] "]" */
xe_code xe_parse_type(parser *p, xe_type *t, bool allow_unknown)
{
    if (p->tok.kind != XE_TOK_IDENT || !xe_dtype_parse(p->tok.text, p->tok.len, &t->dtype))
        return p->tok.kind == XE_TOK_IDENT
                   ? xe_parse_fail(
                         p, p->tok.col,
                         "unknown dtype '%.*s' (expected f32, f64, f16, i32, i64 or bool)",
                         (int)p->tok.len, p->tok.text)
                   : xe_parse_expected(p, "a type such as f32[2,3]");
    xe_parse_advance(p);
    if (xe_parse_expect_punct(p, '[') != XE_OK)
        return p->st->code;
    t->shape.rank = 0;
    int64_t known = 1; /* product of the known dims, kept below MAX_TYPE_ELEMS */
    while (!xe_tok_punct(&p->tok, ']')) {
        if (t->shape.rank == XE_MAX_RANK)
            return xe_parse_fail(p, p->tok.col, "rank above %d is not supported", XE_MAX_RANK);
        if (t->shape.rank > 0 && xe_parse_expect_punct(p, ',') != XE_OK)
            return p->st->code;
        if (xe_tok_punct(&p->tok, '?')) {
            if (!allow_unknown)
                return xe_parse_fail(p, p->tok.col, "a constant's shape must be fully known");
            t->shape.dims[t->shape.rank++] = XE_DIM_UNKNOWN;
        } else if (p->tok.kind == XE_TOK_INT && p->tok.i >= 0 && p->tok.i < ((int64_t)1 << 40)) {
            if (p->tok.i > 0 && known > MAX_TYPE_ELEMS / p->tok.i)
                return xe_parse_fail(p, p->tok.col, "shape too large (more than %lld elements)",
                                     (long long)MAX_TYPE_ELEMS);
            known *= p->tok.i ? p->tok.i : 1;
            t->shape.dims[t->shape.rank++] = p->tok.i;
        } else {
            return xe_parse_expected(p, "a dimension (a non-negative integer or '?')");
        }
        xe_parse_advance(p);
    }
    xe_parse_advance(p);
    return XE_OK;
}

static bool literal_push(literal *l, double f, int64_t i, bool is_int, int col)
{
    if (l->n == l->cap) {
        if (l->cap > (1 << 28))
            return false;
        lit_elem *e = XE_VEC_GROW(l->e, l->cap, l->n + 1, 16);
        if (!e)
            return false;
        l->e = e;
    }
    l->e[l->n++] = (lit_elem){.f = f, .i = is_int ? i : 0, .is_int = is_int, .col = col};
    l->all_int &= is_int;
    return true;
}

static void literal_free(literal *l)
{
    free(l->e);
}

/* One scalar of a literal: INT, FLOAT, true, false, nan, inf, -inf. */
static xe_code parse_scalar(parser *p, literal *l)
{
    const xe_tok *t = &p->tok;
    bool ok, is_true = xe_tok_is(t, "true");
    if (t->kind == XE_TOK_INT)
        ok = literal_push(l, (double)t->i, t->i, true, t->col);
    else if (t->kind == XE_TOK_FLOAT)
        ok = literal_push(l, t->f, 0, false, t->col);
    else if (is_true || xe_tok_is(t, "false"))
        ok = literal_push(l, is_true, is_true, true, t->col);
    else if (xe_tok_is(t, "nan"))
        ok = literal_push(l, NAN, 0, false, t->col);
    else if (xe_tok_is(t, "inf") || xe_tok_is(t, "-inf"))
        ok = literal_push(l, xe_tok_is(t, "inf") ? INFINITY : -INFINITY, 0, false, t->col);
    else
        return xe_parse_expected(p, "a number");
    if (!ok)
        return xe_fail(p->st, XE_ERR_NOMEM, "out of memory");
    xe_parse_advance(p);
    return XE_OK;
}

/*
 * A constant's nested list must follow its shape: the list at depth d has
 * dims[d-1] items, and numbers sit at depth rank. A flat list (depth 1 of
 * numbers only) is checked by its element count instead.
 */
static xe_code check_nesting(parser *p, const literal *l, int depth, int col, int count,
                             bool has_list, bool has_num)
{
    const xe_shape *s = l->shape;
    if (has_list && has_num)
        return xe_parse_fail(p, col, "a list mixes numbers and lists");
    if (!s || (depth == 1 && !has_list))
        return XE_OK;
    char buf[160];
    xe_shape_str(s, buf, sizeof buf);
    if (depth > s->rank || (has_list && depth == s->rank) || (has_num && depth != s->rank))
        return xe_parse_fail(p, col, "the nested list does not match the shape %s: wrong depth %d",
                             buf, depth + (has_list ? 1 : 0));
    if (count != s->dims[depth - 1])
        return xe_parse_fail(
            p, col,
            "the nested list does not match the shape %s: %d items at depth %d, expected %lld", buf,
            count, depth, (long long)s->dims[depth - 1]);
    return XE_OK;
}

/* list = "[" [ item { "," item } ] "]", item = scalar | list (nested up to MAX_LIST_DEPTH) */
static xe_code parse_list(parser *p, literal *l, int depth, bool nested_ok)
{
    int col = p->tok.col, count = 0;
    bool has_list = false, has_num = false;
    if (depth > MAX_LIST_DEPTH)
        return xe_parse_fail(p, col, "lists nested deeper than %d", MAX_LIST_DEPTH);
    xe_parse_advance(p); /* '[' */
    for (; !xe_tok_punct(&p->tok, ']'); count++) {
        if (count > 0 && xe_parse_expect_punct(p, ',') != XE_OK)
            return p->st->code;
        xe_code c;
        if (xe_tok_punct(&p->tok, '[')) {
            has_list = true;
            c = nested_ok
                    ? parse_list(p, l, depth + 1, true)
                    : xe_parse_fail(p, p->tok.col, "nested lists are only allowed in constants");
        } else {
            has_num = true;
            c = parse_scalar(p, l);
        }
        if (c != XE_OK)
            return c;
    }
    xe_parse_advance(p);
    return check_nesting(p, l, depth, col, count, has_list, has_num);
}

/* ---- attributes ------------------------------------------------------------ */

static xe_code decode_string(parser *p, const xe_tok *t, char **out)
{
    char *s = malloc(t->len + 1);
    if (!s)
        return xe_fail(p->st, XE_ERR_NOMEM, "out of memory");
    size_t n = 0;
    for (size_t k = 0; k < t->len; k++) {
        char c = t->text[k];
        if (c == '\\' && k + 1 < t->len) {
            c = t->text[++k];
            if (c == 'n')
                c = '\n';
            else if (c == 't')
                c = '\t';
            else if (c != '\\' && c != '"') {
                free(s);
                return xe_parse_fail(p, t->col + (int)k, "unknown escape '\\%c' in a string", c);
            }
        }
        s[n++] = c;
    }
    s[n] = '\0';
    *out = s;
    return XE_OK;
}

/* A list attribute: INTS when every item is an integer, else FLOATS. */
static xe_code set_list_attr(parser *p, xe_node *n, const char *name, const literal *l)
{
    size_t count = l->n ? (size_t)l->n : 1;
    int64_t *ints = l->all_int ? malloc(count * sizeof *ints) : NULL;
    double *floats = l->all_int ? NULL : malloc(count * sizeof *floats);
    if (!ints && !floats)
        return xe_fail(p->st, XE_ERR_NOMEM, "out of memory");
    for (int k = 0; k < l->n; k++) {
        if (ints)
            ints[k] = l->e[k].i;
        else
            floats[k] = l->e[k].f;
    }
    xe_code c = ints ? xe_node_set_ints(n, name, ints, l->n, p->st)
                     : xe_node_set_floats(n, name, floats, l->n, p->st);
    free(ints);
    free(floats);
    return c;
}

/* value, stored on node n as attribute `name` */
xe_code xe_parse_attr_value(parser *p, xe_node *n, const char *name)
{
    xe_tok t = p->tok;
    xe_dtype dt;
    xe_status *st = p->st;
    if (t.kind == XE_TOK_STRING) {
        char *s = NULL;
        if (decode_string(p, &t, &s) != XE_OK)
            return st->code;
        xe_code c = xe_node_set_string(n, name, s, st);
        free(s);
        xe_parse_advance(p);
        return c;
    }
    if (xe_tok_punct(&t, '[')) {
        literal l = {.all_int = true};
        xe_code c = parse_list(p, &l, 1, false);
        if (c == XE_OK)
            c = set_list_attr(p, n, name, &l);
        literal_free(&l);
        return c;
    }
    xe_code c;
    if (t.kind == XE_TOK_INT)
        c = xe_node_set_int(n, name, t.i, st);
    else if (t.kind == XE_TOK_FLOAT)
        c = xe_node_set_float(n, name, t.f, st);
    else if (xe_tok_is(&t, "true") || xe_tok_is(&t, "false"))
        c = xe_node_set_bool(n, name, xe_tok_is(&t, "true"), st);
    else if (xe_tok_is(&t, "nan"))
        c = xe_node_set_float(n, name, NAN, st);
    else if (xe_tok_is(&t, "inf") || xe_tok_is(&t, "-inf"))
        c = xe_node_set_float(n, name, xe_tok_is(&t, "inf") ? INFINITY : -INFINITY, st);
    else if (t.kind == XE_TOK_IDENT && xe_dtype_parse(t.text, t.len, &dt))
        c = xe_node_set_dtype(n, name, dt, st);
    else
        return xe_parse_expected(
            p, "an attribute value (number, true/false, dtype, \"string\" or [list])");
    xe_parse_advance(p);
    return c;
}

/* KEY of KEY=value: an annotation, or an attribute of op's attrs.def rows (plugin ops: any). */
xe_code xe_parse_check_attr_name(parser *p, int op, const xe_tok *key)
{
    int n;
    const xe_op_attr *ok = xe_op_attrs(op, &n);
    if (key->text[0] == '@' || !ok || xe_op_attr_find(op, key->text, key->len))
        return XE_OK;
    char list[256] = "";
    for (int k = 0; k < n; k++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "",
                 ok[k].name);
    if (!*list)
        return xe_parse_fail(p, key->col, "unknown attribute '%.*s': %s takes no attributes",
                             (int)key->len, key->text, xe_op_name(op));
    return xe_parse_fail(p, key->col, "unknown attribute '%.*s' for %s (expected %s)",
                         (int)key->len, key->text, xe_op_name(op), list);
}

/*
 * The kind a built-in op's scalar attribute must have (attrs.def; list
 * attributes are checked by the shape functions): a value of another kind
 * would otherwise read as the default, silently (keepdims=1 as false).
 */
xe_code xe_parse_check_attr_kind(parser *p, int op, const xe_node *attrs, const char *name, int col)
{
    const xe_op_attr *t = name[0] == '@' ? NULL : xe_op_attr_find(op, name, strlen(name));
    const xe_attr *a = xe_node_attr(attrs, name);
    if (t && a && !xe_op_attr_kind_ok(t, a))
        return xe_parse_fail(p, col, "%s must be %s", name, xe_attr_kind_what(t->kind));
    return XE_OK;
}

#define MAX_CONST_ELEMS ((int64_t)1 << 26)

/* Why a literal does not fit narrow integer dtype dt, or NULL. */
static const char *narrow_int_why(const lit_elem *e, xe_dtype dt)
{
    double lo = dt == XE_I8 ? -128.0 : dt == XE_I16 ? -32768.0 : 0.0;
    double end = dt == XE_U8    ? 256.0
                 : dt == XE_I8  ? 128.0
                 : dt == XE_I16 ? 32768.0
                 : dt == XE_U16 ? 65536.0
                 : dt == XE_U32 ? 4294967296.0
                                : 18446744073709551616.0; /* exclusive */
    if (xe_dtype_is_subbyte(dt)) {
        double half = ldexp(1, xe_dtype_bits(dt) - 1);
        lo = xe_dtype_is_unsigned(dt) ? 0.0 : -half;
        end = xe_dtype_is_unsigned(dt) ? 2 * half : half;
    }
    if (e->is_int)
        return (double)e->i < lo || (double)e->i >= end || (e->i < 0 && lo == 0) ? "is out of range"
                                                                                 : NULL;
    if (!(e->f >= lo && e->f < end))
        return "is out of range";
    return e->f != trunc(e->f) ? "is not an integer" : NULL;
}

/* Whether one literal number fits dtype dt; the message names the value and dtype. */
static xe_code check_const_elem(parser *p, const lit_elem *e, xe_dtype dt)
{
    const char *why = NULL;
    double v = e->f;
    if (dt == XE_F32 || dt == XE_F16) {
        if (isfinite(v) && fabs(v) >= 0x1.ffffffp127) /* rounds to inf in f32 */
            why = "is out of range";
        else if (dt == XE_F16 && isfinite(v) && isinf(xe_f16_to_f32(xe_f32_to_f16((float)v))))
            why = "is out of range";
    } else if (dt == XE_I32 || dt == XE_I64) {
        double lo = dt == XE_I32 ? -2147483648.0 : -9223372036854775808.0;
        double end = dt == XE_I32 ? 2147483648.0 : 9223372036854775808.0; /* exclusive */
        if (e->is_int ? dt == XE_I32 && (e->i < INT32_MIN || e->i > INT32_MAX)
                      : !(v >= lo && v < end))
            why = "is out of range";
        else if (!e->is_int && v != trunc(v))
            why = "is not an integer";
    } else if (dt == XE_BOOL && v != 0 && v != 1) {
        why = "is not a bool (true, false, 1 or 0)";
    } else if (dt == XE_BF16 && isfinite(v) && isinf(xe_bf16_to_f32(xe_f32_to_bf16((float)v)))) {
        why = "is out of range";
    } else if (xe_dtype_is_lowp_float(dt)) {
        why = isfinite(v) && fabs(v) > xe_f8_max(dt) ? "is out of range" : NULL;
    } else if (xe_dtype_is_narrow(dt) && dt != XE_BF16) {
        why = narrow_int_why(e, dt);
    }
    if (!why)
        return XE_OK;
    char val[48];
    if (e->is_int)
        snprintf(val, sizeof val, "%lld", (long long)e->i);
    else /* the shortest text that reads back as v */
        for (int digits = 6; digits <= 17; digits++)
            if (snprintf(val, sizeof val, "%.*g", digits, v) > 0 && strtod(val, NULL) == v)
                break;
    return xe_parse_fail(p, e->col, "constant value %s %s for %s", val, why, xe_dtype_name(dt));
}

/* Copies element 0 of data (size bytes each) over all n elements, doubling the run copied. */
static void splat(void *data, size_t size, int64_t n)
{
    char *d = data;
    for (int64_t have = 1; have < n; have *= 2) {
        int64_t more = have < n - have ? have : n - have;
        memcpy(d + (size_t)have * size, d, (size_t)more * size);
    }
}

/* Checks every value of a literal, then fills tensor v with it (splat when it has one: the value
   is stored once and copied, so a short line declaring 2^26 elements is not 2^26 conversions). */
static xe_code fill_const(parser *p, const literal *l, xe_tensor *v)
{
    for (int k = 0; k < l->n; k++)
        if (check_const_elem(p, &l->e[k], v->dtype) != XE_OK)
            return p->st->code;
    int64_t numel = xe_tensor_numel(v), stored = l->n == 1 && numel > 1 ? 1 : numel;
    for (int64_t k = 0; k < stored; k++) {
        const lit_elem *e = &l->e[l->n == 1 ? 0 : k];
        if (v->dtype == XE_I64 && e->is_int)
            ((int64_t *)v->data)[k] = e->i;
        else if (v->dtype == XE_I32 && e->is_int)
            ((int32_t *)v->data)[k] = (int32_t)e->i;
        else if (v->dtype == XE_U64)
            ((uint64_t *)v->data)[k] =
                e->is_int ? (uint64_t)e->i : (uint64_t)e->f; /* checked: in [0, 2^64) */
        else
            xe_store_f64(v->data, v->dtype, k, e->f);
    }
    if (stored < numel)
        splat(v->data, xe_dtype_size(v->dtype), numel);
    return XE_OK;
}

/* A const's file name: a plain name in the graph file's own folder ([A-Za-z0-9_.-], no leading
 * '.'). */
static bool plain_file_name(const char *s)
{
    if (!*s || *s == '.')
        return false;
    for (; *s; s++)
        if (!(('a' <= *s && *s <= 'z') || ('A' <= *s && *s <= 'Z') || ('0' <= *s && *s <= '9') ||
              *s == '_' || *s == '.' || *s == '-'))
            return false;
    return true;
}

/* FILE's folder + "/" + name into buf (name alone when FILE has no folder). */
static void beside_graph(const parser *p, const char *name, char *buf, size_t len)
{
    const char *slash = strrchr(p->file, '/');
    if (slash)
        snprintf(buf, len, "%.*s/%s", (int)(slash - p->file), p->file, name);
    else
        snprintf(buf, len, "%s", name);
}

/* file="NAME.npy" of const(TYPE, file="NAME.npy"): the value from that .npy, which must be of TYPE.
 */
static xe_code parse_const_file(parser *p, xe_node *n, const xe_type *t)
{
    xe_parse_advance(p);
    if (xe_parse_expect_punct(p, '=') != XE_OK)
        return p->st->code;
    xe_tok tok = p->tok;
    char *name = NULL, path[4096], want[128], got[128];
    if (tok.kind != XE_TOK_STRING)
        return xe_parse_expected(p, "a file name in quotes (file=\"w.npy\")");
    if (decode_string(p, &tok, &name) != XE_OK)
        return p->st->code;
    if (!plain_file_name(name)) {
        xe_code c = xe_parse_fail(p, tok.col,
                                  "file=\"%s\": a constant's file is a plain name in the graph's "
                                  "own folder (letters, digits, _ . -)",
                                  name);
        free(name);
        return c;
    }
    beside_graph(p, name, path, sizeof path);
    free(name);
    xe_status rs;
    xe_status_clear(&rs);
    xe_tensor *v = xe_npy_read(path, &rs);
    if (!v)
        return xe_parse_fail(p, tok.col, "%s", rs.msg);
    if (v->dtype != t->dtype || !xe_shape_equal(&v->shape, &t->shape)) {
        xe_type_str(t, want, sizeof want);
        xe_type_str(&(xe_type){v->dtype, v->shape}, got, sizeof got);
        xe_tensor_release(v);
        return xe_parse_fail(p, tok.col, "%s holds %s, the constant is declared %s", path, got,
                             want);
    }
    n->value = v;
    n->type = *t;
    xe_parse_advance(p);
    return XE_OK;
}

/* const(TYPE, LITERAL) or const(TYPE, file="NAME.npy"): fills n->value */
xe_code xe_parse_const(parser *p, xe_node *n)
{
    xe_type t = {0};
    int tcol = p->tok.col;
    if (xe_parse_type(p, &t, false) != XE_OK || xe_parse_expect_punct(p, ',') != XE_OK)
        return p->st->code;
    if (xe_tok_is(&p->tok, "file"))
        return parse_const_file(p, n, &t);
    int64_t numel = xe_shape_numel(&t.shape);
    if (numel > MAX_CONST_ELEMS)
        return xe_parse_fail(p, tcol,
                             "constant too large: %lld elements (at most %lld in a graph file)",
                             (long long)numel, (long long)MAX_CONST_ELEMS);
    literal l = {.all_int = true, .shape = &t.shape};
    int col = p->tok.col;
    xe_code c = xe_tok_punct(&p->tok, '[') ? parse_list(p, &l, 1, true) : parse_scalar(p, &l);
    if (c == XE_OK && l.n != 1 && l.n != numel)
        c = xe_parse_fail(p, col,
                          "constant of %lld elements given %d values (give all, or one to fill it)",
                          (long long)numel, l.n);
    if (c == XE_OK && !(n->value = xe_tensor_new(t.dtype, &t.shape, XE_DEV_CPU, p->st)))
        c = xe_parse_fail(p, col, "%s", p->st->msg);
    if (c == XE_OK)
        c = fill_const(p, &l, n->value);
    literal_free(&l);
    if (c == XE_OK)
        n->type = t;
    return c;
}
