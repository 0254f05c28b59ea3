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
  int64_t nproc = 1;       // > 1: relaunchUnderMpirun(), not runPlan()
  std::string dataDir;     // one NAME.npy per graph input; step s takes the next batch
  std::string logJsonl;    // one JSON object per step
  std::string saveWeights; // write the params as safetensors after the last step
};

/// Runs `steps` steps of the plan (training plans update their params and state after
/// each) and, on success, sets `summary` to a one-line description of what ran and what was
/// written. Under mpirun (or when a caller initialised MPI) this process is one rank of the
/// job: MPI is initialised here when needed, every rank runs the plan on its part of each
/// batch, and rank 0 alone logs, writes files and gets a summary (others get ""). Errors
/// of a multi-rank run read "PLAN: rank R: ..."; the caller must then end the whole job
/// (mpi::abortJob), since the other ranks may be waiting for this one.
Status runPlan(const RunOptions &options, std::string &summary);

/// --nproc N (N > 1): checks that the plan was compiled for world size N, then replaces this
/// process by mpirun starting N local ranks of this program with `args` (the command line
/// without --nproc). Returns only on error.
Status relaunchUnderMpirun(const RunOptions &options, const std::vector<std::string> &args);

/// The file name (without directory) that graph output `index` named `tensorName` is
/// written to: characters outside [A-Za-z0-9_.-] become '_', ".npy" is appended.
std::string outputFileName(const std::string &tensorName, size_t index);

} // namespace plait::rt
