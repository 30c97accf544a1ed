/*
 * The fuzz targets' bodies, shared by the libFuzzer drivers (fuzz_main.c,
 * built with -DXLAC_FUZZ=ON and clang) and the Criterion replay of every
 * input in tests/data/fuzz/ (test_fuzz_replay.c, in the normal build).
 * Each takes any bytes and must neither crash, leak, hang nor read out of
 * bounds; each returns 0.
 */
#ifndef XF_TARGETS_H
#define XF_TARGETS_H

#include <stddef.h>
#include <stdint.h>

/* .xg text: parse, infer shapes, write back and parse the text written. */
int xf_xg(const uint8_t *data, size_t size);
/* .npy bytes read through xe_npy_read (from a memfd). */
int xf_npy(const uint8_t *data, size_t size);
/* XLAC_AUTO_JIT and XLAC_FLAGS: the first line is one, the rest the other. */
int xf_flags(const uint8_t *data, size_t size);
/* A disk cache file: byte 0 picks whether a valid checksum is appended and which key is asked for. */
int xf_disk(const uint8_t *data, size_t size);
/* An ONNX model (imported, inferred, written as .xg) and the same bytes as a TensorProto .pb file. */
int xf_onnx(const uint8_t *data, size_t size);
/*
 * An ONNX model and its external data file, written into a private folder
 * (which also holds a symbolic link out of it and a FIFO) and loaded by
 * path: the 4-byte little-endian model length, the model, then the data.
 */
int xf_onnx_ext(const uint8_t *data, size_t size);

#endif
