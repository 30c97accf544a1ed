/*
 * The escaping functions of xlac/escape.h: one per destination of a
 * string that came from a graph or a model. Each walks the bytes once
 * and keeps a byte only when it is in the destination's safe set; the
 * sets are written out in full so that a reader can check them.
 */
#include <stdlib.h>
#include <string.h>

#include "xlac/escape.h"

/* ASCII only, whatever the process's locale (Python sets LC_CTYPE from the environment). */
static bool ascii_alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static bool in_set(unsigned char c, const char *set)
{
    return c && (ascii_alnum(c) || strchr(set, c));
}

/*
 * The bytes a comment or a literal keeps as they are. Never '*' (so neither "*" "/" nor "/" "*"
 * can form), '?' (trigraphs), '\\' (escapes, line splices) or a control byte; quotes decided apart.
 */
#define C_SAFE " _.,:;=+-#@!%&|^~()[]{}<>$/"

void xe_esc_c_comment(xe_text *t, const char *s)
{
    size_t n = 0;
    for (; *s && n < XE_ESC_MAX; s++, n++) {
        unsigned char c = (unsigned char)*s;
        if (in_set(c, C_SAFE "'\""))
            xe_text_append(t, &c, 1);
        else
            xe_text_printf(t, "\\x%02x", c);
    }
    if (*s)
        xe_text_printf(t, "...");
}

void xe_esc_c_string(xe_text *t, const char *s)
{
    xe_text_append(t, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (in_set(c, C_SAFE "'"))
            xe_text_append(t, &c, 1);
        else
            xe_text_printf(t, "\\%03o", c);
    }
    xe_text_append(t, "\"", 1);
}

char *xe_esc_c_ident(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(n + 2), *p = out;
    if (!out)
        return NULL;
    unsigned char c0 = (unsigned char)s[0];
    bool starts_ident = c0 == '_' || (ascii_alnum(c0) && !(c0 >= '0' && c0 <= '9'));
    if (!starts_ident)
        *p++ = '_';
    for (size_t i = 0; i < n; i++)
        *p++ = ascii_alnum((unsigned char)s[i]) ? s[i] : '_';
    *p = '\0';
    return out;
}

bool xe_esc_file_name(char *buf, size_t len, const char *s)
{
    size_t max = len - 1 < XE_ESC_MAX ? len - 1 : XE_ESC_MAX, k = 0;
    bool same = *s != '\0';
    for (; s[k] && k < max; k++) {
        unsigned char c = (unsigned char)s[k];
        bool keep = in_set(c, "_.-") && !(k == 0 && c == '.');
        buf[k] = keep ? (char)c : '_';
        same = same && keep;
    }
    if (k == 0)
        buf[k++] = '_';
    buf[k] = '\0';
    return same && !s[k];
}

void xe_esc_shell_word(xe_text *t, const char *s)
{
    bool bare = *s != '\0';
    for (const char *p = s; *p && bare; p++)
        bare = in_set((unsigned char)*p, "_./=:,+@%-");
    if (bare) {
        xe_text_printf(t, "%s", s);
        return;
    }
    xe_text_append(t, "'", 1);
    for (; *s; s++) {
        if (*s == '\'')
            xe_text_printf(t, "'\\''");
        else
            xe_text_append(t, s, 1);
    }
    xe_text_append(t, "'", 1);
}

void xe_esc_dot(xe_text *t, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            xe_text_printf(t, "\\%c", *s);
        else if (*s == '\n')
            xe_text_printf(t, "\\n");
        else if ((unsigned char)*s < 0x20)
            xe_text_printf(t, " ");
        else
            xe_text_append(t, s, 1);
    }
}
