/*
 * The MPI engine of the collective ops (xlac/comm.h), for programs that
 * run as one rank of an MPI job (xlac-run under mpirun). Built only when
 * CMake finds MPI (XE_HAVE_MPI); the executor library never links it.
 */
#ifndef XE_COMM_MPI_H
#define XE_COMM_MPI_H

#include <stdbool.h>

#include "xlac/comm.h"

/* Whether an MPI launcher (mpirun, mpiexec, srun with PMI) started this process. */
bool xe_mpi_launched(void);
/*
 * MPI_Init and the engine over MPI_COMM_WORLD. A collective that has not
 * completed after timeout_s seconds (0: never) fails with a message that
 * says a rank died or is stuck. NULL with st set when MPI cannot start.
 */
const xe_comm *xe_mpi_start(double timeout_s, xe_status *st);
/* Microseconds spent inside collectives since the last reset. */
double xe_mpi_busy_us(void);
void xe_mpi_reset_busy(void);
/*
 * MPI_Finalize after success, or after an error every rank reports within
 * a few seconds; MPI_Abort(rc) otherwise, so no rank waits for a failed one.
 */
void xe_mpi_finish(int rc);

#endif
