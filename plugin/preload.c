/*
 * libxlac.so's entry: an ELF constructor that runs when the library is
 * preloaded (LD_PRELOAD) or opened. It reads the environment once into
 * the flags, registers the launch op and the clustering pass, and on a bad
 * value prints one line and ends the process with exit status 2: the only
 * place the plugin may end its host, because a misconfigured run must
 * stop before it starts rather than silently run without the JIT.
 * `XLAC_FLAGS=--help` prints the flags and exits 0. A destructor waits for
 * background compiles, prints the --stats lines (only where a session ran) and frees the plugin's
 * state, of which this file holds the one instance; xlac_stats_text gives hosts that load
 * libxlac.so themselves (the Python package's xlac.stats()) the same counters.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "compile.h"
#include "xlac/interrupt.h"
#include "xlac_plugin.h"

static xlac_state state;

/*
 * When the run began that this process is a part of: $XLAC_RUN_START,
 * set by the first process of the run that loads the plugin and inherited
 * by every process it starts (timeout, bash -c, the xlac-run under them).
 * Reports written since then by another of them are not replaced
 * (xe_publish's ".PID" rule).
 */
static double run_start(const xlac_env *env)
{
    char *end = NULL;
    double t = env->run_start ? strtod(env->run_start, &end) : 0;
    if (t > 0 && end && !*end)
        return t;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    t = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    char text[64];
    snprintf(text, sizeof text, "%.6f", t);
    setenv("XLAC_RUN_START", text, 1);
    return t;
}

/*
 * On SIGINT/TERM/HUP in a host that installed xlac/interrupt.h (xlac-run):
 * compilers killed and reaped, temp folders and our cache locks removed,
 * the summary so far written, marked interrupted. The executor then writes
 * the trace and ends the process.
 */
static pthread_mutex_t reports_lock =
    PTHREAD_MUTEX_INITIALIZER; /* the reports, by the destructor or here */
static bool reports_done;

static void interrupted(int signo, void *user)
{
    xlac_state *s = user;
    xg_cleanup_interrupted(); /* first: the destructor may be waiting for a compile */
    pthread_mutex_lock(
        &reports_lock); /* held until the process ends: the destructor frees nothing now */
    if (reports_done)
        return;
    reports_done = true;
    xe_status st;
    xe_status_clear(&st);
    if (xlac_report_write(s, signo, &st) != XE_OK)
        fprintf(stderr, "xlac: error: %s\n", st.msg);
    if (s->tracing && !atomic_load(&s->n_sessions))
        xe_trace_discard(s->tracing);
}

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
    state.family_start = run_start(&env);
    if (xlac_plugin_install(&state, &f, &st) != XE_OK) {
        xlac_flags_free(&f);
        fprintf(stderr, "xlac: error: %s\n", st.msg);
        fflush(stderr);
        _exit(2);
    }
    xe_on_interrupt(interrupted, &state);
}

/*
 * At exit: background compiles finish, then the stats line, the summary
 * and the trace, only in a process that ran a session (a wrapper such as
 * timeout or bash -c inherits LD_PRELOAD and XLAC_FLAGS, and must neither
 * print stats nor replace the files of the process it ran). A summary or
 * trace that could not be written is an error line on stderr; the exit
 * status stays the host program's own (a destructor that called _exit
 * would replace it, and skip the host's remaining atexit work).
 */
__attribute__((destructor)) static void xlac_preload_fini(void)
{
    if (!state.installed)
        return;
    /* the stats count the background compiles too: they finish first */
    xlac_launch_drain(&state);
    xe_interrupt_hold(); /* a signal is being handled: its watcher writes the reports and ends the
                            process */
    pthread_mutex_lock(&reports_lock);
    if (reports_done) { /* the watcher has them */
        pthread_mutex_unlock(&reports_lock);
        return;
    }
    reports_done = true;
    bool ran = atomic_load(&state.n_sessions) > 0;
    /* off, and no jit block: nothing observable, not even the stats line */
    if (ran && state.flags.stats && (state.flags.auto_jit > 0 || xlac_made_clusters(&state))) {
        xlac_print_stats(&state, stderr);
        xlac_print_demotions(&state, stderr);
    }
    xe_status st;
    xe_status_clear(&st);
    if (xlac_report_write(&state, 0, &st) != XE_OK)
        fprintf(stderr, "xlac: error: %s\n", st.msg);
    xlac_plugin_shutdown(&state);
    pthread_mutex_unlock(&reports_lock);
    xe_status_clear(&st);
    if (xe_trace_failed(&st))
        fprintf(stderr, "xlac: error: %s\n", st.msg);
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

/*
 * For hosts that route the log (the Python package, python/xlac/_log.py): sets the process's
 * level (0 error, 1 warning, 2 info, 3 debug; -1 keeps it) and the sink that receives each line's
 * level and text instead of stderr (NULL: stderr again); returns the level it had.
 */
__attribute__((visibility("default"))) int
xlac_log_configure(int level, void (*sink)(int level, const char *text))
{
    return xlac_log_set(level, sink);
}
