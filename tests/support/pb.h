/*
 * A few lines of protobuf encoding for tests that write ONNX models by
 * hand (test_onnx_load, test_hostile_onnx, test_fuzz_findings, ...): no onnx package needed.
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
/* ValueInfoProto {name (none when NULL), tensor type dtype [dims]} written into vi. */
void pb_value_info(pb *vi, const char *name, int dtype, const int64_t *dims, int rank);
/* The same appended to graph as GraphProto field `field` (11 input, 12 output). */
void pb_graph_value(pb *graph, int field, const char *name, int dtype, const int64_t *dims,
                    int rank);
/* Writes p's bytes to path (the whole file) and frees p; fails the test when it cannot. */
void pb_write_file(pb *p, const char *path);

#endif
