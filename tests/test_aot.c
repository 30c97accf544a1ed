/*
 * Ahead of time, end to end: xlac-compile writes mlp.so + mlp.h for
 * examples/mlp.xg; the documented example program (examples/aot/mlp_main.c)
 * is built with cc against them, run, and its output compared with
 * xlac-run's on the inputs it saved: within 1e-5 of the op-by-op run, and
 * bit for bit the clustered run's (the same kernels, the same BLAS calls).
 * Also: an op between clusters runs per op inside the entry point
 * (through libxlac_executor); an op that cannot (unique: a data-dependent
 * shape) leaves the graph without one and a warning names it; an input
 * with `?` dims is refused by name; the output folder, moved elsewhere,
 * runs there and neither NEEDs nor loads a CUDA library (the executor finds
 * libxlac_cuda.so beside itself, or says which file it lacks); and
 * --seed-cache fills a disk cache from which the plugin's first run loads
 * (disk_hits=1 compiles=0), also when the folder is read-only.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xlac/io.h"
#include "xlac/xlac.h"
#include "support/tmpdir.h"

#define BIN XLAC_BINARY_DIR "/bin/"
#define LIBXLAC XLAC_BINARY_DIR "/lib/libxlac.so"
#define SRC XLAC_SOURCE_DIR "/"

#ifdef XLAC_SANITIZE
#define CC_SAN " -fsanitize=address,undefined" /* mlp.so pulls in the instrumented libxlac_executor.so */
#else
#define CC_SAN ""
#endif

static void make_tmp(void)
{
    xt_tmp_make("/tmp/xlac_aot_XXXXXX");
}

TestSuite(aot, .init = make_tmp, .fini = xt_tmp_fini, .timeout = 180);

static xe_tensor *load(const char *name)
{
    char p[400];
    xe_status st;
    xe_status_clear(&st);
    snprintf(p, sizeof p, "%s/%s", xt_tmp, name);
    xe_tensor *t = xe_npy_read(p, &st);
    cr_assert_not_null(t, "%s: %s", p, st.msg);
    return t;
}

#define FEEDS " --input x=x.npy --input w1=w1.npy --input b1=b1.npy --input w2=w2.npy --input b2=b2.npy"

Test(aot, example_program_matches_xlac_run)
{
    char *o = NULL;
    cr_assert_eq(xt_sh("", BIN "xlac-compile " SRC "examples/mlp.xg --target c --out out", &o), 0, "%s", o);
    cr_assert(strstr(o, "out/mlp.so: the whole graph as one entry point (declared in out/mlp.h)"), "%s", o);
    free(o);
    char *h = NULL;
    char hp[400];
    snprintf(hp, sizeof hp, "%s/out/mlp.h", xt_tmp);
    cr_assert_not_null(h = xt_read_file(hp, NULL));
    cr_assert(strstr(h, "int mlp_run(") && strstr(h, "const float *x /* f32[64,128] */") &&
              strstr(h, "float *y /* f32[64,128] */") && strstr(h, "#define MLP_Y_DIM1 128"), "%s", h);
    free(h);
    cr_assert_eq(xt_sh("", "cc -std=c11 -Wall -Wextra -Werror" CC_SAN " -I out " SRC "examples/aot/mlp_main.c out/mlp.so "
                        "-Wl,-rpath,\"$PWD/out\" -lm -o mlp_main && ./mlp_main", &o), 0, "%s", o);
    free(o);
    cr_assert_eq(xt_sh("", BIN "xlac-run " SRC "examples/mlp.xg" FEEDS " --save-outputs plain", &o), 0, "%s", o);
    free(o);
    cr_assert_eq(xt_sh("LD_PRELOAD=" LIBXLAC " XLAC_AUTO_JIT=2 XLAC_FLAGS=--disk_cache=0",
                    BIN "xlac-run " SRC "examples/mlp.xg" FEEDS " --save-outputs jit", &o), 0, "%s", o);
    free(o);
    xe_tensor *got = load("y.npy"), *plain = load("plain/y.npy"), *jit = load("jit/y.npy");
    cr_assert_eq(got->nbytes, plain->nbytes);
    const float *g = got->data, *p = plain->data;
    double max_err = 0;
    for (size_t i = 0; i < got->nbytes / sizeof(float); i++) {
        cr_assert(!isnan(g[i]), "y[%zu] is NaN", i);
        max_err = fmax(max_err, fabs((double)g[i] - p[i]) / fmax(1.0, fabs(p[i])));
    }
    cr_assert_leq(max_err, 1e-5, "max error %g against the op-by-op run", max_err);
    cr_assert(memcmp(got->data, jit->data, got->nbytes) == 0, "the entry point differs from the clustered run");
    xe_tensor_release(got);
    xe_tensor_release(plain);
    xe_tensor_release(jit);
}

Test(aot, per_op_nodes_and_unknown_dims_are_refused_by_name)
{
    char gp[400];
    snprintf(gp, sizeof gp, "%s/u.xg", xt_tmp);
    FILE *f = fopen(gp, "w");
    cr_assert_not_null(f);
    fputs("xlac.graph v1\ninput x: f32[8]\na = mul(x, x)\nb = add(a, x)\nu = unique(b)\nc = exp(u)\noutput c\n", f);
    fclose(f);
    char *o = NULL;
    cr_assert_eq(xt_sh("", BIN "xlac-compile u.xg --target c --out out", &o), 0, "%s", o);
    cr_assert(strstr(o, "warning: u.xg: no ahead-of-time entry point: node u (unique) at u.xg:5 has a data-dependent "
                        "output shape"), "%s", o);
    free(o);
    cr_assert_eq(xt_sh("", "test ! -e out/u.so && test ! -e out/u.h", &o), 0, "an entry point was written");
    free(o);
    int rc = xt_sh("", BIN "xlac-compile " SRC "examples/dynamic.xg --target c --out dyn", &o);
    cr_assert_eq(rc, 2, "%s", o);
    cr_assert(strstr(o, "input x is f32[?,"), "%s", o);
    free(o);
}

/* Regression: the .so had RUNPATH <build dir>/lib; now the folder carries the executor and runs anywhere. */
Test(aot, the_folder_runs_after_it_is_moved)
{
    char *o = NULL;
    cr_assert_eq(xt_sh("", BIN "xlac-compile " SRC "examples/mlp.xg --target c --out out", &o), 0, "%s", o);
    free(o);
    cr_assert_eq(xt_sh("", "readelf -d out/mlp.so", &o), 0, "%s", o);
    cr_assert(strstr(o, "[$ORIGIN") && !strstr(o, XLAC_BINARY_DIR), "RUNPATH: %s", o); /* clang adds libomp's folder */
    cr_assert(!strstr(o, "cublas") && !strstr(o, "cudart"), "the C program links CUDA: %s", o);
    free(o);
    cr_assert_eq(xt_sh("", "mkdir -p deploy/app && mv out deploy/app/lib && cd deploy && "
                           "cc -std=c11 -Wall -Werror" CC_SAN " -I app/lib " SRC "examples/aot/mlp_main.c app/lib/mlp.so "
                           "-Wl,-rpath,'$ORIGIN/app/lib' -lm -o mlp_main && ./mlp_main",
                       &o),
                 0, "%s", o);
    free(o);
    cr_assert_eq(xt_sh("", "ldd deploy/app/lib/mlp.so | grep xlac_executor", &o), 0, "%s", o);
    cr_assert(strstr(o, "deploy/app/lib/libxlac_executor.so"), "the copy beside it: %s", o);
    free(o);
}

/* What a folder's libraries NEED and where they look (readelf -d of every .so in it). */
static char *dynamic_sections(const char *folder)
{
    char cmd[300], *o = NULL;
    snprintf(cmd, sizeof cmd, "readelf -d %s/*.so", folder); /* several files: each under "File: NAME" */
    cr_assert_eq(xt_sh("", cmd, &o), 0, "%s", o);
    return o;
}

/* Regression: the copied libxlac_executor.so NEEDED libcudart, libcublas (and through it the 517 MB
   libcublasLt) and libnccl in a CUDA build, although the program runs on the CPU; the CUDA device is
   libxlac_cuda.so now, loaded only when asked for and never copied into a CPU artifact's folder. */
Test(aot, a_cpu_artifact_needs_no_cuda_library_and_runs_elsewhere)
{
    char p[400];
    snprintf(p, sizeof p, "%s/mid.xg", xt_tmp); /* a matmul (cluster) and a per-op step (a session) */
    xt_write_file(p, "xlac.graph v1\ninput x: f32[4,3]\ninput w: f32[3,5]\nm = matmul(x, w)\nb = add(m, m)\n"
                     "t = tile(b, repeats=[2, 1])\nc = exp(t)\nd = mul(c, c)\noutput d\n");
    snprintf(p, sizeof p, "%s/main.c", xt_tmp);
    xt_write_file(p, "#include <stdio.h>\n#include \"mid.h\"\n"
                     "int main(void) {\n"
                     "    float x[MID_X_SIZE], w[MID_W_SIZE], d[MID_D_SIZE];\n"
                     "    for (int i = 0; i < MID_X_SIZE; i++) x[i] = 0.1f * i;\n"
                     "    for (int i = 0; i < MID_W_SIZE; i++) w[i] = 0.01f * i;\n"
                     "    if (mid_run(x, w, d)) return 1;\n"
                     "    printf(\"d[0]=%.6g d[39]=%.6g\\n\", d[0], d[39]);\n"
                     "    return 0;\n}\n");
    char *o = NULL;
    cr_assert_eq(xt_sh("", BIN "xlac-compile mid.xg --target c --out out", &o), 0, "%s", o);
    free(o);
    /* the folder, moved elsewhere, holds the artifact and the executor only */
    cr_assert_eq(xt_sh("", "mkdir -p elsewhere && mv out elsewhere/lib && ls elsewhere/lib/*.so", &o), 0, "%s", o);
    cr_assert(strstr(o, "elsewhere/lib/mid.so") && strstr(o, "elsewhere/lib/libxlac_executor.so") &&
                  !strstr(o, "libxlac_cuda"), "%s", o);
    free(o);
    o = dynamic_sections("elsewhere/lib");
    cr_assert(!strstr(o, "libcu") && !strstr(o, "libnccl") && !strstr(o, "libxlac_cuda"), "a CUDA library is NEEDED: %s",
              o);
    cr_assert(!strstr(o, XLAC_BINARY_DIR) && !strstr(o, XLAC_SOURCE_DIR), "a path of the build: %s", o);
    cr_assert(strstr(o, "Library runpath: [$ORIGIN"), "%s", o);
    free(o);
    cr_assert_eq(xt_sh("", "cc -std=c11 -Wall -Werror" CC_SAN " -I elsewhere/lib main.c elsewhere/lib/mid.so "
                           "-Wl,-rpath,'$ORIGIN/elsewhere/lib' -o mid && LD_DEBUG=files ./mid",
                       &o),
                 0, "%s", o);
    cr_assert(strstr(o, "d[0]="), "%s", o);
    cr_assert(!strstr(o, "libcudart") && !strstr(o, "libcublas") && !strstr(o, "libnccl"), "a CUDA library was loaded: %s",
              o);
    free(o);
}

/* The executor finds its CUDA device beside itself: absent there, the GPU's reason says which file. */
Test(aot, the_cuda_device_library_is_loaded_from_beside_the_executor)
{
    xt_write_file(xt_path("gpu.c"), "#include <stdio.h>\n#include \"xlac/device.h\"\n"
                                    "int main(void) {\n"
                                    "    printf(\"built=%d available=%d reason=%s\\n\", xe_device_built(XE_DEV_GPU),\n"
                                    "           xe_device_available(XE_DEV_GPU), xe_device_unavailable_reason(XE_DEV_GPU));\n"
                                    "    return 0;\n}\n");
    char *o = NULL;
    cr_assert_eq(xt_sh("", "mkdir app && cp " XLAC_BINARY_DIR "/lib/libxlac_executor.so app/ && "
                           "cc -std=c11 -Wall -Werror" CC_SAN " -I " SRC "executor/include gpu.c app/libxlac_executor.so "
                           "-Wl,-rpath,'$ORIGIN/app' -o gpu && ./gpu",
                       &o),
                 0, "%s", o);
#ifdef XG_HAVE_CUDA
    char want[300];
    snprintf(want, sizeof want, "built=1 available=0 reason=CUDA device library not found: %s/app/libxlac_cuda.so\n",
             xt_tmp);
    cr_assert(strstr(o, want), "want '%s' in: %s", want, o);
    free(o);
    /* beside it: loaded; the reason is then the CUDA runtime's (or none, with a GPU) */
    cr_assert_eq(xt_sh("", "cp " XLAC_BINARY_DIR "/lib/libxlac_cuda.so app/ && ./gpu", &o), 0, "%s", o);
    cr_assert(strstr(o, "built=1 available=") && !strstr(o, "device library"), "%s", o);
#else
    cr_assert(strstr(o, "built=0 available=0 reason=xlac was built without this device"), "%s", o);
#endif
    free(o);
}

/* The deployment docs/aot.md describes: seeded by xlac-compile, then read-only for the service (another
   user when the test runs as root, who could write anyway). Regression: the folder was ignored ("not
   writable; running without the disk cache") and every module compiled again. */
Test(aot, a_seeded_cache_on_a_read_only_folder_is_used_for_loading)
{
    char *o = NULL;
    cr_assert_eq(xt_sh("", BIN "xlac-compile " SRC "examples/mlp.xg --target c --out out --seed-cache seed", &o), 0,
                 "%s", o);
    free(o);
    cr_assert_eq(xt_sh("", "chmod 0755 . && chmod -R a-w,a+rX seed", &o), 0, "%s", o);
    free(o);
    const char *as = "";
    if (geteuid() == 0) {
        if (system("command -v setpriv >/dev/null") != 0)
            cr_skip_test("running as root: needs setpriv to run as another user");
        as = "setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent ";
    }
    char bin[300], lib[300], env[400], cmd[2048];
    xt_build_for(as, bin, lib, sizeof bin, env, sizeof env); /* copies when the checkout is private */
    cr_assert_eq(xt_sh("", "cp " SRC "examples/mlp.xg mlp.xg && chmod a+r mlp.xg", &o), 0, "%s", o);
    free(o);
    snprintf(cmd, sizeof cmd,
             "%s%sLD_PRELOAD=%s/libxlac.so XLAC_AUTO_JIT=2 XLAC_FLAGS='--cache_dir=%s/seed --stats' %s/xlac-run "
             "%s/mlp.xg --seed 0",
             as, env, lib, xt_tmp, bin, xt_tmp);
    int rc = xt_sh("", cmd, &o);
    char *unused = NULL;
    xt_sh("", "chmod -R u+w seed", &unused); /* so that the folder can be removed */
    free(unused);
    cr_assert_eq(rc, 0, "%s", o);
    cr_assert(strstr(o, " compiles=0 ") && strstr(o, " disk_hits=1 "), "the seeded module was not loaded: %s", o);
    cr_assert(!strstr(o, "warning") && !strstr(o, "not writable"), "a read-only seeded cache is no warning: %s", o);
    free(o);
}

Test(aot, seed_cache_makes_the_first_run_load)
{
    char *o = NULL;
    cr_assert_eq(xt_sh("", BIN "xlac-compile " SRC "examples/mlp.xg " SRC "examples/softmax.xg --target c --out out "
                        "--seed-cache cache", &o), 0, "%s", o);
    free(o);
    const char *graphs[] = {"mlp", "softmax"};
    for (int i = 0; i < 2; i++) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, BIN "xlac-run " SRC "examples/%s.xg --seed 0", graphs[i]);
        cr_assert_eq(xt_sh("LD_PRELOAD=" LIBXLAC " XLAC_AUTO_JIT=2 XLAC_FLAGS='--cache_dir=cache --stats'", cmd, &o), 0,
                     "%s", o);
        cr_assert(strstr(o, " compiles=0 ") && strstr(o, " disk_hits=1 ") && strstr(o, " fallbacks=0 "), "%s: %s",
                  graphs[i], o);
        free(o);
    }
}

/* Two clusters (two unconnected parts), a constant, and an output that is an input, through a C caller. */
Test(aot, two_clusters_a_constant_and_a_passthrough_output)
{
    char p[400];
    snprintf(p, sizeof p, "%s/two.xg", xt_tmp);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs("xlac.graph v1\ninput x: f32[4,3]\ninput y: f32[4,3]\na = mul(x, x)\nb = add(a, x)\nc = sub(y, x)\n"
          "k = const(f32[3], [1, 2, 3])\nd = mul(c, k)\ne = add(d, y)\noutput b\noutput e\noutput x\n",
          f);
    fclose(f);
    snprintf(p, sizeof p, "%s/main.c", xt_tmp);
    f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs("#include <stdio.h>\n#include \"two.h\"\n"
          "int main(void) {\n"
          "    float x[TWO_X_SIZE], y[TWO_Y_SIZE], b[TWO_B_SIZE], e[TWO_E_SIZE], xo[TWO_X_OUT_SIZE];\n"
          "    for (int i = 0; i < 12; i++) { x[i] = 0.5f * i; y[i] = i - 3.0f; }\n"
          "    if (two_run(x, y, b, e, xo)) return 1;\n"
          "    for (int i = 0; i < 12; i++) {\n"
          "        float k = (float)(i % 3 + 1);\n"
          "        if (b[i] != x[i] * x[i] + x[i] || e[i] != (y[i] - x[i]) * k + y[i] || xo[i] != x[i]) {\n"
          "            printf(\"wrong at %d: %g %g %g\\n\", i, b[i], e[i], xo[i]); return 1; }\n"
          "    }\n"
          "    printf(\"ok\\n\");\n    return 0;\n}\n",
          f);
    fclose(f);
    char *o = NULL;
    cr_assert_eq(xt_sh("", BIN "xlac-compile two.xg --target c --out out", &o), 0, "%s", o);
    cr_assert(strstr(o, "cluster_1") && strstr(o, "out/two.so: the whole graph"), "%s", o);
    free(o);
    cr_assert_eq(xt_sh("", "cc -std=c11 -Wall -Werror" CC_SAN " -ffp-contract=off -I out main.c out/two.so -Wl,-rpath,\"$PWD/out\" "
                        "-o two && ./two", &o), 0, "%s", o);
    cr_assert(strstr(o, "ok"), "%s", o);
    free(o);
    /* an unusable seed folder stops xlac-compile before anything compiles */
    int rc = xt_sh("", BIN "xlac-compile two.xg --target c --out out2 --seed-cache /dev/null/cache", &o);
    cr_assert_eq(rc, 2, "%s", o);
    cr_assert(strstr(o, "--seed-cache /dev/null/cache: not a folder that can be written"), "%s", o);
    free(o);
}

/* cluster, tile (per op, through libxlac_executor), cluster; tile's value is an output too. */
Test(aot, per_op_step_between_clusters)
{
    char p[400];
    snprintf(p, sizeof p, "%s/mid.xg", xt_tmp);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs("xlac.graph v1\ninput x: f32[4,3]\na = mul(x, x)\nb = add(a, x)\nt = tile(b, repeats=[2, 1])\n"
          "c = exp(t)\nd = mul(c, c)\ne = sub(d, c)\noutput e\noutput t\n",
          f);
    fclose(f);
    snprintf(p, sizeof p, "%s/main.c", xt_tmp);
    f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs("#include <math.h>\n#include <stdio.h>\n#include \"mid.h\"\n"
          "int main(void) {\n"
          "    float x[MID_X_SIZE], e[MID_E_SIZE], t[MID_T_SIZE];\n"
          "    for (int i = 0; i < MID_X_SIZE; i++) x[i] = 0.25f * i - 1.0f;\n"
          "    if (mid_run(x, e, t)) return 1;\n"
          "    for (int i = 0; i < MID_T_SIZE; i++) {\n"
          "        double b = (double)x[i % 12] * x[i % 12] + x[i % 12], c = exp(b), want = c * c - c;\n"
          "        if (t[i] != (float)b || fabs(e[i] - want) > 1e-5 * fabs(want) + 1e-6) {\n"
          "            printf(\"wrong at %d: %g %g (want %g %g)\\n\", i, t[i], e[i], b, want); return 1; }\n"
          "    }\n"
          "    printf(\"ok\\n\");\n    return 0;\n}\n",
          f);
    fclose(f);
    char *o = NULL;
    cr_assert_eq(xt_sh("", BIN "xlac-compile mid.xg --target c --out out", &o), 0, "%s", o);
    cr_assert(strstr(o, "out/mid.so: the whole graph"), "%s", o);
    free(o);
    snprintf(p, sizeof p, "%s/out/mid.c", xt_tmp);
    char *src = xt_read_file(p, NULL);
    cr_assert(src && strstr(src, "t = tile, per op (libxlac_executor)") && strstr(src, "xe_aot_graph_run(&h, text"),
              "%s", src);
    free(src);
    cr_assert_eq(xt_sh("", "cc -std=c11 -Wall -Werror" CC_SAN " -I out main.c out/mid.so -Wl,-rpath,\"$PWD/out\" -lm -o mid "
                        "&& ./mid", &o), 0, "%s", o);
    cr_assert(strstr(o, "ok"), "%s", o);
    free(o);
}
