// Training data: one .npy per graph input in a directory; step s takes the next global batch.
#pragma once

#include <string>
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
class DataLoader {
public:
  /// Reads DIR/NAME.npy for every graph input of `plan`; checks dtypes, per-sample shapes,
  /// equal sample counts and at least one whole global batch. Errors name the file.
  static Status open(const std::string &dir, const Plan &plan, DataLoader &out,
                     uint32_t worldSize = 1, uint32_t rank = 0);

  /// Copies this rank's part of global batch number `step` (0-based) into the executor,
  /// without allocating.
  Status loadBatch(int64_t step, Executor &exec) const;

  /// This rank's part of global batch `step` (0-based) of graph input `input`: the bytes
  /// loadBatch copies (for executors other than Executor, e.g. the CUDA backend's).
  const uint8_t *batchData(int64_t step, size_t input) const;

  /// A resumed run: step `step` (0-based) starts at sample `position` (a checkpoint's
  /// data_position, recorded by a run of any global batch), the steps after it from there.
  /// A position at or past the end of the data starts a new epoch.
  void setOrigin(int64_t step, int64_t position) {
    originStep_ = step;
    originPosition_ = position;
  }
  /// The first sample of global batch `step` (0-based; at or after the origin).
  int64_t position(int64_t step) const;

  int64_t samples() const { return samples_; }
  int64_t batchSize() const { return batch_; } // per rank
  int64_t batchesPerEpoch() const { return samples_ / (batch_ * world_); }

private:
  const Plan *plan_ = nullptr;
  std::vector<HostTensor> columns_; // by graph input
  int64_t samples_ = 0, batch_ = 1;
  int64_t world_ = 1, rank_ = 0;
  int64_t originStep_ = 0, originPosition_ = 0;
};

} // namespace plait::rt
