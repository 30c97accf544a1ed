/*
 * The CPU compiler: generated C11 is compiled by the system compiler ($CC,
 * split into words as make does, or cc) into a shared object, in a private temporary folder, with
 * the compiler run directly (posix_spawn, no shell) and its output captured for the error message.
 * The result is the shared object's bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compile.h"
#include "xlac/io.h"

extern char **environ;

xe_code xg_read_file(const char *path, void **data, size_t *len, xe_status *st)
{
    char *buf = NULL;
    xe_code c = xe_read_file(path, &buf, len, st);
    *data = buf;
    return c;
}

xe_code xg_write_fd(int fd, const char *path, const void *data, size_t len, xe_status *st)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) /* a signal before anything was written: again */
            continue;
        if (w <= 0) {
            close(fd);
            return xe_fail(st, XE_ERR_IO, "%s: write failed: %m", path);
        }
        p += w;
        len -= (size_t)w;
    }
    return close(fd) == 0 ? XE_OK : xe_fail(st, XE_ERR_IO, "%s: close failed: %m", path);
}

xe_code xg_write_file(const char *path, const void *data, size_t len, xe_status *st)
{
    int fd = xe_create(path, 0600, st); /* never through a link planted at path */
    return fd < 0 ? st->code : xg_write_fd(fd, path, data, len, st);
}

/* A new file in a private folder: never one that exists, never through a link. */
static xe_code create_new(const char *path, const void *data, size_t len, xe_status *st)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return xe_fail(st, XE_ERR_IO, "%s: cannot create: %m", path);
    return xg_write_fd(fd, path, data, len, st);
}

/*
 * The environment for the compiler: ours without LD_PRELOAD and the XLAC_
 * variables, so the plugin does not load itself into cc, as and ld, and
 * with TMPDIR set to the private folder of the compile (tmpdir_entry,
 * "TMPDIR=DIR"), so that the driver's own temporaries (ccXXXXXX.s) are
 * removed with that folder even when the compile is killed.
 */
static char **tool_environment(const char *tmpdir_entry)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0 && strncmp(environ[i], "XLAC_", 5) != 0 &&
            strncmp(environ[i], "TMPDIR=", 7) != 0)
            env[k++] = environ[i];
    env[k] = (char *)tmpdir_entry;
    return env;
}

/* Kills pid's process group (cc1, as, ld) and reaps pid; why says so. */
static int kill_tool(pid_t pid, int timeout_s, char *why, size_t why_len)
{
    int status;
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    snprintf(why, why_len, "killed after the compile timeout of %d s (--compile_timeout_s)",
             timeout_s);
    return -1;
}

/*
 * Waits until pid exits or ms milliseconds pass, without polling where the
 * kernel has pidfd_open (Linux 5.3): poll() on the process's descriptor
 * returns the moment it exits. Elsewhere, naps of at most 1 ms, so a
 * compile that ends is noticed within a millisecond (longer naps added up
 * to 30 ms to every compile).
 */
static void wait_exit_or(pid_t pid, long ms)
{
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        while (poll(&pfd, 1, ms > INT_MAX ? INT_MAX : (int)ms) < 0 && errno == EINTR)
            ;
        close(fd);
        return;
    }
#else
    (void)pid, (void)ms;
#endif
    struct timespec nap = {0, 1000000};
    nanosleep(&nap, NULL);
}

/*
 * Waits for pid (its own process group) at most timeout_s seconds (0: no
 * limit); past it the whole group (cc1, as, ld) is killed.
 * Returns waitpid's status, or -1 with why set.
 */
static int wait_tool(pid_t pid, int timeout_s, char *why, size_t why_len)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int status;;) {
        pid_t r = waitpid(pid, &status, timeout_s > 0 ? WNOHANG : 0);
        if (r == pid)
            return status;
        if (r < 0 && errno != EINTR) {
            snprintf(why, why_len, "could not wait for it: %s", strerror(errno));
            return -1;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left = timeout_s * 1000L -
                    ((now.tv_sec - t0.tv_sec) * 1000L + (now.tv_nsec - t0.tv_nsec) / 1000000);
        if (timeout_s > 0 && left <= 0)
            return kill_tool(pid, timeout_s, why, why_len);
        if (r == 0)
            wait_exit_or(pid, left);
    }
}

/*
 * Runs argv[0] (searched in PATH) with stdout and stderr into log_path,
 * killed after timeout_s seconds (0: no limit).
 * Returns 0 when it exits 0; otherwise -1 with why set: "exit status 1",
 * "killed by signal 11", or "could not run: No such file or directory".
 */
static int run_tool(char *const *argv, const char *log_path, int timeout_s, char *why,
                    size_t why_len)
{
    char tmpdir[4200];
    const char *slash = strrchr(log_path, '/');
    snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%.*s", slash ? (int)(slash - log_path) : 1,
             slash ? log_path : ".");
    char **env = tool_environment(tmpdir);
    if (!env) {
        snprintf(why, why_len, "could not run: out of memory");
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
                                     0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawnattr_t at; /* its own process group, so that a timeout kills all of it */
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&at, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    free(env);
    if (rc != 0) {
        snprintf(why, why_len, "could not run: %s", strerror(rc));
        return -1;
    }
    if (!xg_live_child(pid)) { /* the process is being interrupted */
        kill(-pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        snprintf(why, why_len, "interrupted");
        return -1;
    }
    int status = wait_tool(pid, timeout_s, why, why_len);
    xg_live_child_done(pid);
    if (status == -1)
        return -1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status))
        snprintf(why, why_len, "exit status %d", WEXITSTATUS(status));
    else
        snprintf(why, why_len, "killed by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return -1;
}

/*
 * $CC split into words, as make does ("ccache gcc", "gcc -g"): no shell,
 * no quotes; a path to an executable with spaces in it is one word.
 * Returns the number of words (at most max - 1, then NULL).
 */
static int cc_words(const char *cc, char *buf, size_t len, char **words, int max)
{
    snprintf(buf, len, "%s", cc);
    int n = 0;
    if (strchr(buf, '/') && access(buf, X_OK) == 0) {
        words[n++] = buf;
        words[n] = NULL;
        return n;
    }
    for (char *save = NULL, *w = strtok_r(buf, " \t", &save); w && n < max - 1;
         w = strtok_r(NULL, " \t", &save))
        words[n++] = w;
    if (n == 0) /* an empty $CC: cc */
        words[n++] = "cc";
    words[n] = NULL;
    return n;
}

/* The first non-empty line of a log, for one-line warnings. */
void xg_first_line(const char *log, char *buf, size_t len)
{
    const char *p = log ? log : "";
    while (*p == '\n')
        p++;
    size_t n = strcspn(p, "\n");
    snprintf(buf, len, "%.*s", (int)(n < len - 1 ? n : len - 1), p);
}

void xg_error_line(const char *log, char *buf, size_t len)
{
    const char *p = log ? strstr(log, "error") : NULL;
    while (p && p > log && p[-1] != '\n')
        p--;
    xg_first_line(p ? p : log, buf, len);
}

/* A private folder (0700, mkdtemp) for one compiler run, registered for an interrupt's cleanup. */
static xe_code private_folder(const char *tmp, char *dir, size_t len, xe_status *st)
{
    if (snprintf(dir, len, "%s/xlac-cc-XXXXXX", tmp) >= (int)len)
        return xe_fail(st, XE_ERR_COMPILE, "%s: temp folder path too long", tmp);
    if (!mkdtemp(dir))
        return xe_fail(st, XE_ERR_COMPILE, "cannot create a private folder in %s: %m", tmp);
    xg_live_folder(dir);
    return XE_OK;
}

static void private_folder_done(const char *dir)
{
    rmdir(dir);
    xg_live_folder_done(dir);
}

xe_code xg_cc_compile(const char *cc, const char *tmp, const char *source, bool fast_math,
                      int timeout_s, void **so, size_t *so_len, char **log, xe_status *st)
{
    char dir[512], src[600], out[600], logp[600];
    if (private_folder(tmp, dir, sizeof dir, st) != XE_OK)
        return st->code;
    snprintf(src, sizeof src, "%s/cluster.c", dir);
    snprintf(out, sizeof out, "%s/cluster.so", dir);
    snprintf(logp, sizeof logp, "%s/log.txt", dir);
    xe_code c = create_new(src, source, strlen(source), st);
    if (c == XE_OK) {
        /* -nodefaultlibs (with -lgcc after the source): the shared object is not linked against
           libc, whose linker script cost a third of the link; its few libc and libm calls (malloc,
           erff) bind at dlopen to the process's own, as its libm calls always did. -fopenmp still
           links libgomp. */
        static const char *const flags[] = {
            "-std=c11", "-O3", "-march=native", "-fPIC", "-shared", "-fopenmp", "-w",
            /* after -fno-fast-math, which would turn errno back on: sqrt vectorises */
            "-fno-math-errno", "-ffp-contract=fast", "-nodefaultlibs", "-o"};
        /* --fast_math is reassociation only: never -ffast-math, whose link of a shared object pulls
           in crtfastmath.o (FTZ/DAZ set for the whole process at dlopen) and assumes no NaN or
           infinity */
        static const char *const fast[] = {"-fassociative-math", "-fno-signed-zeros",
                                           "-fno-trapping-math"};
        char words[1024], why[300], *argv[48];
        int n = cc_words(cc, words, sizeof words, argv, 24);
        argv[n++] = "-fno-fast-math";
        for (size_t k = 0; fast_math && k < sizeof fast / sizeof fast[0]; k++)
            argv[n++] = (char *)fast[k];
        for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
            argv[n++] = (char *)flags[k];
        argv[n++] = out;
        argv[n++] = src;
        argv[n++] = "-lgcc";
        argv[n] = NULL;
        int rc = run_tool(argv, logp, timeout_s, why, sizeof why);
        size_t ll = 0;
        void *logtext = NULL;
        *log = xg_read_file(logp, &logtext, &ll, st) == XE_OK ? logtext : NULL;
        xe_status_clear(st);
        if (rc != 0) {
            char first[300];
            xg_error_line(*log, first, sizeof first);
            c = xe_fail(st, XE_ERR_COMPILE, "%s failed (%s)%s%s", cc, why, *first ? ": " : "",
                        first);
        } else {
            c = xg_read_file(out, so, so_len, st);
        }
    }
    unlink(src);
    unlink(out);
    unlink(logp);
    private_folder_done(dir);
    return c;
}

/*
 * Runs `$CC -fno-fast-math [reassociation] FLAGS args...` (C11, -O3,
 * OpenMP, position-independent) with its log captured; a failure quotes
 * the log's first error line. For the ahead-of-time build, whose sources
 * and output are the user's files.
 */
xe_code xg_cc_run(const char *cc, const char *tmp_dir, const char *const *args, bool fast_math,
                  int timeout_s, char **log, xe_status *st)
{
    static const char *const flags[] = {"-std=c11", "-O3", "-march=native",   "-fPIC",
                                        "-fopenmp", "-w",  "-fno-math-errno", "-ffp-contract=fast"};
    static const char *const fast[] = {"-fassociative-math", "-fno-signed-zeros",
                                       "-fno-trapping-math"};
    char dir[512], logp[600], words[1024], why[300], *argv[64];
    if (private_folder(tmp_dir, dir, sizeof dir, st) != XE_OK)
        return st->code;
    snprintf(logp, sizeof logp, "%s/log.txt", dir);
    int n = cc_words(cc, words, sizeof words, argv, 24);
    argv[n++] = "-fno-fast-math";
    for (size_t k = 0; fast_math && k < sizeof fast / sizeof fast[0]; k++)
        argv[n++] = (char *)fast[k];
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
        argv[n++] = (char *)flags[k];
    for (int k = 0; args[k] && n < 63; k++)
        argv[n++] = (char *)args[k];
    argv[n] = NULL;
    int rc = run_tool(argv, logp, timeout_s, why, sizeof why);
    void *text = NULL;
    size_t ll = 0;
    *log = xg_read_file(logp, &text, &ll, st) == XE_OK ? text : NULL;
    xe_status_clear(st);
    unlink(logp);
    private_folder_done(dir);
    if (rc == 0)
        return XE_OK;
    char first[300];
    xg_error_line(*log, first, sizeof first);
    return xe_fail(st, XE_ERR_COMPILE, "%s failed (%s)%s%s", cc, why, *first ? ": " : "", first);
}

static char cc_version[256];
static bool cc_known; /* the compiler answered: cc_version is its first line */
static const char *cc_probed, *cc_probe_tmp;
static int cc_probe_timeout_s;
static pthread_once_t cc_once = PTHREAD_ONCE_INIT;

/*
 * Runs `cc --version` once, in a private folder like every compile (never
 * a guessable name in $TMPDIR that a planted link could redirect), killed
 * past --compile_timeout_s like every compile; its first line goes into
 * every cache key.
 */
static void probe_cc(void)
{
    char dir[512], logp[600], words[1024], why[300], *argv[28];
    xe_status st;
    snprintf(cc_version, sizeof cc_version, "%s (version unknown)", cc_probed);
    if (private_folder(cc_probe_tmp, dir, sizeof dir, &st) != XE_OK)
        return;
    snprintf(logp, sizeof logp, "%s/version.txt", dir);
    int n = cc_words(cc_probed, words, sizeof words, argv, 24);
    argv[n++] = "--version";
    argv[n] = NULL;
    void *text = NULL;
    size_t len;
    if (run_tool(argv, logp, cc_probe_timeout_s, why, sizeof why) == 0 &&
        xg_read_file(logp, &text, &len, &st) == XE_OK) {
        xg_first_line(text, cc_version, sizeof cc_version);
        cc_known = cc_version[0] != '\0';
    }
    free(text);
    unlink(logp);
    private_folder_done(dir);
}

const char *xg_cc_version(const char *cc, const char *tmp_dir, int timeout_s, bool *known)
{
    cc_probed = cc;
    cc_probe_tmp = tmp_dir;
    cc_probe_timeout_s = timeout_s;
    pthread_once(&cc_once, probe_cc);
    if (known)
        *known = cc_known;
    return cc_version;
}

/*
 * The file posix_spawnp runs for word: word itself when it has a '/', else
 * the first executable regular file word in a folder of $PATH (the
 * compiler's environment is ours: tool_environment), as execvp searches.
 */
static bool find_program(const char *word, char *path, size_t len)
{
    struct stat sb;
    if (strchr(word, '/')) {
        snprintf(path, len, "%s", word);
        return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && access(path, X_OK) == 0;
    }
    const char *dirs = getenv("PATH"); /* posix_spawnp's own search path, read where it reads it */
    if (!dirs)
        dirs = "/bin:/usr/bin";
    for (const char *d = dirs;; d += strcspn(d, ":") + 1) {
        int dl = (int)strcspn(d, ":");
        snprintf(path, len, "%.*s%s%s", dl, d, dl ? "/" : "./", word);
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && access(path, X_OK) == 0)
            return true;
        if (!d[dl])
            return false;
    }
}

bool xg_stamp_file(const char *path, xe_text *out)
{
    char real[PATH_MAX];
    struct stat sb;
    if (!realpath(path, real) || stat(real, &sb) != 0)
        return false;
    xe_text_printf(out, " %s %llu:%llu:%lld:%lld.%09ld:%lld.%09ld", real,
                   (unsigned long long)sb.st_dev, (unsigned long long)sb.st_ino,
                   (long long)sb.st_size, (long long)sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec,
                   (long long)sb.st_ctim.tv_sec, sb.st_ctim.tv_nsec);
    return true;
}

bool xg_cc_stamp(const char *cc, xe_text *out)
{
    char words[1024], *argv[28], path[PATH_MAX];
    int n = cc_words(cc ? cc : "cc", words, sizeof words, argv, 24);
    xe_text_printf(out, "cc=%s;", cc ? cc : "cc");
    for (int k = 0; k < n; k++) {
        if (argv[k][0] == '-')
            continue; /* an option */
        if (find_program(argv[k], path, sizeof path)) {
            if (!xg_stamp_file(path, out))
                return false;
        } else if (k == 0) {
            return false; /* the compiler itself is not found: it is asked (and fails) every time */
        }
    }
    return !out->oom;
}
