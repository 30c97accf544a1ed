/*
 * Transposed planes (executor/devices/cpu/planes.c), the CPU's NCHW <-> NHWC conversion, and
 * the engine's reorders that use it (dnnl_engine.c). The transpose is checked element by element
 * against the definition dst[i][c][r] = src[i][r][c] for every element size it specialises (1, 2,
 * 4, 8 bytes in tiles; 16, 32, 64 as channel blocks) and one it does not (3), at sizes that fill
 * its tiles (16-, 8- and 4-wide for 4-byte elements) and 64- or 16-element blocks exactly, leave
 * edges in both directions that the narrower tiles take in part (24 x 40, 31 x 47), and have a
 * side of 1; the values are distinct per position, so a misplaced element cannot pass. The
 * reorders: xe_dnnl_reorder_run between plain NCHW and NHWC, and between either and the dense
 * channel-blocked nChw8c and nChw16c (which take the planes), must give what oneDNN's own reorder
 * primitive gives, run directly; so must those whose last channel block is padded (C = 19, 3),
 * which stay oneDNN's.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/dnnl_engine.h"
#include "cpu/planes.h"

TestSuite(planes, .timeout = 60);

/* Fills n bytes with a pattern distinct per position (a 32-bit counter, bytes mixed in). */
static void fill(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 2654435761u >> 13);
}

/* Checks one transpose of n planes of rows x cols elements of es bytes. */
static void check_transpose(int64_t n, int64_t rows, int64_t cols, size_t es)
{
    size_t bytes = (size_t)(n * rows * cols) * es;
    uint8_t *src = malloc(bytes), *dst = malloc(bytes);
    cr_assert(src && dst);
    fill(src, bytes);
    memset(dst, 0xEE, bytes);
    xe_cpu_transpose_planes(src, dst, n, rows, cols, es);
    size_t bad = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) {
                size_t from = (size_t)((i * rows + r) * cols + c) * es;
                size_t to = (size_t)((i * cols + c) * rows + r) * es;
                bad += memcmp(src + from, dst + to, es) != 0;
            }
    cr_expect_eq(bad, 0, "n %lld, %lld x %lld, %zu-byte elements: %zu misplaced", (long long)n,
                 (long long)rows, (long long)cols, es, bad);
    free(src);
    free(dst);
}

Test(planes, transposes_every_element_size_and_edge)
{
    static const int64_t shapes[][3] = {
        {1, 16, 16},  {1, 64, 64},   {2, 128, 64},  {1, 3, 4096}, {8, 32, 4096}, {3, 4096, 32},
        {1, 1, 1},    {1, 1, 77},    {1, 77, 1},    {2, 65, 63},  {1, 17, 129},  {4, 256, 49},
        {2, 49, 256}, {1, 200, 300}, {1, 300, 200}, {5, 7, 9},    {1, 24, 40},   {2, 8, 1000},
        {2, 1000, 8}, {1, 31, 47},   {3, 12, 20},
    };
    static const size_t sizes[] = {1, 2, 3, 4, 8, 16, 32, 64};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t e = 0; e < sizeof sizes / sizeof sizes[0]; e++)
            check_transpose(shapes[s][0], shapes[s][1], shapes[s][2], sizes[e]);
}

/* A 4-D layout of dtype t: "abcd" (NCHW), "acdb" (NHWC) or a blocked one (nChw8c, nChw16c). */
static dnnl_memory_desc_t md_of(const dnnl_dims_t dims, dnnl_data_type_t t, dnnl_format_tag_t tag)
{
    dnnl_memory_desc_t md;
    cr_assert_eq(dnnl_memory_desc_init_by_tag(&md, 4, dims, t, tag), dnnl_success);
    return md;
}

/* xe_dnnl_reorder_run from -> to against oneDNN's reorder primitive run directly. */
static void check_reorder(const dnnl_dims_t dims, dnnl_data_type_t t, dnnl_format_tag_t from_tag,
                          dnnl_format_tag_t to_tag)
{
    dnnl_memory_desc_t from = md_of(dims, t, from_tag), to = md_of(dims, t, to_tag);
    size_t in_bytes = dnnl_memory_desc_get_size(&from), out_bytes = dnnl_memory_desc_get_size(&to);
    uint8_t *src = malloc(in_bytes), *ours = calloc(1, out_bytes), *theirs = calloc(1, out_bytes);
    cr_assert(src && ours && theirs);
    fill(src, in_bytes);
    if (t == dnnl_f32) /* finite floats: no NaN payloads for the primitive to touch */
        for (size_t i = 0; i < in_bytes / 4; i++)
            ((float *)(void *)src)[i] = (float)(int32_t)(i * 2654435761u >> 7) * 0.25f;
    xe_node node = {.name = (char *)"reorder"};
    xe_status st = {0};
    dnnl_primitive_t r;
    cr_assert_eq(xe_dnnl_reorder_make(&from, &to, &r, &node, &st), XE_OK, "%s", st.msg);
    cr_assert(r);
    cr_assert_eq(xe_dnnl_reorder_run(r, &from, src, &to, ours, &node, &st), XE_OK, "%s", st.msg);
    xe_dnnl_arg args[2] = {{DNNL_ARG_FROM, &from, src}, {DNNL_ARG_TO, &to, theirs}};
    cr_assert_eq(xe_dnnl_execute(r, args, 2, &node, &st), XE_OK, "%s", st.msg);
    cr_expect_eq(memcmp(ours, theirs, out_bytes), 0, "%lldx%lldx%lldx%lld: differs from oneDNN",
                 (long long)dims[0], (long long)dims[1], (long long)dims[2], (long long)dims[3]);
    dnnl_primitive_destroy(r);
    free(src);
    free(ours);
    free(theirs);
}

Test(planes, engine_reorders_match_onednn)
{
    static const dnnl_dim_t shapes[][4] = {
        {8, 32, 64, 64}, {1, 3, 224, 224}, {2, 19, 7, 5}, {1, 64, 1, 3}, {2, 48, 9, 13}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        check_reorder(shapes[s], dnnl_u8, dnnl_abcd, dnnl_acdb);
        check_reorder(shapes[s], dnnl_u8, dnnl_acdb, dnnl_abcd);
        check_reorder(shapes[s], dnnl_s8, dnnl_acdb, dnnl_abcd);
        check_reorder(shapes[s], dnnl_f32, dnnl_abcd, dnnl_acdb);
        check_reorder(shapes[s], dnnl_f32, dnnl_acdb, dnnl_abcd);
        static const dnnl_format_tag_t blocked[] = {dnnl_aBcd8b, dnnl_aBcd16b};
        static const dnnl_data_type_t types[] = {dnnl_f32, dnnl_u8, dnnl_s8};
        for (int b = 0; b < 2; b++)
            for (int t = 0; t < 3; t++) {
                check_reorder(shapes[s], types[t], dnnl_abcd, blocked[b]);
                check_reorder(shapes[s], types[t], dnnl_acdb, blocked[b]);
                check_reorder(shapes[s], types[t], blocked[b], dnnl_abcd);
                check_reorder(shapes[s], types[t], blocked[b], dnnl_acdb);
            }
    }
}
