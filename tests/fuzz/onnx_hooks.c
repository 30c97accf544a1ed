/*
 * libFuzzer's custom mutator and cross-over for the onnx and onnx_ext
 * targets (built into fuzz_onnx, and with -DXM_EXT into fuzz_onnx_ext): a
 * model is mutated by structure (onnx_mutate.h) three times in four, by
 * libFuzzer's own byte mutations otherwise and whenever it does not
 * unpack or grows too large, so that malformed protobuf stays in reach.
 * onnx_ext's input is framed (targets.h): the 4-byte little-endian model
 * length, the model, the external data file; the model part is mutated by
 * structure, the data file by bytes, and the frame is written again.
 * Nothing here touches a file.
 */
#include <stdlib.h>
#include <string.h>

#include "onnx_mutate.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1, const uint8_t *data2,
                                 size_t size2, uint8_t *out, size_t max_out_size,
                                 unsigned int seed);

/* A model mutated in place: by structure mostly, by bytes when that cannot be done. */
static size_t mutate_model(uint8_t *data, size_t size, size_t max_size, unsigned seed)
{
    size_t n = seed % 4 ? xm_mutate(data, size, max_size, seed) : 0;
    return n ? n : LLVMFuzzerMutate(data, size, max_size);
}

#ifndef XM_EXT

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    return mutate_model(data, size, max_size, seed);
}

size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1, const uint8_t *data2,
                                 size_t size2, uint8_t *out, size_t max_out_size, unsigned int seed)
{
    return xm_cross_over(data1, size1, data2, size2, out, max_out_size, seed);
}

#else

/* The model's length in a frame of size bytes (cut to what there is, as xf_onnx_ext does). */
static size_t model_len(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    size_t n =
        (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 | (size_t)data[3] << 24;
    return n > size - 4 ? size - 4 : n;
}

static size_t frame(uint8_t *out, const uint8_t *model, size_t n, const uint8_t *ext, size_t m)
{
    uint8_t len[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
    memmove(out + 4 + n, ext, m);
    memmove(out + 4, model, n);
    memcpy(out, len, 4);
    return 4 + n + m;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    size_t n = model_len(data, size), m = size >= 4 ? size - 4 - n : 0;
    if (size < 4 || max_size < size || seed % 8 == 0) /* the frame itself */
        return LLVMFuzzerMutate(data, size, max_size);
    uint8_t *buf = malloc(max_size);
    if (!buf)
        return LLVMFuzzerMutate(data, size, max_size);
    size_t out;
    if (seed % 8 == 1) { /* the data file */
        memcpy(buf, data + 4 + n, m);
        size_t m2 = LLVMFuzzerMutate(buf, m, max_size - 4 - n);
        out = frame(data, data + 4, n, buf, m2);
    } else {
        memcpy(buf, data + 4, n);
        size_t n2 = mutate_model(buf, n, max_size - 4 - m, seed);
        out = frame(data, buf, n2, data + 4 + n, m);
    }
    free(buf);
    return out;
}

size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1, const uint8_t *data2,
                                 size_t size2, uint8_t *out, size_t max_out_size, unsigned int seed)
{
    size_t n1 = model_len(data1, size1), m1 = size1 >= 4 ? size1 - 4 - n1 : 0,
           n2 = model_len(data2, size2);
    if (size1 < 4 || size2 < 4 || max_out_size < 4 + m1)
        return 0;
    size_t n = xm_cross_over(data1 + 4, n1, data2 + 4, n2, out + 4, max_out_size - 4 - m1, seed);
    if (!n)
        return 0;
    memcpy(out + 4 + n, data1 + 4 + n1, m1); /* the first one's data file */
    uint8_t len[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
    memcpy(out, len, 4);
    return 4 + n + m1;
}

#endif
