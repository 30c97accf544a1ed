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
 *             | NAME "=" "const" "(" type "," ( literal | "file" "=" STRING ) { "," KEY "=" value }
 * ")" args      = arg { "," arg } arg       = NAME | KEY "=" value                      KEY "@...":
 * an annotation type      = DTYPE "[" [ dim { "," dim } ] "]"      dim = INT | "?" value     = INT
 * | FLOAT | "true" | "false" | "nan" | "inf" | "-inf" | DTYPE | STRING | list literal   = number |
 * "[" [ literal { "," literal } ] "]"  (nested as the shape)
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
#include <unistd.h>

#include "parse_impl.h"
#include "xlac/io.h"
#include "xlac/op.h"

#define MAX_BODY_DEPTH 32

static xe_code expect_end(parser *p)
{
    if (p->tok.kind != XE_TOK_END)
        return p->tok.kind == XE_TOK_ERROR
                   ? xe_parse_expected(p, "")
                   : xe_parse_fail(p, p->tok.col, "unexpected '%.*s' after the statement",
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
    xe_parse_advance(p);
    return true;
}

/* Annotations after an input's type: { KEY "=" value } with optional commas. */
static xe_code parse_annotations(parser *p, xe_node *n)
{
    while (p->tok.kind != XE_TOK_END) {
        if (xe_tok_punct(&p->tok, ','))
            xe_parse_advance(p);
        if (p->tok.kind != XE_TOK_IDENT || p->tok.text[0] != '@')
            return xe_parse_expected(p, "an annotation such as @device=\"CPU:0\"");
        char key[128];
        xe_parse_tok_str(&p->tok, key, sizeof key);
        xe_parse_advance(p);
        if (xe_parse_expect_punct(p, '=') != XE_OK || xe_parse_attr_value(p, n, key) != XE_OK)
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
        return xe_parse_fail(p, t->col, "bad name '%.*s' (a name starts with a letter or '_')",
                             (int)t->len, t->text);
    if (t->len > 200)
        return xe_parse_fail(p, t->col, "name longer than 200 characters");
    return XE_OK;
}

/* input = "input" NAME ":" type { annotation } */
static xe_code parse_input(parser *p, xe_graph *g)
{
    xe_parse_advance(p);
    if (p->tok.kind != XE_TOK_IDENT)
        return xe_parse_expected(p, "an input name");
    if (check_name(p, &p->tok) != XE_OK)
        return p->st->code;
    xe_tok name = p->tok;
    xe_parse_advance(p);
    xe_type t = {0};
    if (xe_parse_expect_punct(p, ':') != XE_OK || xe_parse_type(p, &t, true) != XE_OK)
        return p->st->code;
    char buf[256];
    xe_parse_tok_str(&name, buf, sizeof buf);
    int prev = xe_graph_find(g, buf);
    if (prev >= 0)
        return xe_parse_fail(p, name.col, "'%s' is already defined at line %d", buf,
                             g->nodes[prev]->line);
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
    xe_parse_advance(p);
    if (p->tok.kind != XE_TOK_IDENT)
        return xe_parse_expected(p, "the name of a node");
    char buf[256];
    xe_parse_tok_str(&p->tok, buf, sizeof buf);
    int idx = xe_graph_find(g, buf);
    if (idx < 0)
        return xe_parse_fail(p, p->tok.col, "output of an undefined name '%s'", buf);
    if (g->nodes[idx]->body)
        return xe_parse_fail(p, p->tok.col,
                             "output '%s' has %d outputs; pick one with get(%s, index=K)", buf,
                             g->nodes[idx]->n_tuple, buf);
    xe_parse_advance(p);
    if (expect_end(p) != XE_OK)
        return p->st->code;
    return xe_graph_add_output(g, idx, p->st);
}

/* args = arg { "," arg } ")"; positional names first, then KEY=value; first: items already read */
static xe_code parse_args(parser *p, xe_graph *g, int op, int **inputs, int *n_inputs,
                          xe_node *attrs, int first)
{
    bool keywords = false;
    for (int k = first; !xe_tok_punct(&p->tok, ')'); k++) {
        if (k > 0 && xe_parse_expect_punct(p, ',') != XE_OK)
            return p->st->code;
        if (p->tok.kind != XE_TOK_IDENT)
            return xe_parse_expected(p, "a name or KEY=value");
        xe_tok name = p->tok;
        xe_parse_advance(p);
        char buf[256];
        xe_parse_tok_str(&name, buf, sizeof buf);
        if (xe_tok_punct(&p->tok, '=')) {
            xe_parse_advance(p);
            keywords = true;
            if (xe_node_attr(attrs, buf))
                return xe_parse_fail(p, name.col, "attribute '%s' given twice", buf);
            if (op >= 0 && xe_parse_check_attr_name(p, op, &name) != XE_OK)
                return p->st->code;
            int value_col = p->tok.col;
            if (xe_parse_attr_value(p, attrs, buf) != XE_OK ||
                (op >= 0 && xe_parse_check_attr_kind(p, op, attrs, buf, value_col) != XE_OK))
                return p->st->code;
            continue;
        }
        if (keywords)
            return xe_parse_fail(p, name.col, "positional argument '%s' after attributes", buf);
        int idx = xe_graph_find(g, buf);
        if (idx < 0)
            return xe_parse_fail(p, name.col, "undefined name '%s'", buf);
        int *in = realloc(*inputs, (size_t)(*n_inputs + 1) * sizeof *in);
        if (!in)
            return xe_fail(p->st, XE_ERR_NOMEM, "out of memory");
        in[(*n_inputs)++] = idx;
        *inputs = in;
    }
    xe_parse_advance(p);
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
        return xe_parse_fail(p, 1, "bodies nested deeper than %d", MAX_BODY_DEPTH);
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
        return xe_parse_fail(p, optok->col, "unknown op '%s'", opname);
    if (*op < 0) {
        *op = XE_OP_CALL;
        if (xe_node_set_string(tmp, "@op", opname, p->st) != XE_OK)
            return p->st->code;
    }
    if (has_body != (xe_op_get(*op)->cls == XE_CLASS_COMPOSITE))
        return xe_parse_fail(
            p, optok->col, has_body ? "%s does not take a body { ... }" : "%s needs a body { ... }",
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
    xe_parse_tok_str(&name, nm, sizeof nm);
    xe_parse_advance(p); /* name */
    xe_parse_advance(p); /* '=' */
    if (p->tok.kind != XE_TOK_IDENT)
        return xe_parse_expected(p, "an op name");
    xe_tok optok = p->tok;
    xe_parse_tok_str(&optok, opname, sizeof opname);
    int op = xe_op_find(optok.text, optok.len);
    if (op < 0 && (check_name(p, &optok) != XE_OK))
        return xe_parse_fail(p, optok.col, "unknown op '%s'", opname);
    if (op == XE_OP_INPUT)
        return xe_parse_fail(p, optok.col, "declare an input with 'input NAME: TYPE'");
    int prev = xe_graph_find(g, nm);
    if (prev >= 0)
        return xe_parse_fail(p, name.col, "'%s' is already defined at line %d", nm,
                             g->nodes[prev]->line);
    xe_parse_advance(p);
    if (xe_parse_expect_punct(p, '(') != XE_OK)
        return p->st->code;
    /* a scratch node collects attributes until the op is known */
    int tmp_idx = xe_graph_add_node(scratch, NULL, XE_OP_CALL, NULL, 0, p->st);
    if (tmp_idx < 0)
        return p->st->code;
    xe_node *tmp = scratch->nodes[tmp_idx];
    int *inputs = NULL, n_inputs = 0;
    xe_code c;
    if (op == XE_OP_CONST) /* const(TYPE, LITERAL { "," KEY=value }) */
        c = xe_parse_const(p, tmp) != XE_OK ? p->st->code
                                            : parse_args(p, g, op, &inputs, &n_inputs, tmp, 1);
    else
        c = parse_args(p, g, op, &inputs, &n_inputs, tmp, 0);
    bool has_body = c == XE_OK && xe_tok_punct(&p->tok, '{');
    if (has_body)
        xe_parse_advance(p);
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
    xe_parse_advance(p);
    if (xe_parse_expect_punct(p, '{') != XE_OK || expect_end(p) != XE_OK)
        return p->st->code;
    if (p->in_jit)
        return xe_parse_fail(p, col, "jit blocks do not nest (the open one starts at line %d)",
                             p->jit_line);
    if (is_body)
        return xe_parse_fail(p, col, "a jit block cannot be inside a body");
    (void)g;
    p->in_jit = true;
    p->jit = -1;
    p->jit_line = p->line;
    return XE_OK;
}

static xe_code parse_header(parser *p)
{
    if (!xe_tok_is(&p->tok, "xlac.graph"))
        return xe_parse_fail(p, p->tok.col, "expected the header 'xlac.graph v1'");
    xe_parse_advance(p);
    if (!xe_tok_is(&p->tok, "v1"))
        return p->tok.kind == XE_TOK_IDENT
                   ? xe_parse_fail(p, p->tok.col, "unsupported format version '%.*s' (this is v1)",
                                   (int)p->tok.len, p->tok.text)
                   : xe_parse_expected(p, "the version 'v1'");
    xe_parse_advance(p);
    return expect_end(p);
}

/* True when the statement at p is "NAME = ...": a node may be named like a keyword (output =
 * relu(x)). */
static bool at_node(parser *p)
{
    if (p->tok.kind != XE_TOK_IDENT || p->tok.text[0] == '@')
        return false;
    xe_lexer save = p->lx;
    xe_tok first = p->tok;
    xe_parse_advance(p);
    bool is_node = xe_tok_punct(&p->tok, '=');
    p->lx = save;
    p->tok = first;
    return is_node;
}

static xe_code parse_stmt(parser *p, xe_graph *g, xe_graph *scratch, bool is_body)
{
    if (at_node(p))
        return parse_node(p, g, scratch);
    if (xe_tok_is(&p->tok, "input"))
        return parse_input(p, g);
    if (xe_tok_is(&p->tok, "output"))
        return parse_output(p, g);
    if (xe_tok_is(&p->tok, "jit"))
        return parse_jit(p, g, is_body);
    if (p->tok.kind == XE_TOK_IDENT && p->tok.text[0] != '@')
        return xe_parse_fail(
            p, p->tok.col,
            "expected a statement (input, output, jit, or NAME = op(...)), found '%.*s'",
            (int)p->tok.len, p->tok.text);
    return xe_parse_expected(p, "a statement");
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
            xe_parse_advance(p);
            if ((c = expect_end(p)) != XE_OK)
                break;
            if (p->in_jit && !is_body) {
                p->in_jit = false;
                p->jit = -1;
            } else if (is_body) {
                closed = true;
                break;
            } else {
                c = xe_parse_fail(p, 1, "'}' without an open block");
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
    int fd = xe_open_regular(path, st); /* never waits on a FIFO */
    FILE *f = fd < 0 ? NULL : fdopen(fd, "rb");
    if (fd >= 0 && !f)
        close(fd);
    if (!f)
        return fd < 0 ? st->code : xe_fail(st, XE_ERR_NOMEM, "%s: cannot open: %m", path);
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
        xe_fail(st, XE_ERR_PARSE, "%s:%d:%d: a NUL byte: not a graph (a text file is expected)",
                path, line, col);
        return NULL;
    }
    xe_graph *g = xe_parse_string(buf, path, st);
    free(buf);
    return g;
}
