/*
 * Private to codegen/: the caller's floating-point mode around code that a
 * compiler wrote. A module built with -ffast-math by a $CC wrapper (or any
 * module that sets FTZ/DAZ or the rounding mode at load or in a kernel)
 * must not change what ops outside its cluster compute, so dlopen and every
 * C kernel launch run between xg_fpenv_save and xg_fpenv_restore.
 */
#ifndef XG_FPENV_H
#define XG_FPENV_H

#include <fenv.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

typedef struct xg_fpenv {
    fenv_t env; /* x87 control word and, on x86, MXCSR (FTZ, DAZ, rounding, exception masks) */
#if defined(__x86_64__) || defined(__i386__)
    unsigned mxcsr; /* restored bit for bit, in case fesetenv keeps FTZ/DAZ */
#endif
} xg_fpenv;

static inline void xg_fpenv_save(xg_fpenv *e)
{
    fegetenv(&e->env);
#if defined(__x86_64__) || defined(__i386__)
    e->mxcsr = _mm_getcsr();
#endif
}

static inline void xg_fpenv_restore(const xg_fpenv *e)
{
    fesetenv(&e->env);
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr(e->mxcsr);
#endif
}

#endif
