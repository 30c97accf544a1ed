/*
 * Private to the .xg parser (parse.c: lines, statements, nodes;
 * parse_value.c: types, literals, attribute values and constants): the
 * parser's state and the helpers both halves use (parse_cursor.c, a leaf
 * below both).
 */
#ifndef XE_PARSE_IMPL_H
#define XE_PARSE_IMPL_H

#include "lex.h"
#include "xlac/graph.h"
#include "xlac/status.h"

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

/* Fails with "FILE:LINE:COL: message" at column col of the current line. */
xe_code xe_parse_fail(parser *p, int col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Reads the next token of the line. */
void xe_parse_advance(parser *p);
/* Reports a lexer error token, or "expected WHAT" at the current token. */
xe_code xe_parse_expected(parser *p, const char *what);
/* Consumes punctuation c, or reports it expected. */
xe_code xe_parse_expect_punct(parser *p, char c);
/* Copies an identifier token into a NUL-terminated buffer. */
void xe_parse_tok_str(const xe_tok *t, char *buf, size_t len);
/* type = DTYPE "[" [ dim { "," dim } ] "]"; "?" dims only with allow_unknown */
xe_code xe_parse_type(parser *p, xe_type *t, bool allow_unknown);
/* value, stored on node n as attribute `name` */
xe_code xe_parse_attr_value(parser *p, xe_node *n, const char *name);
/* KEY of KEY=value: an annotation, or an attribute op accepts (attrs.def). */
xe_code xe_parse_check_attr_name(parser *p, int op, const xe_tok *key);
/* The kind of attribute name of attrs, as attrs.def says op's must be. */
xe_code xe_parse_check_attr_kind(parser *p, int op, const xe_node *attrs, const char *name,
                                 int col);
/* const(TYPE, LITERAL): fills n->value */
xe_code xe_parse_const(parser *p, xe_node *n);

#endif
