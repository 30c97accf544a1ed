/*
 * The CUDA emulation of cuda_emu.h: the generated source between a header
 * that defines the CUDA built-ins it uses and a trailer that launches its
 * kernels, compiled by the host C++ compiler into a shared object.
 */
#include "support/cuda_emu.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "geometry.h"
#include "plan.h"
#include "share.h"
#include "xlac/op.h"

struct cuda_emu {
    const xe_graph *body;
    bool generic;
    xg_plan *plan;
    xg_shares shares; /* steps that launch an earlier step's kernel on their own buffers, as the GPU runs them */
    void *dl;
    int (*launch)(int step, unsigned grid, unsigned threads, const void *args);
    void *workspace; /* XG_WORKSPACE_BYTES, zeroed once, as the GPU program's */
};

/* What the generated kernels use of CUDA, on POSIX threads. */
static const char emu_header[] =
    "#include <math.h>\n#include <pthread.h>\n#include <stdint.h>\n#include <string.h>\n"
    "#define __CUDACC_RTC__ 1 /* scalar.h's CUDA branches (expf, tanhf, ...), as NVRTC compiles them */\n"
    "#define __host__\n#define __device__\n"
    "struct emu_dim3 { unsigned x, y, z; };\n"
    "static emu_dim3 gridDim, blockDim;\n"
    "static thread_local emu_dim3 threadIdx, blockIdx;\n"
    "static pthread_barrier_t emu_block_bar, emu_warp_bar[32];\n"
    "static uint64_t emu_xchg[32][32];\n"
    "#define __global__\n#define __shared__ static\n#define __restrict__ __restrict\n"
    "#define __syncthreads() pthread_barrier_wait(&emu_block_bar)\n"
    "#define __threadfence() __atomic_thread_fence(__ATOMIC_SEQ_CST)\n"
    "static unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }\n"
    "template <typename T> static T __shfl_down_sync(unsigned, T v, int off)\n{\n"
    "    unsigned w = threadIdx.x / 32, l = threadIdx.x % 32;\n"
    "    memcpy(&emu_xchg[w][l], &v, sizeof v);\n    pthread_barrier_wait(&emu_warp_bar[w]);\n"
    "    T r = v;\n    if (l + off < 32)\n        memcpy(&r, &emu_xchg[w][l + off], sizeof r);\n"
    "    pthread_barrier_wait(&emu_warp_bar[w]);\n    return r;\n}\n";

/* The launcher: threads of one block run every block of the grid in turn. */
static const char emu_trailer[] =
    "static emu_kernel emu_cur;\n"
    "static void *emu_thread(void *arg)\n{\n"
    "    threadIdx = {(unsigned)(uintptr_t)arg, 0, 0};\n"
    "    for (unsigned b = 0; b < gridDim.x; b++) {\n"
    "        blockIdx = {b, 0, 0};\n        emu_call(emu_cur);\n        pthread_barrier_wait(&emu_block_bar);\n"
    "    }\n    return 0;\n}\n"
    "extern \"C\" int emu_launch(int step, unsigned grid, unsigned threads, const void *args)\n{\n"
    "    pthread_t th[1024];\n    pthread_attr_t attr;\n    unsigned made = 0;\n"
    "    if (threads > 1024 || threads % 32 || !emu_kernels[step])\n        return -1;\n"
    "    memcpy(&emu_args, args, sizeof emu_args);\n    emu_cur = emu_kernels[step];\n"
    "    gridDim = {grid, 1, 1};\n    blockDim = {threads, 1, 1};\n"
    "    pthread_barrier_init(&emu_block_bar, 0, threads);\n"
    "    for (unsigned w = 0; w < threads / 32; w++)\n        pthread_barrier_init(&emu_warp_bar[w], 0, 32);\n"
    "    pthread_attr_init(&attr);\n    pthread_attr_setstacksize(&attr, 1 << 20);\n"
    "    while (made < threads && pthread_create(&th[made], &attr, emu_thread, (void *)(uintptr_t)made) == 0)\n"
    "        made++;\n"
    "    for (unsigned t = 0; t < made; t++)\n        pthread_join(th[t], 0);\n"
    "    pthread_attr_destroy(&attr);\n    pthread_barrier_destroy(&emu_block_bar);\n"
    "    for (unsigned w = 0; w < threads / 32; w++)\n        pthread_barrier_destroy(&emu_warp_bar[w]);\n"
    "    return made == threads ? 0 : -1; /* fewer threads would have hung at the first barrier */\n}\n";

/* header + the generated source (without its NVRTC typedefs) + the kernel table + trailer. */
static char *emu_source(const xg_plan *p, const xg_shares *shares, const char *cuda)
{
    const char *marker = "#define INT64_MAX 9223372036854775807LL\n", *body = strstr(cuda, marker);
    body = body ? body + strlen(marker) : cuda;
    size_t cap = strlen(emu_header) + strlen(body) + strlen(emu_trailer) + 256 + (size_t)p->n_steps * 16;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    bool by_pointer = xg_args_in_memory(p); /* as the GPU launcher passes them */
    size_t u = (size_t)snprintf(s, cap, "%s%s\ntypedef void (*emu_kernel)(%s);\nstatic xg_args emu_args;\n"
                                        "static void emu_call(emu_kernel k) { k(%s); }\n"
                                        "static const emu_kernel emu_kernels[] = {",
                                emu_header, body, by_pointer ? "const xg_args *" : "xg_args",
                                by_pointer ? "&emu_args" : "emu_args");
    for (int i = 0; i < p->n_steps; i++) {
        const xg_share *h = xg_shares_find(shares, i);
        u += (size_t)snprintf(s + u, cap - u, p->steps[i].kind == XG_STEP_LIBRARY ? "0, " : "xg_k%d, ",
                              h ? h->from : i);
    }
    snprintf(s + u, cap - u, "0};\n%s", emu_trailer);
    return s;
}

/* Compiles source into DIR/emu.so with the host C++ compiler ($CXX or c++); the log on failure. */
static xe_code compile_emu(const char *source, char *so, size_t so_len, xe_status *st)
{
    char dir[] = "/tmp/xlac-emu-XXXXXX", src[64], log[64], cmd[512];
    if (!mkdtemp(dir))
        return xe_fail(st, XE_ERR_IO, "cannot create a temp folder");
    snprintf(src, sizeof src, "%s/emu.cc", dir);
    snprintf(log, sizeof log, "%s/log.txt", dir);
    snprintf(so, so_len, "%s/emu.so", dir);
    FILE *f = fopen(src, "w");
    if (!f || fputs(source, f) < 0 || fclose(f) != 0)
        return xe_fail(st, XE_ERR_IO, "cannot write %s", src);
    const char *cxx = getenv("CXX") && *getenv("CXX") ? getenv("CXX") : "c++";
    snprintf(cmd, sizeof cmd, "%s -std=c++17 -O1 -w -fPIC -shared -pthread -o %s %s > %s 2>&1", cxx, so, src, log);
    if (system(cmd) != 0) {
        char text[2048] = "";
        FILE *l = fopen(log, "r");
        size_t n = l ? fread(text, 1, sizeof text - 1, l) : 0;
        text[n] = '\0';
        if (l)
            fclose(l);
        return xe_fail(st, XE_ERR_COMPILE, "the emulated CUDA (%s) does not compile:\n%s", src, text);
    }
    unlink(src);
    unlink(log);
    return XE_OK;
}

cuda_emu *cuda_emu_build(const xe_graph *body, const xe_type *in_types, bool generic, xe_status *st)
{
    cuda_emu *e = calloc(1, sizeof *e);
    char *cuda = NULL, *source = NULL, so[128] = "";
    if (!e) {
        xe_fail(st, XE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    e->body = body;
    e->generic = generic;
    xe_code c = xg_plan_build(body, in_types, generic, &e->plan, st);
    if (c == XE_OK && !(cuda = xg_emit_program_shared(e->plan, XG_TARGET_CUDA, &e->shares, st)))
        c = st->code;
    if (c == XE_OK && !(source = emu_source(e->plan, &e->shares, cuda)))
        c = xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (c == XE_OK)
        c = compile_emu(source, so, sizeof so, st);
    if (c == XE_OK && !(e->dl = dlopen(so, RTLD_NOW | RTLD_LOCAL)))
        c = xe_fail(st, XE_ERR_COMPILE, "dlopen %s: %s", so, dlerror());
    if (c == XE_OK && !(*(void **)&e->launch = dlsym(e->dl, "emu_launch")))
        c = xe_fail(st, XE_ERR_COMPILE, "no emu_launch in %s", so);
    if (c == XE_OK && !(e->workspace = calloc(1, XG_WORKSPACE_BYTES)))
        c = xe_fail(st, XE_ERR_NOMEM, "out of memory");
    if (*so) {
        unlink(so);
        *strrchr(so, '/') = '\0';
        rmdir(so);
    }
    free(cuda);
    free(source);
    if (c != XE_OK) {
        cuda_emu_destroy(e);
        return NULL;
    }
    return e;
}

/* Buffers of the materialized nodes (inputs and constants shared), pointers and sizes. */
static xe_code make_buffers(const cuda_emu *e, const xe_type *types, xe_tensor *const *inputs, xe_tensor **bufs,
                            void **ptrs, int64_t *S, xe_status *st)
{
    const xe_graph *b = e->body;
    for (int k = 0; k < b->n_inputs; k++)
        bufs[b->inputs[k]] = xe_tensor_retain(inputs[k]);
    for (int i = 0; i < b->n_nodes; i++) {
        const xe_node *n = b->nodes[i];
        if (e->plan->mat[i] && n->op == XE_OP_CONST)
            bufs[i] = xe_tensor_retain(n->value);
        else if (e->plan->mat[i] && n->op != XE_OP_INPUT &&
                 !(bufs[i] = xe_tensor_new(types[i].dtype, &types[i].shape, XE_DEV_CPU, st)))
            return st->code;
        ptrs[i] = bufs[i] ? bufs[i]->data : NULL;
        for (int d = 0; d < types[i].shape.rank; d++)
            S[e->plan->soff[i] + d] = types[i].shape.dims[d];
    }
    return XE_OK;
}

/* The steps in order: library calls on the CPU, kernels through the emulation. */
static xe_code run_steps(cuda_emu *e, const xe_type *types, xe_tensor **bufs, void **ptrs, const int64_t *S,
                         int64_t max_blocks, xe_status *st)
{
    size_t need = xg_pack_args(e->plan, NULL, NULL, NULL, NULL, 0);
    char *args = malloc(need);
    if (!args)
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    size_t n = (size_t)e->body->n_nodes + 1;
    void **mine = malloc(sizeof *mine * n);
    if (!mine) {
        free(args);
        return xe_fail(st, XE_ERR_NOMEM, "out of memory");
    }
    xe_code c = XE_OK;
    for (int i = 0; c == XE_OK && i < e->plan->n_steps; i++) {
        int64_t blocks = xg_launch_blocks(e->plan, i, types, &xg_cuda_geometry, max_blocks);
        const xg_share *h = xg_shares_find(&e->shares, i);
        if (h) /* as program.c launches a shared step */
            xg_share_pointers(h, ptrs, mine, n);
        if (e->plan->steps[i].kind == XG_STEP_LIBRARY)
            c = xg_run_matmul(e->plan, XE_DEV_CPU, e->plan->steps[i].outs[0], bufs, st); /* as cuBLAS would */
        else if (blocks > 0 && !xg_pack_args(e->plan, h ? mine : ptrs, S, e->workspace, args, need))
            c = xe_fail(st, XE_ERR_RUNTIME, "xg_k%d: arguments too large", i);
        else if (blocks > 0 && e->launch(i, (unsigned)blocks, XG_THREADS, args) != 0)
            c = xe_fail(st, XE_ERR_RUNTIME, "xg_k%d: the emulated launch failed", i);
    }
    free(args);
    free(mine);
    return c;
}

xe_code cuda_emu_run(cuda_emu *e, xe_tensor *const *inputs, xe_tensor **outputs, int64_t max_blocks,
                     xe_status *st)
{
    const xe_graph *b = e->body;
    size_t n = (size_t)b->n_nodes + 1;
    xe_type *types = calloc(n, sizeof *types), *in_types = calloc((size_t)b->n_inputs + 1, sizeof *in_types);
    xe_tensor **bufs = calloc(n, sizeof *bufs);
    void **ptrs = calloc(n, sizeof *ptrs);
    int64_t *S = calloc((size_t)e->plan->n_sizes + 1, sizeof *S);
    xe_code c = types && in_types && bufs && ptrs && S ? XE_OK : xe_fail(st, XE_ERR_NOMEM, "out of memory");
    for (int k = 0; c == XE_OK && k < b->n_inputs; k++)
        in_types[k] = (xe_type){inputs[k]->dtype, inputs[k]->shape};
    if (c == XE_OK)
        c = xg_body_types(b, in_types, types, st);
    for (int i = 0; c == XE_OK && !e->generic && i < b->n_nodes; i++)
        if (types[i].dtype != e->plan->types[i].dtype || !xe_shape_equal(&types[i].shape, &e->plan->types[i].shape))
            c = xe_fail(st, XE_ERR_RUNTIME, "a fixed-shape program run at other shapes");
    if (c == XE_OK)
        c = make_buffers(e, types, inputs, bufs, ptrs, S, st);
    if (c == XE_OK)
        c = run_steps(e, types, bufs, ptrs, S, max_blocks, st);
    for (int k = 0; c == XE_OK && k < b->n_outputs; k++)
        outputs[k] = xe_tensor_retain(bufs[b->outputs[k]]);
    for (size_t i = 0; bufs && i < n; i++)
        xe_tensor_release(bufs[i]);
    free(types);
    free(in_types);
    free(bufs);
    free(ptrs);
    free(S);
    return c;
}

int cuda_emu_shares(const cuda_emu *e)
{
    return e->shares.n;
}

void cuda_emu_destroy(cuda_emu *e)
{
    if (!e)
        return;
    if (e->dl)
        dlclose(e->dl);
    xg_plan_destroy(e->plan);
    xg_shares_free(&e->shares);
    free(e->workspace);
    free(e);
}
