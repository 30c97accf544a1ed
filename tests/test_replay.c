/*
 * Replaying one cluster, end to end through the real CLI and plugin:
 *   - an e2e run with --dump_inputs writes replay_NNNN.CLUSTER/ (cluster.xg,
 *     inputs/, command.txt); the folder replayed op by op and clustered
 *     gives the original outputs, and --compare agrees (exit 0);
 *   - an injected miscompile (a C compiler wrapper that turns a float `+`
 *     of the generated code into `-`) is caught by --compare (exit 3) from
 *     the folder alone, and the same folder with the real compiler agrees;
 *   - a compile failure's fallback note names the replay command;
 *   - --compare without the plugin is a usage error that says what to preload.
 * Children run with a clean environment (no inherited LD_PRELOAD or XLAC_*),
 * the disk cache off, so nothing outside the test's folder is read or written.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "support/tmpdir.h"

#define XLAC_RUN XLAC_BINARY_DIR "/bin/xlac-run"
#define LIBXLAC XLAC_BINARY_DIR "/lib/libxlac.so"
#define MLP XLAC_SOURCE_DIR "/examples/mlp.xg"

static void make_tmp(void)
{
    xt_tmp_make("/tmp/xlac_replay_XXXXXX");
}

TestSuite(replay, .init = make_tmp, .fini = xt_tmp_fini, .timeout = 180);

static bool same_file(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    char *x = xt_read_file(a, &na), *y = xt_read_file(b, &nb);
    bool same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

/* A C compiler that subtracts where the generated code adds two float values: a miscompile. */
static void write_bad_cc(void)
{
    char p[300];
    snprintf(p, sizeof p, "%s/badcc", xt_tmp);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs("#!/bin/sh\n"
          "for a in \"$@\"; do case \"$a\" in *.c) sed -i '/^ *float v[0-9]* = v[0-9]* + v/s/ + / - /' \"$a\";; "
          "esac; done\n"
          "exec cc \"$@\"\n",
          f);
    fclose(f);
    chmod(p, 0755);
}

#define PLUGIN "LD_PRELOAD=" LIBXLAC " XLAC_AUTO_JIT=2 "
#define DUMP "XLAC_DUMP_TO=dump XLAC_FLAGS='--dump_inputs --disk_cache=0' "
#define FOLDER "dump/replay_0000.cluster_0"

Test(replay, dump_replays_the_original_outputs)
{
    char *o = NULL;
    cr_assert_eq(xt_sh(PLUGIN DUMP, XLAC_RUN " " MLP " --seed 5 --save-outputs jit", &o), 0, "%s", o);
    cr_assert(strstr(o, "cluster_0 dumped for replay: ") && strstr(o, FOLDER "/cluster.xg --feed"), "%s", o);
    free(o);
    cr_assert_eq(xt_sh("", XLAC_RUN " " MLP " --seed 5 --save-outputs plain", &o), 0, "%s", o);
    free(o);
    /* op by op from the folder: the plain run's outputs, bit for bit */
    cr_assert_eq(xt_sh("", XLAC_RUN " " FOLDER "/cluster.xg --feed " FOLDER "/inputs --save-outputs r0", &o), 0, "%s", o);
    free(o);
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/plain/y.npy", xt_tmp);
    snprintf(b, sizeof b, "%s/r0/y.npy", xt_tmp);
    cr_assert(same_file(a, b), "op-by-op replay differs from the original run");
    /* clustered from the folder: the clustered run's outputs, bit for bit (the same program) */
    cr_assert_eq(xt_sh(PLUGIN "XLAC_FLAGS=--disk_cache=0",
                    XLAC_RUN " " FOLDER "/cluster.xg --feed " FOLDER "/inputs --save-outputs r1", &o), 0, "%s", o);
    free(o);
    snprintf(a, sizeof a, "%s/jit/y.npy", xt_tmp);
    snprintf(b, sizeof b, "%s/r1/y.npy", xt_tmp);
    cr_assert(same_file(a, b), "clustered replay differs from the original clustered run");
    /* the folder's own command: both ways in one process, within tolerance */
    cr_assert_eq(xt_sh(PLUGIN "XLAC_FLAGS=--disk_cache=0",
                    XLAC_RUN " " FOLDER "/cluster.xg --feed " FOLDER "/inputs --compare", &o), 0, "%s", o);
    cr_assert(strstr(o, "compare y: f32[64,128] max_abs=") && strstr(o, " ok\n"), "%s", o);
    free(o);
    char cmdfile[400];
    snprintf(cmdfile, sizeof cmdfile, "%s/" FOLDER "/command.txt", xt_tmp);
    char *cmd = xt_read_file(cmdfile, NULL);
    cr_assert(cmd && strstr(cmd, "xlac-run " FOLDER "/cluster.xg --feed " FOLDER "/inputs --compare"), "%s", cmd);
    free(cmd);
}

Test(replay, compare_catches_an_injected_miscompile)
{
    write_bad_cc();
    char *o = NULL;
    /* a wrong cluster, dumped as it ran */
    cr_assert_eq(xt_sh(PLUGIN DUMP "CC=./badcc", XLAC_RUN " " MLP " --seed 2", &o), 0, "%s", o);
    free(o);
    /* the folder alone reproduces it */
    int rc = xt_sh(PLUGIN "XLAC_FLAGS=--disk_cache=0 CC=./badcc",
                XLAC_RUN " " FOLDER "/cluster.xg --feed " FOLDER "/inputs --compare", &o);
    cr_assert_eq(rc, 3, "rc %d: %s", rc, o);
    cr_assert(strstr(o, "compare y: f32[64,128] max_abs=") && strstr(o, "DIFFERS (tolerance: rtol=0.0001"), "%s", o);
    free(o);
    /* and with the real compiler the same folder agrees */
    rc = xt_sh(PLUGIN "XLAC_FLAGS=--disk_cache=0", XLAC_RUN " " FOLDER "/cluster.xg --feed " FOLDER "/inputs --compare",
            &o);
    cr_assert_eq(rc, 0, "rc %d: %s", rc, o);
    free(o);
}

Test(replay, fallback_names_the_replay_command)
{
    char *o = NULL;
    int rc = xt_sh(PLUGIN DUMP "CC=/bin/false", XLAC_RUN " " MLP " --seed 0", &o);
    cr_assert_eq(rc, 0, "%s", o);
    cr_assert(strstr(o, "cluster_0 failed to compile"), "%s", o);
    cr_assert(strstr(o, "cluster_0 ran op by op (fallback); replay it with: LD_PRELOAD="), "%s", o);
    cr_assert(strstr(o, FOLDER "/inputs --compare"), "%s", o);
    free(o);
}

Test(replay, compare_needs_the_plugin_and_dump_inputs_needs_a_folder)
{
    char *o = NULL;
    int rc = xt_sh("", XLAC_RUN " " MLP " --seed 0 --compare", &o);
    cr_assert_eq(rc, 2, "%s", o);
    cr_assert(strstr(o, "needs the xlac plugin (LD_PRELOAD=libxlac.so XLAC_AUTO_JIT=2)"), "%s", o);
    free(o);
    rc = xt_sh(PLUGIN "XLAC_FLAGS=--dump_inputs", XLAC_RUN " " MLP " --seed 0", &o);
    cr_assert_eq(rc, 2, "%s", o);
    cr_assert(strstr(o, "--dump_inputs needs XLAC_DUMP_TO=DIR"), "%s", o);
    free(o);
    rc = xt_sh("", XLAC_RUN " " MLP " --seed 0 --compare --tolerance -1", &o);
    cr_assert_eq(rc, 2, "%s", o);
    free(o);
}
