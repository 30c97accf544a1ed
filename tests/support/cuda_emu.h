/*
 * Runs the generated CUDA of a cluster on the CPU, for machines without a
 * GPU (CI): the CUDA C++ that NVRTC would compile is built by the host C++
 * compiler with a small emulation of the CUDA built-ins it uses (a block
 * is XG_THREADS POSIX threads, __syncthreads a barrier, __shared__ a static,
 * warp shuffles through a per-warp exchange, atomicAdd and __threadfence
 * the C11 atomics), and launched with the grids the GPU launcher computes
 * (xg_launch_blocks) for a device holding max_blocks blocks at once. Blocks
 * run one after another, so races between blocks are not explored; what is
 * checked is the index math, the reductions' combining and the counters.
 * The scalar math is scalar.h's CUDA branches (__CUDACC_RTC__ is defined,
 * as under NVRTC) on the host's libm: expf and tanhf, not the GPU's.
 */
#ifndef XLAC_TEST_CUDA_EMU_H
#define XLAC_TEST_CUDA_EMU_H

#include <stdbool.h>
#include <stdint.h>

#include "xlac/graph.h"
#include "xlac/status.h"
#include "xlac/tensor.h"

typedef struct cuda_emu cuda_emu;

/*
 * Plans and emits the CUDA program of body at in_types (shape-generic when
 * generic) and builds its emulation. Returns NULL with st set on failure.
 */
cuda_emu *cuda_emu_build(const xe_graph *body, const xe_type *in_types, bool generic, xe_status *st);

/*
 * Runs it on host inputs (the build types, or for a generic program any
 * of its pattern) on a device of max_blocks resident blocks; outputs are
 * new host tensors. The workspace persists between runs, as on the GPU.
 */
xe_code cuda_emu_run(cuda_emu *e, xe_tensor *const *inputs, xe_tensor **outputs, int64_t max_blocks,
                     xe_status *st);

/* How many steps launch an earlier step's kernel on their own buffers (codegen/plan/share.h). */
int cuda_emu_shares(const cuda_emu *e);
void cuda_emu_destroy(cuda_emu *e);

#endif
