// MPI for this process: whether mpirun launched it, initialising and ending MPI, and the
// MPI communicator (OpenMPI's non-blocking collectives). Callers never include <mpi.h>.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

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

/// How float all-reduces and reduce-scatters are summed (plait-run --reduce-algorithm).
enum class ReduceAlgorithm : uint8_t {
  Auto,     ///< the pairwise exchange (PairwiseReduce.h) where pairwiseWins(), MPI's elsewhere
  Pairwise, ///< the pairwise exchange at every size
  Mpi,      ///< MPI's own non-blocking collectives at every size
};
/// "auto", "pairwise", "mpi".
const char *reduceAlgorithmName(ReduceAlgorithm a);

/// Under Auto, all-reduces over more than two ranks take the pairwise exchange from this many
/// bytes per rank's chunk (the buffer / the group size); below it Open MPI's own, whose
/// recursive doubling needs log2(p) round trips to the exchange's 2(p-1), were as fast or
/// faster on 4 ranks. Two ranks, and every reduce-scatter, take the exchange at every size:
/// Open MPI's non-blocking schedules cost more (bench/mpi_reductions.py measures both).
inline constexpr uint64_t kPairwiseMinChunkBytes = 256u << 10;

/// Whether Auto sums a `kind` collective whose whole buffer is `bytes` over `groupSize` ranks
/// pairwise; `oneNode`: every rank of the group shares one node's memory. A group across
/// nodes keeps Open MPI's own: the exchange sends every rank's chunks to every other rank, so
/// (p - ranks per node)/p of each rank's buffer crosses the network, where a ring crosses
/// each node's link with one buffer (a node-aware order is not written yet).
inline bool pairwiseWins(CollectiveKind kind, uint64_t bytes, uint32_t groupSize, bool oneNode) {
  if (groupSize < 2 || !oneNode)
    return false;
  return kind == CollectiveKind::ReduceScatter || groupSize == 2 ||
         bytes / groupSize >= kPairwiseMinChunkBytes;
}

struct MpiOptions {
  ReduceAlgorithm reduce = ReduceAlgorithm::Auto;
};

/// A communicator over all ranks of MPI_COMM_WORLD (requires active()). MPI errors come
/// back as Status, naming the MPI call, instead of aborting.
Status makeWorldComm(std::unique_ptr<Communicator> &out, const MpiOptions &options = {});

} // namespace plait::rt::mpi
