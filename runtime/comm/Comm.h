// The communicator the executor runs collectives through: MPI (MpiComm.h) or one process.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/Status.h"
#include "runtime/Tensor.h"

namespace plait::rt {

/// The collective instructions of plan.fbs, by kernel name.
enum class CollectiveKind : uint8_t { AllReduce, ReduceScatter, AllGather, Broadcast };
inline constexpr int kNumCollectiveKinds = 4;

/// "all_reduce", "reduce_scatter", "all_gather", "broadcast".
const char *collectiveKindName(CollectiveKind k);
/// The collective named `kernel`, or false when `kernel` is not a collective.
bool collectiveKindOf(std::string_view kernel, CollectiveKind &out);

/// A `groups` attribute (plan.fbs): ranks partitioned into equal groups, group-major
/// (ranks[g * groupSize + i] is member i of group g). A rank appears at most once; a rank
/// that appears nowhere takes no part.
struct RankGroups {
  std::vector<uint32_t> ranks;
  uint32_t groupSize = 0;

  uint32_t numGroups() const { return groupSize ? uint32_t(ranks.size() / groupSize) : 0; }
  /// Sets `group` and `index` (position within the group) of `rank`; false when it is in
  /// no group.
  bool locate(uint32_t rank, uint32_t &group, uint32_t &index) const;
  bool operator==(const RankGroups &o) const {
    return groupSize == o.groupSize && ranks == o.ranks;
  }
  bool operator<(const RankGroups &o) const {
    return groupSize != o.groupSize ? groupSize < o.groupSize : ranks < o.ranks;
  }
};

/// Bytes this rank sent, per kind of collective, under the ring model of
/// codegen/schema/CommModel.h (the compiler's report predicts the same numbers).
struct CommBytes {
  uint64_t byKind[kNumCollectiveKinds] = {};

  uint64_t of(CollectiveKind k) const { return byKind[static_cast<int>(k)]; }
  uint64_t total() const;
  /// Counts one collective over `groupSize` ranks whose whole buffer is `fullBytes`.
  void add(CollectiveKind k, uint64_t fullBytes, uint64_t groupSize);
};

/// One collective as this rank sees it, on raw element arrays. Reductions are sums; a mean
/// is the caller's division once the sum has completed.
struct CollectiveArgs {
  CollectiveKind kind = CollectiveKind::AllReduce;
  DType dtype = DType::F32;
  const void *send = nullptr; // all_reduce may pass send == recv (in place)
  void *recv = nullptr;       // broadcast: the buffer, sent from the root, received elsewhere
  /// Elements: the whole buffer (all_reduce, broadcast); this rank's chunk (reduce_scatter's
  /// result, all_gather's contribution).
  uint64_t count = 0;
  uint32_t root = 0;          // broadcast: the root's index within the group
};

/// The arguments of a `kind` collective from operand `x` into result `y` (broadcast: in place
/// on `y`, into which the caller copies `x` first), and in `fullBytes` the buffer the ring
/// model counts (CommModel.h). Shared by the CPU and CUDA executors.
CollectiveArgs collectiveArgsOf(CollectiveKind kind, uint32_t root, const TensorView &x,
                                const TensorView &y, uint64_t &fullBytes);

/// A started collective; valid until it is waited for.
using CommRequest = uint32_t;
/// A group partition interned by Communicator::group.
using CommGroup = uint32_t;

/// Collectives over the ranks of one job. Not thread-safe: the executor's thread makes
/// every call (MPI_THREAD_FUNNELED).
class Communicator {
public:
  virtual ~Communicator() = default;
  virtual uint32_t rank() const = 0;
  virtual uint32_t size() const = 0;

  /// The communicator for this rank's group under `groups`, created on first use of that
  /// partition. Collective over all ranks: every rank must ask for the same partitions in
  /// the same order, which holds because every rank loads the same plan.
  virtual Status group(const RankGroups &groups, CommGroup &out) = 0;

  /// Starts `args` on this rank's group of `group` (the rank must be a member) without
  /// waiting for it. The buffers must stay untouched until wait() returns.
  virtual Status start(CommGroup group, const CollectiveArgs &args, CommRequest &out) = 0;
  /// Blocks until `request` has completed; the request is then released. Fails when it has
  /// not completed within the timeout (setTimeout): a peer has died or stalled.
  virtual Status wait(CommRequest request) = 0;
  /// The longest wait() may block, in seconds (default: 300).
  virtual void setTimeout(double seconds) { (void)seconds; }
  /// Lets outstanding collectives progress (OpenMPI progresses non-blocking collectives only
  /// inside MPI calls); cheap when nothing is outstanding.
  virtual Status poll() = 0;
  /// Sizes the request bookkeeping for `count` collectives in flight at once, so that start()
  /// and wait() never grow it during a step (what MPI itself allocates is MPI's affair).
  virtual void reserveRequests(uint32_t count) { (void)count; }

  /// One line on how this run's reductions were carried (which algorithm, how many of
  /// each), for plait-run's summary; "" when there is nothing to say (one process).
  virtual std::string note() const { return {}; }

  /// Returns once every rank of the world has called it (whole-run bookkeeping such as the
  /// trace's common time origin, never the step's collectives).
  virtual Status barrier() = 0;
  /// Collective over the world: rank 0 receives every rank's `bytes`, by rank, in `gathered`;
  /// the other ranks get `gathered` empty. For end-of-run data (the trace), not for steps.
  virtual Status gatherToRoot(const std::string &bytes, std::vector<std::string> &gathered) = 0;
};

/// Sums `count` int64 values over every rank of `comm` into `recv` (an all-reduce on the
/// whole world, under the wait() deadline). Collective: every rank calls it at the same point.
/// For the runtime's own bookkeeping (checkpoint agreement, the launch check), not plans.
Status sumOverWorld(Communicator &comm, const int64_t *send, int64_t *recv, uint64_t count);

/// A communicator for one process standing as rank `rank` of `size`: only groups of one
/// rank can run, as local copies. With size > 1 it lets single-process code (tests, loaders)
/// act as any rank of a plan for everything but communication.
std::unique_ptr<Communicator> makeLocalComm(uint32_t rank = 0, uint32_t size = 1);

} // namespace plait::rt
