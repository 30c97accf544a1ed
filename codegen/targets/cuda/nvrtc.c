/*
 * The GPU compiler: NVRTC compiles generated CUDA C++ to a cubin for the
 * device's architecture (sm_XY), or to PTX (compute_XY) when this NVRTC
 * does not list the architecture, so the driver can JIT it. No headers are
 * included (the generated source is self-contained) and fast math is off
 * unless asked. Without the CUDA toolkit this file reports that.
 *
 * A cubin of several kernels is compiled in parts, one NVRTC program per
 * part on its own thread (as many parts as idle CPUs, at most 8): every program
 * pays NVRTC's fixed cost (about 17 ms here), but its front end, NVVM and
 * ptxas run on one thread each, so a large cluster's wait shrinks with the
 * cores. The parts' cubins travel as one pack (cubins.c).
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile.h"

#ifdef XG_HAVE_CUDA
#include <dlfcn.h>
#include <nvrtc.h>

/*
 * NVRTC is loaded on first use (dlopen), not linked: the library is
 * 100 MB, and loading it cost every process that loaded the plugin about
 * 30 ms of CPU (and 90 ms of wall clock on a loaded machine), CPU-only
 * runs and runs served from the disk cache included.
 */
#define NVRTC_FUNCS(X)                                                                             \
    X(nvrtcCompileProgram)                                                                         \
    X(nvrtcCreateProgram)                                                                          \
    X(nvrtcDestroyProgram)                                                                         \
    X(nvrtcGetCUBIN)                                                                               \
    X(nvrtcGetCUBINSize)                                                                           \
    X(nvrtcGetErrorString)                                                                         \
    X(nvrtcGetNumSupportedArchs)                                                                   \
    X(nvrtcGetPTX)                                                                                 \
    X(nvrtcGetPTXSize)                                                                             \
    X(nvrtcGetProgramLog)                                                                          \
    X(nvrtcGetProgramLogSize)                                                                      \
    X(nvrtcGetSupportedArchs)                                                                      \
    X(nvrtcVersion)
#define DECLARE_FN(f) static __typeof__(&f) p_##f;
NVRTC_FUNCS(DECLARE_FN)
#define nvrtcCompileProgram p_nvrtcCompileProgram
#define nvrtcCreateProgram p_nvrtcCreateProgram
#define nvrtcDestroyProgram p_nvrtcDestroyProgram
#define nvrtcGetCUBIN p_nvrtcGetCUBIN
#define nvrtcGetCUBINSize p_nvrtcGetCUBINSize
#define nvrtcGetErrorString p_nvrtcGetErrorString
#define nvrtcGetNumSupportedArchs p_nvrtcGetNumSupportedArchs
#define nvrtcGetPTX p_nvrtcGetPTX
#define nvrtcGetPTXSize p_nvrtcGetPTXSize
#define nvrtcGetProgramLog p_nvrtcGetProgramLog
#define nvrtcGetProgramLogSize p_nvrtcGetProgramLogSize
#define nvrtcGetSupportedArchs p_nvrtcGetSupportedArchs
#define nvrtcVersion p_nvrtcVersion

/* The process's NVRTC: a compiler, not a device's state. One library serves every GPU instance
   and xlac-compile on a machine with no GPU at all (--arch), so it is kept here, not in an
   instance (the GPU's own handles are: xe_device_state, blaslt.c). */
static struct {
    pthread_once_t once;
    bool loaded, from_path; /* from_path: the toolkit's file (XG_NVRTC_PATH), as stamped */
    char why[300];
} nvrtc_lib = {.once = PTHREAD_ONCE_INIT};

/* The toolkit's library as built against (its path), else by its soname on the loader's path. */
static void nvrtc_load(void)
{
    void *h = dlopen(XG_NVRTC_PATH, RTLD_NOW | RTLD_LOCAL);
    nvrtc_lib.from_path = h != NULL;
    if (!h)
        h = dlopen(XG_NVRTC_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(nvrtc_lib.why, sizeof nvrtc_lib.why, "NVRTC (%s) could not be loaded: %s",
                 XG_NVRTC_SONAME, dlerror());
        return;
    }
#define LOAD_FN(f)                                                                                 \
    if (!(p_##f = (__typeof__(p_##f))dlsym(h, #f))) {                                              \
        snprintf(nvrtc_lib.why, sizeof nvrtc_lib.why, "NVRTC (%s) has no %s", XG_NVRTC_SONAME,     \
                 #f);                                                                              \
        return;                                                                                    \
    }
    NVRTC_FUNCS(LOAD_FN)
    nvrtc_lib.loaded = true;
}

/* Whether NVRTC is loaded (loading it the first time). */
static bool nvrtc_ready(void)
{
    pthread_once(&nvrtc_lib.once, nvrtc_load);
    return nvrtc_lib.loaded;
}

int xg_nvrtc_arch_for(int arch)
{
    int n = 0, best = 0;
    if (!nvrtc_ready() || nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0)
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
    return nvrtcVersion(&major, &minor) == NVRTC_SUCCESS &&
           (major > 12 || (major == 12 && minor >= 4));
}

/* Compiles for "-arch=<target>" (verbose: ptxas's resource report in the log); fills code and log.
 */
static nvrtcResult compile_opts(const char *source, const char *target, bool fast_math,
                                bool verbose, bool ptx, void **code, size_t *len, char **log)
{
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, source, "xlac_cluster.cu", 0, NULL, NULL);
    if (r != NVRTC_SUCCESS)
        return r;
    char arch[64];
    snprintf(arch, sizeof arch, "-arch=%s", target);
    /* index variables an index map computes but a load does not use are fine: no warnings 177, 550
     * for them */
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

static nvrtcResult compile(const char *source, const char *target, bool fast_math, bool ptx,
                           void **code, size_t *len, char **log)
{
    return compile_opts(source, target, fast_math, false, ptx, code, len, log);
}

/* ---- a program in parts, on several threads --------------------------------------- */

#define KERNEL_MARK "\nextern \"C\" __global__"

/* One part: the program's prelude and some of its kernels; compiled on its own thread. */
typedef struct part {
    char *source;
    size_t bytes; /* of kernels: the balance */
    const char *target;
    bool fast_math;
    nvrtcResult r;
    void *code;
    size_t len;
    char *log;
} part;

static void *part_main(void *arg)
{
    part *pt = arg;
    pt->r = compile(pt->source, pt->target, pt->fast_math, false, &pt->code, &pt->len, &pt->log);
    return NULL;
}

/* The kernels' start offsets in source (at most max); returns how many. */
static int kernel_starts(const char *source, size_t *at, int max)
{
    int n = 0;
    for (const char *k = strstr(source, KERNEL_MARK); k && n < max; k = strstr(k + 1, KERNEL_MARK))
        at[n++] = (size_t)(k - source) + 1;
    return n;
}

/*
 * Deals the kernels out to n parts (each kernel to the part with the
 * fewest bytes so far, in program order, so a part keeps the program's
 * order) and writes each part's source: the prelude, then its kernels.
 */
static bool split_parts(const char *source, const size_t *at, int nk, part *pts, int n)
{
    size_t total = strlen(source);
    int *owner = calloc((size_t)nk, sizeof *owner);
    if (!owner)
        return false;
    for (int k = 0; k < nk; k++) {
        size_t bytes = (k + 1 < nk ? at[k + 1] : total) - at[k];
        int best = 0;
        for (int i = 1; i < n; i++)
            if (pts[i].bytes < pts[best].bytes)
                best = i;
        owner[k] = best;
        pts[best].bytes += bytes;
    }
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        char *src = malloc(at[0] + pts[i].bytes + 1);
        size_t u = at[0];
        if (!(ok = src != NULL))
            break;
        memcpy(src, source, at[0]);
        for (int k = 0; k < nk; k++)
            if (owner[k] == i) {
                size_t bytes = (k + 1 < nk ? at[k + 1] : total) - at[k];
                memcpy(src + u, source + at[k], bytes);
                u += bytes;
            }
        src[u] = '\0';
        pts[i].source = src;
    }
    free(owner);
    return ok;
}

/* The parts' logs, one after the other (NULL when all are empty). */
static char *joined_logs(const part *pts, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += pts[i].log ? strlen(pts[i].log) : 0;
    char *log = total ? malloc(total + 1) : NULL;
    if (!log)
        return NULL;
    size_t u = 0;
    for (int i = 0; i < n; i++)
        if (pts[i].log) {
            memcpy(log + u, pts[i].log, strlen(pts[i].log));
            u += strlen(pts[i].log);
        }
    log[u] = '\0';
    return log;
}

/* Compiles the parts, the first on this thread, the others on their own; the first failure, or
 * success. */
static nvrtcResult compile_parts(part *pts, int n)
{
    pthread_t th[XG_MAX_CUBINS];
    bool started[XG_MAX_CUBINS] = {false};
    for (int i = 1; i < n; i++)
        started[i] = pthread_create(&th[i], NULL, part_main, &pts[i]) == 0;
    part_main(&pts[0]);
    nvrtcResult r = pts[0].r;
    for (int i = 1; i < n; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        else
            part_main(&pts[i]); /* no thread to be had: here, after the others */
        if (r == NVRTC_SUCCESS)
            r = pts[i].r;
    }
    return r;
}

/* Packs the parts' cubins into one artifact (a plain cubin for one part). */
static nvrtcResult pack_parts(part *pts, int n, void **code, size_t *len)
{
    if (n == 1) {
        *code = pts[0].code;
        *len = pts[0].len;
        pts[0].code = NULL;
        return NVRTC_SUCCESS;
    }
    void *images[XG_MAX_CUBINS];
    size_t lens[XG_MAX_CUBINS];
    for (int i = 0; i < n; i++)
        images[i] = pts[i].code, lens[i] = pts[i].len;
    *code = xg_cubins_pack(images, lens, n, len);
    return *code ? NVRTC_SUCCESS : NVRTC_ERROR_OUT_OF_MEMORY;
}

static nvrtcResult compile_split(const char *source, const char *target, bool fast_math, int parts,
                                 void **code, size_t *len, char **log)
{
    size_t at[256];
    int nk = kernel_starts(source, at, 256);
    int n = parts < nk ? parts : nk;
    if (n > XG_MAX_CUBINS)
        n = XG_MAX_CUBINS;
    if (n <= 1 || nk == 256) /* one part (or too many kernels to list): the whole program at once */
        return compile(source, target, fast_math, false, code, len, log);
    part pts[XG_MAX_CUBINS];
    memset(pts, 0, sizeof pts);
    nvrtcResult r = NVRTC_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < n; i++)
        pts[i].target = target, pts[i].fast_math = fast_math;
    if (split_parts(source, at, nk, pts, n)) {
        r = compile_parts(pts, n);
        if (log)
            *log = joined_logs(pts, n);
        if (r == NVRTC_SUCCESS)
            r = pack_parts(pts, n, code, len);
    }
    for (int i = 0; i < n; i++) {
        free(pts[i].source);
        free(pts[i].code);
        free(pts[i].log);
    }
    return r;
}

/*
 * Parts for one compile: the CPUs this process may run on that are not
 * busy (the 1-minute load average, this thread counted as idle), at most
 * 8 (an NVRTC instance holds a few hundred MB while it runs). Every part
 * costs NVRTC's fixed time again, so on a machine whose CPUs are all busy
 * a split would only add work: there it is one program.
 */
static int compile_threads(void)
{
    cpu_set_t set;
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                        : (int)sysconf(_SC_NPROCESSORS_ONLN);
    double load;
    if (getloadavg(&load, 1) == 1)
        n = n - (int)(load + 0.5) + 1;
    return n < 1 ? 1 : n > 8 ? 8 : n;
}

/* A compile's result as a status: on failure the code is freed and the log's first error line
 * named. */
static xe_code compile_result(nvrtcResult r, const char *target, void **code, char **log,
                              xe_status *st)
{
    if (r == NVRTC_SUCCESS)
        return XE_OK;
    free(*code);
    *code = NULL;
    char first[300];
    xg_error_line(log ? *log : NULL, first, sizeof first);
    return xe_fail(st, XE_ERR_COMPILE, "NVRTC (%s): %s: %s", target, nvrtcGetErrorString(r),
                   *first ? first : "no log");
}

xe_code xg_nvrtc_compile_parts(const char *source, int arch, bool fast_math, int parts, void **code,
                               size_t *len, char **log, xe_status *st)
{
    char target[32];
    snprintf(target, sizeof target, "sm_%d", arch);
    *code = NULL;
    if (log)
        *log = NULL;
    if (!nvrtc_ready())
        return xe_fail(st, XE_ERR_COMPILE, "%s", nvrtc_lib.why);
    nvrtcResult r = compile_split(source, target, fast_math, parts, code, len, log);
    return compile_result(r, target, code, log, st);
}

xe_code xg_nvrtc_compile(const char *source, int arch, bool fast_math, void **code, size_t *len,
                         bool *is_ptx, char **log, xe_status *st)
{
    char target[32];
    if (!nvrtc_ready()) {
        *code = NULL;
        if (log)
            *log = NULL;
        return xe_fail(st, XE_ERR_COMPILE, "%s", nvrtc_lib.why);
    }
    int known = xg_nvrtc_arch_for(arch);
    *is_ptx = known != arch; /* PTX for the newest known arch: the driver JITs it for this device */
    if (known == 0) {
        *code = NULL;
        if (log)
            *log = NULL;
        return xe_fail(st, XE_ERR_COMPILE, "NVRTC (%s) knows no architecture up to sm_%d",
                       xg_nvrtc_version(NULL), arch);
    }
    if (!*is_ptx) /* a cubin: the kernels in parts, on the CPUs there are */
        return xg_nvrtc_compile_parts(source, arch, fast_math, compile_threads(), code, len, log,
                                      st);
    snprintf(target, sizeof target, "compute_%d", known);
    *code = NULL;
    nvrtcResult r = compile(source, target, fast_math, true, code, len, log);
    return compile_result(r, target, code, log, st);
}

char *xg_nvrtc_ptx(const char *source, int arch, bool fast_math)
{
    char target[32];
    if (!nvrtc_ready())
        return NULL;
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
    if (!nvrtc_ready())
        return NULL;
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

/* *known only when NVRTC came from the file xg_nvrtc_stamp describes: a version remembered under
   that stamp (codegen/cache/compiler_memo.c) is then the version of that file. */
const char *xg_nvrtc_version(bool *known)
{
    static char v[32];
    int major = 0, minor = 0;
    if (known)
        *known = false;
    if (!nvrtc_ready())
        return "nvrtc unavailable";
    nvrtcVersion(&major, &minor);
    snprintf(v, sizeof v, "nvrtc %d.%d", major, minor);
    if (known)
        *known = nvrtc_lib.from_path;
    return v;
}

bool xg_nvrtc_stamp(xe_text *out)
{
    xe_text_printf(out, "nvrtc=%s;", XG_NVRTC_SONAME);
    return xg_stamp_file(XG_NVRTC_PATH, out);
}
#else
int xg_nvrtc_arch_for(int arch)
{
    (void)arch;
    return 0;
}

xe_code xg_nvrtc_compile(const char *source, int arch, bool fast_math, void **code, size_t *len,
                         bool *is_ptx, char **log, xe_status *st)
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

xe_code xg_nvrtc_compile_parts(const char *source, int arch, bool fast_math, int parts, void **code,
                               size_t *len, char **log, xe_status *st)
{
    (void)source, (void)arch, (void)fast_math, (void)parts, (void)len;
    *code = NULL;
    if (log)
        *log = NULL;
    return xe_fail(st, XE_ERR_COMPILE, "xlac was built without CUDA: no NVRTC");
}

const char *xg_nvrtc_version(bool *known)
{
    if (known)
        *known = true;
    return "no nvrtc";
}

bool xg_nvrtc_stamp(xe_text *out)
{
    xe_text_printf(out, "no nvrtc");
    return true;
}
#endif
