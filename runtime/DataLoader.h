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
/// With W ranks, step s takes the global batch of W * B samples (B = the plan's per-rank
/// batch, the inputs' leading dimension) and rank r the slice [(s * W + r) * B, + B) of it:
/// a world-1 plan of batch W * B sees exactly the samples of W ranks of batch B.
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

  int64_t samples() const { return samples_; }
  int64_t batchSize() const { return batch_; } // per rank
  int64_t batchesPerEpoch() const { return samples_ / (batch_ * world_); }

private:
  const Plan *plan_ = nullptr;
  std::vector<HostTensor> columns_; // by graph input
  int64_t samples_ = 0, batch_ = 1;
  int64_t world_ = 1, rank_ = 0;
};

} // namespace plait::rt
