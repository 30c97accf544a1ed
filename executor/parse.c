/*
 * The .xg parser: text → xe_graph. The format is line oriented, so the
 * parser walks lines and reads one statement from each with the tokenizer
 * in lex.c. Blocks (`jit { }` and composite bodies) span lines; a body is
 * parsed recursively into its own graph. Each node is shape-inferred as
 * soon as it is built, so a shape or dtype error is reported at its line.
 *
 * The first error stops parsing and reads "FILE:LINE:COL: message".
 *
 *   graph     = header { stmt }
 *   header    = "xlac.graph" "v1"
 *   stmt      = input | output | jit | node | "}"
 *   input     = "input" NAME ":" type { annotation }
 *   output    = "output" NAME
 *   jit       = "jit" "{"
 *   node      = NAME "=" OP "(" [ args ] ")" [ "{" ]      "{": a body up to "}"
 *             | NAME "=" "const" "(" type "," literal { "," KEY "=" value } ")"
 *   args      = arg { "," arg }
 *   arg       = NAME | KEY "=" value                      KEY "@...": an annotation
 *   type      = DTYPE "[" [ dim { "," dim } ] "]"      dim = INT | "?"
 *   value     = INT | FLOAT | "true" | "false" | "nan" | "inf" | "-inf" | DTYPE | STRING | list
 *   literal   = number | "[" [ literal { "," literal } ] "]"  (nested as the shape)
 *
 * An unknown op followed by a body becomes the built-in `call` with the
 * name kept in `@op`; the writer prints it back under that name. Limits
 * keep hostile input harmless: lists and bodies nest at most 32 deep,
 * names are at most 200 characters, a constant has at most 2^26 elements.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lex.h"
#include "xlac/io.h"
#include "xlac/op.h"

#define MAX_LIST_DEPTH 32
#define MAX_BODY_DEPTH 32
#define MAX_TYPE_ELEMS ((int64_t)1 << 48)

typedef struct parser {
    const char *file;
    const char *text;
    size_t len, next; /* next: offset of the next line */
    int line;         /* current line, 1-based */
    xe_lexer lx;
    xe_tok tok; /* current token */
    xe_status *st;
    bool in_jit;  /* a jit block is open */
    int jit;      /* its index, -1 until its first node takes one */
    int jit_line; /* where it opened */
    int depth;    /* composite bodies open around the current line */
} parser;

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

static xe_code perr(parser *p, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static xe_code perr(parser *p, int col, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return xe_fail(p->st, XE_ERR_PARSE, "%s:%d:%d: %s", p->file, p->line, col, msg);
}

static void advance(parser *p)
{
    p->tok = xe_lex_next(&p->lx);
}

/* Reports a lexer error token, or "expected WHAT" at the current token. */
static xe_code expected(parser *p, const char *what)
{
    if (p->tok.kind == XE_TOK_ERROR)
        return perr(p, p->tok.col, "%.*s", (int)p->tok.len, p->tok.text);
    if (p->tok.kind == XE_TOK_END)
        return perr(p, p->tok.col, "expected %s at the end of the line", what);
    return perr(p, p->tok.col, "expected %s, found '%.*s'", what, (int)p->tok.len, p->tok.text);
}

static xe_code expect_punct(parser *p, char c)
{
    char what[8] = {'\'', c, '\'', 0};
    if (!xe_tok_punct(&p->tok, c))
        return expected(p, what);
    advance(p);
    return XE_OK;
}

static xe_code expect_end(parser *p)
{
    if (p->tok.kind != XE_TOK_END)
        return p->tok.kind == XE_TOK_ERROR
                   ? expected(p, "")
                   : perr(p, p->tok.col, "unexpected '%.*s' after the statement", (int)p->tok.len,
                          p->tok.text);
    return XE_OK;
}

/* Moves to the next line; false at the end of the text. */
static bool next_line(parser *p)
{
    if (p->next >= p->len)
        return false;
    const char *start = p->text + p->next;
    const char *nl = memchr(start, '\n', p->len - p->next);
    size_t n = nl ? (size_t)(nl - start) : p->len - p->next;
    p->next += n + (nl != NULL);
    p->line++;
    xe_lex_init(&p->lx, start, n);
    advance(p);
    return true;
}

/* Copies an identifier token into a NUL-terminated buffer. */
static void tok_str(const xe_tok *t, char *buf, size_t len)
{
    size_t n = t->len < len - 1 ? t->len : len - 1;
    memcpy(buf, t->text, n);
    buf[n] = '\0';
}

/* ---- types and literals ---------------------------------------------------- */

/* type = DTYPE "[" [ dim { "," dim } ] "]" */
static xe_code parse_type(parser *p, xe_type *t, bool allow_unknown)
{
    if (p->tok.kind != XE_TOK_IDENT || !xe_dtype_parse(p->tok.text, p->tok.len, &t->dtype))
        return p->tok.kind == XE_TOK_IDENT
                   ? perr(p, p->tok.col,
                          "unknown dtype '%.*s' (expected f32, f64, f16, i32, i64 or bool)",
                          (int)p->tok.len, p->tok.text)
                   : expected(p, "a type such as f32[2,3]");
    advance(p);
    if (expect_punct(p, '[') != XE_OK)
        return p->st->code;
    t->shape.rank = 0;
    int64_t known = 1; /* product of the known dims, kept below MAX_TYPE_ELEMS */
    while (!xe_tok_punct(&p->tok, ']')) {
        if (t->shape.rank == XE_MAX_RANK)
            return perr(p, p->tok.col, "rank above %d is not supported", XE_MAX_RANK);
        if (t->shape.rank > 0 && expect_punct(p, ',') != XE_OK)
            return p->st->code;
        if (xe_tok_punct(&p->tok, '?')) {
            if (!allow_unknown)
                return perr(p, p->tok.col, "a constant's shape must be fully known");
            t->shape.dims[t->shape.rank++] = XE_DIM_UNKNOWN;
        } else if (p->tok.kind == XE_TOK_INT && p->tok.i >= 0 && p->tok.i < ((int64_t)1 << 40)) {
            if (p->tok.i > 0 && known > MAX_TYPE_ELEMS / p->tok.i)
                return perr(p, p->tok.col, "shape too large (more than %lld elements)",
                            (long long)MAX_TYPE_ELEMS);
            known *= p->tok.i ? p->tok.i : 1;
            t->shape.dims[t->shape.rank++] = p->tok.i;
        } else {
            return expected(p, "a dimension (a non-negative integer or '?')");
        }
        advance(p);
    }
    advance(p);
    return XE_OK;
}

static bool literal_push(literal *l, double f, int64_t i, bool is_int, int col)
{
    if (l->n == l->cap) {
        if (l->cap > (1 << 28))
            return false;
        int cap = l->cap ? l->cap * 2 : 16;
        lit_elem *e = realloc(l->e, (size_t)cap * sizeof *e);
        if (!e)
            return false;
        l->e = e;
        l->cap = cap;
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
        return expected(p, "a number");
    if (!ok)
        return xe_fail(p->st, XE_ERR_NOMEM, "out of memory");
    advance(p);
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
        return perr(p, col, "a list mixes numbers and lists");
    if (!s || (depth == 1 && !has_list))
        return XE_OK;
    char buf[160];
    xe_shape_str(s, buf, sizeof buf);
    if (depth > s->rank || (has_list && depth == s->rank) || (has_num && depth != s->rank))
        return perr(p, col, "the nested list does not match the shape %s: wrong depth %d", buf,
                    depth + (has_list ? 1 : 0));
    if (count != s->dims[depth - 1])
        return perr(
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
        return perr(p, col, "lists nested deeper than %d", MAX_LIST_DEPTH);
    advance(p); /* '[' */
    for (; !xe_tok_punct(&p->tok, ']'); count++) {
        if (count > 0 && expect_punct(p, ',') != XE_OK)
            return p->st->code;
        xe_code c;
        if (xe_tok_punct(&p->tok, '[')) {
            has_list = true;
            c = nested_ok ? parse_list(p, l, depth + 1, true)
                          : perr(p, p->tok.col, "nested lists are only allowed in constants");
        } else {
            has_num = true;
            c = parse_scalar(p, l);
        }
        if (c != XE_OK)
            return c;
    }
    advance(p);
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
                return perr(p, t->col + (int)k, "unknown escape '\\%c' in a string", c);
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
static xe_code parse_attr_value(parser *p, xe_node *n, const char *name)
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
        advance(p);
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
        return expected(p, "an attribute value (number, true/false, dtype, \"string\" or [list])");
    advance(p);
    return c;
}

/*
 * The attributes of the neural-network ops (NULL for any other op); their
 * scalar kinds are in check_attr_kind, their lists are checked in
 * infer_nn.c.
 */
static const char *const *nn_allowed_attrs(int op)
{
    static const char *const gather[] = {"axis", ""};
    static const char *const tile[] = {"repeats", ""};
    static const char *const pad[] = {"pads", "value", ""};
    static const char *const conv[] = {"strides", "pads", "dilations", "groups", ""};
    static const char *const max_pool[] = {"kernel", "strides", "pads", "dilations", "ceil_mode", ""};
    static const char *const avg_pool[] = {"kernel",    "strides",           "pads",
                                           "dilations", "count_include_pad", "ceil_mode", ""};
    switch (op) {
    case XE_OP_GATHER: return gather;
    case XE_OP_TILE: return tile;
    case XE_OP_PAD: return pad;
    case XE_OP_CONV2D: return conv;
    case XE_OP_MAX_POOL2D: return max_pool;
    case XE_OP_AVG_POOL2D: return avg_pool;
    default: return NULL;
    }
}

/* The non-annotation attributes each built-in op accepts ("" ends a list). */
static const char *const *allowed_attrs(int op)
{
    static const char *const none[] = {""};
    static const char *const reduce[] = {"axes", "keepdims", ""};
    static const char *const argmax[] = {"axis", "keepdims", ""};
    static const char *const shape[] = {"shape", ""};
    static const char *const perm[] = {"perm", ""};
    static const char *const axis[] = {"axis", ""};
    static const char *const slice[] = {"begin", "end", ""};
    static const char *const matmul[] = {"transpose_a", "transpose_b", ""};
    static const char *const gelu[] = {"approximate", ""};
    static const char *const cast[] = {"to", ""};
    static const char *const iota[] = {"shape", "axis", "dtype", ""};
    static const char *const normal[] = {"shape", "seed", "dtype", "mean", "stddev", ""};
    static const char *const uniform[] = {"shape", "seed", "dtype", "minval", "maxval", ""};
    static const char *const get[] = {"index", ""};
    const xe_op_def *d = xe_op_get(op);
    if (op >= XE_OP_COUNT || op == XE_OP_CALL)
        return NULL; /* plugin ops and calls accept anything */
    if (nn_allowed_attrs(op))
        return nn_allowed_attrs(op);
    switch (op) {
    case XE_OP_ARGMAX:
        return argmax;
    case XE_OP_RESHAPE:
    case XE_OP_BROADCAST_TO:
        return shape;
    case XE_OP_TRANSPOSE:
        return perm;
    case XE_OP_CONCAT:
    case XE_OP_SOFTMAX:
        return axis;
    case XE_OP_SLICE:
        return slice;
    case XE_OP_MATMUL:
        return matmul;
    case XE_OP_GELU:
        return gelu;
    case XE_OP_CAST:
        return cast;
    case XE_OP_IOTA:
        return iota;
    case XE_OP_RANDOM_NORMAL:
        return normal;
    case XE_OP_RANDOM_UNIFORM:
        return uniform;
    case XE_OP_GET:
        return get;
    default:
        return d && d->cls == XE_CLASS_REDUCE ? reduce : none;
    }
}

static xe_code check_attr_name(parser *p, int op, const xe_tok *key)
{
    if (key->text[0] == '@')
        return XE_OK;
    const char *const *ok = allowed_attrs(op);
    if (!ok)
        return XE_OK;
    char list[256] = "";
    for (int k = 0; *ok[k]; k++) {
        if (strlen(ok[k]) == key->len && memcmp(ok[k], key->text, key->len) == 0)
            return XE_OK;
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", ok[k]);
    }
    if (!*list)
        return perr(p, key->col, "unknown attribute '%.*s': %s takes no attributes", (int)key->len,
                    key->text, xe_op_name(op));
    return perr(p, key->col, "unknown attribute '%.*s' for %s (expected %s)", (int)key->len,
                key->text, xe_op_name(op), list);
}

/*
 * The kind a built-in op's scalar attribute must have (list attributes are
 * checked by the shape functions): a value of another kind would otherwise
 * read as the default, silently (keepdims=1 as false).
 */
static xe_code check_attr_kind(parser *p, int op, const xe_node *attrs, const char *name, int col)
{
    static const struct {
        const char *name;
        xe_attr_kind kind;
        const char *what;
    } kinds[] = {
        {"keepdims", XE_ATTR_BOOL, "true or false"},    {"transpose_a", XE_ATTR_BOOL, "true or false"},
        {"transpose_b", XE_ATTR_BOOL, "true or false"}, {"approximate", XE_ATTR_BOOL, "true or false"},
        {"axis", XE_ATTR_INT, "an integer"},            {"seed", XE_ATTR_INT, "an integer"},
        {"index", XE_ATTR_INT, "an integer"},           {"to", XE_ATTR_DTYPE, "a dtype such as f32"},
        {"dtype", XE_ATTR_DTYPE, "a dtype such as f32"}, {"mean", XE_ATTR_FLOAT, "a number"},
        {"stddev", XE_ATTR_FLOAT, "a number"},          {"minval", XE_ATTR_FLOAT, "a number"},
        {"maxval", XE_ATTR_FLOAT, "a number"},
        /* neural-network ops (newops); list attributes are checked in infer_nn.c */
        {"value", XE_ATTR_FLOAT, "a number"},           {"groups", XE_ATTR_INT, "an integer"},
        {"ceil_mode", XE_ATTR_INT, "0 or 1"},           {"count_include_pad", XE_ATTR_INT, "0 or 1"},
    };
    if (name[0] == '@' || !allowed_attrs(op))
        return XE_OK;
    const xe_attr *a = xe_node_attr(attrs, name);
    for (size_t k = 0; a && k < sizeof kinds / sizeof kinds[0]; k++) {
        if (strcmp(kinds[k].name, name))
            continue;
        bool number = kinds[k].kind == XE_ATTR_FLOAT && a->kind == XE_ATTR_INT;
        if (a->kind != kinds[k].kind && !number)
            return perr(p, col, "%s must be %s", name, kinds[k].what);
    }
    return XE_OK;
}

/* Annotations after an input's type: { KEY "=" value } with optional commas. */
static xe_code parse_annotations(parser *p, xe_node *n)
{
    while (p->tok.kind != XE_TOK_END) {
        if (xe_tok_punct(&p->tok, ','))
            advance(p);
        if (p->tok.kind != XE_TOK_IDENT || p->tok.text[0] != '@')
            return expected(p, "an annotation such as @device=\"CPU:0\"");
        char key[128];
        tok_str(&p->tok, key, sizeof key);
        advance(p);
        if (expect_punct(p, '=') != XE_OK || parse_attr_value(p, n, key) != XE_OK)
            return p->st->code;
    }
    return XE_OK;
}

/* ---- statements --------------------------------------------------------------- */

static xe_code parse_graph(parser *p, xe_graph *g, bool is_body, int open_line);

/* The jit index of a node defined now: an open block takes its index at its first node. */
static int node_jit(parser *p, xe_graph *g)
{
    if (p->in_jit && p->jit < 0)
        p->jit = g->n_jit++;
    return p->in_jit ? p->jit : -1;
}

/* A node name starts with a letter or '_' (not '@', '-' or a digit). */
static xe_code check_name(parser *p, const xe_tok *t)
{
    unsigned char c = (unsigned char)t->text[0];
    if (t->kind != XE_TOK_IDENT || !(isalpha(c) || c == '_'))
        return perr(p, t->col, "bad name '%.*s' (a name starts with a letter or '_')", (int)t->len,
                    t->text);
    if (t->len > 200)
        return perr(p, t->col, "name longer than 200 characters");
    return XE_OK;
}

/* input = "input" NAME ":" type { annotation } */
static xe_code parse_input(parser *p, xe_graph *g)
{
    advance(p);
    if (p->tok.kind != XE_TOK_IDENT)
        return expected(p, "an input name");
    if (check_name(p, &p->tok) != XE_OK)
        return p->st->code;
    xe_tok name = p->tok;
    advance(p);
    xe_type t = {0};
    if (expect_punct(p, ':') != XE_OK || parse_type(p, &t, true) != XE_OK)
        return p->st->code;
    char buf[256];
    tok_str(&name, buf, sizeof buf);
    int prev = xe_graph_find(g, buf);
    if (prev >= 0)
        return perr(p, name.col, "'%s' is already defined at line %d", buf, g->nodes[prev]->line);
    int idx = xe_graph_add_input(g, buf, &t, p->st);
    if (idx < 0)
        return p->st->code;
    xe_node *n = g->nodes[idx];
    n->line = p->line;
    n->col = name.col;
    n->jit = node_jit(p, g);
    return parse_annotations(p, n);
}

/* output = "output" NAME */
static xe_code parse_output(parser *p, xe_graph *g)
{
    advance(p);
    if (p->tok.kind != XE_TOK_IDENT)
        return expected(p, "the name of a node");
    char buf[256];
    tok_str(&p->tok, buf, sizeof buf);
    int idx = xe_graph_find(g, buf);
    if (idx < 0)
        return perr(p, p->tok.col, "output of an undefined name '%s'", buf);
    if (g->nodes[idx]->body)
        return perr(p, p->tok.col, "output '%s' has %d outputs; pick one with get(%s, index=K)", buf,
                    g->nodes[idx]->n_tuple, buf);
    advance(p);
    if (expect_end(p) != XE_OK)
        return p->st->code;
    return xe_graph_add_output(g, idx, p->st);
}

#define MAX_CONST_ELEMS ((int64_t)1 << 26)

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
    return perr(p, e->col, "constant value %s %s for %s", val, why, xe_dtype_name(dt));
}

/* Checks every value of a literal, then fills tensor v with it (splat when it has one). */
static xe_code fill_const(parser *p, const literal *l, xe_tensor *v)
{
    for (int k = 0; k < l->n; k++)
        if (check_const_elem(p, &l->e[k], v->dtype) != XE_OK)
            return p->st->code;
    int64_t numel = xe_tensor_numel(v);
    for (int64_t k = 0; k < numel; k++) {
        const lit_elem *e = &l->e[l->n == 1 ? 0 : k];
        if (v->dtype == XE_I64 && e->is_int)
            ((int64_t *)v->data)[k] = e->i;
        else if (v->dtype == XE_I32 && e->is_int)
            ((int32_t *)v->data)[k] = (int32_t)e->i;
        else
            xe_store_f64(v->data, v->dtype, k, e->f);
    }
    return XE_OK;
}

/* const(TYPE, LITERAL): fills n->value */
static xe_code parse_const(parser *p, xe_node *n)
{
    xe_type t = {0};
    int tcol = p->tok.col;
    if (parse_type(p, &t, false) != XE_OK || expect_punct(p, ',') != XE_OK)
        return p->st->code;
    int64_t numel = xe_shape_numel(&t.shape);
    if (numel > MAX_CONST_ELEMS)
        return perr(p, tcol, "constant too large: %lld elements (at most %lld in a graph file)",
                    (long long)numel, (long long)MAX_CONST_ELEMS);
    literal l = {.all_int = true, .shape = &t.shape};
    int col = p->tok.col;
    xe_code c = xe_tok_punct(&p->tok, '[') ? parse_list(p, &l, 1, true) : parse_scalar(p, &l);
    if (c == XE_OK && l.n != 1 && l.n != numel)
        c = perr(p, col, "constant of %lld elements given %d values (give all, or one to fill it)",
                 (long long)numel, l.n);
    if (c == XE_OK && !(n->value = xe_tensor_new(t.dtype, &t.shape, XE_DEV_CPU, p->st)))
        c = perr(p, col, "%s", p->st->msg);
    if (c == XE_OK)
        c = fill_const(p, &l, n->value);
    literal_free(&l);
    if (c == XE_OK)
        n->type = t;
    return c;
}

/* args = arg { "," arg } ")"; positional names first, then KEY=value; first: items already read */
static xe_code parse_args(parser *p, xe_graph *g, int op, int **inputs, int *n_inputs,
                          xe_node *attrs, int first)
{
    bool keywords = false;
    for (int k = first; !xe_tok_punct(&p->tok, ')'); k++) {
        if (k > 0 && expect_punct(p, ',') != XE_OK)
            return p->st->code;
        if (p->tok.kind != XE_TOK_IDENT)
            return expected(p, "a name or KEY=value");
        xe_tok name = p->tok;
        advance(p);
        char buf[256];
        tok_str(&name, buf, sizeof buf);
        if (xe_tok_punct(&p->tok, '=')) {
            advance(p);
            keywords = true;
            if (xe_node_attr(attrs, buf))
                return perr(p, name.col, "attribute '%s' given twice", buf);
            if (op >= 0 && check_attr_name(p, op, &name) != XE_OK)
                return p->st->code;
            int value_col = p->tok.col;
            if (parse_attr_value(p, attrs, buf) != XE_OK ||
                (op >= 0 && check_attr_kind(p, op, attrs, buf, value_col) != XE_OK))
                return p->st->code;
            continue;
        }
        if (keywords)
            return perr(p, name.col, "positional argument '%s' after attributes", buf);
        int idx = xe_graph_find(g, buf);
        if (idx < 0)
            return perr(p, name.col, "undefined name '%s'", buf);
        int *in = realloc(*inputs, (size_t)(*n_inputs + 1) * sizeof *in);
        if (!in)
            return xe_fail(p->st, XE_ERR_NOMEM, "out of memory");
        in[(*n_inputs)++] = idx;
        *inputs = in;
    }
    advance(p);
    return XE_OK;
}

/* Moves the attributes parsed into tmp onto n. */
static xe_code move_attrs(parser *p, xe_node *tmp, xe_node *n)
{
    for (int k = 0; k < tmp->n_attrs; k++)
        if (xe_node_copy_attr(n, &tmp->attrs[k], p->st) != XE_OK)
            return p->st->code;
    return XE_OK;
}

/* body = { stmt } "}": its own namespace; jit blocks stay outside, so body nodes have jit -1 */
static xe_code parse_body(parser *p, xe_node *n)
{
    if (!(n->body = xe_graph_new(p->file)))
        return xe_fail(p->st, XE_ERR_NOMEM, "out of memory");
    if (p->depth >= MAX_BODY_DEPTH)
        return perr(p, 1, "bodies nested deeper than %d", MAX_BODY_DEPTH);
    bool in_jit = p->in_jit;
    int jit = p->jit;
    p->depth++;
    p->in_jit = false;
    p->jit = -1;
    xe_code c = parse_graph(p, n->body, true, n->line);
    p->depth--;
    p->in_jit = in_jit;
    p->jit = jit;
    return c;
}

/*
 * An unknown op is only allowed with a body: it becomes a `call` that keeps
 * its name in `@op`. A body goes with composite ops and only with them.
 */
static xe_code resolve_op(parser *p, int *op, bool has_body, const xe_tok *optok,
                          const char *opname, xe_node *tmp)
{
    if (*op < 0 && !has_body)
        return perr(p, optok->col, "unknown op '%s'", opname);
    if (*op < 0) {
        *op = XE_OP_CALL;
        if (xe_node_set_string(tmp, "@op", opname, p->st) != XE_OK)
            return p->st->code;
    }
    if (has_body != (xe_op_get(*op)->cls == XE_CLASS_COMPOSITE))
        return perr(p, optok->col,
                    has_body ? "%s does not take a body { ... }" : "%s needs a body { ... }",
                    opname);
    return XE_OK;
}

/* Gives the new node n its position, value, attributes (from tmp) and body, then infers it. */
static xe_code finish_node(parser *p, xe_graph *g, xe_node *n, xe_node *tmp, int col, bool has_body)
{
    n->line = p->line;
    n->col = col;
    n->jit = node_jit(p, g);
    if (n->op == XE_OP_CONST) {
        n->value = tmp->value;
        tmp->value = NULL;
        n->type = tmp->type;
    }
    if (move_attrs(p, tmp, n) != XE_OK)
        return p->st->code;
    if (has_body && parse_body(p, n) != XE_OK)
        return p->st->code;
    return xe_node_infer(g, n, p->st);
}

/* node = NAME "=" OP "(" [ args ] ")" [ "{" body "}" ] */
static xe_code parse_node(parser *p, xe_graph *g, xe_graph *scratch)
{
    xe_tok name = p->tok;
    char nm[256], opname[256];
    if (check_name(p, &name) != XE_OK)
        return p->st->code;
    tok_str(&name, nm, sizeof nm);
    advance(p); /* name */
    advance(p); /* '=' */
    if (p->tok.kind != XE_TOK_IDENT)
        return expected(p, "an op name");
    xe_tok optok = p->tok;
    tok_str(&optok, opname, sizeof opname);
    int op = xe_op_find(optok.text, optok.len);
    if (op < 0 && (check_name(p, &optok) != XE_OK))
        return perr(p, optok.col, "unknown op '%s'", opname);
    if (op == XE_OP_INPUT)
        return perr(p, optok.col, "declare an input with 'input NAME: TYPE'");
    int prev = xe_graph_find(g, nm);
    if (prev >= 0)
        return perr(p, name.col, "'%s' is already defined at line %d", nm, g->nodes[prev]->line);
    advance(p);
    if (expect_punct(p, '(') != XE_OK)
        return p->st->code;
    /* a scratch node collects attributes until the op is known */
    int tmp_idx = xe_graph_add_node(scratch, NULL, XE_OP_CALL, NULL, 0, p->st);
    if (tmp_idx < 0)
        return p->st->code;
    xe_node *tmp = scratch->nodes[tmp_idx];
    int *inputs = NULL, n_inputs = 0;
    xe_code c;
    if (op == XE_OP_CONST) /* const(TYPE, LITERAL { "," KEY=value }) */
        c = parse_const(p, tmp) != XE_OK ? p->st->code
                                         : parse_args(p, g, op, &inputs, &n_inputs, tmp, 1);
    else
        c = parse_args(p, g, op, &inputs, &n_inputs, tmp, 0);
    bool has_body = c == XE_OK && xe_tok_punct(&p->tok, '{');
    if (has_body)
        advance(p);
    if (c == XE_OK)
        c = expect_end(p);
    if (c == XE_OK)
        c = resolve_op(p, &op, has_body, &optok, opname, tmp);
    int idx = c == XE_OK ? xe_graph_add_node(g, nm, op, inputs, n_inputs, p->st) : -1;
    free(inputs);
    if (idx < 0)
        return p->st->code;
    return finish_node(p, g, g->nodes[idx], tmp, name.col, has_body);
}

/* "jit" "{" opens a must-compile block; "}" closes it */
static xe_code parse_jit(parser *p, xe_graph *g, bool is_body)
{
    int col = p->tok.col;
    advance(p);
    if (expect_punct(p, '{') != XE_OK || expect_end(p) != XE_OK)
        return p->st->code;
    if (p->in_jit)
        return perr(p, col, "jit blocks do not nest (the open one starts at line %d)", p->jit_line);
    if (is_body)
        return perr(p, col, "a jit block cannot be inside a body");
    (void)g;
    p->in_jit = true;
    p->jit = -1;
    p->jit_line = p->line;
    return XE_OK;
}

static xe_code parse_header(parser *p)
{
    if (!xe_tok_is(&p->tok, "xlac.graph"))
        return perr(p, p->tok.col, "expected the header 'xlac.graph v1'");
    advance(p);
    if (!xe_tok_is(&p->tok, "v1"))
        return p->tok.kind == XE_TOK_IDENT
                   ? perr(p, p->tok.col, "unsupported format version '%.*s' (this is v1)",
                          (int)p->tok.len, p->tok.text)
                   : expected(p, "the version 'v1'");
    advance(p);
    return expect_end(p);
}

static xe_code parse_stmt(parser *p, xe_graph *g, xe_graph *scratch, bool is_body)
{
    if (xe_tok_is(&p->tok, "input"))
        return parse_input(p, g);
    if (xe_tok_is(&p->tok, "output"))
        return parse_output(p, g);
    if (xe_tok_is(&p->tok, "jit"))
        return parse_jit(p, g, is_body);
    if (p->tok.kind == XE_TOK_IDENT && p->tok.text[0] != '@') {
        xe_lexer save = p->lx;
        xe_tok first = p->tok;
        advance(p);
        bool is_node = xe_tok_punct(&p->tok, '=');
        p->lx = save;
        p->tok = first;
        if (is_node)
            return parse_node(p, g, scratch);
        return perr(p, first.col,
                    "expected a statement (input, output, jit, or NAME = op(...)), found '%.*s'",
                    (int)first.len, first.text);
    }
    return expected(p, "a statement");
}

/* Statements until the end of the text (top level) or the closing "}" (body). */
static xe_code parse_graph(parser *p, xe_graph *g, bool is_body, int open_line)
{
    xe_graph *scratch = xe_graph_new(p->file);
    if (!scratch)
        return xe_fail(p->st, XE_ERR_NOMEM, "out of memory");
    bool header = is_body;
    xe_code c = XE_OK;
    bool closed = false;
    while (c == XE_OK && next_line(p)) {
        if (p->tok.kind == XE_TOK_END)
            continue;
        if (!header) {
            c = parse_header(p);
            header = true;
        } else if (xe_tok_punct(&p->tok, '}')) {
            advance(p);
            if ((c = expect_end(p)) != XE_OK)
                break;
            if (p->in_jit && !is_body) {
                p->in_jit = false;
                p->jit = -1;
            } else if (is_body) {
                closed = true;
                break;
            } else {
                c = perr(p, 1, "'}' without an open block");
            }
        } else {
            c = parse_stmt(p, g, scratch, is_body);
        }
    }
    xe_graph_destroy(scratch);
    if (c != XE_OK)
        return c;
    if (!header)
        return xe_fail(p->st, XE_ERR_PARSE,
                       "%s:1:1: empty graph: expected the header 'xlac.graph v1'", p->file);
    if (is_body && !closed)
        return xe_fail(p->st, XE_ERR_PARSE,
                       "%s:%d:1: the body opened at line %d is not closed with '}'", p->file,
                       p->line, open_line);
    if (!is_body && p->in_jit)
        return xe_fail(p->st, XE_ERR_PARSE,
                       "%s:%d:1: the jit block opened at line %d is not closed with '}'", p->file,
                       p->line, p->jit_line);
    if (g->n_outputs == 0)
        return xe_fail(p->st, XE_ERR_PARSE, "%s:%d:1: the %s has no outputs (add 'output NAME')",
                       p->file, p->line, is_body ? "body" : "graph");
    return XE_OK;
}

xe_graph *xe_parse_string(const char *text, const char *file, xe_status *st)
{
    parser p = {
        .file = file ? file : "<string>", .text = text, .len = strlen(text), .st = st, .jit = -1};
    xe_graph *g = xe_graph_new(p.file);
    if (!g) {
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (parse_graph(&p, g, false, 0) != XE_OK) {
        xe_graph_destroy(g);
        return NULL;
    }
    return g;
}

xe_code xe_read_file(const char *path, char **data, size_t *len, xe_status *st)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return xe_fail(st, XE_ERR_IO, "%s: cannot open: %m", path);
    char *buf = NULL;
    size_t n = 0, cap = 0, r;
    char chunk[65536];
    while ((r = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (n + r + 1 > cap) {
            cap = (n + r + 1) * 2;
            char *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                fclose(f);
                return xe_fail(st, XE_ERR_NOMEM, "%s: out of memory reading the file", path);
            }
            buf = b;
        }
        memcpy(buf + n, chunk, r);
        n += r;
    }
    bool failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        return xe_fail(st, XE_ERR_IO, "%s: read error (is it a directory?)", path);
    }
    if (!buf && !(buf = malloc(1)))
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return XE_OK;
}

xe_graph *xe_parse_file(const char *path, xe_status *st)
{
    char *buf = NULL;
    size_t len = 0;
    if (xe_read_file(path, &buf, &len, st) != XE_OK)
        return NULL;
    const char *nul = memchr(buf, '\0', len);
    if (nul) { /* reported where it is */
        int line = 1, col = 1;
        for (const char *c = buf; c < nul; c++, col++)
            if (*c == '\n')
                line++, col = 0;
        free(buf);
        xe_fail(st, XE_ERR_PARSE, "%s:%d:%d: a NUL byte: not a graph (a text file is expected)", path, line,
                col);
        return NULL;
    }
    xe_graph *g = xe_parse_string(buf, path, st);
    free(buf);
    return g;
}
