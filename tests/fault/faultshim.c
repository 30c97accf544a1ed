/*
 * A fault injector for tests, preloaded (LD_PRELOAD) into xlac-run; it
 * does nothing in any other program (the compiler that xlac-run starts
 * inherits LD_PRELOAD and must run normally). Set in the environment:
 *
 *   XLAC_FAULT_MALLOC_AT=N   the Nth allocation (malloc, calloc, realloc,
 *                            posix_memalign, aligned_alloc, memalign; from
 *                            1, counted once the shim is loaded) returns
 *                            NULL with ENOMEM; all others succeed.
 *   XLAC_FAULT_COUNT_TO=FILE at exit, the number of allocations is written
 *                            there (to choose the N to walk over).
 *   XLAC_FAULT_EINTR=1       every other call of read, write, pread and
 *                            waitpid fails with EINTR before doing anything
 *                            (the caller must retry).
 *   XLAC_FAULT_ENOSPC_DIR=D  with XLAC_FAULT_ENOSPC_AFTER=K: the disk is
 *                            full after K bytes of each file under folder
 *                            D (fwrite writes up to there, then fails with
 *                            ENOSPC), as for the disk cache's files.
 *   XLAC_FAULT_SIGNALS=USEC  a SIGALRM every USEC microseconds, caught by
 *                            an empty handler without SA_RESTART: a signal
 *                            storm that interrupts every blocking call.
 *
 * Allocations go to glibc's own __libc_* functions, so that no dlsym
 * (which allocates) is needed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern size_t _IO_fwrite(const void *p, size_t size, size_t n, FILE *f);

static bool armed;           /* in xlac-run, after the constructor */
static long fail_at;         /* XLAC_FAULT_MALLOC_AT (0: none) */
static bool eintr;           /* XLAC_FAULT_EINTR */
static atomic_long count;    /* allocations so far */
static atomic_long io_calls; /* read/write/pread/waitpid calls so far */
static char count_to[4096];  /* XLAC_FAULT_COUNT_TO */
static char full_dir[4096];  /* XLAC_FAULT_ENOSPC_DIR ("": off) */
static long full_after;      /* XLAC_FAULT_ENOSPC_AFTER */
static long written[1024];   /* bytes fwritten per descriptor under full_dir */

/* Whether this allocation is the one to fail. */
static bool fail_now(void)
{
    if (!armed)
        return false;
    long n = atomic_fetch_add(&count, 1) + 1;
    if (n != fail_at)
        return false;
    errno = ENOMEM;
    return true;
}

void *malloc(size_t size)
{
    return fail_now() ? NULL : __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    return fail_now() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
    return fail_now() ? NULL : __libc_realloc(p, size);
}

void *memalign(size_t align, size_t size)
{
    return fail_now() ? NULL : __libc_memalign(align, size);
}

void *aligned_alloc(size_t align, size_t size)
{
    return fail_now() ? NULL : __libc_memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
    if (fail_now())
        return ENOMEM;
    void *p = __libc_memalign(align, size);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

/* Every other I/O call fails with EINTR when XLAC_FAULT_EINTR is set. */
static bool interrupt_now(void)
{
    if (!armed || !eintr || atomic_fetch_add(&io_calls, 1) % 2)
        return false;
    errno = EINTR;
    return true;
}

ssize_t read(int fd, void *buf, size_t n)
{
    return interrupt_now() ? -1 : syscall(SYS_read, fd, buf, n);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    return interrupt_now() ? -1 : syscall(SYS_write, fd, buf, n);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    return interrupt_now() ? -1 : syscall(SYS_pread64, fd, buf, n, off);
}

pid_t waitpid(pid_t pid, int *status, int options)
{
    return interrupt_now() ? -1 : (pid_t)syscall(SYS_wait4, pid, status, options, NULL);
}

/* Whether descriptor fd is a file under full_dir. */
static bool under_full_dir(int fd)
{
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0)
        return false;
    path[n] = '\0';
    size_t len = strlen(full_dir);
    return strncmp(path, full_dir, len) == 0 && path[len] == '/';
}

size_t fwrite(const void *p, size_t size, size_t n, FILE *f)
{
    int fd = armed && full_dir[0] && size ? fileno(f) : -1;
    if (fd < 0 || fd >= 1024 || !under_full_dir(fd))
        return _IO_fwrite(p, size, n, f);
    long room = full_after - written[fd];
    size_t fit = room <= 0 ? 0 : (size_t)room / size < n ? (size_t)room / size : n;
    size_t done = fit ? _IO_fwrite(p, size, fit, f) : 0;
    written[fd] += (long)(done * size);
    if (done < n)
        errno = ENOSPC;
    return done;
}

static void on_alarm(int sig)
{
    (void)sig;
}

/* The signal storm of XLAC_FAULT_SIGNALS. */
static void start_storm(long usec)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: blocking calls return EINTR */
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, usec}, {0, usec}};
    setitimer(ITIMER_REAL, &it, NULL);
}

static void write_count(void)
{
    armed = false;
    FILE *f = fopen(count_to, "w");
    if (f) {
        fprintf(f, "%ld\n", atomic_load(&count));
        fclose(f);
    }
}

/* Whether this process is xlac-run (the compiler it starts is left alone). */
static bool in_xlac_run(void)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return false;
    exe[n] = '\0';
    const char *base = strrchr(exe, '/');
    return strcmp(base ? base + 1 : exe, "xlac-run") == 0;
}

__attribute__((constructor(101))) static void faultshim_init(void)
{
    if (!in_xlac_run())
        return;
    const char *at = getenv("XLAC_FAULT_MALLOC_AT"), *to = getenv("XLAC_FAULT_COUNT_TO");
    const char *e = getenv("XLAC_FAULT_EINTR"), *sig = getenv("XLAC_FAULT_SIGNALS");
    fail_at = at ? atol(at) : 0;
    eintr = e && strcmp(e, "1") == 0;
    if (to && strlen(to) < sizeof count_to) {
        strcpy(count_to, to);
        atexit(write_count);
    }
    if (sig && atol(sig) > 0)
        start_storm(atol(sig));
    const char *full = getenv("XLAC_FAULT_ENOSPC_DIR"), *after = getenv("XLAC_FAULT_ENOSPC_AFTER");
    if (full && strlen(full) < sizeof full_dir) {
        strcpy(full_dir, full);
        full_after = after ? atol(after) : 0;
    }
    armed = true;
}
