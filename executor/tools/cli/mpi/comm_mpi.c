/*
 * The MPI engine: each collective is MPI's non-blocking one (MPI_Iallreduce,
 * MPI_Iallgather, MPI_Ireduce_scatter_block, MPI_Ibcast) waited on by a
 * polling loop with a deadline, so that a rank whose peer died or hangs
 * reports it (--collective-timeout) instead of blocking forever. The loop
 * yields the core while it waits: ranks are often more than cores
 * (mpirun --oversubscribe). The time spent waiting is counted for the
 * share of a step spent in collectives (xlac-run's time line).
 */
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <sched.h>
#include <time.h>

#include "comm_mpi.h"

typedef struct mpi_engine {
    xe_comm comm;     /* what xe_comm_set installs; comm.self points here */
    double timeout_s; /* 0: wait forever */
    double busy_us;   /* time inside collectives since the last reset */
} mpi_engine;

static mpi_engine engine;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

bool xe_mpi_launched(void)
{
    static const char *const vars[] = {
        "OMPI_COMM_WORLD_SIZE", "PMIX_RANK",          "PMI_RANK", "PMI_SIZE",
        "MPI_LOCALNRANKS",      "MV2_COMM_WORLD_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (getenv(vars[i]))
            return true;
    return false;
}

static MPI_Datatype mpi_type(xe_dtype dt)
{
    switch (dt) {
    case XE_F32:
        return MPI_FLOAT;
    case XE_F64:
        return MPI_DOUBLE;
    case XE_I32:
        return MPI_INT32_T;
    case XE_I64:
        return MPI_INT64_T;
    case XE_F16:
        return MPI_UINT16_T; /* moved, never reduced (infer refuses it) */
    default:
        return MPI_UINT8_T; /* bool */
    }
}

static MPI_Op mpi_op(xe_reduce_op op)
{
    return op == XE_REDUCE_MAX ? MPI_MAX : op == XE_REDUCE_MIN ? MPI_MIN : MPI_SUM;
}

static xe_code mpi_fail(int rc, const char *what, xe_status *st)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        len = 0;
    msg[len] = '\0';
    return xe_fail(st, XE_ERR_RUNTIME, "%s: MPI error %d (%s)", what, rc, msg);
}

/* Polls rq until it completes, MPI fails or the deadline passes. */
static xe_code wait_request(mpi_engine *e, MPI_Request *rq, const char *what, xe_status *st)
{
    double t0 = now_us(), deadline = t0 + e->timeout_s * 1e6;
    for (long spins = 0;; spins++) {
        int done = 0, rc = MPI_Test(rq, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, what, st);
        if (done)
            break;
        if (e->timeout_s > 0 && now_us() > deadline)
            return xe_fail(st, XE_ERR_RUNTIME,
                           "%s did not complete within %g s (--collective-timeout): another rank "
                           "died, failed or is stuck",
                           what, e->timeout_s);
        if (spins < 2000)
            sched_yield();
        else
            nanosleep(&(struct timespec){.tv_nsec = 50000}, NULL);
    }
    e->busy_us += now_us() - t0;
    return XE_OK;
}

/* MPI counts are ints: a larger operand is refused, not truncated. */
static bool too_big(size_t count, const char *what, xe_status *st)
{
    if (count <= INT_MAX)
        return false;
    xe_fail(st, XE_ERR_UNSUPPORTED, "%s: %zu elements is more than MPI's count limit (%d)", what,
            count, INT_MAX);
    return true;
}

/* Waits on the request a non-blocking call started (rc: the call's return). */
static xe_code finish(void *self, int rc, MPI_Request *rq, const char *what, xe_status *st)
{
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, what, st);
    return wait_request(self, rq, what, st);
}

static xe_code all_reduce(void *self, const void *in, void *out, size_t count, xe_dtype dt,
                          xe_reduce_op op, xe_status *st)
{
    MPI_Request rq;
    if (too_big(count, "MPI_Iallreduce", st))
        return st->code;
    int rc = MPI_Iallreduce(in == out ? MPI_IN_PLACE : in, out, (int)count, mpi_type(dt),
                            mpi_op(op), MPI_COMM_WORLD, &rq);
    return finish(self, rc, &rq, "MPI_Iallreduce", st);
}

static xe_code all_gather(void *self, const void *in, void *out, size_t count, xe_dtype dt,
                          xe_status *st)
{
    MPI_Request rq;
    if (too_big(count, "MPI_Iallgather", st))
        return st->code;
    int rc = MPI_Iallgather(in, (int)count, mpi_type(dt), out, (int)count, mpi_type(dt),
                            MPI_COMM_WORLD, &rq);
    return finish(self, rc, &rq, "MPI_Iallgather", st);
}

static xe_code reduce_scatter(void *self, const void *in, void *out, size_t count, xe_dtype dt,
                              xe_reduce_op op, xe_status *st)
{
    MPI_Request rq;
    if (too_big(count, "MPI_Ireduce_scatter_block", st))
        return st->code;
    int rc = MPI_Ireduce_scatter_block(in, out, (int)count, mpi_type(dt), mpi_op(op),
                                       MPI_COMM_WORLD, &rq);
    return finish(self, rc, &rq, "MPI_Ireduce_scatter_block", st);
}

static xe_code broadcast(void *self, void *buf, size_t count, xe_dtype dt, int root, xe_status *st)
{
    MPI_Request rq;
    if (too_big(count, "MPI_Ibcast", st))
        return st->code;
    int rc = MPI_Ibcast(buf, (int)count, mpi_type(dt), root, MPI_COMM_WORLD, &rq);
    return finish(self, rc, &rq, "MPI_Ibcast", st);
}

const xe_comm *xe_mpi_start(double timeout_s, xe_status *st)
{
    int provided = 0, rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Init_thread", st), NULL;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    engine = (mpi_engine){.timeout_s = timeout_s};
    engine.comm = (xe_comm){.name = "mpi",
                            .self = &engine,
                            .all_reduce = all_reduce,
                            .all_gather = all_gather,
                            .reduce_scatter = reduce_scatter,
                            .broadcast = broadcast};
    MPI_Comm_rank(MPI_COMM_WORLD, &engine.comm.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &engine.comm.size);
    return &engine.comm;
}

double xe_mpi_busy_us(void)
{
    return engine.busy_us;
}

void xe_mpi_reset_busy(void)
{
    engine.busy_us = 0;
}

/* After an error: whether every rank reaches a barrier within a few seconds. */
static bool all_failed(void)
{
    MPI_Request rq;
    xe_status st;
    mpi_engine e = {.timeout_s =
                        engine.timeout_s > 0 && engine.timeout_s < 5 ? engine.timeout_s : 5};
    return MPI_Ibarrier(MPI_COMM_WORLD, &rq) == MPI_SUCCESS &&
           wait_request(&e, &rq, "", &st) == XE_OK;
}

void xe_mpi_finish(int rc)
{
    if (rc == 0 || all_failed())
        MPI_Finalize();
    else
        MPI_Abort(MPI_COMM_WORLD, rc);
}
