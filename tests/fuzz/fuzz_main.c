/*
 * libFuzzer entry for one target of targets.h, chosen at build time
 * (-DXF_TARGET=xf_xg, ...): CMake builds fuzz_xg, fuzz_npy, fuzz_flags and
 * fuzz_disk from this file with -DXLAC_FUZZ=ON and CC=clang.
 */
#include <stddef.h>
#include <stdint.h>

#include "targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return XF_TARGET(data, size);
}
