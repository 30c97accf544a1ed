/*
 * One growing text buffer for everything xlac writes as text: generated
 * programs, .xg and .dot dumps, cache keys. Appends never fail loudly: an
 * allocation that fails (or a format that cannot be printed) sets `oom`
 * and makes every later append a no-op, so a writer appends freely and
 * checks once, at the end, through xe_text_take. A zeroed xe_text is an
 * empty one.
 */
#ifndef XLAC_TEXT_H
#define XLAC_TEXT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct xe_text {
    char *buf;  /* NUL-terminated text; NULL until the first append */
    size_t len; /* bytes of text, the NUL not counted */
    size_t cap; /* bytes allocated at buf */
    bool oom;   /* an append failed: the text is incomplete */
} xe_text;

/* Appends printf-formatted text. */
void xe_text_printf(xe_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void xe_text_vprintf(xe_text *t, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Appends n raw bytes (a NUL among them is kept; buf stays NUL-terminated after them). */
void xe_text_append(xe_text *t, const void *data, size_t n);
/* Cuts the text back to its first len bytes (len <= t->len). */
void xe_text_truncate(xe_text *t, size_t len);
/*
 * The text, handed over to the caller (free it), and t emptied: "" when
 * nothing was appended, NULL when an append failed (the partial text is
 * freed).
 */
char *xe_text_take(xe_text *t);
/* Frees the text and empties t. */
void xe_text_free(xe_text *t);

#endif
