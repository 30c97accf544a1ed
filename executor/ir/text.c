/*
 * xe_text: a NUL-terminated buffer that doubles as it grows. Formatting
 * measures first (vsnprintf into nothing), grows once, then prints in
 * place, so no pointer is ever formed from a NULL buffer. See xlac/text.h.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xlac/text.h"

/* Makes room for extra more bytes and the NUL; false (and oom set) when it cannot. */
static bool reserve(xe_text *t, size_t extra)
{
    if (t->oom)
        return false;
    if (extra >= SIZE_MAX / 2 - t->len) {
        t->oom = true;
        return false;
    }
    size_t need = t->len + extra + 1;
    if (need <= t->cap)
        return true;
    size_t cap = t->cap ? t->cap : 256;
    while (cap < need)
        cap *= 2;
    char *b = realloc(t->buf, cap);
    if (!b) {
        t->oom = true;
        return false;
    }
    t->buf = b;
    t->cap = cap;
    return true;
}

void xe_text_vprintf(xe_text *t, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = t->oom ? -1 : vsnprintf(NULL, 0, fmt, ap);
    if (n < 0)
        t->oom = true;
    else if (reserve(t, (size_t)n)) {
        vsnprintf(t->buf + t->len, t->cap - t->len, fmt, again);
        t->len += (size_t)n;
    }
    va_end(again);
}

void xe_text_printf(xe_text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    xe_text_vprintf(t, fmt, ap);
    va_end(ap);
}

void xe_text_append(xe_text *t, const void *data, size_t n)
{
    if (!reserve(t, n))
        return;
    memcpy(t->buf + t->len, data, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

void xe_text_truncate(xe_text *t, size_t len)
{
    if (len >= t->len)
        return;
    t->len = len;
    t->buf[len] = '\0';
}

char *xe_text_take(xe_text *t)
{
    if (!t->oom && !t->buf)
        reserve(t, 0);
    if (t->oom) {
        xe_text_free(t);
        return NULL;
    }
    t->buf[t->len] = '\0';
    char *s = t->buf;
    *t = (xe_text){0};
    return s;
}

void xe_text_free(xe_text *t)
{
    free(t->buf);
    *t = (xe_text){0};
}
