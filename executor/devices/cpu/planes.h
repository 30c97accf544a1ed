/*
 * Transposed planes (planes.c): the CPU's NCHW <-> NHWC conversion.
 */
#ifndef XE_CPU_PLANES_H
#define XE_CPU_PLANES_H

#include <stddef.h>
#include <stdint.h>

/*
 * n planes of rows x cols elements of es bytes, from src (each plane row after row) into dst
 * (each plane column after column): dst[i][c][r] = src[i][r][c]. NCHW to NHWC is rows = C,
 * cols = H * W; NHWC to NCHW is rows = H * W, cols = C. With an element of a block of b channels
 * (es = b * the channel's size) NHWC to oneDNN's blocked nChw{b}c is rows = H * W, cols = C / b;
 * NCHW to it is n = N * C / b planes of rows = b, cols = H * W. src and dst must not overlap. Runs
 * on the OpenMP team once it moves enough bytes.
 */
void xe_cpu_transpose_planes(const void *src, void *dst, int64_t n, int64_t rows, int64_t cols,
                             size_t es);

#endif
