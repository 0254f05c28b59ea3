// Collective names, group lookup, byte counters, and the single-process communicator.
#include "runtime/comm/Comm.h"

#include <cstring>

#include "codegen/schema/CommModel.h"

namespace plait::rt {

CollectiveArgs collectiveArgsOf(CollectiveKind kind, uint32_t root, const TensorView &x,
                                const TensorView &y, uint64_t &fullBytes) {
  CollectiveArgs args;
  args.kind = kind;
  args.dtype = x.dtype;
  args.send = x.data;
  args.recv = y.data;
  switch (kind) {
  case CollectiveKind::AllReduce:
    args.count = uint64_t(x.numel());
    fullBytes = x.bytes();
    break;
  case CollectiveKind::ReduceScatter:
    args.count = uint64_t(y.numel());
    fullBytes = x.bytes();
    break;
  case CollectiveKind::AllGather:
    args.count = uint64_t(x.numel());
    fullBytes = y.bytes();
    break;
  case CollectiveKind::Broadcast:
    args.send = y.data;
    args.count = uint64_t(y.numel());
    args.root = root;
    fullBytes = y.bytes();
    break;
  }
  return args;
}

const char *collectiveKindName(CollectiveKind k) {
  switch (k) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::Broadcast:
    return "broadcast";
  }
  return "unknown";
}

bool collectiveKindOf(std::string_view kernel, CollectiveKind &out) {
  for (int k = 0; k < kNumCollectiveKinds; ++k)
    if (kernel == collectiveKindName(static_cast<CollectiveKind>(k))) {
      out = static_cast<CollectiveKind>(k);
      return true;
    }
  return false;
}

bool RankGroups::locate(uint32_t rank, uint32_t &group, uint32_t &index) const {
  for (size_t i = 0; i < ranks.size() && groupSize != 0; ++i)
    if (ranks[i] == rank) {
      group = uint32_t(i / groupSize);
      index = uint32_t(i % groupSize);
      return true;
    }
  return false;
}

uint64_t CommBytes::total() const {
  uint64_t sum = 0;
  for (uint64_t b : byKind)
    sum += b;
  return sum;
}

void CommBytes::add(CollectiveKind k, uint64_t fullBytes, uint64_t groupSize) {
  byKind[static_cast<int>(k)] += collectiveBytesSent(collectiveKindName(k), fullBytes, groupSize);
}

namespace {

/// Groups of one rank: every collective is a copy of the rank's own data (a sum or mean of
/// one value is that value), done at start.
class LocalComm final : public Communicator {
public:
  LocalComm(uint32_t rank, uint32_t size) : rank_(rank), size_(size) {}
  uint32_t rank() const override { return rank_; }
  uint32_t size() const override { return size_; }

  Status group(const RankGroups &groups, CommGroup &out) override {
    partitions_.push_back(groups);
    out = CommGroup(partitions_.size() - 1);
    return {};
  }

  Status start(CommGroup group, const CollectiveArgs &args, CommRequest &out) override {
    if (group >= partitions_.size())
      return Status::internal(fmt::format("collective on unknown group {}", group));
    uint32_t groupSize = partitions_[group].groupSize;
    if (groupSize != 1)
      return Status::errorf("{} over a group of {} ranks needs MPI, but this process runs "
                            "alone (rank {} of {}, not launched by mpirun)",
                            collectiveKindName(args.kind), groupSize, rank_, size_);
    // A group of one: reduce_scatter's chunk and all_gather's result are the whole buffer.
    size_t bytes = size_t(args.count) * dtypeSize(args.dtype);
    if (args.kind != CollectiveKind::Broadcast && args.send != args.recv && bytes != 0)
      std::memmove(args.recv, args.send, bytes);
    out = 0;
    return {};
  }

  Status wait(CommRequest) override { return {}; }
  Status poll() override { return {}; }

  // One process: nobody to wait for. Standing in for rank r of a larger world, it has only
  // its own bytes; rank 0 then gathers just those.
  Status barrier() override { return {}; }
  Status gatherToRoot(const std::string &bytes, std::vector<std::string> &gathered) override {
    gathered.clear();
    if (rank_ == 0)
      gathered.push_back(bytes);
    return {};
  }

private:
  uint32_t rank_, size_;
  std::vector<RankGroups> partitions_;
};

} // namespace

std::unique_ptr<Communicator> makeLocalComm(uint32_t rank, uint32_t size) {
  return std::make_unique<LocalComm>(rank, size);
}

Status sumOverWorld(Communicator &comm, const int64_t *send, int64_t *recv, uint64_t count) {
  RankGroups world;
  world.groupSize = comm.size();
  for (uint32_t r = 0; r < comm.size(); ++r)
    world.ranks.push_back(r);
  CommGroup all = 0;
  PLAIT_RETURN_IF_ERROR(comm.group(world, all)); // interned: the same communicator each time
  CollectiveArgs args;
  args.kind = CollectiveKind::AllReduce;
  args.dtype = DType::I64;
  args.send = send;
  args.recv = recv;
  args.count = count;
  CommRequest request;
  PLAIT_RETURN_IF_ERROR(comm.start(all, args, request));
  return comm.wait(request);
}

} // namespace plait::rt
