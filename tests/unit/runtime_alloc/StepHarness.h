// The step loop of plait-run (runtime/RunPlan.cpp) on compiled samples, with the heap
// allocations of steps 2..N counted: each counted step is the batch copy, the hyper-parameter
// writes and Executor::run, as in the training loop.
#pragma once

#include <cstdint>
#include <string>

#include "AllocationCounter.h"
#include "runtime/Status.h"
#include "runtime/comm/Comm.h"

namespace plait::alloc_test {

/// Compiles samples/<sample>/<sample>.onnx with plait-compile and `flags` into `planPath`.
/// Returns "" on success, else the command and the compiler's output.
std::string compileSample(const std::string &sample, const std::string &flags,
                          const std::string &planPath);

/// Writes a data directory for `sample`: its reference inputs (samples/<sample>/inputs, one
/// batch) repeated `copies` times along the sample axis.
std::string writeSampleData(const std::string &sample, int copies, const std::string &dir);

struct CountedRun {
  rt::Status status;
  AllocationReport firstStep; // step 1: warm-up, reported but not held to zero
  AllocationReport report;    // steps 2..N
  uint64_t arenaHighWater = 0, workspaceHighWater = 0, workspaceBytes = 0; // the last step's
  uint64_t plannedPeak = 0; // the plan's peak_bytes for this rank (0 when absent)
};

/// Loads the plan, creates its executor on `comm` (null: a single process) and runs `steps`
/// steps, each on the next batch of `dataDir` (with `shuffle`, in plait-run --shuffle's
/// order), counting the allocations of step 1 and of steps 2..N apart.
CountedRun runCounted(const std::string &planPath, const std::string &dataDir, int64_t steps,
                      rt::Communicator *comm = nullptr, bool shuffle = false);

} // namespace plait::alloc_test
