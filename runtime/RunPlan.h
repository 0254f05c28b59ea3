// What `plait-run` does, as a library call: load a plan, bind inputs, run, write outputs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/Status.h"

namespace plait::rt {

struct RunOptions {
  std::string planPath;
  std::vector<std::pair<std::string, std::string>> inputs; // graph input name -> .npy/.pb file
  std::string outputDir;   // empty: write no output files
  uint64_t seed = 0;
  int64_t steps = 1;
  int64_t nproc = 1;
  std::string dataDir;     // one NAME.npy per graph input; step s takes the next batch
  std::string logJsonl;    // one JSON object per step
  std::string saveWeights; // write the params as safetensors after the last step
};

/// Runs `steps` steps of the plan on rank 0 (training plans update their params and state
/// after each) and, on success, sets `summary` to a one-line description of what ran and
/// what was written. Options that this runtime does not implement yet (--nproc > 1, plans
/// for world size > 1) are errors, never ignored.
Status runPlan(const RunOptions &options, std::string &summary);

/// The file name (without directory) that graph output `index` named `tensorName` is
/// written to: characters outside [A-Za-z0-9_.-] become '_', ".npy" is appended.
std::string outputFileName(const std::string &tensorName, size_t index);

} // namespace plait::rt
