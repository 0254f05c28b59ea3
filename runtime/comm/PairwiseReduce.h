// plait's own all-reduce and reduce-scatter of large float buffers over MPI point-to-point
// messages (MpiComm's default above a size; MPI's own collectives below it and for other
// dtypes). Open MPI 4.1's non-blocking collectives (libnbc) are 10-25x slower than the
// bandwidth allows for buffers of tens of MB (bench/mpi_reductions.py measures both); NCCL's
// ring over its own transport is the model, with MPI point-to-point as the transport.
//
// The algorithm is the pairwise exchange: in step t = 1..p-1 the rank at index r of a group
// of p sends its contribution to chunk (r+t) mod p to that rank and receives the contribution
// of rank (r-t) mod p to its own chunk r, which it adds into the result; an all-reduce then
// sends its summed chunk to every other rank and receives theirs (the all-gather half). Each
// rank sends (p-1)/p of the buffer per half, as a ring does (CommModel.h). Messages are
// segments of at most kPairwiseSegmentBytes with at most kPairwiseSlots of each direction in
// flight, so that the scratch is a few segments whatever the buffer, and the sums of one rank
// are always made in the same order (own + from r-1 + from r-2 + ...): the same bits on every
// run, and every rank of an all-reduce holds the same bits. Internal to MpiComm.cpp.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "runtime/Status.h"
#include "runtime/comm/Comm.h"

namespace plait::rt::mpi {

/// Bytes of one message.
inline constexpr uint64_t kPairwiseSegmentBytes = 1u << 20;
/// Receives (and sends) in flight at once per reduction.
inline constexpr int kPairwiseSlots = 4;
/// Scratch one reduction needs: a segment per receive slot.
inline constexpr uint64_t kPairwiseScratchBytes = kPairwiseSegmentBytes * kPairwiseSlots;
/// The message tag of every pairwise segment. The communicator runs one pairwise reduction
/// at a time, in the order the ranks started them, so messages cannot cross between two.
inline constexpr int kPairwiseTag = 0x504c;

/// Whether the pairwise exchange can sum `dtype` (floats: the sums gradients need).
bool pairwiseSums(DType dtype);

/// out = a + b over `n` elements of a dtype pairwiseSums() admits (out may be a or b); bf16
/// and f16 through f32, rounded once per addition as the CPU kernels round. Also MpiComm's
/// MPI user operations for 16-bit floats.
void sumElements(DType dtype, const void *a, const void *b, void *out, uint64_t n);

/// One all-reduce or reduce-scatter (CollectiveArgs' meaning of send, recv and count) over
/// `comm`, where this process is rank `index` of `size` >= 2. Holds no memory of its own:
/// `scratch` (kPairwiseScratchBytes) is lent by the communicator while it runs.
class PairwiseReduction {
public:
  void init(const CollectiveArgs &args, MPI_Comm comm, uint32_t index, uint32_t size,
            uint8_t *scratch);

  /// Posts the messages the windows allow and finishes those that have arrived, without
  /// blocking; sets `done` once every message has been sent and received and summed.
  Status progress(bool &done);

private:
  /// A position in one half's sequence of messages: step t (1..p-1), segment k of its chunk.
  struct Cursor {
    uint32_t step = 1;
    uint64_t segment = 0;
  };

  uint64_t chunkBegin(uint32_t chunk) const; // in elements, from the buffer's start
  uint64_t chunkLength(uint32_t chunk) const;
  uint64_t segments(uint32_t chunk) const;
  /// Moves `c` to the next segment that exists (steps whose chunk is empty have none); false
  /// once past the last step.
  bool settle(Cursor &c, bool sending) const;
  uint32_t sendChunk(uint32_t step) const;
  uint32_t recvChunk(uint32_t step) const;
  Status postSend();
  Status postRecv();
  void finishRecv(int slot, const Cursor &c);
  void startHalf();

  CollectiveKind kind_ = CollectiveKind::AllReduce;
  DType dtype_ = DType::F32;
  const uint8_t *send_ = nullptr;
  uint8_t *recv_ = nullptr; // reduce-scatter: this rank's chunk; all-reduce: the whole buffer
  uint64_t count_ = 0;      // reduce-scatter: elements per chunk; all-reduce: the whole buffer
  uint64_t elementBytes_ = 0, segmentElements_ = 0;
  MPI_Comm comm_ = MPI_COMM_NULL;
  uint32_t index_ = 0, size_ = 0;
  uint8_t *scratch_ = nullptr;
  bool gathering_ = false; // the all-gather half of an all-reduce

  // Each window holds its requests in posting order, slot = ordinal % kPairwiseSlots;
  // posted - finished requests are in flight and are finished oldest first.
  MPI_Request sends_[kPairwiseSlots] = {}, recvs_[kPairwiseSlots] = {};
  Cursor recvSegments_[kPairwiseSlots] = {}; // what each receive slot holds
  Cursor nextSend_, nextRecv_;
  bool sendsLeft_ = false, recvsLeft_ = false;
  uint64_t sendsPosted_ = 0, sendsFinished_ = 0, recvsPosted_ = 0, recvsFinished_ = 0;
};

} // namespace plait::rt::mpi
