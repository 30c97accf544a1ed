/*
 * Clean stops on SIGINT, SIGTERM and SIGHUP (executor/runtime/interrupt.c). A host
 * program installs the handling once (xlac-run does); a plugin registers
 * what it must undo. When a signal comes, the registered functions run on
 * an ordinary thread (not in the signal handler), newest first, then the
 * trace so far is written marked interrupted and the process ends with
 * exit status 128 + the signal's number.
 */
#ifndef XLAC_INTERRUPT_H
#define XLAC_INTERRUPT_H

#include "xlac/status.h"

typedef void (*xe_interrupt_fn)(int signo, void *user);

/* Registers fn (at most 8 in a process); it must not wait for the thread that was interrupted. */
void xe_on_interrupt(xe_interrupt_fn fn, void *user);
/* Installs the handlers (a signal that was ignored stays ignored) and the watcher thread. */
xe_code xe_interrupt_install(xe_status *st);
/* The signal whose handling has begun, 0: none. */
int xe_interrupt_begun(void);
/* Once a signal's handling has begun, never returns (the watcher ends the process); else returns at
 * once. */
void xe_interrupt_hold(void);

#endif
