// The pairwise all-reduce and reduce-scatter (PairwiseReduce.h).
#include "runtime/comm/PairwiseReduce.h"

#include <algorithm>

#include "runtime/comm/MpiStatus.h"
#include "runtime/cpu/VectorMath.h"

namespace plait::rt::mpi {

namespace {

// out[i] = a[i] + b[i] with T's values widened to f32 (or kept) and narrowed back, once per
// addition. `widen` and `narrow` are lambdas, so that they inline and the loop vectorises.
template <typename T, typename Widen, typename Narrow>
void addElements(const uint8_t *a, const uint8_t *b, uint8_t *out, uint64_t n, Widen widen,
                 Narrow narrow) {
  const T *x = reinterpret_cast<const T *>(a), *y = reinterpret_cast<const T *>(b);
  T *z = reinterpret_cast<T *>(out);
  for (uint64_t i = 0; i < n; ++i)
    z[i] = narrow(widen(x[i]) + widen(y[i]));
}

} // namespace

// The inline, branch-free conversions of cpu/VectorMath.h (the same rounding as floatToBf16 /
// floatToF16), so that the 16-bit loops vectorise.
void sumElements(DType dtype, const void *a, const void *b, void *out, uint64_t n) {
  auto *x = static_cast<const uint8_t *>(a), *y = static_cast<const uint8_t *>(b);
  auto *z = static_cast<uint8_t *>(out);
  auto same = [](auto v) { return v; };
  switch (dtype) {
  case DType::F32:
    return addElements<float>(x, y, z, n, same, same);
  case DType::F64:
    return addElements<double>(x, y, z, n, same, same);
  case DType::BF16:
    return addElements<uint16_t>(
        x, y, z, n, [](uint16_t v) { return cpu::widenBf16(v); },
        [](float v) { return cpu::narrowBf16(v); });
  case DType::F16:
    return addElements<uint16_t>(
        x, y, z, n, [](uint16_t v) { return cpu::widenF16(v); },
        [](float v) { return cpu::narrowF16(v); });
  default: // pairwiseSums() admits none other
    break;
  }
}

bool pairwiseSums(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64 || dtype == DType::BF16 || dtype == DType::F16;
}

void PairwiseReduction::init(const CollectiveArgs &args, MPI_Comm comm, uint32_t index,
                             uint32_t size, uint8_t *scratch) {
  kind_ = args.kind;
  dtype_ = args.dtype;
  send_ = static_cast<const uint8_t *>(args.send);
  recv_ = static_cast<uint8_t *>(args.recv);
  count_ = args.count;
  elementBytes_ = dtypeSize(args.dtype);
  segmentElements_ = kPairwiseSegmentBytes / elementBytes_;
  comm_ = comm;
  index_ = index;
  size_ = size;
  scratch_ = scratch;
  gathering_ = false;
  sendsPosted_ = sendsFinished_ = recvsPosted_ = recvsFinished_ = 0;
  startHalf();
}

uint64_t PairwiseReduction::chunkBegin(uint32_t chunk) const {
  // An all-reduce's chunks differ by at most one element; a reduce-scatter's are `count_`.
  return kind_ == CollectiveKind::ReduceScatter ? uint64_t(chunk) * count_
                                                : uint64_t(chunk) * count_ / size_;
}

uint64_t PairwiseReduction::chunkLength(uint32_t chunk) const {
  return kind_ == CollectiveKind::ReduceScatter ? count_
                                                : chunkBegin(chunk + 1) - chunkBegin(chunk);
}

uint64_t PairwiseReduction::segments(uint32_t chunk) const {
  return (chunkLength(chunk) + segmentElements_ - 1) / segmentElements_;
}

// The reduce half sends this rank's part of every other rank's chunk and receives the parts
// of its own; the gather half sends its own summed chunk and receives every other one.
uint32_t PairwiseReduction::sendChunk(uint32_t step) const {
  return gathering_ ? index_ : (index_ + step) % size_;
}

uint32_t PairwiseReduction::recvChunk(uint32_t step) const {
  return gathering_ ? (index_ + size_ - step) % size_ : index_;
}

bool PairwiseReduction::settle(Cursor &c, bool sending) const {
  for (; c.step < size_; ++c.step, c.segment = 0)
    if (c.segment < segments(sending ? sendChunk(c.step) : recvChunk(c.step)))
      return true;
  return false;
}

void PairwiseReduction::startHalf() {
  nextSend_ = nextRecv_ = Cursor{};
  sendsLeft_ = settle(nextSend_, /*sending=*/true);
  recvsLeft_ = settle(nextRecv_, /*sending=*/false);
}

Status PairwiseReduction::postSend() {
  while (sendsLeft_ && sendsPosted_ - sendsFinished_ < uint64_t(kPairwiseSlots)) {
    const Cursor &c = nextSend_;
    uint32_t chunk = sendChunk(c.step);
    uint64_t first = c.segment * segmentElements_;
    uint64_t n = std::min(segmentElements_, chunkLength(chunk) - first);
    // The gather half sends the summed chunk, which lives in the result.
    const uint8_t *base = gathering_ ? recv_ : send_;
    const uint8_t *data = base + (chunkBegin(chunk) + first) * elementBytes_;
    int peer = int((index_ + c.step) % size_);
    int slot = int(sendsPosted_ % kPairwiseSlots);
    PLAIT_MPI_RETURN_IF_ERROR(MPI_Isend(data, int(n * elementBytes_), MPI_BYTE, peer, kPairwiseTag,
                                        comm_, &sends_[slot]));
    ++sendsPosted_;
    ++nextSend_.segment;
    sendsLeft_ = settle(nextSend_, /*sending=*/true);
  }
  return {};
}

Status PairwiseReduction::postRecv() {
  while (recvsLeft_ && recvsPosted_ - recvsFinished_ < uint64_t(kPairwiseSlots)) {
    const Cursor &c = nextRecv_;
    uint32_t chunk = recvChunk(c.step);
    uint64_t first = c.segment * segmentElements_;
    uint64_t n = std::min(segmentElements_, chunkLength(chunk) - first);
    int slot = int(recvsPosted_ % kPairwiseSlots);
    // The gather half receives straight into the result; the reduce half into scratch,
    // summed into the result when it has arrived (finishRecv).
    uint8_t *target = gathering_ ? recv_ + (chunkBegin(chunk) + first) * elementBytes_
                                 : scratch_ + uint64_t(slot) * kPairwiseSegmentBytes;
    int peer = int((index_ + size_ - c.step) % size_);
    PLAIT_MPI_RETURN_IF_ERROR(MPI_Irecv(target, int(n * elementBytes_), MPI_BYTE, peer,
                                        kPairwiseTag, comm_, &recvs_[slot]));
    recvSegments_[slot] = c;
    ++recvsPosted_;
    ++nextRecv_.segment;
    recvsLeft_ = settle(nextRecv_, /*sending=*/false);
  }
  return {};
}

void PairwiseReduction::finishRecv(int slot, const Cursor &c) {
  if (gathering_)
    return;
  // Step 1 starts the sum from this rank's own part; later steps add to it, in step order
  // (receives finish oldest first), so the sum's order never depends on arrival.
  uint64_t first = c.segment * segmentElements_;
  uint64_t n = std::min(segmentElements_, chunkLength(index_) - first);
  uint64_t own = kind_ == CollectiveKind::ReduceScatter ? 0 : chunkBegin(index_);
  uint8_t *sum = recv_ + (own + first) * elementBytes_;
  const uint8_t *mine = send_ + (chunkBegin(index_) + first) * elementBytes_;
  sumElements(dtype_, c.step == 1 ? mine : sum, scratch_ + uint64_t(slot) * kPairwiseSegmentBytes,
              sum, n);
}

Status PairwiseReduction::progress(bool &done) {
  done = false;
  for (;;) {
    PLAIT_RETURN_IF_ERROR(postSend());
    PLAIT_RETURN_IF_ERROR(postRecv());
    bool moved = false;
    while (recvsFinished_ < recvsPosted_) {
      int slot = int(recvsFinished_ % kPairwiseSlots), arrived = 0;
      PLAIT_MPI_RETURN_IF_ERROR(MPI_Test(&recvs_[slot], &arrived, MPI_STATUS_IGNORE));
      if (!arrived)
        break;
      finishRecv(slot, recvSegments_[slot]);
      ++recvsFinished_;
      moved = true;
    }
    while (sendsFinished_ < sendsPosted_) {
      int slot = int(sendsFinished_ % kPairwiseSlots), sent = 0;
      PLAIT_MPI_RETURN_IF_ERROR(MPI_Test(&sends_[slot], &sent, MPI_STATUS_IGNORE));
      if (!sent)
        break;
      ++sendsFinished_;
      moved = true;
    }
    bool halfDone = !sendsLeft_ && !recvsLeft_ && sendsFinished_ == sendsPosted_ &&
                    recvsFinished_ == recvsPosted_;
    if (halfDone && kind_ == CollectiveKind::AllReduce && !gathering_) {
      // Every part of every chunk has left (the gather half may now overwrite them in an
      // in-place buffer) and this rank's chunk is summed (it may now be sent).
      gathering_ = true;
      startHalf();
      continue;
    }
    if (halfDone) {
      done = true;
      return {};
    }
    if (!moved)
      return {};
  }
}

} // namespace plait::rt::mpi
