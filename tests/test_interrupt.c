/*
 * Ctrl-C, SIGTERM and SIGHUP stop xlac-run cleanly (docs/files-and-signals.md).
 * A fake compiler ($CC, a shell script) answers --version at once and
 * otherwise sleeps, recording its PID: xlac-run is interrupted in the
 * middle of a cold compile, with the disk cache's lock held. Afterwards no
 * compiler is left running or unreaped (it runs in its own process group,
 * which a terminal's Ctrl-C never reaches), no xlac-cc-* temp folder and no
 * .lock file remain, the trace and the summary are valid JSON marked
 * "interrupted", and the exit status is 128 + the signal's number. It was
 * 130 with an orphaned compiler, the folder and lock left, and a 0-byte
 * trace. The compiler's version probe obeys --compile_timeout_s (it had 30
 * s of its own).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/tmpdir.h"

#define XLAC_RUN XLAC_BINARY_DIR "/bin/xlac-run"
#define LIBXLAC XLAC_BINARY_DIR "/lib/libxlac.so"

static void setup(void)
{
    xt_tmp_make("/tmp/xlac-interrupt-XXXXXX");
    xt_write_file(xt_path("g.xg"), "xlac.graph v1\ninput x: f32[64]\nt = add(x, x)\nu = neg(t)\n"
                                   "y = mul(u, x)\noutput y\n");
    xt_write_file(xt_path("trace.json"), "{\"old\":true}\n");
    cr_assert_eq(mkdir(xt_path("tmp"), 0700), 0);
    cr_assert_eq(mkdir(xt_path("cache"), 0700), 0);
}

TestSuite(interrupt, .init = setup, .fini = xt_tmp_fini, .timeout = 120);

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A fake compiler at xt_tmp/fakecc: `--version` sleeps version_s, a compile records its PID and sleeps. */
static void fake_compiler(int version_s)
{
    char text[512];
    snprintf(text, sizeof text,
             "#!/bin/sh\nif [ \"$1\" = --version ]; then sleep %d; echo fakecc 1.0; exit 0; fi\n"
             "echo $$ >> '%s'\nexec sleep 60\n",
             version_s, xt_path("pids"));
    xt_write_file(xt_path("fakecc"), text);
    cr_assert_eq(chmod(xt_path("fakecc"), 0755), 0);
}

/* Starts xlac-run on g.xg with the plugin and the fake compiler; its PID. */
static pid_t start(const char *flags)
{
    static char env_tmp[300], env_cc[300], env_flags[600];
    snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", xt_path("tmp"));
    snprintf(env_cc, sizeof env_cc, "CC=%s", xt_path("fakecc"));
    snprintf(env_flags, sizeof env_flags, "XLAC_FLAGS=--cache_dir=%s %s", xt_path("cache"), flags);
    char *envp[] = {env_tmp, env_cc, env_flags, "XLAC_AUTO_JIT=2", "OMP_WAIT_POLICY=passive",
                    "LD_PRELOAD=" LIBXLAC, "PATH=/usr/bin:/bin", XT_ASAN_NO_LEAKS, NULL};
    char *argv[] = {XLAC_RUN, "g.xg", "--seed", "0", "--trace", "trace.json", NULL};
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        if (chdir(xt_tmp) != 0 || !freopen("out.txt", "w", stdout) || !freopen("err.txt", "w", stderr))
            _exit(120);
        execve(argv[0], argv, envp);
        _exit(121);
    }
    return pid;
}

/* Waits for pid at most s seconds; its wait status, or -1 (then it is killed). */
static int wait_for(pid_t pid, double s)
{
    int status;
    for (double t0 = now_s(); now_s() - t0 < s;) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return status;
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

/* The first PID the fake compiler recorded, waiting at most 30 s for it; 0 if none. */
static pid_t compiler_pid(void)
{
    for (double t0 = now_s(); now_s() - t0 < 30;) {
        char *text = xt_read_file(xt_path("pids"), NULL);
        long pid = text ? atol(text) : 0;
        free(text);
        if (pid > 0)
            return (pid_t)pid;
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    return 0;
}

static int entries(const char *dir, const char *prefix, const char *suffix)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name), sl = strlen(suffix);
        n += !strncmp(e->d_name, prefix, strlen(prefix)) && len >= sl && !strcmp(e->d_name + len - sl, suffix) &&
             strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    }
    if (d)
        closedir(d);
    return n;
}

static void interrupt_with(int sig)
{
    fake_compiler(0);
    pid_t pid = start("--async_compilation=false --summary=summary.json");
    pid_t cc = compiler_pid();
    cr_assert_gt(cc, 0, "the fake compiler never ran");
    cr_expect_eq(entries(xt_path("cache"), "", ".lock"), 1, "the build holds the cache's lock");
    cr_assert_eq(kill(pid, sig), 0);
    int status = wait_for(pid, 30);
    char *err = xt_read_file(xt_path("err.txt"), NULL);
    cr_assert_neq(status, -1, "xlac-run did not stop: %s", err);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 128 + sig, "status %#x: %s", status, err);
    nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
    cr_expect(kill(cc, 0) != 0 && errno == ESRCH, "the compiler %d is still there (running or unreaped)", (int)cc);
    if (kill(cc, 0) == 0)
        kill(cc, SIGKILL);
    cr_expect_eq(entries(xt_path("tmp"), "xlac-", ""), 0, "temp files left in TMPDIR");
    cr_expect_eq(entries(xt_path("cache"), "", ".lock"), 0, "a cache lock left");
    char cmd[600];
    snprintf(cmd, sizeof cmd,
             "python3 -c \"import json,sys; t=json.load(open('trace.json')); s=json.load(open('summary.json')); "
             "sys.exit(0 if t.get('interrupted') and s.get('interrupted') and t['traceEvents'] else 1)\"");
    char *out = NULL;
    cr_expect_eq(xt_sh("", cmd, &out), 0, "trace and summary, valid JSON marked interrupted: %s\n%s", out, err);
    free(out);
    free(err);
}

Test(interrupt, sigint_during_a_cold_compile_leaves_nothing_behind)
{
    interrupt_with(SIGINT);
}

Test(interrupt, sigterm_and_sighup_too)
{
    interrupt_with(SIGTERM);
    unlink(xt_path("pids"));
    interrupt_with(SIGHUP);
}

Test(interrupt, the_version_probe_obeys_the_compile_timeout)
{
    fake_compiler(30); /* --version takes 30 s, compiles 60 s: both past a 1 s timeout */
    double t0 = now_s();
    pid_t pid = start("--compile_timeout_s=1 --disk_cache=0");
    int status = wait_for(pid, 60);
    double took = now_s() - t0;
    char *err = xt_read_file(xt_path("err.txt"), NULL);
    cr_expect(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x: %s", status, err);
    cr_expect_lt(took, 15.0, "the probe took its own 30 s (%.1f s): %s", took, err);
    free(err);
}
