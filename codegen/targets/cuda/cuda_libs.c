/*
 * Opens the CUDA runtime and cuBLASLt for the GPU target (cuda_libs.h says
 * why they are not linked), each once, the first time a GPU program needs
 * it. A library is taken, in this order, as the process already has it (by
 * its soname, RTLD_NOLOAD: the one libxlac_cuda.so brought in, so the
 * executor and the compiled programs share one runtime), else from the
 * toolkit it was built against (its path), else by its soname on the
 * loader's path. Libraries are never closed.
 */
#define XG_CUDA_LIBS_IMPL
#include "cuda_libs.h"

#ifdef XG_HAVE_CUDA
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#define XG_CUDA_DEFINE(f) __typeof__(&f) xg_p_##f;
XG_CUDART_FUNCS(XG_CUDA_DEFINE)
XG_CUBLASLT_FUNCS(XG_CUDA_DEFINE)
#undef XG_CUDA_DEFINE

/* One library: where to find it, and once opened, whether its functions are here or why not. */
typedef struct lib {
    const char *soname, *path, *label;
    pthread_once_t once;
    bool ready;
    char why[400];
} lib;

static lib cudart = {XG_CUDART_SONAME,  XG_CUDART_PATH, "the CUDA runtime",
                     PTHREAD_ONCE_INIT, false,          ""};
static lib cublaslt = {
    XG_CUBLASLT_SONAME, XG_CUBLASLT_PATH, "cuBLASLt", PTHREAD_ONCE_INIT, false, ""};

/* The process's copy, else the toolkit's file, else the loader's; NULL (and l->why) when none
 * opens. */
static void *open_lib(lib *l)
{
    void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h)
        h = dlopen(l->path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(l->why, sizeof l->why, "%s (%s) could not be loaded: %s", l->label, l->soname,
                 e ? e : "?");
    }
    return h;
}

/* dlsym of name into *fn; false (and l->why) when the library has no such function. */
static bool take(lib *l, void *h, const char *name, void **fn)
{
    if ((*fn = dlsym(h, name)))
        return true;
    snprintf(l->why, sizeof l->why, "%s (%s) has no %s", l->label, l->soname, name);
    return false;
}

#define XG_CUDA_TAKE(f) &&take(l, h, #f, (void **)&xg_p_##f)

static void open_cudart(void)
{
    lib *l = &cudart;
    void *h = open_lib(l);
    l->ready = h XG_CUDART_FUNCS(XG_CUDA_TAKE);
}

static void open_cublaslt(void)
{
    lib *l = &cublaslt;
    void *h = open_lib(l);
    l->ready = h XG_CUBLASLT_FUNCS(XG_CUDA_TAKE);
}

xe_code xg_cudart_ready(xe_status *st)
{
    pthread_once(&cudart.once, open_cudart);
    return cudart.ready ? XE_OK : xe_fail(st, XE_ERR_DEVICE, "%s", cudart.why);
}

xe_code xg_cublaslt_ready(xe_status *st)
{
    pthread_once(&cublaslt.once, open_cublaslt);
    return cublaslt.ready ? XE_OK : xe_fail(st, XE_ERR_UNSUPPORTED, "%s", cublaslt.why);
}
#else
typedef int xg_cuda_libs_unused; /* ISO C: a translation unit is never empty */
#endif
