// NCCL communicators for the CUDA executor: one per distinct rank partition of the plan
// (RankGroups), bootstrapped over the job's MPI communicator (the group's first member makes
// the ncclUniqueId, an MPI broadcast within the group hands it out), and the collectives
// themselves, enqueued on a stream.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <memory>

#include "runtime/comm/Comm.h"

struct ncclComm;

namespace plait::rt {

class NcclComms {
public:
  explicit NcclComms(Communicator &bootstrap) : bootstrap_(bootstrap) {}
  ~NcclComms();
  NcclComms(const NcclComms &) = delete;
  NcclComms &operator=(const NcclComms &) = delete;

  /// This rank's communicator under `groups`, created on first use of the partition. Every
  /// rank of the world must ask for the same partitions in the same order (as the plan lists
  /// them), since the bootstrap is collective. `out` is null for a rank in no group, and for
  /// groups of one rank, whose collectives are local copies (enqueue handles them).
  Status get(const RankGroups &groups, ncclComm *&out);

  /// Enqueues `args` on `stream` over `comm` (null: a group of one rank, a local copy).
  static Status enqueue(ncclComm *comm, const CollectiveArgs &args, cudaStream_t stream);

  /// The first asynchronous error any communicator reports (ncclCommGetAsyncError), if any.
  Status asyncError() const;

  /// Aborts every communicator (a peer died or a step timed out): pending collectives end.
  void abortAll();

private:
  Communicator &bootstrap_;
  std::map<RankGroups, ncclComm *> comms_;
};

} // namespace plait::rt
