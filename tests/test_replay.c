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

#define XLAC_RUN XLAC_BINARY_DIR "/bin/xlac-run"
#define LIBXLAC XLAC_BINARY_DIR "/lib/libxlac.so"
#define MLP XLAC_SOURCE_DIR "/examples/mlp.xg"

#ifdef XLAC_SANITIZE
#define ASAN_ENV "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1 "
#else
#define ASAN_ENV ""
#endif
/* the inherited variables that would change a child's behaviour */
#define CLEAN_ENV "env -u LD_PRELOAD -u XLAC_AUTO_JIT -u XLAC_FLAGS -u XLAC_DUMP_TO -u XLAC_DUMP_GRAPH_PREFIX " ASAN_ENV

static char tmp[256];

static void make_tmp(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/xlac_replay_XXXXXX");
    cr_assert_not_null(mkdtemp(tmp));
}

static void remove_tmp(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp);
}

TestSuite(replay, .init = make_tmp, .fini = remove_tmp, .timeout = 180);

static char *read_all(const char *p, size_t *len)
{
    FILE *f = fopen(p, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    fclose(f);
    if (len)
        *len = got;
    return s;
}

/* Runs `CLEAN_ENV env_words cmd` in the test folder; stdout+stderr go to *out (malloc'd). */
static int sh(const char *env_words, const char *cmd, char **out)
{
    char *line = NULL, log[300];
    snprintf(log, sizeof log, "%s/.log", tmp);
    cr_assert_geq(asprintf(&line, "cd '%s' && " CLEAN_ENV "%s %s >'%s' 2>&1", tmp, env_words, cmd, log), 0);
    int status = system(line);
    free(line);
    *out = read_all(log, NULL);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static bool same_file(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    char *x = read_all(a, &na), *y = read_all(b, &nb);
    bool same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

/* A C compiler that subtracts where the generated code adds two float values: a miscompile. */
static void write_bad_cc(void)
{
    char p[300];
    snprintf(p, sizeof p, "%s/badcc", tmp);
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
    cr_assert_eq(sh(PLUGIN DUMP, XLAC_RUN " " MLP " --seed 5 --save-outputs jit", &o), 0, "%s", o);
    cr_assert(strstr(o, "cluster_0 dumped for replay: ") && strstr(o, FOLDER "/cluster.xg --feed"), "%s", o);
    free(o);
    cr_assert_eq(sh("", XLAC_RUN " " MLP " --seed 5 --save-outputs plain", &o), 0, "%s", o);
    free(o);
    /* op by op from the folder: the plain run's outputs, bit for bit */
    cr_assert_eq(sh("", XLAC_RUN " " FOLDER "/cluster.xg --feed " FOLDER "/inputs --save-outputs r0", &o), 0, "%s", o);
    free(o);
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/plain/y.npy", tmp);
    snprintf(b, sizeof b, "%s/r0/y.npy", tmp);
    cr_assert(same_file(a, b), "op-by-op replay differs from the original run");
    /* clustered from the folder: the clustered run's outputs, bit for bit (the same program) */
    cr_assert_eq(sh(PLUGIN "XLAC_FLAGS=--disk_cache=0",
                    XLAC_RUN " " FOLDER "/cluster.xg --feed " FOLDER "/inputs --save-outputs r1", &o), 0, "%s", o);
    free(o);
    snprintf(a, sizeof a, "%s/jit/y.npy", tmp);
    snprintf(b, sizeof b, "%s/r1/y.npy", tmp);
    cr_assert(same_file(a, b), "clustered replay differs from the original clustered run");
    /* the folder's own command: both ways in one process, within tolerance */
    cr_assert_eq(sh(PLUGIN "XLAC_FLAGS=--disk_cache=0",
                    XLAC_RUN " " FOLDER "/cluster.xg --feed " FOLDER "/inputs --compare", &o), 0, "%s", o);
    cr_assert(strstr(o, "compare y: f32[64,128] max_abs=") && strstr(o, " ok\n"), "%s", o);
    free(o);
    char cmdfile[400];
    snprintf(cmdfile, sizeof cmdfile, "%s/" FOLDER "/command.txt", tmp);
    char *cmd = read_all(cmdfile, NULL);
    cr_assert(cmd && strstr(cmd, "xlac-run " FOLDER "/cluster.xg --feed " FOLDER "/inputs --compare"), "%s", cmd);
    free(cmd);
}

Test(replay, compare_catches_an_injected_miscompile)
{
    write_bad_cc();
    char *o = NULL;
    /* a wrong cluster, dumped as it ran */
    cr_assert_eq(sh(PLUGIN DUMP "CC=./badcc", XLAC_RUN " " MLP " --seed 2", &o), 0, "%s", o);
    free(o);
    /* the folder alone reproduces it */
    int rc = sh(PLUGIN "XLAC_FLAGS=--disk_cache=0 CC=./badcc",
                XLAC_RUN " " FOLDER "/cluster.xg --feed " FOLDER "/inputs --compare", &o);
    cr_assert_eq(rc, 3, "rc %d: %s", rc, o);
    cr_assert(strstr(o, "compare y: f32[64,128] max_abs=") && strstr(o, "DIFFERS (tolerance: rtol=0.0001"), "%s", o);
    free(o);
    /* and with the real compiler the same folder agrees */
    rc = sh(PLUGIN "XLAC_FLAGS=--disk_cache=0", XLAC_RUN " " FOLDER "/cluster.xg --feed " FOLDER "/inputs --compare",
            &o);
    cr_assert_eq(rc, 0, "rc %d: %s", rc, o);
    free(o);
}

Test(replay, fallback_names_the_replay_command)
{
    char *o = NULL;
    int rc = sh(PLUGIN DUMP "CC=/bin/false", XLAC_RUN " " MLP, &o);
    cr_assert_eq(rc, 0, "%s", o);
    cr_assert(strstr(o, "cluster_0 failed to compile"), "%s", o);
    cr_assert(strstr(o, "cluster_0 ran op by op (fallback); replay it with: LD_PRELOAD="), "%s", o);
    cr_assert(strstr(o, FOLDER "/inputs --compare"), "%s", o);
    free(o);
}

Test(replay, compare_needs_the_plugin_and_dump_inputs_needs_a_folder)
{
    char *o = NULL;
    int rc = sh("", XLAC_RUN " " MLP " --compare", &o);
    cr_assert_eq(rc, 2, "%s", o);
    cr_assert(strstr(o, "needs the xlac plugin (LD_PRELOAD=libxlac.so XLAC_AUTO_JIT=2)"), "%s", o);
    free(o);
    rc = sh(PLUGIN "XLAC_FLAGS=--dump_inputs", XLAC_RUN " " MLP, &o);
    cr_assert_eq(rc, 2, "%s", o);
    cr_assert(strstr(o, "--dump_inputs needs XLAC_DUMP_TO=DIR"), "%s", o);
    free(o);
    rc = sh("", XLAC_RUN " " MLP " --compare --tolerance -1", &o);
    cr_assert_eq(rc, 2, "%s", o);
    free(o);
}
