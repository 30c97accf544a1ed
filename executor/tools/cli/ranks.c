/*
 * xlac-run as one rank of an MPI job. Under an MPI launcher (mpirun,
 * mpiexec) each process starts MPI and installs its engine for the
 * collective ops before the graph is parsed, since the world size is part
 * of shape inference. Without a launcher, or in a build without MPI, the
 * world has one rank and a graph with collectives says so once on stderr.
 * Errors end the job: a failed rank waits a few seconds for the others to
 * fail too (an error every rank hits, such as a graph that differs across
 * ranks, then ends with exit code 1 everywhere), else aborts the job.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#ifdef XE_HAVE_MPI
#include "comm_mpi.h"
#endif

static int rank, world = 1;
static bool started;

int cli_rank(void)
{
    return rank;
}

int cli_world(void)
{
    return world;
}

bool cli_ranks_launched(void)
{
    return started;
}

static bool has_collectives(const xe_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const xe_op_def *d = xe_op_get(g->nodes[i]->op);
        if ((d && (d->flags & XE_OPF_COLLECTIVE)) ||
            (g->nodes[i]->body && has_collectives(g->nodes[i]->body)))
            return true;
    }
    return false;
}

xe_code cli_ranks_start(const cli_options *o, xe_status *st)
{
#ifdef XE_HAVE_MPI
    if (!xe_mpi_launched())
        return XE_OK;
    const xe_comm *c = xe_mpi_start(o->collective_timeout, st);
    if (!c)
        return st->code;
    started = true;
    rank = c->rank;
    world = c->size;
    xe_comm_set(c);
#else
    (void)o, (void)st;
#endif
    return XE_OK;
}

void cli_ranks_note(const xe_graph *g)
{
    if (started || !has_collectives(g))
        return;
#ifdef XE_HAVE_MPI
    fprintf(stderr, "xlac-run: not launched by mpirun: collectives run in a world of 1 rank\n");
#else
    fprintf(stderr, "xlac-run: built without MPI: collectives run in a world of 1 rank\n");
#endif
}

double cli_ranks_busy_us(bool reset)
{
#ifdef XE_HAVE_MPI
    double us = started ? xe_mpi_busy_us() : 0;
    if (reset && started)
        xe_mpi_reset_busy();
    return us;
#else
    (void)reset;
    return 0;
#endif
}

/*
 * XLAC_RUN_KILL_AT=RANK:STEP (tests only): that rank kills itself (SIGKILL)
 * before run STEP; RANK:STEP:hang makes it stop answering instead.
 */
void cli_ranks_test_kill(int step)
{
    const char *v = getenv("XLAC_RUN_KILL_AT");
    int r, k, n = 0;
    if (!v || sscanf(v, "%d:%d%n", &r, &k, &n) != 2 || r != rank || k != step)
        return;
    bool hang = strcmp(v + n, ":hang") == 0;
    fprintf(stderr, "xlac-run: rank %d: XLAC_RUN_KILL_AT: %s before run %d\n", rank,
            hang ? "hanging" : "killing myself", step);
    fflush(stderr);
    if (!hang)
        raise(SIGKILL);
    for (;;)
        pause();
}

int cli_ranks_finish(int rc)
{
#ifdef XE_HAVE_MPI
    if (started)
        xe_mpi_finish(rc);
#endif
    return rc;
}
