/*
 * Stopping cleanly on SIGINT, SIGTERM and SIGHUP (docs/files-and-signals.md).
 * A host that wants it (xlac-run does; a library never installs handlers in
 * someone else's process by itself) calls xe_interrupt_install: the
 * handler only writes the signal's number into a pipe (write(2) is
 * async-signal-safe) and a watcher thread, an ordinary thread blocked on
 * the pipe's other end, does the work: it runs what was registered with
 * xe_on_interrupt, newest first (the plugin kills and reaps its compilers,
 * removes its temp folders and cache locks, writes its summary marked
 * interrupted), writes the trace so far marked interrupted, and ends the
 * process with 128 + the signal's number, the shell's convention. A
 * second signal while that runs is ignored: the first one's cleanup goes on.
 * The interrupted threads go on meanwhile (a compile whose compiler was
 * killed fails and its cluster runs per op): a trace written from then on
 * is marked interrupted, and the host's way out (xlac-run's return from
 * main, the plugin's destructor) waits in xe_interrupt_hold for the
 * watcher's exit instead of racing it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "xlac/interrupt.h"
#include "xlac/trace.h"

#define MAX_HOOKS 8

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
typedef struct hook {
    xe_interrupt_fn fn;
    void *user;
} hook;
static hook hooks[MAX_HOOKS];
static int n_hooks;
static int pipe_fd[2] = {-1, -1};
static atomic_int begun; /* the signal being handled, 0: none */

void xe_on_interrupt(xe_interrupt_fn fn, void *user)
{
    pthread_mutex_lock(&lock);
    if (n_hooks < MAX_HOOKS)
        hooks[n_hooks++] = (hook){fn, user};
    pthread_mutex_unlock(&lock);
}

/* The handler: the signal's number into the pipe, nothing else. */
static void on_signal(int signo)
{
    int saved = errno;
    unsigned char b = (unsigned char)signo;
    ssize_t w = write(pipe_fd[1], &b, 1);
    (void)w; /* a full pipe: a signal is already waiting to be handled */
    errno = saved;
}

static void *watch(void *arg)
{
    (void)arg;
    unsigned char b;
    ssize_t r;
    while ((r = read(pipe_fd[0], &b, 1)) < 0 && errno == EINTR)
        ;
    if (r != 1)
        return NULL;
    int signo = b;
    atomic_store(&begun, signo);
    xe_trace_mark_interrupted(signo); /* a trace written from now on says so, whoever writes it */
    pthread_mutex_lock(&lock);
    for (int i = n_hooks - 1; i >= 0; i--)
        hooks[i].fn(signo, hooks[i].user);
    pthread_mutex_unlock(&lock);
    xe_status st;
    xe_status_clear(&st);
    if (xe_trace_interrupted(signo, &st) != XE_OK)
        fprintf(stderr, "xlac: %s\n", st.msg);
    fprintf(stderr, "xlac: interrupted by signal %d (%s)\n", signo, strsignal(signo));
    fflush(NULL);
    _exit(128 + signo);
}

int xe_interrupt_begun(void)
{
    return atomic_load(&begun);
}

void xe_interrupt_hold(void)
{
    while (atomic_load(&begun))
        pause(); /* the watcher ends the process */
}

xe_code xe_interrupt_install(xe_status *st)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    if (pipe_fd[0] >= 0)
        return XE_OK;
    if (pipe2(pipe_fd, O_CLOEXEC) != 0)
        return xe_fail(st, XE_ERR_RUNTIME, "cannot make the interrupt pipe: %s", strerror(errno));
    fcntl(pipe_fd[1], F_SETFL, O_NONBLOCK);
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &at, watch, NULL);
    pthread_attr_destroy(&at);
    if (rc != 0)
        return xe_fail(st, XE_ERR_RUNTIME, "cannot start the interrupt watcher: %s", strerror(rc));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction old;
        /* a signal the parent set to be ignored (nohup, a background job's SIGINT) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(sigs[i], &sa, NULL);
    }
    return XE_OK;
}
