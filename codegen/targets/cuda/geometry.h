/*
 * Private to the CUDA target: its launch geometry and the layout of a
 * program's workspace, the numbers behind xg_cuda_geometry (geometry.c) that
 * planning reads through the backend's geometry slot (plan.h).
 */
#ifndef XG_CUDA_GEOMETRY_H
#define XG_CUDA_GEOMETRY_H

#include "plan.h"

/* Threads in a block of every generated CUDA kernel. */
#define XG_THREADS 256

/*
 * GPU reductions to one value are split over up to XG_SPLIT_BLOCKS blocks:
 * each writes a partial to the program's workspace (8 bytes each), the last
 * block to finish (it counts itself in) combines them.
 *
 * GPU column reductions work in tiles of XG_COL_TILE outputs (a warp
 * wide, so reads stay coalesced), the block's warps splitting the reduced
 * rows. When there are too few tiles to fill the device, the rows are also
 * split into chunks, a block per (tile, chunk), at most XG_COL_SPLIT_MAX
 * blocks: each writes its tile's partials to the workspace and the last
 * chunk of a tile to finish combines them, in chunk order. Row-order
 * reductions to a few outputs split each output's range the same way
 * (a block per output and chunk, a counter per output).
 *
 * Workspace: partials from byte 0, then unsigned counters from
 * XG_WS_COUNTERS (one per column tile, then the one-value split's). Every
 * counter is reset by the block that read it last, for the next launch.
 */
#define XG_SPLIT_BLOCKS 1024
#define XG_COL_TILE 32
#define XG_COL_SPLIT_MAX 2048
#define XG_COL_MIN_ROWS 64    /* rows of a chunk, at least */
#define XG_ROW_MIN_CHUNK 2048 /* row order: elements of a chunk, at least */
#define XG_WS_COUNTERS (XG_COL_SPLIT_MAX * XG_COL_TILE * 8)
#define XG_WS_SPLIT_COUNTER XG_COL_SPLIT_MAX /* index of the one-value split's counter */
#define XG_WORKSPACE_BYTES (XG_WS_COUNTERS + (XG_COL_SPLIT_MAX + 1) * 4)

/* GPU argmax: a block per output over rows of at least this many elements, else a thread per
 * output. */
#define XG_ARGMAX_BLOCK_K 128

/* The numbers above as the backend's data slot. */
extern const xg_geometry xg_cuda_geometry;

#endif
