/*
 * The CUDA target's launch geometry (geometry.h's numbers as the table
 * planning reads through the backend's geometry slot). A leaf of the
 * target: backend.c (planning, rendering) and program.c (launching) both
 * read it.
 */
#include "geometry.h"

const xg_geometry xg_cuda_geometry = {
    .threads = XG_THREADS,
    .split_blocks = XG_SPLIT_BLOCKS,
    .col_tile = XG_COL_TILE,
    .col_split_max = XG_COL_SPLIT_MAX,
    .col_min_rows = XG_COL_MIN_ROWS,
    .row_min_chunk = XG_ROW_MIN_CHUNK,
    .argmax_block_k = XG_ARGMAX_BLOCK_K,
};
