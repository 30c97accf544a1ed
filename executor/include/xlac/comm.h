/*
 * Ranks and collectives: the small interface between the collective ops
 * (all_reduce, all_gather, reduce_scatter, broadcast) and the engine that
 * moves the bytes. The executor library knows no MPI: by default it has
 * one rank (world size 1, every collective an identity or a copy). A
 * program launched by MPI (xlac-run, executor/tools/cli/mpi/comm_mpi.c) installs an
 * xe_comm whose functions call MPI before it parses a graph, since the
 * world size is part of shape inference (all_gather, reduce_scatter).
 */
#ifndef XLAC_COMM_H
#define XLAC_COMM_H

#include <stddef.h>

#include "xlac/dtype.h"
#include "xlac/status.h"

/* How all_reduce and reduce_scatter combine the ranks' values. */
typedef enum xe_reduce_op {
    XE_REDUCE_SUM,  /* elementwise sum */
    XE_REDUCE_MEAN, /* sum divided by the world size (integers: floor division) */
    XE_REDUCE_MAX,  /* elementwise maximum */
    XE_REDUCE_MIN,  /* elementwise minimum */
} xe_reduce_op;

/*
 * One engine. Counts are elements of dtype dt. mean never reaches an
 * engine: the kernels ask for a sum and divide. Every function returns
 * XE_OK or fails with a message that names the collective.
 */
typedef struct xe_comm {
    const char *name; /* "mpi", "single" (world size 1): for messages */
    int rank, size;   /* this process's rank in [0, size) */
    void *self;       /* the engine's state */
    /* out[i] = op over ranks of in[i], i < count; in may equal out */
    xe_code (*all_reduce)(void *self, const void *in, void *out, size_t count, xe_dtype dt,
                          xe_reduce_op op, xe_status *st);
    /* out = concatenation over ranks of in (count elements each) */
    xe_code (*all_gather)(void *self, const void *in, void *out, size_t count, xe_dtype dt,
                          xe_status *st);
    /* out = slice `rank` (count elements) of op over ranks of in (size * count elements) */
    xe_code (*reduce_scatter)(void *self, const void *in, void *out, size_t count, xe_dtype dt,
                              xe_reduce_op op, xe_status *st);
    /* buf (count elements) on every rank becomes root's */
    xe_code (*broadcast)(void *self, void *buf, size_t count, xe_dtype dt, int root, xe_status *st);
} xe_comm;

/* Installs the engine (NULL: back to world size 1). The caller keeps c alive. */
void xe_comm_set(const xe_comm *c);
/* The engine in use; never NULL (the world-size-1 one by default). */
const xe_comm *xe_comm_get(void);
int xe_comm_rank(void);
int xe_comm_size(void);
/* Parses "sum" "mean" "max" "min"; -1 otherwise. */
int xe_reduce_op_parse(const char *s);
const char *xe_reduce_op_name(xe_reduce_op op);

#endif
