/*
 * A few lines of protobuf encoding for tests that write ONNX models by
 * hand (test_onnx_load, test_onnx_collective): no onnx package needed.
 * A message is bytes appended to a growing buffer; a nested message is
 * written into its parent as a length-delimited field and freed.
 */
#ifndef XLAC_TEST_PB_H
#define XLAC_TEST_PB_H

#include <stddef.h>
#include <stdint.h>

typedef struct pb {
    uint8_t *b;
    size_t n, cap;
} pb;

void pb_raw(pb *p, const void *data, size_t n);
/* field = varint */
void pb_int(pb *p, int field, uint64_t v);
/* field = length-delimited bytes */
void pb_bytes(pb *p, int field, const void *data, size_t n);
void pb_str(pb *p, int field, const char *s);
/* field = sub (a nested message); sub is freed and left empty */
void pb_msg(pb *p, int field, pb *sub);
/* Writes p's bytes to path (the whole file) and frees p; fails the test when it cannot. */
void pb_write_file(pb *p, const char *path);

#endif
