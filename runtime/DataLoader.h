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
class DataLoader {
public:
  /// Reads DIR/NAME.npy for every graph input of `plan`; checks dtypes, per-sample shapes,
  /// equal sample counts and at least one whole batch. Errors name the file.
  static Status open(const std::string &dir, const Plan &plan, DataLoader &out);

  /// Copies batch number `step` (0-based) into the executor's inputs.
  Status loadBatch(int64_t step, Executor &exec) const;

  int64_t samples() const { return samples_; }
  int64_t batchSize() const { return batch_; }
  int64_t batchesPerEpoch() const { return samples_ / batch_; }

private:
  const Plan *plan_ = nullptr;
  std::vector<HostTensor> columns_; // by graph input
  int64_t samples_ = 0, batch_ = 1;
};

} // namespace plait::rt
