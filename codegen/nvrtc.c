/*
 * The GPU compiler: NVRTC compiles generated CUDA C++ to a cubin for the
 * device's architecture (sm_XY), or to PTX (compute_XY) when this NVRTC
 * does not list the architecture, so the driver can JIT it. No headers are
 * included (the generated source is self-contained) and fast math is off
 * unless asked. Without the CUDA toolkit this file reports that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"

#ifdef XG_HAVE_CUDA
#include <nvrtc.h>

int xg_nvrtc_arch_for(int arch)
{
    int n = 0, best = 0;
    if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0)
        return 0;
    int *archs = malloc((size_t)n * sizeof *archs);
    if (archs && nvrtcGetSupportedArchs(archs) == NVRTC_SUCCESS)
        for (int i = 0; i < n; i++)
            if (archs[i] <= arch && archs[i] > best)
                best = archs[i];
    free(archs);
    return best;
}

static char *program_log(nvrtcProgram prog)
{
    size_t n = 0;
    if (nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n == 0)
        return NULL;
    char *log = malloc(n + 1);
    if (log && nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) {
        free(log);
        return NULL;
    }
    if (log)
        log[n] = '\0';
    return log;
}

/* -minimal (NVRTC 12.4 on) leaves out what generated code never uses (textures, runtime
   types, device-side launches): about 10 % less compile time per program. */
static bool has_minimal(void)
{
    int major = 0, minor = 0;
    return nvrtcVersion(&major, &minor) == NVRTC_SUCCESS && (major > 12 || (major == 12 && minor >= 4));
}

/* Compiles for "-arch=<target>" (verbose: ptxas's resource report in the log); fills code and log. */
static nvrtcResult compile_opts(const char *source, const char *target, bool fast_math, bool verbose, bool ptx,
                                void **code, size_t *len, char **log)
{
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, source, "xlac_cluster.cu", 0, NULL, NULL);
    if (r != NVRTC_SUCCESS)
        return r;
    char arch[64];
    snprintf(arch, sizeof arch, "-arch=%s", target);
    /* index variables an index map computes but a load does not use are fine: no warnings 177, 550 for them */
    const char *opts[6] = {"--std=c++17", arch, "--diag-suppress=177,550"};
    int n = 3;
    if (has_minimal())
        opts[n++] = "-minimal";
    if (fast_math)
        opts[n++] = "--use_fast_math";
    if (verbose)
        opts[n++] = "--ptxas-options=-v";
    r = nvrtcCompileProgram(prog, n, opts);
    if (log)
        *log = program_log(prog);
    if (r == NVRTC_SUCCESS)
        r = ptx ? nvrtcGetPTXSize(prog, len) : nvrtcGetCUBINSize(prog, len);
    if (r == NVRTC_SUCCESS) {
        *code = malloc(*len + 1);
        if (!*code)
            r = NVRTC_ERROR_OUT_OF_MEMORY;
        else
            r = ptx ? nvrtcGetPTX(prog, *code) : nvrtcGetCUBIN(prog, *code);
    }
    nvrtcDestroyProgram(&prog);
    return r;
}

static nvrtcResult compile(const char *source, const char *target, bool fast_math, bool ptx, void **code,
                           size_t *len, char **log)
{
    return compile_opts(source, target, fast_math, false, ptx, code, len, log);
}

xe_code xg_nvrtc_compile(const char *source, int arch, bool fast_math, void **code, size_t *len, bool *is_ptx,
                         char **log, xe_status *st)
{
    char target[32];
    int known = xg_nvrtc_arch_for(arch);
    *is_ptx = known != arch; /* PTX for the newest known arch: the driver JITs it for this device */
    if (known == 0) {
        *code = NULL;
        if (log)
            *log = NULL;
        return xe_fail(st, XE_ERR_COMPILE, "NVRTC (%s) knows no architecture up to sm_%d", xg_nvrtc_version(), arch);
    }
    snprintf(target, sizeof target, "%s_%d", *is_ptx ? "compute" : "sm", known);
    *code = NULL;
    nvrtcResult r = compile(source, target, fast_math, *is_ptx, code, len, log);
    if (r == NVRTC_SUCCESS)
        return XE_OK;
    free(*code);
    *code = NULL;
    char first[300];
    xg_error_line(log ? *log : NULL, first, sizeof first);
    return xe_fail(st, XE_ERR_COMPILE, "NVRTC (%s): %s: %s", target, nvrtcGetErrorString(r),
                   *first ? first : "no log");
}

char *xg_nvrtc_ptx(const char *source, int arch, bool fast_math)
{
    char target[32];
    snprintf(target, sizeof target, "compute_%d", arch);
    void *code = NULL;
    size_t len = 0;
    if (compile(source, target, fast_math, true, &code, &len, NULL) != NVRTC_SUCCESS) {
        free(code);
        return NULL;
    }
    ((char *)code)[len] = '\0';
    return code;
}

char *xg_nvrtc_resource_report(const char *source, int arch, bool fast_math)
{
    char target[32];
    snprintf(target, sizeof target, "sm_%d", arch);
    void *code = NULL;
    size_t len = 0;
    char *log = NULL;
    if (compile_opts(source, target, fast_math, true, false, &code, &len, &log) != NVRTC_SUCCESS) {
        free(log);
        log = NULL;
    }
    free(code);
    return log;
}

const char *xg_nvrtc_version(void)
{
    static char v[32];
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    snprintf(v, sizeof v, "nvrtc %d.%d", major, minor);
    return v;
}
#else
int xg_nvrtc_arch_for(int arch)
{
    (void)arch;
    return 0;
}

xe_code xg_nvrtc_compile(const char *source, int arch, bool fast_math, void **code, size_t *len, bool *is_ptx,
                         char **log, xe_status *st)
{
    (void)source, (void)arch, (void)fast_math, (void)len, (void)is_ptx;
    *code = NULL;
    *log = NULL;
    return xe_fail(st, XE_ERR_COMPILE, "xlac was built without CUDA: no NVRTC");
}

char *xg_nvrtc_ptx(const char *source, int arch, bool fast_math)
{
    (void)source, (void)arch, (void)fast_math;
    return NULL;
}

char *xg_nvrtc_resource_report(const char *source, int arch, bool fast_math)
{
    (void)source, (void)arch, (void)fast_math;
    return NULL;
}

const char *xg_nvrtc_version(void)
{
    return "no nvrtc";
}
#endif
