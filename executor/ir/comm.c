/*
 * The engine behind the collective ops (xlac/comm.h). Until a program
 * installs one (xlac-run under mpirun installs MPI's), the world has one
 * rank and every collective is an identity: all_reduce and reduce_scatter
 * copy their operand (a mean over one rank is the value), all_gather
 * copies it, broadcast from root 0 leaves it as it is.
 */
#include <stdatomic.h>
#include <string.h>

#include "xlac/comm.h"

static xe_code single_all_reduce(void *self, const void *in, void *out, size_t count, xe_dtype dt,
                                 xe_reduce_op op, xe_status *st)
{
    (void)self, (void)op, (void)st;
    if (in != out && count)
        memmove(out, in, count * xe_dtype_size(dt));
    return XE_OK;
}

static xe_code single_all_gather(void *self, const void *in, void *out, size_t count, xe_dtype dt,
                                 xe_status *st)
{
    return single_all_reduce(self, in, out, count, dt, XE_REDUCE_SUM, st);
}

static xe_code single_broadcast(void *self, void *buf, size_t count, xe_dtype dt, int root,
                                xe_status *st)
{
    (void)self, (void)buf, (void)count, (void)dt;
    if (root != 0)
        return xe_fail(st, XE_ERR_RUNTIME, "broadcast: root %d is not a rank of a world of 1",
                       root);
    return XE_OK;
}

static const xe_comm single = {
    .name = "single",
    .rank = 0,
    .size = 1,
    .all_reduce = single_all_reduce,
    .all_gather = single_all_gather,
    .reduce_scatter = single_all_reduce,
    .broadcast = single_broadcast,
};

static _Atomic(const xe_comm *) current = &single;

void xe_comm_set(const xe_comm *c)
{
    atomic_store(&current, c ? c : &single);
}

const xe_comm *xe_comm_get(void)
{
    return atomic_load(&current);
}

int xe_comm_rank(void)
{
    return xe_comm_get()->rank;
}

int xe_comm_size(void)
{
    return xe_comm_get()->size;
}

static const char *const reduce_names[] = {
    [XE_REDUCE_SUM] = "sum", /* keep in the order of xe_reduce_op */
    [XE_REDUCE_MEAN] = "mean",
    [XE_REDUCE_MAX] = "max",
    [XE_REDUCE_MIN] = "min",
};

int xe_reduce_op_parse(const char *s)
{
    for (int k = 0; s && k < (int)(sizeof reduce_names / sizeof *reduce_names); k++)
        if (strcmp(s, reduce_names[k]) == 0)
            return k;
    return -1;
}

const char *xe_reduce_op_name(xe_reduce_op op)
{
    return op <= XE_REDUCE_MIN ? reduce_names[op] : "?";
}
