/*
 * The --stats counters as text, for hosts that load libxlac.so themselves
 * and have no exit-time stderr line to read (the Python package's
 * xlac.stats()). Linked into libxlac.so only, beside its ELF entry.
 */
#include <stdlib.h>
#include <string.h>

#include "xlac_plugin.h"

/*
 * Writes the lines xlac_print_stats prints ("xlac: stats clusters=N ...",
 * "xlac: timing ...") into buf[len], NUL-terminated and cut to fit; returns
 * the length of the whole text, 0 when it could not be made.
 */
__attribute__((visibility("default"))) size_t xlac_stats_text(char *buf, size_t len)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (!f)
        return 0;
    xlac_print_stats(f);
    if (fclose(f) != 0) {
        free(text);
        return 0;
    }
    if (buf && len)
        snprintf(buf, len, "%s", text);
    free(text);
    return n;
}
