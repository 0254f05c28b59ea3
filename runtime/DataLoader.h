// Training data: one .npy per graph input in a directory; step s takes the next global batch.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/Executor.h"
#include "runtime/io/HostTensor.h"

namespace plait::rt {

/// Holds every graph input's samples (leading dimension = samples) and copies batch after
/// batch into an executor. Batches are taken in order; after the last whole batch the data
/// starts over (an incomplete final batch is skipped, like PyTorch's drop_last).
///
/// With W ranks, step s takes the global batch of G = W * B samples (B = the plan's per-rank
/// batch, the inputs' leading dimension) starting at sample P(s) of the data, and rank r the
/// slice [P(s) + r * B, + B) of it: a world-1 plan of batch W * B sees exactly the samples
/// of W ranks of batch B. From the origin (step 0 at sample 0, or where a resumed run
/// continues: setOrigin), each step starts G samples after the one before, and where a whole
/// global batch no longer fits before the end of the data, the next starts at sample 0.
///
/// With setShuffle(seed) the positions index each epoch's own order of the samples (the
/// samples in a shuffled order, PyTorch's shuffle=True): epoch e's order is a Fisher-Yates
/// shuffle of 0..N-1 driven by splitmix64 seeded from (seed, e), the same on every rank, so
/// the ranks still split one global batch, and a resumed run (whose checkpoint records the
/// epoch) continues the same order.
class DataLoader {
public:
  /// Reads DIR/NAME.npy for every graph input of `plan`; checks dtypes, per-sample shapes,
  /// equal sample counts and at least one whole global batch. Errors name the file.
  static Status open(const std::string &dir, const Plan &plan, DataLoader &out,
                     uint32_t worldSize = 1, uint32_t rank = 0);

  /// Samples in a shuffled order, a new one each epoch (see the class comment). Allocates
  /// the order and a batch-sized buffer per input here, so that steps allocate nothing.
  void setShuffle(uint64_t seed);
  bool shuffled() const { return shuffle_; }

  /// Copies this rank's part of global batch number `step` (0-based) into the executor,
  /// without allocating.
  Status loadBatch(int64_t step, Executor &exec);

  /// This rank's part of global batch `step` (0-based) of graph input `input`: the bytes
  /// loadBatch copies (for executors other than Executor, e.g. the CUDA backend's). Shuffled,
  /// they are gathered into a buffer that the next call overwrites.
  const uint8_t *batchData(int64_t step, size_t input);

  /// A resumed run: step `step` (0-based) starts at sample `position` of epoch `epoch` (a
  /// checkpoint's data_position and data_epoch, recorded by a run of any global batch), the
  /// steps after it from there. A position at or past the end of the data starts the next
  /// epoch.
  void setOrigin(int64_t step, int64_t position, int64_t epoch) {
    originStep_ = step;
    originPosition_ = position;
    originEpoch_ = epoch;
  }
  /// The first sample of global batch `step` (0-based; at or after the origin), an index
  /// into its epoch's order.
  int64_t position(int64_t step) const;
  /// The epoch (0-based) global batch `step` belongs to.
  int64_t epoch(int64_t step) const;

  /// Where global batch `step` (0-based) starts, as {position, epoch}, for a run that took
  /// `globalBatch` samples every step from the start: before an origin, and what a
  /// checkpoint written before positions were recorded leaves out. {0, 0} when this data
  /// holds no whole batch of that size.
  std::pair<int64_t, int64_t> fromStart(int64_t step, int64_t globalBatch) const;

  int64_t samples() const { return samples_; }
  int64_t batchSize() const { return batch_; } // per rank
  int64_t batchesPerEpoch() const { return samples_ / (batch_ * world_); }

private:
  const Plan *plan_ = nullptr;
  std::vector<HostTensor> columns_; // by graph input
  int64_t samples_ = 0, batch_ = 1;
  int64_t world_ = 1, rank_ = 0;
  int64_t originStep_ = 0, originPosition_ = 0, originEpoch_ = 0;
  /// Whole global batches left from the origin to the end of its epoch.
  int64_t leftInOriginEpoch() const;
  // --shuffle: the order of the epoch in order_ (-1: none yet), a batch per input.
  bool shuffle_ = false;
  uint64_t seed_ = 0;
  int64_t orderEpoch_ = -1;
  std::vector<int64_t> order_;
  std::vector<std::vector<uint8_t>> gathered_;
};

} // namespace plait::rt
