/*
 * What a process pays at its start before its first run (issue 26: a warm
 * first run within 1.1 x the steady run plus the load). A CPU run loads no
 * CUDA library: neither the executor's device library (libxlac_cuda.so,
 * loaded only when the GPU itself is needed, and not at all without the
 * CUDA driver) nor, through the plugin, the CUDA runtime, cuBLAS(Lt) or
 * NVRTC (opened by the GPU target on first use). The compiler's identity
 * in the cache keys is asked of the compiler once and then remembered in
 * the cache folder under the compiler files' stamp, so that a warm start
 * runs no `cc --version`; a compiler changed in place, or another one at
 * another path, is asked again, and a changed version misses the cache.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/tmpdir.h"
#include "xlac/xlac.h"

#define BIN XLAC_BINARY_DIR "/bin/"
#define LIBXLAC XLAC_BINARY_DIR "/lib/libxlac.so"

static void setup(void)
{
    xt_tmp_make("/tmp/xlac-startup-XXXXXX");
    xt_write_file(xt_path("g.xg"), "xlac.graph v1\ninput x: f32[64]\ninput y: f32[64]\n"
                                   "a = mul(x, y)\nb = add(a, x)\nc = exp(b)\nd = reduce_sum(c, axes=[0])\noutput d\n");
}

TestSuite(startup, .init = setup, .fini = xt_tmp_fini, .timeout = 120);

/* The libraries a run loaded ("file=NAME" lines of LD_DEBUG=files), with the run's output. */
static char *loaded_by(const char *env_words, const char *args)
{
    char cmd[600], *o = NULL;
    snprintf(cmd, sizeof cmd, "LD_DEBUG=files " BIN "xlac-run g.xg --seed 0 %s", args);
    cr_assert_eq(xt_sh(env_words, cmd, &o), 0, "%s", o);
    return o;
}

static void assert_no_cuda(const char *o, const char *what)
{
    static const char *const libs[] = {"libxlac_cuda", "libcudart", "libcublas", "libnvrtc", "libnccl", "libcuda.so"};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
        cr_assert(!strstr(o, libs[i]), "%s loaded %s: %s", what, libs[i], o);
}

/* Regression: in a CUDA build every run loaded libxlac_cuda.so (and with it the CUDA runtime, cuBLAS
   and NCCL), --device cpu included: the op table took each device's kernels at its first use. */
Test(startup, a_run_on_the_cpu_loads_no_cuda_library)
{
    char *o = loaded_by("", "--device cpu");
    assert_no_cuda(o, "an op-by-op run with --device cpu");
    free(o);
    o = loaded_by("LD_PRELOAD=" LIBXLAC " XLAC_AUTO_JIT=2 XLAC_FLAGS='--cache_dir=cache --stats'", "--device cpu");
    cr_assert(strstr(o, "compiles=1"), "%s", o);
    assert_no_cuda(o, "a clustered run with --device cpu");
    free(o);
    o = loaded_by("XLAC_AUTO_JIT=2 XLAC_FLAGS='--cache_dir=cache --stats' LD_PRELOAD=" LIBXLAC, "--device cpu");
    cr_assert(strstr(o, "disk_hits=1"), "%s", o);
    assert_no_cuda(o, "a warm clustered run with --device cpu");
    free(o);
}

/* Regression: libxlac.so NEEDED libcudart, libcublas and libcublasLt (540 MB) in a CUDA build, and
   every process that preloaded it loaded them at its start, about 70 ms without a GPU. */
Test(startup, the_plugin_needs_no_cuda_library)
{
    char *o = NULL;
    cr_assert_eq(xt_sh("", "readelf -d " LIBXLAC, &o), 0, "%s", o);
    cr_assert(strstr(o, "NEEDED"), "%s", o);
    cr_assert(!strstr(o, "libcu") && !strstr(o, "libnvrtc") && !strstr(o, "libnccl"), "%s", o);
    free(o);
}

/* Without a GPU, --device auto asks cheaply: no CUDA runtime, BLAS or NVRTC is loaded for it. */
Test(startup, an_auto_run_without_a_gpu_loads_no_cuda_runtime)
{
    char *o = NULL;
    int rc = xt_sh("", BIN "xlac-run g.xg --seed 0 --device gpu", &o);
    bool no_gpu = rc != 0 && strstr(o, "no CUDA device");
    free(o);
    if (!no_gpu)
        cr_skip_test("a GPU is here: its libraries are loaded by design");
    o = loaded_by("LD_PRELOAD=" LIBXLAC " XLAC_AUTO_JIT=2 XLAC_FLAGS='--cache_dir=cache'", "");
    cr_assert(!strstr(o, "libnvrtc") && !strstr(o, "libcublasLt"), "%s", o);
    free(o);
}

/* /proc/self/maps whole (its size reads 0: read until the end). */
static char *mapped_files(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    cr_assert(f);
    size_t len = 0, cap = 1 << 16;
    char *text = malloc(cap);
    for (size_t got; text && (got = fread(text + len, 1, cap - len - 1, f)) > 0;) {
        len += got;
        if (cap - len < 4096)
            text = realloc(text, cap *= 2);
    }
    fclose(f);
    cr_assert(text);
    text[len] = '\0';
    return text;
}

/* Names, words, labels and a CPU placement load no device library (in this test's own process). */
Test(startup, device_names_and_a_cpu_placement_load_no_device_library)
{
    for (int d = 0; d < XE_DEV_COUNT; d++) {
        xe_device dev;
        cr_assert(*xe_device_name((xe_device)d) && *xe_device_xla_name((xe_device)d) && *xe_device_label((xe_device)d));
        const char *w = xe_device_word((xe_device)d);
        cr_assert(xe_device_by_word(w, strlen(w), &dev) && dev == (xe_device)d);
        (void)xe_device_auto_place((xe_device)d);
        (void)xe_device_built((xe_device)d);
    }
    cr_assert_str_eq(xe_device_word(XE_DEV_GPU), "gpu");
    cr_assert_str_eq(xe_device_label(XE_DEV_GPU), "CUDA");
    cr_assert(xe_device_auto_place(XE_DEV_GPU) == xe_device_built(XE_DEV_GPU));
    xe_status st;
    xe_graph *g = xe_parse_file(xt_path("g.xg"), &st);
    cr_assert(g, "%s", st.msg);
    cr_assert_eq(xe_graph_infer(g, &st), XE_OK, "%s", st.msg);
    cr_assert_eq(xe_graph_place(g, XE_PLACE_CPU, &st), XE_OK, "%s", st.msg);
    for (int i = 0; i < g->n_nodes; i++)
        cr_assert_eq(g->nodes[i]->device, XE_DEV_CPU);
    char *maps = mapped_files();
    cr_assert(strstr(maps, "libxlac_executor"), "%s", maps); /* the listing is read */
    cr_assert(!strstr(maps, "libxlac_cuda") && !strstr(maps, "libcudart") && !strstr(maps, "libcublas"), "%s", maps);
    free(maps);
    xe_graph_destroy(g);
}

/*
 * Where the CUDA driver opens (here the toolkit's stub, libcuda.so.1 by its soname, which answers
 * "stub library"), asking whether the GPU is there loads the device library: its table agrees with
 * the slot's facts (else the reason would say "has no device table"), and its kernels are read from
 * its table then (CPU-only ops excepted); the op table never holds a built-in op's kernels.
 */
Test(startup, a_device_library_loaded_brings_its_kernels)
{
#ifndef XLAC_CUDA_STUB
    cr_skip_test("no CUDA device library in this build (or no stub driver in the toolkit)");
#else
    cr_assert_not_null(dlopen(XLAC_CUDA_STUB, RTLD_NOW | RTLD_GLOBAL), "%s", dlerror());
    const xe_op_def *e = xe_op_get(XE_OP_EXP), *u = xe_op_get(XE_OP_UNIQUE);
    cr_assert_null(e->kernel[XE_DEV_GPU], "a built-in op's kernels are in the op table");
    bool available = xe_device_available(XE_DEV_GPU);
    const char *why = xe_device_unavailable_reason(XE_DEV_GPU);
    cr_assert(available || strstr(why, "cudaGetDeviceCount"), "the library was not loaded: %s", why);
    cr_assert_not_null(xe_op_kernel(e, XE_DEV_GPU));
    cr_assert_null(e->kernel[XE_DEV_GPU], "the device's kernels were copied into the op table");
    cr_assert_null(xe_op_kernel(u, XE_DEV_GPU), "unique is CPU-only");
    char *maps = mapped_files();
    cr_assert(strstr(maps, "libxlac_cuda"), "%s", maps);
    free(maps);
#endif
}

/* ---- the compiler's identity, remembered ------------------------------------------ */

/* A compiler at xt_tmp/NAME that says `fakecc VERSION` to --version (and counts it in asked), else is cc. */
static void fake_cc(const char *name, const char *version)
{
    char text[600];
    snprintf(text, sizeof text,
             "#!/bin/sh\nif [ \"$1\" = --version ]; then echo x >> '%s'; echo 'fakecc %s'; exit 0; fi\nexec cc \"$@\"\n",
             xt_path("asked"), version);
    xt_write_file(xt_path(name), text);
    cr_assert_eq(chmod(xt_path(name), 0755), 0);
}

/* How many times a fake compiler was asked its version. */
static int asked(void)
{
    size_t len = 0;
    char *t = xt_read_file(xt_path("asked"), &len);
    int n = xt_occurrences(t, "x\n");
    free(t);
    return n;
}

/* A clustered run with CC=xt_tmp/cc_name and the cache in xt_tmp/cache; its stats line. */
static char *clustered(const char *cc_name)
{
    char env[600], *o = NULL;
    snprintf(env, sizeof env, "PATH=/usr/bin:/bin CC=%s LD_PRELOAD=" LIBXLAC " XLAC_AUTO_JIT=2 "
             "XLAC_FLAGS='--cache_dir=cache --stats'", xt_path(cc_name));
    cr_assert_eq(xt_sh(env, BIN "xlac-run g.xg --seed 0 --device cpu", &o), 0, "%s", o);
    return o;
}

Test(startup, the_compiler_is_asked_once_and_remembered_until_it_changes)
{
    fake_cc("fakecc", "1.0");
    char *o = clustered("fakecc");
    cr_assert(strstr(o, "compiles=1 "), "%s", o);
    cr_assert_eq(asked(), 1);
    free(o);
    /* warm: the id comes from the memo, the program from the disk; the compiler is not run at all */
    o = clustered("fakecc");
    cr_assert(strstr(o, "compiles=0 ") && strstr(o, "disk_hits=1 "), "%s", o);
    cr_assert_eq(asked(), 1, "a warm start asked the compiler its version");
    free(o);
    char *memo = NULL;
    cr_assert_eq(xt_sh("", "cat cache/compiler-c-*.id", &memo), 0, "%s", memo);
    cr_assert(strstr(memo, "XLACCID1\n") && strstr(memo, "\nfakecc 1.0\n"), "%s", memo);
    free(memo);
    /* the compiler changed in place (another version: size, mtime, ctime): asked again, the cache misses */
    fake_cc("fakecc", "2.0.0");
    o = clustered("fakecc");
    cr_assert_eq(asked(), 2, "a changed compiler was not asked");
    cr_assert(strstr(o, "compiles=1 ") && strstr(o, "disk_hits=0 "), "a program of the old compiler served: %s", o);
    free(o);
    /* the same compiler at another path: asked (another stamp), the same version: the cache hits */
    cr_assert_eq(xt_sh("", "cp -p fakecc othercc", &o), 0, "%s", o);
    free(o);
    o = clustered("othercc");
    cr_assert_eq(asked(), 3, "a compiler at another path was not asked");
    cr_assert(strstr(o, "compiles=0 ") && strstr(o, "disk_hits=1 "), "%s", o);
    free(o);
    /* only its mtime changed (touch): asked again, nothing else changes */
    cr_assert_eq(xt_sh("", "touch -d '2001-01-01' othercc", &o), 0, "%s", o);
    free(o);
    o = clustered("othercc");
    cr_assert_eq(asked(), 4, "a compiler with another mtime was not asked");
    cr_assert(strstr(o, "compiles=0 ") && strstr(o, "disk_hits=1 "), "%s", o);
    free(o);
}

/* A memo that is not ours to trust (writable by others), or damaged, is not used: the compiler is asked. */
Test(startup, an_untrusted_or_damaged_memo_is_not_used)
{
    fake_cc("fakecc", "1.0");
    char *o = clustered("fakecc");
    free(o);
    cr_assert_eq(asked(), 1);
    /* a forged id under the right stamp, left writable by others: refused */
    cr_assert_eq(xt_sh("", "sed -i 's/^fakecc 1.0$/forged 9/' cache/compiler-c-*.id && chmod 666 cache/compiler-c-*.id",
                       &o), 0, "%s", o);
    free(o);
    o = clustered("fakecc");
    cr_assert_eq(asked(), 2, "a memo writable by others was used");
    cr_assert(strstr(o, "disk_hits=1 "), "%s", o);
    free(o);
    /* damaged (cut short): refused, asked again */
    cr_assert_eq(xt_sh("", "chmod 600 cache/compiler-c-*.id && printf 'XLACCID1\\ncc=' | tee cache/compiler-c-*.id",
                       &o), 0, "%s", o);
    free(o);
    o = clustered("fakecc");
    cr_assert_eq(asked(), 3, "a damaged memo was used");
    cr_assert(strstr(o, "disk_hits=1 "), "%s", o);
    free(o);
}

/* No disk cache: the compiler is asked once a process, and nothing is written. */
Test(startup, without_a_disk_cache_the_compiler_is_asked_each_process)
{
    fake_cc("fakecc", "1.0");
    char env[600], *o = NULL;
    snprintf(env, sizeof env, "PATH=/usr/bin:/bin CC=%s LD_PRELOAD=" LIBXLAC " XLAC_AUTO_JIT=2 "
             "XLAC_FLAGS='--disk_cache=0 --stats'", xt_path("fakecc"));
    for (int k = 1; k <= 2; k++) {
        cr_assert_eq(xt_sh(env, BIN "xlac-run g.xg --seed 0 --device cpu", &o), 0, "%s", o);
        cr_assert(strstr(o, "compiles=1 "), "%s", o);
        free(o);
        cr_assert_eq(asked(), k);
    }
}
