/*
 * Private: the tokenizer of the .xg format. It works on one line at a
 * time (the format is line oriented), produces tokens with their column,
 * and never reads past the end of the line.
 */
#ifndef XE_LEX_H
#define XE_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum xe_tok_kind {
    XE_TOK_END,    /* end of line (or a comment) */
    XE_TOK_IDENT,  /* name, op, dtype, keyword; may start with '@' */
    XE_TOK_INT,    /* 12, -3 */
    XE_TOK_FLOAT,  /* 0.5, 1e-5, -2.5 */
    XE_TOK_STRING, /* "..." (text holds the raw, escaped contents) */
    XE_TOK_PUNCT,  /* one of = ( ) [ ] , : { } ? */
    XE_TOK_ERROR,  /* malformed token; text says why */
} xe_tok_kind;

typedef struct xe_tok {
    xe_tok_kind kind;
    const char *text; /* points into the line */
    size_t len;
    int col;    /* 1-based */
    int64_t i;  /* INT */
    double f;   /* FLOAT */
    char punct; /* PUNCT */
} xe_tok;

typedef struct xe_lexer {
    const char *line; /* not NUL-terminated */
    size_t len, pos;
} xe_lexer;

void xe_lex_init(xe_lexer *lx, const char *line, size_t len);
/* Reads the next token; errors are XE_TOK_ERROR tokens, never crashes. */
xe_tok xe_lex_next(xe_lexer *lx);
bool xe_tok_is(const xe_tok *t, const char *ident);
bool xe_tok_punct(const xe_tok *t, char c);

#endif
