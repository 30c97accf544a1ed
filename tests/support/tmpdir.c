/*
 * A test's private folder and the file and command helpers of the tests
 * that work in one (see tmpdir.h).
 */
#include "tmpdir.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef XLAC_SANITIZE
#define ASAN_ENV "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1 "
#else
#define ASAN_ENV ""
#endif
/* the inherited variables that would change a child's behaviour */
#define CLEAN_ENV                                                                                  \
    "env -u LD_PRELOAD -u XLAC_AUTO_JIT -u XLAC_FLAGS -u XLAC_DUMP_TO -u "                         \
    "XLAC_DUMP_GRAPH_PREFIX -u XLAC_LOG " ASAN_ENV

char xt_tmp[64];

void xt_tmp_make(const char *template)
{
    snprintf(xt_tmp, sizeof xt_tmp, "%s", template);
    cr_assert_not_null(mkdtemp(xt_tmp), "%s", template);
}

bool xt_tmp_remove(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", xt_tmp);
    if (system(cmd) == 0)
        return true;
    fprintf(stderr, "could not remove %s\n", xt_tmp);
    return false;
}

void xt_tmp_fini(void)
{
    xt_tmp_remove();
}

char *xt_path(const char *name)
{
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", xt_tmp, name);
    return buf[k];
}

void xt_write_file(const char *p, const char *text)
{
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "%s", p);
    fputs(text, f);
    fclose(f);
}

char *xt_read_file(const char *p, size_t *len)
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

void xt_read_head(const char *p, char *buf, size_t cap)
{
    FILE *f = fopen(p, "rb");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
}

int xt_occurrences(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

const char *xt_last_line(const char *text)
{
    const char *end = text + strlen(text);
    if (end > text && end[-1] == '\n')
        end--;
    while (end > text && end[-1] != '\n')
        end--;
    return end;
}

int xt_sh(const char *env_words, const char *cmd, char **out)
{
    char *line = NULL, log[300];
    snprintf(log, sizeof log, "%s/.log", xt_tmp);
    cr_assert_geq(
        asprintf(&line, "cd '%s' && " CLEAN_ENV "%s %s >'%s' 2>&1", xt_tmp, env_words, cmd, log),
        0);
    int status = system(line);
    free(line);
    *out = xt_read_file(log, NULL);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

void xt_result_free(xt_result *r)
{
    free(r->out);
    free(r->err);
}

/* Whether env ("K=V" list) sets the variable of entry ("K=..."): env's value wins (CC=gcc set by
   scripts/test.sh for the sanitizer build must not hide a test's CC=/bin/false). */
static bool overridden(const char *entry, const char *const *env)
{
    size_t k = strcspn(entry, "=");
    for (int i = 0; env && env[i]; i++)
        if (strncmp(env[i], entry, k + 1) == 0)
            return true;
    return false;
}

/* The child's environment (see xt_run_in) into envp (room for 256); ld: room for LD_PRELOAD=. */
static void child_env(bool preload, const char *const *env, char **envp, char *ld, size_t ld_len)
{
    extern char **environ;
    int n = 0;
    for (char **e = environ; *e && n < 200; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "XLAC_", 5) && strncmp(*e, "ASAN_OPTIONS=", 13) &&
            !overridden(*e, env))
            envp[n++] = *e;
#ifdef XLAC_SANITIZE
    envp[n++] = "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1";
#endif
    if (preload) {
        snprintf(ld, ld_len, "LD_PRELOAD=%s/lib/libxlac.so", XLAC_BINARY_DIR);
        envp[n++] = ld;
    }
    for (int i = 0; env && env[i] && n < 255; i++)
        envp[n++] = (char *)env[i];
    envp[n] = NULL;
}

xt_result xt_run_in(const char *cwd, bool preload, const char *const *env, const char *const *argv)
{
    char *envp[256], ld[600], out[600], err[600];
    child_env(preload, env, envp, ld, sizeof ld);
    snprintf(out, sizeof out, "%s/.stdout", xt_tmp);
    snprintf(err, sizeof err, "%s/.stderr", xt_tmp);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fo < 0 || fe < 0 || chdir(cwd) != 0)
            _exit(120);
        dup2(fo, 1);
        dup2(fe, 2);
        execve(argv[0], (char *const *)argv, envp);
        _exit(121);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    xt_result r = {.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
    r.out = xt_read_file(out, NULL);
    r.err = xt_read_file(err, NULL);
    unlink(out);
    unlink(err);
    return r;
}

void xt_build_for(const char *as, char *bin, char *lib, size_t len, char *env, size_t env_len)
{
    char cmd[2048], *o = NULL;
    snprintf(cmd, sizeof cmd, "%stest -x %s/bin/xlac-run -a -r %s/lib/libxlac.so", as, XLAC_BINARY_DIR,
             XLAC_BINARY_DIR);
    if (xt_sh("", cmd, &o) == 0) {
        free(o);
        snprintf(bin, len, "%s/bin", XLAC_BINARY_DIR);
        snprintf(lib, len, "%s/lib", XLAC_BINARY_DIR);
        snprintf(env, env_len, "%s", "");
        return;
    }
    free(o);
    snprintf(cmd, sizeof cmd,
             "mkdir -p stage/bin stage/lib && cp %s/bin/xlac-run stage/bin/ && cp %s/lib/*.so stage/lib/ && "
             "cp %s/tests/lsan.supp stage/ && chmod -R a+rX stage",
             XLAC_BINARY_DIR, XLAC_BINARY_DIR, XLAC_SOURCE_DIR);
    cr_assert_eq(xt_sh("", cmd, &o), 0, "staging the build for another user: %s", o);
    free(o);
    snprintf(bin, len, "%s/stage/bin", xt_tmp);
    snprintf(lib, len, "%s/stage/lib", xt_tmp);
    /* the sanitizers' suppressions too: LSAN_OPTIONS names the checkout's file, which that user
       cannot read (clang's runtime refuses to start without it) */
    snprintf(env, env_len, "LD_LIBRARY_PATH=%s/stage/lib LSAN_OPTIONS=suppressions=%s/stage/lsan.supp ", xt_tmp,
             xt_tmp);
}
