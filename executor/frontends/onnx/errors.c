/*
 * The importer's error list. An import does not stop at the first
 * unsupported node: every one is reported, one line each, so that a user
 * sees at once everything a model needs. Lines about unsupported ops,
 * attributes and dtypes are counted apart from lines about invalid models.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

#define OX_MAX_LINES 200 /* more lines than this are counted, not printed */

static void append(ox_errors *e, const char *s, size_t n)
{
    if (e->len + n + 2 > e->cap) {
        size_t cap = (e->len + n + 2) * 2;
        char *t = realloc(e->text, cap);
        if (!t)
            return; /* out of memory: the line is lost, the count is kept */
        e->text = t;
        e->cap = cap;
    }
    if (e->len)
        e->text[e->len++] = '\n';
    memcpy(e->text + e->len, s, n);
    e->len += n;
    e->text[e->len] = '\0';
}

void ox_error_add(ox_errors *e, bool unsupported, const char *fmt, ...)
{
    int lines = e->n_unsupported + e->n_other;
    if (unsupported)
        e->n_unsupported++;
    else
        e->n_other++;
    if (lines >= OX_MAX_LINES)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    append(e, line, n < 0 ? 0 : (size_t)n >= sizeof line ? sizeof line - 1 : (size_t)n);
}

void ox_errors_free(ox_errors *e)
{
    free(e->text);
    memset(e, 0, sizeof *e);
}
