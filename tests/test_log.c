/*
 * XLAC_LOG (plugin/log.c): at info a cold compile says, on any stream (here a
 * pipe, not a terminal), one line per compile with the cluster, its ops and
 * milliseconds, a disk load one line too, and a launch that ran per op one
 * line per cluster and reason (every one at debug); error silences the
 * warnings; a bad level is refused at start; --help lists it.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/tmpdir.h"

#define RUN XLAC_BINARY_DIR "/bin/xlac-run g.xg --seed 0"
#define PRELOAD "LD_PRELOAD=" XLAC_BINARY_DIR "/lib/libxlac.so "

static void make_tmp(void)
{
    xt_tmp_make("/tmp/xlac_log_XXXXXX");
    xt_write_file(xt_path("g.xg"), "xlac.graph v1\n"
                                   "input x: f32[8,4]\n"
                                   "input y: f32[8,4]\n"
                                   "a = mul(x, y)\n"
                                   "b = add(a, x)\n"
                                   "c = tanh(b)\n"
                                   "s = reduce_sum(c, axes=[1], keepdims=false)\n"
                                   "output s\n");
}

TestSuite(log, .init = make_tmp, .fini = xt_tmp_fini, .timeout = 120);

/* xlac-run on g.xg with the plugin, env words before it, its stdout and stderr into a pipe. */
static int piped(const char *env, const char *args, char **out)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s " RUN " %s 2>&1 | cat", env, args);
    return xt_sh(PRELOAD "XLAC_AUTO_JIT=1", cmd, out);
}

Test(log, info_says_each_compile_and_disk_load_under_a_pipe)
{
    char *o = NULL;
    cr_assert_eq(piped("XLAC_LOG=info XLAC_FLAGS=--cache_dir=cache", "", &o), 0, "%s", o);
    cr_assert(strstr(o, "xlac: info: compiled cluster_0 (4 ops, c) in "), "%s", o);
    cr_assert(strstr(o, " ms\n"), "%s", o);
    cr_assert(!strchr(o, '\r') && !strstr(o, "compiling"), "no progress line off a terminal: %s", o);
    free(o);
    cr_assert_eq(piped("XLAC_LOG=info XLAC_FLAGS=--cache_dir=cache", "", &o), 0, "%s", o);
    cr_assert(strstr(o, "xlac: info: loaded cluster_0 (4 ops) from the disk cache in "), "%s", o);
    free(o);
    /* the default level says nothing of a compile that went well */
    cr_assert_eq(piped("XLAC_FLAGS=--disk_cache=0", "", &o), 0, "%s", o);
    cr_assert(!strstr(o, "xlac: "), "%s", o);
    free(o);
}

Test(log, info_says_a_fallback_once_per_cluster_and_reason_debug_every_time)
{
    char *o = NULL;
    cr_assert_eq(piped("XLAC_LOG=info XLAC_FLAGS=--codegen=0", "--iterations 3", &o), 0, "%s", o);
    cr_assert_eq(xt_occurrences(o, "xlac: info: cluster_0 ran op by op: --codegen=0\n"), 1, "%s", o);
    free(o);
    cr_assert_eq(piped("XLAC_LOG=debug XLAC_FLAGS=--codegen=0", "--iterations 3", &o), 0, "%s", o);
    cr_assert_eq(xt_occurrences(o, "xlac: debug: cluster_0 ran op by op: --codegen=0\n"), 3, "%s", o);
    free(o);
}

Test(log, error_silences_warnings_and_a_bad_level_is_refused)
{
    char *o = NULL;
    cr_assert_eq(piped("CC=/nonexistent/cc XLAC_FLAGS=--disk_cache=0", "", &o), 0, "%s", o);
    cr_assert_eq(xt_occurrences(o, "xlac: warning: cluster_0 failed to compile"), 1, "%s", o);
    free(o);
    cr_assert_eq(piped("XLAC_LOG=error CC=/nonexistent/cc XLAC_FLAGS=--disk_cache=0", "", &o), 0, "%s", o);
    cr_assert(!strstr(o, "warning"), "%s", o);
    free(o);
    cr_assert_neq(xt_sh(PRELOAD "XLAC_AUTO_JIT=1 XLAC_LOG=loud", RUN, &o), 0, "%s", o);
    cr_assert(strstr(o, "xlac: error: XLAC_LOG=loud: expected error, warning, info or debug"), "%s", o);
    free(o);
    cr_assert_eq(xt_sh(PRELOAD "XLAC_FLAGS=--help", RUN, &o), 0, "%s", o);
    cr_assert(strstr(o, "XLAC_LOG=LEVEL"), "%s", o);
    free(o);
}
