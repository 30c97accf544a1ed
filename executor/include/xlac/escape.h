/*
 * Where text from a graph or a model may go, and the one function that
 * takes it there. Node names, annotations (@cluster="..."), attribute
 * strings and file names come from whoever wrote the model: none of them
 * reaches generated source, a path or shell text except through these.
 * Each function either makes the string safe for its destination
 * (escapes it, keeping it readable) or replaces what cannot be kept.
 *
 *   destination                     function
 *   C/CUDA source, inside a comment xe_esc_c_comment
 *   C/CUDA source, a string literal xe_esc_c_string
 *   C/CUDA source, an identifier    xe_esc_c_ident
 *   one component of a path         xe_esc_file_name
 *   one word of POSIX shell text    xe_esc_shell_word
 *   Graphviz, a quoted string       xe_esc_dot
 *   JSON, a string's inside         xe_trace_json_escape (xlac/trace.h)
 *   .xg text, a string attribute    the writer's own (executor/frontends/xg/write.c)
 *
 * The C functions never let a string end the comment or the literal it is
 * in, start a preprocessor line, splice lines (backslash-newline, the
 * trigraph ??/) or form another token: every byte outside a small set of
 * printable ASCII is written as an escape. Long strings are cut, with
 * "...", at XE_ESC_MAX bytes of the original (a comment and a name are
 * for a reader; a literal is kept whole).
 */
#ifndef XLAC_ESCAPE_H
#define XLAC_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>

#include "xlac/text.h"

#define XE_ESC_MAX 200 /* bytes of a string kept in a comment or a file name */

/* s as the inside of a C comment: bytes other than [A-Za-z0-9 _.,:;=+-#@!%&|^~()[]{}<>'"$/] as
 * \xNN. */
void xe_esc_c_comment(xe_text *t, const char *s);
/* s as a C string literal, the quotes included: other bytes than [A-Za-z0-9
 * _.,:;=+-#@!%&|^~()[]{}<>'$/] as three-digit octal escapes (never hex, which would swallow the
 * digits after it). */
void xe_esc_c_string(xe_text *t, const char *s);
/* s as a C identifier: other characters than [A-Za-z0-9_] become '_', a leading digit (or an empty
 * s) gets a '_' in front. Freshly allocated (free it); NULL when out of memory. */
char *xe_esc_c_ident(const char *s);
/*
 * s as one component of a path, into buf[len] (len >= 2): [A-Za-z0-9_.-] kept, every other byte
 * '_', a leading '.' (so never "." or "..") '_', at most XE_ESC_MAX bytes and len - 1; an empty s
 * is "_". Returns true when the name is s unchanged.
 */
bool xe_esc_file_name(char *buf, size_t len, const char *s);
/* s as one word of POSIX shell text: bare when it is only [A-Za-z0-9_./=:,+@%-] (and not empty),
 * else in single quotes with each ' written '\''. */
void xe_esc_shell_word(xe_text *t, const char *s);
/* s as the inside of a Graphviz double-quoted string (quotes, backslashes, newlines escaped). */
void xe_esc_dot(xe_text *t, const char *s);

#endif
