/*
 * The .xg tokenizer. Numbers follow C's strtoll/strtod (a leading '-' is
 * part of a number), identifiers may contain '.' (the header keyword
 * `xlac.graph`) and start with '@' (annotations), strings keep their
 * escapes for the parser to decode.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lex.h"

void xe_lex_init(xe_lexer *lx, const char *line, size_t len)
{
    lx->line = line;
    lx->len = len;
    lx->pos = 0;
}

static bool ident_start(int c)
{
    return isalpha(c) || c == '_' || c == '@';
}

static bool ident_char(int c)
{
    return isalnum(c) || c == '_' || c == '.';
}

static xe_tok error_tok(int col, const char *why)
{
    return (xe_tok){.kind = XE_TOK_ERROR, .text = why, .len = strlen(why), .col = col};
}

/* number = "-"? digits ("." digits)? (("e"|"E") ("+"|"-")? digits)? */
static xe_tok lex_number(xe_lexer *lx, size_t start)
{
    char buf[64];
    size_t end = start + (lx->line[start] == '-');
    bool is_float = false;
    while (end < lx->len && (isalnum((unsigned char)lx->line[end]) || lx->line[end] == '.' ||
                             ((lx->line[end] == '-' || lx->line[end] == '+') &&
                              (lx->line[end - 1] == 'e' || lx->line[end - 1] == 'E')))) {
        is_float |= lx->line[end] == '.' || lx->line[end] == 'e' || lx->line[end] == 'E';
        end++;
    }
    size_t n = end - start;
    xe_tok t = {.text = lx->line + start, .len = n, .col = (int)start + 1};
    if (n >= sizeof buf)
        return error_tok(t.col, "number too long");
    memcpy(buf, lx->line + start, n);
    buf[n] = '\0';
    char *stop;
    errno = 0;
    if (is_float) {
        t.kind = XE_TOK_FLOAT;
        t.f = strtod(buf, &stop);
    } else {
        t.kind = XE_TOK_INT;
        t.i = strtoll(buf, &stop, 10);
    }
    if (*stop || stop == buf)
        return error_tok(t.col, "malformed number");
    if (errno == ERANGE && !is_float)
        return error_tok(t.col, "integer out of range");
    if (errno == ERANGE && isinf(t.f))
        return error_tok(t.col, "number out of range (write inf for infinity)");
    lx->pos = end;
    return t;
}

static xe_tok lex_string(xe_lexer *lx, size_t start)
{
    size_t end = start + 1;
    while (end < lx->len && lx->line[end] != '"') {
        if (lx->line[end] == '\\' && end + 1 < lx->len)
            end++;
        end++;
    }
    if (end >= lx->len)
        return error_tok((int)start + 1, "unterminated string");
    lx->pos = end + 1;
    return (xe_tok){.kind = XE_TOK_STRING,
                    .text = lx->line + start + 1,
                    .len = end - start - 1,
                    .col = (int)start + 1};
}

xe_tok xe_lex_next(xe_lexer *lx)
{
    while (lx->pos < lx->len && isspace((unsigned char)lx->line[lx->pos]))
        lx->pos++;
    size_t p = lx->pos;
    if (p >= lx->len || lx->line[p] == '#')
        return (xe_tok){.kind = XE_TOK_END, .col = (int)p + 1};
    unsigned char c = (unsigned char)lx->line[p];
    if (isdigit(c) || (c == '-' && p + 1 < lx->len &&
                       (isdigit((unsigned char)lx->line[p + 1]) || lx->line[p + 1] == '.')))
        return lex_number(lx, p);
    if (c == '"')
        return lex_string(lx, p);
    if (ident_start(c) ||
        (c == '-' && p + 1 < lx->len && isalpha((unsigned char)lx->line[p + 1]))) {
        size_t end = p + 1;
        while (end < lx->len && ident_char((unsigned char)lx->line[end]))
            end++;
        lx->pos = end;
        return (xe_tok){
            .kind = XE_TOK_IDENT, .text = lx->line + p, .len = end - p, .col = (int)p + 1};
    }
    if (strchr("=()[],:{}?", c) && c) {
        lx->pos++;
        return (xe_tok){.kind = XE_TOK_PUNCT,
                        .text = lx->line + p,
                        .len = 1,
                        .col = (int)p + 1,
                        .punct = (char)c};
    }
    return error_tok((int)p + 1, "unexpected character");
}

bool xe_tok_is(const xe_tok *t, const char *ident)
{
    return t->kind == XE_TOK_IDENT && strlen(ident) == t->len &&
           memcmp(t->text, ident, t->len) == 0;
}

bool xe_tok_punct(const xe_tok *t, char c)
{
    return t->kind == XE_TOK_PUNCT && t->punct == c;
}
