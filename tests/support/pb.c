/* Protobuf encoding for hand-written test models (pb.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/pb.h"

void pb_raw(pb *p, const void *data, size_t n)
{
    if (p->n + n > p->cap) {
        p->cap = (p->n + n) * 2 + 64;
        p->b = realloc(p->b, p->cap);
        cr_assert_not_null(p->b);
    }
    if (n)
        memcpy(p->b + p->n, data, n);
    p->n += n;
}

static void pb_varint(pb *p, uint64_t v)
{
    uint8_t buf[10];
    size_t n = 0;
    do {
        buf[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    pb_raw(p, buf, n);
}

void pb_int(pb *p, int field, uint64_t v)
{
    pb_varint(p, (uint64_t)field << 3);
    pb_varint(p, v);
}

void pb_bytes(pb *p, int field, const void *data, size_t n)
{
    pb_varint(p, (uint64_t)field << 3 | 2);
    pb_varint(p, n);
    pb_raw(p, data, n);
}

void pb_str(pb *p, int field, const char *s)
{
    pb_bytes(p, field, s, strlen(s));
}

void pb_msg(pb *p, int field, pb *sub)
{
    pb_bytes(p, field, sub->b, sub->n);
    free(sub->b);
    *sub = (pb){0};
}

void pb_write_file(pb *p, const char *path)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(p->b, 1, p->n, f), p->n);
    cr_assert_eq(fclose(f), 0);
    free(p->b);
    *p = (pb){0};
}

void pb_value_info(pb *vi, const char *name, int dtype, const int64_t *dims, int rank)
{
    pb shape = {0}, tensor = {0}, type = {0};
    for (int d = 0; d < rank; d++) {
        pb dim = {0};
        pb_int(&dim, 1, (uint64_t)dims[d]);
        pb_msg(&shape, 1, &dim);
    }
    pb_int(&tensor, 1, (uint64_t)dtype);
    pb_msg(&tensor, 2, &shape);
    pb_msg(&type, 1, &tensor);
    if (name)
        pb_str(vi, 1, name);
    pb_msg(vi, 2, &type);
}

void pb_graph_value(pb *graph, int field, const char *name, int dtype, const int64_t *dims,
                    int rank)
{
    pb vi = {0};
    pb_value_info(&vi, name, dtype, dims, rank);
    pb_msg(graph, field, &vi);
}
