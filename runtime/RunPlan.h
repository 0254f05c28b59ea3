// What `plait-run` does, as a library call: load a plan, bind inputs, run, write outputs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/Plan.h"
#include "runtime/RunMonitor.h"
#include "runtime/Status.h"
#include "runtime/comm/Mpi.h"

namespace plait::rt {

struct RunOptions {
  std::string planPath;
  std::vector<std::pair<std::string, std::string>> inputs; // graph input name -> .npy/.pb file
  std::string outputDir;   // empty: write no output files
  uint64_t seed = 0;
  int64_t steps = 1;
  int64_t nproc = 1;       // > 1: relaunchUnderMpirun(), not runPlan()
  std::string dataDir;     // one NAME.npy per graph input; step s takes the next batch
  bool shuffle = false;    // --shuffle: each epoch in its own order, from --seed
  std::string logJsonl;    // one JSON object per step
  std::string saveWeights; // write the params as safetensors after the last step
  std::string saveEmaWeights; // the params' weight EMA (--ema-decay plans), as saveWeights
  MonitorOptions monitor;  // --progress, --trace, --trace-steps (RunMonitor.h)
  std::string checkpointDir; // sharded checkpoints (Checkpoint.h); empty: none
  int64_t checkpointEvery = 0; // checkpoint after every N-th step (and after the last)
  int keepCheckpoints = 2;     // newest checkpoints kept in checkpointDir
  bool resume = false;         // continue from the newest usable checkpoint
  double timeoutSeconds = 300; // deadline of each collective and of the launch
  int maxRestarts = 0;         // --nproc: relaunch from the last checkpoint this many times
  /// How float all-reduces and reduce-scatters are summed over MPI (--reduce-algorithm).
  mpi::ReduceAlgorithm reduceAlgorithm = mpi::ReduceAlgorithm::Auto;
  /// Threads per rank for the CPU kernels (cpu/Parallel.h); 0: defaultKernelThreads(), this
  /// rank's share of the CPUs.
  int threads = 0;
  /// CUDA plans: time every instruction with CUDA events over the steps and write, from rank
  /// 0, a JSON report of each one's time and achieved bandwidth against the device's copy
  /// bandwidth (CudaRun.h). Empty: no timing.
  std::string kernelTimes;
  /// CUDA plans: launch every kernel every step instead of replaying the captured step as a
  /// CUDA graph (--no-cuda-graphs).
  bool noCudaGraphs = false;
  /// Training plans: run on after a step whose loss or gradients' global norm is not finite
  /// (--allow-nonfinite); by default the run stops there (checkFinite), exit 3.
  bool allowNonfinite = false;
};

/// A training step's loss and gradients' global norm (null where the plan has none): a
/// Status::diverged naming the step and the value when one is NaN or infinite, with where a
/// --resume would continue (`lastCheckpoint`, 0: none yet, in `checkpointDir`).
Status checkFinite(const Plan &plan, int64_t step, const nlohmann::json &loss,
                   const nlohmann::json &gradNorm, const std::string &checkpointDir,
                   int64_t lastCheckpoint);

/// Runs `steps` steps of the plan (training plans update their params and state after
/// each) and, on success, sets `summary` to a one-line description of what ran and what was
/// written, followed by lines that compare the measured memory and step time with the plan's
/// (RunMonitor::comparison). Under mpirun (or when a caller initialised MPI) this process is
/// one rank of the job: MPI is initialised here when needed, every rank runs the plan on its
/// part of each batch, and rank 0 alone logs, writes files and gets a summary (others get "").
/// Errors of a multi-rank run read "PLAN: rank R: ..."; the caller must then end the whole job
/// (mpi::abortJob), since the other ranks may be waiting for this one.
Status runPlan(const RunOptions &options, std::string &summary);

/// --nproc N (N > 1): checks that the plan was compiled for world size N, then replaces this
/// process by mpirun starting N local ranks of this program with `args` (the command line
/// without --nproc). Returns only on error, except with --max-restarts R > 0: then mpirun
/// runs as a child, a failed job is started again (with --resume once a checkpoint exists)
/// up to R times, and success returns ok.
Status relaunchUnderMpirun(const RunOptions &options, const std::vector<std::string> &args);

/// The file name (without directory) that graph output `index` named `tensorName` is
/// written to: characters outside [A-Za-z0-9_.-] become '_', ".npy" is appended.
std::string outputFileName(const std::string &tensorName, size_t index);

} // namespace plait::rt
