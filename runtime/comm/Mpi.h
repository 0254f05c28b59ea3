// MPI for this process: whether mpirun launched it, initialising and ending MPI, and the
// MPI communicator (OpenMPI's non-blocking collectives). Callers never include <mpi.h>.
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/Status.h"
#include "runtime/comm/Comm.h"

namespace plait::rt::mpi {

/// The number of ranks mpirun started this process among (OMPI_COMM_WORLD_SIZE), or 0 when
/// mpirun did not start it. Read from the environment: MPI need not be initialised.
uint32_t launchedWorldSize();

/// Initialises MPI (MPI_THREAD_FUNNELED) unless it already is, e.g. by a test's main.
Status initialize();

/// MPI is initialised and not finalised.
bool active();

/// Finalises MPI if initialize() initialised it. Every rank must get here (it synchronises).
void finalize();

/// Ends every rank of the job with exit code `code` (MPI_Abort on MPI_COMM_WORLD): how one
/// rank's error stops ranks that would otherwise wait for it forever. Requires active().
[[noreturn]] void abortJob(int code);

/// A communicator over all ranks of MPI_COMM_WORLD (requires active()). MPI errors come
/// back as Status, naming the MPI call, instead of aborting.
Status makeWorldComm(std::unique_ptr<Communicator> &out);

} // namespace plait::rt::mpi
