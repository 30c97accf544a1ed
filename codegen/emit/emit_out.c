/*
 * The emitter's one sink (STYLE.md): every line of generated text goes
 * through xg_out, printf-like, into the program's buffer; once the buffer
 * cannot grow, nothing more is printed and the walk ends out of memory.
 * The leaf of emit/: every emitter file prints through it.
 */
#include <stdarg.h>

#include "emit_impl.h"

/* The one printf-like sink of all generated text. */
void xg_out(em *e, const char *fmt, ...)
{
    if (e->oom)
        return;
    va_list ap;
    va_start(ap, fmt);
    xe_text_vprintf(&e->text, fmt, ap);
    va_end(ap);
    e->oom = e->text.oom;
}
