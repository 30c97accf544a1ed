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
 *   node      = NAME "=" OP "(" [ args ] ")" [ "{" ]
 *   args      = arg { "," arg }
 *   arg       = NAME | KEY "=" value
 *   type      = DTYPE "[" [ dim { "," dim } ] "]"      dim = INT | "?"
 *   value     = INT | FLOAT | "true" | "false" | "nan" | "inf" | "-inf" | DTYPE | STRING | list
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lex.h"
#include "xlac/io.h"
#include "xlac/op.h"

#define MAX_LIST_DEPTH 32

typedef struct parser {
    const char *file;
    const char *text;
    size_t len, next;     /* next: offset of the next line */
    int line;             /* current line, 1-based */
    xe_lexer lx;
    xe_tok tok;           /* current token */
    xe_status *st;
    int jit;              /* open jit block index, -1 if none */
    int jit_line;         /* where it opened */
} parser;

/* A literal: numbers in order, flattened, for const values and lists. */
typedef struct literal {
    int n, cap;
    double *f;
    int64_t *i;
    bool all_int;
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
        return p->tok.kind == XE_TOK_ERROR ? expected(p, "")
                                           : perr(p, p->tok.col, "unexpected '%.*s' after the statement",
                                                  (int)p->tok.len, p->tok.text);
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
                   ? perr(p, p->tok.col, "unknown dtype '%.*s' (expected f32, f64, f16, i32, i64 or bool)",
                          (int)p->tok.len, p->tok.text)
                   : expected(p, "a type such as f32[2,3]");
    advance(p);
    if (expect_punct(p, '[') != XE_OK)
        return p->st->code;
    t->shape.rank = 0;
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
            t->shape.dims[t->shape.rank++] = p->tok.i;
        } else {
            return expected(p, "a dimension (a non-negative integer or '?')");
        }
        advance(p);
    }
    advance(p);
    return XE_OK;
}

static bool literal_push(literal *l, double f, int64_t i, bool is_int)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        double *nf = realloc(l->f, (size_t)cap * sizeof *nf);
        if (nf)
            l->f = nf;
        int64_t *ni = realloc(l->i, (size_t)cap * sizeof *ni);
        if (ni)
            l->i = ni;
        if (!nf || !ni)
            return false;
        l->cap = cap;
    }
    l->f[l->n] = f;
    l->i[l->n] = is_int ? i : 0;
    l->all_int &= is_int;
    l->n++;
    return true;
}

static void literal_free(literal *l)
{
    free(l->f);
    free(l->i);
}

/* One scalar of a literal: INT, FLOAT, true, false, nan, inf, -inf. */
static xe_code parse_scalar(parser *p, literal *l)
{
    bool ok;
    if (p->tok.kind == XE_TOK_INT)
        ok = literal_push(l, (double)p->tok.i, p->tok.i, true);
    else if (p->tok.kind == XE_TOK_FLOAT)
        ok = literal_push(l, p->tok.f, 0, false);
    else if (xe_tok_is(&p->tok, "true") || xe_tok_is(&p->tok, "false"))
        ok = literal_push(l, xe_tok_is(&p->tok, "true"), xe_tok_is(&p->tok, "true"), true);
    else if (xe_tok_is(&p->tok, "nan"))
        ok = literal_push(l, NAN, 0, false);
    else if (xe_tok_is(&p->tok, "inf") || xe_tok_is(&p->tok, "-inf"))
        ok = literal_push(l, xe_tok_is(&p->tok, "inf") ? INFINITY : -INFINITY, 0, false);
    else
        return expected(p, "a number");
    if (!ok)
        return xe_fail(p->st, XE_ERR_NOMEM, "out of memory");
    advance(p);
    return XE_OK;
}

/* list = "[" [ item { "," item } ] "]", item = scalar | list (nested up to MAX_LIST_DEPTH) */
static xe_code parse_list(parser *p, literal *l, int depth, bool nested_ok)
{
    if (depth > MAX_LIST_DEPTH)
        return perr(p, p->tok.col, "lists nested deeper than %d", MAX_LIST_DEPTH);
    advance(p); /* '[' */
    for (int k = 0; !xe_tok_punct(&p->tok, ']'); k++) {
        if (k > 0 && expect_punct(p, ',') != XE_OK)
            return p->st->code;
        xe_code c;
        if (xe_tok_punct(&p->tok, '['))
            c = nested_ok ? parse_list(p, l, depth + 1, true)
                          : perr(p, p->tok.col, "nested lists are only allowed in constants");
        else
            c = parse_scalar(p, l);
        if (c != XE_OK)
            return c;
    }
    advance(p);
    return XE_OK;
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
            c = l.all_int ? xe_node_set_ints(n, name, l.i, l.n, st)
                          : xe_node_set_floats(n, name, l.f, l.n, st);
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
    switch (op) {
    case XE_OP_ARGMAX: return argmax;
    case XE_OP_RESHAPE:
    case XE_OP_BROADCAST_TO: return shape;
    case XE_OP_TRANSPOSE: return perm;
    case XE_OP_CONCAT:
    case XE_OP_SOFTMAX: return axis;
    case XE_OP_SLICE: return slice;
    case XE_OP_MATMUL: return matmul;
    case XE_OP_GELU: return gelu;
    case XE_OP_CAST: return cast;
    case XE_OP_IOTA: return iota;
    case XE_OP_RANDOM_NORMAL: return normal;
    case XE_OP_RANDOM_UNIFORM: return uniform;
    case XE_OP_GET: return get;
    default: return d && d->cls == XE_CLASS_REDUCE ? reduce : none;
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

/* input = "input" NAME ":" type { annotation } */
static xe_code parse_input(parser *p, xe_graph *g)
{
    advance(p);
    if (p->tok.kind != XE_TOK_IDENT || p->tok.text[0] == '@')
        return expected(p, "an input name");
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
    n->jit = p->jit;
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
    advance(p);
    if (expect_end(p) != XE_OK)
        return p->st->code;
    return xe_graph_add_output(g, idx, p->st);
}

/* const(TYPE, LITERAL): fills n->value */
static xe_code parse_const(parser *p, xe_node *n)
{
    xe_type t = {0};
    if (parse_type(p, &t, false) != XE_OK || expect_punct(p, ',') != XE_OK)
        return p->st->code;
    literal l = {.all_int = true};
    int col = p->tok.col;
    xe_code c = xe_tok_punct(&p->tok, '[') ? parse_list(p, &l, 1, true) : parse_scalar(p, &l);
    int64_t numel = xe_shape_numel(&t.shape);
    if (c == XE_OK && l.n != 1 && l.n != numel)
        c = perr(p, col, "constant of shape with %lld elements given %d values", (long long)numel, l.n);
    if (c == XE_OK && !(n->value = xe_tensor_new(t.dtype, &t.shape, XE_DEV_CPU, p->st)))
        c = p->st->code;
    for (int64_t k = 0; c == XE_OK && k < numel; k++) {
        int64_t src = l.n == 1 ? 0 : k;
        if (t.dtype == XE_I64 && l.all_int)
            ((int64_t *)n->value->data)[k] = l.i[src];
        else
            xe_store_f64(n->value->data, t.dtype, k, l.f[src]);
    }
    literal_free(&l);
    if (c == XE_OK)
        n->type = t;
    return c;
}

/* args = arg { "," arg } ")"; positional names first, then KEY=value */
static xe_code parse_args(parser *p, xe_graph *g, int op, int **inputs, int *n_inputs,
                          xe_node *attrs)
{
    bool keywords = false;
    for (int k = 0; !xe_tok_punct(&p->tok, ')'); k++) {
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
            if (parse_attr_value(p, attrs, buf) != XE_OK)
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

/* node = NAME "=" OP "(" [ args ] ")" [ "{" body "}" ] */
static xe_code parse_node(parser *p, xe_graph *g, xe_graph *scratch)
{
    xe_tok name = p->tok;
    char nm[256], opname[128];
    tok_str(&name, nm, sizeof nm);
    advance(p); /* name */
    advance(p); /* '=' */
    if (p->tok.kind != XE_TOK_IDENT)
        return expected(p, "an op name");
    xe_tok optok = p->tok;
    tok_str(&optok, opname, sizeof opname);
    int prev = xe_graph_find(g, nm);
    if (prev >= 0)
        return perr(p, name.col, "'%s' is already defined at line %d", nm, g->nodes[prev]->line);
    advance(p);
    if (expect_punct(p, '(') != XE_OK)
        return p->st->code;
    int op = xe_op_find(optok.text, optok.len);
    /* a scratch node collects attributes until the op is known */
    int tmp_idx = xe_graph_add_node(scratch, NULL, XE_OP_CALL, NULL, 0, p->st);
    if (tmp_idx < 0)
        return p->st->code;
    xe_node *tmp = scratch->nodes[tmp_idx];
    int *inputs = NULL, n_inputs = 0;
    xe_code c;
    if (op == XE_OP_CONST)
        c = parse_const(p, tmp) != XE_OK ? p->st->code : expect_punct(p, ')');
    else
        c = parse_args(p, g, op, &inputs, &n_inputs, tmp);
    bool has_body = c == XE_OK && xe_tok_punct(&p->tok, '{');
    if (has_body)
        advance(p);
    if (c == XE_OK)
        c = expect_end(p);
    if (c == XE_OK && op < 0 && !has_body)
        c = perr(p, optok.col, "unknown op '%s'", opname);
    if (c == XE_OK && op < 0) { /* a composite op nobody registered: run its body as a call */
        op = XE_OP_CALL;
        c = xe_node_set_string(tmp, "@op", opname, p->st);
    }
    const xe_op_def *d = c == XE_OK ? xe_op_get(op) : NULL;
    if (c == XE_OK && has_body != (d->cls == XE_CLASS_COMPOSITE))
        c = perr(p, optok.col, has_body ? "%s does not take a body { ... }" : "%s needs a body { ... }",
                 opname);
    int idx = c == XE_OK ? xe_graph_add_node(g, nm, op, inputs, n_inputs, p->st) : -1;
    free(inputs);
    if (idx < 0)
        return p->st->code;
    xe_node *n = g->nodes[idx];
    n->line = p->line;
    n->col = name.col;
    n->jit = p->jit;
    if (op == XE_OP_CONST) {
        n->value = tmp->value;
        tmp->value = NULL;
        n->type = tmp->type;
    }
    if (move_attrs(p, tmp, n) != XE_OK)
        return p->st->code;
    if (has_body) {
        if (!(n->body = xe_graph_new(p->file)))
            return xe_fail(p->st, XE_ERR_NOMEM, "out of memory");
        if (parse_graph(p, n->body, true, n->line) != XE_OK)
            return p->st->code;
    }
    return xe_node_infer(g, n, p->st);
}

/* "jit" "{" opens a must-compile block; "}" closes it */
static xe_code parse_jit(parser *p, xe_graph *g, bool is_body)
{
    int col = p->tok.col;
    advance(p);
    if (expect_punct(p, '{') != XE_OK || expect_end(p) != XE_OK)
        return p->st->code;
    if (p->jit >= 0)
        return perr(p, col, "jit blocks do not nest (the open one starts at line %d)", p->jit_line);
    if (is_body)
        return perr(p, col, "a jit block cannot be inside a body");
    p->jit = g->n_jit++;
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
        return perr(p, first.col, "expected a statement (input, output, jit, or NAME = op(...)), found '%.*s'",
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
            if (p->jit >= 0 && !is_body) {
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
        return xe_fail(p->st, XE_ERR_PARSE, "%s:1:1: empty graph: expected the header 'xlac.graph v1'",
                       p->file);
    if (is_body && !closed)
        return xe_fail(p->st, XE_ERR_PARSE, "%s:%d:1: the body opened at line %d is not closed with '}'",
                       p->file, p->line, open_line);
    if (!is_body && p->jit >= 0)
        return xe_fail(p->st, XE_ERR_PARSE, "%s:%d:1: the jit block opened at line %d is not closed with '}'",
                       p->file, p->line, p->jit_line);
    if (g->n_outputs == 0)
        return xe_fail(p->st, XE_ERR_PARSE, "%s:%d:1: the %s has no outputs (add 'output NAME')",
                       p->file, p->line, is_body ? "body" : "graph");
    return XE_OK;
}

xe_graph *xe_parse_string(const char *text, const char *file, xe_status *st)
{
    parser p = {.file = file ? file : "<string>", .text = text, .len = strlen(text), .st = st, .jit = -1};
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
    if (memchr(buf, '\0', len)) {
        free(buf);
        xe_fail(st, XE_ERR_PARSE, "%s:1:1: the file contains NUL bytes: not a graph", path);
        return NULL;
    }
    xe_graph *g = xe_parse_string(buf, path, st);
    free(buf);
    return g;
}
