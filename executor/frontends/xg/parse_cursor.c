/*
 * The .xg parser's cursor (parse_impl.h): reading the next token of the
 * line and reporting where the line goes wrong, FILE:LINE:COL first. A
 * leaf below both halves of the parser: parse.c (lines, statements,
 * nodes) and parse_value.c (types, literals, attribute values) call it and
 * it calls neither.
 */
#include <stdarg.h>
#include <stdio.h>

#include "parse_impl.h"

xe_code xe_parse_fail(parser *p, int col, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return xe_fail(p->st, XE_ERR_PARSE, "%s:%d:%d: %s", p->file, p->line, col, msg);
}

void xe_parse_advance(parser *p)
{
    p->tok = xe_lex_next(&p->lx);
}

/* Reports a lexer error token, or "expected WHAT" at the current token. */
xe_code xe_parse_expected(parser *p, const char *what)
{
    if (p->tok.kind == XE_TOK_ERROR)
        return xe_parse_fail(p, p->tok.col, "%.*s", (int)p->tok.len, p->tok.text);
    if (p->tok.kind == XE_TOK_END)
        return xe_parse_fail(p, p->tok.col, "expected %s at the end of the line", what);
    return xe_parse_fail(p, p->tok.col, "expected %s, found '%.*s'", what, (int)p->tok.len,
                         p->tok.text);
}

xe_code xe_parse_expect_punct(parser *p, char c)
{
    char what[8] = {'\'', c, '\'', 0};
    if (!xe_tok_punct(&p->tok, c))
        return xe_parse_expected(p, what);
    xe_parse_advance(p);
    return XE_OK;
}
