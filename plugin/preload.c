/*
 * libxlac.so's entry: an ELF constructor that runs when the library is
 * preloaded (LD_PRELOAD) or opened. It reads the environment once into
 * the flags, registers the launch op and the clustering pass, and on a bad
 * value prints one line and ends the process with exit status 2: the only
 * place the plugin may end its host, because a misconfigured run must
 * stop before it starts rather than silently run without the JIT.
 * `XLAC_FLAGS=--help` prints the flags and exits 0. A destructor waits for
 * background compiles, prints the --stats lines and frees the plugin's state, of which this file holds
 * the one instance; xlac_stats_text gives hosts that load libxlac.so
 * themselves (the Python package's xlac.stats()) the same counters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "xlac_plugin.h"

static xlac_state state;

__attribute__((constructor)) static void xlac_preload_init(void)
{
    xe_status st;
    xe_status_clear(&st);
    xlac_env env;
    xlac_env_read(&env);
    xlac_flags f;
    if (xlac_flags_parse(&f, &env, &st) != XE_OK) {
        fprintf(stderr, "xlac: error: %s\n", st.msg);
        fflush(stderr);
        _exit(2);
    }
    if (f.help) {
        xlac_flags_help(stdout); /* help asked for: to stdout, as every --help */
        fflush(stdout);
        fflush(stderr);
        _exit(0);
    }
    xlac_state_init(&state);
    if (xlac_plugin_install(&state, &f, &st) != XE_OK) {
        xlac_flags_free(&f);
        fprintf(stderr, "xlac: error: %s\n", st.msg);
        fflush(stderr);
        _exit(2);
    }
}

__attribute__((destructor)) static void xlac_preload_fini(void)
{
    if (!state.installed)
        return;
    /* the stats count the background compiles too: they finish first */
    xlac_launch_drain(&state);
    /* off, and no jit block: nothing observable, not even the stats line */
    if (state.flags.stats && (state.flags.auto_jit > 0 || xlac_made_clusters(&state)))
        xlac_print_stats(&state, stderr);
    xlac_report_write(&state);
    xlac_plugin_shutdown(&state);
}

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
    xlac_print_stats(&state, f);
    if (fclose(f) != 0) {
        free(text);
        return 0;
    }
    if (buf && len)
        snprintf(buf, len, "%s", text);
    free(text);
    return n;
}
