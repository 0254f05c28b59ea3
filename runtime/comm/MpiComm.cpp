// The MPI communicator: one MPI communicator per group partition (MPI_Comm_split), collectives
// started with MPI_Iallreduce / MPI_Ireduce_scatter_block / MPI_Iallgather / MPI_Ibcast, and
// float all-reduces and reduce-scatters where pairwiseWins() by plait's pairwise exchange
// (PairwiseReduce.h), one at a time in the order they were started.
#include <sched.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <map>

#include "runtime/comm/Mpi.h"
#include "runtime/comm/MpiStatus.h"
#include "runtime/comm/PairwiseReduce.h"

namespace plait::rt::mpi {

namespace {

bool initializedHere = false;

// MPI has no 16-bit float types: bf16 and f16 travel as 16-bit words and are summed by these
// user operations (sumElements: in f32, rounding once per addition, as the CPU kernels do).
void sumBf16(void *in, void *inout, int *len, MPI_Datatype *) {
  sumElements(DType::BF16, in, inout, inout, uint64_t(*len));
}

void sumF16(void *in, void *inout, int *len, MPI_Datatype *) {
  sumElements(DType::F16, in, inout, inout, uint64_t(*len));
}

MPI_Datatype mpiType(DType t) {
  switch (t) {
  case DType::F32:
    return MPI_FLOAT;
  case DType::F64:
    return MPI_DOUBLE;
  case DType::BF16:
  case DType::F16:
    return MPI_UINT16_T;
  case DType::I64:
    return MPI_INT64_T;
  case DType::I32:
    return MPI_INT32_T;
  case DType::I8:
    return MPI_INT8_T;
  case DType::U8:
    return MPI_UINT8_T;
  case DType::I16:
    return MPI_INT16_T;
  case DType::U16:
    return MPI_UINT16_T;
  case DType::U32:
    return MPI_UINT32_T;
  case DType::U64:
    return MPI_UINT64_T;
  case DType::I1:
    return MPI_UINT8_T;
  }
  return MPI_DATATYPE_NULL;
}

class MpiComm final : public Communicator {
public:
  explicit MpiComm(const MpiOptions &options) : options_(options) {}

  ~MpiComm() override {
    // Reached with requests outstanding only after an error, on the way to MPI_Abort.
    for (MPI_Comm &c : groupComms_)
      if (c != MPI_COMM_NULL)
        MPI_Comm_free(&c);
    if (world_ != MPI_COMM_NULL)
      MPI_Comm_free(&world_);
    for (MPI_Op op : {sumBf16_, sumF16_})
      if (op != MPI_OP_NULL)
        MPI_Op_free(&op);
  }

  Status init() {
    // A duplicate of MPI_COMM_WORLD keeps plait's traffic apart from anyone else's, and
    // carries MPI_ERRORS_RETURN (to every communicator split from it) so that errors come
    // back to us instead of aborting.
    PLAIT_MPI_RETURN_IF_ERROR(MPI_Comm_dup(MPI_COMM_WORLD, &world_));
    PLAIT_MPI_RETURN_IF_ERROR(MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN));
    int rank = 0, size = 0;
    PLAIT_MPI_RETURN_IF_ERROR(MPI_Comm_rank(world_, &rank));
    PLAIT_MPI_RETURN_IF_ERROR(MPI_Comm_size(world_, &size));
    rank_ = uint32_t(rank);
    size_ = uint32_t(size);
    PLAIT_MPI_RETURN_IF_ERROR(MPI_Op_create(&sumBf16, /*commute=*/1, &sumBf16_));
    PLAIT_MPI_RETURN_IF_ERROR(MPI_Op_create(&sumF16, /*commute=*/1, &sumF16_));
    return {};
  }

  uint32_t rank() const override { return rank_; }
  uint32_t size() const override { return size_; }

  Status group(const RankGroups &groups, CommGroup &out) override {
    auto it = groupIndex_.find(groups);
    if (it != groupIndex_.end()) {
      out = it->second;
      return {};
    }
    // Split by group; the key orders each new communicator by position in the group, so
    // that its rank is the rank's index within the group (broadcast roots, chunk order).
    uint32_t group, index;
    bool member = groups.locate(rank_, group, index);
    MPI_Comm comm = MPI_COMM_NULL;
    PLAIT_MPI_RETURN_IF_ERROR(MPI_Comm_split(world_, member ? int(group) : MPI_UNDEFINED,
                                             member ? int(index) : 0, &comm));
    // Whether the group lives on one node, agreed by all its members (the minimum of their
    // answers), so that all of them choose the same algorithm (pairwiseWins) even where
    // MPI's idea of locality differs between them.
    bool oneNode = true;
    if (comm != MPI_COMM_NULL) {
      MPI_Comm local = MPI_COMM_NULL;
      PLAIT_MPI_RETURN_IF_ERROR(
          MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local));
      int localSize = 0;
      PLAIT_MPI_RETURN_IF_ERROR(MPI_Comm_size(local, &localSize));
      PLAIT_MPI_RETURN_IF_ERROR(MPI_Comm_free(&local));
      int mine = uint32_t(localSize) == groups.groupSize, all = 0;
      PLAIT_MPI_RETURN_IF_ERROR(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm));
      oneNode = all != 0;
    }
    out = CommGroup(groupComms_.size());
    groupComms_.push_back(comm);
    groupSizes_.push_back(groups.groupSize);
    groupIndices_.push_back(member ? index : 0);
    groupOneNode_.push_back(oneNode);
    groupIndex_.emplace(groups, out);
    return {};
  }

  Status start(CommGroup group, const CollectiveArgs &args, CommRequest &out) override {
    if (group >= groupComms_.size() || groupComms_[group] == MPI_COMM_NULL)
      return Status::internal(fmt::format("{} on a group this rank is not in",
                                          collectiveKindName(args.kind)));
    if (args.count > uint64_t(INT_MAX))
      return Status::errorf("{} of {} elements: more than MPI's int count allows",
                            collectiveKindName(args.kind), args.count);
    MPI_Comm comm = groupComms_[group];
    MPI_Datatype type = mpiType(args.dtype);
    int count = int(args.count);
    MPI_Op sum = args.dtype == DType::BF16  ? sumBf16_
                 : args.dtype == DType::F16 ? sumF16_
                                            : MPI_SUM;
    if (usePairwise(group, args))
      return startPairwise(group, args, out);
    MPI_Request request = MPI_REQUEST_NULL;
    switch (args.kind) {
    case CollectiveKind::AllReduce:
      PLAIT_MPI_RETURN_IF_ERROR(
          MPI_Iallreduce(args.send == args.recv ? MPI_IN_PLACE : args.send, args.recv, count,
                         type, sum, comm, &request));
      break;
    case CollectiveKind::ReduceScatter:
      PLAIT_MPI_RETURN_IF_ERROR(
          MPI_Ireduce_scatter_block(args.send, args.recv, count, type, sum, comm, &request));
      break;
    case CollectiveKind::AllGather:
      PLAIT_MPI_RETURN_IF_ERROR(
          MPI_Iallgather(args.send, count, type, args.recv, count, type, comm, &request));
      break;
    case CollectiveKind::Broadcast:
      PLAIT_MPI_RETURN_IF_ERROR(
          MPI_Ibcast(args.recv, count, type, int(args.root), comm, &request));
      break;
    }
    out = takeSlot();
    requests_[out] = request;
    if ((args.kind == CollectiveKind::AllReduce || args.kind == CollectiveKind::ReduceScatter) &&
        pairwiseSums(args.dtype))
      ++libraryReductions_;
    return {};
  }

  Status wait(CommRequest request) override {
    // MPI_Wait has no deadline: test until done, yielding the core between tests (ranks
    // often outnumber cores here), and give up after timeout_ seconds. A request poll()
    // saw complete is MPI_REQUEST_NULL already and tests complete at once.
    // A pairwise reduction is done once progressPairwise() has finished it; the others
    // still progress meanwhile, as peers may be waiting for their messages.
    auto start = std::chrono::steady_clock::now();
    for (uint64_t spins = 0;; ++spins) {
      PLAIT_RETURN_IF_ERROR(progressPairwise());
      int done = 0;
      if (!pairwisePending_[request])
        PLAIT_MPI_RETURN_IF_ERROR(MPI_Test(&requests_[request], &done, MPI_STATUS_IGNORE));
      if (done)
        break;
      if (spins % 64 == 63 &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
              timeout_)
        return Status::errorf("did not complete within {:g} s (--timeout): another rank has "
                              "died or stalled", timeout_);
      sched_yield();
    }
    freeSlots_.push_back(request);
    --outstanding_;
    return {};
  }

  void setTimeout(double seconds) override { timeout_ = seconds; }

  Status barrier() override {
    PLAIT_MPI_RETURN_IF_ERROR(MPI_Barrier(world_));
    return {};
  }

  // Sizes first, then the bytes (MPI_Gatherv's counts and displacements are ints).
  Status gatherToRoot(const std::string &bytes, std::vector<std::string> &gathered) override {
    gathered.clear();
    if (bytes.size() > size_t(INT_MAX))
      return Status::errorf("gathering {} bytes to rank 0: more than MPI's int count allows",
                            bytes.size());
    int mine = int(bytes.size());
    std::vector<int> sizes(rank_ == 0 ? size_ : 0), offsets(sizes.size());
    PLAIT_MPI_RETURN_IF_ERROR(
        MPI_Gather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, world_));
    std::string all;
    if (rank_ == 0) {
      uint64_t total = 0;
      for (uint32_t r = 0; r < size_; ++r) {
        offsets[r] = int(total);
        total += uint64_t(sizes[r]);
      }
      if (total > uint64_t(INT_MAX))
        return Status::errorf("gathering {} bytes to rank 0: more than MPI's int count "
                              "allows", total);
      all.resize(total);
    }
    PLAIT_MPI_RETURN_IF_ERROR(MPI_Gatherv(bytes.data(), mine, MPI_CHAR, all.data(),
                                          sizes.data(), offsets.data(), MPI_CHAR, 0, world_));
    for (uint32_t r = 0; rank_ == 0 && r < size_; ++r)
      gathered.push_back(all.substr(size_t(offsets[r]), size_t(sizes[r])));
    return {};
  }

  void reserveRequests(uint32_t count) override {
    requests_.reserve(count);
    freeSlots_.reserve(count);
    completedIndices_.reserve(count);
    pairwise_.reserve(count);
    pairwisePending_.reserve(count);
    pairwiseQueue_.reserve(count);
    if (options_.reduce != ReduceAlgorithm::Mpi && !scratch_)
      scratch_.reset(new uint8_t[kPairwiseScratchBytes]);
  }

  Status poll() override {
    if (outstanding_ == 0)
      return {};
    PLAIT_RETURN_IF_ERROR(progressPairwise());
    int completed = 0;
    PLAIT_MPI_RETURN_IF_ERROR(MPI_Testsome(int(requests_.size()), requests_.data(), &completed,
                                           completedIndices_.data(), MPI_STATUSES_IGNORE));
    return {};
  }

  std::string note() const override {
    if (options_.reduce == ReduceAlgorithm::Mpi)
      return fmt::format("reductions: {} float all-reduces/reduce-scatters by Open MPI's own "
                         "collectives (--reduce-algorithm mpi)",
                         libraryReductions_);
    return fmt::format("reductions: {} float all-reduces/reduce-scatters by pairwise "
                       "exchange over MPI point-to-point, {} by Open MPI's own collectives "
                       "(--reduce-algorithm {}; mpi: all by Open MPI)",
                       pairwiseReductions_, libraryReductions_,
                       reduceAlgorithmName(options_.reduce));
  }

private:
  bool usePairwise(CommGroup group, const CollectiveArgs &args) const {
    const uint32_t groupSize = groupSizes_[group];
    if (options_.reduce == ReduceAlgorithm::Mpi || groupSize < 2 || !pairwiseSums(args.dtype))
      return false;
    uint64_t whole = args.count * dtypeSize(args.dtype);
    if (args.kind == CollectiveKind::ReduceScatter)
      whole *= groupSize;
    else if (args.kind != CollectiveKind::AllReduce)
      return false;
    return whole != 0 && (options_.reduce == ReduceAlgorithm::Pairwise ||
                          pairwiseWins(args.kind, whole, groupSize, groupOneNode_[group]));
  }

  CommRequest takeSlot() {
    if (freeSlots_.empty()) {
      freeSlots_.push_back(uint32_t(requests_.size()));
      requests_.push_back(MPI_REQUEST_NULL);
      completedIndices_.resize(requests_.size());
      pairwise_.emplace_back();
      pairwisePending_.push_back(false);
    }
    CommRequest slot = freeSlots_.back();
    freeSlots_.pop_back();
    requests_[slot] = MPI_REQUEST_NULL;
    pairwisePending_[slot] = false;
    ++outstanding_;
    return slot;
  }

  Status startPairwise(CommGroup group, const CollectiveArgs &args, CommRequest &out) {
    if (!scratch_)
      scratch_.reset(new uint8_t[kPairwiseScratchBytes]);
    out = takeSlot();
    // One scratch serves every reduction: they run one at a time, in the order started,
    // which is the plan's order on every rank (so no two ranks wait on each other's second).
    pairwise_[out].init(args, groupComms_[group], groupIndices_[group], groupSizes_[group],
                        scratch_.get());
    pairwisePending_[out] = true;
    pairwiseQueue_.push_back(out);
    ++pairwiseReductions_;
    return progressPairwise();
  }

  // Advances the oldest pairwise reduction, and the next ones as each completes.
  Status progressPairwise() {
    while (pairwiseHead_ < pairwiseQueue_.size()) {
      CommRequest slot = pairwiseQueue_[pairwiseHead_];
      bool done = false;
      PLAIT_RETURN_IF_ERROR(pairwise_[slot].progress(done));
      if (!done)
        return {};
      pairwisePending_[slot] = false;
      ++pairwiseHead_;
    }
    pairwiseQueue_.clear(); // keeps its capacity
    pairwiseHead_ = 0;
    return {};
  }

  MpiOptions options_;
  MPI_Comm world_ = MPI_COMM_NULL;
  uint32_t rank_ = 0, size_ = 1;
  MPI_Op sumBf16_ = MPI_OP_NULL, sumF16_ = MPI_OP_NULL;
  std::vector<MPI_Comm> groupComms_;          // by CommGroup; MPI_COMM_NULL: not a member
  std::vector<uint32_t> groupSizes_;          // by CommGroup: the group's size
  std::vector<uint32_t> groupIndices_;        // by CommGroup: this rank's index in it
  std::vector<bool> groupOneNode_;            // by CommGroup: all its ranks on one node
  std::map<RankGroups, CommGroup> groupIndex_;
  std::vector<MPI_Request> requests_;         // by CommRequest slot
  std::vector<CommRequest> freeSlots_;
  std::vector<int> completedIndices_;         // MPI_Testsome's output
  uint32_t outstanding_ = 0;                  // slots started and not yet waited for
  double timeout_ = 300;                      // seconds wait() may block
  std::vector<PairwiseReduction> pairwise_;   // by CommRequest slot
  std::vector<uint8_t> pairwisePending_;      // by slot: a pairwise reduction not yet done
  std::vector<CommRequest> pairwiseQueue_;    // started, oldest first, from pairwiseHead_
  size_t pairwiseHead_ = 0;
  std::unique_ptr<uint8_t[]> scratch_; // kPairwiseScratchBytes, once one is used
  uint64_t pairwiseReductions_ = 0, libraryReductions_ = 0; // float sums, for note()
};

} // namespace

uint32_t launchedWorldSize() {
  const char *size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (!size || !*size)
    return 0;
  char *end = nullptr;
  unsigned long n = std::strtoul(size, &end, 10);
  return *end == '\0' && n <= UINT32_MAX ? uint32_t(n) : 0;
}

Status initialize() {
  int initialized = 0;
  PLAIT_MPI_RETURN_IF_ERROR(MPI_Initialized(&initialized));
  if (initialized)
    return {};
  int provided = 0;
  PLAIT_MPI_RETURN_IF_ERROR(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
  initializedHere = true;
  if (provided < MPI_THREAD_FUNNELED)
    return Status::internal("MPI does not provide MPI_THREAD_FUNNELED");
  return {};
}

bool active() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

void finalize() {
  if (initializedHere && active())
    MPI_Finalize();
}

void abortJob(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code); // MPI_Abort does not return; this only keeps [[noreturn]] honest
}

const char *reduceAlgorithmName(ReduceAlgorithm a) {
  switch (a) {
  case ReduceAlgorithm::Auto:
    return "auto";
  case ReduceAlgorithm::Pairwise:
    return "pairwise";
  case ReduceAlgorithm::Mpi:
    return "mpi";
  }
  return "?";
}

Status makeWorldComm(std::unique_ptr<Communicator> &out, const MpiOptions &options) {
  auto comm = std::make_unique<MpiComm>(options);
  PLAIT_RETURN_IF_ERROR(comm->init());
  out = std::move(comm);
  return {};
}

} // namespace plait::rt::mpi
