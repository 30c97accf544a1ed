/*
 * The C backend: C11 with OpenMP, compiled by the system compiler (cc.c)
 * into a shared object that is written to a private temp file and
 * dlopen'ed; a kernel is a C function void xg_kN(void *const *B, const
 * int64_t *S) called on the executor's thread, OpenMP sharing its loops.
 * Rows are whole threads, so a row kernel needs no block combine and no
 * barrier; loops of rank > 1 run as a row nest with a simd inner loop.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile.h"
#include "emit_impl.h"
#include "fpenv.h"
#include "program_impl.h"
#include "scalar.h" /* the CPU column-reduction rule, shared with the per-op kernel */

typedef void (*xg_c_kernel)(void *const *B, const int64_t *S);

/* ---- emitter hooks ---------------------------------------------------------------- */

/*
 * What generated C needs of <math.h>, <stdint.h> and <stdlib.h>, declared
 * directly under GCC and clang (their predefined type macros and
 * builtins): parsing the three headers was about 7 ms of every compile.
 * A declaration that matches a builtin keeps the builtin's meaning
 * (inlined sqrt, vectorised calls, constant folding), so the code is the
 * same as with the headers. Other compilers include the headers.
 */
static const char libc_declarations[] =
    "#if defined(__GNUC__)\n"
    "#define XE_SCALAR_NO_LIBC_HEADERS 1\n"
    "typedef __INT8_TYPE__ int8_t;\ntypedef __UINT8_TYPE__ uint8_t;\ntypedef __INT16_TYPE__ "
    "int16_t;\n"
    "typedef __UINT16_TYPE__ uint16_t;\ntypedef __INT32_TYPE__ int32_t;\ntypedef __UINT32_TYPE__ "
    "uint32_t;\n"
    "typedef __INT64_TYPE__ int64_t;\ntypedef __UINT64_TYPE__ uint64_t;\ntypedef __SIZE_TYPE__ "
    "size_t;\n"
    "#define INT64_MAX __INT64_MAX__\n#define INT64_MIN (-__INT64_MAX__ - 1)\n"
    "#define INT32_MAX __INT32_MAX__\n#define INT32_MIN (-__INT32_MAX__ - 1)\n#define UINT32_MAX "
    "__UINT32_MAX__\n"
    "#define NULL ((void *)0)\nvoid *malloc(size_t);\nvoid free(void *);\n"
    "#define INFINITY (__builtin_inff())\n#define NAN (__builtin_nanf(\"\"))\n"
    "#define HUGE_VAL (__builtin_huge_val())\n#define HUGE_VALF (__builtin_huge_valf())\n"
    "#define isnan(x) __builtin_isnan(x)\n#define isinf(x) __builtin_isinf_sign(x)\n"
    "#define isfinite(x) __builtin_isfinite(x)\n#define signbit(x) __builtin_signbit(x)\n"
    "#define XG_M1(f) double f(double); float f##f(float);\n"
    "#define XG_M2(f) double f(double, double); float f##f(float, float);\n"
    "XG_M1(acos) XG_M1(acosh) XG_M1(asin) XG_M1(asinh) XG_M1(atan) XG_M1(atanh) XG_M1(cbrt) "
    "XG_M1(ceil)\n"
    "XG_M1(cos) XG_M1(cosh) XG_M1(erf) XG_M1(erfc) XG_M1(exp) XG_M1(exp2) XG_M1(expm1) "
    "XG_M1(fabs)\n"
    "XG_M1(floor) XG_M1(lgamma) XG_M1(log) XG_M1(log10) XG_M1(log1p) XG_M1(log2) XG_M1(logb)\n"
    "XG_M1(nearbyint) XG_M1(rint) XG_M1(round) XG_M1(sin) XG_M1(sinh) XG_M1(sqrt) XG_M1(tan) "
    "XG_M1(tanh)\n"
    "XG_M1(tgamma) XG_M1(trunc)\n"
    "XG_M2(atan2) XG_M2(copysign) XG_M2(fdim) XG_M2(fmax) XG_M2(fmin) XG_M2(fmod) XG_M2(hypot)\n"
    "XG_M2(nextafter) XG_M2(pow) XG_M2(remainder)\n"
    "double fma(double, double, double); float fmaf(float, float, float);\n"
    "double ldexp(double, int); float ldexpf(float, int); double scalbn(double, int); float "
    "scalbnf(float, int);\n"
    "double frexp(double, int *); float frexpf(float, int *); int ilogb(double); int "
    "ilogbf(float);\n"
    "double modf(double, double *); float modff(float, float *);\n"
    "long lrint(double); long lrintf(float); long lround(double); long lroundf(float);\n"
    "long long llrint(double); long long llrintf(float); long long llround(double); long long "
    "llroundf(float);\n"
    "#undef XG_M1\n#undef XG_M2\n"
    "#else\n#include <math.h>\n#include <stdint.h>\n#include <stdlib.h>\n#endif\n";

/*
 * The f16 row helpers (emit_f16_rows.c): vcvtph2ps / vcvtps2ph where the
 * compiler targets AVX-512 or F16C, by the builtins gcc and clang both
 * wrap in their intrinsics (<immintrin.h> adds 80 ms to a compile), and
 * scalar.h's conversions for the rest. Bit for bit xe_h2f / xe_f2h on
 * every half and every float, FTZ and DAZ set or not, but for the
 * signalling NaNs vcvtph2ps quiets (checked exhaustively; half.c's arrays
 * convert the same way).
 */
static const char f16_rows[] =
    "typedef short xg_v16hi __attribute__((vector_size(32)));\n"
    "typedef float xg_v16sf __attribute__((vector_size(64)));\n"
    "typedef short xg_v8hi __attribute__((vector_size(16)));\n"
    "typedef float xg_v8sf __attribute__((vector_size(32)));\n"
    "static inline void xg_h2f_row(const uint16_t *restrict h, float *restrict f, xg_idx n)\n"
    "{\n"
    "    xg_idx k = 0;\n"
    "#if defined(__AVX512F__)\n"
    "    for (; k + 16 <= n; k += 16) {\n"
    "        xg_v16hi v;\n"
    "        __builtin_memcpy(&v, h + k, sizeof v);\n"
    "        xg_v16sf w = __builtin_ia32_vcvtph2ps512_mask(v, (xg_v16sf){0}, (unsigned short)-1, "
    "4);\n"
    "        __builtin_memcpy(f + k, &w, sizeof w);\n"
    "    }\n"
    "#elif defined(__F16C__) && defined(__AVX__)\n"
    "    for (; k + 8 <= n; k += 8) {\n"
    "        xg_v8hi v;\n"
    "        __builtin_memcpy(&v, h + k, sizeof v);\n"
    "        xg_v8sf w = __builtin_ia32_vcvtph2ps256(v);\n"
    "        __builtin_memcpy(f + k, &w, sizeof w);\n"
    "    }\n"
    "#endif\n"
    "    for (; k < n; k++)\n"
    "        f[k] = xe_h2f_vec(h[k]);\n"
    "}\n"
    "static inline void xg_f2h_row(const float *restrict f, uint16_t *restrict h, xg_idx n)\n"
    "{\n"
    "    xg_idx k = 0;\n"
    "#if defined(__AVX512F__)\n"
    "    for (; k + 16 <= n; k += 16) {\n"
    "        xg_v16sf v;\n"
    "        __builtin_memcpy(&v, f + k, sizeof v);\n"
    "        xg_v16hi w = __builtin_ia32_vcvtps2ph512_mask(v, 0, (xg_v16hi){0}, (unsigned "
    "short)-1);\n"
    "        __builtin_memcpy(h + k, &w, sizeof w);\n"
    "    }\n"
    "#elif defined(__F16C__) && defined(__AVX__)\n"
    "    for (; k + 8 <= n; k += 8) {\n"
    "        xg_v8sf v;\n"
    "        __builtin_memcpy(&v, f + k, sizeof v);\n"
    "        xg_v8hi w = __builtin_ia32_vcvtps2ph256(v, 0);\n"
    "        __builtin_memcpy(h + k, &w, sizeof w);\n"
    "    }\n"
    "#endif\n"
    "    for (; k < n; k++)\n"
    "        h[k] = xe_f2h_vec(f[k]);\n"
    "}\n\n";

/* Whether any value of the plan is f16. */
static bool has_f16(const xg_plan *p)
{
    for (int k = 0; k < p->body->n_nodes; k++)
        if (p->types[k].dtype == XE_F16)
            return true;
    return false;
}

static void prelude_c(em *e)
{
    xg_out(e, "/* generated by xlac: C11 + OpenMP */\n%s\n", libc_declarations);
    xg_emit_scalar_text(e);
    xg_out(e, "typedef int64_t xg_idx; /* index math */\n");
    if (has_f16(e->p))
        xg_out(e, "%s", f16_rows);
    /* NaN-propagating max/min and wrapping integer sums as OpenMP reductions */
    xg_out(
        e,
        "#pragma omp declare reduction(xg_max_f32 : float : omp_out = xe_max_f32(omp_out, omp_in)) "
        "initializer(omp_priv = -1.0f / 0.0f)\n"
        "#pragma omp declare reduction(xg_min_f32 : float : omp_out = xe_min_f32(omp_out, omp_in)) "
        "initializer(omp_priv = 1.0f / 0.0f)\n"
        "#pragma omp declare reduction(xg_max_f64 : double : omp_out = xe_max_f64(omp_out, "
        "omp_in)) "
        "initializer(omp_priv = -1.0 / 0.0)\n"
        "#pragma omp declare reduction(xg_min_f64 : double : omp_out = xe_min_f64(omp_out, "
        "omp_in)) "
        "initializer(omp_priv = 1.0 / 0.0)\n"
        "#pragma omp declare reduction(xg_add_i64 : int64_t : omp_out = xe_add_i64(omp_out, "
        "omp_in)) "
        "initializer(omp_priv = 0)\n"
        "#pragma omp declare reduction(xg_mul_i64 : int64_t : omp_out = xe_mul_i64(omp_out, "
        "omp_in)) "
        "initializer(omp_priv = 1)\n\n");
}

/* A panel step's kernel also takes the panel's rows [r0, r1) (epilogue.c). */
static void signature_c(em *e, const char *name)
{
    if (e->panel)
        xg_out(e,
               "void %s(void *const *restrict B, const int64_t *restrict S, int64_t r0, int64_t "
               "r1)\n{\n"
               "    (void)S;\n",
               name);
    else
        xg_out(e, "void %s(void *const *restrict B, const int64_t *restrict S)\n{\n    (void)S;\n",
               name);
}

/*
 * The CPU's loop nest over root's shape: the rows (every dim but the last,
 * their indices from r) in parallel when there are enough of them, ix set
 * to the element (r, j). Returns the inner loop's pragma.
 */
static const char *nest_begin_c(em *e, int root, idx *ix)
{
    const xe_shape *sh = shape_of(e, root);
    char L[32];
    int64_t rows = xe_shape_numel(sh) / (sh->dims[sh->rank - 1] ? sh->dims[sh->rank - 1] : 1);
    bool outer =
        rows >= 16 || e->panel; /* enough rows to share among the threads (a panel: its own) */
    xg_dim_text(e, root, sh->rank - 1, L, sizeof L);
    xg_out(e, "    const xg_idx L = %s, R = L ? n / L : 0;\n", L);
    if (e->panel)
        xg_out(e, "    (void)R;\n    for (xg_idx r = r0; r < r1; r++) {\n");
    else if (outer)
        xg_out(e, "#pragma omp parallel for if (n >= 32768) schedule(static)\n");
    if (!e->panel)
        xg_out(e, "    for (xg_idx r = 0; r < R; r++) {\n");
    /* the row's multi-index: all dims but the last, from r */
    ix->rank = sh->rank;
    char stride[256] = "1";
    for (int d = sh->rank - 2; d >= 0; d--) {
        char dim[32];
        xg_dim_text(e, root, d, dim, sizeof dim);
        if (sh->dims[d] == 1)
            snprintf(ix->d[d], sizeof ix->d[d], "0");
        else if (d == 0)
            xg_let_index(e, ix->d[d], sizeof ix->d[d], "r / (%s)", stride);
        else
            xg_let_index(e, ix->d[d], sizeof ix->d[d], "(r / (%s)) %% %s", stride, dim);
        size_t u = strlen(stride);
        snprintf(stride + u, sizeof stride - u, "*%s", dim);
    }
    snprintf(ix->d[sh->rank - 1], sizeof ix->d[0], "%s", sh->dims[sh->rank - 1] == 1 ? "0" : "j");
    snprintf(ix->flat, sizeof ix->flat, "i");
    e->nest_l = e->p->generic ? 0 : sh->dims[sh->rank - 1]; /* i = r * L + j (idx_dim_from_row) */
    e->nest_rows = outer;
    return outer ? "#pragma omp simd\n"
                 : "#pragma omp parallel for simd if (parallel : n >= 32768) schedule(static)\n";
}

/*
 * C, a column reduction (scalar.h's rule, as the per-op kernel): tiles of
 * outputs (all of them when there are at most XE_COL_WIDE, so each
 * reduced row is read whole and in order), a
 * tile's rows accumulated into a stack array, simd across the tile. With
 * few tiles and many rows, the rows are also split into C chunks (a
 * number fixed by the shape, never by the thread count: the result is the
 * same on every machine), each chunk's sums written to a heap workspace
 * and combined in chunk order. If the workspace cannot be had, one chunk.
 */
static void emit_column_reduce_c(em *e, const xe_node *r, int x, const bool *mask, int node)
{
    red_ops ro = xg_red_ops_for(r->op, e->p->types[x].dtype);
    char fin[512], v[64];
    xg_out(e, "    const int64_t T = O <= XE_COL_WIDE ? O : XE_COL_TILE, tiles = T ? (O + T - 1) / "
              "T : 0;\n");
    xg_out(e, "    int64_t C = xe_column_chunks(tiles, K);\n");
    xg_out(e,
           "    %s *part = C > 1 ? malloc(sizeof(%s) * (size_t)(C * O)) : NULL;\n    if (!part)\n  "
           "  C = 1;\n",
           ro.acc_type, ro.acc_type);
    xg_out(e, "#pragma omp parallel for collapse(2) if (O * K >= 32768) schedule(static)\n");
    xg_out(e, "    for (int64_t tile = 0; tile < tiles; tile++)\n    for (int64_t c = 0; c < C; "
              "c++) {\n");
    xg_out(e, "    const int64_t ob = tile * T, oe = ob + T < O ? ob + T : O;\n");
    xg_out(e,
           "    const int64_t kb = xe_chunk_begin(K, C, c), ke = xe_chunk_begin(K, C, c + 1);\n");
    xg_out(e,
           "    %s accs[XE_COL_WIDE];\n    for (int64_t o = ob; o < oe; o++) accs[o - ob] = %s;\n",
           ro.acc_type, ro.init);
    xg_out(e, "    for (int64_t k = kb; k < ke; k++) {\n#pragma omp simd\n");
    xg_out(e, "    for (int64_t o = ob; o < oe; o++) {\n    %s acc = accs[o - ob];\n", ro.acc_type);
    xg_emit_accumulate(e, x, mask, "o", true, &ro, "acc");
    xg_out(e, "    accs[o - ob] = acc;\n    }\n    }\n");
    xg_out(
        e,
        "    if (C > 1) {\n    for (int64_t o = ob; o < oe; o++) part[c * O + o] = accs[o - ob];\n"
        "    continue;\n    }\n");
    xg_out(e, "    for (int64_t o = ob; o < oe; o++) {\n    %s acc = accs[o - ob];\n", ro.acc_type);
    xg_emit_finish(e, r, e->p->types[node].dtype, "acc", "K", fin, sizeof fin);
    xg_emit_store(e, node, "o", fin);
    xg_out(e, "    }\n    }\n    if (C > 1) {\n");
    xg_out(e, "#pragma omp parallel for if (O * C >= 32768) schedule(static)\n");
    xg_out(e, "    for (int64_t o = 0; o < O; o++) {\n    %s acc = %s;\n", ro.acc_type, ro.init);
    xg_out(e, "    for (int64_t c = 0; c < C; c++) {\n");
    snprintf(v, sizeof v, "part[c * O + o]");
    xg_emit_combine(e, &ro, "acc", v);
    xg_out(e, "    }\n");
    xg_emit_finish(e, r, e->p->types[node].dtype, "acc", "K", fin, sizeof fin);
    xg_emit_store(e, node, "o", fin);
    xg_out(e, "    }\n    }\n    free(part);\n");
}

static void reduce_c(em *e, int step, const xg_step *s, const xe_node *r, int x, const bool *mask)
{
    (void)step;
    xe_dtype dt = e->p->types[x].dtype;
    red_ops ro = xg_red_ops_for(r->op, dt);
    bool argmax = r->op == XE_OP_ARGMAX;
    char O[256], K[256], fin[512];
    xg_part_size(e, x, mask, false, O, sizeof O);
    xg_part_size(e, x, mask, true, K, sizeof K);
    xg_out(e, "    const int64_t O = %s, K = %s;\n", O, K);
    int node = s->outs[0];
    bool full = xe_shape_numel(&e->p->types[node].shape) == 1 && !argmax;
    if (full) { /* one output: threads and lanes split K */
        xg_out(e, "    %s acc = %s;\n", ro.acc_type, ro.init);
        xg_out(e,
               "#pragma omp parallel for simd reduction(%s : acc) if (parallel : K >= 32768) "
               "schedule(static)\n",
               ro.omp);
        xg_out(e, "    for (int64_t k = 0; k < K; k++) {\n");
        xg_emit_accumulate(e, x, mask, "0", false, &ro, "acc");
        xg_out(e, "    }\n");
        xg_emit_finish(e, r, e->p->types[node].dtype, "acc", "K", fin, sizeof fin);
        xg_emit_store(e, node, "0", fin);
        return;
    }
    if (s->column) {
        emit_column_reduce_c(e, r, x, mask, node);
        return;
    }
    xg_out(e, "#pragma omp parallel for if (O > 1 && O * K >= 32768) schedule(static)\n");
    xg_out(e, "    for (int64_t o = 0; o < O; o++) {\n");
    xg_emit_serial_reduce(e, r, x, mask, node, false, true);
    xg_out(e, "    }\n");
}

/* ---- plan text ---------------------------------------------------------------- */

/* The layout of a chain's values (codegen/plan/layout.c), as the engine picks it per process. */
#define CONV_LAYOUT "the engine's conv layout (NHWC with AVX-512, nChw8c blocks without)"

/* How library step i runs: a conv (its post-ops and layouts) or a matmul (its epilogue). */
static void library_text(const xg_plan *p, int i, char *buf, size_t len)
{
    const xg_step *s = &p->steps[i];
    if (p->body->nodes[s->outs[0]]->op == XE_OP_CONV2D) {
        xg_conv_epi ce;
        int m = s->outs[0];
        bool src = p->chained[p->body->nodes[m]->inputs[0]], dst = p->chained[m];
        snprintf(buf, len,
                 "oneDNN convolution primitive (f64: im2col and OpenBLAS), made once per program "
                 "with its constant weights packed once, on the OpenMP team%s%s",
                 xg_conv_epilogue(p, i, &ce) ? "; the next step runs inside it as post-ops" : "",
                 src && dst ? "; input and output in " CONV_LAYOUT ", no conversion"
                 : src      ? "; input in " CONV_LAYOUT ", output converted to NCHW"
                 : dst      ? "; input converted from NCHW, output in " CONV_LAYOUT
                            : "");
    } else if (i + 1 < p->n_steps && p->steps[i + 1].panel)
        snprintf(
            buf, len,
            "oneDNN matmul primitive (f32; f64: OpenBLAS), the whole product on the OpenMP "
            "team; then its epilogue (the next step%s) over the product's rows, a range per thread",
            i + 2 < p->n_steps && p->steps[i + 2].panel ? "s" : "");
    else
        snprintf(buf, len,
                 "oneDNN matmul primitive (f32), or OpenBLAS gemm (one thread each) over batch "
                 "elements and row or column blocks in an OpenMP loop (f64)");
}

/* Step i's part in a fused attention (codegen/plan/attention.c), when it has one. */
static bool attention_text(const xg_plan *p, int i, char *buf, size_t len)
{
    int first = p->steps[i].attention ? i : xg_attention_start(p, i);
    if (first < 0)
        return false;
    int pv = xg_attention_product(p, first);
    char a[32], b[32];
    xg_step_name(first, a, sizeof a);
    xg_step_name(pv, b, sizeof b);
    if (i == first)
        snprintf(
            buf, len,
            "fused attention with the steps up to %s: each thread takes a range of the scores' "
            "rows in blocks (at most 64 rows and 128 KiB of scores, inside one batch matrix); per "
            "block, "
            "a single-threaded OpenBLAS sgemm writes the block's scores into the thread's tile, "
            "the steps up to %s run on "
            "it, and %s multiplies it by V into the output; the scores are never written whole",
            b, b, b);
    else if (i == pv)
        snprintf(
            buf, len,
            "the product of the fused attention %s with V, a block of rows at a time (OpenBLAS "
            "sgemm on the thread's tile)",
            a);
    else
        snprintf(
            buf, len,
            "on each block of rows of the fused attention %s, in the thread's tiles, simd along "
            "each row",
            a);
    return true;
}

/* How the C program runs step i: what the OpenMP threads share, and how many. */
static void launch_text_c(const xg_plan *p, int i, char *buf, size_t len)
{
    const xg_step *s = &p->steps[i];
    const xe_shape *os = &p->types[s->outs[0]].shape;
    bool per_block;
    int64_t items = xg_step_items(p, i, p->types, NULL, &per_block);
    char n[64];
    int view;
    if (attention_text(p, i, buf, len))
        return;
    if (s->panel) {
        snprintf(buf, len,
                 "on the matmul's rows, with the steps beside it, a range of rows per thread, simd "
                 "along each row");
        return;
    }
    switch (s->kind) {
    case XG_STEP_LIBRARY:
        library_text(p, i, buf, len);
        return;
    case XG_STEP_LOOP:
        if ((view = xg_step_view_source(p, i)) >= 0) {
            snprintf(buf, len, "none: a view of %s's buffer (a reshape), not a copy",
                     p->body->nodes[view]->name);
            return;
        }
        xg_items_text(p, items, "elements", n, sizeof n);
        snprintf(buf, len, "OpenMP parallel for over %s (rows, or elements), simd inside", n);
        return;
    case XG_STEP_REDUCE:
        if (xg_step_is_split(p, i, p->types)) {
            xg_items_text(p, items, "input elements", n, sizeof n);
            snprintf(buf, len, "OpenMP parallel for simd reduction over %s", n);
        } else if (s->column) {
            xg_items_text(p, xe_shape_numel(os), "outputs", n, sizeof n);
            snprintf(
                buf, len,
                "OpenMP parallel for over tiles of %s (one tile up to %d, else tiles of %d), each "
                "accumulating its rows, simd across the tile; with fewer than %d tiles and %d rows "
                "or more, "
                "the rows split into up to %d chunks whose partials are combined in chunk order",
                n, XE_COL_WIDE, XE_COL_TILE, XE_COL_FEW_TILES, 2 * XE_COL_CHUNK_ROWS,
                XE_COL_CHUNKS);
        } else {
            xg_items_text(p, items, "outputs", n, sizeof n);
            snprintf(buf, len, "OpenMP parallel for over %s, simd over each reduced range", n);
        }
        return;
    default:
        xg_items_text(p, items, "rows", n, sizeof n);
        snprintf(buf, len, "OpenMP parallel for over %s, simd over each row", n);
        return;
    }
}

/* ---- compile, load, launch, unload ---------------------------------------------------- */

static int no_arch(int requested)
{
    (void)requested;
    return 0;
}

static int no_device_arch(xe_device dev)
{
    (void)dev;
    return 0;
}

static const char *compiler_id_c(const xg_options *o, bool *known)
{
    return xg_cc_version(o->cc, o->tmp_dir, o->compile_timeout_s, known);
}

static bool compiler_stamp_c(const xg_options *o, xe_text *out)
{
    return xg_cc_stamp(o->cc, out);
}

static void target_text_c(const xg_artifact *a, char *buf, size_t len)
{
    (void)a;
    snprintf(buf, len, "c");
}

static const char *code_ext_c(const xg_artifact *a)
{
    (void)a;
    return "so";
}

static const char *compiler_words_c(bool is_ptx)
{
    (void)is_ptx;
    return "cc";
}

static xe_code compile_c(xg_artifact *a, const xg_options *o, xe_status *st)
{
    return xg_cc_compile(o->cc, o->tmp_dir, a->source, o->fast_math, o->compile_timeout_s, &a->code,
                         &a->code_len, &a->log, st);
}

/*
 * Keeps the OpenMP runtime a module brought in (gcc's libgomp or LLVM's
 * libomp, when the host process did not have it) loaded for good: its
 * worker threads outlive the module, so unloading it with the last module
 * would pull the code from under them (and its allocations would show as
 * leaks of an unknown module).
 */
static void pin_openmp_runtime(void)
{
    static const char *const names[] = {"libgomp.so.1", "libomp.so.5", "libomp.so"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *h = dlopen(names[i], RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE); /* only if loaded */
        if (h)
            dlclose(h); /* NODELETE stays */
    }
}

/* The shared object through a private temp file (0600), then its kernels by name. */
static xe_code load_c(xg_program *p, const xg_artifact *a, const xg_options *o, xe_status *st)
{
    const char *tmp = o->tmp_dir;
    char path[512];
    snprintf(path, sizeof path, "%s/xlac-so-XXXXXX", tmp);
    int fd = mkstemp(
        path); /* written through its descriptor: the name is never opened again for writing */
    if (fd < 0)
        return xe_fail(st, XE_ERR_COMPILE, "cannot create a temp file in %s: %m", tmp);
    xe_code c = xg_write_fd(fd, path, a->code, a->code_len, st);
    xg_fpenv env; /* a constructor (crtfastmath.o) must not set FTZ/DAZ for the process */
    xg_fpenv_save(&env);
    if (c == XE_OK && !(p->priv = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
        c = xe_fail(st, XE_ERR_COMPILE, "dlopen of the compiled cluster failed: %s", dlerror());
    xg_fpenv_restore(&env);
    if (c == XE_OK)
        pin_openmp_runtime();
    unlink(path); /* the mapping stays valid */
    for (int i = 0; c == XE_OK && i < p->plan->n_steps; i++) {
        char name[32];
        if (p->plan->steps[i].kind == XG_STEP_LIBRARY)
            continue;
        xg_step_name(xg_program_kernel_step(p, i), name, sizeof name);
        if (!(p->fn[i] = dlsym(p->priv, name)))
            c = xe_fail(st, XE_ERR_COMPILE, "compiled cluster lacks kernel %s", name);
    }
    return c;
}

static xe_code launch_c(xg_program *p, int step, const xe_type *types, void *const *ptrs,
                        const int64_t *S, xe_status *st)
{
    (void)types, (void)st;
    ((xg_c_kernel)p->fn[step])(ptrs, S);
    return XE_OK;
}

typedef void (*xg_c_panel_kernel)(void *const *B, const int64_t *S, int64_t r0, int64_t r1);

static void run_rows_c(xg_program *p, int step, void *const *ptrs, const int64_t *S, int64_t r0,
                       int64_t r1)
{
    ((xg_c_panel_kernel)p->fn[step])(ptrs, S, r0, r1);
}

static void unload_c(xg_program *p)
{
    if (p->priv)
        dlclose(p->priv);
    p->priv = NULL;
}

const xg_backend xg_backend_c = {
    .info =
        {.name = "c", .device = "cpu", .uses_arch = false, .system_cc = true, .host_program = true},
    .render =
        {
            .source_ext = "c",
            .restrict_kw = "restrict",
            .h2f = "xe_h2f_vec", /* xe_h2f's branches kept a fused f16 loop scalar: 100 ms where the
                                    per-op kernels took 11 */
            .f2h = "xe_f2h_vec",
            .f16_round = "xe_f16_round_vec", /* half the operations of the two: an fp16 BERT */
            .h2f_row = "xg_h2f_row",
            .f2h_row = "xg_f2h_row",
            .f16_word_gather = true,
            .opaque_pow2_strides =
                true, /* a transposed read's gelu: 10 ms scalar, 1.9 vectorized */
            .flat_loop =
                "#pragma omp parallel for simd if (parallel : n >= 32768) schedule(static)\n"
                "    for (xg_idx i = 0; i < n; i++) {\n",
            .rows_loop = "#pragma omp parallel for if (O > 1 && O * K >= 32768) schedule(static)\n"
                         "    for (xg_idx o = 0; o < O; o++) {\n",
            .panel_rows_loop = "    for (xg_idx o = r0; o < r1; o++) {\n",
            .pass_loop = "    for (xg_idx k = 0; k < K; k++) {\n",
            .barrier = NULL,
            .first_thread = "",
            .shared_kw = NULL,
            .simd_pragmas = true,
            .row_cache = true,
            .narrow_index = false,
            .prelude = prelude_c,
            .kernel_signature = signature_c,
            .nest_begin = nest_begin_c,
            .reduce = reduce_c,
            .block_reduce = NULL,
            .plan_header = NULL,
            .launch_text = launch_text_c,
        },
    .compiler =
        {
            .arch = no_arch,
            .compiler_id = compiler_id_c,
            .compiler_stamp = compiler_stamp_c,
            .target_text = target_text_c,
            .code_ext = code_ext_c,
            .compiler_words = compiler_words_c,
            .compile = compile_c,
            .assembly = NULL,
        },
    .runner =
        {
            .device_arch = no_device_arch,
            .load = load_c,
            .launch = launch_c,
            .run_rows = run_rows_c,
            .conv_epilogue = xg_c_conv_epilogue,
            .attention = xg_c_attention,
            .unload = unload_c,
        },
};
